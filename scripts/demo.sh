#!/usr/bin/env bash
# demo.sh — installs what is missing, builds, runs the lecture's demos on this
# machine (calibrate, measure, report) and prints where the report is.
# Usage: scripts/demo.sh [OUTDIR]   (default: out/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
mb_install_deps
mb_find_cuda
out=${1:-out/demo}

echo "== build (build/; a few minutes the first time on 2 cores)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# progress as "  42% built", and compiler errors in full (pipefail keeps cmake's status)
cmake --build build -j"$(mb_jobs)" 2>&1 |
  sed -u -n -e 's/^\[ *\([0-9]*\)%\].*/  \1% built/p' -e '/[Ee]rror/p' | uniq
B=build/bin/membound

echo "== the model: the lecture's variants on the H100"
$B model --device h100-sxm
echo
echo "== what if: the lecture's variants on other GPUs"
$B whatif sin2_plus_cos2 gelu_tanh sigmoid3 --devices h100-sxm,h200,b200,a100-80gb,rtx-4090,l4,mi300x
echo

if $B demo --help >/dev/null 2>&1; then
  echo "== the demos for real on this machine"
  $B demo -o "$out"
  echo
  echo "report: $out/report.html (and $out/report.md)"
fi
echo
echo "membound on your PATH, from this folder:  export PATH=\"$PWD/build/bin:\$PATH\""
