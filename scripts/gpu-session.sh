#!/usr/bin/env bash
# gpu-session.sh — the whole hardware validation in one run on a machine with
# an NVIDIA GPU (no network, no GSL or gnuplot needed):
#   0. environment: where nvidia-smi, libcupti, libnvperf_host, ncu, nvcc,
#      cmake and python3/torch are (environment.txt);
#   1. scripts/gpu-validate.sh: build, GPU tests, calibration, the sweep
#      (2^16, 2^18, ..., 2^28, f32 and bf16; softmax, softmax_op, layernorm,
#      rmsnorm at 65536x1024, rows kept on chip, and 512x262144, rows
#      re-read each pass, f32; then softmax_bwd, layernorm_bwd, rmsnorm_bwd,
#      layernorm_affine_bwd, rmsnorm_affine_bwd, and those two with their
#      weights' gradients in partial sums (colsum partial), at the same
#      shapes, in a run of their own) with CUPTI counters and
#      event timing;
#   2. scripts/gpu-ncu.sh: our counted bytes against Nsight Compute's at
#      n = 2^26, with both collection wall times;
#   3. bench/torch_gpu.py: PyTorch eager and torch.compile on the same GPU,
#      same protocol, model columns from our binary.
# Everything is written into WORKDIR (its name becomes the folder under
# reports/data/, e.g. reports/data/h200). With --archive DIR, three files are
# kept in DIR however the run ends: gpu.tgz (WORKDIR packed by
# scripts/gpu-pack.sh, refreshed after every step and every 20 s), session.log
# (the whole output, written as it goes, cut at 15 MB) and summary.txt (the
# steps' wall times and exits, then each step's summary). That is what the
# device tool brings back from $OUT (<= 8 files, <= 16 MiB each).
#
# Budget (--budget-s, default 330 s): validate 195 s, ncu 60 s, torch 70 s.
# The row variants' run (20 rows of 2^26 and 2^27 elements, 30-60 s on an
# H200: an estimate from the 1-D rows' cost per row and per element, not yet
# timed there) comes after 2^28 and 2^26 and before the small sizes, which a
# short budget drops first.
# Each step runs under `timeout` with its share, cut to what is left of the
# total; a step that would start with less than its minimum is skipped, saying
# so. validate gets an internal budget (its share less 10 s) so it drops sizes
# rather than being killed: it runs 2^28 and 2^26 first, so what a short
# budget costs is the small sizes (2^16..2^24), not the cold-memory rows.
#
# usage: scripts/gpu-session.sh [options] WORKDIR
#   --archive DIR   keep gpu.tgz, session.log and summary.txt in DIR
#   --budget-s S    whole seconds for the three steps (default 330)
#   --build DIR     build folder (default: $MB_BUILD_DIR or <repo>/build-gpu)
#   --no-build      use DIR/bin/membound as it is
#   --skip LIST     steps to leave out: validate,ncu,torch (for rehearsals,
#                   and the rerun: --skip torch)
#   --sizes LIST    validate's sizes (default its own: 2^16..2^28:2; the
#                   rerun: 2^26,2^28)
#   -h, --help      this text
# Environment: MB_GIT_COMMIT names the commit where WORKDIR's tree has no .git
# (the device tool's copy), for the provenance.
# Exit: 0 every step passed; 1 a step failed or was skipped; 2 bad usage;
# 3 no usable GPU (validate found no GPU and nvidia-smi fails too).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
archive=""
total_s=330
build=${MB_BUILD_DIR:-$repo/build-gpu}
build_args=()
skip=","
sizes=""
work=""

usage() { sed -n '2,50s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
die_usage() { echo "gpu-session: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --archive|--budget-s|--build|--skip|--sizes)
      [ $# -ge 2 ] || die_usage "$1 needs a value"
      case "$1" in
        --archive) archive=$2 ;;
        --budget-s) [[ $2 =~ ^[0-9]+$ ]] || die_usage "--budget-s needs whole seconds, got '$2'"; total_s=$2 ;;
        --build) build=$2 ;;
        --skip) skip=",$2," ;;
        --sizes) sizes=$2 ;;
      esac
      shift 2 ;;
    --no-build) build_args+=(--no-build); shift ;;
    -*) die_usage "unknown option '$1' (try --help)" ;;
    *) [ -z "$work" ] || die_usage "one WORKDIR only ('$work', '$1')"; work=$1; shift ;;
  esac
done
[ -n "$work" ] || die_usage "no WORKDIR (usage: scripts/gpu-session.sh [options] WORKDIR)"
mkdir -p "$work" 2>/dev/null && [ -w "$work" ] || die_usage "cannot write to '$work'"
work=$(cd "$work" && pwd)
case "$build" in /*) ;; *) build=$PWD/$build ;; esac
build_args+=(--build "$build")
if [ -n "$archive" ]; then
  mkdir -p "$archive" 2>/dev/null && [ -w "$archive" ] || die_usage "cannot write to --archive '$archive'"
  archive=$(cd "$archive" && pwd)
  case "$archive/" in "$work"/*) die_usage "--archive must not be inside WORKDIR" ;; esac
fi

# The whole output goes to WORKDIR/session.log and, live, to the archive's copy.
log=$work/session.log
: >"$log"
if [ -n "$archive" ]; then
  # the archive's copy is cut at 15 MB by every pack (the device tool's limit
  # is 16 MiB a file); WORKDIR's keeps everything (gpu-pack.sh leaves out
  # files > 8 MiB)
  exec > >(tee -a "$log" "$archive/session.log") 2>&1
else
  exec > >(tee -a "$log") 2>&1
fi

t0=$(date +%s)
rc=0
steps=""   # one line per step: name, wall s, exit or "skipped"
elapsed() { echo $(( $(date +%s) - t0 )); }

# ---- the summary and the archive -------------------------------------------------
write_summary() {
  {
    echo "membound GPU session: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed) s of the ${total_s} s budget, exit $rc"
    echo "commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo "${MB_GIT_COMMIT:-unknown}")"
    grep -h "^nvidia-smi: [^n]" "$work/environment.txt" 2>/dev/null | head -n 2
    echo
    printf '%-10s %8s %s\n' step wall_s exit
    printf '%s' "$steps"
    for f in summary.txt ncu/ncu-summary.txt torch_gpu.summary.txt; do
      [ -s "$work/$f" ] || continue
      echo
      echo "== $f"
      cat "$work/$f"
    done
  } >"$work/session-summary.txt.tmp" 2>/dev/null && mv -f "$work/session-summary.txt.tmp" "$work/session-summary.txt"
}
# pack: WORKDIR into ARCHIVE/gpu.tgz (scripts/gpu-pack.sh: a temporary name
# of its own, so a kill or a second pack mid-write leaves the previous
# archive), and the summary beside it.
cut_log() {
  local f=$archive/session.log
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 15000000 ] && truncate -s 15000000 "$f"
  return 0
}
pack() {
  [ -n "$archive" ] || return 0
  bash "$repo/scripts/gpu-pack.sh" "$work" "$archive"
  cut_log
  [ -f "$work/session-summary.txt" ] && cp -f "$work/session-summary.txt" "$archive/summary.txt"
  return 0
}
packer_pid=""
finish() {
  local r=$?
  [ "$r" -ne 0 ] && [ "$rc" -eq 0 ] && rc=$r
  if [ -n "$packer_pid" ]; then # its pack (and tar) stop with it, then the last pack
    kill "$packer_pid" 2>/dev/null
    wait "$packer_pid" 2>/dev/null
  fi
  write_summary
  pack
  if [ -n "$archive" ]; then
    echo "gpu-session: archive: $(ls "$archive" | tr '\n' ' ')"
  fi
}
trap finish EXIT
trap 'echo "gpu-session: stopped by a signal"; rc=130; exit 130' INT TERM HUP
if [ -n "$archive" ]; then
  # a packer in the background, so that even a kill of this script between
  # steps (the device tool's own limit) leaves a recent archive; on TERM it
  # stops the pack in flight (gpu-pack.sh then stops its tar)
  (
    child=""
    trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM
    trap - EXIT INT HUP
    while :; do
      sleep 20 & child=$!; wait "$child"
      bash "$repo/scripts/gpu-pack.sh" "$work" "$archive" & child=$!; wait "$child"
      child=""
      cut_log
    done
  ) &
  packer_pid=$!
fi

# run_step NAME BUDGET_S MIN_S CMD...: runs CMD under timeout with BUDGET_S
# (cut to what is left of the total), or skips it when less than MIN_S is left
# or when NAME is in --skip. Records the step's wall time and exit, refreshes
# the summary and the archive. Returns CMD's exit (skipped: 0 with rc=1).
run_step() {
  local name=$1 budget=$2 min=$3 left s0 r
  shift 3
  if [[ $skip == *",$name,"* ]]; then
    echo "gpu-session: $name: skipped (--skip)"
    steps+=$(printf '%-10s %8s %s' "$name" - "skipped (--skip)")$'\n'
    return 0
  fi
  left=$((total_s - $(elapsed)))
  [ "$budget" -gt "$left" ] && budget=$left
  if [ "$budget" -lt "$min" ]; then
    echo "gpu-session: $name: skipped, ${left} s left of the ${total_s} s budget (needs >= $min s)"
    steps+=$(printf '%-10s %8s %s' "$name" - "skipped (budget)")$'\n'
    rc=1
    return 0
  fi
  echo
  echo "=== gpu-session [$(elapsed) s]: $name (at most $budget s)"
  s0=$(date +%s)
  timeout --kill-after=5 "$budget" "$@"
  r=$?
  echo "=== gpu-session: $name: $(( $(date +%s) - s0 )) s, exit $r"
  if [ "$r" -eq 124 ] || [ "$r" -eq 137 ]; then
    echo "gpu-session: $name: stopped at its $budget s limit (outputs so far are kept)"
  fi
  steps+=$(printf '%-10s %8s %s' "$name" "$(( $(date +%s) - s0 ))" "$r")$'\n'
  write_summary
  pack
  return "$r"
}

# ---- 0. environment: what this machine has, before anything can fail ---------------
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
# first match of a library name: the loader cache, then the toolkit's folders
find_lib() {
  local hit
  hit=$(ldconfig -p 2>/dev/null | awk -v n="$1" '$1 ~ "^"n"\\.so" { print $NF; exit }')
  [ -z "$hit" ] && hit=$(ls /usr/local/cuda*/lib64/"$1".so* /usr/local/cuda*/lib/"$1".so* \
    /usr/local/cuda*/extras/CUPTI/lib64/"$1".so* /usr/local/cuda*/targets/*/lib/"$1".so* 2>/dev/null | head -n1)
  echo "${hit:-not found}"
}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname 2>/dev/null || echo unknown), $(nproc 2>/dev/null) CPUs, kernel $(uname -r)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem \
      --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /'
  else
    echo "nvidia-smi: not found"
  fi
  for t in nvcc cmake ninja ncu python3; do
    echo "$t: $(command -v "$t" 2>/dev/null || echo 'not found')"
  done
  echo "nvcc version: $(nvcc --version 2>/dev/null | tail -n1)"
  echo "libcupti: $(find_lib libcupti)"
  echo "libnvperf_host: $(find_lib libnvperf_host)"
  echo "libnvidia-ml: $(find_lib libnvidia-ml)"
  if command -v python3 >/dev/null 2>&1; then
    echo "torch: $(timeout 60 python3 -c 'import torch, triton; print(torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__, "gpu", torch.cuda.is_available())' 2>&1 | tail -n1)"
  fi
  echo "gpu-debs: $( [ -d "$repo/.gpu-debs" ] && ls "$repo/.gpu-debs" | wc -l || echo 0) packages in $repo/.gpu-debs"
} >"$work/environment.txt" 2>&1
echo "=== gpu-session: environment"
cat "$work/environment.txt"
steps+=$(printf '%-10s %8s %s' environment "$(elapsed)" 0)$'\n'
write_summary
pack

# ---- 1. validate: build, GPU tests, calibration, the sweep --------------------------
debs=()
[ -d "$repo/.gpu-debs" ] && debs=(--debs "$repo/.gpu-debs")
size_args=()
[ -n "$sizes" ] && size_args=(--sizes "$sizes")
run_step validate 195 90 "$repo/scripts/gpu-validate.sh" ${debs[@]+"${debs[@]}"} "${build_args[@]}" \
  ${size_args[@]+"${size_args[@]}"} --budget-s $((195 - 10)) "$work"
r=$?
if [ "$r" -eq 3 ]; then
  echo "gpu-session: no usable GPU: stopping"
  rc=3
  exit 3
fi
[ "$r" -eq 0 ] || rc=1
bin=$build/bin/membound
spec=$work/local-gpu.ini
[ -f "$spec" ] || spec=$(sed -n 's/^fallback_device: //p' "$work/provenance.txt" 2>/dev/null | head -n1)

# ---- 2. ncu: 4 variants at 2^26, ours then under ncu, joined after each (exit 3: no ncu) --
run_step ncu 60 20 "$repo/scripts/gpu-ncu.sh" --build "$build" ${spec:+--device "$spec"} "$work/ncu"
r=$?
[ "$r" -eq 0 ] || [ "$r" -eq 3 ] || rc=1

# ---- 3. PyTorch: compiled first, then timed within its own budget --------------------
torch_args=(--sizes "2^20,2^26" --dtype "f32,bf16" --timeout 1 --compile-budget-s 25 --budget-s 25
            -o "$work/torch_gpu.csv")
[ -n "$spec" ] && torch_args+=(--device "$spec")
[ -x "$bin" ] && torch_args+=(--bin "$bin")
# torch_gpu.summary.txt: one line per row, written before the step's record
torch_summary() {
  python3 - "$work/torch_gpu.csv" >"$work/torch_gpu.summary.txt" 2>&1 <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
print(f"{len(rows)} rows")
for r in rows:
    print(f"{r['backend']:14} {r['variant']:15} {r['plan']:9} {r['dtype']:5} n={r['n']:>9} "
          f"median {float(r['time_s_median'] or 'nan') * 1e6:10.2f} us  verified={r['verified']}  {r['counters']}")
PY
}
# its whole output also in WORKDIR (archived), not only in the session log
run_step torch 70 25 env TORCH_LOG="$work/torch_gpu.log" bash -c 'PYTHONUNBUFFERED=1 python3 "$@" 2>&1 | tee "$TORCH_LOG"; exit "${PIPESTATUS[0]}"' \
  torch_gpu "$repo/bench/torch_gpu.py" "${torch_args[@]}"
r=$?
[ -s "$work/torch_gpu.csv" ] && torch_summary
[ "$r" -eq 0 ] || [ "$r" -eq 3 ] || rc=1

echo "gpu-session: wall time $(elapsed) s of the ${total_s} s budget, exit $rc"
exit "$rc"
