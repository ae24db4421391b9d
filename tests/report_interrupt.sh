#!/bin/bash
# report_interrupt.sh — a large report (3x10^5 generated rows, about 35 MB
# of output) says what it is doing and stops promptly: one progress note a
# step on stderr (rows read, modelled, fits, figures, tables), none under -q
# or for a small input; SIGTERM or SIGINT at random moments of the run ends
# it within a second with exit 143/130, and leaves the old report byte for
# byte (or none where there was none), no staging folder or temporary.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
S=${MB_SRC:?MB_SRC: the source tree}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
now() { date +%s.%N; }
RANDOM=${MB_SEED:-24}
rows=300000
. "$(dirname "${BASH_SOURCE[0]}")/gen_rows.sh"
gen $rows "$tmp/big.csv"

# 1. progress: a note a step for a large input, with its seconds
t0=$(now)
"$B" report "$tmp/big.csv" --no-figures -o "$tmp/full" >/dev/null 2>"$tmp/err" || bad "the large report failed: $(tail -1 "$tmp/err")"
run_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
for step in "$rows rows read in" "$rows rows modelled in" "fits and verdicts in" "figures' data and scripts written in" \
            "tables written in"; do
  grep -q "^membound report: [0-9]* *$step [0-9.]* s\$\|^membound report: $step [0-9.]* s\$" "$tmp/err" ||
    bad "no progress note '$step': $(cat "$tmp/err")"
done
[ "$(grep -c '^membound report: ' "$tmp/err")" = 5 ] || bad "expected 5 progress notes: $(cat "$tmp/err")"
"$B" report "$tmp/big.csv" --no-figures -q -o "$tmp/q" >/dev/null 2>"$tmp/err" || bad "report -q failed"
[ ! -s "$tmp/err" ] || bad "report -q printed: $(head -2 "$tmp/err")"
"$B" report "$S/reports/data/cpu-amd-epyc-2vcpu/all-copy.csv" --no-figures -o "$tmp/old" >/dev/null 2>"$tmp/err" ||
  bad "the small report failed"
! grep -q '^membound report: ' "$tmp/err" || bad "a small report printed progress: $(head -2 "$tmp/err")"

# 2. a signal at random moments of the large report, over an old one
sums() { ( cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum ) 2>/dev/null; }
sums "$tmp/old" >"$tmp/old.sum"
log=""
for i in 1 2 3 4; do
  sig=TERM; [ $((i % 2)) = 0 ] && sig=INT
  rm -rf "$tmp/rep"; cp -a "$tmp/old" "$tmp/rep"
  env --default-signal=INT "$B" report "$tmp/big.csv" -q --no-figures -o "$tmp/rep" >/dev/null 2>"$tmp/err" &
  pid=$!
  ms=$(awk -v r=$RANDOM -v s="$run_s" 'BEGIN { printf "%d", 50 + (r % 1000) / 1000 * s * 900 }')
  sleep "$(awk -v m=$ms 'BEGIN { printf "%.3f", m / 1000 }')"
  t0=$(now)
  kill -$sig $pid 2>/dev/null
  wait $pid; rc=$?
  took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
  log="$log ${ms}ms:$sig:${took}s"
  [ -z "$(find "$tmp" -name '*staging*' -o -name '.*tmp*' | head -1)" ] ||
    bad "SIG$sig after $ms ms left $(find "$tmp" -name '*staging*' -o -name '.*tmp*' | head -2)"
  if [ "$rc" = 0 ]; then log="$log(finished)"; continue; fi # it finished first
  awk -v t="$took" 'BEGIN { exit !(t < 1.0) }' || bad "SIG$sig after $ms ms took $took s to act (exit $rc)"
  case $sig:$rc in TERM:143|INT:130) ;; *) bad "SIG$sig after $ms ms: exit $rc: $(tail -1 "$tmp/err")" ;; esac
  sums "$tmp/rep" | cmp -s - "$tmp/old.sum" || bad "SIG$sig after $ms ms: the old report was changed"
done
echo "report of $rows rows: ${run_s} s; interrupts (delay:signal:time to exit):$log"
[ $fail = 0 ] && echo "report_interrupt: ok"
exit $fail
