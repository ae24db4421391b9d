#!/usr/bin/env bash
# gpu_scripts.sh — the GPU session's scripts where a CPU can check them:
#   1. scripts/gpu-pack.sh: a file that grows while it is packed (the archive
#      is still made and valid), two packs at once (each through its own
#      temporary name: both valid, none left behind), a file over 8 MiB left
#      out and named, a pack stopped by SIGTERM (its tar stops too, no
#      temporary file stays);
#   2. scripts/gpu-validate.sh's sweep against a stand-in membound: 2^28
#      first, then 2^26, then the row variants at their two shapes, then
#      their backward variants in a run of their own, then the small sizes
#      together; with a short budget the small sizes are the ones skipped,
#      estimated from rows x size; --row-shapes none, --row-bwd none, a bad
#      shape and a bad --row-bwd list;
#   3. its summary judges counted bytes by measure's count_check column.
# Needs no GPU.
set -uo pipefail
src=${MB_SRC:?MB_SRC not set}
tmp=$(mktemp -d)
writer=""
trap '[ -n "$writer" ] && kill "$writer" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$src/tests/check_lib.sh"
pack=$src/scripts/gpu-pack.sh

# ---- 1. the archive -------------------------------------------------------------
w=$tmp/work/h200
mkdir -p "$w" "$tmp/out"
head -c 3000000 /dev/urandom >"$w/a.bin"
# a log that grows all the time the packs run
( while :; do head -c 65536 /dev/urandom | base64 >>"$w/growing.log"; sleep 0.01; done ) &
writer=$!
sleep 0.2
bash "$pack" "$w" "$tmp/out"
r=$?
check "pack while a file grows: exit 0 (got $r)" [ "$r" -eq 0 ]
check "pack while a file grows: a valid archive holding it" \
  bash -c "tar -tzf '$tmp/out/gpu.tgz' | grep -q '^h200/growing.log$'"
# two at once, each with its own temporary name
bash "$pack" "$w" "$tmp/out" & p1=$!
bash "$pack" "$w" "$tmp/out" & p2=$!
wait "$p1"; r1=$?
wait "$p2"; r2=$?
check "two packs at once: both exit 0 ($r1, $r2)" [ "$r1" -eq 0 -a "$r2" -eq 0 ]
check "two packs at once: the archive is valid" bash -c "tar -tzf '$tmp/out/gpu.tgz' >/dev/null"
kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null; writer=""
check "no temporary file left" [ -z "$(ls "$tmp/out" | grep -v '^gpu.tgz$')" ]
# a file over 8 MiB: left out, named in pack-skipped.txt (packed)
head -c 9000000 /dev/zero >"$w/huge.log"
bash "$pack" "$w" "$tmp/out"
check "a 9 MB file is left out" bash -c "! tar -tzf '$tmp/out/gpu.tgz' | grep -q huge.log"
check "and named in pack-skipped.txt" bash -c "tar -xzOf '$tmp/out/gpu.tgz' h200/pack-skipped.txt | grep -q 'h200/huge.log'"
check "every file back is under 16 MiB" [ -z "$(find "$tmp/out" -type f -size +16383k)" ]
rm -f "$w/huge.log"
# SIGTERM mid-pack: its tar stops, its temporary file goes, the old archive stays
for i in 1 2 3 4 5 6; do head -c 7000000 /dev/urandom >"$w/r$i.bin"; done
before=$(md5sum <"$tmp/out/gpu.tgz")
bash "$pack" "$w" "$tmp/out" & p=$!
for _ in $(seq 50); do ls "$tmp/out"/gpu.tgz.tmp.* >/dev/null 2>&1 && break; sleep 0.02; done
kill -TERM "$p"
wait "$p"
sleep 0.3
check "SIGTERM: no tar left writing" bash -c "! pgrep -f 'tar.*gpu[.]tgz[.]tmp' >/dev/null"
check "SIGTERM: no temporary file left" bash -c "! ls '$tmp/out'/gpu.tgz.tmp.* >/dev/null 2>&1"
check "SIGTERM: the previous archive kept" [ "$(md5sum <"$tmp/out/gpu.tgz")" = "$before" ]
rm -f "$w"/r*.bin

# ---- 2. the sweep's order and budget, against a stand-in membound ------------------
mkdir -p "$tmp/fake/bin"
cat >"$tmp/fake/bin/membound" <<'EOF'
#!/bin/bash
# stand-in: calibrate fails (so the table's spec is used), devices lists h200,
# model lists 10 rows, measure writes two rows per size (or shape) and dtype
# and logs its sizes ("shape S" for --shape), taking 1 s
case "$1" in
  --version) echo "membound stand-in" ;;
  devices) echo "h200 NVIDIA H200" ;;
  calibrate) exit 1 ;;
  model) echo "variant,plan"; for i in 1 2 3 4 5 6 7 8 9 10; do echo "softmax,fused"; done ;;
  measure)
    shift
    sizes="" shape="" vars=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --backend|--device|--timeout) shift ;;
        [a-z]*) vars="$vars $1" ;;
        /*) vars="$vars $(basename "$1")" ;;
        --sizes) sizes=$2; shift ;;
        --shape) shape=$2; shift ;;
        --dtype) dtypes=$2; shift ;;
        -o) out=$2; shift ;;
        --per-kernel) kout=$2; shift ;;
      esac
      shift
    done
    if [ -n "$shape" ]; then echo "shape $shape" >>"$FAKE_LOG"; echo "${vars# }" >>"$FAKE_LOG.variants"
    else echo "$sizes" >>"$FAKE_LOG"; fi
    sleep 1
    {
      echo "device,backend,variant,plan,dtype,n,verified,shape"
      for n in ${sizes//,/ }; do for d in ${dtypes//,/ }; do
        echo "h200,cuda,copy,eager,$d,$n,1,"; echo "h200,cuda,copy,fused,$d,$n,1,"
      done; done
      for sh in ${shape//,/ }; do for d in ${dtypes//,/ }; do
        echo "h200,cuda,softmax,eager,$d,$(( ${sh%%x*} * ${sh#*x} )),1,$sh"; echo "h200,cuda,softmax,fused,$d,$(( ${sh%%x*} * ${sh#*x} )),1,$sh"
      done; done
    } >"$out"
    cp "$out" "$kout" ;;
esac
EOF
chmod +x "$tmp/fake/bin/membound"
mkdir -p "$tmp/fakesmi"
printf '#!/bin/sh\necho "NVIDIA H200"\n' >"$tmp/fakesmi/nvidia-smi"
chmod +x "$tmp/fakesmi/nvidia-smi"
FAKE_LOG=$tmp/sizes.log PATH=$tmp/fakesmi:$PATH bash "$src/scripts/gpu-validate.sh" --no-build --build "$tmp/fake" \
  --sizes 2^16..2^28:2 --budget-s 8 "$tmp/v" >"$tmp/v.log" 2>&1
check "sweep: 2^28, then 2^26 first" \
  bash -c "[ \"\$(head -n2 '$tmp/sizes.log' | tr '\n' ' ')\" = '268435456 67108864 ' ]"
check "sweep: the small sizes skipped by the estimate, named" \
  grep -Eq "skipped sizes (rows,)?(rowsbwd,)?65536,262144,1048576,4194304,16777216" "$tmp/v.log"
check "sweep: measure.csv merges the runs it made" \
  bash -c "[ \"\$(grep -c ',cuda,copy,' '$tmp/v/measure.csv')\" -eq 8 ]"
: >"$tmp/sizes.log"
: >"$tmp/sizes.log.variants"
FAKE_LOG=$tmp/sizes.log PATH=$tmp/fakesmi:$PATH bash "$src/scripts/gpu-validate.sh" --no-build --build "$tmp/fake" \
  --sizes 2^16..2^28:2 --budget-s 60 "$tmp/v2" >"$tmp/v2.log" 2>&1
check "sweep, enough budget: the small sizes last, in one run" \
  bash -c "[ \"\$(tail -n1 '$tmp/sizes.log')\" = '65536,262144,1048576,4194304,16777216' ]"
check "sweep: the row variants after 2^26, at both shapes, before the small sizes" \
  bash -c "[ \"\$(sed -n 3p '$tmp/sizes.log')\" = 'shape 65536x1024,512x262144' ]"
check "sweep: the backward row variants (and two with colsum partial) in a run of their own after the forward ones, at both shapes" \
  bash -c "[ \"\$(sed -n 4p '$tmp/sizes.log')\" = 'shape 65536x1024,512x262144' ] &&
           [ \"\$(cat '$tmp/sizes.log.variants')\" = 'softmax softmax_op layernorm rmsnorm
softmax_bwd layernorm_bwd rmsnorm_bwd layernorm_affine_bwd rmsnorm_affine_bwd layernorm_affine_partial.mb rmsnorm_affine_partial.mb' ] &&
           grep -q '^colsum partial\$' '$tmp/v2/rmsnorm_affine_partial.mb' && grep -q '^name rmsnorm_affine_partial\$' '$tmp/v2/rmsnorm_affine_partial.mb'"
check "sweep: measure.csv holds both row runs' rows (2 plans x 2 shapes each)" \
  bash -c "[ \"\$(grep -c ',cuda,softmax,' '$tmp/v2/measure.csv')\" -eq 8 ]"
check "sweep: the summary names each shape" \
  bash -c "grep -q '^softmax  *fused  *f32  *512x262144 ' '$tmp/v2/summary.txt' && grep -q '^softmax  *fused  *f32  *65536x1024 ' '$tmp/v2/summary.txt'"
: >"$tmp/sizes.log"
FAKE_LOG=$tmp/sizes.log PATH=$tmp/fakesmi:$PATH bash "$src/scripts/gpu-validate.sh" --no-build --build "$tmp/fake" \
  --sizes 2^26 --row-shapes none "$tmp/v3" >"$tmp/v3.log" 2>&1
check "sweep, --row-shapes none: no row run" bash -c "! grep -q '^shape' '$tmp/sizes.log'"
: >"$tmp/sizes.log"
FAKE_LOG=$tmp/sizes.log PATH=$tmp/fakesmi:$PATH bash "$src/scripts/gpu-validate.sh" --no-build --build "$tmp/fake" \
  --sizes 2^26 --row-bwd none "$tmp/v5" >"$tmp/v5.log" 2>&1
check "sweep, --row-bwd none: the forward row run only" bash -c "[ \"\$(grep -c '^shape' '$tmp/sizes.log')\" -eq 1 ]"
FAKE_LOG=$tmp/sizes.log PATH=$tmp/fakesmi:$PATH bash "$src/scripts/gpu-validate.sh" --no-build --build "$tmp/fake" \
  --sizes 2^26 --row-bwd 'softmax_bwd;x' "$tmp/v6" >"$tmp/v6.log" 2>&1
r=$?
check "sweep, --row-bwd 'softmax_bwd;x': exit 2 (got $r), one line" \
  bash -c "[ $r -eq 2 ] && grep -q \"error: --row-bwd 'softmax_bwd;x'\" '$tmp/v6.log'"
FAKE_LOG=$tmp/sizes.log PATH=$tmp/fakesmi:$PATH bash "$src/scripts/gpu-validate.sh" --no-build --build "$tmp/fake" \
  --sizes 2^26 --row-partial nosuch_bwd "$tmp/v7" >"$tmp/v7.log" 2>&1
r=$?
check "sweep, --row-partial nosuch_bwd: exit 2 (got $r), one line" \
  bash -c "[ $r -eq 2 ] && [ \"\$(wc -l <'$tmp/v7.log')\" -eq 1 ] && grep -q \"no built-in variant 'nosuch_bwd'\" '$tmp/v7.log'"
FAKE_LOG=$tmp/sizes.log PATH=$tmp/fakesmi:$PATH bash "$src/scripts/gpu-validate.sh" --no-build --build "$tmp/fake" \
  --sizes 2^26 --row-shapes 4096 "$tmp/v4" >"$tmp/v4.log" 2>&1
r=$?
check "sweep, --row-shapes 4096: exit 2 (got $r), one line" \
  bash -c "[ $r -eq 2 ] && grep -q \"error: --row-shapes '4096'\" '$tmp/v4.log'"

# ---- 3. the summary: count_check decides, not the script --------------------------
mkdir -p "$tmp/s"
cat >"$tmp/s/measure.csv" <<'EOF'
# a run's provenance
device,backend,variant,plan,dtype,n,time_s_median,model_dram_read_bytes,model_dram_write_bytes,dram_read_bytes,dram_write_bytes,counters,verified,count_err,count_check
h200,cuda,copy,eager,f32,268435456,0.0005,1073741824,1073741824,1127428915,1127428915,cupti,1,0.05,off
h200,cuda,copy,fused,f32,268435456,0.0005,1073741824,1073741824,1073741824,1084479242,cupti,1,0.005,ok
h200,cuda,copy,fused,f32,1048576,0.00001,4194304,4194304,4404019,4404019,cupti,1,0.05,below 4x L2
EOF
bash "$src/scripts/gpu-validate.sh" --summary-only "$tmp/s" >"$tmp/s.log" 2>&1
check "summary: 2 rows judged, 1 off, worst 5%" \
  grep -q "rows judged (counted, tensors >= 4x L2; count_check column): 2, off by more than 3%: 1 (worst 5.00%)" "$tmp/s.log"

if [ "$fails" -ne 0 ]; then
  echo "--- sweep log"; cat "$tmp/v.log"; echo "--- summary log"; cat "$tmp/s.log"
fi
check_done
