#!/bin/bash
# child_deadline.sh — no child hangs a command: a stand-in gnuplot and a
# stand-in C compiler that never return (a shell script whose own child
# sleeps) are killed with their process group at their deadline, or when
# the command gets SIGTERM; the command ends within seconds with one line,
# leaves no child running and no temporary behind; the JIT falls back to the
# interpreter and says so once.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
# gone PIDFILE: the stand-in's sleeping child no longer runs (5 s at most)
gone() {
  local pid; pid=$(cat "$1" 2>/dev/null) || return 1
  for _ in $(seq 100); do
    [ -e "/proc/$pid" ] || return 0
    case "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" in Z|X|"") return 0 ;; esac
    sleep 0.05
  done
  kill -9 "$pid" 2>/dev/null; return 1
}
# a stand-in that never returns; its child's pid in $tmp/$1.pid
standin() {
  printf '#!/bin/sh\nsleep 60 &\necho $! > %s\nwait\n' "$tmp/$1.pid" >"$tmp/$1"
  chmod +x "$tmp/$1"
}
standin hang-gnuplot
standin hang-cc

csv=$tmp/in.csv
{
  echo "device,backend,variant,plan,dtype,n,time_s_median,verified"
  for n in 1048576 4194304 16777216 67108864; do
    echo "h100-sxm,cuda,copy,eager,f32,$n,$(awk -v n=$n 'BEGIN { printf "%.6g", n * 8 / 3e12 + 5e-6 }'),1"
    echo "h100-sxm,cuda,sin2_plus_cos2,fused,f32,$n,$(awk -v n=$n 'BEGIN { printf "%.6g", n * 8 / 3e12 + 5e-6 }'),1"
  done
} >"$csv"

# 1. report, gnuplot past its 1 s deadline: exit 1, one line, in seconds
t0=$(now)
MEMBOUND_GNUPLOT=$tmp/hang-gnuplot MEMBOUND_GNUPLOT_TIMEOUT_S=1 "$B" report "$csv" -o "$tmp/rep1" \
  >/dev/null 2>"$tmp/err1"; rc=$?
took=$(elapsed "$t0")
[ "$rc" = 1 ] || bad "report with a hanging gnuplot exited $rc: $(cat "$tmp/err1")"
grep -q "timed out after 1 s" "$tmp/err1" || bad "report's line does not say timed out: $(cat "$tmp/err1")"
[ "$(grep -c 'error' "$tmp/err1")" = 1 ] || bad "report: not one error line: $(cat "$tmp/err1")"
lt "$took" 8 || bad "report with a hanging gnuplot took $took s (one 1 s deadline expected)"
gone "$tmp/hang-gnuplot.pid" || bad "report left gnuplot's child running"
[ -z "$(find "$tmp" -name '.*tmp*' -o -name '.*.log*' | head -1)" ] || bad "report left temporaries: $(find "$tmp" -name '.*tmp*')"
echo "report, gnuplot hung: exit $rc in $took s: $(cat "$tmp/err1")"

# 2. report, gnuplot hanging, SIGTERM: report ends within 2 s, its child too
rm -f "$tmp/hang-gnuplot.pid"
MEMBOUND_GNUPLOT=$tmp/hang-gnuplot "$B" report "$csv" -o "$tmp/rep2" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/hang-gnuplot.pid" ] && break; sleep 0.05; done
t0=$(now)
kill -TERM $pid
wait $pid; rc=$?
took=$(elapsed "$t0")
[ "$rc" = 143 ] || bad "report under SIGTERM exited $rc, expected 143"
lt "$took" 2 || bad "report under SIGTERM took $took s"
gone "$tmp/hang-gnuplot.pid" || bad "report under SIGTERM left gnuplot's child running"
[ -z "$(find "$tmp" -name '.*tmp*' | head -1)" ] || bad "report under SIGTERM left temporaries: $(find "$tmp" -name '.*tmp*')"
echo "report, gnuplot hung, SIGTERM: exit $rc in $took s"

# 3. measure, the JIT's compiler past its 1 s deadline: the row is measured
# interpreted, one warning, no source or object left in the cache
m=(measure sin2_plus_cos2 --plan fused --backend cpu --device h100-sxm --sizes 2^14 --timeout 0.2 --warm)
t0=$(now)
XDG_CACHE_HOME=$tmp/cache MEMBOUND_JIT_CC=$tmp/hang-cc MEMBOUND_JIT_TIMEOUT_S=1 "$B" "${m[@]}" -o "$tmp/m3.csv" \
  >/dev/null 2>"$tmp/err3"; rc=$?
took=$(elapsed "$t0")
[ "$rc" = 0 ] || bad "measure with a hanging compiler exited $rc: $(cat "$tmp/err3")"
[ "$(grep -c 'timed out after 1 s' "$tmp/err3")" = 1 ] || bad "measure: not one line saying the compiler timed out: $(cat "$tmp/err3")"
grep -q "interpreted" "$tmp/err3" || bad "measure does not say it interprets: $(cat "$tmp/err3")"
lt "$took" 8 || bad "measure with a hanging compiler took $took s"
gone "$tmp/hang-cc.pid" || bad "measure left the compiler's child running"
[ -z "$(find "$tmp/cache" -name '*.c' -o -name '*.so' | head -1)" ] || bad "measure left the compiler's files: $(find "$tmp/cache" -type f)"
echo "measure, compiler hung: exit $rc in $took s"

# 4. measure, compiler hanging, SIGTERM: measure ends within 2 s, no row
# half-kept, the compiler's files gone
rm -rf "$tmp/cache" "$tmp/hang-cc.pid"
XDG_CACHE_HOME=$tmp/cache MEMBOUND_JIT_CC=$tmp/hang-cc "$B" "${m[@]}" -o "$tmp/m4.csv" >/dev/null 2>"$tmp/err4" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/hang-cc.pid" ] && break; sleep 0.05; done
t0=$(now)
kill -TERM $pid
wait $pid; rc=$?
took=$(elapsed "$t0")
lt "$took" 2 || bad "measure under SIGTERM took $took s"
[ "$rc" != 0 ] || bad "measure under SIGTERM exited 0"
gone "$tmp/hang-cc.pid" || bad "measure under SIGTERM left the compiler's child running"
[ -z "$(find "$tmp/cache" -name '*.c' -o -name '*.so' | head -1)" ] || bad "measure under SIGTERM left the compiler's files: $(find "$tmp/cache" -type f)"
echo "measure, compiler hung, SIGTERM: exit $rc in $took s"

[ $fail = 0 ] && echo "child_deadline: ok"
exit $fail
