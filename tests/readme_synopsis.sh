#!/usr/bin/env bash
# readme_synopsis.sh — the README's command-line synopsis against each
# command's --help: every long option a command's --help defines (its option
# lines: "  --opt", "  -o, --opt", "  --n N, --sizes LIST") is in that
# command's synopsis, and every one the synopsis names is defined by --help.
# One line per difference; exit 1 when there is one.
set -u
B=${MB_BIN:?MB_BIN not set}
src=${MB_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
readme=$src/README.md

# The synopsis: the fenced block after "## Command line", continuation lines
# (indented) joined to their command's line.
synopsis=$(awk '/^## Command line/ { on = 1; next }
                on && /^```/ { if (inblock) exit; inblock = 1; next }
                inblock && /^membound / { if (line) print line; line = $0; next }
                inblock && /^ +/ { line = line " " $0 }
                END { if (line) print line }' "$readme")
[ -n "$synopsis" ] || { echo "no synopsis under '## Command line' in README.md"; exit 1; }

bad=0 checked=0
while read -r _ cmd rest; do
    checked=$((checked + 1))
    from_readme=$(printf '%s\n' "$rest" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
    help=$("$B" "$cmd" --help 2>&1) || { echo "membound $cmd --help failed"; bad=1; continue; }
    from_help=$(printf '%s\n' "$help" | grep -E '^ +(-[a-zA-Z], )?--[a-z]' |
                grep -oE -- '(^ +|, | [|] )--[a-z][a-z0-9-]*' | sed 's/^[ ,|]*//' | grep -vx -- '--help' | sort -u)
    for o in $(comm -13 <(printf '%s\n' "$from_readme") <(printf '%s\n' "$from_help")); do
        echo "README.md: 'membound $cmd' synopsis lacks $o (in membound $cmd --help)"; bad=1
    done
    for o in $(comm -23 <(printf '%s\n' "$from_readme") <(printf '%s\n' "$from_help")); do
        echo "README.md: 'membound $cmd' synopsis names $o, which membound $cmd --help does not define"; bad=1
    done
done <<<"$synopsis"
[ "$checked" -ge 10 ] || { echo "only $checked commands in the synopsis"; bad=1; }
[ "$bad" -eq 0 ] && echo "the synopsis of $checked commands matches their --help"
exit "$bad"
