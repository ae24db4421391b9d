#!/usr/bin/env bash
# docs_figures.sh — docs/figures/ is what scripts/docs_figures.sh draws today:
# the script runs into a temporary folder, and its file names and every data
# file (the model's numbers, deterministic) equal the committed ones; the
# images are drawn (not compared: gnuplot's versions differ in pixels).
# Skips (77) without gnuplot. On a difference: run scripts/docs_figures.sh.
set -u
B=${MB_BIN:?MB_BIN not set}
src=${MB_SRC:?MB_SRC not set}
command -v gnuplot >/dev/null || { echo "gnuplot missing: skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
MEMBOUND_PLOTS=$src/plots bash "$src/scripts/docs_figures.sh" -o "$tmp/f" "$B" >/dev/null ||
  { echo "FAIL: scripts/docs_figures.sh failed"; exit 1; }
bad=0
if ! diff <(cd "$src/docs/figures" && ls) <(cd "$tmp/f" && ls) >"$tmp/names"; then
  echo "FAIL: docs/figures/ holds other files than the script draws:"; cat "$tmp/names"; bad=1
fi
for f in "$tmp"/f/*.dat; do
  name=$(basename "$f")
  cmp -s "$f" "$src/docs/figures/$name" || { echo "FAIL: docs/figures/$name is stale"; bad=1; }
done
for f in "$tmp"/f/*.png; do [ -s "$f" ] || { echo "FAIL: $(basename "$f") not drawn"; bad=1; }; done
[ "$bad" = 0 ] && echo "docs/figures/: $(ls "$tmp/f" | wc -l) files, as the script draws them"
exit "$bad"
