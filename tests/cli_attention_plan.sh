#!/usr/bin/env bash
# cli_attention_plan.sh — `membound attention --plan`, `--mem-budget`,
# `--seq-sweep` and `--figures` as a user runs them: the recompute plan in
# the JSON beside the other two, what each plan keeps (names, bytes), the
# choice flipping with the budget, budgets written as other sizes are, the
# sweep's longest seq for Llama's head by hand, the figures' data (and
# their PNGs where gnuplot is), and the usage errors.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

"$B" attention --help | grep -q -- '--mem-budget' && ok || bad "--help lacks --mem-budget"
[ "$("$B" attention --help | wc -l)" -le 40 ] && ok || bad "--help longer than a screen"

# Llama's head at seq 8192, bf16: P = 32 x 8192^2 x 2 B; the LSE 32 x 8192 x 4 B
P=4294967296 LSE=1048576
L="--dims heads=32,seq=8192,head_dim=128 --dtype bf16"
"$B" attention $L --plan --json >"$tmp/out" || bad "--plan --json failed"
jcheck '.attention.backward' true
jcheck '.results[0].recompute.plan' recompute
jcheck '.results[0].recompute.saved_bytes' $LSE
jcheck '.results[0].standard.saved_bytes' $P
jcheck '[.results[0].planner.plans.standard.kept[] | .name + ":" + .dtype + ":" + (.bytes | tostring)] | join(",")' "P:bf16:$P"
jcheck '[.results[0].planner.plans.recompute.kept[].name] | join(",")' lse
jcheck '[.results[0].planner.plans.flash.kept[].name] | join(",")' o,lse
jcheck '.results[0].planner.plans.flash.kept | map(.bytes) | add' $((67108864 + LSE))
jcheck '.results[0].planner.choice.plan' flash
jcheck '.results[0].planner.unfused_choice.plan' standard
jcheck '.results[0].planner.frontier | join(",")' recompute,flash
jcheck '.results[0].planner.unfused_frontier | join(",")' recompute,standard
# recompute against storing P: QK^T again, 2 x 32 x 8192^2 x 128 FLOPs
jcheck '.results[0].planner.recompute_extra.flops' 549755813888
jcheck '.results[0].planner.budget_bytes' null

# a budget of P's bytes keeps it; a byte less forces recompute; 2^21 B
# (between the LSE and O + LSE) makes recompute the choice of all three
"$B" attention $L --mem-budget $P --json >"$tmp/out" || bad "budget P failed"
jcheck '.results[0].planner.unfused_choice.plan' standard
"$B" attention $L --mem-budget $((P - 1)) --json >"$tmp/out" || bad "budget P-1 failed"
jcheck '.results[0].planner.unfused_choice.plan' recompute
jcheck '.results[0].planner.plans.standard.fit' 'over budget'
"$B" attention $L --mem-budget 2MiB --json >"$tmp/out" || bad "budget 2MiB failed"
jcheck '.results[0].planner.budget_bytes' 2097152
jcheck '.results[0].planner.choice.plan' recompute
"$B" attention $L --mem-budget 1MB --json >"$tmp/out" || bad "budget 1MB failed"
jcheck '.results[0].planner.budget_bytes' 1000000
jcheck '.results[0].planner.choice.plan' null
# sizes as elsewhere: 4G = 4GiB = 2^32; 4GB is decimal
for m in 4G 4GiB 2^32; do
  "$B" attention $L --mem-budget $m --json >"$tmp/out" || bad "budget $m failed"
  jcheck '.results[0].planner.budget_bytes' 4294967296
done
"$B" attention $L --mem-budget 1.5GB --json >"$tmp/out" || bad "budget 1.5GB failed"
jcheck '.results[0].planner.budget_bytes' 1500000000

# the table: what each keeps, the choice and why
"$B" attention $L --mem-budget 1GiB >"$tmp/out" || bad "--plan table failed"
grep -qE '^  standard +P \[batch, heads, seq, seq\] bf16, 4.29 GB' "$tmp/out" && ok || bad "kept line: $(cat "$tmp/out")"
grep -q '^unfused kernels only: recompute: standard takes less time' "$tmp/out" && ok || bad "unfused reason: $(grep unfused "$tmp/out")"
grep -q '^choice: flash: the least time' "$tmp/out" && ok || bad "choice line"
"$B" attention $L --plan --device h100-sxm,a100-40gb >"$tmp/out" || bad "--plan rows failed"
[ "$(grep -cE '^(h100-sxm|a100-40gb) .* flash +standard *$' "$tmp/out")" -eq 2 ] && ok || bad "plan rows: $(cat "$tmp/out")"

# the sweep: the longest seq of forward and backward for Llama's head by
# hand: standard 5 N d + 3 N^2 elements a head, 2 B each, 32 heads within
# 80e9 B: N^2 + 213.3 N <= 4.1667e8 -> 20306; 40 GB -> 14327
"$B" attention --dims heads=32,head_dim=128 --dtype bf16 --device h100-sxm,a100-40gb --seq-sweep --json >"$tmp/out" || bad "--seq-sweep failed"
jcheck '[.results[].standard.max_seq] | join(",")' 20306,14327
jcheck '.results[0].recompute.max_seq' 20305
jcheck '.results[0].flash.max_seq > 900000' true
jcheck '[.results[0] | .standard, .recompute, .flash | .double_seq > .best_seq] | all' true
jcheck '.seq_range | join(",")' 16,4194304
"$B" attention --dims heads=32,head_dim=128 --dtype bf16 --device all --seq-sweep >"$tmp/out" 2>/dev/null || bad "--seq-sweep table failed"
grep -qE '^h100-sxm +80 \| +20306 +20305 +973520 \|' "$tmp/out" && ok || bad "sweep row: $(grep h100-sxm "$tmp/out")"

# the figures' data; the PNGs where gnuplot and the reports module are
"$B" attention --dims heads=32,head_dim=128 --dtype bf16 --device h100-sxm --figures "$tmp/fig" --seqs 2^10..2^14 >/dev/null 2>"$tmp/err"; rc=$?
[ "$(grep -cvE '^(#|$|[a-z_]+ )' "$tmp/fig/attn_h100-sxm.dat")" -eq 5 ] && ok || bad "seq data rows: $(cat "$tmp/fig/attn_h100-sxm.dat")"
grep -q '^max_seq_standard 20306$' "$tmp/fig/attn_h100-sxm.dat" && ok || bad "seq data lacks the OOM seq"
grep -q '^recompute 1.04858 .* 1 "recompute: keeps lse"$' "$tmp/fig/attn_frontier_h100-sxm.dat" && ok || bad "frontier data: $(cat "$tmp/fig/attn_frontier_h100-sxm.dat")"
grep -q '^h100-sxm 80 20306 20305 973520$' "$tmp/fig/attn_oom.dat" && ok || bad "oom data: $(cat "$tmp/fig/attn_oom.dat")"
if [ "$rc" -eq 0 ]; then
  for f in attn_seq_h100-sxm attn_tflops_h100-sxm attn_frontier_h100-sxm attn_oom; do
    [ "$(head -c 4 "$tmp/fig/$f.png" | od -An -c | tr -d ' ')" = "211PNG" ] && ok || bad "$f.png is not a PNG"
  done
else
  [ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "figures: exit $rc: $(cat "$tmp/err")"
fi

# errors: one line, exit 2
expect 2 "expected bytes" -- attention $L --mem-budget lots
expect 2 "unknown unit 'GX'" -- attention $L --mem-budget 4GX
expect 2 "expected bytes" -- attention $L --mem-budget -1GB
expect 2 "head_dim is needed" -- attention --dims heads=32 --seq-sweep
expect 2 "seq and head_dim" -- attention --dims heads=32,head_dim=128 --plan
expect 2 "one at a time" -- attention --dims heads=32,head_dim=128 --seq-sweep --figures "$tmp/x"
expect 2 "--seqs is the sequence lengths of --figures" -- attention $L --seqs 2^10..2^12
expect 2 "not with --seq-sweep" -- attention --dims heads=32,head_dim=128 --seq-sweep --plan
expect 2 "at least two" -- attention --dims head_dim=64 --figures "$tmp/y" --seqs 1024
cli_done
