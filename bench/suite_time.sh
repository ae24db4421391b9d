#!/usr/bin/env bash
# suite_time.sh — times scripts/test.sh at each commit given, one after the
# other on this machine, so that a before and an after meet the same load:
# each in a temporary git worktree (built from nothing, as CI does), each with
# an empty cache folder (XDG_CACHE_HOME: compiled kernels and calibrations,
# so that the first run does not warm the second's). Prints, per commit, the
# wall time of each phase (from one "== " line of test.sh's output to the
# next), the total wall and CPU time, the load average before and after, and
# test.sh's exit code; then the checks each run made (bench/suite_checks.py
# over the tests' outputs of both builds) and the check sites at each commit.
# Times and counts are printed, never asserted: the machine is shared.
#
#   bench/suite_time.sh [-o DIR] [COMMIT...]   (default: 6d716b3 HEAD)
#
# -o DIR keeps each run's timestamped output and ctest logs (default: a
# temporary folder, printed at the end). Does not change the worktree it
# runs from.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
out=""
if [ "${1:-}" = -o ]; then out=$2; shift 2; fi
[ $# -gt 0 ] || set -- 6d716b3 HEAD
out=${out:-$(mktemp -d /tmp/mb-suite-time.XXXXXX)}
mkdir -p "$out"
: >"$out/commits.txt"
wts=()
trap 'for w in "${wts[@]}"; do git -C "$here" worktree remove --force "$w" 2>/dev/null || true; done' EXIT

# stamp: each line with the seconds since the epoch when it arrived
stamp() { perl -MTime::HiRes=time -ne '$| = 1; printf "%.2f %s", time, $_'; }
# outputs SHA BUILD...: that run's test outputs of those builds, comma-separated
outputs() {
  local sha=$1 b f list=""
  shift
  for b in "$@"; do
    for f in "$out/$sha/$b"-junit-*.xml "$out/$sha/$b"-LastTest.log; do
      [ -e "$f" ] && list=${list:+$list,}$f
    done
  done
  echo "$list"
}
# phases LOG: "seconds  header" for each "== " line, until the next one or the end
phases() {
  awk 'NR == 1 { t0 = $1 } { last = $1 }
       $2 == "==" { if (name != "") printf "  %8.1f s  %s\n", $1 - at, name; at = $1; $1 = ""; name = substr($0, 2) }
       END { if (name != "") printf "  %8.1f s  %s\n", last - at, name; printf "  %8.1f s  in all (first line to last)\n", last - t0 }' "$1"
}

for commit in "$@"; do
  sha=$(git rev-parse --short "$commit^{commit}")
  wt=$(mktemp -d /tmp/mb-suite-wt.XXXXXX)
  rmdir "$wt"
  git worktree add --detach --quiet "$wt" "$sha"
  wts+=("$wt")
  mkdir -p "$out/$sha/cache"
  echo "== $commit ($sha) in $wt"
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  rc=0
  ( cd "$wt" && XDG_CACHE_HOME=$out/$sha/cache /usr/bin/time -f "%e %U %S" -o "$out/$sha/time.txt" \
      bash scripts/test.sh ) 2>&1 | stamp >"$out/$sha/test.log" || rc=$?
  load1=$(cut -d' ' -f1-3 /proc/loadavg)
  # the tests' outputs: test.sh's JUnit files, one a ctest run (before them,
  # LastTest.log, which gpu_session_archive's own ctest run replaces)
  for b in build build-asan; do
    logs=("$wt/$b"/Testing/junit-*.xml)
    [ -e "${logs[0]}" ] || logs=("$wt/$b"/Testing/Temporary/LastTest.log)
    for f in "${logs[@]}"; do
      [ -e "$f" ] && cp "$f" "$out/$sha/$b-$(basename "$f")"
    done
  done
  read -r wall user sys <"$out/$sha/time.txt" || true
  echo "$sha" >>"$out/commits.txt"
  {
    echo "-- $commit ($sha): scripts/test.sh exit $rc"
    phases "$out/$sha/test.log"
    echo "  wall ${wall:-?} s, CPU ${user:-?} s user + ${sys:-?} s sys (test.sh and everything it waited for)"
    echo "  load average (1, 5, 15 min) before: $load0; after: $load1; $(nproc) cores"
  } | tee "$out/$sha/summary.txt"
  git worktree remove --force "$wt"
done

echo "== checks made, per test (normal build + sanitizer build, from the tests' outputs;"
echo "   a LastTest.log, from before test.sh kept JUnit files, lacks the tests whose output"
echo "   gpu_session_archive's own ctest run replaced)"
cols=()
while read -r sha; do cols+=("$(outputs "$sha" build build-asan)"); done <"$out/commits.txt"
python3 bench/suite_checks.py dynamic "${cols[@]}" | sed "s|$out/||g"
for b in build build-asan; do
  echo "== checks made by the $b tests alone"
  cols=()
  while read -r sha; do cols+=("$(outputs "$sha" "$b")"); done <"$out/commits.txt"
  python3 bench/suite_checks.py dynamic "${cols[@]}" | sed "s|$out/||g" | tail -1
done
echo "== check sites in tests/, per commit"
python3 bench/suite_checks.py static $(cat "$out/commits.txt") | tail -1
echo "== the summaries again"
while read -r sha; do cat "$out/$sha/summary.txt"; done <"$out/commits.txt"
echo "(logs in $out)"
