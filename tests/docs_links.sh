#!/usr/bin/env bash
# docs_links.sh — every relative link of README.md and docs/*.md resolves: the
# file or folder exists, and a #fragment names a heading of the target page
# (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens, a
# repeated heading -1, -2, ...). Links in fenced code are not links; web
# addresses are not checked. One line per broken link, file:line; exit 1
# when there is one.
set -u
src=${MB_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$src" || exit 1

# The anchors of page $1, one a line.
anchors() {
    awk '/^(```|~~~)/ { code = !code; next }
         !code && /^#+ / {
             h = $0; sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h)
             h = tolower(h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
             n = seen[h]++; print (n ? h "-" n : h)
         }' "$1"
}

bad=0 checked=0
for page in README.md docs/*.md; do
    dir=$(dirname "$page")
    while IFS=$'\t' read -r line target; do
        case "$target" in http://*|https://*|mailto:*) continue ;; esac
        checked=$((checked + 1))
        file=${target%%#*}
        frag=
        [ "$file" != "$target" ] && frag=${target#*#}
        if [ -z "$file" ]; then path=$page; else path=$dir/$file; fi
        if [ ! -e "$path" ]; then
            echo "$page:$line: link to $target: no such file"
            bad=1
            continue
        fi
        if [ -n "$frag" ]; then
            case "$path" in
            *.md) anchors "$path" | grep -qxF -- "$frag" || {
                      echo "$page:$line: link to $target: no heading with that anchor in $path"
                      bad=1
                  } ;;
            *) echo "$page:$line: link to $target: a fragment into a file that is not Markdown"; bad=1 ;;
            esac
        fi
    done < <(awk '/^(```|~~~)/ { code = !code; next }
                  !code { s = $0
                          while (match(s, /\]\([^) ]+\)/)) {
                              print NR "\t" substr(s, RSTART + 2, RLENGTH - 3)
                              s = substr(s, RSTART + RLENGTH)
                          } }' "$page")
done
if [ "$checked" -lt 20 ]; then
    echo "FAIL: only $checked links found: the extraction is broken"
    exit 1
fi
[ $bad = 0 ] && echo "docs links: $checked ok"
exit $bad
