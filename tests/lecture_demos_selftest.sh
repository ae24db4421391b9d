#!/usr/bin/env bash
# lecture_demos_selftest.sh — bench/lecture_demos.py's profile mode against
# tests/torch_fake (no PyTorch, no GPU): every (variant, plan, n, dtype) in
# one range named membound:VARIANT:PLAN:n=N:DTYPE (NVTX on cuda, pushed and
# popped around the timed calls), plans a variant lacks skipped in one line;
# bad usage exits 2; bench/torch_env.py's choice of NVIDIA wheels from ldd's
# missing libraries; cpu_peers.py's argument checks. Downloads nothing
# (MB_TORCH_SYSTEM=1: never the bench venv).
set -u
SRC=${MB_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "python3 missing: skipped"; exit 77; }
export PYTHONDONTWRITEBYTECODE=1 MB_TORCH_SYSTEM=1
L=$SRC/bench/lecture_demos.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

"$PY" "$L" --help >/dev/null && ok || bad "--help"
for args in "profile" "profile --device tpu" "profile --device cpu --variants nope" \
            "profile --device cpu --plans fast" "profile --device cpu --dtype f64" \
            "profile --device cpu --sizes 2^x" "profile --device cpu --iters 0"; do
  "$PY" "$L" $args >/dev/null 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] && ok || bad "'$args': exit $rc, want 2: $(tail -1 "$tmp/err")"
done

# profile on the stand-in: cuda (NVTX ranges logged) and cpu
for dev in cuda cpu; do
  rm -f "$tmp/nvtx"
  FAKE_TORCH_NVTX_LOG=$tmp/nvtx PYTHONPATH=$SRC/tests/torch_fake "$PY" "$L" profile --device $dev \
    --sizes 2^10,2^11 --dtype f32,bf16 --plans eager,fused,store,recompute --warmup 1 --iters 2 \
    >"$tmp/out" 2>"$tmp/err" || { bad "$dev profile failed: $(tail -3 "$tmp/err")"; continue; }
  want=""
  for v in "copy eager" "sin2_plus_cos2 eager fused" "gelu_tanh eager fused" "sigmoid3 eager store recompute"; do
    set -- $v; name=$1; shift
    for d in f32 bf16; do for n in 1024 2048; do for p in "$@"; do
      want+="membound:$name:$p:n=$n:$d"$'\n'
    done; done; done
  done
  got=$(sed 's/ [0-9.]* ms$//' "$tmp/out")
  [ "$got"$'\n' = "$want" ] && ok || bad "$dev ranges: $(diff <(printf '%s' "$want") <(printf '%s\n' "$got") | head -5)"
  [ "$(grep -cvE '^membound:[a-z0-9_]+:[a-z]+:n=[0-9]+:(f32|bf16) [0-9]+\.[0-9]{4} ms$' "$tmp/out")" -eq 0 ] \
    && ok || bad "$dev line format: $(head -2 "$tmp/out")"
  [ "$(grep -c 'has no plan' "$tmp/err")" -eq 4 ] && grep -q "copy has no plan fused, store, recompute here: skipped" "$tmp/err" \
    && ok || bad "$dev skip lines: $(grep 'has no plan' "$tmp/err")"
  if [ $dev = cuda ]; then
    [ "$(grep -c '^push ' "$tmp/nvtx")" -eq 32 ] && [ "$(grep -c '^pop$' "$tmp/nvtx")" -eq 32 ] && ok || bad "nvtx pushes/pops"
    [ "$(sed -n 's/^push //p' "$tmp/nvtx")" = "$(printf '%s' "$want")" ] && ok || bad "nvtx names differ from the printed ones"
  else
    [ ! -e "$tmp/nvtx" ] && ok || bad "cpu pushed NVTX ranges"
  fi
done

# torch_env: the NVIDIA wheels for the libraries ldd could not find, at torch's pins
"$PY" - "$SRC/bench" <<'EOF' 2>"$tmp/err" && ok || bad "torch_env: $(tail -3 "$tmp/err")"
import sys
sys.path.insert(0, sys.argv[1])
import torch_env as t
nv = {"nvidia-nccl-cu13": "nvidia-nccl-cu13==2.30.7", "nvidia-cusparselt-cu13": "nvidia-cusparselt-cu13==0.8.1",
      "cuda-toolkit": "cuda-toolkit[cublas,cudart,cufile]==13.2.2", "nvidia-cudnn-cu13": "nvidia-cudnn-cu13==9.26.0.51"}
reqs, tk, unknown = t.nvidia_wanted({"libcufile", "libcusparseLt", "libcuda", "libfoo"}, nv)
assert reqs == ["nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.30.7"], reqs
assert tk == "cuda-toolkit[cufile]==13.2.2", tk
assert unknown == ["libfoo"], unknown
reqs, tk, unknown = t.nvidia_wanted(set(), nv)
assert reqs == ["nvidia-nccl-cu13==2.30.7"] and tk == "" and unknown == [], (reqs, tk)
assert t.venv_dir("/x/build") == "/x/build/bench-venv"
t.ensure("/nonexistent.py", [])  # MB_TORCH_SYSTEM=1: returns, makes nothing
EOF

# not required (torch_gpu.py): without a venv it goes on, and makes none
env -u MB_TORCH_SYSTEM MB_BUILD="$tmp/b" "$PY" -c "import sys; sys.path.insert(0, '$SRC/bench'); import torch_env; \
torch_env.ensure('/nonexistent.py', [], required=False); print('returned')" >"$tmp/out" 2>"$tmp/err"
grep -qx returned "$tmp/out" && grep -q "going on with" "$tmp/err" && [ ! -e "$tmp/b" ] && ok \
  || bad "ensure(required=False) without a venv: $(cat "$tmp/out" "$tmp/err" | tail -3)"

# cpu_peers.py: bad arguments exit 2 before any PyTorch is needed
P=$SRC/bench/cpu_peers.py
"$PY" "$P" --help >/dev/null && ok || bad "cpu_peers --help"
for args in "--reps 3" "--variants nope" "--n 2^x" "--bin /nonexistent" "--threads 0"; do
  "$PY" "$P" --bin "${MB_BIN:-/bin/true}" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] && ok || bad "cpu_peers '$args': exit $rc, want 2"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
