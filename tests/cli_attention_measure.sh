#!/usr/bin/env bash
# cli_attention_measure.sh — `membound attention --measure` as a user runs
# it: both plans run on this CPU at a small shape against a hand-written CPU
# spec (no calibration: the test's figures are the spec's), checked against
# float64 (every element, finite differences with --backward), the kernels
# named as the model's, per kernel a model time beside the measured one, the
# load average; and the usage errors: a GPU spec, a list, bf16, --threads
# without --measure, a size beyond the host's memory.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

cat >"$tmp/cpu.ini" <<'INI'
[device]
name = test-cpu
label = a hand-written CPU spec for tests
kind = cpu
mem_bandwidth_gbs = 20
measured_bandwidth_gbs = 20
cache_mb = 32
onchip_kib = 2048
fp32_tflops = 0.3
gemm_gflops = 200
launch_overhead_us = 1
op_exp_geps = 6
mem_gb = 16
source = hand-written for tests
INI

dims=batch=1,heads=2,seq=100,head_dim=16
if ! "$B" attention --dims $dims --causal --backward --measure --device "$tmp/cpu.ini" --min-time 0.02 \
    --threads 2 --json >"$tmp/out" 2>"$tmp/err"; then
  if grep -q "OpenBLAS" "$tmp/err"; then echo "no OpenBLAS: skipped"; exit 77; fi
  bad "attention --measure failed: $(cat "$tmp/err")"
fi
jcheck '.device' test-cpu
jcheck '.threads' 2
jcheck '.load_before | length' 3
jcheck '[.results[].plan] | join(",")' 'standard,flash'
jcheck '[.results[].verified] | all' true
jcheck '[.results[].check.full] | all' true
jcheck '[.results[].check.err_over_bound < 1] | all' true
jcheck '[.results[].check.fd_points] | join(",")' '12,12'
jcheck '[.results[].check.fd_err_over_bound < 1] | all' true
jcheck '[.results[0].kernels[].name] | join(",")' \
  'bmm q@k^T,mul scale,add mask,softmax,bmm P@v,bmm dO@v^T,bmm P^T@dO,softmax bwd,mul dS*scale,bmm dS@k,bmm q^T@dS'
jcheck '[.results[1].kernels[].name] | join(",")' 'flash fwd,flash bwd prep,flash bwd'
jcheck '[.results[].kernels[].model_time_s > 0] | all' true
jcheck '[.results[].median_s > 0] | all' true
jcheck '[.results[] | .min_s <= .median_s] | all' true
jcheck '.results[1].tiles.fwd_r <= 100' true
jcheck '[.results[] | .model_over_measured == .model_time_s / .median_s] | all' true

# the text table: both plans' totals, the check lines, the load
"$B" attention --dims $dims --measure --device "$tmp/cpu.ini" --min-time 0.02 >"$tmp/out" 2>"$tmp/err" \
  || bad "text --measure failed: $(cat "$tmp/err")"
grep -q '^standard  total' "$tmp/out" && grep -q '^flash     total' "$tmp/out" && ok || bad "no totals: $(cat "$tmp/out")"
grep -q '^check flash    passed: every element' "$tmp/out" && ok || bad "no check line"
grep -q '^load average' "$tmp/out" && ok || bad "no load average"

expect 2 "is a gpu" -- attention --dims $dims --measure --device h100-sxm
expect 2 "one CPU spec, not a list" -- attention --dims $dims --measure --device a,b
expect 2 "f32 only" -- attention --dims $dims --measure --dtype bf16 --device "$tmp/cpu.ini"
expect 2 "go with --measure" -- attention --dims $dims --threads 2
expect 2 "--threads: expected" -- attention --dims $dims --measure --threads 0
expect 2 "--min-time: expected" -- attention --dims $dims --measure --min-time x
expect 2 "GB available" -- attention --dims batch=64,heads=64,seq=1M,head_dim=64 --measure --json --device "$tmp/cpu.ini"
cli_done
