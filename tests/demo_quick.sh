#!/usr/bin/env bash
# demo_quick.sh — the main job end to end, small: calibrate, measure the
# lecture's demos, report; the report opens with a verdict row per claim
# filled from this machine's measurements.
set -u
B=${MB_BIN:?MB_BIN not set}
"$B" demo --help >/dev/null 2>&1 || { echo "demo not in this build: skipped"; exit 77; }
command -v gnuplot >/dev/null || { echo "gnuplot missing: skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
"$B" demo --quick -o "$tmp/d" >"$tmp/out" 2>"$tmp/err" && ok || { bad "demo exited $?"; tail -20 "$tmp/err" >&2; }
md=$tmp/d/report.md
[ -s "$md" ] && ok || bad "no report.md"
grep -q '^## Verdict' "$md" && ok || bad "report.md has no verdict section"
# one row per claim, each with a measured ratio and a verdict
for claim in 'low precision' 'sin²+cos²' 'GELU' '9n (store)' '15n (eager)'; do
  row=$(grep -F "| $claim" "$md" 2>/dev/null || grep -F "$claim" "$md" | grep '^|' | head -1)
  [ -n "$row" ] || { bad "no verdict row for '$claim'"; continue; }
  echo "$row" | grep -Eq '\| (holds|exceeds|falls short|reversed|does not hold|inconclusive) \|' && ok || bad "row '$claim' has no verdict: $row"
  echo "$row" | grep -Eq '\| [0-9.]+x \| [^|]+ \| (holds|exceeds|falls short|reversed|does not hold|inconclusive)' && ok || bad "row '$claim' has no measured ratio"
  # a smoke test's verdicts say so, row by row
  echo "$row" | grep -q 'SMOKE TEST' && ok || bad "row '$claim' not labelled a smoke test"
done
grep -q 'data:image/png;base64,' "$tmp/d/report.html" && ok || bad "report.html embeds no figure"
for f in summary.csv summary.json local-cpu.ini; do [ -s "$tmp/d/$f" ] && ok || bad "no $f"; done
# its CSVs (measurements, summary, fits, verdicts) are plain: no '#' line
! grep -l '^#' "$tmp"/d/*.csv && ok || bad "a '#' line in the demo's CSVs"
grep -q 'report:' "$tmp/out" && ok || bad "demo did not say where the report is"
# the smoke test said as such, on the terminal and in the report; which calibration, on one line
grep -q '^SMOKE TEST: ' "$tmp/out" && ok || bad "the verdict table is not labelled a smoke test"
# it names a quick calibration only when the run had one
if grep -q '^membound demo: calibration: quick' "$tmp/err"; then
  grep -q '^SMOKE TEST: .*against a quick calibration' "$tmp/out" && ok || bad "a quick calibration not named"
else
  ! grep -q '^SMOKE TEST: .*quick calibration' "$tmp/out" && ok || bad "a quick calibration named, the run's was not"
fi
grep -qF '**SMOKE TEST.**' "$md" && ok || bad "report.md does not say it is a smoke test"
grep -q '^membound demo: calibration: ' "$tmp/err" && ok || bad "demo did not say which calibration it used"
grep -q 'membound demo: --quick: a SMOKE TEST' "$tmp/err" && ok || bad "demo --quick did not say it is a smoke test"
# a CPU row's device column is the CPU's name: report finds the spec its
# model columns came from in the CSV's provenance, without --device
"$B" report "$tmp/d/fusion_recompute.csv" -o "$tmp/r2" >/dev/null 2>"$tmp/err2" && ok \
  || bad "report without --device: $(cat "$tmp/err2")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
