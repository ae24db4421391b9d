#!/usr/bin/env bash
# torch_host_selftest.sh — bench/torch_host.py, the host costs the model's
# host term defaults to, measured from PyTorch on this machine: it prints
# the three keys as INI lines with positive figures, its JSON every probe,
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
"$py" "$S/bench/torch_host.py" --rounds 2 --calls 200 --chain 8 >"$tmp/ini" || bad "torch_host.py failed"
for k in host_op_us host_node_us host_function_us; do
  grep -Eq "^$k = [0-9]+\.[0-9]+$" "$tmp/ini" && ok || bad "no '$k = ...' line: $(cat "$tmp/ini")"
done
awk -F' = ' '/^host_op_us/ { exit !($2 > 0 && $2 < 1000) }' "$tmp/ini" && ok || bad "host_op_us out of range"
"$py" "$S/bench/torch_host.py" --rounds 1 --calls 100 --chain 4 --json >"$tmp/json" || bad "--json failed"
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["chain"] == 4 and d["op_nograd_us"] > 0 else 1)' "$tmp/json" &&
  ok || bad "--json lacks its probes"
"$py" "$S/bench/torch_host.py" --rounds 0 >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "--rounds 0: rc $rc, expected 2"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
