#!/usr/bin/env bash
# report_drift.sh — a CPU spec's bandwidth is a calibration, not a datasheet
# peak: rows faster than it while the host's own reference copy ran faster
# too are "above the calibration (the host drifted)", not impossible; the
# same rows without that drift are impossible (tests/data/report-drift). And
# the verdicts' measured reason: a copy faster than the calibrated DRAM is
# the cache's doing only beyond the host's drift during the row.
set -u
S=${MB_SRC:?MB_SRC: the source tree}
B=${MB_BIN:?MB_BIN: the membound binary}
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
D=$S/tests/data/report-drift
out=$("$B" report "$D/low_precision.csv" "$D/fusion_recompute.csv" -o "$tmp/r1" --no-figures 2>&1) ||
  bad "report exited $?: $out"
fit=$(printf '%s\n' "$out" | grep '^fit local-cpu')
case $fit in *"above the calibrated"*"the host drifted"*) ;; *) bad "drift not said: $fit" ;; esac
case $fit in *IMPOSSIBLE*) bad "impossible while the host drifted: $fit" ;; esac
grep -q '"above_calibrated": true' "$tmp/r1/summary.json" || bad "summary.json: above_calibrated"
grep -q '"impossible": false' "$tmp/r1/summary.json" || bad "summary.json: impossible"
grep -q 'Above the calibration' "$tmp/r1/report.md" || bad "report.md: no paragraph"
tail -1 "$tmp/r1/fits.csv" | grep -q ',1$' || bad "fits.csv: above_calibrated column"
# the same rows with every host_copy_ratio set to $1, into $tmp/$2/
rewrite() {
  mkdir -p "$tmp/$2"
  for f in low_precision fusion_recompute; do
    python3 - "$D/$f.csv" "$tmp/$2/$f.csv" "$1" <<'PY' || bad "rewrite $f"
import csv, sys
src, dst, ratio = sys.argv[1:]
with open(src, newline='') as fi:
    lines = fi.read().splitlines(keepends=True)
head = [l for l in lines if l.startswith('#')]
body = [l for l in lines if not l.startswith('#')]
rows = list(csv.reader(body))
k = rows[0].index('host_copy_ratio')
for r in rows[1:]:
    if r[k]: r[k] = ratio
with open(dst, 'w', newline='') as fo:
    fo.writelines(head)
    csv.writer(fo, lineterminator='\n').writerows(rows)
PY
  done
}
reason() { python3 -c "import csv,sys; print([r['reason'] for r in csv.DictReader(open(sys.argv[1])) if r['claim'].startswith('low precision')][0])" "$1/verdicts.csv"; }
# as measured: the f32 copy at 84.2 GB/s, its host copy at 157% of the calibrated 43.3
case $(reason "$tmp/r1") in *"faster than this device's DRAM allows even at the host's drift"*) ;;
  *) bad "measured reason: $(reason "$tmp/r1")" ;; esac
# the host copy at twice its calibration during every row: the drift explains it
rewrite 2 drift2
"$B" report "$tmp/drift2/low_precision.csv" "$tmp/drift2/fusion_recompute.csv" -o "$tmp/r3" --no-figures >/dev/null 2>&1 ||
  bad "report (drift 2) exited $?"
case $(reason "$tmp/r3") in *"the host ran faster than its calibration: f32 moved"*"200% of the calibrated"*) ;;
  *) bad "drift 2 reason: $(reason "$tmp/r3")" ;; esac
# the host steady at its calibration
rewrite 1 steady
out=$("$B" report "$tmp/steady/low_precision.csv" "$tmp/steady/fusion_recompute.csv" -o "$tmp/r2" --no-figures 2>&1) ||
  bad "report (steady) exited $?: $out"
fit=$(printf '%s\n' "$out" | grep '^fit local-cpu')
case $fit in *"IMPOSSIBLE: bandwidth above the calibrated bandwidth"*) ;; *) bad "steady: not impossible: $fit" ;; esac
grep -q '"impossible": true' "$tmp/r2/summary.json" || bad "steady summary.json: impossible"
grep -q 'IMPOSSIBLE: above the calibrated bandwidth' "$tmp/r2/report.md" || bad "steady report.md"
case $(reason "$tmp/r2") in "the cache served part of it: f32 moved its 256 MiB of modelled DRAM traffic at 84.2 GB/s, faster than this device's DRAM (43.3 GB/s) allows"*) ;;
  *) bad "steady reason: $(reason "$tmp/r2")" ;; esac
[ $fail -eq 0 ] && echo "ok"
exit $fail
