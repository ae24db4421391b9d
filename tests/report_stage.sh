#!/bin/bash
# report_stage.sh — `report` puts its folder in place whole: a report
# interrupted at random moments (SIGTERM) leaves the old report or the new
# one, byte for byte, never a mix, and no staging folder or temporary; one
# interrupted while gnuplot hangs leaves the old one; a refused report writes
# nothing; files of others in the folder (a demo's CSVs, logs/) stay.
set -u
B=${MB_BIN:?MB_BIN: the membound binary}
S=${MB_SRC:?MB_SRC: the source tree}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
# the folder's files and their checksums, by relative path
sums() { ( cd "$1" && find . -type f ! -name 'mine.txt' ! -path './logs/*' -print0 | sort -z |
           xargs -0 md5sum ) 2>/dev/null; }
litter() { find "$tmp" -name '*staging*' -o -name '.*tmp*' -o -name '.*.log*' | head -3; }
old_csv=$S/reports/data/cpu-amd-epyc-2vcpu/all-copy.csv
new_csv=$S/reports/data/cpu-amd-epyc-2vcpu/all-sigmoid3.csv
"$B" report "$old_csv" -o "$tmp/old" >/dev/null 2>&1 || bad "the old report failed"
"$B" report "$new_csv" -o "$tmp/new" >/dev/null 2>&1 || bad "the new report failed"
sums "$tmp/old" >"$tmp/old.sum"
sums "$tmp/new" >"$tmp/new.sum"
cmp -s "$tmp/old.sum" "$tmp/new.sum" && bad "the two reports do not differ: the test cannot tell them apart"
# state: "old", "new" or "mixed"
state() {
  sums "$tmp/rep" >"$tmp/rep.sum"
  if cmp -s "$tmp/rep.sum" "$tmp/old.sum"; then echo old
  elif cmp -s "$tmp/rep.sum" "$tmp/new.sum"; then echo new
  else echo mixed; fi
}
reset() {
  rm -rf "$tmp/rep"
  cp -a "$tmp/old" "$tmp/rep"
  echo mine >"$tmp/rep/mine.txt"
  mkdir -p "$tmp/rep/logs" && echo log >"$tmp/rep/logs/a.log"
}
others_kept() { [ "$(cat "$tmp/rep/mine.txt" 2>/dev/null)" = mine ] && [ -f "$tmp/rep/logs/a.log" ]; }

# 1. a signal at random moments: old or new, whole
RANDOM=${MB_SEED:-24}
seen=""
for i in 1 2 3 4 5 6 7 8; do
  reset
  "$B" report "$new_csv" -o "$tmp/rep" >/dev/null 2>&1 &
  pid=$!
  ms=$((RANDOM % 1600))
  sleep "$(awk -v m=$ms 'BEGIN { printf "%.3f", m / 1000 }')"
  kill -TERM $pid 2>/dev/null
  wait $pid
  st=$(state)
  seen="$seen $ms:$st"
  [ "$st" != mixed ] || { bad "SIGTERM after $ms ms left a mix of the two reports:"; diff "$tmp/rep.sum" "$tmp/new.sum" >&2; }
  others_kept || bad "SIGTERM after $ms ms: the folder's other files are gone"
  [ -z "$(litter)" ] || bad "SIGTERM after $ms ms left $(litter)"
done
echo "interrupted at (ms:state):$seen"

# 2. interrupted while gnuplot hangs: the old report, untouched
reset
printf '#!/bin/sh\necho $$ > %s\nexec sleep 60\n' "$tmp/gp.pid" >"$tmp/hang-gnuplot"
chmod +x "$tmp/hang-gnuplot"
MEMBOUND_GNUPLOT=$tmp/hang-gnuplot "$B" report "$new_csv" -o "$tmp/rep" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do [ -s "$tmp/gp.pid" ] && break; sleep 0.05; done
kill -TERM $pid
wait $pid
[ "$(state)" = old ] || bad "interrupted while gnuplot ran: the folder is $(state), expected old"
[ -z "$(litter)" ] || bad "interrupted while gnuplot ran: left $(litter)"

# 3. a run that completes replaces it whole and keeps the others' files
reset
"$B" report "$new_csv" -o "$tmp/rep" >/dev/null 2>&1 || bad "report into an existing folder failed"
[ "$(state)" = new ] || bad "a completed report left the folder $(state)"
others_kept || bad "a completed report dropped the folder's other files"

# 4. refused: nothing written, to a new folder or over the old report
printf 'device,backend,variant,plan,dtype,n,time_s_median,verified\nh100-sxm,cuda,copy,eager,f32,x,1,1\n' >"$tmp/bad.csv"
"$B" report "$tmp/bad.csv" -o "$tmp/fresh/rep" >/dev/null 2>&1
[ $? = 2 ] || bad "a bad CSV was not refused with exit 2"
[ ! -e "$tmp/fresh" ] || bad "a refused report created $tmp/fresh"
reset
"$B" report "$tmp/bad.csv" -o "$tmp/rep" >/dev/null 2>&1
[ "$(state)" = old ] || bad "a refused report changed the old one"
[ -z "$(litter)" ] || bad "a refused report left $(litter)"

[ $fail = 0 ] && echo "report_stage: ok"
exit $fail
