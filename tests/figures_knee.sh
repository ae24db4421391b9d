#!/bin/bash
# figures_knee.sh — the one-pass -> multi-pass knee figure (reports/fig_knee.c,
# plots/knee.gp): in `figures` of a variant with row operations (none for a
# map), with each GPU's knee (the fused kernel's longest one-pass row) and the
# model's traffic rising from 2n past it; in `report` of 2-D CPU rows, with
# the measured fused rows as points at their row lengths.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
S=${MB_SRC:?MB_SRC: the source tree}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
meta() { awk -v k="$2" '$1 == k { print $2; exit }' "$1"; }

"$B" figures softmax -o "$tmp/f" --no-render >"$tmp/out" 2>&1 || bad "figures softmax exited $?: $(cat "$tmp/out")"
K=$tmp/f/knee.dat
[ -f "$K" ] || { bad "no knee.dat: $(cat "$tmp/out")"; exit 1; }
[ -f "$tmp/f/knee.gp" ] || bad "knee.gp not beside its data"
[ "$(meta "$K" device_1)" = '"h100-sxm"' ] && [ "$(meta "$K" knee_1)" = 123904 ] || bad "h100-sxm knee: $(head -20 "$K")"
[ "$(meta "$K" device_2)" = '"a100-80gb"' ] && [ "$(meta "$K" knee_2)" = 107520 ] || bad "a100-80gb knee"
[ "$(meta "$K" n)" = 16777216 ] && [ "$(meta "$K" plans)" = 2 ] && [ "$(meta "$K" measured)" = 0 ] || bad "meta: $(head -20 "$K")"
# h100-sxm fused: 2n (lecture count) up to the knee, 4n (three reads and a write) past it
awk '/^"h100-sxm fused"/ { on = 1; next } on && NF == 0 { exit } on {
       if ($1 <= 65536 && $2 != 2) { print "cols " $1 ": " $2 "n"; bad = 1 }
       if ($1 >= 262144 && $2 != 4) { print "cols " $1 ": " $2 "n"; bad = 1 }
       rows++ }
     END { if (rows != 21) { print rows " rows"; bad = 1 } exit bad }' "$K" || bad "h100-sxm fused traffic"
awk '/^"h100-sxm online"/ { on = 1; next } on && NF == 0 { exit } on && $1 == 16777216 && $2 == 3 { ok = 1 }
     END { exit !ok }' "$K" || bad "online: not 3n past the knee"

# a row variant's sizes are shapes: no bytes, time-against-n or what-if figure of 1-D sizes
# (each was written with no valid point, and gnuplot's failure stopped the figures after it)
for f in bytes time_vs_n whatif; do [ ! -e "$tmp/f/$f.dat" ] || bad "figures softmax wrote $f.dat"; done
"$B" figures copy -o "$tmp/c" --no-render >"$tmp/out" 2>&1 || bad "figures copy exited $?"
[ ! -e "$tmp/c/knee.dat" ] || bad "a knee figure for copy (no row operations)"

# report of the committed 2-D CPU run: its fused softmax rows on the figure
"$B" report "$S/tests/data/rows-cpu/rows-2d.csv" -o "$tmp/r" --no-figures >"$tmp/out" 2>&1 || bad "report exited $?: $(cat "$tmp/out")"
R=$tmp/r/figures/knee.dat
[ -f "$R" ] || { bad "report: no knee.dat"; exit 1; }
[ "$(meta "$R" measured)" = 3 ] && [ "$(meta "$R" device_3)" = '"local-cpu"' ] || bad "report meta: $(head -20 "$R")"
awk '/^"measured fused"/ { on = 1; next } on { c[$1] = 1 } END { exit !(c[4096] && c[1024] && c[16384]) }' "$R" ||
  bad "measured points: $(sed -n '/measured fused/,$p' "$R")"
for f in bytes time_vs_n whatif; do [ ! -e "$tmp/r/figures/$f.dat" ] || bad "report of 2-D rows wrote $f.dat"; done
[ $fail = 0 ] && echo "figures_knee: ok"
exit $fail
