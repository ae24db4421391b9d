#!/usr/bin/env bash
# gpu-session.sh — everything the hardware validation needs, in one run on a
# machine with an NVIDIA GPU (no network, no GSL or gnuplot needed):
#   1. scripts/gpu-validate.sh: build, GPU tests, calibration, the sweep
#      (2^16, 2^18, ..., 2^28, f32 and bf16) with CUPTI counters and event
#      timing;
#   2. scripts/gpu-ncu.sh: our counted bytes against Nsight Compute's at
#      n = 2^26, with both collection wall times;
#   3. bench/torch_gpu.py: PyTorch eager and torch.compile on the same GPU at
#      2^20, 2^24 and 2^26, same protocol, model columns from our binary.
# Writes everything into OUTDIR; `membound report OUTDIR/measure.csv
# OUTDIR/torch_gpu.csv` (on a machine with GSL and gnuplot) makes the report.
#
# Budget: 8 minutes in all. Each step runs under `timeout` with its own share
# (validate 300 s, ncu 90 s, torch 75 s: 465 s with a margin for start-up);
# validate also gets an internal budget so it drops its largest sizes rather
# than being killed, and a step that would start with less than its minimum
# left is skipped, saying so. Each step's wall time is printed.
# usage: scripts/gpu-session.sh OUTDIR
set -uo pipefail
out=${1:?usage: scripts/gpu-session.sh OUTDIR}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
debs=()
[ -d "$repo/.gpu-debs" ] && debs=(--debs "$repo/.gpu-debs")
total_s=${MB_SESSION_BUDGET_S:-480}
t0=$(date +%s)
rc=0

elapsed() { echo $(( $(date +%s) - t0 )); }
# run_step NAME BUDGET_S MIN_S CMD...: runs CMD under timeout with BUDGET_S
# (cut to what is left of the total), or skips it when less than MIN_S is left.
# CMD's output goes to $step_log when set, else here.
step_log=""
run_step() {
  local name=$1 budget=$2 min=$3 left s0 r
  shift 3
  left=$((total_s - $(elapsed)))
  [ "$budget" -gt "$left" ] && budget=$left
  if [ "$budget" -lt "$min" ]; then
    echo "gpu-session: $name: skipped, ${left} s left of the ${total_s} s budget (needs >= $min s)"
    rc=1
    return 0
  fi
  echo
  echo "=== gpu-session [$(elapsed) s]: $name (at most $budget s)"
  s0=$(date +%s)
  if [ -n "$step_log" ]; then
    timeout --kill-after=10 "$budget" "$@" >"$step_log" 2>&1
  else
    timeout --kill-after=10 "$budget" "$@"
  fi
  r=$?
  echo "=== gpu-session: $name: $(( $(date +%s) - s0 )) s, exit $r"
  if [ "$r" -eq 124 ] || [ "$r" -eq 137 ]; then
    echo "gpu-session: $name: stopped at its $budget s limit (outputs so far are kept)"
  fi
  return "$r"
}

# 1. validate: 300 s, of which the sweep stops starting new sizes at 285 s
run_step "validate" 300 120 "$repo/scripts/gpu-validate.sh" ${debs[@]+"${debs[@]}"} --budget-s 285 "$out"
r=$?
[ "$r" -eq 3 ] && { echo "gpu-session: no usable GPU: stopping"; exit 3; }
[ "$r" -eq 0 ] || rc=1
bin=${MB_BUILD_DIR:-$repo/build-gpu}/bin/membound

# 2. ncu: 4 variants at 2^26, ours then under ncu (exit 3: no ncu, not a failure)
run_step "ncu" 90 40 "$repo/scripts/gpu-ncu.sh" --device "$out/local-gpu.ini" "$out/ncu"
r=$?
[ "$r" -eq 0 ] || [ "$r" -eq 3 ] || rc=1

# 3. PyTorch: 3 sizes x 2 dtypes x 8 cases; each case samples for <= 1 s; no case
#    starts after 60 s, so the CSV is written before the 75 s limit
torch_args=(--sizes "2^20,2^24,2^26" --dtype "f32,bf16" --timeout 1 --budget-s 60 -o "$out/torch_gpu.csv")
[ -f "$out/local-gpu.ini" ] && torch_args+=(--device "$out/local-gpu.ini")
[ -x "$bin" ] && torch_args+=(--bin "$bin")
step_log=$out/torch_gpu.log
run_step "torch" 75 30 python3 "$repo/bench/torch_gpu.py" "${torch_args[@]}"
r=$?
step_log=""
[ "$r" -eq 0 ] || [ "$r" -eq 3 ] || rc=1
tail -n 30 "$out/torch_gpu.log"
echo "gpu-session: wall time $(elapsed) s of the ${total_s} s budget, exit $rc"
exit "$rc"
