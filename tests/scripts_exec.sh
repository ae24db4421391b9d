#!/bin/bash
# scripts_exec.sh — every script of bench/ and scripts/ (a file that starts
# with "#!", in scripts/slurm/ too) can be run as the docs write it, bench/report_scale.sh ...:
# it is executable in the checkout (git keeps the mode).
set -u
S=${MB_SRC:?MB_SRC: the source tree}
fail=0
n=0
for f in "$S"/bench/* "$S"/scripts/* "$S"/scripts/*/*; do
  [ -f "$f" ] || continue
  [ "$(head -c 2 "$f")" = '#!' ] || continue
  n=$((n + 1))
  [ -x "$f" ] || { echo "FAIL: ${f#"$S"/} starts with #! but is not executable" >&2; fail=1; }
done
[ "$n" -gt 0 ] || { echo "FAIL: no script found under $S/bench and $S/scripts" >&2; fail=1; }
[ $fail = 0 ] && echo "scripts_exec: $n scripts, all executable"
exit $fail
