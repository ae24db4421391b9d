#!/usr/bin/env bash
# fuzz.sh — runs the libFuzzer targets: the variant parser (fuzz_parser), the
# device spec loader (fuzz_spec) and the measurement CSV path of `report`
# (fuzz_csv: read, join, fit, verdicts, writers), the import of ncu CSVs and
# PyTorch traces (fuzz_import: read, match, rows), and the JIT's C generator
# (fuzz_jit: random kernels, their source through the compiler with
# -fsyntax-only; a compiler run per input, so it runs for MB_FUZZ_JIT_S
# seconds, default 600, not a run count: scripts/fuzz.sh 0 jit). Inputs up to
# MB_FUZZ_MAX_LEN bytes (default 4096). Address, undefined-
# behaviour and float-cast-overflow sanitizers are on and any UB is fatal (a finding). Prints each
# target's executions and findings, then a summary table.
# usage: scripts/fuzz.sh [RUNS] [TARGET...]   (default 3000000 runs; parser, spec, csv, import)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
MB_EXTRA_DEPS="clang libclang-rt-14-dev" mb_install_deps
runs=${1:-3000000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parser spec csv import) # jit: only when named
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMB_FUZZ=ON \
  -DMB_ENABLE_CUDA=OFF -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
cmake --build build-fuzz -j"$(mb_jobs)" --target "${build_targets[@]}" >/dev/null
corpus=build-fuzz/corpus
mkdir -p "$corpus/parser" "$corpus/spec" "$corpus/csv" "$corpus/jit" "$corpus/import"
# the import's fixtures, each behind the byte that chooses its format and options
for f in tests/data/import/*; do
  case "$f" in *.json) b='\001' ;; *) b='\002' ;; esac
  { printf "$b"; head -c 4000 "$f"; } >"$corpus/import/$(basename "$f")"
done
printf '\002\006\007\000\010\021\002\002\001' >"$corpus/jit/seed.bin"
# the inputs that found undefined behaviour before, kept as seeds: a dim past
# int's range (a float cast overflow) and an ncu count past 2^63 (a sum that wrapped)
printf 'input x [rows, cols]\ny = softmax(x, 2147483648)\n' >"$corpus/parser/dim-past-int.mb"
{ printf '\002'; sed 's/"4,198,400"/"18,446,744,073,709,551,615"/' tests/data/import/ncu_details_sin2_fused.csv; } \
  >"$corpus/import/count-past-2-63.csv"
cp model/variants/*.mb docs/examples/*.mb "$corpus/parser/"
printf '[device]\nname = x\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\nbf16_tflops = 1\nlaunch_overhead_us = 1\nmem_gb = 1\nsource = s\n' \
  >"$corpus/spec/seed.ini"
cp tests/data/*.csv "$corpus/csv/" 2>/dev/null || true
printf 'device,backend,variant,plan,dtype,n,time_s_median,verified,dram_read_bytes,dram_write_bytes\nh100-sxm,cuda,copy,eager,f32,67108864,1e-4,1,268435456,268435456\nh100-sxm,cuda,sin2_plus_cos2,fused,f32,16777216,4e-5,1,,\n' \
  >"$corpus/csv/seed.csv"
summary=""
status=0
for t in "${targets[@]}"; do
  echo "== fuzz_$t: $runs runs"
  log=build-fuzz/fuzz_$t.log
  set +e
  # the JIT runs a compiler per input: a time budget, not a run count
  budget=(-runs="$runs")
  [ "$t" != jit ] || budget=(-max_total_time="${MB_FUZZ_JIT_S:-600}")
  build-fuzz/bin/fuzz_$t "${budget[@]}" -max_len=${MB_FUZZ_MAX_LEN:-4096} -print_final_stats=1 \
    -artifact_prefix=build-fuzz/crash-$t- "$corpus/$t" >"$log" 2>&1
  r=$?
  set -e
  tail -n 12 "$log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  findings=$(find build-fuzz -maxdepth 1 -name "crash-$t-*" | wc -l) # ls of none failed the pipe: set -e ended the run
  [ "$r" -eq 0 ] || status=1
  summary+=$(printf '%-12s %12s execs  exit %d  findings %d' "fuzz_$t" "${execs:-?}" "$r" "$findings")$'\n'
done
echo
echo "== summary (runs asked: $runs per target)"
printf '%s' "$summary"
exit $status
