#!/usr/bin/env bash
# cli_mlp.sh — `membound mlp` as a user runs it: the JSON of a small gpt2 and
# llama MLP against counts made by hand (FLOPs, the hidden written once by
# fused, the saved bytes), the presets, --checkpoint and --mem-budget, the
# device table's summary, a CPU spec's addmm (the bias copied into the
# output first), the figures, and the exit codes with one-line errors that
# name the key.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

"$B" mlp --help >"$tmp/out" 2>&1 && grep -q -- '--checkpoint' "$tmp/out" && ok || bad "mlp --help"
[ "$(wc -l <"$tmp/out")" -le 50 ] && ok || bad "mlp --help longer than a screen"
"$B" --help | grep -q '^  mlp ' && ok || bad "membound --help lacks mlp"

# gpt2, T 1024, d 512, f 2048, f32: 2 GEMMs of 2 T d f; fused writes the
# hidden (8 MiB) once, eager 9 times (addmm and gelu_new's 8 kernels)
H=$((1024 * 2048 * 4)); X=$((1024 * 512 * 4))
"$B" mlp --layer gpt2 --dims tokens=1024,d_model=512,d_ff=2048 --json >"$tmp/out" || bad "mlp json failed"
jcheck '.mlp.layer' gpt2
jcheck '.results[0].device' h100-sxm
jcheck '[.results[0].plans[].plan] | join(",")' 'eager,fused'
jcheck '.results[0].plans[1].flops' $((2 * 2 * 1024 * 512 * 2048))
jcheck '.results[0].plans[1].hidden_write_bytes' $H
jcheck '.results[0].plans[0].hidden_write_bytes' $((9 * H))
jcheck '.results[0].plans[1].kernels | length' 2
jcheck '.results[0].plans[1].checkpoint' none

# llama with backward, f32: saved x + 4 hidden (eager), x + 3 (fused,
# liger), x + a and b (act), x alone (recompute)
"$B" mlp --layer llama --dims tokens=1024,d_model=512,d_ff=2048 --backward --json >"$tmp/out" || bad "llama json"
jcheck '[.results[0].plans[] | "\(.plan)/\(.checkpoint)"] | join(",")' \
  'eager/store,eager/act,eager/recompute,fused/store,fused/act,fused/recompute,liger/store,liger/act,liger/recompute'
sel() { echo ".results[0].plans[] | select(.plan == \"$1\" and .checkpoint == \"$2\") | $3"; }
jcheck "$(sel eager store .saved_bytes)" $((X + 4 * H))
jcheck "$(sel fused store .saved_bytes)" $((X + 3 * H))
jcheck "$(sel liger store .saved_bytes)" $((X + 3 * H))
jcheck "$(sel fused act .saved_bytes)" $((X + 2 * H))
jcheck "$(sel fused recompute .saved_bytes)" $X
jcheck "$(sel fused recompute '.saved[0].name')" x
# fused act ties store (its dact GEMM is compute-bound: writing c again is free) and saves less
jcheck '[.results[0].plans[] | select(.chosen) | .checkpoint] | join(",")' 'store,act,store'
# a budget below act's bytes: recompute; --checkpoint recompute: that one
"$B" mlp --layer llama --dims tokens=1024,d_model=512,d_ff=2048 --backward --mem-budget 4M --json >"$tmp/out"
jcheck '[.results[0].plans[] | select(.chosen) | .checkpoint] | join(",")' 'recompute,recompute,recompute'
"$B" mlp --layer llama --dims tokens=1024,d_model=512,d_ff=2048 --backward --mem-budget 20M --json >"$tmp/out"
jcheck '[.results[0].plans[] | select(.chosen) | .checkpoint] | join(",")' 'act,act,act'
"$B" mlp --layer llama --dims tokens=1024,d_model=512,d_ff=2048 --backward --checkpoint recompute >"$tmp/out"
grep -q '^fused  recompute .*chosen' "$tmp/out" && ok || bad "--checkpoint recompute not chosen"
# a linear-norm layer has no act option: its plans list store and recompute
"$B" mlp --layer linear-layernorm --dims tokens=1024,d_model=512,d_ff=2048 --backward --json >"$tmp/out"
jcheck '[.results[0].plans[] | .checkpoint] | join(",")' 'store,recompute,store,recompute'
# the flip: fused llama bf16 at d_model 256 recomputes, at 512 stores (time alone)
"$B" mlp --layer llama --dims tokens=16384,d_model=256,d_ff=4096 --dtype bf16 --backward --json >"$tmp/out"
jcheck '[.results[0].plans[] | select(.plan == "fused" and .chosen) | .checkpoint] | join(",")' recompute
"$B" mlp --layer llama --dims tokens=16384,d_model=512,d_ff=4096 --dtype bf16 --backward --json >"$tmp/out"
jcheck '[.results[0].plans[] | select(.plan == "fused" and .chosen) | .checkpoint] | join(",")' store

# presets: llama-7b is 4096 x 11008, 4096 tokens; --dims overrides one size
"$B" mlp --preset llama-7b --dims tokens=8 --dtype bf16 --json >"$tmp/out"
jcheck '.mlp.d_model' 4096
jcheck '.mlp.d_ff' 11008
jcheck '.mlp.tokens' 8
jcheck '.results[0].plans[1].bound' memory
"$B" mlp --preset gpt2-small --json >"$tmp/out"
jcheck '.mlp.layer' gpt2
jcheck '.mlp.tokens' 4096
# the table: every GPU with a bf16 rate, and where the fused layer is compute-bound
"$B" mlp --preset llama-7b --dtype bf16 --devices all >"$tmp/out" 2>"$tmp/err" || bad "--devices all"
grep -q '^compute-bound (fused): h100-sxm' "$tmp/out" && ok || bad "no compute-bound line"
grep -Eq '^h100-sxm .* compute +512 *$' "$tmp/out" && ok || bad "h100-sxm: not compute-bound from 512 tokens"
grep -q '^a100-pcie-80gb ' "$tmp/out" && ok || bad "no a100 row"
# each row says whether its GEMM rate was measured (m) or is the datasheet's (d)
grep -Eq '^h100-sxm +794\.5 m ' "$tmp/out" && ok || bad "h100-sxm: not at its measured 794.5 (m)"
grep -Eq '^h100-pcie +756 d ' "$tmp/out" && ok || bad "h100-pcie: not at its datasheet 756 (d)"
grep -q "^peak TF: m a large GEMM's measured rate" "$tmp/out" && ok || bad "no peak TF legend"
grep -q 'v100: no bf16 GEMM rate' "$tmp/err" && ok || bad "v100 not noted"

# a CPU spec: eager addmm copies the bias into its output, then the GEMM reads it back
printf '[device]\nname = c\nkind = cpu\nmem_bandwidth_gbs = 50\ncache_mb = 32\nfp32_tflops = 1\nlaunch_overhead_us = 1\nsource = test\n' >"$tmp/c.ini"
"$B" mlp --layer gpt2 --dims tokens=1024,d_model=512,d_ff=2048 --device "$tmp/c.ini" --json >"$tmp/out" || bad "cpu spec"
jcheck '.results[0].plans[0].kernels[0].name' 'addmm bias copy'
jcheck '.results[0].plans[0].kernels[0].dram_write_bytes' $H

# figures: the stacked kernel times, the roofline and the frontier, drawn where gnuplot is
if command -v gnuplot >/dev/null && "$B" --help | grep -q '^  report '; then
  "$B" mlp --preset gpt2-small --backward --figures "$tmp/fig" >/dev/null 2>"$tmp/err" || bad "--figures: $(cat "$tmp/err")"
  for f in mlp_kernels mlp_roofline mlp_frontier; do
    [ -s "$tmp/fig/$f.dat" ] && [ "$(head -c 4 "$tmp/fig/$f.png" | tail -c 3)" = PNG ] && ok || bad "no $f figure"
  done
  grep -q '"fused recompute" 1$' "$tmp/fig/mlp_frontier.dat" && ok || bad "frontier data lacks fused recompute"
  # the roofline: GEMMs beyond the ridge (peak / bandwidth), the eager plan's
  # elementwise kernels under one flop per byte; the fused plan only GEMMs
  awk '/^bw_gbs/ {bw = $2} /^peak_tflops/ {peak = $2 * 1000}
       /^# eager/ {blk = 1} /^# fused/ {blk = 2}
       /^[0-9]/ {n[blk]++; if ($3 == 1 && $1 <= peak / bw) bad++; if ($3 == 0 && $1 > 1) bad++; if (blk == 2 && $3 == 0) bad++; gemms += $3}
       END {exit !(bad == 0 && n[1] > 0 && n[2] > 0 && gemms >= 4)}' "$tmp/fig/mlp_roofline.dat" &&
    ok || bad "roofline data: $(cat "$tmp/fig/mlp_roofline.dat")"
fi

expect 2 "unknown layer 'mistral'" -- mlp --layer mistral --dims d_model=8,d_ff=8
expect 2 "unknown preset" -- mlp --preset gpt5
expect 2 "needs d_model and d_ff" -- mlp --layer llama
expect 2 "d_ff" -- mlp --dims d_model=8,d_ff=abc
expect 2 "unknown key 'ffn'" -- mlp --dims d_model=8,ffn=8
expect 2 "tokens given twice" -- mlp --dims tokens=8,tokens=8,d_model=8,d_ff=8
expect 2 "at least 1" -- mlp --dims tokens=0,d_model=8,d_ff=8
expect 2 "beyond 2^43" -- mlp --dims tokens=2^30,d_model=2^20,d_ff=8
expect 2 "--checkpoint" -- mlp --preset llama-7b --backward --checkpoint sometimes
expect 2 "--mem-budget" -- mlp --preset llama-7b --backward --mem-budget lots
expect 2 "need --backward" -- mlp --preset llama-7b --checkpoint recompute
expect 2 "has no act option" -- mlp --layer linear-rmsnorm --dims d_model=64,d_ff=64 --backward --checkpoint act
expect 2 "no bf16 GEMM rate" -- mlp --preset llama-7b --dtype bf16 --device v100
expect 2 "unknown option" -- mlp --preset llama-7b --bogus
expect 2 "unexpected argument" -- mlp --preset llama-7b extra
touch "$tmp/afile"
expect 2 "not a directory" -- mlp --preset llama-7b --figures "$tmp/afile"
[ ! -s "$tmp/out" ] && ok || bad "--figures on a file printed the tables first"
expect 2 "--figures" -- mlp --preset llama-7b --figures "$tmp/no/such/dir"

# a layer written in the language: Llama's MLP as the built-in file writes
# it costs what --layer llama costs (eager forward and backward, the fused
# forward's dual GEMM); errors name the file, line and column
"$B" mlp --variant llama_mlp --dims tokens=1024,dim=512,ffn=2048 --backward --json >"$tmp/out" || bad "mlp --variant"
jcheck '.mlp.variant' llama_mlp
jcheck '.mlp.dims' 'tokens=1024,dim=512,ffn=2048'
jcheck '[.results[0].plans[].plan] | join(",")' 'eager,fused'
cp "$tmp/out" "$tmp/var.json"
"$B" mlp --layer llama --dims tokens=1024,d_model=512,d_ff=2048 --backward --checkpoint store --json >"$tmp/out" || bad "llama store"
[ "$(jq '.results[0].plans[0].time_s' "$tmp/out")" = "$(jq '.results[0].plans[0].time_s' "$tmp/var.json")" ] && ok ||
  bad "llama_mlp's eager time is not --layer llama's"
[ "$(jq '.results[0].plans[0].saved_bytes' "$tmp/out")" = "$(jq '.results[0].plans[0].saved_bytes' "$tmp/var.json")" ] &&
  ok || bad "llama_mlp's eager saved bytes are not --layer llama's"
"$B" mlp --variant gpt2_mlp >"$tmp/out" && grep -q 'mm x@w1 +epi' "$tmp/out" && ok || bad "gpt2_mlp fused epilogue"
"$B" mlp --variant linear_rmsnorm --devices h100-sxm,a100-80gb --dtype bf16 >"$tmp/out" && grep -q '^a100-80gb' "$tmp/out" &&
  ok || bad "mlp --variant over devices"
printf 'input x [t, d]\ninput w [f, d]\ny = x @ w\n' >"$tmp/bad.mb"
expect 2 "bad.mb:3:7: 'x' [t, d] @ 'w' [f, d]" -- mlp --variant "$tmp/bad.mb" --dims t=4,d=4,f=4
expect 2 "unknown layer variant 'lama_mlp'" -- mlp --variant lama_mlp
expect 2 "not with --layer" -- mlp --variant llama_mlp --layer gpt2
expect 2 "'seq' is not a dimension" -- mlp --variant llama_mlp --dims tokens=8,dim=8,ffn=8,seq=2
expect 2 "membound mlp --variant" -- model "$tmp/bad.mb"
cli_done
