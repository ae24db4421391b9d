#!/usr/bin/env bash
# gpu-ncu.sh — the lecture's demos under Nsight Compute, imported, beside our
# own CUPTI counts: the path of docs/import.md ("validate the lecture on your
# own GPU") on a machine with an NVIDIA GPU, ncu and PyTorch. Steps:
#   1. ncu over bench/lecture_demos.py profile (eager and torch.compile at one
#      size, each (variant, plan) in one NVTX range membound:VARIANT:PLAN:n=N:DTYPE;
#      --nvtx --print-nvtx-rename kernel puts the range's name on each kernel),
#      ncu's defaults for caches (flushed before every kernel) and clocks
#      (base), metrics dram__bytes_read.sum, dram__bytes_write.sum,
#      gpu__time_duration.sum, --csv --page raw --print-units base
#      -> OUTDIR/lecture-ncu.csv;
#   2. membound import ncu -> OUTDIR/ncu.csv, ncu-kernels.csv (its table:
#      each plan's counted bytes against the model's cold count);
#   3. membound measure of the same variants with our counters (CUPTI range
#      profiler, MB_CUPTI_KERNEL_CLEAN=1: each kernel from a clean L2, the
#      cache state ncu gives every kernel) -> OUTDIR/ours.csv, ours-kernels.csv;
#   4. membound report of both when this build has report (GSL), else the
#      command to run where it has.
# OUTDIR/ncu-summary.txt holds the import's table, the report's fits and the
# wall times; the logs are beside it. The parsing is membound's (its one CSV
# reader): this script splits no CSV.
#
# usage: scripts/gpu-ncu.sh [options] OUTDIR
#   --build DIR     build folder holding bin/membound (default: $MB_BUILD_DIR
#                   or <repo>/build-gpu, as scripts/gpu-validate.sh leaves it)
#   --n N           size (default 2^26)
#   --dtype T       default f32
#   --device SPEC   model device (default OUTDIR/local-gpu.ini when present,
#                   else the GPU's table entry, as the import finds it)
#   --import-only   only import and report the files already in OUTDIR
#   -h, --help      this text
# Environment: MB_TORCH_SYSTEM (default 1 here: the system's python3 and its
# PyTorch run bench/lecture_demos.py, not a venv made on first use).
# Exit: 0 done; 1 a step failed; 2 bad usage; 3 no ncu, no PyTorch with CUDA
# or no usable GPU.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MB_BUILD_DIR:-$repo/build-gpu}
n=2^26
dtype=f32
device=""
import_only=0
out=""
variants=(sin2_plus_cos2 gelu_tanh sigmoid3 copy)

usage() { sed -n '2,34s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --build|--n|--dtype|--device)
      [ $# -ge 2 ] || { echo "gpu-ncu: error: $1 needs a value" >&2; exit 2; }
      case "$1" in --build) build=$2 ;; --n) n=$2 ;; --dtype) dtype=$2 ;; --device) device=$2 ;; esac
      shift 2 ;;
    --import-only) import_only=1; shift ;;
    -*) echo "gpu-ncu: error: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "gpu-ncu: error: one OUTDIR only" >&2; exit 2; }; out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "gpu-ncu: error: no OUTDIR (usage: scripts/gpu-ncu.sh [options] OUTDIR)" >&2; exit 2; }
if ! mkdir -p "$out" 2>/dev/null || [ ! -w "$out" ]; then
  echo "gpu-ncu: error: cannot write to '$out'" >&2
  exit 2
fi
out=$(cd "$out" && pwd)
status=0
bin=$build/bin/membound
[ -x "$bin" ] || { echo "gpu-ncu: error: no binary at $bin (run scripts/gpu-validate.sh first, or --build DIR)"; exit 1; }
export MEMBOUND_VARIANTS=${MEMBOUND_VARIANTS:-$build/share/membound/variants}
[ -d "$MEMBOUND_VARIANTS" ] || export MEMBOUND_VARIANTS=$repo/model/variants
export MB_TORCH_SYSTEM=${MB_TORCH_SYSTEM:-1}
[ -z "$device" ] && [ -f "$out/local-gpu.ini" ] && device=$out/local-gpu.ini
dev_args=()
[ -n "$device" ] && dev_args=(--device "$device")
secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }

# ---- 2 and 4: import, then report (also --import-only) ----------------------------
import_and_report() {
  : >"$out/ncu-summary.txt"
  if [ ! -s "$out/lecture-ncu.csv" ]; then
    echo "gpu-ncu: error: $out/lecture-ncu.csv is missing or empty (see ncu.log)" | tee -a "$out/ncu-summary.txt"
    status=1
    return 1
  fi
  echo "== ncu's launches, imported (each kernel's counted bytes against its cold model count)" |
    tee -a "$out/ncu-summary.txt"
  if "$bin" import --help 2>&1 | grep -q "not in this build"; then
    echo "gpu-ncu: error: this build has no import (libcsv-dev missing: scripts/gpu-debs.sh fetches it); where it has: membound import ncu lecture-ncu.csv -o ncu.csv" |
      tee -a "$out/ncu-summary.txt"
    status=1
    return 1
  fi
  # sigmoid3's store and recompute in the script are the lecture's autograd.Functions,
  # run eagerly: not membound's fused plans of those names, so only eager and fused
  "$bin" import ncu "$out/lecture-ncu.csv" --plan eager,fused "${dev_args[@]}" -o "$out/ncu.csv" \
    --per-kernel "$out/ncu-kernels.csv" >"$out/import.txt" 2>"$out/import.log"
  local rc=$?
  cat "$out/import.txt" "$out/import.log" | tee -a "$out/ncu-summary.txt"
  [ "$rc" -eq 0 ] || { echo "gpu-ncu: error: membound import exited $rc" | tee -a "$out/ncu-summary.txt"; status=1; return 1; }
  local csvs=("$out/ncu.csv")
  [ -s "$out/ours.csv" ] && csvs+=("$out/ours.csv")
  "$bin" report "${csvs[@]}" -o "$out/report" --no-figures >"$out/report.txt" 2>&1
  rc=$?
  if grep -q "not in this build" "$out/report.txt"; then
    echo "report: not in this build (no GSL); where it is: membound report ${csvs[*]##*/} -o report" |
      tee -a "$out/ncu-summary.txt"
  elif [ "$rc" -ne 0 ]; then
    echo "gpu-ncu: error: membound report exited $rc (see report.txt)" | tee -a "$out/ncu-summary.txt"
    status=1
  else
    { echo "== report (ncu's rows apart from ours: backends cuda-ncu and cuda)"; grep -E "^fit |^low precision|^fusion|^recomputation" "$out/report.txt"; } |
      tee -a "$out/ncu-summary.txt"
  fi
}

if [ "$import_only" = 1 ]; then
  import_and_report
  exit $status
fi

# ---- tools ------------------------------------------------------------------
ncu=$(command -v ncu 2>/dev/null || true)
if [ -z "$ncu" ]; then
  for c in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/NVIDIA-Nsight-Compute*/ncu; do
    [ -x "$c" ] && ncu=$c
  done
fi
[ -n "$ncu" ] || { echo "gpu-ncu: ncu (Nsight Compute) not found: nothing profiled"; exit 3; }
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu-ncu: no PyTorch with a usable CUDA device for python3: nothing profiled"
  exit 3
fi
echo "ncu: $("$ncu" --version 2>/dev/null | tail -n1)" | tee "$out/ncu-provenance.txt"
echo "membound: $bin, n=$n dtype=$dtype variants: ${variants[*]}" | tee -a "$out/ncu-provenance.txt"
vlist=$(IFS=,; echo "${variants[*]}")

# ---- 1. the lecture's demos under ncu -----------------------------------------
echo "== ncu over bench/lecture_demos.py profile"
t=$(date +%s%N)
"$ncu" --nvtx --print-nvtx-rename kernel \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  --csv --page raw --print-units base --log-file "$out/lecture-ncu.csv" \
  python3 "$repo/bench/lecture_demos.py" profile --device cuda --sizes "$n" --dtype "$dtype" \
  --variants "$vlist" --plans eager,fused --warmup 1 --iters 3 >"$out/ncu.log" 2>&1
rc=$?
t_ncu=$(secs "$t")
tail -n 3 "$out/ncu.log"
[ "$rc" -eq 0 ] || { echo "gpu-ncu: error: ncu run exited $rc (see ncu.log)"; status=1; }

# ---- 3. ours: CUPTI counts, each kernel from a clean L2 -------------------------
echo "== ours: membound measure with CUPTI counters"
t=$(date +%s%N)
MB_CUPTI_KERNEL_CLEAN=1 "$bin" measure "${variants[@]}" --backend cuda --dtype "$dtype" --sizes "$n" \
  "${dev_args[@]}" --timeout 2 -o "$out/ours.csv" --per-kernel "$out/ours-kernels.csv" >"$out/ours.log" 2>&1
rc=$?
t_ours=$(secs "$t")
tail -n 3 "$out/ours.log"
if [ "$rc" -ne 0 ]; then
  if grep -q "no usable GPU\|no usable NVIDIA driver\|no CUDA device" "$out/ours.log"; then
    echo "gpu-ncu: no usable GPU for membound measure: ncu's rows only"
  else
    echo "gpu-ncu: error: membound measure exited $rc (see ours.log)"
    status=1
  fi
fi

import_and_report
{
  echo "wall_s_ncu_lecture_demos: $t_ncu"
  echo "wall_s_ours_measure_with_counters: $t_ours"
} | tee -a "$out/ncu-summary.txt"
exit $status
