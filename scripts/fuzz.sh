#!/usr/bin/env bash
# fuzz.sh — runs the libFuzzer targets for the variant parser and the spec
# loader. Usage: scripts/fuzz.sh [RUNS]   (default 2000000 per target)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
MB_EXTRA_DEPS="clang libclang-rt-14-dev" mb_install_deps
runs=${1:-2000000}
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DMB_FUZZ=ON \
  -DMB_ENABLE_CUDA=OFF -DMB_MODULES= -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(mb_jobs)" --target fuzz_parser fuzz_spec >/dev/null
corpus=build-fuzz/corpus
mkdir -p "$corpus/parser" "$corpus/spec"
cp model/variants/*.mb "$corpus/parser/"
build/bin/membound devices >/dev/null 2>&1 || true
printf '[device]\nname = x\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\nbf16_tflops = 1\nlaunch_overhead_us = 1\nmem_gb = 1\nsource = s\n' \
  >"$corpus/spec/seed.ini"
for t in parser spec; do
  echo "== fuzz_$t: $runs runs"
  build-fuzz/bin/fuzz_$t -runs="$runs" -max_len=${MB_FUZZ_MAX_LEN:-1024} -print_final_stats=1 "$corpus/$t" 2>&1 | tail -n 12
done
