#!/usr/bin/env bash
# cli_model.sh — the model commands as a user runs them: the design's JSON
# contract, exit codes, one-line errors, variants found without the source tree.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

n=16777216
"$B" model sin2_plus_cos2 --n 2^24 --device h100-sxm --json >"$tmp/out" || bad "model --json failed"
jcheck '.device' h100-sxm
jcheck '.n' $n
jcheck '.results[] | select(.plan=="eager") | .kernels' 5
jcheck '.results[] | select(.plan=="eager") | .read_bytes' $((6 * 4 * n))
jcheck '.results[] | select(.plan=="eager") | .write_bytes' $((5 * 4 * n))
jcheck '.results[] | select(.plan=="fused") | .kernels' 1
jcheck '.results[] | select(.plan=="fused") | .read_bytes' $((4 * n))
jcheck '.results[] | select(.plan=="fused") | .write_bytes' $((4 * n))
jcheck '.results[] | select(.plan=="eager") | .per_kernel | length' 5
jcheck '.results[] | select(.plan=="eager") | .per_kernel[0].name' sin

"$B" model sigmoid3 --n 2^20 --json >"$tmp/out" || bad "sigmoid3 failed"
jcheck '[.results[] | select(.plan != "optimal") | .saved_bytes] | join(",")' 12582912,12582912,4194304
jcheck '[.results[] | select(.plan != "optimal") | (.read_bytes + .write_bytes) / (4 * 1048576)] | join(",")' 15,9,5
# optimal (a build with igraph): the minimum cut saves x alone, as recompute
optimal=0; "$B" model sigmoid3 --plan optimal >/dev/null 2>&1 && optimal=1
[ "$(jq '[.results[] | select(.plan == "optimal")] | length' "$tmp/out")" -eq "$optimal" ] && ok || bad "optimal rows"

"$B" model copy --dtype bf16 --n 2^25 --json >"$tmp/out"; b16=$(jq '.results[0].read_bytes + .results[0].write_bytes' "$tmp/out")
"$B" model copy --dtype f32 --n 2^25 --json >"$tmp/out"; b32=$(jq '.results[0].read_bytes + .results[0].write_bytes' "$tmp/out")
[ $((2 * b16)) -eq "$b32" ] && ok || bad "bf16 copy bytes $b16 not half of f32 $b32"

"$B" model --expr 'y = sin(x)**2 + cos(x)**2' --n 16M --csv >"$tmp/out" || bad "--expr --csv failed"
[ "$(head -1 "$tmp/out" | cut -d, -f1-5)" = "device,variant,plan,dtype,n" ] && ok || bad "csv header"
[ "$(wc -l <"$tmp/out")" -eq 3 ] && ok || bad "csv rows"

# whatif: every device, every built-in variant, 30 sizes
"$B" whatif --sizes '2^10..2^39' --csv >"$tmp/out" || bad "whatif failed"
ndev=$("$B" devices --json | jq '.devices | length')
[ "$ndev" -ge 15 ] && ok || bad "only $ndev devices"
rows=$(($(wc -l <"$tmp/out") - 1))
# plans: copy 2, gelu_tanh 2, sigmoid3 3 (4 with optimal), sin2_plus_cos2 2 = 9 per device and size
[ "$rows" -eq $((ndev * (9 + optimal) * 30)) ] && ok || bad "whatif rows $rows, expected $((ndev * (9 + optimal) * 30))"
"$B" whatif copy --devices h100-sxm,a100-80gb --n 2^25 --json >"$tmp/out" || bad "whatif json"
jcheck '[.results[].device] | unique | join(",")' a100-80gb,h100-sxm

# bad input: one line, exit 2
expect 2 "unknown variant 'sin3' (variants: copy, gelu_tanh, layernorm, layernorm_affine_bwd, layernorm_bwd, rmsnorm, rmsnorm_affine_bwd, rmsnorm_bwd, sigmoid3, sin2_plus_cos2, softmax, softmax_bwd, softmax_op" -- model sin3
expect 2 "did you mean h100-sxm" -- model copy --device h10-sxm
expect 2 "unknown variant 'sigmoidd3' (did you mean 'sigmoid3'?; variants: copy," -- model sigmoidd3
expect 2 "--plan: unknown plan 'recompte' (did you mean 'recompute'?; plans: eager," -- model sigmoid3 --plan recompte
expect 2 "--dtype: unknown dtype 'bf61' (did you mean 'bf16'?; dtypes: f32" -- model copy --dtype bf61
expect 2 "<expr>:1:10: expected ',' or ')'" -- model --expr 'y = sin(x'
expect 2 "<expr>:1:5: unknown function 'sinh'" -- model --expr 'y = sinh(x)'
expect 2 "must be at least 1" -- model copy --n 0
expect 2 "too large to count" -- model copy --n 2^60
# a literal that is 0 in float32: one warning line at its line:column, the model runs
expect 0 "membound: warning: <expr>:1:9: number '1e-400' is 0 in float32" -- model --expr 'y = x * 1e-400' --n 2^10
[ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "1e-400: $(wc -l <"$tmp/err") stderr lines"
expect 2 "unknown option '--bogus'" -- model --bogus
expect 2 "needs a value" -- model copy --n
expect 2 "unknown dtype 'f64'" -- model copy --dtype f64
expect 2 "unknown plan 'lazy'" -- model copy --plan lazy
expect 2 "plans: eager, store, recompute" -- model sigmoid3 --plan fused
expect 2 "unknown command 'modle'" -- modle
expect 2 "unknown option '--bogus'" -- whatif --bogus
expect 2 "unknown device" -- whatif --devices h100-sxm,nope
printf '[device]\nname = x\nmem_bandwidth_gbs = fast\n' >"$tmp/bad.ini"
expect 2 "mem_bandwidth_gbs" -- model copy --device "$tmp/bad.ini"
printf 'input x\ny = x +* 2\n' >"$tmp/bad.mb"
expect 2 "bad.mb:2:8: expected an expression" -- model "$tmp/bad.mb"
expect 2 "must be an integer from 1 to 64" -- model copy --sizes '1..2^44:4294967297'
expect 2 "unknown variant 'foo\\x0abar'" -- model $'foo\nbar'
printf 'input x bf16\ninput w f16\ny = x*w + x*2\n' >"$tmp/mixed.mb"
"$B" model "$tmp/mixed.mb" --plan eager --json >"$tmp/out" || bad "mixed dtypes"
jcheck '.results[0].dtype' mixed
jcheck '.results[0].traffic_elements' 8   # mul 2r1w, mul 1r1w, add 2r1w
"$B" model copy gelu_tanh --n 2^20 --json >"$tmp/out" && jcheck '.n' 1048576
"$B" model copy gelu_tanh --json >"$tmp/out" && jcheck '.n' null   # lecture sizes differ
# inputs in any mix, in order: two --expr, a built-in and a file; each name once
printf 'name mine\ninput x\ny = exp(x)\noutput y\n' >"$tmp/mine.mb"
"$B" model --expr 'name a; y = sin(x)' copy --expr 'name b; y = cos(x)' "$tmp/mine.mb" --plan fused --json \
  >"$tmp/out" || bad "model with mixed inputs failed"
jcheck '[.results[].variant] | join(",")' a,copy,b,mine
expect 2 "variant 'mine' is given twice: by '$tmp/mine.mb' (input 2) and by --expr 1 ('name mine; y = x*2.0') (input 3)" -- \
  model copy "$tmp/mine.mb" --expr 'name mine; y = x*2.0'
expect 2 "variant 'a' is given twice" -- whatif --expr 'name a; y = sin(x)' --expr 'name a; y = cos(x)'
# two unnamed expressions are expr1 and expr2, not two 'expr'
"$B" model --expr 'y = sin(x)' --expr 'y = cos(x)' --plan fused --json >"$tmp/out" || bad "two unnamed --expr failed"
jcheck '[.results[].variant] | join(",")' expr1,expr2
expect 2 "is given twice: by '$tmp/mine.mb' (input 1) and by '$tmp/../$(basename "$tmp")/mine.mb' (input 3)" -- \
  model "$tmp/mine.mb" --expr 'y = x*2.0' "$tmp/../$(basename "$tmp")/mine.mb"
# lists: dtypes, plans and devices, in the order given
"$B" model sin2_plus_cos2 --dtype bf16,f32 --plan fused,eager --devices h100-sxm,rtx-4090 --csv >"$tmp/out" \
  || bad "model with lists failed"
[ "$(awk -F, 'NR > 1 {print $1 ":" $3 ":" $4}' "$tmp/out" | paste -sd' ')" = \
  "h100-sxm:fused:bf16 h100-sxm:eager:bf16 h100-sxm:fused:f32 h100-sxm:eager:f32 rtx-4090:fused:bf16 rtx-4090:eager:bf16 rtx-4090:fused:f32 rtx-4090:eager:f32" ] \
  && ok || bad "model list rows: $(cut -d, -f1-4 "$tmp/out" | paste -sd' ')"
"$B" model copy --plan fused --dtype bf16,f32 --device h100-sxm,b200 --json >"$tmp/out" || bad "model --json with lists"
jcheck '.device' null
jcheck '.dtype' null
jcheck '[.results[] | .device + ":" + .dtype] | join(",")' h100-sxm:bf16,h100-sxm:f32,b200:bf16,b200:f32
expect 2 "--plan: 'eager' given twice" -- model copy --plan eager,eager
expect 2 "--dtype: unknown dtype 'f8'" -- whatif copy --dtype bf16,f8
# tensors larger than the card: a warning, the model still printed
"$B" model copy --n 2^34 --device rtx-4090 >"$tmp/out" 2>"$tmp/err" || bad "model copy --n 2^34 failed"
grep -q "warning: copy (f32) at n = 17179869184: its inputs and outputs alone take 137.44 GB, more than rtx-4090's 24 GB" "$tmp/err" \
  && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "no memory warning: $(cat "$tmp/err")"
"$B" whatif copy --n 2^34 --devices h100-sxm,rtx-4090,b200 --csv >"$tmp/out" 2>"$tmp/err" || bad "whatif copy --n 2^34 failed"
grep -q "warning: copy (f32) at n = 17179869184: its inputs and outputs alone take 137.44 GB, more than the memory of 2 of 3 devices (h100-sxm's 80 GB, rtx-4090's 24 GB)" "$tmp/err" \
  && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "whatif memory warning: $(cat "$tmp/err")"
"$B" model copy --n 2^30 --device rtx-4090 >"$tmp/out" 2>"$tmp/err" && [ ! -s "$tmp/err" ] && ok || bad "warned at 8.6 GB: $(cat "$tmp/err")"

# whatif: the CSV has every column of the table (speed-up vs eager), dtype lists,
# and each device's bandwidth named; a spec without a measured figure gets the
# table's rule
"$B" whatif sin2_plus_cos2 --devices h100-sxm --n 2^24 >"$tmp/table" || bad "whatif table failed"
"$B" whatif sin2_plus_cos2 --devices h100-sxm --n 2^24 --csv >"$tmp/out" || bad "whatif --csv failed"
tab=$(awk '$3 == "fused" {print $NF}' "$tmp/table")
csvx=$(awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "speedup_vs_eager") c = i} NR > 1 && $3 == "fused" {printf "%.2fx", $c}' "$tmp/out")
[ -n "$tab" ] && [ "$tab" = "$csvx" ] && ok || bad "whatif vs eager: table '$tab', csv '$csvx'"
grep -q "^bandwidth of h100-sxm: 2680 GB/s, measured (datasheet 3350 GB/s)" "$tmp/table" && ok || bad "no bandwidth line: $(head -2 "$tmp/table")"
printf '[device]\nname = my-gpu\nlabel = a GPU without a measured bandwidth\nmem_bandwidth_gbs = 1000\ncache_mb = 40\nfp32_tflops = 50\nbf16_tflops = 400\nlaunch_overhead_us = 3\nmem_gb = 16\nsource = a test\n' >"$tmp/g.ini"
"$B" whatif copy --devices "$tmp/g.ini" >"$tmp/table" || bad "whatif on a spec file failed"
line=$(grep "^bandwidth of my-gpu:" "$tmp/table")
case $line in *"GB/s, derived: the spec has no measured_bandwidth_gbs, so 0."*" x its datasheet 1000 GB/s (the median streaming fraction of the table's "*) ok ;; *) bad "derived line: $line" ;; esac
# the figure: the median of the table's measured / datasheet ratios (GPUs), times 1000
want=$("$B" devices --json | jq '[.devices[] | select(.kind == "gpu" and .measured_bandwidth_gbs > 0) | .measured_bandwidth_gbs / .mem_bandwidth_gbs] | sort | (if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end) * 1000 | round')
"$B" whatif copy --devices "$tmp/g.ini" --csv >"$tmp/out"
got=$(awk -F, 'NR == 2 {printf "%.0f:%s", $19, $20}' "$tmp/out")
[ "$got" = "$want:derived" ] && ok || bad "derived bandwidth $got, want $want:derived"
"$B" whatif copy --devices h100-sxm --dtype f32,bf16 --plan fused --csv >"$tmp/out"
[ "$(awk -F, 'NR > 1 {print $4}' "$tmp/out" | paste -sd,)" = f32,bf16 ] && ok || bad "whatif dtypes"
for c in devices model whatif; do "$B" $c --help >/dev/null && ok || bad "$c --help"; done

# variants are found next to the binary, without the source tree or MEMBOUND_VARIANTS
share=$(dirname "$B")/../share/membound/variants
mkdir -p "$tmp/prefix/bin" "$tmp/prefix/share/membound"
cp "$B" "$tmp/prefix/bin/" && cp -r "$share" "$tmp/prefix/share/membound/"
(cd / && env -u MEMBOUND_VARIANTS "$tmp/prefix/bin/membound" model gelu_tanh --json) >"$tmp/out" 2>"$tmp/err" \
  && ok || bad "relocated binary: $(cat "$tmp/err")"
jcheck '.results[0].variant' gelu_tanh

# shapes and row reductions: the built-in softmax at a shape, its JSON fields,
# the one-pass limit per device, the CSV's shape column, shape errors in one line
"$B" model softmax --shape 64x2^22 --json >"$tmp/out" || bad "model softmax --shape failed"
n=$((64 * 4194304))
jcheck '.results[] | select(.plan=="eager") | .kernels' 5
jcheck '.results[] | select(.plan=="eager") | .read_bytes' $((5 * 4 * n + 2 * 4 * 64))
jcheck '.results[] | select(.plan=="fused") | .read_bytes' $((3 * 4 * n))
jcheck '.results[] | select(.plan=="online") | .read_bytes' $((2 * 4 * n))
jcheck '.results[] | select(.plan=="online") | .shape' 64x4194304
jcheck '.results[] | select(.plan=="fused") | .per_kernel[0].onepass_max_cols' 123904
jcheck '.results[] | select(.plan=="fused") | .per_kernel[0].passes' 3
jcheck '.results[] | select(.plan=="fused") | .per_kernel[0].rows_in_flight' 64  # 132 x 8 on h100-sxm, at most rows
jcheck '.results[] | select(.plan=="fused") | .per_kernel[0].rereads_cached' false
"$B" model softmax --plan fused --shape 2048x2^17 >"$tmp/out" || bad "model softmax multi-pass failed"
grep -q "at 2048x131072: multi-pass, 1056 rows in flight, re-reads from DRAM" "$tmp/out" && ok \
  || bad "rows in flight: $(grep 'rows in flight' "$tmp/out")"
"$B" model softmax --shape 4096x1024 --devices h100-sxm,a100-80gb >"$tmp/out" || bad "model softmax table failed"
grep -q "one pass up to rows of 107520 elements on a100-80gb" "$tmp/out" && ok || bad "a100 one-pass limit: $(grep a100 "$tmp/out")"
"$B" whatif softmax_op --sizes 2^12x2^12,2^14x2^10 --devices h100-sxm --csv >"$tmp/out" || bad "whatif shapes failed"
[ "$(head -1 "$tmp/out" | tr , '\n' | grep -n '^shape$' | cut -d: -f1)" -gt 19 ] && ok || bad "csv shape column"
grep -q ',2^14x2^10\|,16384x1024,' "$tmp/out" && ok || bad "csv shape value: $(tail -1 "$tmp/out")"
"$B" model --expr 'y = x / x.sum(-1)' --shape 4096x1024 --json >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q '<expr>:1:7: shapes \[rows, cols\] and \[rows\] do not broadcast' "$tmp/err" && ok || bad "shape error: $(cat "$tmp/err")"
expect 2 "sum() over dim 0 is not supported" -- model --expr 'y = x * sum(x, 0)' --shape 64x64
expect 2 "is 2-D (its inputs are [rows, cols]): give a shape" -- model softmax --n 2^20
expect 2 "expected ROWSxCOLS" -- model softmax --shape 2^20
expect 2 "mix 1-D sizes and ROWSxCOLS shapes" -- model softmax --sizes 2^20,64x64
"$B" model --expr 'y = x / sum(x, -1)' --n 2^20 --json >"$tmp/out" || bad "1-D reduction failed"
jcheck '.results[] | select(.plan=="eager") | .kernels' 2
# --framework pytorch: every output a fresh allocation; at 2^24 f32 each of
# sin2_plus_cos2 eager's 5 outputs (64 MiB) is mapped: alloc_s = 5 x 64 MiB / first_touch_gbs
printf '[device]\nname = fw-cpu\nkind = cpu\nmem_bandwidth_gbs = 40\ncache_mb = 32\nfp32_tflops = 1\nlaunch_overhead_us = 5\nsource = test\nfirst_touch_gbs = 4\n' >"$tmp/fw.ini"
expect 2 "models 1-D sizes only" -- model softmax --shape 64x64 --device "$tmp/fw.ini" --framework pytorch
"$B" model sin2_plus_cos2 --n 2^24 --device "$tmp/fw.ini" --framework pytorch --json >"$tmp/out" || bad "--framework pytorch failed"
jcheck '.results[] | select(.plan=="eager") | .framework' pytorch
jcheck '.results[] | select(.plan=="eager") | .alloc_s * 1e9 | round' "$(( 5 * 64 * 1048576 / 4 ))"
jcheck '.results[] | select(.plan=="fused") | .per_kernel[0].alloc_s * 1e9 | round' "$(( 64 * 1048576 / 4 ))"
"$B" model sin2_plus_cos2 --n 2^24 --device "$tmp/fw.ini" --json >"$tmp/out" || bad "model failed"
jcheck '[.results[] | has("alloc_s")] | any' false
grep -v first_touch_gbs "$tmp/fw.ini" >"$tmp/nofw.ini"
"$B" model copy --device "$tmp/nofw.ini" --framework pytorch >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "first_touch_gbs" "$tmp/err" && ok || bad "--framework without first_touch_gbs: rc $rc $(cat "$tmp/err")"
# on a GPU --framework pytorch is the host's timeline (docs/model.md, "The
# host"): 2-D shapes too; eager sin2_plus_cos2 at 64 elements on h100-sxm is
# host-bound: 5 issues of 1.82 + 3 us and the last kernel's 3 us, 27.1 us
"$B" model sin2_plus_cos2 --n 64 --plan eager --device h100-sxm --framework pytorch --json >"$tmp/out" ||
  bad "--framework pytorch on a GPU failed"
jcheck '.results[0].time_s * 1e7 | round' 271
jcheck '.results[0].waits_on' host
jcheck '.results[0].host_s * 1e7 | round' 241
jcheck '[.results[0].per_kernel[].waits_on] | unique | join(",")' host
jcheck '.results[0].per_kernel[1].start_s * 1e7 | round' 96
"$B" model sin2_plus_cos2 --n 2^26 --plan eager --device h100-sxm --framework pytorch --json >"$tmp/out" || bad "2^26 failed"
jcheck '.results[0].waits_on' device
# a 256 MiB flush ahead (do_bench's) hides the host at 64 elements
"$B" model sin2_plus_cos2 --n 64 --plan eager --device h100-sxm --framework pytorch --flush-mb 268.435456 --json >"$tmp/out" ||
  bad "--flush-mb failed"
jcheck '.results[0].waits_on' device
jcheck '.results[0].time_s * 1e6 | round' 15
"$B" model rmsnorm_affine_bwd --shape 64x64 --plan eager --device h100-sxm --framework pytorch --phase backward --json >"$tmp/out" ||
  bad "--phase backward failed"
jcheck '.results[0].phase' backward
jcheck '[.results[0].per_kernel[] | select(.timed == false) | .backward] | unique | map(tostring) | join(",")' false
jcheck '[.results[0].per_kernel[] | select(has("host_s")) | .backward] | unique | map(tostring) | join(",")' true
"$B" model rmsnorm_affine_bwd --shape 64x64 --plan eager --device h100-sxm --phase forward --per-kernel >"$tmp/out" ||
  bad "--phase forward table failed"
grep -q untimed "$tmp/out" && ok || bad "--phase forward: no untimed kernels in the table"
expect 2 "expected all, forward or backward" -- model copy --phase sideways
expect 2 "given twice" -- model copy --phase all --phase forward
expect 2 "expected megabytes" -- model copy --flush-mb -1
expect 2 "expected megabytes" -- model copy --flush-mb 12x
expect 2 "has no backward kernels" -- model copy --phase backward
"$B" model copy --framework jax >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "expected none or pytorch" "$tmp/err" && ok || bad "--framework jax: rc $rc"

# named dimensions: --dims sizes them, the leading ones run as rows
cat >"$tmp/attn.mb" <<'EOF2'
name scores_softmax
input s [batch, heads, seq, seq]
dims batch=2, heads=3, seq=16
y = softmax(s, -1)
output y
backward
EOF2
"$B" model "$tmp/attn.mb" --plan eager --json >"$tmp/out" || bad "named dims: the 'dims' line"
jcheck '.results[0].read_bytes' $((3 * 4 * 2 * 3 * 16 * 16))
for c in model whatif plan; do
  "$B" $c "$tmp/attn.mb" --dims batch=4,heads=3,seq=16 --json >"$tmp/out" || bad "$c --dims failed"
done
"$B" model "$tmp/attn.mb" --plan eager --dims batch=4,heads=3,seq=16 --json >"$tmp/out"
jcheck '.results[0].read_bytes' $((3 * 4 * 4 * 3 * 16 * 16))
"$B" model "$tmp/attn.mb" --dims batch=4,heads=3 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no size for 'seq'" "$tmp/err" && ok || bad "--dims without seq: rc $rc $(cat "$tmp/err")"
"$B" model "$tmp/attn.mb" --dims batch=4,heads=3,seq=16 --shape 4x4 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "cannot be combined" "$tmp/err" && ok || bad "--dims with --shape: rc $rc"
"$B" model sin2_plus_cos2 --dims batch=4 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "names no dimensions" "$tmp/err" && ok || bad "--dims on a variant without: rc $rc"

# the worked examples of docs/examples/ stay valid: every plan, and LlamaRMSNorm's
# eager plan the 24 kernels torch 1.13 and 2.x launch (tests/torch_oracle_lang.py)
for f in "$MB_SRC"/docs/examples/*.mb; do
  "$B" model "$f" --json >"$tmp/out" 2>"$tmp/err" || bad "docs example $f: $(cat "$tmp/err")"
done
"$B" model "$MB_SRC/docs/examples/llama_rmsnorm.mb" --plan eager --json >"$tmp/out"
jcheck '.results[0].kernels' 24

# rms_norm's eager plan follows the device: one kernel on a GPU, torch 2.x's
# composite on a CPU spec (pow, mean, add, rsqrt, mul, mul)
printf '[device]\nname = c\nkind = cpu\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\nbf16_tflops = 1\nlaunch_overhead_us = 1\nsource = s\n' >"$tmp/cpu.ini"
"$B" model --expr 'input x [rows, cols]
input w [cols]
y = rms_norm(x, w)' --plan eager --shape 64x256 --device "$tmp/cpu.ini" --json >"$tmp/out" 2>"$tmp/err" \
  || bad "rms_norm on a cpu spec: $(cat "$tmp/err")"
jcheck '.results[0].kernels' 6
"$B" model --expr 'input x [rows, cols]
input w [cols]
y = rms_norm(x, w)' --plan eager --shape 64x256 --json >"$tmp/out"
jcheck '.results[0].kernels' 1

# --colsum partial: a [cols] gradient in per-block partial sums (132 SMs'
# rows of f32 at 4096 columns) in recompute, not eager; the 'colsum' line of
# a variant file does the same; bad values and lines: one error, exit 2
"$B" model rmsnorm_affine_bwd --shape 4096x4096 --plan eager,recompute --colsum partial --json >"$tmp/out" \
  || bad "--colsum partial failed"
jcheck '.results[] | select(.plan=="recompute") | .colsum_blocks' 132
jcheck '.results[] | select(.plan=="recompute") | .per_kernel[2].read_bytes' $((132 * 4096 * 4))
jcheck '.results[] | select(.plan=="eager") | has("colsum_blocks")' false
"$B" model rmsnorm_affine_bwd --shape 4096x4096 --plan recompute --json >"$tmp/out"
jcheck '.results[0].per_kernel[2].read_bytes' $((4096 * 4096 * 4))
sed 's/^backward$/backward\ncolsum partial/; s/^name .*/name rms_part/' "$MB_SRC/model/variants/rmsnorm_affine_bwd.mb" >"$tmp/part.mb"
"$B" model "$tmp/part.mb" --shape 64x4096 --plan recompute --json >"$tmp/out" || bad "colsum partial line"
jcheck '.results[0].colsum_blocks' 64
"$B" model "$tmp/part.mb" --shape 64x4096 --plan recompute --colsum written --json >"$tmp/out"
jcheck '.results[0] | has("colsum_blocks")' false
# reread (Inductor's separate dw/db reduction): LayerNorm's column kernel reads
# x and dy again, with mean and rstd (2 x 4096 x 4 B), not g x_hat and dy
"$B" model layernorm_affine_bwd --shape 4096x4096 --plan recompute --colsum reread --json >"$tmp/out" \
  || bad "--colsum reread failed"
jcheck '.results[0].per_kernel[2].read_bytes' $((2 * 4096 * 4096 * 4 + 2 * 4096 * 4))
jcheck '.results[0].per_kernel[1].write_bytes' $((4096 * 4096 * 4 + 2 * 4096 * 4))
jcheck '.results[0].colsum' reread
"$B" model layernorm_affine_bwd --shape 64x64 --plan eager,store --json >"$tmp/out"
jcheck '[.results[] | .colsum] | tostring' '[null,"written"]'
sed 's/^colsum partial$/colsum reread/' "$tmp/part.mb" >"$tmp/reread.mb"
"$B" model "$tmp/reread.mb" --shape 4096x4096 --plan recompute --json >"$tmp/out" || bad "colsum reread line"
jcheck '.results[0].per_kernel[2].read_bytes' $((2 * 4096 * 4096 * 4 + 4096 * 4))
expect 2 "expected written, partial or reread" -- model rmsnorm_affine_bwd --colsum sums
sed 's/^colsum partial$/colsum halves/' "$tmp/part.mb" >"$tmp/bad.mb"
expect 2 "bad.mb:15:8: expected 'written', 'partial' or 'reread' after 'colsum'" -- model "$tmp/bad.mb"

# a row held in registers alone (a Triton program a row): RMSNorm's backward
# with partial sums keeps x, dy, w and dW's partials, 16 B a column in f32:
# 16384 columns fit an A100's 256 KiB of registers, 32768 spill (said under
# the table and in the JSON); a spec without register_kib says nothing
"$B" model rmsnorm_affine_bwd --shape 64x16384 --plan recompute --colsum partial --device a100-pcie-80gb --json \
  >"$tmp/out" || bad "register columns at 16384"
jcheck '.results[0].per_kernel[1].register_max_cols' 16384
jcheck '.results[0].per_kernel[1].register_spills' false
"$B" model rmsnorm_affine_bwd --shape 64x32768 --plan recompute --colsum partial --device a100-pcie-80gb --json \
  >"$tmp/out" || bad "register columns at 32768"
jcheck '.results[0].per_kernel[1].register_spills' true
jcheck '.results[0].per_kernel[0].register_spills' false
"$B" model rmsnorm_affine_bwd --shape 64x32768 --plan recompute --colsum partial --device a100-pcie-80gb >"$tmp/out"
grep -q "held in registers alone, as a Triton program a row holds it, f32: 16 B per column x 32768 > a100-pcie-80gb's 256 KiB" \
  "$tmp/out" && ok || bad "no register note: $(cat "$tmp/out")"
"$B" model rmsnorm_affine_bwd --shape 64x32768 --plan recompute --colsum partial --device "$tmp/g.ini" --json >"$tmp/out"
jcheck '.results[0].per_kernel[1] | has("register_spills")' false

# PyTorch's unrolled casting loop (pytorch/pytorch#195542's A100 ratio): the
# eager kernels that read another dtype say it in the JSON, at 2^23 elements
# 53.87 / 45.65; an f32 kernel, a fused plan and no framework do not
printf 'input x [rows, cols] bf16\ninput w [cols] f32\nh = x.to(f32)\ny = w * (h * h).to(bf16)\noutput y\n' >"$tmp/cast.mb"
"$B" model "$tmp/cast.mb" --shape 2048x4096 --plan eager --device a100-pcie-80gb --framework pytorch --json \
  >"$tmp/out" || bad "the casting loop"
jcheck '.results[0].per_kernel | map(has("cast_loop")) | tostring' '[true,false,true,true]'
jcheck '.results[0].per_kernel[0].cast_loop * 1e6 | round' "$(python3 -c 'print(round(53.87 / 45.65 * 1e6))')"
"$B" model "$tmp/cast.mb" --shape 2048x4096 --plan eager,fused --device a100-pcie-80gb --json >"$tmp/out" ||
  bad "the casting loop, no framework"
jcheck '[.results[].per_kernel[] | has("cast_loop")] | any' false
"$B" model "$tmp/cast.mb" --shape 2048x4096 --plan eager,fused --device a100-pcie-80gb --framework pytorch \
  >"$tmp/out" || bad "the casting loop, table"
grep -q "eager: 3 kernels read another dtype than they compute in (copy, copy, mul): PyTorch's unrolled casting loop, memory time 1.18x" \
  "$tmp/out" && ok || bad "no casting-loop line: $(cat "$tmp/out")"
[ "$(grep -c "casting loop" "$tmp/out")" = 1 ] && ok || bad "a casting-loop line for the fused plan: $(cat "$tmp/out")"

# a quick calibration's spec: the model runs on it and says its bandwidths are cache figures
sed 's/^name = .*/name = q/' "$tmp/g.ini" >"$tmp/q.ini"
printf 'calibration = quick\n' >>"$tmp/q.ini"
"$B" model copy --n 2^20 --device "$tmp/q.ini" >/dev/null 2>"$tmp/err" || bad "model on a quick spec"
grep -q "q.ini: a quick calibration streams cache-sized arrays, so its bandwidths are cache figures" "$tmp/err" &&
  ok || bad "no quick-spec note: $(cat "$tmp/err")"
"$B" model copy --n 2^20 --device "$tmp/g.ini" >/dev/null 2>"$tmp/err"
[ ! -s "$tmp/err" ] && ok || bad "a full spec got a note: $(cat "$tmp/err")"

cli_done
