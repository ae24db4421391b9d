#!/bin/bash
# make.sh — how busy-copy.csv and busy-fusion_recompute.csv were made: the
# lecture's series measured while two CPU hogs (busy loops started here and
# killed after) and other users' builds shared the 2-core machine. The model
# device is the committed calibration of the quiet run
# (reports/data/cpu-amd-epyc-2vcpu/steady-run-cb591e2/local-cpu.ini): a full
# calibration on a machine this busy is refused for contention.
set -u
cd "$(dirname "$0")/../../.."
SPEC=reports/data/cpu-amd-epyc-2vcpu/steady-run-cb591e2/local-cpu.ini
B=${MB_BIN:-build/bin/membound}
OUT=${1:-tests/data/verdict-busy}
( while :; do :; done ) & H1=$!
( while :; do :; done ) & H2=$!
$B measure copy --plan eager --dtype f32,bf16 --sizes 2^25 --timeout 3 --device $SPEC -o "$OUT/busy-copy.csv"
$B measure sin2_plus_cos2 gelu_tanh sigmoid3 --timeout 3 --device $SPEC -o "$OUT/busy-fusion_recompute.csv"
kill $H1 $H2
