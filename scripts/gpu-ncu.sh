#!/usr/bin/env bash
# gpu-ncu.sh — our CUPTI DRAM byte counts against Nsight Compute's, kernel by
# kernel, for the lecture's variants at one size (default n = 2^26, f32), on a
# machine with an NVIDIA GPU and ncu. Runs the same membound binary twice:
#   1. membound measure with our counters (CUPTI range profiler), with
#      MB_CUPTI_KERNEL_CLEAN=1: each kernel's auto range starts from a clean
#      L2 (flush + read sweep before it), the cache state ncu's
#      --cache-control all gives every kernel (without it our per-kernel
#      ranges run in the plan's natural cache state, where a kernel reads
#      what its predecessor left in L2 and writes back its dirty lines: not
#      comparable kernel by kernel);
#   2. under ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum
#      --cache-control all --clock-control none, with MB_CUDA_ONCE=1 (each plan
#      runs once) and MB_CUPTI=0 (ncu owns the counters), profiling only the
#      plans' kernels;
# one variant at a time (the headline sin2_plus_cos2 first), joining after
# each launch by launch into VARIANT/ncu-vs-ours.csv, so a step stopped at its
# time limit keeps every variant it finished; then ncu-vs-ours.csv holds all
# of them, ncu-summary.txt the largest difference, the plan totals (sum over
# each plan's kernels, both sides) and the wall times. Writes into OUTDIR
# (the raw ncu CSV and logs of each variant in OUTDIR/VARIANT/).
#
# usage: scripts/gpu-ncu.sh [options] OUTDIR
#   --build DIR     build folder holding bin/membound (default: $MB_BUILD_DIR
#                   or <repo>/build-gpu, as scripts/gpu-validate.sh leaves it)
#   --n N           size (default 2^26)
#   --dtype T       default f32
#   --device SPEC   model device for the CSVs (default OUTDIR/local-gpu.ini
#                   when present, else h100-sxm)
#   --join-only     only join the files already in OUTDIR
#   -h, --help      this text
# Exit: 0 done; 1 a step failed; 2 bad usage; 3 no ncu or no usable GPU.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MB_BUILD_DIR:-$repo/build-gpu}
n=2^26
dtype=f32
device=""
join_only=0
out=""
variants=(sin2_plus_cos2 copy gelu_tanh sigmoid3)

usage() { sed -n '2,32s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --build|--n|--dtype|--device)
      [ $# -ge 2 ] || { echo "gpu-ncu: error: $1 needs a value" >&2; exit 2; }
      case "$1" in --build) build=$2 ;; --n) n=$2 ;; --dtype) dtype=$2 ;; --device) device=$2 ;; esac
      shift 2 ;;
    --join-only) join_only=1; shift ;;
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

# ---- join: ncu's launches against our per-kernel counts ------------------------
# ncu-raw.csv: ncu --csv --page raw (one row per profiled launch, in launch
# order); ncu-run-kernels.csv: the per-kernel rows of the profiled run (same
# order: one launch per plan kernel); ours-kernels.csv: our counted run.
read -r -d '' join_awk <<'AWK'
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
function num(v) { gsub(/[, ]/, "", v); return v + 0 }
function abs(x) { return x < 0 ? -x : x }
FNR == 1 { file++; hdr = 0 }
file == 1 {                                   # ncu raw CSV
  if (!hdr) { if ($0 ~ /^"ID"/) { hdr = 1; split_csv($0, h); for (i in h) nc[h[i]] = i }; next }
  if ($0 !~ /^"/) next                        # ==PROF== lines
  split_csv($0, f)
  if (f[nc["dram__bytes_read.sum"]] !~ /[0-9]/) next   # the units row
  nn++; nr[nn] = num(f[nc["dram__bytes_read.sum"]]); nw[nn] = num(f[nc["dram__bytes_write.sum"]])
  nname[nn] = f[nc["Kernel Name"]]
  next
}
/^#/ { next }
!hdr { hdr = 1; split_csv($0, h); for (i in h) col[file, h[i]] = i; next }
{
  split_csv($0, f)
  g = f[col[file, "variant"]] SUBSEP f[col[file, "plan"]] SUBSEP f[col[file, "dtype"]] SUBSEP f[col[file, "n"]]
  idx[file, g]++
  key = g SUBSEP idx[file, g]
  if (file == 2) { pn++; pkey[pn] = key; pk[pn] = f[col[file, "kernel"]] }
  else { our_r[key] = f[col[file, "dram_read_bytes"]]; our_w[key] = f[col[file, "dram_write_bytes"]] }
}
END {
  if (nn != pn) printf "gpu-ncu: warning: %d ncu launches, %d plan kernels: pairing in order\n", nn, pn > "/dev/stderr"
  print "variant,plan,dtype,n,kernel,ncu_kernel,ncu_read_bytes,ncu_write_bytes,ours_read_bytes,ours_write_bytes,diff_pct" > outfile
  m = nn < pn ? nn : pn
  for (i = 1; i <= m; i++) {
    split(pkey[i], k, SUBSEP)
    orr = our_r[pkey[i]]; ow = our_w[pkey[i]]
    tot = nr[i] + nw[i]
    d = (orr == "" || tot == 0) ? "" : sprintf("%.3f", 100 * (orr + ow - tot) / tot)
    if (d != "") { cnt++; if (abs(d + 0) > worst) worst = abs(d + 0); if (abs(d + 0) > 1) off++ }
    name = nname[i]; gsub(/"/, "", name); sub(/\(.*/, "", name)
    printf "%s,%s,%s,%s,%s,\"%s\",%.0f,%.0f,%s,%s,%s\n", k[1], k[2], k[3], k[4], pk[i], name, nr[i], nw[i], orr, ow, d > outfile
    printf "%-15s %-9s %-14s ncu %12.4g %12.4g  ours %12s %12s  %s%%\n", k[1], k[2], pk[i], nr[i], nw[i], orr, ow, (d == "" ? "-" : d)
    # plan totals: the sum over the plan's kernels on both sides
    pg = k[1] SUBSEP k[2] SUBSEP k[3] SUBSEP k[4]
    if (!(pg in pt_ncu)) porder[++np] = pg
    pt_ncu[pg] += tot
    if (orr == "" || pg in pt_missing) pt_missing[pg] = 1
    else pt_ours[pg] += orr + ow
  }
  printf "kernels compared: %d; |ours - ncu| > 1%%: %d; worst %.3f%%\n", cnt + 0, off + 0, worst
  print "plan totals (sum over the plan's kernels, read + write):"
  for (j = 1; j <= np; j++) {
    split(porder[j], k, SUBSEP)
    if (porder[j] in pt_missing || pt_ncu[porder[j]] == 0) { printf "  %-15s %-9s ncu %12.4g  ours -\n", k[1], k[2], pt_ncu[porder[j]]; continue }
    d = 100 * (pt_ours[porder[j]] - pt_ncu[porder[j]]) / pt_ncu[porder[j]]
    printf "  %-15s %-9s ncu %12.4g  ours %12.4g  %+.3f%%\n", k[1], k[2], pt_ncu[porder[j]], pt_ours[porder[j]], d
  }
}
AWK

# join_dir DIR: one variant's files in DIR into DIR/ncu-vs-ours.csv and
# DIR/ncu-summary.txt
join_dir() {
  local d=$1 f
  for f in ncu-raw.csv ncu-run-kernels.csv ours-kernels.csv; do
    [ -s "$d/$f" ] || { echo "gpu-ncu: error: $d/$f is missing or empty"; status=1; return 1; }
  done
  awk -v outfile="$d/ncu-vs-ours.csv" "$join_awk" "$d/ncu-raw.csv" "$d/ncu-run-kernels.csv" "$d/ours-kernels.csv" \
    >"$d/ncu-summary.txt"
  cat "$d/ncu-summary.txt"
}
# combine: every joined variant into OUTDIR/ncu-vs-ours.csv, their summaries
# and the largest difference over all into OUTDIR/ncu-summary.txt
combine() {
  local v first=1
  : >"$out/ncu-vs-ours.csv.tmp"
  : >"$out/ncu-summary.txt.tmp"
  for v in "${variants[@]}"; do
    [ -s "$out/$v/ncu-vs-ours.csv" ] || continue
    if [ $first = 1 ]; then head -n1 "$out/$v/ncu-vs-ours.csv" >>"$out/ncu-vs-ours.csv.tmp"; first=0; fi
    tail -n +2 "$out/$v/ncu-vs-ours.csv" >>"$out/ncu-vs-ours.csv.tmp"
    { echo "== $v"; cat "$out/$v/ncu-summary.txt"; [ -s "$out/$v/wall.txt" ] && cat "$out/$v/wall.txt"; } \
      >>"$out/ncu-summary.txt.tmp"
  done
  awk -F, 'NR > 1 && $11 != "" { n++; d = $11 < 0 ? -$11 : $11; if (d > w) w = d; if (d > 1) off++ }
           END { printf "all variants: kernels compared: %d; |ours - ncu| > 1%%: %d; worst %.3f%%\n", n, off, w }' \
    "$out/ncu-vs-ours.csv.tmp" >>"$out/ncu-summary.txt.tmp"
  mv -f "$out/ncu-vs-ours.csv.tmp" "$out/ncu-vs-ours.csv"
  mv -f "$out/ncu-summary.txt.tmp" "$out/ncu-summary.txt"
}

if [ "$join_only" = 1 ]; then
  for v in "${variants[@]}"; do [ -d "$out/$v" ] && join_dir "$out/$v"; done
  combine
  tail -n1 "$out/ncu-summary.txt"
  exit $status
fi

# ---- tools ------------------------------------------------------------------
ncu=$(command -v ncu 2>/dev/null || true)
if [ -z "$ncu" ]; then
  for c in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu /usr/local/NVIDIA-Nsight-Compute*/ncu; do
    [ -x "$c" ] && ncu=$c
  done
fi
[ -n "$ncu" ] || { echo "gpu-ncu: ncu (Nsight Compute) not found: nothing compared"; exit 3; }
bin=$build/bin/membound
[ -x "$bin" ] || { echo "gpu-ncu: error: no binary at $bin (run scripts/gpu-validate.sh first, or --build DIR)"; exit 1; }
export MEMBOUND_VARIANTS=${MEMBOUND_VARIANTS:-$build/share/membound/variants}
[ -d "$MEMBOUND_VARIANTS" ] || export MEMBOUND_VARIANTS=$repo/model/variants
if [ -z "$device" ]; then
  if [ -f "$out/local-gpu.ini" ]; then device=$out/local-gpu.ini; else device=h100-sxm; fi
fi
echo "ncu: $("$ncu" --version 2>/dev/null | tail -n1)" | tee "$out/ncu-provenance.txt"
echo "membound: $bin, n=$n dtype=$dtype variants: ${variants[*]}" | tee -a "$out/ncu-provenance.txt"

# ---- per variant: our counters, then the same binary under ncu, then the join --
secs() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }'; }
for v in "${variants[@]}"; do
  d=$out/$v
  mkdir -p "$d"
  echo "== $v: our counters (CUPTI)"
  t=$(date +%s%N)
  MB_CUPTI_KERNEL_CLEAN=1 "$bin" measure "$v" --backend cuda --dtype "$dtype" --sizes "$n" \
    --device "$device" --timeout 2 -o "$d/ours.csv" --per-kernel "$d/ours-kernels.csv" >"$d/ours.log" 2>&1
  rc=$?
  t_ours=$(secs "$t")
  tail -n 3 "$d/ours.log"
  if [ "$rc" -ne 0 ]; then
    if grep -q "no usable GPU\|no usable NVIDIA driver\|no CUDA device" "$d/ours.log"; then
      echo "gpu-ncu: no usable GPU: nothing compared"
      exit 3
    fi
    echo "gpu-ncu: error: membound measure $v exited $rc"
    status=1
  fi
  grep -q ",cupti," "$d/ours.csv" 2>/dev/null || echo "gpu-ncu: warning: $v: our rows carry no trusted counts (see $v/ours.log)"

  echo "== $v: ncu"
  t=$(date +%s%N)
  MB_CUDA_ONCE=1 MB_CUPTI=0 "$ncu" --metrics dram__bytes_read.sum,dram__bytes_write.sum \
    --cache-control all --clock-control none \
    --kernel-name regex:'op_kernel|eval_kernel|hand_kernel|copy_kernel' \
    --csv --page raw --print-units base --log-file "$d/ncu-raw.csv" \
    "$bin" measure "$v" --backend cuda --dtype "$dtype" --sizes "$n" --device "$device" \
    -o "$d/ncu-run.csv" --per-kernel "$d/ncu-run-kernels.csv" >"$d/ncu.log" 2>&1
  rc=$?
  t_ncu=$(secs "$t")
  tail -n 3 "$d/ncu.log"
  [ "$rc" -eq 0 ] || { echo "gpu-ncu: error: ncu run of $v exited $rc (see $v/ncu.log)"; status=1; }
  {
    echo "wall_s_ours_measure_with_counters: $t_ours"
    echo "wall_s_ncu_one_run_per_plan: $t_ncu"
    grep -h "^# counter_collection_s" "$d/ours.csv" 2>/dev/null | sed 's/^# //'
  } >"$d/wall.txt"

  echo "== $v: ours against ncu, kernel by kernel (both from a clean L2 before each kernel), then plan totals"
  join_dir "$d"
  cat "$d/wall.txt"
  combine
done
tail -n1 "$out/ncu-summary.txt"
exit $status
