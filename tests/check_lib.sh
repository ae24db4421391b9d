# check_lib.sh — sourced by the shell tests of the GPU scripts (gpu_session.sh,
# gpu_scripts.sh): check DESCRIPTION CMD... runs CMD, prints "ok: ..." or
# "FAIL: ...", and counts failures in $fails.
fails=0
check() {
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
