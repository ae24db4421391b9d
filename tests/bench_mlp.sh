#!/usr/bin/env bash
# bench_mlp.sh — bench/cpu_mlp.c (cpu_mlp_bench) as bench/cpu_mlp.py runs it,
# at a tiny shape: one JSON object per run, forward and backward, both plans
# checked against float64 within their bounds and timed; bad arguments exit 2.
set -u
X=${MB_MLP_BENCH:?MB_MLP_BENCH not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
[ -x "$X" ] || { echo "no $X: skipped"; exit 77; }
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for kind in gpt2 llama; do
  for pass in "" --backward; do
    if ! "$X" --kind $kind --tokens 40 --d-model 32 --d-ff 96 --threads 1 --rounds 2 --reps 1 --panel 16 $pass \
        >"$tmp/out" 2>"$tmp/err"; then
      grep -q 'no BLAS' "$tmp/err" && { echo "no BLAS: skipped"; exit 77; }
      bad "$kind $pass: $(cat "$tmp/err")"; continue
    fi
    want=${pass:+backward}
    jq -e --arg p "${want:-forward}" '.pass == $p and .panel_rows == 16 and .eager.check <= 1 and .fused.check <= 1
          and .eager.samples == 2 and .eager.median_s > 0 and .fused.min_s <= .fused.median_s' "$tmp/out" >/dev/null ||
      bad "$kind $pass: $(cat "$tmp/out")"
  done
done
"$X" --kind bert >/dev/null 2>&1; [ $? -eq 2 ] || bad "--kind bert: not exit 2"
"$X" --tokens x >/dev/null 2>&1; [ $? -eq 2 ] || bad "--tokens x: not exit 2"
"$X" --tokens 0 >/dev/null 2>&1; [ $? -eq 2 ] || bad "--tokens 0: not exit 2"
[ $fail = 0 ] && echo "bench_mlp: forward and backward, both MLPs, both plans checked"
exit $fail
