#!/usr/bin/env bash
# cpu_validate.sh — the CPU backend's figures in one run: for each variant,
# calibrate this machine and measure every plan at n = 2^18, 2^20, 2^22 and
# 2^25 (the model's error per row and size: model-error.md, and against the
# model at the host's rates during each row: model-error-at-host.md; how far the
# calibrations moved from one to the next: drift.txt), the bf16 vs f32 copy,
# and the peer benchmark at n = 2^24 against numexpr and PyTorch eager.
# Usage: bench/cpu_validate.sh OUTDIR [BUILD_DIR]
set -euo pipefail
out=${1:?usage: bench/cpu_validate.sh OUTDIR [BUILD_DIR]}
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
step "each variant: calibrate, then every plan at n = 2^18, 2^20, 2^22, 2^25"
variants=$("$B" model --n 2^10 --csv | awk -F, 'NR > 1 && !seen[$2]++ { print $2 }')
first=
for v in $variants; do
  "$B" calibrate -o "$out/local-cpu-$v.ini" >>"$log" 2>&1
  [ -n "$first" ] || { first=$v; cp "$out/local-cpu-$v.ini" "$out/local-cpu.ini"; }
  grep -E '^(source|measured_bandwidth_gbs|cache_mb) ' "$out/local-cpu-$v.ini" | tee -a "$log"
  "$B" measure "$v" --device "$out/local-cpu-$v.ini" --sizes 2^18,2^20,2^22,2^25 -o "$out/all-$v.csv" \
    --per-kernel "$out/all-$v-kernels.csv" 2>>"$log" | tee -a "$log"
done
step "calibrate again: how far did the host drift from one calibration to the next?"
"$B" calibrate -o "$out/local-cpu-after.ini" >>"$log" 2>&1
cals=() meas=()
for v in $variants; do cals+=("$out/local-cpu-$v.ini"); meas+=("$out/all-$v.csv"); done
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
  "${cals[@]}" "$out/local-cpu-after.ini" | tee "$out/drift.txt" | tee -a "$log"
step "the model's error, (model - measured) / measured, each variant against its own calibration"
/usr/bin/python3 "$here/model_error.py" "${meas[@]}" >"$out/model-error.md" || true
tee -a "$log" <"$out/model-error.md"
step "the same, each row against the model at the host's rates during it (model_host_time_s)"
/usr/bin/python3 "$here/model_error.py" "${meas[@]}" --at-host-rates >"$out/model-error-at-host.md" || true
tee -a "$log" <"$out/model-error-at-host.md"
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
