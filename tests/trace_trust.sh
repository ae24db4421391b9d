#!/bin/bash
# trace_trust.sh — membound trace runs its Python half only when nobody else
# can change it: a copy of the binary beside a tracer writable by others (the
# file, then its folder) is refused, exit 1, one line naming it, and nothing
# is run; a missing tracer is one line too. Needs no PyTorch.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
SRC=${MB_SRC:?MB_SRC: the source folder}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/share/membound/trace"
cp "$B" "$tmp/bin/membound"
T=$tmp/share/membound/trace/membound_trace.py
# a tracer that would leave a mark if it ran
printf 'open(%s, "w").write("ran")\n' "'$tmp/ran'" >"$T"
chmod 755 "$tmp" "$tmp/share" "$tmp/share/membound" "$tmp/share/membound/trace"
bad=0
expect_refused() { # what
  local rc
  "$tmp/bin/membound" trace "$SRC/tests/trace_fns.py:sin2_plus_cos2" --input x=8 --python /usr/bin/python3 \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc = 1 ] && [ "$(grep -c '' "$tmp/err")" = 1 ] && grep -q "^membound: error: .*not run: .*writable by others" "$tmp/err" \
     && [ ! -e "$tmp/ran" ]; then
    echo "ok   $1: $(cat "$tmp/err")"
  else
    echo "FAIL $1: exit $rc: $(cat "$tmp/err")"; bad=1
  fi
}
chmod 666 "$T"; expect_refused "a tracer writable by others"
chmod 644 "$T"; chmod 777 "$tmp/share/membound/trace"; expect_refused "a tracer in a folder writable by others"
chmod 755 "$tmp/share/membound/trace"
# trusted: it runs (the mark appears; its empty output then fails to parse, exit 1)
"$tmp/bin/membound" trace "$SRC/tests/trace_fns.py:sin2_plus_cos2" --input x=8 --python /usr/bin/python3 >/dev/null 2>&1
if [ -e "$tmp/ran" ]; then echo "ok   a tracer nobody else can change is run"; else echo "FAIL the trusted tracer did not run"; bad=1; fi
rm -f "$T"
"$tmp/bin/membound" trace "$SRC/tests/trace_fns.py:sin2_plus_cos2" --input x=8 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q "the tracer is missing" "$tmp/err"; then echo "ok   a missing tracer: $(cat "$tmp/err")"
else echo "FAIL a missing tracer: exit $rc: $(cat "$tmp/err")"; bad=1; fi
exit $bad
