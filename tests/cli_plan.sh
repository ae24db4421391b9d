#!/usr/bin/env bash
# cli_plan.sh — `membound plan` as a user runs it: the optimal plan against
# store and recompute in JSON, the frontier as CSV, its figure's data (and
# the figure when gnuplot is there), `model --plan optimal`, exit codes and
# one-line errors. In a build without igraph: the one error line, then skip.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

if "$B" plan sigmoid3 >/dev/null 2>"$tmp/err"; then :; else
  rc=$?
  if grep -qF "igraph" "$tmp/err" && [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]; then
    expect 2 "needs igraph" -- model sigmoid3 --plan optimal
    echo "built without igraph: skipped ($pass checks passed, $fail failed)"
    [ "$fail" -eq 0 ] && exit 77 || exit 1
  fi
  bad "plan sigmoid3 exited $rc: $(cat "$tmp/err")"
fi

# on_or_above_line DAT: no frontier point or plan of a frontier figure's data
# lies below its step line (block 3: the least traffic within each budget)
on_or_above_line() {
  awk 'BEGIN { b = 0 } /^$/ { if (prev) b++; prev = 0; next } { prev = 1 }
       b == 1 { pt[++np] = $1 " " $2 }
       b == 2 { pt[++np] = $2 " " $3 }
       b >= 3 { st[++ns] = $1 " " $2 }
       END { for (i = 1; i <= np; i++) { split(pt[i], p, " "); least = 1e300
               for (j = 1; j <= ns; j++) { split(st[j], q, " "); if (q[1] <= p[1] + 1e-9 && q[2] < least) least = q[2] }
               if (p[2] < least - 1e-6) { print "below the line: " pt[i]; bad = 1 } }
             exit bad }' "$1"
}

n=1048576
"$B" plan sigmoid3 --json >"$tmp/out" || bad "plan --json failed"
jcheck '.objective' bytes
jcheck '[.results[].plan] | join(",")' store,recompute,optimal
jcheck '.results[] | select(.plan=="optimal") | .traffic_bytes' $((5 * 4 * n))
jcheck '.results[] | select(.plan=="optimal") | .saved | join(",")' x
jcheck '.results[] | select(.plan=="optimal") | .saved_bytes' $((4 * n))
jcheck '.results[] | select(.plan=="store") | .traffic_bytes' $((9 * 4 * n))
# saved sets by the tensors' names or expressions, never internal node positions
jcheck '.results[] | select(.plan=="store") | .saved | join(" ")' 'sigmoid(x) sigmoid(sigmoid(x)) y'

# a 2-D variant at its shapes: row statistics [rows, 1] cost rows elements
R=4096 C=1024
"$B" plan softmax_bwd --shape 4096x1024,64x2^22 --json >"$tmp/out" || bad "plan softmax_bwd --shape failed"
jcheck '[.results[] | .shape] | unique | join(",")' 4096x1024,64x4194304
jcheck '.results[] | select(.plan=="store" and .shape=="4096x1024") | .saved_bytes' $((4 * (2 * R * C + 2 * R)))
jcheck '.results[] | select(.plan=="store" and .shape=="4096x1024") | .traffic_bytes' $((4 * (7 * R * C + 4 * R)))
jcheck '.results[] | select(.plan=="optimal" and .shape=="4096x1024") | .saved | join(",")' x
"$B" plan softmax_bwd --shape 64x2^22 --objective time --json >"$tmp/out" || bad "plan --objective time --shape failed"
jcheck '.results[] | select(.plan=="optimal") | .saved | length' 3
"$B" plan softmax_bwd --shape 64x2^22 --frontier --figure "$tmp/sm.png" >/dev/null 2>&1
grep -q '^optimal(time) ' "$tmp/sm.dat" && ok || bad "the figure data lacks the time objective's plan"
# the time objective's plan moves less than the cut's point: the line runs down to it
on_or_above_line "$tmp/sm.dat" && ok || bad "a plan lies below softmax_bwd's least-traffic line: $(cat "$tmp/sm.dat")"
# [cols] weights and biases: their gradients are sums over the rows (colsum), in a column
# kernel after the fused backward one (docs/model.md; counts in tests/kernels_rows_bwd.c)
"$B" plan layernorm_affine_bwd --shape 4096x1024 --json >"$tmp/out" || bad "plan layernorm_affine_bwd failed"
jcheck '.results[] | select(.plan=="store") | .traffic_bytes' $((4 * (11 * R * C + 2 * R + 5 * C)))
jcheck '.results[] | select(.plan=="store") | .saved_bytes' $((4 * (2 * R * C + R + C)))
jcheck '.results[] | select(.plan=="recompute") | .traffic_bytes' $((4 * (8 * R * C + 5 * C)))
jcheck '.results[] | select(.plan=="optimal") | .saved | join(",")' x,w
jcheck '.results[] | select(.plan=="optimal") | .saved_bytes' $((4 * (R * C + C)))
"$B" plan --expr $'input x [rows, cols]\ninput w [cols]\ny = x * w\nbackward' --shape 64x32 --json >"$tmp/out" ||
  bad "plan of a [cols] weight's gradient failed"
jcheck '.results[] | select(.plan=="recompute") | .traffic_bytes' $((4 * (7 * 64 * 32 + 3 * 32)))

# two sums through sin and cos: save them (less memory) or the inputs (less traffic)
trade=$'y = sin(a + b + c) + cos(a - b - c)\nbackward'
"$B" plan --expr "$trade" --frontier --n 2^20 --csv >"$tmp/out" || bad "plan --frontier --csv failed"
[ "$(head -1 "$tmp/out")" = "variant,plan,device,n,dtype,objective,saved_bytes,traffic_bytes,recompute_ops_per_elem,time_s,saved,shape" ] && ok || bad "frontier CSV header: $(head -1 "$tmp/out")"
[ "$(tail -n +2 "$tmp/out" | cut -d, -f7,8 | tr '\n' ' ')" = "$((8 * n)),$((48 * n)) $((12 * n)),$((44 * n)) " ] && ok ||
  bad "frontier rows: $(cat "$tmp/out")"
[ "$(tail -1 "$tmp/out" | cut -d, -f11)" = "a b c" ] && ok || bad "last frontier set: $(tail -1 "$tmp/out")"
[ "$(tail -1 "$tmp/out" | cut -d, -f12)" = "" ] && ok || bad "a 1-D row's shape is not empty: $(tail -1 "$tmp/out")"
# a 2-D variant's rows carry their shape, last; n stays the element count
"$B" plan softmax_bwd --shape 4096x1024,64x2^22 --csv >"$tmp/out" || bad "plan softmax_bwd --shape --csv failed"
[ "$(tail -n +2 "$tmp/out" | awk -F, '{print $4 ":" $NF}' | sort -u | paste -sd' ')" = "268435456:64x4194304 4194304:4096x1024" ] \
  && ok || bad "2-D plan rows' n and shape: $(tail -n +2 "$tmp/out" | awk -F, '{print $4 ":" $NF}' | sort -u | paste -sd' ')"

# the time objective on a device whose compute is starved saves instead
cat >"$tmp/slow.ini" <<'EOF'
[device]
name = slow
label = a device with a ten-thousandth of an H100's compute
mem_bandwidth_gbs = 3350
cache_mb = 50
fp32_tflops = 0.0067
bf16_tflops = 0.1
sfu_tops = 0.0004
launch_overhead_us = 3
mem_gb = 80
source = test
EOF
"$B" plan sigmoid3 --objective time --device "$tmp/slow.ini" --n 2^24 --json >"$tmp/out" || bad "--objective time failed"
jcheck '.results[] | select(.plan=="optimal") | .saved | length' 3

# the figure's data, and the figure where gnuplot and the reports module are
"$B" plan --expr "$trade" --frontier --figure "$tmp/fr.png" >/dev/null 2>"$tmp/err"; rc=$?
[ -s "$tmp/fr.dat" ] && ok || bad "no figure data"
# the figure names the saved tensors as a reader does (no source positions)
[ "$(grep -c '"a, b, c = recompute"' "$tmp/fr.dat")" -eq 1 ] && ok || bad "figure data lacks the frontier set"
# a plan on a frontier point is named there, not labelled again on top ("-")
[ "$(awk '/^- /' "$tmp/fr.dat" | wc -l)" -eq 2 ] && ok || bad "store and recompute labelled on their frontier points"
# the step line is the least traffic within each budget: no point below it
on_or_above_line "$tmp/fr.dat" && ok || bad "a plan lies below the least-traffic line: $(cat "$tmp/fr.dat")"
grep -q '@' "$tmp/fr.dat" && bad "figure data names a tensor by its position" || ok
grep -q 'n = 2^{[0-9]*}' "$tmp/fr.dat" && ok || bad "figure title's n is not a power of two"
grep -q '^title "expr' "$tmp/fr.dat" && bad "figure titled by the internal name expr" || ok
if [ "$rc" -eq 0 ]; then
  [ "$(head -c 4 "$tmp/fr.png" | od -An -c | tr -d ' ')" = "211PNG" ] && ok || bad "fr.png is not a PNG"
else
  [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "figure: exit $rc: $(cat "$tmp/err")"
fi

# the plan everywhere else: model knows it
"$B" model sigmoid3 --plan optimal --json >"$tmp/out" || bad "model --plan optimal failed"
jcheck '.results[0].plan' optimal
jcheck '.results[0].read_bytes + .results[0].write_bytes' $((5 * 4 * n))

expect 2 "unknown objective 'speed'" -- plan sigmoid3 --objective speed
expect 2 "no backward pass" -- plan copy
expect 2 "add --frontier" -- plan sigmoid3 --figure "$tmp/x.png"
expect 2 "--objective does not apply" -- plan sigmoid3 --frontier --objective time
expect 2 "name one variant" -- plan --frontier --figure "$tmp/x.png" sigmoid3 --expr $'name s1; y = sigmoid(x)\nbackward'
expect 2 "name one variant" -- plan --frontier --figure "$tmp/x.png" sigmoid3 --dtype f32,bf16
expect 2 "variant 'sigmoid3' is given twice" -- plan sigmoid3 sigmoid3

# lists and mixed inputs, in order: a built-in, an --expr, a file; each device and dtype
printf 'name s2\ninput x\ny = sigmoid(sigmoid(x))\noutput y\nbackward\n' >"$tmp/s2.mb"
"$B" plan sigmoid3 --expr $'name s1; y = sigmoid(x)\nbackward' "$tmp/s2.mb" --devices h100-sxm,b200 \
  --dtype f32,bf16 --csv >"$tmp/out" || bad "plan with mixed inputs and lists failed"
[ "$(awk -F, 'NR > 1 && $2 == "store" {print $1 ":" $3 ":" $5}' "$tmp/out" | paste -sd' ')" = \
  "sigmoid3:h100-sxm:f32 sigmoid3:h100-sxm:bf16 s1:h100-sxm:f32 s1:h100-sxm:bf16 s2:h100-sxm:f32 s2:h100-sxm:bf16 sigmoid3:b200:f32 sigmoid3:b200:bf16 s1:b200:f32 s1:b200:bf16 s2:b200:f32 s2:b200:bf16" ] \
  && ok || bad "plan rows: $(cut -d, -f1-5 "$tmp/out" | paste -sd' ')"
# bf16 halves the traffic of f32
t32=$(awk -F, '$1 == "s2" && $2 == "store" && $3 == "b200" && $5 == "f32" {print $8}' "$tmp/out")
t16=$(awk -F, '$1 == "s2" && $2 == "store" && $3 == "b200" && $5 == "bf16" {print $8}' "$tmp/out")
[ -n "$t32" ] && [ "$t32" -eq $((2 * t16)) ] && ok || bad "bf16 traffic $t16 not half of f32 $t32"
"$B" plan sigmoid3 --devices h100-sxm,b200 --json >"$tmp/out" || bad "plan --json, two devices"
jcheck '.device' null
jcheck '[.results[].device] | unique | join(",")' b200,h100-sxm
expect 2 "--dtype: unknown dtype 'f64'" -- plan sigmoid3 --dtype f32,f64
# --plan: these of the plans, in its order
"$B" plan sigmoid3 --plan optimal,store --csv >"$tmp/out" || bad "plan --plan failed"
[ "$(tail -n +2 "$tmp/out" | cut -d, -f2 | paste -sd,)" = optimal,store ] && ok || bad "plan --plan rows: $(cut -d, -f2 "$tmp/out" | paste -sd,)"
expect 2 "has no plan 'fused'" -- plan sigmoid3 --plan fused
expect 2 "--plan does not apply" -- plan sigmoid3 --frontier --plan store
expect 2 "has no plan 'optimal'" -- model copy --plan optimal
[ ! -e "$tmp/x.dat" ] && ok || bad "a refused --figure left x.dat"

cli_done
