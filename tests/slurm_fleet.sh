#!/usr/bin/env bash
# slurm_fleet.sh — a fleet run end to end under a real SLURM: the test
# starts munged, slurmctld and slurmd itself (no systemd, no cgroup plugins)
# on this machine with tests/slurm/slurm.conf.in, submits a two-task array
# through scripts/slurm/fleet.sh on the CPU backend at small sizes (one task
# pinned to each of the node's two features), waits for the merge job with
# a deadline, and checks what arrived: both CSVs under their task, target,
# host and job names with the job in their provenance, the folders' modes,
# the task table, and the merged report (a device per target, the Machines
# section, the verdict table, the model-error figure). The daemons are
# stopped whatever happens (trap). Where they cannot start it exits 77
# printing the daemon's own error. scripts/test.sh installs slurm-wlm and
# munge (Debian's).
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
SRC=${MB_SRC:?MB_SRC: the source tree}
DEADLINE_S=${MB_SLURM_DEADLINE_S:-150}
for t in munged mungekey slurmctld slurmd sbatch scontrol squeue sinfo; do
  command -v "$t" >/dev/null || { echo "skipped: $t not found (scripts/test.sh installs slurm-wlm and munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "skipped: slurmd starts jobs as their user and must run as root here (uid $(id -u))"; exit 77; }

T=$(mktemp -d /tmp/mb_slurm.XXXXXX)
chmod 755 "$T" # munged wants its socket's folders searchable by all
pids=()
stop() {
  local p
  # this cluster's jobs first (it runs only the test's), so that no task outlives its daemons
  if [ ${#pids[@]} = 3 ] && kill -0 "${pids[1]}" 2>/dev/null; then
    scancel --user="$(id -un)" 2>/dev/null
    for _ in $(seq 50); do squeue -h 2>/dev/null | grep -q . || break; sleep 0.1; done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  [ -n "${MB_SLURM_KEEP:-}" ] && echo "kept: $T" || rm -rf "$T"
}
trap stop EXIT
trap 'exit 143' TERM INT HUP
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# skip WHO LOG: the daemon's own error, then exit 77
skip() {
  echo "skipped: $1 did not start; its log says:"
  grep -iE 'error|fatal' "$2" 2>/dev/null | tail -n 5 || tail -n 5 "$2"
  exit 77
}

mkdir -m 700 "$T/munge" "$T/state" "$T/spool" && mkdir -m 755 "$T/run" "$T/log"
# two free ports, chosen by the kernel
read -r p1 p2 < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {print int($2 / 2048)}' /proc/meminfo)
sed -e "s|@DIR@|$T|g; s|@HOST@|$host|g; s|@CTLD_PORT@|$p1|; s|@SLURMD_PORT@|$p2|; s|@USER@|$(id -un)|" \
    -e "s|@CPUS@|$cpus|; s|@MEM_MB@|$mem_mb|" "$SRC/tests/slurm/slurm.conf.in" >"$T/slurm.conf"
export SLURM_CONF=$T/slurm.conf
t0=$SECONDS

mungekey --create --keyfile="$T/munge/munge.key" >/dev/null 2>&1 || { echo "skipped: mungekey failed"; exit 77; }
munged -F --socket="$T/run/munge.socket" --key-file="$T/munge/munge.key" --pid-file="$T/run/munged.pid" \
  --log-file="$T/log/munged.log" --seed-file="$T/munge/seed" 2>>"$T/log/munged.log" &
pids+=($!)
for _ in $(seq 50); do [ -S "$T/run/munge.socket" ] && break; kill -0 "${pids[0]}" 2>/dev/null || break; sleep 0.1; done
[ -S "$T/run/munge.socket" ] || skip munged "$T/log/munged.log"
slurmctld -D -f "$T/slurm.conf" 2>>"$T/log/slurmctld.log" &
pids+=($!)
slurmd -D -f "$T/slurm.conf" -N mbnode 2>>"$T/log/slurmd.log" &
pids+=($!)
up=0
for _ in $(seq 100); do
  kill -0 "${pids[1]}" 2>/dev/null || skip slurmctld "$T/log/slurmctld.log"
  kill -0 "${pids[2]}" 2>/dev/null || skip slurmd "$T/log/slurmd.log"
  case $(sinfo -h -n mbnode -o %T 2>/dev/null) in idle*|mixed*) up=1; break ;; esac
  sleep 0.2
done
[ $up = 1 ] || { grep -h -iE 'error' "$T/log/slurmctld.log" "$T/log/slurmd.log" | tail -n 5; skip "the node (never idle)" "$T/log/slurmd.log"; }
echo "daemons up in $((SECONDS - t0)) s (ports $p1, $p2)"

# the run: two CPU tasks, each pinned to one of the node's features
out=$("$SRC/scripts/slurm/fleet.sh" -r "$T/results" --target constraint=typeA --target constraint=typeB \
      --partition mbtest --shared --quick --time 5 --sizes 2^16,2^18 --timeout 1 --membound "$B" sin2_plus_cos2 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || { bad "fleet.sh exited $rc"; exit 1; }
run=$(sed -n 's/^run: //p' <<<"$out")
mjob=$(sed -n 's/^merge: job \([0-9]*\).*/\1/p' <<<"$out")
ajob=$(sed -n 's/^tasks: job arrays* \([0-9]*\).*/\1/p' <<<"$out")
[ -d "$run" ] && [ -n "$mjob" ] && [ -n "$ajob" ] || { bad "no run folder or job ids in fleet.sh's output"; exit 1; }
# pinned: each task asked its own feature
for k in 0 1; do
  f=$(scontrol show job -o "${ajob}_$k" 2>/dev/null | grep -o 'Features=[^ ]*')
  want=$([ $k = 0 ] && echo typeA || echo typeB)
  [ "$f" = "Features=$want" ] && ok "task $k pinned to $want" || bad "task $k: '$f', expected Features=$want"
done

# wait for the merge job, with a deadline
t1=$SECONDS
while squeue -h -j "$mjob" 2>/dev/null | grep -q .; do
  if [ $((SECONDS - t1)) -gt "$DEADLINE_S" ]; then
    bad "the merge job $mjob still queued or running after $DEADLINE_S s"
    squeue -r; tail -n 20 "$run"/logs/*.err 2>/dev/null
    exit 1
  fi
  sleep 0.5
done
echo "array $ajob and merge $mjob done in $((SECONDS - t1)) s"
state=$(scontrol show job -o "$mjob" | grep -o 'JobState=[A-Z]*')
[ "$state" = JobState=COMPLETED ] && ok "merge job $state" || { bad "merge job $state"; cat "$run"/logs/merge-*.out; }

# the results folder and the run: group-owned, nobody else writes
[ "$(stat -c %a "$T/results")" = 3770 ] && ok "results folder 3770" || bad "results folder mode $(stat -c %a "$T/results")"
[ "$(stat -c %a "$run")" = 2750 ] && ok "run folder 2750" || bad "run folder mode $(stat -c %a "$run")"
# one CSV per task, under its task, target, host and job, with the job in its provenance
for k in 0 1; do
  lab=$([ $k = 0 ] && echo typeA || echo typeB)
  f=$(ls "$run/csv/t$k-$lab-$host-${ajob}_$k.csv" 2>/dev/null)
  if [ -n "$f" ]; then
    ok "task $k: $(basename "$f")"
    grep -q "scheduler: slurm job [0-9]*, array task ${ajob}_$k, node mbnode, partition mbtest, cluster mbtest" "$f" \
      && ok "task $k: the job in its provenance" || bad "task $k: no scheduler line in its provenance"
    [ "$(stat -c %a "$f")" = 640 ] && ok "task $k: CSV mode 640" || bad "task $k: CSV mode $(stat -c %a "$f")"
  else
    bad "task $k: no CSV t$k-$lab-$host-${ajob}_$k.csv in $run/csv: $(ls "$run/csv")"
    cat "$run"/logs/*.err 2>/dev/null | tail -n 5
  fi
done
# the task table: both completed on mbnode with their CSVs
tc=$(grep -c '^[01],"constraint=type[AB]","mbnode",COMPLETED,"0:0",,"","t[01]-type[AB]-' "$run/tasks.csv")
[ "$tc" = 2 ] && ok "tasks.csv: 2 tasks COMPLETED" || { bad "tasks.csv"; cat "$run/tasks.csv"; }
# the merged report: a device per target, each fitted, the machines, the verdicts, the figure
md=$run/report/report.md
if [ -f "$md" ]; then
  grep -q '^## Machines' "$md" && ok "report: Machines section" || bad "report: no Machines section"
  grep -q 'All 2 tasks of the fleet run delivered rows' "$md" && ok "report: both tasks delivered" || bad "report: tasks"
  for lab in typeA typeB; do
    grep -q "^### Verdicts on $lab (cpu)" "$md" && ok "report: verdicts on $lab" || bad "report: no verdicts on $lab"
    grep -qE "^\| $lab \| cpu \| [0-9]+ of [0-9]+ verified" "$md" && ok "report: fit of $lab" || bad "report: no fit row of $lab"
  done
  grep -q 'sin^2+cos^2\|sin2' "$md" && grep -q '^## Verdict' "$md" && ok "report: verdict table" || bad "report: verdict table"
  [ -s "$run/report/figures/model_error.dat" ] && ok "report: model error figure's data" || bad "report: no model_error.dat"
  echo "---- the merged report's verdicts and machines ----"
  sed -n '/^## Verdict/,/^## Fits/p' "$md" | grep '^|' | head -n 12
  sed -n '/^## Machines/,/^### Verdicts/p' "$md" | grep '^|'
else
  bad "no merged report ($md)"; cat "$run"/logs/merge-*.out
fi
echo "slurm_fleet: $((SECONDS - t0)) s from the daemons' start"
[ $fails = 0 ] && echo "all checks passed" || { echo "$fails checks failed"; exit 1; }
