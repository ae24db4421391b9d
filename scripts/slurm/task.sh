#!/usr/bin/env bash
# task.sh RUN — one array task of a fleet run (scripts/slurm/fleet.sh
# submits it, a copy in RUN/bin/): task $SLURM_ARRAY_TASK_ID of
# RUN/tasks.tsv calibrates the node it runs on (its CPU, or its GPU for a
# target marked gpu) into RUN/spec/, named by the target, and measures the
# run's variants against that spec into RUN/csv/ under a name no other
# task can take: t<task>-<target>-<host>-<job>_<task>.csv. It writes
# RUN/status/t<task>-<job>_<task> before each step and after the last, so
# that the merge job can say where a task stopped and why; a failed step
# leaves no CSV (measure writes whole or not at all). Trusts nothing another
# user can write: RUN must be yours and writable by you alone.
set -u
RUN=${1:?usage: task.sh RUN}
# RUN, its bin/ and the library there must be yours and writable by you
# alone before anything of them runs (lib.sh's rules then check the rest)
for f in "$RUN" "$RUN/bin" "$RUN/bin/lib.sh"; do
  if [ -L "$f" ] || [ ! -e "$f" ] || [ "$(stat -c %u "$f")" != "$(id -u)" ] || (( 8#$(stat -c %a "$f") & 8#022 )); then
    echo "membound fleet: error: $f: not yours alone (missing, a link, another user's, or writable by others)" >&2
    exit 2
  fi
done
. "$RUN/bin/lib.sh"
umask 027
why=$(fleet_dir_ok "$RUN" own) || fleet_die 2 "$RUN: $why"
why=$(fleet_file_ok "$RUN/fleet.env") || fleet_die 2 "$why"
. "$RUN/fleet.env" # MEMBOUND, VARIANTS, SIZES, TIMEOUT, QUICK (written by fleet.sh)
K=${SLURM_ARRAY_TASK_ID:?not an array task (SLURM_ARRAY_TASK_ID unset)}
JOB="${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-0}}_$K"
fleet_task "$RUN" "$K" || fleet_die 2 "$RUN/tasks.tsv: no task $K"
host=$(hostname -s 2>/dev/null || hostname)
host=$(printf '%s' "$host" | tr -c 'A-Za-z0-9._-' '-')
node=${SLURMD_NODENAME:-$host}
stem="t$K-$TASK_LABEL-$host-$JOB"
status="$RUN/status/t$K-$JOB"
log="$RUN/logs/$stem"

# say STEP STATE [REASON]: the task's status file, replaced whole
say() {
  printf 'task=%s\njob=%s\nnode=%s\nhost=%s\nstep=%s\nstate=%s\nreason=%s\ncsv=%s\n' "$K" "$JOB" "$node" \
    "$host" "$1" "$2" "${3:-}" "${4:-}" >"$status.tmp" && mv -f "$status.tmp" "$status"
}
# step NAME CMD...: runs CMD with its output in the log; a failure is said
# (its last error line the reason) and ends the task with CMD's status
step() {
  local name=$1 rc=0
  shift
  say "$name" running
  "$@" >>"$log.out" 2>>"$log.err" || rc=$?
  if [ $rc -ne 0 ]; then
    local last
    last=$(grep -v '^\s*$' "$log.err" 2>/dev/null | tail -n 1 | tr -d '\r' | cut -c1-400)
    say "$name" failed "exit $rc: ${last:-no message}"
    exit $rc
  fi
}

# a private calibration cache on the node (the per-host cache would be
# shared by every node on a shared home)
cache=$(mktemp -d "${TMPDIR:-/tmp}/membound-fleet-cache.XXXXXX") || fleet_die 1 "no temporary folder"
trap 'rm -rf "$cache"' EXIT
export MEMBOUND_CACHE_DIR=$cache
backend=cpu
[ "$TASK_GPU" = 1 ] && backend=cuda
cal=(calibrate --backend "$backend" --name "$TASK_LABEL" -o "$RUN/spec/$stem.ini")
[ "${QUICK:-0}" = 1 ] && cal+=(--quick)
# the cores the scheduler gave the task (all of the node's with --exclusive)
if [ -n "${SLURM_CPUS_ON_NODE:-}" ]; then
  cal+=(--threads "$SLURM_CPUS_ON_NODE")
  threads=(--threads "$SLURM_CPUS_ON_NODE")
else
  threads=()
fi
meas=(measure "${VARIANTS[@]}" --backend "$backend" --device "$RUN/spec/$stem.ini" -o "$RUN/csv/$stem.csv")
meas+=("${threads[@]}")
[ -n "${SIZES:-}" ] && meas+=(--sizes "$SIZES")
[ -n "${TIMEOUT:-}" ] && meas+=(--timeout "$TIMEOUT")
echo "# task $K ($TASK_TARGET) as job $JOB on $node ($host), ${SLURM_CPUS_ON_NODE:-all} cores, $(date -u +%FT%TZ)" >>"$log.out"
step calibrate "$MEMBOUND" "${cal[@]}"
step measure "$MEMBOUND" "${meas[@]}"
say done ok "" "$stem.csv"
