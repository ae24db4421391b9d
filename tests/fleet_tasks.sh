#!/usr/bin/env bash
# fleet_tasks.sh — the fleet's scripts without a scheduler: fleet.sh
# --dry-run writes a run of four targets; two of its tasks run at once
# (task.sh with the variables SLURM gives an array task) into the same run
# folder, each leaving its own whole CSV; one fails for real (its spec's
# path is a folder: calibrate refuses it), one is killed mid-calibration and
# one never starts; merge.sh's task table and report name all three, with the failed step and its error line,
# and report the two CSVs that arrived. Then what the scripts refuse: usage
# errors (exit 2), a results folder others may write, a run folder or file
# its group may write, a CSV replaced by a link; and --resume submitting
# only the tasks that left no CSV.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
SRC=${MB_SRC:?MB_SRC: the source tree}
F=$SRC/scripts/slurm
T=$(mktemp -d /tmp/mb_fleet_tasks.XXXXXX)
[ -n "${MB_FLEET_KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# expect CODE FRAGMENT CMD...: exit code and one stderr line holding FRAGMENT
expect() {
  local code=$1 frag=$2 rc=0
  shift 2
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  if [ $rc = "$code" ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -qF -- "$frag" "$T/err"; then ok "exit $code: $frag"
  else bad "$* exited $rc (expected $code, '$frag'): $(cat "$T/err")"; fi
}

out=$("$F/fleet.sh" --dry-run -r "$T/results" --run r1 --target node=n0 --target node=n1 --target node=n2 \
      --target constraint=never --target node=n4 --quick --sizes 2^12 --timeout 1 --membound "$B" copy 2>"$T/dry.err")
run=$T/results/r1
[ "$out" = "run: $run (dry run: nothing submitted)" ] && ok "dry run: $out" || bad "dry run printed '$out'"
grep -q -- "--array=0,1,2,3,4 .*--exclusive" "$T/dry.err" && ok "one array of the five tasks, --exclusive" \
  || bad "sbatch line: $(cat "$T/dry.err")"
grep -q -- "--dependency=afterany:DRY" "$T/dry.err" && ok "the merge after any end" || bad "merge line"
[ "$(stat -c %a "$T/results")" = 3770 ] && [ "$(stat -c %a "$run")" = 2750 ] && ok "folders 3770 and 2750" \
  || bad "modes $(stat -c %a "$T/results") $(stat -c %a "$run")"

host=$(printf '%s' "$(hostname -s)" | tr -c 'A-Za-z0-9._-' '-')
# task K as SLURM starts it: array job 77, job 100+K, on node nK
task() {
  SLURM_ARRAY_TASK_ID=$1 SLURM_ARRAY_JOB_ID=77 SLURM_JOB_ID=$((100 + $1)) SLURMD_NODENAME=n$1 \
    SLURM_CPUS_ON_NODE=1 TMPDIR=$T "$run/bin/task.sh" "$run"
}
mkdir "$run/spec/t2-n2-$host-77_2.ini" # task 2's spec cannot be written: calibrate fails
task 0 & p0=$!
task 1 & p1=$!
task 2; rc2=$?
# task 4 killed while it calibrates (as a time limit or a lost node ends it): its own group
SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_JOB_ID=77 SLURM_JOB_ID=104 SLURMD_NODENAME=n4 TMPDIR=$T setsid "$run/bin/task.sh" "$run" & p4=$!
for _ in $(seq 100); do grep -qs '^step=calibrate' "$run/status/t4-77_4" && break; sleep 0.1; done
kill -9 -- -"$p4"; wait $p4 2>/dev/null
wait $p0; rc0=$?
wait $p1; rc1=$?
[ $rc0 = 0 ] && [ $rc1 = 0 ] && ok "tasks 0 and 1 ran at once" || bad "tasks 0, 1 exited $rc0, $rc1: $(tail -n 3 "$run"/logs/*.err)"
[ $rc2 = 2 ] && ok "task 2 failed (exit 2)" || bad "task 2 exited $rc2"
for k in 0 1; do
  f="$run/csv/t$k-n$k-$host-77_$k.csv"
  rows=$(grep -c ',cpu,copy,eager,f32,4096,' "$f" 2>/dev/null)
  [ "$rows" = 1 ] && ok "task $k: its own CSV, whole" || bad "task $k: $f has $rows rows: $(ls "$run/csv")"
  grep -q "scheduler: slurm job $((100 + k)), array task 77_$k, node n$k" "$f" && ok "task $k: its job in the CSV" \
    || bad "task $k: no scheduler line"
done
[ "$(ls "$run/csv" | wc -l)" = 2 ] && ok "two CSVs, nothing else in csv/" || bad "csv/: $(ls -a "$run/csv")"
grep -q '^state=failed' "$run/status/t2-77_2" && grep -q '^step=calibrate' "$run/status/t2-77_2" \
  && ok "task 2's status: calibrate failed" || bad "task 2's status: $(cat "$run/status/t2-77_2")"

# the merge: the table names the failed and the missing task, the report the same
"$run/bin/merge.sh" "$run" >"$T/merge.out" 2>&1 && ok "merge.sh exited 0" || bad "merge.sh: $(tail -n 5 "$T/merge.out")"
grep -q '^2,"node=n2","n2",FAILED,"",calibrate,"exit 2: membound: error: .*directory' "$run/tasks.csv" \
  && ok "tasks.csv: task 2 FAILED at calibrate, its error" || bad "tasks.csv: $(cat "$run/tasks.csv")"
grep -q '^3,"constraint=never","",MISSING,"",,"no status file' "$run/tasks.csv" \
  && ok "tasks.csv: task 3 MISSING" || bad "tasks.csv task 3"
grep -q '^4,"node=n4","n4",UNFINISHED,"",calibrate,"its calibrate step never ended: killed' "$run/tasks.csv" \
  && ok "tasks.csv: task 4 UNFINISHED in calibrate" || bad "tasks.csv task 4"
md=$run/report/report.md
grep -q '\*\*2 of 5 tasks delivered rows; missing:\*\* task 2 (node=n2 on n2): FAILED — exit 2' "$md" \
  && ok "report: task 2 missing, with its reason" || bad "report: no missing task 2: $(grep -i missing "$md")"
grep -q 'task 3 (constraint=never, never ran): MISSING' "$md" && ok "report: task 3 never ran" || bad "report: task 3"
grep -q '^missing: task 2 (node=n2 on n2): FAILED: exit 2' "$T/merge.out" && ok "report's summary names task 2" \
  || bad "report's summary: $(grep -i missing "$T/merge.out")"
grep -qE '^\| n[01] \| ' "$md" && ok "report: the delivered devices" || bad "report: devices"

# resume: only the tasks without a CSV are submitted again
"$F/fleet.sh" --resume "$run" --dry-run >"$T/out" 2>"$T/err"
grep -q -- "--array=2,3,4 " "$T/err" && ok "--resume: tasks 2, 3 and 4 only" || bad "--resume: $(cat "$T/err")"

# a CSV replaced by a link: refused, not reported
mv "$run/csv/t1-n1-$host-77_1.csv" "$T/moved.csv"
ln -s "$T/moved.csv" "$run/csv/t1-n1-$host-77_1.csv"
"$run/bin/merge.sh" "$run" >"$T/merge.out" 2>&1
grep -q '^1,.*"its CSV refused: .*symbolic link"' "$run/tasks.csv" && ok "a linked CSV refused" \
  || bad "linked CSV: $(cat "$run/tasks.csv")"

# usage and trust
expect 2 "no --target" "$F/fleet.sh" -r "$T/results" --dry-run
expect 2 "no results folder" "$F/fleet.sh" --target node=a --dry-run
expect 2 "--target 'gpu=a': constraint=FEATURES or node=NAME" "$F/fleet.sh" -r "$T/results" --target gpu=a --dry-run
expect 2 "a second target named 'a'" "$F/fleet.sh" -r "$T/results" --target node=a --target constraint=a --dry-run
expect 2 "unknown option '--bogus'" "$F/fleet.sh" --bogus
expect 2 "option '--target' needs a value" "$F/fleet.sh" -r "$T/results" --target
expect 2 "the variants or sizes: unknown variant 'nosuch'" "$F/fleet.sh" -r "$T/results" --target node=a \
  --membound "$B" --dry-run nosuch
mkdir "$T/noslurm" && ln -s "$(command -v dirname)" "$T/noslurm/" # a PATH without SLURM's tools
expect 1 "sbatch not found: run this on a SLURM login node" env PATH="$T/noslurm" \
  "$(command -v bash)" "$F/fleet.sh" -r "$T/results" --target node=a --membound "$B"
expect 2 "--time: minutes" "$F/fleet.sh" -r "$T/results" --target node=a --time 0 --dry-run
expect 2 "exists already" "$F/fleet.sh" -r "$T/results" --run r1 --target node=a --membound "$B" --dry-run
mkdir -m 777 "$T/open"
expect 2 "writable by everyone (chmod o-w" "$F/fleet.sh" -r "$T/open" --target node=a --membound "$B" --dry-run
mkdir -m 770 "$T/group"
expect 2 "writable by its group but not sticky" "$F/fleet.sh" -r "$T/group" --target node=a --membound "$B" --dry-run
mkdir -m 700 "$T/real" && ln -s "$T/real" "$T/link"
expect 2 "is a symbolic link" "$F/fleet.sh" -r "$T/link" --target node=a --membound "$B" --dry-run
chmod g+w "$run"
expect 2 "r1: not yours alone" env SLURM_ARRAY_TASK_ID=0 "$run/bin/task.sh" "$run"
chmod g-w "$run"
chmod g+w "$run/bin/lib.sh" # refused before it is sourced
expect 2 "lib.sh: not yours alone" env SLURM_ARRAY_TASK_ID=0 "$run/bin/task.sh" "$run"
expect 2 "lib.sh: not yours alone" "$run/bin/merge.sh" "$run"
chmod g-w "$run/bin/lib.sh"
chmod g+w "$run/fleet.env"
expect 2 "fleet.env is writable by its group or others" env SLURM_ARRAY_TASK_ID=0 "$run/bin/task.sh" "$run"
chmod g-w "$run/fleet.env"
expect 2 "no task 9" env SLURM_ARRAY_TASK_ID=9 "$run/bin/task.sh" "$run"
[ $fails = 0 ] && echo "all checks passed" || { echo "$fails checks failed"; exit 1; }
