#!/usr/bin/env bash
# report_html.sh — report.html as a reader sees it: headless Chromium renders
# a report of the lecture's variants and of a custom one; the rendered text
# outside code holds no raw Markdown (**, `, ^{, | ---), the tables and
# verdicts show, and every image has loaded (naturalWidth > 0). Skips (77)
# without Chromium.
set -u
B=${MB_BIN:?MB_BIN not set}
case $B in /*) ;; *) B=$PWD/$B ;; esac
"$B" report --help >/dev/null 2>&1 || { echo "report not in this build: skipped"; exit 77; }
command -v gnuplot >/dev/null || { echo "gnuplot missing: skipped"; exit 77; }
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || { echo "chromium missing (scripts/test.sh installs it): skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# a measurement of the lecture's fusion demo and of quick_gelu, small and quick: warm
# (the report's figures and text are what is checked, not the figures measured; cold,
# each sample first swept twice the last-level cache, 2 x 480 MiB on the 2-vCPU guest)
(cd "$tmp" && "$B" measure --expr 'name quick_gelu; y = x * sigmoid(1.702 * x)' --device h100-sxm \
   --backend cpu --sizes 2^12,2^14,2^16 --timeout 0.05 --warm -q -o m.csv >/dev/null 2>&1) || bad "measure quick_gelu failed"
(cd "$tmp" && "$B" measure sin2_plus_cos2 --device h100-sxm --backend cpu --sizes 2^12,2^14,2^16 \
   --timeout 0.05 --warm -q -o lect.csv >/dev/null 2>&1) || bad "measure sin2_plus_cos2 failed"
"$B" report "$tmp/m.csv" "$tmp/lect.csv" -o "$tmp/r" >/dev/null 2>"$tmp/err" || bad "report: $(cat "$tmp/err")"

# the page plus a probe that writes what the browser sees into the DOM
page=$tmp/r/probe.html
sed 's|</body>|<script>window.addEventListener("load",function(){var im=document.images,n=0;for(var i=0;i<im.length;i++)if(im[i].complete\&\&im[i].naturalWidth>0)n++;var p=document.createElement("pre");p.id="probe";var b=document.body.cloneNode(true),c=b.querySelectorAll("pre,code");for(var j=0;j<c.length;j++)c[j].remove();var t=b.textContent;var td=document.querySelector("td"),w=td?getComputedStyle(td).overflowWrap+"/"+getComputedStyle(td).wordBreak:"none";p.textContent="IMAGES "+n+"/"+im.length+"\\nWRAP "+w+"\\nTEXT "+t;document.body.appendChild(p);});</script></body>|' \
  "$tmp/r/report.html" >"$page"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --allow-file-access-from-files \
  --virtual-time-budget=5000 --dump-dom "file://$page" >"$tmp/dom.html" 2>"$tmp/chrome.err" ||
  bad "chromium failed: $(tail -3 "$tmp/chrome.err")"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
  --window-size=1400,2400 --screenshot="$tmp/shot.png" "file://$tmp/r/report.html" >/dev/null 2>&1 &&
  [ -s "$tmp/shot.png" ] && ok || bad "no screenshot"
[ -n "${MB_SCREENSHOT:-}" ] && cp "$tmp/shot.png" "$MB_SCREENSHOT"

probe=$(sed -n '/<pre id="probe">/,/<\/pre>/p' "$tmp/dom.html")
[ -n "$probe" ] && ok || bad "the probe did not run"
imgs=$(echo "$probe" | sed -n 's/.*IMAGES \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' | head -1)
set -- $imgs
if [ "${2:-0}" -ge 5 ] && [ "$1" = "$2" ]; then ok; else bad "images loaded: ${imgs:-none}"; fi
text=$(echo "$probe" | sed -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g')
for raw in '**' '`' '^{' '| ---' '|---' '![' '\_' '\*'; do
  if echo "$text" | grep -qF -- "$raw"; then bad "raw Markdown '$raw' in the rendered text"; else ok; fi
done
for want in 'Verdict: the lecture' "The lecture's claim here" "The model's expectation here" 'sin2_plus_cos2' \
            'quick_gelu' 'Fits: time = t0 + bytes / bandwidth' 'Method'; do
  echo "$text" | grep -qF -- "$want" && ok || bad "rendered text lacks '$want'"
done
grep -q '<table>' "$tmp/dom.html" && ok || bad "no table in the DOM"
grep -q '<em>exceeds</em>' "$tmp/dom.html" && ok || bad "emphasis not rendered"
# table cells wrap between words, never inside one ("recomputati on"): no
# overflow-wrap:anywhere, no word-break:break-all
wrap=$(echo "$probe" | sed -n 's/.*WRAP \([^ ]*\).*/\1/p' | head -1)
case $wrap in break-word/normal) ok ;; *) bad "table cells wrap as '$wrap', not between words" ;; esac
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
