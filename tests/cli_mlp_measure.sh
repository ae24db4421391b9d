#!/usr/bin/env bash
# cli_mlp_measure.sh — `membound mlp --measure` as a user runs it: GPT-2's
# and Llama's MLP under eager and fused at a tiny shape on this CPU against a
# hand-written CPU spec (no calibration: the model's figures are the spec's),
# checked against float64, forward and with --backward; the JSON's ratios
# against its own times, the text table, a wrong fused epilogue (the test
# hook) reported as FAILED with exit 1; and the usage errors (exit 2).
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

# cli_gemm.sh's spec, with a 1 MiB cache: the fused panel's rule gives its
# minimum, 512 rows, all 64 tokens here
cat >"$tmp/cpu.ini" <<'INI'
[device]
name = test-cpu
kind = cpu
mem_bandwidth_gbs = 10
cache_mb = 1
fp32_tflops = 0.1
gemm_gflops = 50
sm_count = 1
launch_overhead_us = 1
source = hand-written for tests
INI

dims=tokens=64,d_model=32,d_ff=128
if ! "$B" mlp --layer gpt2 --dims $dims --measure --device "$tmp/cpu.ini" --min-s 0 --json >"$tmp/out" 2>"$tmp/err"; then
  if grep -q "no BLAS" "$tmp/err"; then echo "no OpenBLAS: skipped"; exit 77; fi
  bad "mlp --measure failed: $(cat "$tmp/err")"
fi
[ -s "$tmp/err" ] && bad "--json wrote to stderr: $(cat "$tmp/err")" || ok
jcheck '.mlp | [.layer, .tokens, .d_model, .d_ff, .dtype, .backward] | map(tostring) | join(",")' 'gpt2,64,32,128,f32,false'
jcheck '.device' test-cpu
jcheck '.threads' 1
jcheck '.flush_bytes' 1048576
jcheck '.spec_gemm_gflops' 50
jcheck '.load_before | length' 3
jcheck '[.results[].plan] | join(",")' 'eager,fused'
jcheck '[.results[].verified] | all' true
jcheck '[.results[].phases[].err_over_bound < 1] | all' true
jcheck '[.results[].phases[].phase] | join(",")' 'forward,forward'
jcheck '[.results[].median_s > 0] | all' true
jcheck '[.results[] | .min_s > 0 and .min_s <= .median_s] | all' true
jcheck '[.results[].phases[].samples >= 5] | all' true
jcheck '[.results[].model_time_s > 0] | all' true
jcheck '[.results[] | .model_over_median == .model_time_s / .median_s] | all' true
jcheck '[.results[] | .model_over_min == .model_time_s / .min_s] | all' true
jcheck '.results[1].panel_rows' 64
jcheck '.results[0].panel_rows' null
# GFLOP/s from the GEMMs' FLOPs: 2 x 64 x 32 x 128 x 2 (GPT-2's two GEMMs)
jcheck '.results[0].phases[0] | .gflops * .median_s * 1e9 / (2 * 64 * 32 * 128 * 2) | . * 1e6 | round' 1000000
# the model's forward is the model's own: mlp without --measure on the spec
"$B" mlp --layer gpt2 --dims $dims --device "$tmp/cpu.ini" --json >"$tmp/model" || bad "mlp model failed"
m_eager=$(jq '.results[0].plans[] | select(.plan == "eager") | .time_s' "$tmp/model")
jcheck '.results[0].model_time_s' "$m_eager"

# --backward, Llama: both phases per plan, the plan's time their sum
"$B" mlp --layer llama --dims $dims --backward --measure --device "$tmp/cpu.ini" --min-s 0 --json >"$tmp/out" 2>"$tmp/err" ||
  bad "mlp --measure --backward failed: $(cat "$tmp/err")"
jcheck '.mlp.backward' true
jcheck '[.results[].phases[].phase] | join(",")' 'forward,backward,forward,backward'
jcheck '[.results[].verified] | all' true
jcheck '[.results[].phases[].verified] | all' true
jcheck '[.results[] | .median_s == .phases[0].median_s + .phases[1].median_s] | all' true
jcheck '[.results[] | .model_time_s == .phases[0].model_time_s + .phases[1].model_time_s] | all' true
jcheck '[.results[] | .model_over_median == .model_time_s / .median_s] | all' true
jcheck '[.results[].phases[] | .model_over_median == .model_time_s / .median_s] | all' true
# the backward's GEMMs: twice the forward's, Llama's three: 2 x 2 x 64 x 32 x 128 x 3
jcheck '.results[0].phases[1] | .gflops * .median_s * 1e9 / (2 * 2 * 64 * 32 * 128 * 3) | . * 1e6 | round' 1000000

# the text table: both plans' phases and totals, the ratio line, the load
"$B" mlp --layer gpt2 --dims $dims --backward --measure --device "$tmp/cpu.ini" --min-s 0 >"$tmp/out" 2>"$tmp/err" ||
  bad "text --measure failed: $(cat "$tmp/err")"
[ "$(grep -cE '^(eager|fused) +(forward|backward) .* passed$' "$tmp/out")" = 4 ] && ok || bad "table: $(cat "$tmp/out")"
[ "$(grep -cE '^(eager|fused) +total ' "$tmp/out")" = 2 ] && ok || bad "no totals: $(cat "$tmp/out")"
grep -q '^fused panel: 64 of 64 tokens' "$tmp/out" && ok || bad "no panel line"
grep -q '^fused / eager measured: ' "$tmp/out" && ok || bad "no ratio line"
grep -q '^load average' "$tmp/out" && ok || bad "no load average"
grep -q 'calibration: none' "$tmp/err" && ok || bad "no calibration note: $(cat "$tmp/err")"

# a wrong fused epilogue (the test hook): its times printed as FAILED, exit 1
MEMBOUND_TEST_MLP_FAULT=1 "$B" mlp --layer gpt2 --dims $dims --measure --device "$tmp/cpu.ini" --min-s 0 --json \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] && grep -q 'mlp fused forward failed its float64 check' "$tmp/err" && ok || bad "fault: exit $rc, $(cat "$tmp/err")"
jcheck '[.results[].verified] | map(tostring) | join(",")' 'true,false'
jcheck '.results[1].phases[0].err_over_bound > 1' true

expect 2 "gpt2 and llama: not geglu" -- mlp --layer geglu --dims $dims --measure --device "$tmp/cpu.ini"
expect 2 "gpt2 and llama: not linear-rmsnorm" -- mlp --layer linear-rmsnorm --dims $dims --measure
expect 2 "f32 only" -- mlp --layer gpt2 --dims $dims --dtype bf16 --measure --device "$tmp/cpu.ini"
expect 2 "go with --measure" -- mlp --layer gpt2 --dims $dims --threads 1
expect 2 "go with --measure" -- mlp --layer gpt2 --dims $dims --min-s 0.3
expect 2 "--threads '0'" -- mlp --layer gpt2 --dims $dims --measure --threads 0
expect 2 "--min-s 'x'" -- mlp --layer gpt2 --dims $dims --measure --min-s x
expect 2 "--figures draws the model's" -- mlp --layer gpt2 --dims $dims --measure --figures "$tmp/figs"
expect 2 "not with --checkpoint or --mem-budget" -- mlp --layer gpt2 --dims $dims --backward --measure --checkpoint store
expect 2 "not with --checkpoint or --mem-budget" -- mlp --layer gpt2 --dims $dims --backward --measure --mem-budget 1G
expect 2 "not a list ('a,b')" -- mlp --layer gpt2 --dims $dims --measure --device a,b
expect 2 "not a list ('all')" -- mlp --layer gpt2 --dims $dims --measure --devices all
expect 2 "is a gpu" -- mlp --layer gpt2 --dims $dims --measure --device h100-sxm
expect 2 "GB of memory" -- mlp --layer gpt2 --dims tokens=2^20,d_model=4096,d_ff=2^16 --measure --json \
  --device "$tmp/cpu.ini"
"$B" mlp --help >"$tmp/out" && grep -q -- '--measure' "$tmp/out" && ok || bad "--help lacks --measure"
[ "$(wc -l <"$tmp/out")" -le 45 ] && ok || bad "--help is $(wc -l <"$tmp/out") lines: more than a screen"
# a layer written with '@' (mlp --variant --measure): its eager forward kernel
# by kernel, each product and step checked against float64, beside the model
vdims=tokens=64,dim=32,ffn=80
"$B" mlp --variant llama_mlp --dims $vdims --measure --device "$tmp/cpu.ini" --min-s 0 --json >"$tmp/out" ||
  bad "mlp --variant llama_mlp --measure"
jcheck '.eager.verified' true
jcheck '[.eager.kernels[].name] | join(",")' 'mm x@wg,mm x@wu,silu,mul,mm (silu(x@wg..@wd'
jcheck '[.eager.kernels[] | select(.model_time_s > 0 and .median_s > 0)] | length' 5
jcheck '.eager.samples >= 5' true
"$B" mlp --variant attention --dims batch=1,heads=2,seq=32,hdim=8 --measure --device "$tmp/cpu.ini" --min-s 0 \
  >"$tmp/out" 2>"$tmp/err" && grep -q "^bmm q@k.T" "$tmp/out" && grep -q "steps by float64: passed" "$tmp/out" &&
  ok || bad "attention --measure: $(cat "$tmp/out" "$tmp/err")"
printf 'input x [t, d]\ninput w [f, d]\ninput b [f]\ny = gelu(linear(x, w, b))\n' >"$tmp/lin.mb"
"$B" mlp --variant "$tmp/lin.mb" --dims t=48,d=16,f=24 --measure --device "$tmp/cpu.ini" --min-s 0 --json >"$tmp/out" ||
  bad "linear --measure"
jcheck '[.eager.kernels[].name] | join(",")' 'addmm bias copy,addmm x@w.T+b,gelu'
jcheck '.eager.verified' true
# with --backward: autograd's kernels too, each step's gradients checked against float64
"$B" mlp --variant llama_mlp --dims $vdims --measure --backward --device "$tmp/cpu.ini" --min-s 0 --json >"$tmp/out" ||
  bad "llama_mlp --measure --backward"
jcheck '.eager.verified' true
jcheck '[.eager.kernels[] | select(.phase == "backward") | .name] | join(",")' \
  'mm dy@wd^T,mm (silu(x@w..^T@dy,mul,mul,silu_backward,mm d(x@wu)@wu^T,mm x^T@d(x@wu),mm d(x@wg)@wg^T,mm x^T@d(x@wg),add grad x'
jcheck '[.eager.kernels[] | select(.model_time_s > 0)] | length' 15
"$B" mlp --variant attention --dims batch=1,heads=2,seq=32,hdim=8 --measure --backward --device "$tmp/cpu.ini" \
  --min-s 0 --json >"$tmp/out" || bad "attention --measure --backward"
jcheck '.eager.verified' true
jcheck '[.eager.kernels[] | select(.model_time_s > 0)] | length' 11
"$B" mlp --variant "$tmp/lin.mb" --dims t=48,d=16,f=24 --measure --backward --device "$tmp/cpu.ini" --min-s 0 --json \
  >"$tmp/out" || bad "linear --measure --backward"
jcheck '.eager.verified' true
jcheck '[.eager.kernels[] | select(.model_time_s < 0)] | length' 0
expect 2 "f32 layers only" -- mlp --variant llama_mlp --dims $vdims --measure --dtype bf16 --device "$tmp/cpu.ini"
expect 2 "GB of memory" -- mlp --variant llama_mlp --dims tokens=2^22,dim=2^14,ffn=2^14 --measure --device "$tmp/cpu.ini"
expect 2 "go with --measure" -- mlp --variant llama_mlp --dims $vdims --threads 1
cli_done
