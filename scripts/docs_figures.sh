#!/usr/bin/env bash
# docs_figures.sh — draws docs/figures/ again from the model: the frontier of
# each normalization backward (softmax_bwd, layernorm_bwd, rmsnorm_bwd) at
# 4096x1024 (a row fits on chip) and 64x4194304 (it does not), on h100-sxm,
# f32, each as FIGURE.dat (the data, deterministic) and FIGURE.png; Llama-7B's
# MLP (membound mlp, bf16, forward and backward, h100-sxm): its time by
# kernel class per plan, its kernels on the roofline and its checkpointing
# frontier; and the model against
# the published GPU set (bench/gpu_validate.py).
# tests/docs_figures.sh runs it into a temporary folder and holds the
# committed data to it, so a change to the model or the figure shows there.
#
#   scripts/docs_figures.sh [-o DIR] [MEMBOUND]   (default: docs/figures, build/bin/membound)
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/figures
if [ "${1:-}" = -o ]; then out=$2; shift 2; fi
B=${1:-build/bin/membound}
[ -x "$B" ] || { echo "docs_figures.sh: $B not built" >&2; exit 2; }
mkdir -p "$out"
for v in softmax_bwd layernorm_bwd rmsnorm_bwd; do
  for shape in 4096x1024 64x4194304; do
    "$B" plan "$v" --shape "$shape" --device h100-sxm --dtype f32 --frontier \
      --figure "$out/frontier-$v-$shape.png" >/dev/null
  done
done
# Llama-7B's MLP (docs/model.md, "Activation checkpointing"): drawn into a
# folder of its own, then named for what they show
mlp=$(mktemp -d); trap 'rm -rf "$mlp"' EXIT
"$B" mlp --preset llama-7b --dtype bf16 --backward --device h100-sxm --figures "$mlp" >/dev/null 2>&1
for f in kernels frontier roofline; do
  for ext in dat png; do mv "$mlp/mlp_$f.$ext" "$out/mlp-$f-llama-7b-bf16.$ext"; done
done
# the model against the published GPU set (docs/results.md)
python3 bench/gpu_validate.py --membound "$B" --figure "$out/gpu-validation-a100-pcie.png" --quiet >/dev/null
echo "docs_figures.sh: $(ls "$out" | wc -l) files in $out"
