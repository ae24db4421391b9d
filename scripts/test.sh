#!/usr/bin/env bash
# test.sh — installs what is missing, builds, runs the whole test suite:
# the normal build (warnings are errors), then an ASan+UBSan build of the C
# code running the same tests. GPU tests exit 77 and are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
MB_EXTRA_DEPS="${MB_EXTRA_DEPS:-} $MB_TEST_DEPS" mb_install_deps
mb_find_cuda
jobs=$(mb_jobs)

echo "== build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMB_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${MB_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== sanitizer build (build-asan/, CPU only)"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMB_SANITIZE=ON -DMB_ENABLE_CUDA=OFF -DMB_WERROR=ON >/dev/null
  cmake --build build-asan -j"$jobs"
  echo "== tests under ASan and UBSan"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
fi
