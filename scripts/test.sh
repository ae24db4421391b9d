#!/usr/bin/env bash
# test.sh — installs what is missing, builds, runs the whole test suite: the
# normal build (build/, warnings are errors, CUDA where nvcc is) and an
# ASan+UBSan build of the C code (build-asan/, CPU only) running the same
# tests. GPU tests exit 77 and are reported as skipped.
#
# Two phases, so that the cores do not idle and no timing test shares them:
#   1. side by side: the normal build's tests but the timing ones (ctest -LE
#      timing, -j) while the sanitizer build compiles and then runs its own;
#   2. one at a time, nothing else of ours running: the timing tests (label
#      'timing', tests/CMakeLists.txt: they calibrate, or hold a latency to a
#      bound, or need a quiet CPU), the normal build's, then the sanitizer
#      build's but those labelled 'once' (tests/CMakeLists.txt says which and
#      where the sanitizers see their code instead).
# Every test runs in the normal build. Prints each part's result; exits 1
# naming the parts that failed. MB_SKIP_SANITIZE=1: the normal build only.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
MB_EXTRA_DEPS="${MB_EXTRA_DEPS:-} $MB_TEST_DEPS" mb_install_deps
mb_find_cuda
jobs=$(mb_jobs)
sanitize=1
[ "${MB_SKIP_SANITIZE:-0}" = 1 ] && sanitize=0
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 # read by the sanitizer build only

failed=()
# part NAME CMD...: runs CMD; a failure is recorded under NAME, and the rest goes on
part() {
  local name=$1 t0=$SECONDS
  shift
  if "$@"; then
    echo "-- $name: ok ($((SECONDS - t0)) s)"
  else
    echo "-- $name: FAILED ($((SECONDS - t0)) s)"
    failed+=("$name")
  fi
}
# tests BUILD KIND ARGS...: ctest in BUILD, each test's output kept whole in
# BUILD/Testing/junit-KIND.xml (bench/suite_checks.py counts the checks there;
# LastTest.log is no record: gpu_session_archive runs a ctest of its own there)
tests() {
  local b=$1 kind=$2
  shift 2
  mkdir -p "$b/Testing"
  ctest --test-dir "$b" --output-on-failure --output-junit "$PWD/$b/Testing/junit-$kind.xml" \
    --test-output-size-passed 1048576 --test-output-truncation middle "$@"
}
# the sanitizer build, compiled and tested beside the normal build's tests
# (its own process group, so that an interrupted run stops it too)
asan_untimed() {
  local t0=$SECONDS rc=0
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DMB_SANITIZE=ON -DMB_ENABLE_CUDA=OFF -DMB_WERROR=ON \
    >/dev/null || return 10
  cmake --build build-asan -j"$jobs" || return 10
  echo "-- sanitizer build: $((SECONDS - t0)) s"
  echo "== tests under ASan and UBSan, but the timing ones"
  t0=$SECONDS
  tests build-asan untimed -j"$jobs" -LE timing || rc=20
  echo "-- (its tests: $((SECONDS - t0)) s)"
  return $rc
}

echo "== build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMB_WERROR=ON >/dev/null
if ! cmake --build build -j"$jobs"; then
  echo "-- normal build: FAILED (no test ran)"
  exit 1
fi

asan_pid="" asan_log=""
if [ "$sanitize" = 1 ]; then
  asan_log=$(mktemp /tmp/mb-test-asan.XXXXXX)
  set -m # the background part in a process group of its own
  asan_untimed >"$asan_log" 2>&1 &
  asan_pid=$!
  set +m
  trap '[ -n "$asan_pid" ] && kill -- -"$asan_pid" 2>/dev/null; rm -f "$asan_log"' EXIT
  echo "== sanitizer build (build-asan/): compiling and testing beside the tests below; its output follows theirs"
fi

echo "== tests (build/), but the timing ones"
part "normal build, tests but the timing ones" tests build untimed -j"$jobs" -LE timing

if [ -n "$asan_pid" ]; then
  rc=0
  wait "$asan_pid" || rc=$?
  asan_pid=""
  echo "== sanitizer build (build-asan/, CPU only) and its tests but the timing ones, as they ran beside the above"
  cat "$asan_log"
  case $rc in
    0) echo "-- sanitizer build, tests but the timing ones: ok" ;;
    10) echo "-- sanitizer build: FAILED (none of its tests ran)"; failed+=("sanitizer build"); sanitize=0 ;;
    *) echo "-- sanitizer build, tests but the timing ones: FAILED"; failed+=("sanitizer build, tests but the timing ones") ;;
  esac
fi

echo "== timing tests, one at a time (build/)"
part "normal build, timing tests" tests build timing -L timing
if [ "$sanitize" = 1 ]; then
  echo "== timing tests under ASan and UBSan, one at a time (but those labelled 'once')"
  part "sanitizer build, timing tests" tests build-asan timing -L timing -LE once
fi

if [ ${#failed[@]} -ne 0 ]; then
  printf 'membound: test.sh: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "== all parts passed"
