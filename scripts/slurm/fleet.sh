#!/usr/bin/env bash
# fleet.sh — measures every node type of a SLURM cluster and merges them
# into one report: a run folder in the shared results folder, one sbatch
# job array (two where some targets want a GPU: those ask --gres=gpu:1),
# one task per target, each task pinned to its target (scontrol update of
# the held task: Features= for a constraint, ReqNodeList= for a node), and
# a merge job that runs after all of them whatever their end
# (--dependency=afterany) and reports over what arrived, naming the tasks
# that delivered nothing and why. --resume RUN submits again the tasks of a
# run that left no CSV, and a new merge. docs/fleet.md has the walk.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
umask 027
. "$HERE/lib.sh"

usage() {
  cat <<'EOF'
usage: scripts/slurm/fleet.sh -r RESULTS --target SEL[,gpu]... [options] [VARIANT...]
       scripts/slurm/fleet.sh --resume RESULTS/RUN [--dry-run]

One task per --target: constraint=FEATURES (a node with these features) or
node=NAME (that node); ',gpu' asks --gres=gpu:1 and measures on the CUDA
backend, else the CPU's. Each task calibrates its node (spec named by the
target) and runs 'membound measure VARIANT...' (default: the lecture's demos)
against it; the merge job runs 'membound report' over the CSVs that arrived.

  -r, --results DIR   the shared results folder: made group-owned, mode 3770
                      (setgid, sticky: members add runs and cannot move
                      yours), when missing; refused when others may write it
  --target SEL[,gpu]  a task (repeatable, at least one)
  --partition P       sbatch --partition
  --group G           the results folder's group when it is made (default:
                      your primary group)
  --time MIN          each task's time limit in minutes (default 30)
  --sizes LIST        measure --sizes (default: each variant's lecture sizes)
  --timeout S         measure --timeout: a row's sampling stops after S seconds
  --quick             calibrate --quick: a smoke test's calibration
  --shared            do not ask --exclusive (tasks may share a node: tests)
  --membound PATH     the binary the nodes run (default: this checkout's
                      build/bin/membound; it must be on a file system the
                      nodes see)
  --run NAME          the run's folder name (default: run-DATE-PID)
  --dry-run           write the run's folder, print the sbatch commands,
                      submit nothing
  -h, --help          this help

Prints the run's folder and the job ids; the merged report lands in
RESULTS/RUN/report/ (report.html, report.md), the task table in
RESULTS/RUN/tasks.csv.
EOF
}

results="" partition="" group="" time_min=30 sizes="" timeout="" quick=0 shared=0 dry=0 run_name="" resume=""
membound="$HERE/../../build/bin/membound"
targets=() variants=()
while [ $# -gt 0 ]; do
  case $1 in
    -r|--results|--target|--partition|--group|--time|--sizes|--timeout|--membound|--run|--resume)
      [ $# -ge 2 ] && [ -n "$2" ] || fleet_die 2 "option '$1' needs a value (see --help)" ;;
  esac
  case $1 in
    -r|--results) results=$2; shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    --partition) partition=$2; shift 2 ;;
    --group) group=$2; shift 2 ;;
    --time) time_min=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --shared) shared=1; shift ;;
    --membound) membound=$2; shift 2 ;;
    --run) run_name=$2; shift 2 ;;
    --resume) resume=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) fleet_die 2 "unknown option '$1' (see --help)" ;;
    *) variants+=("$1"); shift ;;
  esac
done
[[ $time_min =~ ^[1-9][0-9]{0,4}$ ]] || fleet_die 2 "--time: minutes, 1 to 99999, got '$time_min'"
if [ "$dry" = 0 ]; then
  for t in sbatch scontrol scancel; do
    command -v "$t" >/dev/null || fleet_die 1 "$t not found: run this on a SLURM login node (or try --dry-run)"
  done
fi
[ -z "$timeout" ] || [[ $timeout =~ ^[0-9]+(\.[0-9]+)?$ ]] || fleet_die 2 "--timeout: seconds, got '$timeout'"

# submit KIND IDS RUN: one held array of the tasks IDS (comma-separated), each
# pinned to its target, released; prints the array's job id
submit() {
  local gpu=$1 ids=$2 run=$3 args jid k
  args=(--parsable --hold --job-name=membound-fleet --array="$ids" --time="$time_min" --ntasks=1
        --output="$run/logs/slurm-%A_%a.out")
  [ "$shared" = 1 ] || args+=(--exclusive)
  [ -n "$partition" ] && args+=(--partition="$partition")
  [ "$gpu" = 1 ] && args+=(--gres=gpu:1)
  if [ "$dry" = 1 ]; then echo "sbatch ${args[*]} $run/bin/task.sh $run" >&2; echo DRY; return; fi
  jid=$(sbatch "${args[@]}" "$run/bin/task.sh" "$run") || fleet_die 1 "sbatch refused the array (above)"
  jid=${jid%%;*}
  for k in ${ids//,/ }; do
    fleet_task "$run" "$k"
    case $TASK_TARGET in
      constraint=*) scontrol update JobId="${jid}_$k" Features="${TASK_TARGET#constraint=}" ;;
      node=*) scontrol update JobId="${jid}_$k" ReqNodeList="${TASK_TARGET#node=}" ;;
    esac || { scancel "$jid"; fleet_die 1 "scontrol could not pin task $k to $TASK_TARGET: the array $jid is cancelled"; }
  done
  scontrol release "$jid" || fleet_die 1 "scontrol release $jid failed"
  echo "$jid"
}

if [ -n "$resume" ]; then
  run=$(cd "$resume" && pwd) || fleet_die 2 "--resume: no folder $resume"
  why=$(fleet_dir_ok "$run" own) || fleet_die 2 "--resume $run: $why"
  why=$(fleet_file_ok "$run/fleet.env") || fleet_die 2 "$why"
  . "$run/fleet.env"
  membound=$MEMBOUND time_min=$TIME_MIN partition=$PARTITION shared=$SHARED
else
  [ -n "$results" ] || fleet_die 2 "no results folder (-r RESULTS; see --help)"
  [ ${#targets[@]} -gt 0 ] || fleet_die 2 "no --target (constraint=FEATURES or node=NAME, ',gpu' for a GPU)"
  [ -x "$membound" ] || fleet_die 2 "$membound: not an executable (build it, or give --membound)"
  membound=$(cd "$(dirname "$membound")" && pwd)/$(basename "$membound")
  [ ${#variants[@]} -gt 0 ] || variants=(copy sin2_plus_cos2 gelu_tanh sigmoid3)
  # the variants and sizes checked here, not on every node
  szarg=()
  [ -n "$sizes" ] && szarg=(--sizes "$sizes")
  err=$("$membound" model "${variants[@]}" "${szarg[@]}" --device h100-sxm 2>&1 >/dev/null) ||
    fleet_die 2 "the variants or sizes: ${err#membound: error: }"
  # the task table, checked before anything is made
  table=$(printf '# task\tlabel\ttarget\tgpu')
  k=0 seen=" "
  for t in "${targets[@]}"; do
    sel=${t%,gpu} gpu=0
    [ "$sel" != "$t" ] && gpu=1
    case $sel in constraint=?*|node=?*) ;; *) fleet_die 2 "--target '$t': constraint=FEATURES or node=NAME, then ',gpu' or nothing" ;; esac
    label=$(fleet_label "$sel")
    [ -n "$label" ] || fleet_die 2 "--target '$t': no letter or digit to name it by"
    case $seen in *" $label "*) fleet_die 2 "--target '$t': a second target named '$label'" ;; esac
    seen="$seen$label "
    table+=$(printf '\n%d\t%s\t%s\t%d' "$k" "$label" "$sel" "$gpu")
    k=$((k + 1))
  done
  if [ ! -e "$results" ]; then
    mkdir -p "$results"
    [ -n "$group" ] && chgrp "$group" "$results"
    chmod 3770 "$results"
  fi
  why=$(fleet_dir_ok "$results" shared) || fleet_die 2 "--results $results: $why"
  results=$(cd "$results" && pwd)
  run="$results/${run_name:-run-$(date -u +%Y%m%dT%H%M%SZ)-$$}"
  [[ $(basename "$run") =~ ^[A-Za-z0-9._-]+$ ]] || fleet_die 2 "--run: letters, digits, '.', '_', '-' only"
  mkdir -m 2750 "$run" 2>/dev/null || fleet_die 2 "$run exists already (give another --run, or --resume it)"
  mkdir -m 2750 "$run/bin" "$run/spec" "$run/csv" "$run/status" "$run/logs"
  cp "$HERE/lib.sh" "$HERE/task.sh" "$HERE/merge.sh" "$run/bin/"
  chmod 640 "$run/bin/lib.sh"; chmod 750 "$run/bin/task.sh" "$run/bin/merge.sh"
  printf '%s\n' "$table" >"$run/tasks.tsv"
  {
    printf 'MEMBOUND=%q\nSIZES=%q\nTIMEOUT=%q\nQUICK=%q\nTIME_MIN=%q\nPARTITION=%q\nSHARED=%q\n' "$membound" \
      "$sizes" "$timeout" "$quick" "$time_min" "$partition" "$shared"
    printf 'VARIANTS=('; printf ' %q' "${variants[@]}"; printf ' )\n'
  } >"$run/fleet.env"
  chmod 640 "$run/tasks.tsv" "$run/fleet.env"
fi

# the tasks to submit: all, or (resume) those that left no CSV; by kind
cpu_ids="" gpu_ids=""
while IFS=$'\t' read -r k label target gpu; do
  case $k in \#*) continue ;; esac
  if [ -n "$resume" ] && compgen -G "$run/csv/t$k-*.csv" >/dev/null; then continue; fi
  if [ "$gpu" = 1 ]; then gpu_ids+="${gpu_ids:+,}$k"; else cpu_ids+="${cpu_ids:+,}$k"; fi
done <"$run/tasks.tsv"
[ -n "$cpu_ids$gpu_ids" ] || { echo "membound fleet: every task of $run has its CSV: nothing to resume"; exit 0; }

jobs=()
[ -n "$cpu_ids" ] && jobs+=("$(submit 0 "$cpu_ids" "$run")")
[ -n "$gpu_ids" ] && jobs+=("$(submit 1 "$gpu_ids" "$run")")
dep=$(IFS=:; echo "${jobs[*]}")
margs=(--parsable --job-name=membound-fleet-merge --dependency="afterany:$dep" --ntasks=1 --time="$time_min"
       --output="$run/logs/merge-%j.out")
[ -n "$partition" ] && margs+=(--partition="$partition")
if [ "$dry" = 1 ]; then
  echo "sbatch ${margs[*]} $run/bin/merge.sh $run" >&2
  echo "run: $run (dry run: nothing submitted)"
  exit 0
fi
mjob=$(sbatch "${margs[@]}" "$run/bin/merge.sh" "$run") || fleet_die 1 "sbatch refused the merge job"
mjob=${mjob%%;*}
printf '%s %s\n' "${jobs[*]}" "$mjob" >>"$run/jobs"
echo "run: $run"
echo "tasks: job array${jobs[1]:+s} ${jobs[*]} (cpu: ${cpu_ids:-none}; gpu: ${gpu_ids:-none})"
echo "merge: job $mjob (after the tasks, whatever their end): $run/report/report.html"
