#!/usr/bin/env bash
# measure_shapes.sh — 2-D rows of one element count at different shapes are
# rows of their own: the copy-measured-once rule (plans that are the same
# kernels) holds at one shape only, the note names the shapes, and the table
# and notes print each row's shape, not its n.
set -u
B=${MB_BIN:?MB_BIN not set}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export MEMBOUND_CACHE_DIR=$tmp/cache
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
has() { grep -qF -- "$2" "$1" && ok || bad "$1 lacks '$2': $(head -c 600 "$1")"; }
hasre() { grep -qE -- "$2" "$1" && ok || bad "$1 lacks /$2/: $(head -c 600 "$1")"; }
hasnt() { ! grep -qF -- "$2" "$1" && ok || bad "$1 has '$2'"; }
cd "$tmp" || exit 1

# softmax_op: one library kernel under eager and fused; two shapes of n = 2^14
"$B" measure softmax_op --backend cpu --threads 1 --device h100-sxm --plan eager,fused \
  --sizes 2^5x2^9,2^9x2^5 --timeout 0.2 -o s.csv >out 2>err || bad "measure exited $?"
has err "softmax_op: plans eager and fused are the same kernels: measured once, reported under both (shape 2^5x2^9, 2^9x2^5)"
[ "$(grep -c 'same kernels' err)" = 1 ] && ok || bad "the note not once: $(cat err)"
hasre out '^softmax_op +eager +f32 +2\^5x2\^9 '
hasre out '^softmax_op +fused +f32 +2\^9x2\^5 '
hasnt out " 2^14 "
python3 - s.csv <<'PY' && ok || bad "rows at two shapes are one measurement: $(cut -d, -f3-10 s.csv)"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert [x["plan"] for x in r] == ["eager", "eager", "fused", "fused"], [x["plan"] for x in r]
assert [x["shape"] for x in r] == ["32x512", "512x32", "32x512", "512x32"], [x["shape"] for x in r]
m = [x["time_s_median"] for x in r]
assert m[0] != m[1], m          # two shapes: two measurements
assert m[0] == m[2] and m[1] == m[3], m  # the same kernels at one shape: one
PY

# every plan of softmax: eager, fused and online are measured at each shape
# (online's row passes differ from fused's, so not one measurement either)
"$B" measure softmax --backend cpu --threads 1 --device h100-sxm --plan fused,online \
  --sizes 2^4x2^10,2^10x2^4 --timeout 0.2 -o f.csv >out 2>err || bad "measure softmax exited $?"
hasnt err "same kernels"
python3 - f.csv <<'PY' && ok || bad "softmax rows share a measurement: $(cut -d, -f3-10 f.csv)"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
m = [x["time_s_median"] for x in r]
assert len(set(m)) == 4, m
PY

# named dimensions: --dims sizes a 4-D variant, its leading dimensions the rows
printf 'input s [batch, heads, seq, seq]\ny = softmax(s, -1)\noutput y\nbackward\n' >attn.mb
"$B" measure attn.mb --backend cpu --threads 1 --device h100-sxm --plan eager --dims batch=2,heads=2,seq=64 \
  --timeout 0.2 -o d.csv >out 2>err || bad "measure --dims exited $?: $(cat err)"
python3 - d.csv <<'PY' && ok || bad "--dims rows: $(cut -d, -f3-10 d.csv)"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
assert [(x["shape"], x["verified"]) for x in r] == [("256x64", "1")], [(x["shape"], x["verified"]) for x in r]
PY
"$B" measure attn.mb --backend cpu --dims batch=2,heads=2 -o e.csv >out 2>err; rc=$?
[ $rc = 2 ] && has err "no size for 'seq'"
[ ! -e e.csv ] && ok || bad "a refused --dims left e.csv"

# a mask broadcast within the leading dimensions: the CSV carries the sizes
# (column dims), and report models the mask's rows from them; a loss over
# [batch, seq] runs over its n elements (1-D, no dims) and reports too
printf 'input s [b, h, q, k]\ninput m [b, 1, 1, k] nograd\ny = softmax(s + m * -3, -1)\noutput y\nbackward\n' >mask.mb
printf 'input p [batch, seq]\ninput t [batch, seq] nograd\nd = p - t\nloss = (d * d).mean()\noutput loss\nbackward\n' >loss.mb
"$B" measure mask.mb --backend cpu --threads 1 --device h100-sxm --plan eager --dims b=2,h=3,q=5,k=64 \
  --timeout 0.2 -o m.csv >out 2>err || bad "measure mask.mb exited $?: $(cat err)"
"$B" measure loss.mb --backend cpu --threads 1 --device h100-sxm --plan eager --dims batch=4,seq=256 \
  --timeout 0.2 -o l.csv >out 2>err || bad "measure loss.mb exited $?: $(cat err)"
python3 - m.csv l.csv <<'PY' && ok || bad "mask and loss rows: $(cut -d, -f3-10 m.csv l.csv)"
import csv, sys
m = list(csv.DictReader(open(sys.argv[1])))
assert [(x["shape"], x["dims"], x["verified"]) for x in m] == [("30x64", "b=2,h=3,q=5,k=64", "1")], m
l = list(csv.DictReader(open(sys.argv[2])))
assert [(x["n"], x["shape"], x["dims"], x["verified"]) for x in l] == [("1024", "", "", "1")], l
PY
"$B" report m.csv l.csv -o rep --no-figures >out 2>err || bad "report of mask and loss rows exited $?: $(cat err)"
python3 - rep/summary.csv m.csv <<'PY' && ok || bad "report's bytes of the mask row: $(cut -d, -f5-18 rep/summary.csv)"
import csv, sys
s = {x["variant"]: x for x in csv.DictReader(open(sys.argv[1]))}
m = next(csv.DictReader(open(sys.argv[2])))
assert s["mask"]["read_bytes"] == m["read_bytes"], (s["mask"]["read_bytes"], m["read_bytes"])
PY

echo "measure_shapes: $pass passed, $fail failed"
[ "$fail" = 0 ]
