#!/usr/bin/env bash
# demo_time.sh — wall time of a full `calibrate`, `demo --quick` and the full
# `demo`, each on a fresh cache folder (XDG_CACHE_HOME: no cached calibration
# or compiled kernel from an earlier run), and `demo --quick` again on the
# calibrate run's cache (a host that has calibrated before), one after the
# other, with the load average before and after each. Prints, never asserts:
# the machine is shared, and the figures say what the tool costs a newcomer
# at this load.
#
#   bench/demo_time.sh [--no-full] [MEMBOUND]   (default: build/bin/membound)
#
# --no-full leaves the full demo out (calibrate and demo --quick only).
#
# Leaves nothing behind but its temporary folder's removal.
set -euo pipefail
cd "$(dirname "$0")/.."
full=1
if [ "${1:-}" = --no-full ]; then full=0; shift; fi
B=${1:-build/bin/membound}
[ -x "$B" ] || { echo "demo_time.sh: $B not built" >&2; exit 2; }
case $B in /*) ;; *) B=$PWD/$B ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME CMD...: one timed run in a fresh cache folder and working folder
# (the cache of run CACHE=NAME when CACHE is set)
run() {
    local name=$1 cache=$tmp/${CACHE:-$1}/cache
    shift
    mkdir -p "$cache" "$tmp/$name/work"
    local load0 t0 t1 rc=0
    load0=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s.%N)
    (cd "$tmp/$name/work" && XDG_CACHE_HOME=$cache "$B" "$@" >"$tmp/$name/out" 2>&1) || rc=$?
    t1=$(date +%s.%N)
    printf '%-22s %7.1f s  exit %d  load %s -> %s\n' "$name" "$(echo "$t1 - $t0" | bc)" "$rc" "$load0" \
        "$(cut -d' ' -f1 /proc/loadavg)"
}

echo "membound $("$B" --version 2>/dev/null | head -1), $(nproc) cores"
run calibrate calibrate -o cal.ini
run "demo --quick" demo --quick -o demo
CACHE=calibrate run "demo --quick, calibrated" demo --quick -o demo
[ "$full" = 1 ] && run demo demo -o demo
exit 0
