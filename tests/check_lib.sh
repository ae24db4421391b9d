# check_lib.sh — sourced by the shell tests of the GPU scripts (gpu_session.sh,
# gpu_scripts.sh): check DESCRIPTION CMD... runs CMD, prints "ok: ..." or
# "FAIL: ...", and counts checks in $checks, failures in $fails; check_done
# at the end.
fails=0 checks=0
check() {
  local what=$1
  shift
  checks=$((checks + 1))
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
# check_done: prints "N passed, N failed"; fails when a check failed or when
# none ran (a test that checks nothing cannot fail)
check_done() {
  echo "$((checks - fails)) passed, $fails failed"
  [ "$checks" -gt 0 ] || { echo "FAIL: no check ran"; return 1; }
  [ "$fails" -eq 0 ]
}
