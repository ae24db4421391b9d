#!/usr/bin/env bash
# gpu-validate.sh — hardware validation of the CUDA backend in one command, on a
# machine with an NVIDIA GPU: build (or reuse a build), GPU tests, calibration
# into a spec INI, then every built-in variant and plan at 2^16, 2^18, ...,
# 2^28 in f32 and bf16 with CUPTI DRAM counters (after the copy sanity gate)
# and event timing; then the row variants (softmax, softmax_op, layernorm,
# rmsnorm: every plan) at two shapes, one whose rows fit on chip (one pass)
# and one whose rows do not (multi-pass), in f32, and their backward variants
# (softmax_bwd, layernorm_bwd, rmsnorm_bwd, and layernorm_affine_bwd and
# rmsnorm_affine_bwd with the weights' gradients: every plan; and the last
# two again with a 'colsum partial' line, their weights' gradients in
# per-block partial sums) in a run of their own after them. Writes CSVs, the spec, provenance and a log into OUTDIR
# and prints a summary table last. Needs no network, GSL or gnuplot.
# The sweep runs the cold-memory sizes first, one measure run per size above
# 2^24, largest first (2^28, then 2^26: every row the >= 4x L2 bytes
# criterion judges), then the row variants' run (--row-shapes), then one run
# of all sizes up to 2^24; each run's CSV is
# kept and measure.csv merges them, so a time budget (--budget-s) drops the
# small sizes, not the large ones. Each run after the first is estimated from
# its rows x samples x size (the per-row cost of the runs so far, split into
# a fixed part and a part per element) and skipped when it would not end in
# time; each run also gets a `timeout` of what is left, so measure's SIGTERM
# path keeps the rows it measured. The GPU tests (ctest -R '^cuda_', at most
# 60 s) run after the sweep, in what is left. Each step prints its wall time.
# On an H200 (estimate, not yet timed there): build < 1 min, calibration
# ~10 s, sweep ~2 min.
#
# usage: scripts/gpu-validate.sh [options] OUTDIR
#   --build DIR     build folder (default: $MB_BUILD_DIR or <repo>/build-gpu);
#                   reused when it holds a configured build
#   --no-build      use DIR/bin/membound as it is
#   --sizes LIST    membound --sizes syntax: N, 2^E, NK/NM/NG, LO..HI[:STEP]
#                   (default 2^16..2^28:2, every second power of two)
#   --dtypes LIST   default f32,bf16
#   --row-shapes L  the row variants' shapes, ROWSxCOLS,... (default
#                   65536x1024,512x262144: 4 KiB rows kept on chip, 1 MiB rows
#                   re-read each pass; tensors of 256 and 512 MiB, >= 4x L2);
#                   "none" leaves the row variants out
#   --row-dtypes L  their dtypes (default f32)
#   --row-bwd L     the backward row variants, run after the forward ones at
#                   the same shapes (default softmax_bwd,layernorm_bwd,
#                   rmsnorm_bwd,layernorm_affine_bwd,rmsnorm_affine_bwd: the
#                   last two with the weights' gradients, sums over the
#                   rows); "none" leaves them out
#   --row-partial L the backward variants run again with 'colsum partial' (a
#                   copy of each written into OUTDIR as NAME_partial.mb:
#                   layernorm_affine_partial.mb, ...), in the backward run
#                   (default layernorm_affine_bwd,rmsnorm_affine_bwd); "none"
#   --debs DIR      unpack the .deb files in DIR (libinih-dev, libjansson-dev, libcsv-dev, libyajl-dev,
#                   pkgconf ... fetched elsewhere with apt-get download) into a
#                   private prefix and build against it, for machines without
#                   those packages and without network
#   --budget-s S    stop starting measure runs once the next one (estimated
#                   from the runs so far) would end more than S seconds after
#                   the script started; skipped sizes are named (default: none)
#   --summary-only  only print the summary of the files already in OUTDIR
#   -h, --help      this text
# Environment: MB_SIZES, MB_DTYPES, MB_ROW_SHAPES, MB_ROW_DTYPES, MB_ROW_BWD,
# MB_ROW_PARTIAL (defaults of --sizes, --dtypes, --row-shapes, --row-dtypes,
# --row-bwd, --row-partial),
# MB_BUILD_DIR, MB_CMAKE_ARGS (more arguments for cmake's configure step)
# Exit: 0 all passed; 1 a step failed or a row failed its check; 2 bad usage;
# 3 no usable GPU (nothing measured).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MB_BUILD_DIR:-$repo/build-gpu}
sizes=${MB_SIZES:-2^16..2^28:2}
budget_s=0
dtypes=${MB_DTYPES:-f32,bf16}
row_shapes=${MB_ROW_SHAPES:-65536x1024,512x262144}
row_dtypes=${MB_ROW_DTYPES:-f32}
row_variants=(softmax softmax_op layernorm rmsnorm)
row_bwd=${MB_ROW_BWD:-softmax_bwd,layernorm_bwd,rmsnorm_bwd,layernorm_affine_bwd,rmsnorm_affine_bwd}
row_partial=${MB_ROW_PARTIAL:-layernorm_affine_bwd,rmsnorm_affine_bwd}
debs=""
deb_cmake=()
do_build=1
summary_only=0
out=""

usage() { sed -n '2,63s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --build) [ $# -ge 2 ] || { echo "gpu-validate: error: --build needs a folder" >&2; exit 2; }; build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --summary-only) summary_only=1; shift ;;
    --sizes) [ $# -ge 2 ] || { echo "gpu-validate: error: --sizes needs a list" >&2; exit 2; }; sizes=$2; shift 2 ;;
    --dtypes) [ $# -ge 2 ] || { echo "gpu-validate: error: --dtypes needs a list" >&2; exit 2; }; dtypes=$2; shift 2 ;;
    --row-shapes) [ $# -ge 2 ] || { echo "gpu-validate: error: --row-shapes needs a list" >&2; exit 2; }; row_shapes=$2; shift 2 ;;
    --row-dtypes) [ $# -ge 2 ] || { echo "gpu-validate: error: --row-dtypes needs a list" >&2; exit 2; }; row_dtypes=$2; shift 2 ;;
    --row-bwd) [ $# -ge 2 ] || { echo "gpu-validate: error: --row-bwd needs a list" >&2; exit 2; }; row_bwd=$2; shift 2 ;;
    --row-partial) [ $# -ge 2 ] || { echo "gpu-validate: error: --row-partial needs a list" >&2; exit 2; }; row_partial=$2; shift 2 ;;
    --debs) [ $# -ge 2 ] || { echo "gpu-validate: error: --debs needs a folder" >&2; exit 2; }; debs=$2; shift 2 ;;
    --budget-s)
      if [ $# -lt 2 ] || ! [[ $2 =~ ^[0-9]+$ ]]; then
        echo "gpu-validate: error: --budget-s needs whole seconds" >&2
        exit 2
      fi
      budget_s=$2; shift 2 ;;
    -*) echo "gpu-validate: error: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) [ -z "$out" ] || { echo "gpu-validate: error: one OUTDIR only ('$out', '$1')" >&2; exit 2; }; out=$1; shift ;;
  esac
done
if [ "$row_shapes" != none ]; then
  for sh in ${row_shapes//,/ }; do
    [[ $sh =~ ^[0-9^]+x[0-9^]+$ ]] ||
      { echo "gpu-validate: error: --row-shapes '$row_shapes': expected ROWSxCOLS,... or none" >&2; exit 2; }
  done
fi
[[ $row_bwd =~ ^(none|[a-z0-9_]+(,[a-z0-9_]+)*)$ ]] ||
  { echo "gpu-validate: error: --row-bwd '$row_bwd': expected VARIANT,... or none" >&2; exit 2; }
row_bwd_variants=()
[ "$row_bwd" = none ] || read -r -a row_bwd_variants <<<"${row_bwd//,/ }"
[[ $row_partial =~ ^(none|[a-z0-9_]+(,[a-z0-9_]+)*)$ ]] ||
  { echo "gpu-validate: error: --row-partial '$row_partial': expected VARIANT,... or none" >&2; exit 2; }
row_partial_variants=()
[ "$row_partial" = none ] || read -r -a row_partial_variants <<<"${row_partial//,/ }"
for v in ${row_partial_variants[@]+"${row_partial_variants[@]}"}; do
  [ -f "$repo/model/variants/$v.mb" ] ||
    { echo "gpu-validate: error: --row-partial: no built-in variant '$v' (model/variants/$v.mb)" >&2; exit 2; }
done
[ -n "$out" ] || { echo "gpu-validate: error: no OUTDIR (usage: scripts/gpu-validate.sh [options] OUTDIR)" >&2; exit 2; }
if ! mkdir -p "$out" 2>/dev/null || [ ! -w "$out" ]; then
  echo "gpu-validate: error: cannot write to '$out'" >&2
  exit 2
fi
out=$(cd "$out" && pwd)
case "$build" in /*) ;; *) build=$PWD/$build ;; esac # measure runs inside OUTDIR
# the partial-sum copies (with the backward run): the built-in with a
# 'colsum partial' line, renamed
[ "$row_bwd" = none ] && row_partial_variants=()
for v in ${row_partial_variants[@]+"${row_partial_variants[@]}"}; do
  f=$out/${v%_bwd}_partial.mb
  sed "s/^backward\$/backward\ncolsum partial/; s/^name .*/name ${v%_bwd}_partial/" "$repo/model/variants/$v.mb" >"$f" ||
    { echo "gpu-validate: error: cannot write '$f'" >&2; exit 2; }
  row_bwd_variants+=("$f")
done

log=$out/gpu-validate.log
: >"$log"
exec > >(tee -a "$log") 2>&1
t0=$(date +%s)
status=0
step_name=""
step_t0=$t0
# Prints the previous step's wall time, then the next step's title.
step() {
  local now
  now=$(date +%s)
  [ -n "$step_name" ] && echo "-- $step_name: $((now - step_t0)) s"
  step_name=$*
  step_t0=$now
  echo
  echo "== [$((now - t0)) s] $*"
}
fail() { echo "gpu-validate: error: $*"; status=1; }

# ---- summary ----------------------------------------------------------------------
# Largest size of each variant x plan x dtype: model bytes, counted bytes, error,
# median time, achieved GB/s; then the lecture's ratios and the harness's
# counted-vs-model verdicts (count_check: within 3% at tensors >= 4x L2).
read -r -d '' summary_awk <<'AWK'
# CSV fields, double quotes honoured.
function split_csv(line, f,    n, i, c, q, cur) {
  n = 0; cur = ""; q = 0
  for (i = 1; i <= length(line); i++) {
    c = substr(line, i, 1)
    if (q) { if (c == "\"") { if (substr(line, i + 1, 1) == "\"") { cur = cur "\""; i++ } else q = 0 } else cur = cur c }
    else if (c == "\"") q = 1
    else if (c == ",") { f[++n] = cur; cur = "" }
    else cur = cur c
  }
  f[++n] = cur
  return n
}
function log2(x) { return log(x) / log(2) }
/^#/ { next }
!hdr { hdr = 1; n = split_csv($0, h); for (i = 1; i <= n; i++) col[h[i]] = i; next }
{
  split_csv($0, f)
  shp = ("shape" in col) ? f[col["shape"]] : ""
  key = f[col["variant"]] SUBSEP f[col["plan"]] SUBSEP f[col["dtype"]] SUBSEP shp
  nn = f[col["n"]] + 0
  if (!(key in best) || nn > best[key]) { best[key] = nn; row[key] = $0 }
  if (f[col["verified"]] != "1") bad++
  # the harness's verdict on counted against model bytes (measure/count_check.c)
  v = ("count_check" in col) ? f[col["count_check"]] : ""
  if (v == "ok" || v == "off") {
    big++; if (v == "off") off++
    e = 100 * f[col["count_err"]]
    if (e > worst || -e > worst) worst = (e < 0 ? -e : e)
  }
  rows++
}
END {
  printf "%-15s %-9s %-5s %-10s %12s %12s %8s %11s %9s\n", "variant", "plan", "dtype", "n", "model_B", "counted_B", "err%", "time", "GB/s"
  for (k in row) keys[++nk] = k
  for (i = 2; i <= nk; i++) { v = keys[i]; for (j = i - 1; j >= 1 && keys[j] > v; j--) keys[j + 1] = keys[j]; keys[j + 1] = v }
  for (i = 1; i <= nk; i++) {
    k = keys[i]; split_csv(row[k], f)
    mb = f[col["model_dram_read_bytes"]] + f[col["model_dram_write_bytes"]]
    cr = f[col["dram_read_bytes"]]; cw = f[col["dram_write_bytes"]]
    cb = (cr == "" ? "" : cr + cw)
    t = f[col["time_s_median"]] + 0
    bytes = (cb == "" ? mb : cb)
    gbs = (t > 0 ? bytes / t / 1e9 : 0)
    err = (cb == "" || mb == 0 ? "-" : sprintf("%+.2f", 100 * (cb - mb) / mb))
    size = ("shape" in col && f[col["shape"]] != "") ? f[col["shape"]] : sprintf("2^%d", log2(best[k]))
    printf "%-15s %-9s %-5s %-10s %12.4g %12s %8s %9.4g s %9.1f%s\n", f[col["variant"]], f[col["plan"]], f[col["dtype"]], size, mb, (cb == "" ? "-" : sprintf("%.4g", cb)), err, t, gbs, (f[col["verified"]] == "1" ? "" : "  NOT VERIFIED")
    if (f[col["variant"]] == "sin2_plus_cos2") { s2[f[col["plan"]] SUBSEP f[col["dtype"]]] = bytes; s2t[f[col["plan"]] SUBSEP f[col["dtype"]]] = t }
    if (f[col["plan"]] == "fused" && f[col["variant"]] != "copy" && copy_gbs > 0) fused[f[col["variant"]] " " f[col["dtype"]]] = gbs / copy_gbs
  }
  print ""
  for (d in s2) { split(d, p, SUBSEP); if (p[1] == "eager" && ((("fused") SUBSEP p[2]) in s2)) printf "sin2_plus_cos2 %s: eager/fused bytes %.2f (lecture: 11/2 = 5.5), time %.2fx\n", p[2], s2[d] / s2["fused" SUBSEP p[2]], s2t[d] / s2t["fused" SUBSEP p[2]] }
  for (v in fused) printf "fused %s: %.0f%% of the calibrated copy bandwidth (%.0f GB/s)\n", v, 100 * fused[v], copy_gbs
  if (big) printf "rows judged (counted, tensors >= 4x L2; count_check column): %d, off by more than 3%%: %d (worst %.2f%%)\n", big, off + 0, worst
  else print "rows judged (counted, tensors >= 4x L2; count_check column): none"
  printf "rows: %d, not verified: %d\n", rows, bad + 0
}
AWK

summary() {
  grep -h "sanity gate" "$out/measure.stderr" 2>/dev/null | head -n2
  grep -h "counters: unavailable" "$out/measure.stderr" 2>/dev/null | head -n1
  if [ ! -f "$out/measure.csv" ]; then
    fail "no measure.csv in $out"
    return
  fi
  local copy_gbs
  copy_gbs=$(sed -n 's/^measured_bandwidth_gbs *= *\([0-9.eE+-]*\).*/\1/p' "$out/local-gpu.ini" 2>/dev/null | head -n1)
  awk -v copy_gbs="${copy_gbs:-0}" "$summary_awk" "$out/measure.csv" | tee "$out/summary.txt"
  partial_lines "$out"/measure-run*.csv | sort -u | tee -a "$out/summary.txt"
}

# The rows that could not run: "partial: ..." lines of the CSVs' provenance
# column (and the '# partial:' lines of CSVs written before it).
partial_lines() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    grep -h "^# partial: " "$f" | sed 's/^# //'
    python3 -c 'import csv, sys
for r in csv.DictReader(line for line in open(sys.argv[1], newline="") if not line.startswith("#")):
    for line in r.get("provenance", "").split("\\n"):
        if line.startswith("partial: "):
            print(line)' "$f"
  done
}

if [ "$summary_only" = 1 ]; then
  summary
  exit $status
fi

# ---- toolchain --------------------------------------------------------------
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
if [ -n "$debs" ]; then
  step "unpacking packages from $debs"
  [ -d "$debs" ] || { echo "gpu-validate: error: --debs: '$debs' is not a folder"; exit 2; }
  prefix=${TMPDIR:-/tmp}/membound-deps
  mkdir -p "$prefix"
  n_debs=0
  for f in "$debs"/*.deb; do
    [ -e "$f" ] || continue
    dpkg-deb -x "$f" "$prefix" || fail "dpkg-deb -x $f"
    n_debs=$((n_debs + 1))
  done
  echo "unpacked $n_debs packages into $prefix"
  multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  deb_libdir=$prefix/usr/lib/$multiarch
  # pkg-config from the packages, run through a wrapper that finds its own
  # library; only the unpacked packages' .pc files (the sysroot prefixes their
  # paths). No LIBRARY_PATH or LD_LIBRARY_PATH: CMake links the libraries by
  # full path and puts their folder in the binary's RPATH (CMAKE_BUILD_RPATH
  # too), so the binary starts from any environment, not only this script's.
  pkgconf_bin=$(ls "$prefix"/usr/bin/pkgconf "$prefix"/usr/bin/pkg-config 2>/dev/null | head -n1)
  if [ -n "$pkgconf_bin" ]; then
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' \
      "$deb_libdir" "$pkgconf_bin" >"$prefix/pkg-config"
  else
    printf '#!/bin/sh\nexec pkg-config "$@"\n' >"$prefix/pkg-config"
  fi
  chmod +x "$prefix/pkg-config"
  export PKG_CONFIG_SYSROOT_DIR=$prefix
  export PKG_CONFIG_LIBDIR=$deb_libdir/pkgconfig:$prefix/usr/share/pkgconfig
  # libcsv ships no .pc file: cmake/FindLibCSV.cmake finds it under the prefix
  deb_cmake=(-DPKG_CONFIG_EXECUTABLE="$prefix/pkg-config" -DCMAKE_BUILD_RPATH="$deb_libdir"
             -DCMAKE_PREFIX_PATH="$prefix/usr")
fi

bin=$build/bin/membound
if [ "$do_build" = 1 ]; then
  step "build in $build"
  for tool in cmake nvcc; do
    command -v "$tool" >/dev/null 2>&1 || { echo "gpu-validate: error: $tool not found on PATH"; exit 1; }
  done
  gen=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
  arch=()
  cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .')
  if [ -n "$cc" ] && [ ! -f "$build/CMakeCache.txt" ]; then
    arch=(-DCMAKE_CUDA_ARCHITECTURES="${cc}-real;${cc}-virtual")
  fi
  # ${a[@]+"${a[@]}"}: an empty array under set -u fails on bash < 4.4
  if ! cmake -S "$repo" -B "$build" ${gen[@]+"${gen[@]}"} -DCMAKE_BUILD_TYPE=Release ${arch[@]+"${arch[@]}"} \
      ${deb_cmake[@]+"${deb_cmake[@]}"} ${MB_CMAKE_ARGS:-}; then
    echo "gpu-validate: error: cmake configure failed (missing libinih-dev, libjansson-dev or pkg-config? see --debs)"
    exit 1
  fi
  grep -q "^MB_HAVE_CUDA:INTERNAL=ON" "$build/CMakeCache.txt" ||
    echo "gpu-validate: warning: CMake found no CUDA compiler: the build has no CUDA backend"
  jobs=$(nproc 2>/dev/null || echo 4)
  targets=(membound)
  grep -q "^MB_HAVE_CUDA:INTERNAL=ON" "$build/CMakeCache.txt" && targets+=(cuda_gpu cuda_fallback cuda_gemm cuda_attn)
  if grep -q "^MB_HAVE_CUPTI:INTERNAL=ON" "$build/CMakeCache.txt"; then
    targets+=(cuda_cupti_host)
  else
    echo "gpu-validate: warning: built without CUPTI: timing only, no DRAM counters (see cmake's warning above)"
  fi
  cmake --build "$build" -j"$jobs" --target "${targets[@]}" ||
    { echo "gpu-validate: error: build failed"; exit 1; }
fi
[ -x "$bin" ] || { echo "gpu-validate: error: no binary at $bin"; exit 1; }
export MEMBOUND_VARIANTS=${MEMBOUND_VARIANTS:-$build/share/membound/variants}
[ -d "$MEMBOUND_VARIANTS" ] || export MEMBOUND_VARIANTS=$repo/model/variants

# ---- provenance -------------------------------------------------------------
step "provenance"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname 2>/dev/null || echo unknown)"
  if git -C "$repo" rev-parse HEAD >/dev/null 2>&1; then
    echo "git_commit: $(git -C "$repo" rev-parse HEAD)$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  else
    echo "git_commit: ${MB_GIT_COMMIT:-unknown} (no .git here: from MB_GIT_COMMIT)"
  fi
  echo "membound: $("$bin" --version 2>/dev/null)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -n1)"
  echo "cmake: $(cmake --version 2>/dev/null | head -n1)"
  echo "settings: sizes=$sizes dtypes=$dtypes build=$build budget_s=$budget_s"
  echo "host_memory: $(awk '/^MemTotal:/ { t = $2 } /^MemAvailable:/ { a = $2 } END { printf "%.1f GB available of %.1f GB", a / 1e6, t / 1e6 }' /proc/meminfo 2>/dev/null)"
  # the GPU's state as the run found it: read, never set. One query per
  # field, so a field an older driver lacks costs only its own line
  if command -v nvidia-smi >/dev/null 2>&1; then
    for f in name pci.bus_id driver_version memory.total memory.used clocks.sm clocks.mem clocks.max.sm \
        clocks.max.mem clocks.applications.graphics clocks.applications.memory ecc.mode.current \
        persistence_mode mig.mode.current compute_mode power.draw power.limit temperature.gpu \
        clocks_event_reasons.active; do
      echo "nvidia-smi $f: $(nvidia-smi --query-gpu="$f" --format=csv,noheader 2>&1 | head -n1)"
    done
  else
    echo "nvidia-smi: not found"
  fi
} | tee "$out/provenance.txt"

# ---- calibration: also the check that a GPU is usable ----------------------------
# A failed calibration ends the run only when nvidia-smi sees no GPU either;
# otherwise the sweep goes on against the table's spec of the GPU it names
# (fallback_device in provenance.txt), and the failure is reported.
step "calibrate --backend cuda"
rm -f "$out/local-gpu.ini"
spec=local-gpu.ini
if "$bin" calibrate --backend cuda -o "$out/local-gpu.ini"; then
  cat "$out/local-gpu.ini"
else
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
  if [ -z "$gpu_name" ]; then
    echo "gpu-validate: no usable GPU (calibration failed and nvidia-smi sees none): nothing measured"
    exit 3
  fi
  case "$gpu_name" in
    *H200*) spec=h200 ;;
    *H100*PCIe*) spec=h100-pcie ;;
    *A100*PCIe*) spec=a100-pcie-80gb ;;
    *A100*) spec=a100-80gb ;;
    *) spec=h100-sxm ;;
  esac
  # the table read whole first: `devices | grep -q` under pipefail fails
  # whenever grep's early exit kills devices with SIGPIPE (a race)
  table=$("$bin" devices 2>/dev/null)
  grep -q "^$spec " <<<"$table" || spec=h100-sxm
  fail "calibrate failed on '$gpu_name' (nvidia-smi sees it): measuring against the table's '$spec' instead"
  echo "fallback_device: $spec" >>"$out/provenance.txt"
fi

# ---- GEMMs: the model against cuBLASLt at shapes other than calibrate's ---------
# calibrate times a 4096^3 bf16 product for bf16_gemm_tflops; these are judged
# against the model at it: squares, a Llama MLP's projection, a skinny and a
# batched product, f32 (no TF32) too; one JSON a product (gemm-MxNxK[xB]-T.json)
step "gemm: the model against cuBLASLt"
for g in 1024x1024x1024:1:bf16 2048x2048x2048:1:bf16 8192x8192x8192:1:bf16 4096x11008x4096:1:bf16 \
         4096x4096x64:1:bf16 512x512x64:64:bf16 2048x2048x2048:1:f32 4096x4096x4096:1:f32; do
  IFS=: read -r mnk batch dt <<<"$g"
  f=gemm-$mnk-$dt.json
  [ "$batch" != 1 ] && f=gemm-${mnk}x$batch-$dt.json
  (cd "$out" && "$bin" gemm --mnk "$mnk" --batch "$batch" --dtype "$dt" --measure --device "$spec" --json \
     >"$f.tmp" && mv "$f.tmp" "$f") || fail "gemm $mnk batch $batch $dt"
done
rm -f "$out"/gemm-*.json.tmp

# ---- the sweep: sanity gate first (inside measure), then every variant and plan ----
# Sizes of a --sizes list, one per line (the syntax of membound's --sizes).
expand_sizes() {
  local item lo hi st v i
  local IFS=,
  for item in $1; do
    if [[ $item == *..* ]]; then
      lo=${item%%..*}; hi=${item#*..}; st=1
      if [[ $hi == *:* ]]; then st=${hi#*:}; hi=${hi%%:*}; fi
      lo=$(size_value "$lo") && hi=$(size_value "$hi") || return 1
      [[ $st =~ ^[0-9]+$ ]] && [ "$st" -ge 1 ] || return 1
      i=0
      for ((v = lo; v <= hi; v *= 2)); do
        [ $((i % st)) -eq 0 ] && echo "$v"
        i=$((i + 1))
      done
    else
      size_value "$item" || return 1
    fi
  done
}
size_value() {
  local s=$1
  case "$s" in
    *^*) [[ ${s%%^*} =~ ^[0-9]+$ && ${s#*^} =~ ^[0-9]+$ ]] || return 1; echo $(( ${s%%^*} ** ${s#*^} )) ;;
    *[kK]) [[ ${s%?} =~ ^[0-9]+$ ]] || return 1; echo $(( ${s%?} << 10 )) ;;
    *M) [[ ${s%?} =~ ^[0-9]+$ ]] || return 1; echo $(( ${s%?} << 20 )) ;;
    *G) [[ ${s%?} =~ ^[0-9]+$ ]] || return 1; echo $(( ${s%?} << 30 )) ;;
    *) [[ $s =~ ^[0-9]+$ ]] || return 1; echo "$s" ;;
  esac
}
if ! size_list=$(expand_sizes "$sizes") || [ -z "$size_list" ]; then
  echo "gpu-validate: error: --sizes '$sizes': expected N, 2^E, NK/NM/NG or LO..HI[:STEP]"
  exit 2
fi
# runs: one per size above 2^24, largest first, then all sizes <= 2^24 together
small=""
large=""
while read -r v; do
  if [ "$v" -le $((1 << 24)) ]; then small=${small:+$small,}$v; else large="$v"$'\n'"$large"; fi
done <<<"$size_list"
runs=()
while read -r v; do [ -n "$v" ] && runs+=("$v"); done <<<"$(sort -rn <<<"$large")"
# the row variants (2-D shapes) after the cold-memory sizes, before the small ones
row_run=0
if [ "$row_shapes" != none ]; then
  runs+=(rows)
  [ ${#row_bwd_variants[@]} -gt 0 ] && runs+=(rowsbwd)
  row_run=1
fi
[ -n "$small" ] && runs+=("$small")
# The row run's size for the estimate: its rows (variant x plan x dtype x
# shape, as `model` lists them) and the mean elements of its shapes.
row_rows=0
row_elems=0
if [ "$row_run" = 1 ]; then
  nsh=0
  for sh in ${row_shapes//,/ }; do
    r0=${sh%%x*} c0=${sh#*x}
    row_elems=$((row_elems + $(size_value "$r0") * $(size_value "$c0")))
    nsh=$((nsh + 1))
  done
  row_elems=$((row_elems / nsh))
  n_row_dtypes=$(tr ',' '\n' <<<"$row_dtypes" | grep -c .)
  row_rows=$("$bin" model "${row_variants[@]}" --shape "$row_shapes" --csv 2>/dev/null | tail -n +2 | grep -c .)
  row_rows=$((row_rows * n_row_dtypes))
  row_bwd_rows=0
  if [ ${#row_bwd_variants[@]} -gt 0 ]; then
    row_bwd_rows=$("$bin" model "${row_bwd_variants[@]}" --shape "$row_shapes" --csv 2>/dev/null | tail -n +2 | grep -c .)
    row_bwd_rows=$((row_bwd_rows * n_row_dtypes))
  fi
fi
# a row run's variants and rows: forward (rows) or backward (rowsbwd)
run_variants() { if [ "$1" = rows ]; then echo "${row_variants[*]}"; else echo "${row_bwd_variants[*]}"; fi; }
run_rows() { if [ "$1" = rows ]; then echo "$row_rows"; else echo "$row_bwd_rows"; fi; }
n_dtypes=$(tr ',' '\n' <<<"$dtypes" | grep -c .)

# measure.csv / measure-kernels.csv: the first run's header, then every
# run's rows, each with its own provenance columns (written to a temporary
# file, then renamed; measure-merge.txt says which runs); merged after every
# run, so a step killed mid-sweep keeps every finished run
merge() {
  local dst=$1 suffix=$2 i f first=1
  : >"$dst.tmp"
  for ((i = 1; i <= n_run; i++)); do
    f=$out/measure-run$i$suffix.csv
    [ -s "$f" ] || continue
    if [ $first = 1 ]; then
      {
        grep '^#' "$f"   # a CSV written before the provenance columns
        grep -v '^#' "$f" | head -n1
      } >>"$dst.tmp"
      first=0
    fi
    grep -v '^#' "$f" | tail -n +2 >>"$dst.tmp"
  done
  if [ $first = 0 ]; then mv "$dst.tmp" "$dst"; else rm -f "$dst.tmp"; fi
  echo "gpu-validate: $dst merged from $n_run measure runs (sizes $sizes${skipped:+; skipped $skipped})" \
    >"$out/measure-merge.txt"
}
merge_all() {
  merge "$out/measure.csv" ""
  merge "$out/measure-kernels.csv" "-kernels"
}

# measure runs inside OUTDIR with relative names, so the CSVs' provenance
# line names the spec as "local-gpu.ini", found beside them by `report`
rm -f "$out"/measure-run*.csv "$out"/measure.stderr
# The estimate of a run: rows x (fixed + per_elem x n) summed over its sizes,
# from the runs so far: each row costs about the same fixed part (warm-up,
# >= 10 samples over >= 0.2 s, the counted runs, the check: row_fixed_s) and
# a part that grows with its elements (host tensors filled and checked,
# samples that take longer than the 0.2 s floor). rows_per_size (variant x
# plan x dtype rows of one size) is read off the first run's CSV.
row_fixed_s=0.4
per_elem_s=0
rows_per_size=0
data_rows() { grep -v '^#' "$1" 2>/dev/null | tail -n +2 | grep -c .; }
estimate_s() { # estimate_s SIZES [ROWS]: whole seconds (ROWS rows of each size; default rows_per_size)
  awk -v list="$1" -v rows="${2:-$rows_per_size}" -v fixed="$row_fixed_s" -v pe="$per_elem_s" \
    'BEGIN { n = split(list, s, ","); t = 0; for (i = 1; i <= n; i++) t += rows * (fixed + pe * s[i]); printf "%d", t + 1 }'
}
n_run=0
skipped=""
for r in "${runs[@]}"; do
  now=$(date +%s)
  left=$((budget_s > 0 ? budget_s - (now - t0) : 0))
  if [ "$budget_s" -gt 0 ] && [ "$n_run" -gt 0 ] && [ "$rows_per_size" -gt 0 ]; then
    case $r in
      rows|rowsbwd) est=$(estimate_s "$row_elems" "$(run_rows "$r")") ;;
      *) est=$(estimate_s "$r") ;;
    esac
    if [ "$est" -gt "$left" ]; then
      echo "gpu-validate: sizes $r: estimated $est s, $left s left: skipped"
      skipped=${skipped:+$skipped,}$r
      continue
    fi
  fi
  if [ "$budget_s" -gt 0 ] && [ "$left" -lt 5 ]; then # a run's start-up alone takes seconds
    echo "gpu-validate: sizes $r: $left s left: skipped"
    skipped=${skipped:+$skipped,}$r
    continue
  fi
  n_run=$((n_run + 1))
  # under a timeout of what is left: measure's SIGTERM path writes the rows so far
  limit=()
  [ "$budget_s" -gt 0 ] && limit=(timeout -s TERM --kill-after=10 "$left")
  if [ "$r" = rows ] || [ "$r" = rowsbwd ]; then
    read -r -a vs <<<"$(run_variants "$r")"
    step "measure run $n_run: ${vs[*]}, every plan, shapes $row_shapes, dtypes $row_dtypes (counters + timing)"
    (cd "$out" && ${limit[@]+"${limit[@]}"} "$bin" measure "${vs[@]}" --backend cuda --dtype "$row_dtypes" \
      --shape "$row_shapes" --device "$spec" --timeout 2 -o "measure-run$n_run.csv" \
      --per-kernel "measure-run$n_run-kernels.csv") 2>"$out/measure-run$n_run.stderr"
  else
    step "measure run $n_run: every variant and plan, sizes $r, dtypes $dtypes (counters + timing)"
    (cd "$out" && ${limit[@]+"${limit[@]}"} "$bin" measure --backend cuda --dtype "$dtypes" --sizes "$r" \
      --device "$spec" --timeout 2 -o "measure-run$n_run.csv" --per-kernel "measure-run$n_run-kernels.csv") \
      2>"$out/measure-run$n_run.stderr"
  fi
  rc=$?
  # the notes after the run, not through a pipe: the summary greps this file
  cat "$out/measure-run$n_run.stderr"
  cat "$out/measure-run$n_run.stderr" >>"$out/measure.stderr"
  case $rc in
    0) ;;
    124|143) fail "membound measure (sizes $r) stopped at the budget's limit: the rows it measured are kept" ;;
    *) fail "membound measure (sizes $r) exited $rc (1: a row failed its check or to run; the others are kept)" ;;
  esac
  wall=$(( $(date +%s) - now ))
  rows=$(data_rows "$out/measure-run$n_run.csv")
  if [ "$r" = rows ] || [ "$r" = rowsbwd ]; then # the per-element model is the 1-D runs'; this run only reports
    echo "gpu-validate: run $n_run: $rows rows in $wall s (estimated $(estimate_s "$row_elems" "$(run_rows "$r")") s for $(run_rows "$r") rows)"
    merge_all
    continue
  fi
  if [ "$rows_per_size" -eq 0 ] && [ "$rows" -gt 0 ]; then
    rows_per_size=$(( rows / $(tr ',' '\n' <<<"$r" | grep -c .) ))
    [ "$rows_per_size" -lt 1 ] && rows_per_size=1
  fi
  # this run's cost per row beyond the fixed part, over its mean elements
  if [ "$rows" -gt 0 ]; then
    per_elem_s=$(awk -v w="$wall" -v rows="$rows" -v fixed="$row_fixed_s" -v list="$r" -v pe="$per_elem_s" \
      'BEGIN { n = split(list, s, ","); m = 0; for (i = 1; i <= n; i++) m += s[i] / n
               x = (w / rows - fixed) / m; if (x < 0) x = 0; if (x > pe) pe = x; printf "%.6g", pe }')
  fi
  echo "gpu-validate: run $n_run: $rows rows in $wall s (model for the next: $rows_per_size rows a size, ${row_fixed_s} s + ${per_elem_s} s/element a row)"
  merge_all
done
if [ -n "$skipped" ]; then
  echo "gpu-validate: budget of $budget_s s: skipped sizes $skipped (the next run would not have ended in time)"
  status=1
fi

# ---- GPU tests, after the sweep, in what is left (at most 60 s) ------------------
ct_left=$((budget_s > 0 ? budget_s - ($(date +%s) - t0) : 60))
[ "$ct_left" -gt 60 ] && ct_left=60
if [ -f "$build/CTestTestfile.cmake" ] && command -v ctest >/dev/null 2>&1; then
  if [ "$ct_left" -ge 15 ]; then
    step "GPU tests (ctest -R '^cuda_', at most $ct_left s)"
    timeout -s TERM --kill-after=5 "$ct_left" ctest --test-dir "$build" -R '^cuda_' --output-on-failure \
      --timeout "$ct_left" || fail "CUDA tests failed (or stopped at $ct_left s)"
  else
    echo "gpu-validate: GPU tests skipped: $ct_left s left of the budget"
  fi
fi

step "summary"
summary
echo
echo "-- $step_name: $(( $(date +%s) - step_t0 )) s"
echo "gpu-validate: wall time $(( $(date +%s) - t0 )) s; outputs in $out: measure.csv measure-kernels.csv (merged from measure-run*.csv) local-gpu.ini provenance.txt summary.txt gpu-validate.log"
exit $status
