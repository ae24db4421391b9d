#!/usr/bin/env bash
# cpu_layers.sh — the built-in layers written with '@' (model/variants/layers/)
# run on this CPU by `membound mlp --variant NAME --measure`, their eager
# forward kernel by kernel beside the model on a CPU spec, at sizes a
# 2-vCPU guest runs in seconds: Llama's MLP and GPT-2's (1024 x 2816 and
# 768 x 3072, 2048 tokens), standard attention (8 heads, seq 2048, head_dim
# 64) and a projection with its RMSNorm (1024 -> 4096, 2048 tokens), forward
# (with --backward: forward and backward). Writes
# each run's text and JSON into OUT (default: a temporary folder, printed)
# with the load average; prints, never asserts.
#
#   bench/cpu_layers.sh [--device SPEC.ini] [--threads N] [--backward] [--out DIR] [MEMBOUND]
set -euo pipefail
cd "$(dirname "$0")/.."
dev=() thr=() bwd=() out=""
while [ $# -gt 0 ]; do
    case $1 in
    --device) dev=(--device "$2"); shift 2 ;;
    --threads) thr=(--threads "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --backward) bwd=(--backward); shift ;;
    *) break ;;
    esac
done
B=${1:-build/bin/membound}
[ -x "$B" ] || { echo "cpu_layers.sh: $B not built" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"
layers=("llama_mlp tokens=2048,dim=1024,ffn=2816" "gpt2_mlp tokens=2048,dim=768,ffn=3072"
        "attention batch=1,heads=8,seq=2048,hdim=64" "linear_rmsnorm tokens=2048,dim=1024,ffn=4096")
for l in "${layers[@]}"; do
    set -- $l
    echo "== $1 ($2), load $(cut -d' ' -f1-3 /proc/loadavg)"
    sfx=${bwd:+-backward}
    "$B" mlp --variant "$1" --dims "$2" --measure "${bwd[@]}" "${dev[@]}" "${thr[@]}" | tee "$out/$1$sfx.txt"
    "$B" mlp --variant "$1" --dims "$2" --measure "${bwd[@]}" "${dev[@]}" "${thr[@]}" --json >"$out/$1$sfx.json"
done
echo "written: $out (load $(cut -d' ' -f1-3 /proc/loadavg))"
