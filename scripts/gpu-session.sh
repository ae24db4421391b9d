#!/usr/bin/env bash
# gpu-session.sh — everything the hardware validation needs, in one run on a
# machine with an NVIDIA GPU (no network, no GSL or gnuplot needed):
#   1. scripts/gpu-validate.sh: build, GPU tests, calibration, the full sweep
#      (2^16..2^28, f32 and bf16) with CUPTI counters and event timing;
#   2. scripts/gpu-ncu.sh: our counted bytes against Nsight Compute's at
#      n = 2^26, with both collection wall times;
#   3. bench/torch_gpu.py: PyTorch eager and torch.compile on the same GPU
#      and sizes, same protocol.
# Writes everything into OUTDIR; `membound report OUTDIR/*.csv` (on a machine
# with GSL and gnuplot) then makes the report. Budget: under 8 minutes on an
# H100/H200-class GPU.
# usage: scripts/gpu-session.sh OUTDIR
set -uo pipefail
out=${1:?usage: scripts/gpu-session.sh OUTDIR}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
debs=()
[ -d "$repo/.gpu-debs" ] && debs=(--debs "$repo/.gpu-debs")
t0=$(date +%s)
rc=0
"$repo/scripts/gpu-validate.sh" "${debs[@]}" "$out" || rc=$?
[ "$rc" -eq 3 ] && { echo "gpu-session: no usable GPU: stopping"; exit 3; }
"$repo/scripts/gpu-ncu.sh" --device "$out/local-gpu.ini" "$out/ncu" || rc=1
python3 "$repo/bench/torch_gpu.py" --sizes 2^16..2^28:2 --dtype f32,bf16 -o "$out/torch_gpu.csv" \
  >"$out/torch_gpu.log" 2>&1 || rc=1
tail -n 20 "$out/torch_gpu.log"
echo "gpu-session: wall time $(( $(date +%s) - t0 )) s, exit $rc"
exit "$rc"
