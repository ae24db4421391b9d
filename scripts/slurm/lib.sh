# lib.sh — sourced by the fleet's scripts (fleet.sh, task.sh, merge.sh): one
# error line, the folder trust rules, a target's label, the task table.
# Runs nothing itself and talks to no scheduler.

# fleet_die CODE MESSAGE: one line on stderr, exit CODE (2 usage or input, 1 run)
fleet_die() {
  echo "membound fleet: error: $2" >&2
  exit "$1"
}

# fleet_dir_ok DIR KIND: 0 when DIR may hold the fleet's files, else one line
# on stdout saying why. Every folder on the way is root's or yours and
# writable by group or others only when sticky (as the calibration cache's
# rule, model/trusted_dir.c); KIND shared: DIR itself is yours or root's,
# not writable by others, and sticky where its group may write (the results
# folder: group members add their runs and cannot move yours); KIND own: DIR
# is yours and writable by you alone (a run's folder). A link on the way is
# refused.
fleet_dir_ok() {
  local dir=$1 kind=$2 me cur="" part uid mode rest
  me=$(id -u)
  case $dir in /*) ;; *) dir="$PWD/$dir" ;; esac
  rest=${dir#/}
  while :; do
    part=${rest%%/*}
    [ "$part" = "$rest" ] && rest="" || rest=${rest#*/}
    [ -n "$part" ] && cur="$cur/$part"
    [ -n "$cur" ] || cur=/
    [ -L "$cur" ] && { echo "$cur is a symbolic link (give the folder's real path)"; return 1; }
    [ -d "$cur" ] || { echo "$cur is not a folder"; return 1; }
    read -r uid mode < <(stat -c '%u %a' "$cur")
    mode=$((8#$mode))
    if [ -z "$rest" ]; then break; fi
    [ "$uid" = "$me" ] || [ "$uid" = 0 ] || { echo "the folder $cur on its way is owned by uid $uid, not you or root"; return 1; }
    if (( (mode & 8#022) && !(mode & 8#1000) )); then echo "the folder $cur on its way is writable by others (chmod go-w $cur)"; return 1; fi
  done
  case $kind in
    own)
      [ "$uid" = "$me" ] || { echo "$cur is owned by uid $uid, not you"; return 1; }
      (( mode & 8#022 )) && { echo "$cur is writable by its group or others (chmod go-w $cur)"; return 1; }
      ;;
    shared)
      [ "$uid" = "$me" ] || [ "$uid" = 0 ] || { echo "$cur is owned by uid $uid, not you or root"; return 1; }
      (( mode & 8#002 )) && { echo "$cur is writable by everyone (chmod o-w $cur)"; return 1; }
      if (( (mode & 8#020) && !(mode & 8#1000) )); then echo "$cur is writable by its group but not sticky: a member could move your runs (chmod +t $cur)"; return 1; fi
      ;;
  esac
  return 0
}

# fleet_file_ok FILE: a regular file (not a link) of yours, writable by you alone
fleet_file_ok() {
  local f=$1 uid mode
  [ -L "$f" ] && { echo "$f is a symbolic link"; return 1; }
  [ -f "$f" ] || { echo "$f is not a regular file"; return 1; }
  read -r uid mode < <(stat -c '%u %a' "$f")
  [ "$uid" = "$(id -u)" ] || { echo "$f is owned by uid $uid, not you"; return 1; }
  (( 8#$mode & 8#022 )) && { echo "$f is writable by its group or others"; return 1; }
  return 0
}

# fleet_label TARGET: the device id a target's node is named by in the
# report: constraint=a100&nvlink -> a100-nvlink, node=gpu017 -> gpu017
fleet_label() {
  local v=${1#*=}
  v=$(printf '%s' "$v" | tr -c 'A-Za-z0-9._+-' '-' | sed 's/--*/-/g; s/^-//; s/-$//')
  printf '%s' "${v:0:40}"
}

# fleet_task RUN K: task K's line of RUN/tasks.tsv into TASK_LABEL,
# TASK_TARGET, TASK_GPU; 1 when there is none
fleet_task() {
  local k label target gpu
  while IFS=$'\t' read -r k label target gpu; do
    case $k in \#*) continue ;; esac
    if [ "$k" = "$2" ]; then
      TASK_LABEL=$label TASK_TARGET=$target TASK_GPU=$gpu
      return 0
    fi
  done <"$1/tasks.tsv"
  return 1
}
