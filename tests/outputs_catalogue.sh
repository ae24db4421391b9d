#!/usr/bin/env bash
# outputs_catalogue.sh — where outputs go and what is never lost: a link
# another user planted in a sticky folder (the file itself, or a folder on
# the way) is not followed by import, measure, calibrate or report (exit 2,
# one line, the target untouched), your own is; a 255-byte -o name works; a
# SIGHUP mid-measure keeps the rows measured (exit 129); an interrupted run
# never replaces a file that was there (its rows go to NAME.partial-PID,
# named on stderr); of two runs writing one -o, the loser's rows are kept as
# NAME.conflict-PID and named. The planted links need root (chown -h): skipped
# (77) elsewhere.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
SRC=${MB_SRC:?MB_SRC: the source folder}
[ "$(id -u)" = 0 ] || { echo "outputs_catalogue: needs root to plant another user's links: skipped"; exit 77; }
other=$(id -u nobody 2>/dev/null) || { echo "outputs_catalogue: no user nobody: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
ok=0 bad=0
check() { # check WHAT COMMAND...: the command succeeds
  local what=$1; shift
  if "$@"; then ok=$((ok + 1)); echo "ok   $what"; else bad=$((bad + 1)); echo "FAIL $what"; fi
}
one_error() { # one_error FILE PATTERN: FILE is one 'membound: error:' line matching PATTERN
  [ "$(grep -c '' "$1")" = 1 ] && grep -q '^membound: error: ' "$1" && grep -qE -- "$2" "$1"
}
error_line() { # error_line FILE PATTERN: FILE's one error line (among notes) matches PATTERN
  [ "$(grep -c '^membound: error: ' "$1")" = 1 ] && grep '^membound: error: ' "$1" | grep -qE -- "$2"
}

imp=(import ncu "$SRC/tests/data/import/ncu_raw_gelu_eager.csv" --variant gelu_tanh --plan eager --n 2^20
     --device h200 -q)
meas=(measure --backend cpu --device h100-sxm --threads 1 --plan eager copy)

# ---- links another user planted -------------------------------------------------------
mkdir -m 1777 pub
printf 'secret\n' >root.txt
chmod 600 root.txt
ln -s ../root.txt pub/o.csv && chown -h "$other" pub/o.csv
"$B" "${imp[@]}" -o pub/o.csv >/dev/null 2>err; rc=$?
check "import -o through a planted link: exit 2 ($rc)" test "$rc" = 2
check "import: one line naming the link" one_error err 'pub/o.csv is a symbolic link of uid [0-9]+ in a folder others can change'
check "import: the link's target untouched" test "$(cat root.txt)" = secret
"$B" "${meas[@]}" --sizes 2^12 --timeout 0.2 -o pub/o.csv >/dev/null 2>err; rc=$?
check "measure -o through a planted link: exit 2 before measuring ($rc)" test "$rc" = 2
check "measure: one line" one_error err 'symbolic link of uid'
"$B" calibrate --quick --threads 1 -o pub/o.csv >/dev/null 2>err; rc=$?
check "calibrate -o through a planted link: exit 2 before calibrating ($rc)" test "$rc" = 2
check "calibrate: one line" one_error err 'symbolic link of uid'
check "measure, calibrate: the target untouched" test "$(cat root.txt)" = secret
# a folder on the way: pub/d is another user's link to a root folder
mkdir rootdir
ln -s "$tmp/rootdir" pub/d && chown -h "$other" pub/d
"$B" "${imp[@]}" -o "$tmp/pub/d/x.csv" >/dev/null 2>err; rc=$?
check "import -o through a planted folder link: exit 2 ($rc)" test "$rc" = 2
check "import: one line naming pub/d" one_error err "$tmp/pub/d is a symbolic link"
check "nothing made in the folder it names" test -z "$(ls -A rootdir)"
printf 'device,backend,variant,plan,dtype,n,time_s_median,verified\nh100-sxm,cpu,copy,eager,f32,4096,1e-6,1\n' >in.csv
"$B" report in.csv --no-figures -q -o pub/d >/dev/null 2>err; rc=$?
check "report -o a planted folder link: exit 2 ($rc)" test "$rc" = 2
check "report: one line, nothing in the folder it names" \
  bash -c "grep -q 'symbolic link of uid' err && [ \$(grep -c '' err) = 1 ] && [ -z \"\$(ls -A rootdir)\" ]"
# our own link in the sticky folder is ours to follow
printf 'old\n' >mine.txt
ln -s ../mine.txt pub/mine.csv
"$B" "${imp[@]}" -o pub/mine.csv >/dev/null 2>err; rc=$?
check "import -o through our own link: exit 0 ($rc)" test "$rc" = 0
check "its target replaced, the link kept" bash -c 'head -1 mine.txt | grep -q "^device," && [ -L pub/mine.csv ]'

# ---- a 255-byte name --------------------------------------------------------------------
long=$(printf 'm%.0s' $(seq 251)).csv
"$B" "${meas[@]}" --sizes 2^12 --timeout 0.2 -q -o "$long" >/dev/null 2>err; rc=$?
check "measure -o a 255-byte name: exit 0 ($rc)" test "$rc" = 0
check "the file is there, no temporary left" bash -c "[ -s '$long' ] && [ \$(ls -A | grep -c tmp) = 0 ]"

# ---- signals and partial runs ----------------------------------------------------------
# start_measure OUT ERR: a run of about 12 rows at 0.3 s each; waits for a
# progress note of its second row or a later one (measure notes rows once a
# second has passed: on a fast host the first of them is [3/12]) and leaves
# its pid in $pid
start_measure() {
  "$B" "${meas[@]}" --sizes 2^12..2^23 --timeout 0.3 -o "$1" >/dev/null 2>"$2" &
  pid=$!
  for _ in $(seq 600); do grep -qE '^membound: note: \[([2-9]|1[0-2])/' "$2" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}
start_measure hup.csv hup.err || echo "note: no second row within 30 s"
kill -HUP $pid
wait $pid; rc=$?
check "SIGHUP mid-measure: exit 129 ($rc)" test "$rc" = 129
check "SIGHUP: the rows measured are kept" bash -c "[ \$(grep -c ',copy,' hup.csv) -ge 2 ]"
check "SIGHUP: a 'partial: interrupted by SIGHUP' line" grep -q 'partial: interrupted by SIGHUP' hup.csv
check "SIGHUP: the last line says where" bash -c "tail -1 hup.err | grep -q 'interrupted by SIGHUP: .* written to hup.csv'"

"$B" "${meas[@]}" --sizes 2^12 --timeout 0.2 -q -o full.csv >/dev/null 2>/dev/null
cp full.csv full.before
start_measure full.csv full.err || echo "note: no second row within 30 s"
kill -TERM $pid
wait $pid; rc=$?
check "SIGTERM over a file that was there: exit 143 ($rc)" test "$rc" = 143
check "the file that was there is kept as it was" cmp -s full.csv full.before
check "the partial rows beside it, as full.csv.partial-$pid" grep -q 'partial: interrupted by SIGTERM' "full.csv.partial-$pid"
check "the last line names both" \
  bash -c "tail -1 full.err | grep -q 'written to full.csv.partial-$pid (full.csv, there before, kept)'"

# two runs writing one -o, each opened before the other ends: the first to
# finish writes it, the other's rows are kept beside it and named
"$B" "${meas[@]}" --sizes 2^12..2^16 --timeout 0.3 -q -o same.csv >/dev/null 2>a.err & a=$!
sleep 0.3
"$B" "${meas[@]}" --sizes 2^12..2^16 --timeout 0.3 -q -o same.csv >/dev/null 2>b.err & b=$!
wait $a; ra=$?
wait $b; rb=$?
check "two runs, one -o: one exits 0, the other 1 ($ra, $rb)" test "$((ra + rb))" = 1
loser=$a lerr=a.err
[ "$rb" = 1 ] && loser=$b lerr=b.err
check "the loser's error line names its file" error_line "$lerr" "written by another run .* this run's file is same.csv.conflict-$loser"
check "the loser's rows are there" bash -c "[ \$(grep -c ',copy,' same.csv.conflict-$loser) = 5 ]"
check "no temporary left" test -z "$(find . -name '*.tmp*' | head -1)"

# report -o DIR with a 255-byte DIR: its staging folder beside it fits too
long=$(printf 'r%.0s' $(seq 1 255))
printf 'device,backend,variant,plan,dtype,n,time_s_median,verified\nh100-sxm,cuda,copy,eager,f32,1048576,1e-5,1\n' >one.csv
"$B" report one.csv --no-figures -q -o "$long" >/dev/null 2>long.err; rc=$?
check "report -o a 255-byte folder: exit 0 ($rc)" test "$rc" = 0
check "report -o a 255-byte folder: its summary there" test -s "$long/summary.csv"

# a full disk: the error names its reason (ENOSPC), not a bare "write
# failed" or EIO; a 256 KiB tmpfs where this host lets root mount one
mkdir -p small
if mount -t tmpfs -o size=256k tmpfs small 2>/dev/null; then
  printf 'device,backend,variant,plan,dtype,n,time_s_median,verified\n' >many.csv
  for i in $(seq 1 3000); do echo "h100-sxm,cuda,copy,eager,f32,$((65536 + i)),1e-5,1"; done >>many.csv
  "$B" report many.csv --no-figures -o small/out >/dev/null 2>full.err; rc=$?
  check "report on a full disk: exit 1 ($rc)" test "$rc" = 1
  check "report on a full disk: the reason" error_line full.err "No space left on device"
  umount small
else
  echo "note: no tmpfs mount here: the full-disk case not tried"
fi

echo "outputs_catalogue: $ok ok, $bad failed"
[ $ok -gt 0 ] && [ $bad = 0 ]
