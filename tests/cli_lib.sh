# cli_lib.sh — sourced by the shell tests of the CLI (cli_model.sh,
# cli_plan.sh): pass/fail counters, a scratch folder, and the checks
# expect (exit code + one stderr line) and jcheck (a jq filter on stdout);
# cli_done at the end. Needs B (the membound binary) set and jq on PATH.
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# expect CODE FRAGMENT -- ARGS...: exit code, and one stderr line containing FRAGMENT
expect() {
  local code=$1 frag=$2; shift 3
  "$B" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne "$code" ]; then bad "membound $* exited $rc, expected $code: $(cat "$tmp/err")"; return; fi
  if [ "$code" -ne 0 ] && [ "$lines" -ne 1 ]; then bad "membound $*: $lines stderr lines"; cat "$tmp/err" >&2; return; fi
  if ! grep -qF -- "$frag" "$tmp/err"; then bad "membound $*: stderr lacks '$frag': $(cat "$tmp/err")"; return; fi
  ok
}
jcheck() { # jcheck FILTER EXPECTED
  local got; got=$(jq -r "$1" "$tmp/out")
  if [ "$got" = "$2" ]; then ok; else bad "jq '$1' = '$got', expected '$2'"; fi
}
# cli_done: prints "N passed, N failed"; fails when a check failed or when
# none ran (a test that checks nothing cannot fail)
cli_done() {
  echo "$pass passed, $fail failed"
  [ $((pass + fail)) -gt 0 ] || { echo "FAIL: no check ran" >&2; return 1; }
  [ "$fail" -eq 0 ]
}
