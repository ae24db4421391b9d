#!/usr/bin/env bash
# gpu_session.sh — scripts/gpu-session.sh keeps its results however it ends,
# in the shape the device tool brings back (<= 8 files, <= 2 folders down):
#   1. no GPU at all: validate exits 3, the session stops with 3, and the
#      archive, log and summary are there;
#   2. a GPU that nvidia-smi names but CUDA cannot use (a stand-in
#      nvidia-smi): calibrate fails, the sweep goes on against the table's
#      spec, ncu and torch run their no-tool paths, every step is recorded;
#   3. the session killed with SIGKILL mid-step: the archive made before the
#      step and the live log survive.
# Uses the build under test (--no-build); needs no GPU.
set -uo pipefail
src=${MB_SRC:?MB_SRC not set}
bin=${MB_BIN:?MB_BIN not set}
build=$(cd "$(dirname "$bin")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/check_lib.sh"
# the device tool's limits on what comes back from $OUT
out_shape_ok() {
  local n
  n=$(find "$1" -type f | wc -l)
  [ "$n" -ge 1 ] && [ "$n" -le 8 ] && [ -z "$(find "$1" -mindepth 4 -print -quit)" ]
}
# strip nvidia-smi and ncu from PATH, whatever this machine has
clean_path=""
IFS=: read -ra parts <<<"$PATH"
for d in "${parts[@]}"; do
  [ -x "$d/nvidia-smi" ] || [ -x "$d/ncu" ] && continue
  clean_path=${clean_path:+$clean_path:}$d
done

# ---- 1. no GPU -----------------------------------------------------------------
out1=$tmp/out1
PATH=$clean_path bash "$src/scripts/gpu-session.sh" --no-build --build "$build" --archive "$out1" "$tmp/w1/h200" \
  >"$tmp/s1.log" 2>&1
r=$?
check "no GPU: exit 3 (got $r)" [ "$r" -eq 3 ]
check "no GPU: gpu.tgz, session.log, summary.txt" [ -s "$out1/gpu.tgz" -a -s "$out1/session.log" -a -s "$out1/summary.txt" ]
check "no GPU: shape of \$OUT" out_shape_ok "$out1"
check "no GPU: archive holds the environment and provenance" \
  bash -c "tar -tzf '$out1/gpu.tgz' | grep -q '^h200/environment.txt$' && tar -tzf '$out1/gpu.tgz' | grep -q '^h200/provenance.txt$'"
check "no GPU: summary records validate's exit 3" grep -qE '^validate +[0-9]+ 3$' "$out1/summary.txt"
check "no GPU: environment names libcupti" bash -c "tar -xzOf '$out1/gpu.tgz' h200/environment.txt | grep -q '^libcupti: '"

# ---- 2. nvidia-smi names a GPU that CUDA cannot use ---------------------------------
mkdir -p "$tmp/fakebin"
cat >"$tmp/fakebin/nvidia-smi" <<'EOF'
#!/bin/sh
# stand-in: names an H200 for every query, as the real one would
case "$*" in
  *compute_cap*) echo "9.0" ;;
  *) echo "NVIDIA H200" ;;
esac
EOF
chmod +x "$tmp/fakebin/nvidia-smi"
out2=$tmp/out2
PATH=$tmp/fakebin:$clean_path MB_SIZES=2^16,2^26 bash "$src/scripts/gpu-session.sh" --no-build --build "$build" \
  --archive "$out2" "$tmp/w2/h200" >"$tmp/s2.log" 2>&1
r=$?
check "failed calibrate, GPU named: exit 1 (got $r)" [ "$r" -eq 1 ]
check "failed calibrate: shape of \$OUT" out_shape_ok "$out2"
check "failed calibrate: the sweep went on against the table's h200" grep -q "measuring against the table's 'h200'" "$out2/session.log"
check "failed calibrate: every step recorded" bash -c "grep -qE '^validate +[0-9]+ 1$' '$out2/summary.txt' && grep -qE '^ncu +[0-9]+ [0-9]+$' '$out2/summary.txt' && grep -qE '^torch +[0-9]+ [0-9]+$' '$out2/summary.txt'"
check "failed calibrate: fallback device in provenance" bash -c "tar -xzOf '$out2/gpu.tgz' h200/provenance.txt | grep -q '^fallback_device: h200$'"

# ---- 3. killed mid-step ----------------------------------------------------------------
# a validate step that hangs: a stand-in membound whose calibrate sleeps
mkdir -p "$tmp/slow/bin"
cat >"$tmp/slow/bin/membound" <<'EOF'
#!/bin/sh
[ "$1" = calibrate ] && exec sleep 60
exit 1
EOF
chmod +x "$tmp/slow/bin/membound"
out3=$tmp/out3
PATH=$clean_path setsid bash "$src/scripts/gpu-session.sh" --no-build --build "$tmp/slow" --archive "$out3" \
  "$tmp/w3/h200" >"$tmp/s3.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q "calibrate --backend cuda" "$out3/session.log" 2>/dev/null && break
  sleep 0.1
done
kill -KILL -- -"$pid" 2>/dev/null || kill -KILL "$pid"
wait "$pid" 2>/dev/null
check "killed: archive from before the step" [ -s "$out3/gpu.tgz" ]
check "killed: live log up to the step" grep -q "calibrate --backend cuda" "$out3/session.log"
check "killed: no partial archive left" bash -c "! ls '$out3'/gpu.tgz.tmp* >/dev/null 2>&1"
check "killed: shape of \$OUT" out_shape_ok "$out3"

if [ "$fails" -ne 0 ]; then
  echo "--- session 1"; cat "$tmp/s1.log"; echo "--- session 2"; cat "$tmp/s2.log"
fi
check_done
