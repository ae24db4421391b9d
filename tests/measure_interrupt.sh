#!/bin/bash
# measure_interrupt.sh — SIGTERM or SIGINT at random moments of a measure
# run at large n (copy at 2^26, sin^2+cos^2 eager at 2^25: fills, passes and
# float64 checks of hundreds of MB) ends it within a second, with nothing
# half-written: the CSV is absent or whole, no temporary is left.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
now() { date +%s.%N; }
RANDOM=${MB_SEED:-24}
log=""
for i in 1 2 3 4 5 6; do
  sig=TERM; [ $((i % 3)) = 0 ] && sig=INT
  case $((i % 2)) in
    0) args=(copy --sizes 2^26) ;;
    1) args=(sin2_plus_cos2 --plan eager --sizes 2^25) ;;
  esac
  rm -f "$tmp/m.csv"
  # a shell starts background jobs with SIGINT ignored, and measure keeps an
  # ignored signal ignored (nohup): env gives it back its default
  env --default-signal=INT "$B" measure "${args[@]}" --backend cpu --device h100-sxm --timeout 0.5 -o "$tmp/m.csv" \
    >/dev/null 2>"$tmp/err" &
  pid=$!
  ms=$((100 + RANDOM % 2400))
  sleep "$(awk -v m=$ms 'BEGIN { printf "%.3f", m / 1000 }')"
  t0=$(now)
  kill -$sig $pid 2>/dev/null
  wait $pid; rc=$?
  took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
  log="$log ${args[0]}@${ms}ms:$sig:${took}s"
  if [ "$rc" = 0 ]; then log="$log(finished)"; continue; fi # it finished first
  awk -v t="$took" 'BEGIN { exit !(t < 1.0) }' || bad "${args[*]}: SIG$sig after $ms ms took $took s to act (exit $rc)"
  case $rc in 130|143|1) ;; *) bad "${args[*]}: SIG$sig: exit $rc: $(tail -1 "$tmp/err")" ;; esac
  if [ -e "$tmp/m.csv" ]; then
    python3 - "$tmp/m.csv" <<'PY' || bad "${args[*]}: SIG$sig after $ms ms left a CSV that is not whole"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert rows and all(len(r) == len(rows[0]) for r in rows), "ragged"
PY
  fi
  [ -z "$(find "$tmp" -name '*.tmp*' | head -1)" ] || bad "SIG$sig left $(find "$tmp" -name '*.tmp*')"
done
echo "interrupts (variant@delay:signal:time to exit):$log"
[ $fail = 0 ] && echo "measure_interrupt: ok"
exit $fail
