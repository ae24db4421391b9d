#!/usr/bin/env bash
# gelu_fit.sh — kernels/vec_ops.h's GELU coefficients are the ones
# bench/gelu_fit.py fits (Debian's python3 with numpy and mpmath): every
# coefficient it prints appears in vec_ops.h, and each fit is as tight as
# the header says (erf 8e-10, erfc exp(z^2) 6e-9).
set -u
S=${MB_SRC:?MB_SRC: the source tree}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import numpy, mpmath' 2>/dev/null || { echo "SKIP: no numpy or mpmath"; exit 77; }
out=$("$PY" "$S/bench/gelu_fit.py") || { echo "FAIL: gelu_fit.py"; exit 1; }
fail=0
n=0
for c in $(printf '%s\n' "$out" | grep -oE -- '-?[0-9][0-9.e+-]*f'); do
  n=$((n + 1))
  grep -qF -- "$c" "$S/kernels/vec_ops.h" || { echo "FAIL: coefficient $c is not in vec_ops.h"; fail=1; }
done
[ "$n" -eq 18 ] || { echo "FAIL: $n coefficients printed, 18 expected"; fail=1; }
fits=$(printf '%s\n' "$out" | sed -n 's/.*: fit \([0-9.e+-]*\), .*/\1/p')
[ "$(printf '%s\n' "$fits" | wc -l)" -eq 2 ] || { echo "FAIL: two fits expected: $fits"; fail=1; }
for f in $fits; do
  awk -v f="$f" 'BEGIN { exit !(f < 1e-8) }' || { echo "FAIL: a fit of $f"; fail=1; }
done
[ $fail -eq 0 ] && echo "ok: $n coefficients, fits $(echo $fits)"
exit $fail
