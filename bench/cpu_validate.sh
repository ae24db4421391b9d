#!/usr/bin/env bash
# cpu_validate.sh — the CPU backend's figures in one run: calibrate this
# machine, measure every variant and plan at n = 2^18, 2^20, 2^22 and 2^25
# (the model's error per row and size: model-error.md; a second calibration
# after them says how far the host drifted: drift.txt), the bf16 vs f32 copy,
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

step "calibrate"
"$B" calibrate -o "$out/local-cpu.ini" 2>&1 | tee -a "$log"
step "every variant and plan, n = 2^18, 2^20, 2^22, 2^25, model from the calibration"
"$B" measure --device "$out/local-cpu.ini" --sizes 2^18,2^20,2^22,2^25 -o "$out/all.csv" \
  --per-kernel "$out/all-kernels.csv" 2>>"$log" | tee -a "$log"
step "calibrate again: did the host drift during the measurements?"
"$B" calibrate -o "$out/local-cpu-after.ini" >>"$log" 2>&1
awk -F' = ' 'FNR == 1 { f++ }
  $1 ~ /^(measured_bandwidth_gbs|read_bandwidth_gbs|op_sigmoid_geps|op_sin_compiled_geps|op_tanh_compiled_geps)$/ {
    v[f, $1] = $2; k[$1] = 1 }
  END { worst = 0
    for (x in k) if (v[1, x] > 0) { r = v[2, x] / v[1, x]; printf "  %-24s %9.3f -> %9.3f (%+.0f%%)\n", x, v[1, x], v[2, x], 100 * (r - 1)
      if (r < 1) r = 1 / r; if (r > worst) worst = r }
    printf "host drift: figures moved by up to %.0f%% between the calibrations before and after%s\n",
           100 * (worst - 1), (worst > 1.1 ? " (over 10%: the model errors below carry that much)" : "") }' \
  "$out/local-cpu.ini" "$out/local-cpu-after.ini" | tee "$out/drift.txt" | tee -a "$log"
step "the model's error, (model - measured) / measured"
/usr/bin/python3 "$here/model_error.py" "$out/all.csv" >"$out/model-error.md" || true
tee -a "$log" <"$out/model-error.md"
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
