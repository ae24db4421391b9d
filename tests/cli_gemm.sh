#!/usr/bin/env bash
# cli_gemm.sh — `membound gemm` as a user runs it: the JSON of a GEMM and a
# GEMV on the H100 against counts made by hand, a fixed tile's waves, a
# device list that skips a device without the dtype's rate, the table, and
# the exit codes with one-line errors.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

"$B" gemm --help >"$tmp/out" 2>&1 && grep -q -- '--mnk MxNxK' "$tmp/out" && ok || bad "gemm --help"
"$B" --help | grep -q '^  gemm ' && ok || bad "membound --help lacks gemm"

# 4096^3 bf16 on h100-sxm: 2 x 4096^3 FLOPs, A, B and C once (2 B each),
# compute-bound; at 128x128 1024 tiles in 8 waves of 132
"$B" gemm --mnk 4096x4096x4096 --dtype bf16 --tile 128x128 --json >"$tmp/out" || bad "gemm 4096^3 failed"
jcheck '.gemm.flops' 137438953472
jcheck '.gemm.min_bytes' 100663296
jcheck '.results[0].device' h100-sxm
jcheck '.results[0].peak_key' bf16_gemm_tflops
jcheck '.results[0].tiles' 1024
jcheck '.results[0].waves' 8
jcheck '.results[0].dram_read_bytes + .results[0].dram_write_bytes' 100663296
jcheck '.results[0].bound' compute
jcheck '.results[0].ridge * 2680e9 / 1e11 | round' 7945
# a row without a measured GEMM rate, or a spec without the key: the datasheet's peak
"$B" gemm --mnk 4096x4096x4096 --dtype bf16 --device h100-pcie --json >"$tmp/out" || bad "gemm h100-pcie failed"
jcheck '.results[0].peak_key' bf16_tflops

# a GEMV in f32 (2^12 written as sizes are): memory-bound, A read once
"$B" gemm --mnk 2^12x1x4K --json >"$tmp/out" || bad "gemm GEMV failed"
jcheck '.gemm.m' 4096
jcheck '.results[0].peak_key' fp32_tflops
jcheck '.results[0].dram_read_bytes' $((4 * (4096 * 4096 + 4096)))
jcheck '.results[0].bound' memory

# 133 tiles of 128x128 on 132 SMs: two waves
"$B" gemm --mnk 896x2432x4096 --dtype bf16 --tile 128x128 --json >"$tmp/out" || bad "gemm 133 tiles failed"
jcheck '.results[0].tiles' 133
jcheck '.results[0].waves' 2

# batched: flops and least bytes x batch
"$B" gemm --mnk 512x512x64 --batch 64 --dtype f16 --json >"$tmp/out" || bad "gemm --batch failed"
jcheck '.gemm.flops' $((2 * 512 * 512 * 64 * 64))
jcheck '.gemm.min_bytes' $((64 * 2 * (512 * 64 + 64 * 512 + 512 * 512)))

# every device: bf16 skips the V100 and T4 (no BF16) with a note each
"$B" gemm --mnk 4096x4096x4096 --dtype bf16 --device all --json >"$tmp/out" 2>"$tmp/err" || bad "gemm --device all failed"
n_all=$("$B" devices --json | jq '.devices | length')
jcheck '.results | length' $((n_all - 2))
jcheck '[.results[].device] | index("v100")' null
[ "$(grep -c 'no bf16 GEMM rate' "$tmp/err")" -eq 2 ] && ok || bad "--device all: two notes expected: $(cat "$tmp/err")"
"$B" gemm --mnk 4096x4096x4096 --dtype f16 --device v100,t4 --json >"$tmp/out" || bad "gemm f16 v100 failed"
jcheck '[.results[].peak_key] | join(",")' f16_tflops,f16_tflops
# the table prints a row per device and the bound
"$B" gemm --mnk 4096x1x4096 --device h100-sxm,a100-80gb >"$tmp/out" || bad "gemm table failed"
[ "$(grep -cE '^(h100-sxm|a100-80gb) .* memory$' "$tmp/out")" -eq 2 ] && ok || bad "table: $(cat "$tmp/out")"

# --measure on this CPU: a hand-written CPU spec (the model's side) and the
# product timed through OpenBLAS, batched, checked against float64
printf '[device]\nname = c\nkind = cpu\nmem_bandwidth_gbs = 10\ncache_mb = 1\nfp32_tflops = 0.1\ngemm_gflops = 50\nsm_count = 1\nlaunch_overhead_us = 1\nsource = s\n' >"$tmp/cpu.ini"
if "$B" gemm --mnk 96x80x200 --batch 3 --measure --device "$tmp/cpu.ini" --min-s 0 --reps 4 --json >"$tmp/out" 2>"$tmp/err"; then
  jcheck '.results[0].measured.verified' true
  jcheck '.results[0].k_blocks' 1
  jcheck '.results[0].tiled' false
  jcheck '.results[0].measured.threads' 1
  jcheck '.results[0].measured.samples >= 4' true
  jcheck '.results[0].measured.min_s <= .results[0].measured.median_s and .results[0].measured.min_s > 0' true
  jcheck '.results[0].measured.max_rel_err <= .results[0].measured.tol' true
  jcheck '(.results[0].measured.model_over_median - .results[0].time_s / .results[0].measured.median_s) | fabs < 1e-9' true
  jcheck '.results[0].measured.gflops * .results[0].measured.median_s * 1e9 / (2 * 96 * 80 * 200 * 3) | . * 1e6 | round' 1000000
  "$B" gemm --mnk 64x64x64 --measure --device "$tmp/cpu.ini" --threads 2 --min-s 0 --reps 1 >"$tmp/out" 2>"$tmp/err" || bad "--measure table failed"
  grep -q 'model / measured median' "$tmp/out" && grep -q 'verified' "$tmp/out" && ok || bad "--measure table: $(cat "$tmp/out")"
  grep -q 'calibrated on 1 threads' "$tmp/err" && ok || bad "--threads 2 against a 1-thread spec: no warning: $(cat "$tmp/err")"
elif grep -q 'no BLAS' "$tmp/err"; then
  echo "no OpenBLAS: --measure's runs skipped"
else
  bad "gemm --measure failed: $(cat "$tmp/err")"
fi
expect 2 "needs one device" -- gemm --mnk 64x64x64 --measure
expect 2 "needs one device" -- gemm --mnk 64x64x64 --measure --device all
# a GPU's id: cuBLASLt on this machine's GPU, or exit 1 saying there is none
if "$B" gemm --mnk 256x256x256 --dtype bf16 --measure --device h100-sxm --reps 5 >"$tmp/out" 2>"$tmp/err"; then
  grep -q 'cuBLASLt' "$tmp/out" && grep -q 'verified' "$tmp/out" && ok || bad "GPU --measure: $(cat "$tmp/out")"
else
  rc=$?
  [ "$rc" = 1 ] && grep -q "runs the product on this machine's GPU" "$tmp/err" && ok ||
    bad "GPU --measure without a GPU: exit $rc, $(cat "$tmp/err")"
fi
expect 2 "a GPU's takes --reps" -- gemm --mnk 64x64x64 --measure --device h100-sxm --threads 2
expect 2 "a GPU's takes --reps" -- gemm --mnk 64x64x64 --measure --device h100-sxm --min-s 1
expect 2 "at most 64" -- gemm --mnk 64x64x64 --measure --device h100-sxm --reps 65
expect 2 "f32 only" -- gemm --mnk 64x64x64 --measure --dtype bf16 --device "$tmp/cpu.ini"
expect 2 "go with --measure" -- gemm --mnk 64x64x64 --threads 2
expect 2 "go with --measure" -- gemm --mnk 64x64x64 --min-s 0.3
expect 2 "--threads" -- gemm --mnk 64x64x64 --measure --device "$tmp/cpu.ini" --threads 0
expect 2 "--min-s" -- gemm --mnk 64x64x64 --measure --device "$tmp/cpu.ini" --min-s -1
expect 2 "--reps" -- gemm --mnk 64x64x64 --measure --device "$tmp/cpu.ini" --reps x
expect 2 "--tile" -- gemm --mnk 64x64x64 --measure --device "$tmp/cpu.ini" --tile 64x64

# errors: one line, exit 2
expect 2 "needs --mnk" -- gemm
expect 2 "three sizes" -- gemm --mnk 4096x4096
expect 2 "three sizes" -- gemm --mnk 4096x4096x4096x2
expect 2 "--mnk" -- gemm --mnk 4096xabcx4096
expect 2 "--mnk" -- gemm --mnk 0x4x4
expect 2 "not one of the guide's" -- gemm --mnk 64x64x64 --tile 96x96
expect 2 "--tile" -- gemm --mnk 64x64x64 --tile big
expect 2 "no bf16 GEMM rate" -- gemm --mnk 64x64x64 --dtype bf16 --device v100
expect 2 "no device of the list" -- gemm --mnk 64x64x64 --dtype bf16 --device v100,t4
expect 2 "unknown device" -- gemm --mnk 64x64x64 --device nosuch
expect 2 "unknown option" -- gemm --mnk 64x64x64 --bogus
expect 2 "dtype" -- gemm --mnk 64x64x64 --dtype f64
expect 2 "beyond 2^62" -- gemm --mnk 2^40x2^40x4
expect 2 "given twice" -- gemm --mnk 64x64x64 --device a100-80gb --devices h100-sxm
cli_done
