#!/bin/bash
# report_limits.sh — report's memory follows its rows, not the file, and its
# input limit holds: a generated CSV of 10^5 rows reports under a virtual
# memory limit of 600 MiB (1.7 KB rows took 560 MiB resident); a CSV of 500
# rows padded to 131 MB reports under 128 MiB (the CSV is streamed: read
# whole, it was "out of memory"); one of
# 2,000,001 rows (the limit is 2,000,000) is refused with one line and exit
# 2 under 2 GiB, before anything is written; a CSV over 1 GiB (sparse) is
# refused the same way.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
. "$(dirname "${BASH_SOURCE[0]}")/gen_rows.sh" # gen ROWS FILE
# under KIB_LIMIT CMD...: runs CMD with ulimit -v
# (not under AddressSanitizer, which reserves terabytes of address space: the
# limits themselves are still checked there, without ulimit)
if ldd "$B" 2>/dev/null | grep -q libasan; then
  under() { shift; "$@"; }
else
  under() { local lim=$1; shift; ( ulimit -v "$lim" && "$@" ); }
fi

gen 100000 "$tmp/100k.csv"
under $((600 * 1024)) "$B" report "$tmp/100k.csv" --no-figures -o "$tmp/rep" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 0 ] || bad "10^5 rows under ulimit -v 600 MiB: exit $rc: $(tail -2 "$tmp/err")"
n=$(python3 -c 'import csv,sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1]))))' "$tmp/rep/summary.csv" 2>/dev/null)
[ "$n" = 100000 ] || bad "10^5 rows: summary.csv has ${n:-no} rows"
# summary.json, written row by row, is one JSON document with every row
python3 - "$tmp/rep/summary.json" <<'PY' || bad "10^5 rows: summary.json does not parse or lacks rows"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert len(rows) == 100000 and all(r["device"] == "h100-sxm" and r["n"] >= 65536 for r in rows)
assert isinstance(rows[0]["model_time_s"], float) and rows[0]["count_check"] is None
PY
# the residuals figure draws at most 20,000 points in all, besides outliers
# (every row of its 16 series was 10^5 points: gnuplot took seconds a 10^5)
pts=$(awk 'NF == 6 && $1 ~ /^[0-9]+$/ && $5 == 0 { n++ } END { print n + 0 }' "$tmp/rep/figures/residuals.dat" 2>/dev/null)
[ "${pts:-0}" -gt 1000 ] && [ "$pts" -le 20000 ] || bad "10^5 rows: residuals.dat holds ${pts:-no} points besides outliers, expected 1000..20000"

# 500 rows, each padded with 256 KiB of spaces (trimmed around a field)
awk 'BEGIN { pad = "        "; while (length(pad) < 262144) pad = pad pad
  print "device,backend,variant,plan,dtype,n,time_s_median,verified"
  for (i = 0; i < 500; i++)
    printf "h100-sxm,cuda,copy,eager,f32,%d,%.6g,1%s\n", 2 ^ (16 + i % 13), 2 ^ (16 + i % 13) * 8 / 3e12 + 5e-6, pad
}' >"$tmp/pad.csv"
under $((128 * 1024)) "$B" report "$tmp/pad.csv" --no-figures -o "$tmp/pad" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 0 ] || bad "500 rows in $(($(stat -c %s "$tmp/pad.csv") >> 20)) MiB under ulimit -v 128 MiB: exit $rc: $(tail -2 "$tmp/err")"
[ "$(($(wc -l <"$tmp/pad/summary.csv" 2>/dev/null || echo 0)))" = 501 ] || bad "the padded CSV: summary.csv lacks rows"
rm -f "$tmp/pad.csv"

gen 2000001 "$tmp/2m.csv"
under $((2048 * 1024)) "$B" report "$tmp/2m.csv" --no-figures -o "$tmp/big" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] || bad "2,000,001 rows: exit $rc, expected 2: $(tail -2 "$tmp/err")"
[ "$(wc -l <"$tmp/err")" = 1 ] || bad "2,000,001 rows: not one line: $(cat "$tmp/err")"
grep -q "2m.csv:2000002:1: more than 2000000 measurement rows" "$tmp/err" || bad "2,000,001 rows: $(cat "$tmp/err")"
[ ! -e "$tmp/big" ] || bad "a refused report wrote $tmp/big"
echo "over the row limit: $(cat "$tmp/err")"

truncate -s $(( (1 << 30) + 1 )) "$tmp/huge.csv"
"$B" report "$tmp/huge.csv" --no-figures -o "$tmp/huge" >/dev/null 2>"$tmp/err"; rc=$?
[ "$rc" = 2 ] || bad "a CSV over 1 GiB: exit $rc, expected 2: $(cat "$tmp/err")"
grep -q "1 GiB per CSV" "$tmp/err" || bad "a CSV over 1 GiB: the line does not state the limit: $(cat "$tmp/err")"
[ ! -e "$tmp/huge" ] || bad "a refused report wrote $tmp/huge"
echo "over the byte limit: $(cat "$tmp/err")"

[ $fail = 0 ] && echo "report_limits: ok"
exit $fail
