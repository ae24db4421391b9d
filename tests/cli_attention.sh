#!/usr/bin/env bash
# cli_attention.sh — `membound attention` as a user runs it: the JSON of a
# small shape on the H100 against counts made by hand (FLOPs, the seq x seq
# bytes, FlashAttention's tiles and its never writing S or P), causal
# halving, the longest sequence on two GPUs, a device list that skips a
# device without the dtype's rate, the tables, and the exit codes with
# one-line errors.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

"$B" attention --help >"$tmp/out" 2>&1 && grep -q -- '--dims seq=N' "$tmp/out" && ok || bad "attention --help"
"$B" --help | grep -q '^  attention ' && ok || bad "membound --help lacks attention"

# batch 1, heads 2, seq 1024, head_dim 64, bf16: 4 x 2 x 1024^2 x 64 FLOPs;
# P 2 x 1024^2 x 2 B; standard writes S, S x scale and P; flash (Br 64, Bc
# 968 from 484 KiB) reads q, k, v once and writes o and the f32 LSE
"$B" attention --dims batch=1,heads=2,seq=1024,head_dim=64 --dtype bf16 --json >"$tmp/out" || bad "attention json failed"
jcheck '.attention.model_flops' 536870912
jcheck '.attention.p_bytes' 4194304
jcheck '.results[0].device' h100-sxm
jcheck '.results[0].block_r' 64
jcheck '.results[0].block_c' 968
jcheck '[.results[0].standard.kernels[].name] | join(",")' 'bmm q@k^T,mul scale,softmax,bmm P@v'
jcheck '.results[0].standard.nn_write_bytes' $((3 * 4194304))
jcheck '.results[0].standard.saved_bytes' 4194304
jcheck '.results[0].flash.nn_write_bytes' 0
jcheck '.results[0].flash.dram_read_bytes' $((2 * 3 * 131072))
jcheck '.results[0].flash.dram_write_bytes' $((2 * (131072 + 4096)))
jcheck '.results[0].flash.saved_bytes' $((2 * (131072 + 4096)))
jcheck '.results[0].standard.time_s > .results[0].flash.time_s' true

# causal halves the papers' count; the standard plan adds the mask kernel
"$B" attention --dims batch=1,heads=2,seq=1024,head_dim=64 --dtype bf16 --causal --json >"$tmp/out" || bad "causal failed"
jcheck '.attention.model_flops' 268435456
jcheck '.results[0].standard.kernels | length' 5
jcheck '.results[0].standard.kernels[2].name' 'add mask'
jcheck '.results[0].tile_pairs' 17

# backward: 11 standard kernels, 4 flash ones, flash still writes no N x N
"$B" attention --dims batch=1,heads=2,seq=1024,head_dim=64 --dtype bf16 --backward --json >"$tmp/out" || bad "backward failed"
jcheck '.results[0].standard.kernels | length' 11
jcheck '.results[0].flash.kernels | length' 4
jcheck '.results[0].flash.nn_write_bytes' 0
jcheck '.attention.model_flops' $((536870912 * 7 / 2))

# the longest sequence, batch 8, heads 16, head_dim 128, bf16: N^2 + 256 N
# <= 1.5625e8 on 80 GB (12372), <= 7.8125e7 on 40 GB (8711)
"$B" attention --dims batch=8,heads=16,seq=4K,head_dim=128 --dtype bf16 --device h100-sxm,a100-40gb --json >"$tmp/out" || bad "max seq failed"
jcheck '[.results[].standard.max_seq] | join(",")' 12372,8711
jcheck '[.results[].flash.max_seq] | join(",")' 607976,303988

# every device: bf16 skips the V100 and T4 with a note each
"$B" attention --dims seq=2048,head_dim=128 --dtype bf16 --device all --json >"$tmp/out" 2>"$tmp/err" || bad "--device all failed"
n_all=$("$B" devices --json | jq '.devices | length')
jcheck '.results | length' $((n_all - 2))
[ "$(grep -c 'no bf16 GEMM rate' "$tmp/err")" -eq 2 ] && ok || bad "--device all: two notes expected: $(cat "$tmp/err")"

# the tables: one device lists the kernels, several a row each
"$B" attention --dims seq=4096,head_dim=64,heads=8 >"$tmp/out" || bad "table failed"
grep -qE '^flash +flash fwd +fwd ' "$tmp/out" && ok || bad "kernel table: $(cat "$tmp/out")"
grep -q 'Theorem 2' "$tmp/out" && ok || bad "no Theorem 2 line"
"$B" attention --dims seq=4096,head_dim=64 --device h100-sxm,a100-80gb >"$tmp/out" || bad "device table failed"
[ "$(grep -cE '^(h100-sxm|a100-80gb) ' "$tmp/out")" -eq 2 ] && ok || bad "device rows: $(cat "$tmp/out")"

# errors: one line, exit 2
expect 2 "needs --dims" -- attention
expect 2 "seq and head_dim" -- attention --dims batch=2,seq=1024
expect 2 "unknown key 'dim'" -- attention --dims seq=1024,dim=64
expect 2 "given twice" -- attention --dims seq=1024,seq=2048,head_dim=64
expect 2 "not key=size" -- attention --dims seq=1024,64
expect 2 "key=size pairs" -- attention --dims seq=1024,,head_dim=64
expect 2 "head_dim" -- attention --dims seq=1024,head_dim=abc
expect 2 "at least 1" -- attention --dims seq=1024,head_dim=64,batch=0
expect 2 "beyond 2^62" -- attention --dims seq=2^32,head_dim=64
expect 2 "no bf16 GEMM rate" -- attention --dims seq=1024,head_dim=64 --dtype bf16 --device v100
expect 2 "no device of the list" -- attention --dims seq=1024,head_dim=64 --dtype bf16 --device v100,t4
expect 2 "unknown device" -- attention --dims seq=1024,head_dim=64 --device nosuch
expect 2 "unknown option" -- attention --dims seq=1024,head_dim=64 --bogus
expect 2 "dtype" -- attention --dims seq=1024,head_dim=64 --dtype f64
expect 2 "--dims given twice" -- attention --dims seq=1024,head_dim=64 --dims seq=8,head_dim=8
expect 2 "unexpected argument" -- attention --dims seq=1024,head_dim=64 extra
printf '[device]\nname = g\nmem_bandwidth_gbs = 1000\ncache_mb = 40\nfp32_tflops = 20\nbf16_tflops = 300\nlaunch_overhead_us = 3\nsource = test\n' >"$tmp/g.ini"
expect 2 "has no onchip_kib" -- attention --dims seq=1024,head_dim=64 --device "$tmp/g.ini"
printf 'onchip_kib = 0.0625\n' >>"$tmp/g.ini"
expect 2 "exceeds the 32 bf16 elements" -- attention --dims seq=1024,head_dim=64 --dtype bf16 --device "$tmp/g.ini"
cli_done
