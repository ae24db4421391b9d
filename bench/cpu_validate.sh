#!/usr/bin/env bash
# cpu_validate.sh — the CPU backend's figures in one run: for each variant,
# calibrate this machine and measure every plan at n = 2^18, 2^20, 2^22 and
# 2^25 (the model's error per row and size: model-error.md, and against the
# model at the host's rates during each row: model-error-at-host.md; how far the
# calibrations moved from one to the next: drift.txt), the bf16 vs f32 copy,
# and the peer benchmark at n = 2^24 against numexpr and PyTorch eager.
# With --rounds K the calibrations and measurements run K times, each round
# into OUTDIR/round-R with the variants in a rotated order, and OUTDIR's
# model-error.md and model-error-at-host.md give each row's median error over
# the rounds with its range: one run on a shared host moves by tens of percent.
# Usage: bench/cpu_validate.sh [--rounds K] OUTDIR [BUILD_DIR]
set -euo pipefail
usage="usage: bench/cpu_validate.sh [--rounds K] OUTDIR [BUILD_DIR]"
rounds=1
if [ "${1:-}" = --rounds ]; then
  rounds=${2:-}
  shift 2 || { echo "$usage" >&2; exit 2; }
fi
case $rounds in ''|*[!0-9]*|0) echo "cpu_validate: --rounds wants a count >= 1 ($usage)" >&2; exit 2 ;; esac
out=${1:?$usage}
build=${2:-build}
B=$build/bin/membound
[ -x "$B" ] || { echo "cpu_validate: no $B (build first: scripts/test.sh)" >&2; exit 2; }
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
log=$out/log.txt
: >"$log"
step() { echo "== $*" | tee -a "$log"; }

# The host drifts (memory bandwidth and op rates by 10-40% over minutes here):
# each variant is measured right after a calibration of its own, so that
# the model's error is not the drift since the first one.
variants=$("$B" model --n 2^10 --csv | awk -F, 'NR > 1 && !seen[$2]++ { print $2 }')
# the model-error tables of the CSVs after $1 into directory $1, each under
# its step line (several runs of a row: its median over them)
error_tables() {
  local d=$1
  shift
  step "the model's error, (model - measured) / measured, each variant against its own calibration"
  /usr/bin/python3 "$here/model_error.py" "$@" >"$d/model-error.md" || true
  tee -a "$log" <"$d/model-error.md"
  step "the same, each row against the model at the host's rates during it (model_host_time_s)"
  /usr/bin/python3 "$here/model_error.py" "$@" --at-host-rates >"$d/model-error-at-host.md" || true
  tee -a "$log" <"$d/model-error-at-host.md"
}
# one round into directory $1, the variants from the $2-th on (rotated)
one_round() {
  local d=$1 skip=$2 order=() cals=() meas=() v first=
  mkdir -p "$d"
  for v in $variants; do order+=("$v"); done
  order=("${order[@]:skip}" "${order[@]:0:skip}")
  step "each variant: calibrate, then every plan at n = 2^18, 2^20, 2^22, 2^25 (into $d)"
  for v in "${order[@]}"; do
    "$B" calibrate -o "$d/local-cpu-$v.ini" >>"$log" 2>&1
    [ -n "$first" ] || { first=$v; cp "$d/local-cpu-$v.ini" "$d/local-cpu.ini"; }
    grep -E '^(source|measured_bandwidth_gbs|cache_mb) ' "$d/local-cpu-$v.ini" | tee -a "$log"
    "$B" measure "$v" --device "$d/local-cpu-$v.ini" --sizes 2^18,2^20,2^22,2^25 -o "$d/all-$v.csv" \
      --per-kernel "$d/all-$v-kernels.csv" 2>>"$log" | tee -a "$log"
  done
  step "calibrate again: how far did the host drift from one calibration to the next?"
  "$B" calibrate -o "$d/local-cpu-after.ini" >>"$log" 2>&1
  for v in "${order[@]}"; do cals+=("$d/local-cpu-$v.ini"); meas+=("$d/all-$v.csv"); done
  awk -F' = ' 'FNR == 1 { f++; name[f] = FILENAME; sub(/.*local-cpu-/, "", name[f]); sub(/\.ini$/, "", name[f]) }
    $1 ~ /^(measured_bandwidth_gbs|read_bandwidth_gbs|host_ref_copy_gbs|host_ref_sin_geps|host_ref_sigmoid_geps|op_sigmoid_geps|op_sin_compiled_geps|op_tanh_compiled_geps)$/ {
      v[f, $1] = $2; k[$1] = 1 }
    END { worst = 0
      for (x in k) { line = sprintf("  %-24s", x)
        for (i = 1; i <= f; i++) {
          line = line sprintf(" %9.3f", v[i, x])
          if (i > 1 && v[i - 1, x] > 0) { r = v[i, x] / v[i - 1, x]; if (r < 1) r = 1 / r; if (r > worst) worst = r }
        }
        print line }
      printf "  (calibrations in order, each before the variant it names:"
      for (i = 1; i <= f; i++) printf " %s", name[i]
      printf ")\n"
      printf "host drift: figures moved by up to %.0f%% from one calibration to the next%s\n",
             100 * (worst - 1), (worst > 1.1 ? " (over 10%: the model errors below carry up to that much)" : "") }' \
    "${cals[@]}" "$d/local-cpu-after.ini" | tee "$d/drift.txt" | tee -a "$log"
  error_tables "$d" "${meas[@]}"
}
if [ "$rounds" -eq 1 ]; then
  one_round "$out" 0
else
  n_variants=$(echo $variants | wc -w)
  all=()
  for r in $(seq 1 "$rounds"); do
    one_round "$out/round-$r" $(((r - 1) % n_variants))
    for v in $variants; do all+=("$out/round-$r/all-$v.csv"); done
  done
  cp "$out/round-1/local-cpu.ini" "$out/local-cpu.ini"
  step "over the $rounds rounds: each row's median error and its range"
  error_tables "$out" "${all[@]}"
fi
step "copy, f32 vs bf16, n = 2^25"
"$B" measure copy --plan eager --dtype f32,bf16 --device "$out/local-cpu.ini" --sizes 2^25 \
  -o "$out/copy-2p25.csv" 2>>"$log" | tee -a "$log"
f32=$(awk -F, '!/^#/ && $3=="copy" && $5=="f32" {print $9}' "$out/copy-2p25.csv")
bf16=$(awk -F, '!/^#/ && $3=="copy" && $5=="bf16" {print $9}' "$out/copy-2p25.csv")
awk -v a="$bf16" -v b="$f32" 'BEGIN { printf "bf16 / f32 copy time: %.3f\n", a / b }' | tee -a "$log"
copy_gbs=$(awk -F' = ' '$1=="measured_bandwidth_gbs" {print $2}' "$out/local-cpu.ini")
awk -F, -v bw="$copy_gbs" '!/^#/ && $3=="copy" && $5=="f32" {
  printf "copy achieved %.1f GB/s = %.0f%% of the calibrated copy bandwidth (%.1f GB/s)\n",
         ($14 + $15) / $9 / 1e9, 100 * ($14 + $15) / $9 / 1e9 / bw, bw }' "$out/copy-2p25.csv" | tee -a "$log"
step "peers, n = 2^24"
if /usr/bin/python3 -c 'import numexpr' 2>/dev/null; then
  /usr/bin/python3 "$here/cpu_peers.py" --bin "$B" | tee "$out/peers.txt" | tee -a "$log"
else
  echo "numexpr not installed (apt-get install python3-numexpr python3-torch): peers skipped" | tee -a "$log"
fi
