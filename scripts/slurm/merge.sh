#!/usr/bin/env bash
# merge.sh RUN — the fleet run's last job (after every task, whatever its
# end): the task table RUN/tasks.csv (each task's target, the node it ran
# on, how it ended in the scheduler's words, the step that failed and its
# last error line, its CSV) from the tasks' status files and scontrol, then
# 'membound report' over the CSVs that arrived into RUN/report/, with the
# table, so that the report names the tasks that delivered nothing and why.
# Exits 1 when no task delivered a CSV (the table still written). Trusts
# nothing another user can write: RUN and its files must be yours alone.
set -u
RUN=${1:?usage: merge.sh RUN}
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
. "$RUN/fleet.env"

# the scheduler's word on every task of the run's arrays (while it still
# remembers them: MinJobAge): "ARRAYJOB_TASK STATE EXIT NODE REASON" lines
sched=""
if [ -f "$RUN/jobs" ] && command -v scontrol >/dev/null; then
  for j in $(tr ' ' '\n' <"$RUN/jobs"); do
    sched+=$(scontrol show job -o "$j" 2>/dev/null | awk '
      { s = ""; t = ""; e = ""; n = ""; r = "";
        for (i = 1; i <= NF; i++) { split($i, kv, "=");
          if (kv[1] == "ArrayJobId") a = kv[2]; if (kv[1] == "ArrayTaskId") t = kv[2];
          if (kv[1] == "JobState") s = kv[2]; if (kv[1] == "ExitCode") e = kv[2];
          if (kv[1] == "NodeList") n = kv[2]; if (kv[1] == "Reason") r = kv[2] }
        if (t != "") print a "_" t, s, e, n, r }')
    sched+=$'\n'
  done
fi

# csv_field TEXT: TEXT as one CSV field (quoted, quotes doubled, one line)
csv_field() {
  local v=${1//$'\n'/ }
  printf '"%s"' "${v//\"/\"\"}"
}

csvs=()
{
  echo "task,target,node,state,exit,step,reason,csv"
  while IFS=$'\t' read -r k label target gpu; do
    case $k in \#*) continue ;; esac
    # the task's latest run: its newest status file
    st=$(ls -t "$RUN/status/t$k-"* 2>/dev/null | head -n 1)
    node="" state="" step="" reason="" csv="" exitc="" job=""
    if [ -n "$st" ] && fleet_file_ok "$st" >/dev/null; then
      job=$(sed -n 's/^job=//p' "$st"); node=$(sed -n 's/^node=//p' "$st")
      step=$(sed -n 's/^step=//p' "$st"); state=$(sed -n 's/^state=//p' "$st")
      reason=$(sed -n 's/^reason=//p' "$st"); csv=$(sed -n 's/^csv=//p' "$st")
    fi
    # the scheduler's state wins where it knows the task
    if [ -n "$job" ]; then line=$(grep -F "$job " <<<"$sched" | grep "^$job " | tail -n 1)
    else line=$(grep -E "^[0-9]+_$k " <<<"$sched" | tail -n 1); fi
    if [ -n "$line" ]; then
      read -r _ sstate sexit snode sreason <<<"$line"
      [ -n "$snode" ] && [ "$snode" != "(null)" ] && node=${node:-$snode}
      exitc=$sexit
      case $sstate in
        COMPLETED) [ "$state" = ok ] || reason=${reason:-"ended without its status file"} ;;
        *) [ "$state" = ok ] || reason="${reason:+$reason; }the scheduler says $sstate${sreason:+ ($sreason)}" ;;
      esac
      state=$sstate
    elif [ -z "$st" ]; then
      state=MISSING reason="no status file: the task never started (or the scheduler forgot it)"
    else
      case $state in
        ok) state=COMPLETED ;;
        running) state=UNFINISHED reason="its $step step never ended: killed (a time limit, a node failure) or still running" ;;
        *) state=${state^^} ;;
      esac
    fi
    if [ -n "$csv" ]; then
      if why=$(fleet_file_ok "$RUN/csv/$csv"); then csvs+=("$RUN/csv/$csv")
      else reason="its CSV refused: $why"; csv=""; fi
    fi
    [ "$state" = COMPLETED ] && [ -n "$csv" ] && step=""
    printf '%s,%s,%s,%s,%s,%s,%s,%s\n' "$k" "$(csv_field "$target")" "$(csv_field "$node")" "$state" \
      "$(csv_field "$exitc")" "$step" "$(csv_field "$reason")" "$(csv_field "$csv")"
  done <"$RUN/tasks.tsv"
} >"$RUN/tasks.csv.tmp" && mv -f "$RUN/tasks.csv.tmp" "$RUN/tasks.csv"

echo "membound fleet: $RUN/tasks.csv:"
cat "$RUN/tasks.csv"
[ ${#csvs[@]} -gt 0 ] || fleet_die 1 "no task delivered a CSV: no report (the tasks' table says why)"
smoke=()
[ "${QUICK:-0}" = 1 ] && smoke=(--smoke-test)
"$MEMBOUND" report "${csvs[@]}" --fleet "$RUN/tasks.csv" -o "$RUN/report" "${smoke[@]}"
