#!/usr/bin/env bash
# gpu-rehearse.sh — the GPU session rehearsed on a machine without a GPU, as
# far as a CPU lets it go, so the one lease is not spent on a broken script:
#   1. a clean clone of HEAD (uncommitted changes are not in it: commit first);
#   2. the build from the .deb files in .gpu-debs alone (scripts/gpu-debs.sh
#      fetches them when missing): pkg-config sees only the unpacked packages,
#      GSL is left out as on the GPU machine, CUDA for sm_90 only;
#   3. the binary started from an empty environment (env -i): RPATH holds the
#      unpacked packages' folder and no empty entry, the loader resolves
#      libinih and libjansson there, `model` finds its variants;
#   4. tests/gpu_session.sh on that build: the no-GPU stop, the failed
#      calibration that goes on (every step's no-tool path: ncu, torch), a
#      kill mid-step; each time the archive in a stand-in $OUT (<= 8 files);
#   5. the session's budget against the device time of one lease, and the
#      exact `run` call to make.
# usage: scripts/gpu-rehearse.sh [--keep]   (--keep: leave the work folder)
# Exit: 0 every check passed; 1 a check failed.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=0
case "${1:-}" in
  --keep) keep=1 ;;
  -h|--help) sed -n '2,20s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
  "") ;;
  *) echo "gpu-rehearse: error: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/membound-rehearse.XXXXXX")
[ "$keep" = 1 ] || trap 'rm -rf "$tmp"' EXIT
fails=0
check() {
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
t0=$(date +%s)

echo "== 1. clean clone of HEAD ($(git -C "$repo" rev-parse --short HEAD))"
git -C "$repo" diff --quiet HEAD 2>/dev/null ||
  echo "gpu-rehearse: warning: uncommitted changes are not rehearsed (the clone has HEAD only)"
git clone -q --no-hardlinks "$repo" "$tmp/repo" || { echo "gpu-rehearse: error: git clone failed"; exit 1; }
clone=$tmp/repo

echo "== 2. build from .gpu-debs alone"
if [ -d "$repo/.gpu-debs" ] && ls "$repo"/.gpu-debs/*.deb >/dev/null 2>&1; then
  cp -r "$repo/.gpu-debs" "$clone/.gpu-debs"
else
  (cd "$clone" && bash scripts/gpu-debs.sh) || { echo "gpu-rehearse: error: scripts/gpu-debs.sh failed"; exit 1; }
  mkdir -p "$repo/.gpu-debs" && cp "$clone"/.gpu-debs/*.deb "$repo/.gpu-debs/"
fi
build=$tmp/build-gpu
b0=$(date +%s)
TMPDIR=$tmp MB_CMAKE_ARGS="-DCMAKE_DISABLE_FIND_PACKAGE_GSL=ON -DCMAKE_CUDA_ARCHITECTURES=90-real" \
  bash "$clone/scripts/gpu-validate.sh" --debs "$clone/.gpu-debs" --build "$build" "$tmp/validate" >"$tmp/validate.log" 2>&1
r=$?
echo "gpu-validate: exit $r in $(( $(date +%s) - b0 )) s (3: no usable GPU, expected here)"
bin=$build/bin/membound
check "build from the debs: a binary" [ -x "$bin" ]
check "no GPU: gpu-validate exits 3" [ "$r" -eq 3 ]
check "pkg-config saw only the debs (no SLEEF, which they do not carry)" grep -q "SLEEF not found" "$tmp/validate.log"
[ -x "$bin" ] || { tail -n 40 "$tmp/validate.log"; exit 1; }

echo "== 3. the binary from an empty environment"
deb_libdir=$tmp/membound-deps/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
rpath=$(readelf -d "$bin" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')
echo "RPATH: $rpath"
check "RPATH names the unpacked packages' folder" bash -c "echo '$rpath' | tr ':' '\n' | grep -qx '$deb_libdir'"
check "RPATH has no empty entry" bash -c "r='$rpath'; [ -n \"\$r\" ] && [[ \$r != :* && \$r != *: && \$r != *::* ]]"
check "libinih and libjansson resolve in the unpacked folder" \
  bash -c "env -i ldd '$bin' | grep -E 'lib(inih|jansson)' | grep -c '$deb_libdir' | grep -qx 2"
check "env -i membound --version" env -i "$bin" --version
check "env -i membound model copy --n 2^20 --json" bash -c "env -i '$bin' model copy --n 2^20 --json >/dev/null"
check "env -i membound measure --backend cuda: one-line no-GPU error" \
  bash -c "cd '$tmp' && env -i '$bin' measure copy --backend cuda --sizes 2^16 -o x.csv 2>&1 | grep -q 'no usable GPU'"

echo "== 4. the session's failure paths on that build (tests/gpu_session.sh)"
MB_SRC=$clone MB_BIN=$bin bash "$clone/tests/gpu_session.sh" >"$tmp/session-test.log" 2>&1
r=$?
grep -E '^(ok|FAIL)' "$tmp/session-test.log"
check "tests/gpu_session.sh passes on the deb build" [ "$r" -eq 0 ]

echo "== 5. budget"
budget=$(sed -n 's/^total_s=\([0-9]*\)$/\1/p' "$clone/scripts/gpu-session.sh")
timeout_s=$((budget + 60))
echo "session budget ${budget} s; run timeout_s ${timeout_s}; with ~120 s to start a machine one try takes" \
  "<= $((timeout_s + 120)) s of the 900 s lease, leaving $((900 - timeout_s - 120)) s for one rerun"
check "one try leaves room for a rerun (>= 4 min to start another)" [ $((900 - timeout_s - 120)) -ge 240 ]
# the rerun: torch left out, the sizes the validation judges only
rerun_budget=200
rerun_timeout=$((rerun_budget + 60))
echo "rerun: budget ${rerun_budget} s, timeout_s ${rerun_timeout}: with a cold start <= $((rerun_timeout + 120)) s of the" \
  "$((900 - timeout_s - 120)) s left"
check "the rerun fits in what the first try leaves" [ $((rerun_timeout + 120)) -le $((900 - timeout_s - 120)) ]
commit=$(git -C "$repo" rev-parse HEAD)
cat <<EOF

The call to make when a GPU is lent (docs/cuda.md, "On a GPU machine"; .gpu-debs/ filled by scripts/gpu-debs.sh):
  device run: command  = MB_GIT_COMMIT=$commit bash scripts/gpu-session.sh --archive "\$OUT" reports/data/h200
              carry    = [".gpu-debs"]
              timeout_s = ${timeout_s}
the rerun, if the first try failed:
  device run: command  = MB_GIT_COMMIT=$commit bash scripts/gpu-session.sh --skip torch --sizes 2^26,2^28 --budget-s ${rerun_budget} --archive "\$OUT" reports/data/h200
              carry    = [".gpu-debs"]
              timeout_s = ${rerun_timeout}
then here: tar -xzf <files_at>/gpu.tgz -C reports/data/ &&
  build/bin/membound report reports/data/h200/measure.csv reports/data/h200/torch_gpu.csv -o reports/h200
EOF
echo
echo "gpu-rehearse: $(( $(date +%s) - t0 )) s, $fails check(s) failed"
[ "$fails" -eq 0 ]
