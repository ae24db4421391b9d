#!/usr/bin/env bash
# torch_host_selftest.sh — bench/torch_host.py, the host costs the model's
# host term defaults to, measured from PyTorch on this machine: it prints
# the four keys as INI lines with positive figures, its JSON every probe,
# and refuses bad arguments with exit 2. Skips (77) without a torch.
set -u
S=${MB_SRC:?MB_SRC unset}
py=""
for p in "$S/build/bench-venv/bin/python" /usr/bin/python3 python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import torch' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python with torch"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# the figures derived as differences may not resolve on a loaded host: then
# the script must say so (exit 1, the key named), never print a figure <= 0
"$py" "$S/bench/torch_host.py" --rounds 5 --calls 400 --chain 8 >"$tmp/ini" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ]; then
  for k in host_op_us host_node_us host_function_us host_backward_call_us; do
    awk -F' = ' -v k="$k" '$1 == k && $2 ~ /^[0-9]+\.[0-9]+$/ && $2 + 0 > 0 { found = 1 } END { exit !found }' "$tmp/ini" &&
      ok || bad "no positive '$k = ...' line: $(cat "$tmp/ini")"
  done
else
  [ $rc -eq 1 ] && grep -Eq "(host_node_us|host_function_us|host_backward_call_us) came out .* too busy" "$tmp/err" && ok ||
    bad "torch_host.py failed: rc $rc $(cat "$tmp/err")"
fi
if [ $rc -eq 0 ]; then
  awk -F' = ' '/^host_op_us/ { exit !($2 > 0 && $2 < 1000) }' "$tmp/ini" && ok || bad "host_op_us out of range"
fi
"$py" "$S/bench/torch_host.py" --rounds 3 --calls 200 --chain 4 --json >"$tmp/json" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ]; then
  "$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["chain"] == 4 and d["op_nograd_us"] > 0 and d["host_op_us"] > 0 else 1)' "$tmp/json" &&
    ok || bad "--json lacks its probes"
else
  [ $rc -eq 1 ] && grep -q "too busy" "$tmp/err" && ok || bad "--json: rc $rc $(cat "$tmp/err")"
fi
"$py" "$S/bench/torch_host.py" --rounds 0 >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "--rounds 0: rc $rc, expected 2"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
