#!/bin/bash
# report_rows.sh — report reads 2-D rows (the measurement CSV's 'shape'
# column): each row is modelled at its own ROWSxCOLS, as measure modelled it
# (the CSV's model_time_s, on the spec it embeds), two shapes of the same n
# are told apart in summary.csv's 'shape' column, and the normalization
# claims get verdicts.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
D=${MB_SRC:?MB_SRC: the source tree}/tests/data/rows-cpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

"$B" report "$D/rows-2d.csv" -o "$tmp/r" --no-figures >"$tmp/out" 2>&1 || {
  cat "$tmp/out" >&2
  bad "report of 2-D rows exited $?"
}
S=$tmp/r/summary.csv
[ -f "$S" ] || { bad "no summary.csv"; exit 1; }
# every input row: the same model time as measure's, and its shape
awk -F, '
  FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
  FILENAME ~ /rows-2d/ { want[FNR] = $col[FILENAME, "model_time_s"]; shp[FNR] = $NF; rows++; next }
  {
    l = $col[FILENAME, "line"]; m = $col[FILENAME, "model_time_s"]; s = $col[FILENAME, "shape"]
    seen++
    if (s != shp[l]) { printf "line %d: shape %s, the input says %s\n", l, s, shp[l]; bad = 1 }
    if (m == "" || want[l] == "" || (m - want[l]) > 1e-6 * want[l] || (want[l] - m) > 1e-6 * want[l]) {
      printf "line %d (%s): model_time_s %s, measure wrote %s\n", l, s, m, want[l]; bad = 1
    }
  }
  END { if (seen != rows) { printf "%d rows in summary.csv, %d in the input\n", seen, rows; bad = 1 }
        exit bad }' "$D/rows-2d.csv" "$S" >&2 || bad "summary.csv does not model the 2-D rows as measure did"
for s in 4096x4096 16384x1024 1024x16384; do
  grep -q ",$s\$" "$S" || bad "no row of shape $s in summary.csv"
done
grep -q "fusing a hand-written softmax" "$tmp/r/verdicts.csv" || bad "no softmax verdict"

# 2-D rows of a backward variant (store, recompute: no fused plan), figures
# drawn: the knee figure draws a forward variant only, never refuses the report
csv=${MB_SRC}/reports/data/cpu-xeon-2vcpu-rows-bwd-quiet/rows-bwd.csv
"$B" report "$csv" -q -o "$tmp/b" >"$tmp/out" 2>&1 || bad "report of backward 2-D rows exited $?: $(tail -1 "$tmp/out")"
[ -s "$tmp/b/summary.csv" ] || bad "backward rows: no summary.csv"
exit $fail
