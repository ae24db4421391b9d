#!/usr/bin/env bash
# gpu_validation.sh — the model against the published GPU validation set
# (bench/validation/, bench/gpu_validate.py): fails when fewer of the 84
# normalization points than the level reached are within 25%
# (GPU_VALIDATION_MIN, a share of them), when the 24 whole-MLP points
# (swiglu, geglu: membound mlp) are not all costed and all within 25%, when a point lacks its
# source, or when points.csv is not what --make-points writes from the
# published file kept beside it.
set -u
B=${MB_BIN:?MB_BIN unset}
S=${MB_SRC:?MB_SRC unset}
MIN=${GPU_VALIDATION_MIN:?GPU_VALIDATION_MIN unset}
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# the level reached: the script's exit 0 at it, its summary line
python3 "$S/bench/gpu_validate.py" --membound "$B" --kernels rms_norm,layer_norm --min-within "$MIN" --figure "$tmp/fig.png" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && ok || bad "gpu_validate.py below $MIN% (rc $rc): $(cat "$tmp/err") $(tail -1 "$tmp/out")"
grep -q "^within 25%: [0-9]* of 84 points" "$tmp/out" && ok || bad "no summary line over 84 points"
grep -q "^| fused forward >64MiB |" "$tmp/out" && ok || bad "no class medians"
grep -q "^| device a100-pcie-80gb | 84 |" "$tmp/out" && ok || bad "no device median"
grep -q "^speedups (eager / fused" "$tmp/out" && ok || bad "no speedup line"
[ -s "$tmp/fig.png" ] && [ "$(head -c 4 "$tmp/fig.png" | tail -c 3)" = PNG ] && ok || bad "no PNG figure"
# every point's row printed, with the side that bounds it
[ "$(grep -c '^| [a-z_]*/[a-z]*/[a-z]*/[0-9]*/' "$tmp/out")" -eq 84 ] && ok || bad "not 84 point rows"
grep -q '| device |$' "$tmp/out" && ok || bad "no point says which side bounds it"
# the Liger points whose kernels hold a row beyond the A100's registers (RMSNorm's
# backward at 32768 columns, LayerNorm's at 16384) say so, and only those
[ "$(grep -c ', spills |$' "$tmp/out")" -eq 3 ] && grep -q '^| rms_norm/liger/backward/32768/.*, spills |$' "$tmp/out" &&
  ok || bad "spilling points: $(grep -c ', spills |$' "$tmp/out"), expected 3"
# the whole set: the MLP points too, each costed by membound mlp (compute-bound
# GEMMs), in classes of their own, and the eager / fused speedups
python3 "$S/bench/gpu_validate.py" --membound "$B" >"$tmp/all" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && ok || bad "the whole set: rc $rc: $(cat "$tmp/err")"
[ "$(grep -c '^| [a-z_]*/[a-z]*/[a-z]*/[0-9]*/' "$tmp/all")" -eq 108 ] && ok || bad "not 108 point rows"
[ "$(grep -c '^| \(swiglu\|geglu\)/.* | compute |$' "$tmp/all")" -eq 24 ] && ok || bad "not 24 compute-bound MLP rows"
grep -q "^| mlp-eager full >64MiB |" "$tmp/all" && grep -q "^| mlp-fused full >64MiB |" "$tmp/all" && ok || bad "no MLP class medians"
grep -q "^within 25%: [0-9]* of 108 points" "$tmp/all" && ok || bad "no summary over 108 points"
# the MLP points at the level reached with the measured large-GEMM rate
# (bf16_gemm_tflops): every one within 25%
python3 "$S/bench/gpu_validate.py" --membound "$B" --kernels swiglu,geglu --min-within 100 --quiet >"$tmp/mlp" 2>"$tmp/err"; rc=$?
[ $rc -eq 0 ] && grep -q "^within 25%: 24 of 24 points" "$tmp/mlp" && ok || bad "MLP points below 100% (rc $rc): $(tail -1 "$tmp/mlp")"
python3 "$S/bench/gpu_validate.py" --membound "$B" --kernels nosuch >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no points of nosuch" "$tmp/err" && ok || bad "--kernels nosuch: rc $rc"
# the check can fail: at 100% it must
python3 "$S/bench/gpu_validate.py" --membound "$B" --kernels rms_norm,layer_norm --min-within 100 --quiet >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q "below 100%" "$tmp/err" && ok || bad "--min-within 100: rc $rc"
python3 "$S/bench/gpu_validate.py" --membound "$B" --no-such-option >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "a bad option: rc $rc, expected 2"
python3 "$S/bench/gpu_validate.py" --membound /nonexistent >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "no binary: rc $rc, expected 2"
# provenance: every point names its repository, file, commit, GPU, date,
# computation and timing; the set is what the published file gives
python3 - "$S/bench/validation/points.csv" <<'PY' && ok || bad "a point without its source"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
need = ["source_repo", "source_file", "source_commit", "gpu", "date", "computation", "timing", "measured_ms"]
sys.exit(0 if len(rows) == 108 and all(r[k] for r in rows for k in need) else 1)
PY
python3 "$S/bench/gpu_validate.py" --make-points "$S/bench/validation/liger-a100-pcie-80gb.csv" -o "$tmp/points.csv" >/dev/null &&
  cmp -s "$tmp/points.csv" "$S/bench/validation/points.csv" && ok || bad "points.csv differs from --make-points"
# a published file without its provenance is refused
cp "$S/bench/validation/liger-a100-pcie-80gb.csv" "$tmp/unknown.csv"
python3 "$S/bench/gpu_validate.py" --make-points "$tmp/unknown.csv" -o "$tmp/u.csv" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no provenance" "$tmp/err" && ok || bad "a file without provenance: rc $rc"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
