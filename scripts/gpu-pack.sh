#!/usr/bin/env bash
# gpu-pack.sh — packs a GPU session's work folder into ARCHIVE/gpu.tgz, in the
# shape the device tool brings back from $OUT (each file at most 16 MiB):
#   - through a temporary name of its own (gpu.tgz.tmp.PID, renamed over
#     gpu.tgz when whole), so two packs at once, or a kill mid-pack, never
#     leave a broken gpu.tgz: the previous one stays;
#   - a file that grows while tar reads it (a log, a CSV being written) is
#     packed as far as tar read it: tar's "file changed as we read it" (exit
#     1) still makes a valid archive, and is not taken as a failure;
#   - files over 8 MiB are left out and named in WORKDIR/pack-skipped.txt
#     (packed), so one runaway log cannot push the archive over the limit;
#     an archive still over 15 MiB is refused (the previous one stays);
#   - SIGTERM stops tar too (no orphan left writing) and removes the
#     temporary file.
# usage: scripts/gpu-pack.sh WORKDIR ARCHIVE
# Exit: 0 packed; 1 not packed (the previous gpu.tgz, if any, is kept); 2 bad usage.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/gpu-pack.sh WORKDIR ARCHIVE" >&2; exit 2; }
work=$1
archive=$2
[ -d "$work" ] && [ -d "$archive" ] || { echo "gpu-pack: error: '$work' or '$archive' is not a folder" >&2; exit 2; }
work=$(cd "$work" && pwd)
name=$(basename "$work")
parent=$(dirname "$work")
max_file_bytes=$((8 * 1024 * 1024))
max_archive_bytes=$((15 * 1024 * 1024))
tmp=$archive/gpu.tgz.tmp.$$
tar_pid=""
trap '[ -n "$tar_pid" ] && kill "$tar_pid" 2>/dev/null; rm -f "$tmp"; exit 143' TERM INT HUP

# the files too large to come back, named inside the archive
skipped=$work/pack-skipped.txt
big=$(find "$work" -type f -size +$((max_file_bytes / 1024))k ! -name pack-skipped.txt 2>/dev/null)
if [ -n "$big" ]; then
  {
    echo "files over $((max_file_bytes / 1048576)) MiB, left out of gpu.tgz (the device tool brings back <= 16 MiB a file):"
    while read -r f; do echo "$(stat -c %s "$f") ${f#"$parent"/}"; done <<<"$big"
  } >"$skipped.$$" && mv -f "$skipped.$$" "$skipped"
else
  rm -f "$skipped"
fi
excl=()
while read -r f; do [ -n "$f" ] && excl+=(--exclude="${f#"$parent"/}"); done <<<"$big"

tar --warning=no-file-changed -czf "$tmp" -C "$parent" ${excl[@]+"${excl[@]}"} "$name" 2>/dev/null &
tar_pid=$!
wait "$tar_pid"
r=$?
tar_pid=""
# 1: a file changed while it was read (packed as far as read): still valid
if [ "$r" -gt 1 ] || [ ! -s "$tmp" ]; then
  rm -f "$tmp"
  echo "gpu-pack: tar exited $r: gpu.tgz not refreshed" >&2
  exit 1
fi
size=$(stat -c %s "$tmp")
if [ "$size" -gt "$max_archive_bytes" ]; then
  rm -f "$tmp"
  echo "gpu-pack: the archive would be $size bytes (> 15 MiB): gpu.tgz not refreshed" >&2
  exit 1
fi
mv -f "$tmp" "$archive/gpu.tgz"
