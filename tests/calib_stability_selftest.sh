#!/usr/bin/env bash
# calib_stability_selftest.sh — bench/calib_stability.py against a stand-in
# membound whose calibrations are known: key a the same every run, key b
# 100, 110, 90 over the full runs (10% from their median) and 100 in every
# quick run; sm_count (a count, not a measurement) left out. Checks the
# per-key distances, the summary counts, the specs kept, and the errors.
set -u
S=${MB_SRC:?MB_SRC: the source tree}
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cat >"$tmp/membound" <<'SH'
#!/bin/bash
# stand-in: calibrate -o FILE [--quick]; run count kept in $COUNT
[ "$1" = calibrate ] || exit 2
out=$3 quick=0
[ "${4:-}" = --quick ] && quick=1
[ -n "${FAIL_CAL:-}" ] && { echo "calibrate refused" >&2; exit 1; }
n=$(cat "$COUNT" 2>/dev/null || echo 0)
b=100
if [ $quick = 0 ]; then
  n=$((n + 1)); echo $n >"$COUNT"
  case $n in 2) b=110 ;; 3) b=90 ;; esac
fi
printf '[device]\nname = local-cpu\nsm_count = %d\na = 7.5\nb = %s\nsource = stand-in\n' $((n + 2)) $b >"$out"
SH
chmod +x "$tmp/membound"
COUNT=$tmp/count python3 "$S/bench/calib_stability.py" --membound "$tmp/membound" --runs 3 --keep "$tmp/keep" \
  >"$tmp/out" 2>"$tmp/err" || bad "rc $?: $(cat "$tmp/err")"
grep -Eq '^b +100 +10\.0 +0\.0$' "$tmp/out" || bad "key b: $(grep '^b ' "$tmp/out")"
grep -Eq '^a +7\.5 +0\.0 +0\.0$' "$tmp/out" || bad "key a: $(grep '^a ' "$tmp/out")"
grep -q '^sm_count' "$tmp/out" && bad "sm_count judged as a measurement"
grep -q "within 5% of the full runs' median: 1 of 2 keys in every full run, 2 of 2 in every quick run" "$tmp/out" ||
  bad "summary: $(grep within "$tmp/out")"
COUNT=$tmp/count2 python3 "$S/bench/calib_stability.py" --membound "$tmp/membound" --runs 3 --within 11 --no-quick \
  >"$tmp/out2" 2>&1 || bad "--within 11: rc $?"
grep -q "2 of 2 keys in every full run$" "$tmp/out2" || bad "--within 11: $(grep within "$tmp/out2")"
[ "$(ls "$tmp/keep" | tr '\n' ' ')" = "full-1.ini full-2.ini full-3.ini quick-1.ini quick-2.ini quick-3.ini " ] ||
  bad "kept specs: $(ls "$tmp/keep")"
python3 "$S/bench/calib_stability.py" --membound "$tmp/membound" --runs 1 >/dev/null 2>&1
[ $? = 2 ] || bad "--runs 1 is a usage error"
FAIL_CAL=1 COUNT=$tmp/count3 python3 "$S/bench/calib_stability.py" --membound "$tmp/membound" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "calibrate refused" "$tmp/err" || bad "a refused calibration: $(cat "$tmp/err")"
[ $fail = 0 ] && echo "calib_stability.py: distances, summary, kept specs and errors as expected"
exit $fail
