#!/usr/bin/env bash
# fig_overlap.sh — no label, title or legend of a figure lies on its data,
# and no two labels lie on each other. Each figure is rendered on the same
# axes as layers on a transparent background (plots/style.gp's mb_layer):
# the text alone, the data alone, and each text unit alone (mb_only=K);
# tests/fig_mask.c compares their alpha masks. Figures: the lecture's
# (membound figures: what-if included), three custom variants (--expr), a
# report of committed measurements, a report of imported ncu measurements,
# the model's error across two committed machines, three frontiers (plan
# --frontier), attention's (attention --figures), the MLP's (mlp --figures),
# and the lecture's at
# 4:3, font scale 1.3, dark. First, the
# check must fail on two layouts made to overlap (a legend moved onto the
# roofline's points; an axis label moved onto its tic labels).
# Skips (77) without gnuplot or without the mask reader (libpng).
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
SRC=${MB_SRC:?MB_SRC: the source tree}
MASK=${MB_FIG_MASK:-}
GP=$(command -v gnuplot || true)
[ -n "$GP" ] || { echo "skipped: gnuplot not found"; exit 77; }
[ -n "$MASK" ] && [ -x "$MASK" ] || { echo "skipped: fig_mask not built (libpng missing)"; exit 77; }
T=$(mktemp -d /tmp/mb_fig_overlap.XXXXXX)
[ -n "${MB_FIG_KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
fails=0

# render DIR SCRIPT NAME LAYER ONLY OUT: one layer of DIR/SCRIPT.gp with DIR/NAME.dat;
# prints the number of text units the script made
render() {
  "$GP" -e "mb_layer='$4'; mb_only=$5" \
        -e "call '$1/$2.gp' '$1/$3.dat' '$6'; print sprintf('units %d', mb_unit)" 2>&1 |
    awk '/^units /{print $2} /rror/{print "gnuplot: " $0 > "/dev/stderr"}'
}

# check DIR SCRIPT NAME: 0 when the figure's text and data do not meet and
# no two text units do; prints each overlap
check() {
  local dir=$1 script=$2 name=$3 w=$T/w/$(basename "$1")-$3 n k units=()
  mkdir -p "$w"
  n=$(render "$dir" "$script" "$name" text 0 "$w/text.png")
  render "$dir" "$script" "$name" data 0 "$w/data.png" >/dev/null
  [ -n "$n" ] && [ -s "$w/text.png" ] && [ -s "$w/data.png" ] || { echo "$dir/$name: not rendered"; return 1; }
  local rc=0
  "$MASK" data "$w/text.png" "$w/data.png" > "$w/out" || rc=1
  for k in $(seq 1 "$n"); do
    render "$dir" "$script" "$name" text "$k" "$w/unit$k.png" >/dev/null
    units+=("$w/unit$k.png")
  done
  "$MASK" labels "${units[@]}" >> "$w/out" || rc=1
  # the first overlaps, and how many
  head -n 4 "$w/out" | sed "s|$w/||g"
  [ "$(wc -l < "$w/out")" -le 4 ] || echo "  ... $(wc -l < "$w/out") in all"
  return $rc
}

# check_set DIR: every figure of a folder (its render.sh lists them)
check_set() {
  local dir=$1 script name any=0
  while read -r script name; do
    any=1
    if check "$dir" "$script" "$name"; then echo "ok   $dir/$name"; else echo "FAIL $dir/$name"; fails=$((fails + 1)); fi
  done < <(sed -n 's/^  gnuplot -c \([a-z_]*\)\.gp \([^ ]*\)\.dat .*/\1 \2/p' "$dir/render.sh")
  [ $any = 1 ] || { echo "FAIL $dir: no figure"; fails=$((fails + 1)); }
}

# --- the check fails on layouts made to overlap ------------------------------
"$B" figures -o "$T/bad" --no-render >/dev/null || { echo "FAIL: figures --no-render"; exit 1; }
cp "$T/bad/roofline.gp" "$T/roofline.orig"
# the legend moved onto the points at the slope's left end
sed -i 's/^set key bottom right \(.*\)/set key at graph 0.3, graph 0.45 \1/' "$T/bad/roofline.gp"
grep -q '^set key at graph 0.3' "$T/bad/roofline.gp" || { echo "FAIL: could not move roofline's legend"; exit 1; }
if check "$T/bad" roofline roofline >"$T/bad.out"; then
  echo "FAIL: a legend on the roofline's points was not caught"; fails=$((fails + 1))
elif grep -q "text over data" "$T/bad.out"; then
  echo "ok   caught: $(grep -m1 'text over data' "$T/bad.out")"
else
  echo "FAIL: the moved legend failed otherwise:"; cat "$T/bad.out"; fails=$((fails + 1))
fi
# the x label moved up onto the tic labels
cp "$T/roofline.orig" "$T/bad/roofline.gp"
sed -i "s/^set xlabel \(.*\) tc rgb mb_tc(0)$/set xlabel \1 offset 0, 1.3 tc rgb mb_tc(0)/" "$T/bad/roofline.gp"
grep -q 'offset 0, 1.3' "$T/bad/roofline.gp" || { echo "FAIL: could not move roofline's x label"; exit 1; }
if check "$T/bad" roofline roofline >"$T/bad2.out"; then
  echo "FAIL: an axis label on its tic labels was not caught"; fails=$((fails + 1))
elif grep -qE "(unit3.png and unit[0-9]+.png|unit[0-9]+.png and unit3.png): labels overlap" "$T/bad2.out" &&
     ! grep -q "text over data" "$T/bad2.out"; then
  echo "ok   caught: $(grep -m1 'labels overlap' "$T/bad2.out") (unit 3: the x label)"
else
  echo "FAIL: the moved x label failed otherwise:"; cat "$T/bad2.out"; fails=$((fails + 1))
fi

# --- the lecture's figures, three custom variants, a report, 4:3 dark ---------
"$B" figures -o "$T/lecture" --no-render >/dev/null || { echo "FAIL: figures"; exit 1; }
"$B" figures --expr 'name ones; y = x * 0 + 1' --expr 'name swish; y = x * sigmoid(x)' \
     --expr 'name poly; y = x * x + 3 * x' -o "$T/custom" --no-render >/dev/null || { echo "FAIL: figures --expr"; exit 1; }
"$B" report "$SRC"/reports/data/cpu-amd-epyc-2vcpu/steady-run-cb591e2/*.csv -o "$T/report" --no-figures \
     >/dev/null || { echo "FAIL: report"; exit 1; }
"$B" figures -o "$T/slide43" --size 4:3 --font-scale 1.3 --theme dark --no-render >/dev/null ||
  { echo "FAIL: figures --size 4:3"; exit 1; }
"$B" figures softmax -o "$T/rows" --no-render >/dev/null || { echo "FAIL: figures softmax"; exit 1; }
"$B" report "$SRC"/tests/data/rows-cpu/rows-2d.csv -o "$T/rowsreport" --no-figures >/dev/null ||
  { echo "FAIL: report of 2-D rows"; exit 1; }
for d in lecture custom report/figures slide43 rows rowsreport/figures; do check_set "$T/$d"; done
# imported ncu measurements (an H200's eager and fused sin^2+cos^2), reported
D=$SRC/tests/data/import
if "$B" import ncu "$D/ncu_details_sin2_eager.csv" --variant sin2_plus_cos2 --plan eager --n 2^20 --device h200 \
     -o "$T/ncu-eager.csv" -q >/dev/null 2>&1 &&
   "$B" import ncu "$D/ncu_details_sin2_fused.csv" --variant sin2_plus_cos2 --plan fused --n 2^20 --device h200 \
     -o "$T/ncu-fused.csv" -q >/dev/null 2>&1 &&
   "$B" report "$T/ncu-eager.csv" "$T/ncu-fused.csv" -o "$T/imported" --no-figures >/dev/null 2>&1; then
  check_set "$T/imported/figures"
else
  echo "FAIL: import ncu and its report"; fails=$((fails + 1))
fi
# the model's error across devices: a report of two committed machines (an
# AMD and a Xeon guest, both hosts named vm: two devices, local-cpu@vm#1 and #2)
"$B" report "$SRC"/reports/data/cpu-amd-epyc-2vcpu/all-copy.csv "$SRC"/reports/data/cpu-amd-epyc-2vcpu/all-sin2_plus_cos2.csv \
     "$SRC"/reports/data/cpu-xeon-2vcpu-1202-jit/jit-ab-jit.csv -o "$T/machines" --no-figures >/dev/null ||
  { echo "FAIL: report of two machines"; exit 1; }
if check "$T/machines/figures" model_error model_error; then echo "ok   model_error"; else echo "FAIL model_error"; fails=$((fails + 1)); fi
# the frontiers (a saved set beside a plan it equals; the time objective's
# plan below the cut at a 2-D shape where rows do not fit on chip)
for f in "sigmoid3" "layernorm_bwd" "softmax_bwd --shape 64x2^22"; do
  name=${f%% *}
  mkdir -p "$T/frontier-$name"
  # shellcheck disable=SC2086 # $f holds the variant and its options
  "$B" plan $f --frontier --figure "$T/frontier-$name/frontier.png" >/dev/null 2>&1 || true
  if [ -s "$T/frontier-$name/frontier.dat" ]; then
    cp "$SRC"/plots/style.gp "$SRC"/plots/look.gp "$SRC"/plots/frontier.gp "$T/frontier-$name/"
    if check "$T/frontier-$name" frontier frontier; then echo "ok   frontier $name"
    else echo "FAIL frontier $name"; fails=$((fails + 1)); fi
  else
    echo "FAIL frontier $name: no data"; fails=$((fails + 1))
  fi
done
# attention's figures (membound attention --figures): Llama's head on two
# GPUs, the longest seq across them
mkdir -p "$T/attn"
"$B" attention --dims heads=32,head_dim=128 --dtype bf16 --device h100-sxm,a100-40gb --figures "$T/attn" >/dev/null 2>&1 || true
cp "$SRC"/plots/style.gp "$SRC"/plots/look.gp "$SRC"/plots/attn_*.gp "$T/attn/"
for c in "attn_seq attn_h100-sxm" "attn_tflops attn_h100-sxm" "attn_seq attn_a100-40gb" \
         "attn_frontier attn_frontier_h100-sxm" "attn_oom attn_oom"; do
  set -- $c
  if [ ! -s "$T/attn/$2.dat" ]; then echo "FAIL $1 $2: no data"; fails=$((fails + 1))
  elif check "$T/attn" "$1" "$2"; then echo "ok   $1 $2"
  else echo "FAIL $1 $2"; fails=$((fails + 1)); fi
done
# the MLP's figures (membound mlp --figures): Llama-7B's on the H100, forward
# and backward (its kernel times, roofline and checkpointing frontier)
mkdir -p "$T/mlp"
"$B" mlp --preset llama-7b --dtype bf16 --backward --device h100-sxm --figures "$T/mlp" >/dev/null 2>&1 || true
cp "$SRC"/plots/style.gp "$SRC"/plots/look.gp "$SRC"/plots/mlp_*.gp "$T/mlp/"
for c in mlp_kernels mlp_roofline mlp_frontier; do
  if [ ! -s "$T/mlp/$c.dat" ]; then echo "FAIL $c: no data"; fails=$((fails + 1))
  elif check "$T/mlp" "$c" "$c"; then echo "ok   $c"
  else echo "FAIL $c"; fails=$((fails + 1)); fi
done
[ $fails = 0 ] || { echo "$fails figure(s) with overlaps"; exit 1; }
echo "no overlaps"
