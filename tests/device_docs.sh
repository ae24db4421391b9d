#!/usr/bin/env bash
# device_docs.sh — docs/devices.md's key table is the device key table:
# `membound devices --keys --markdown` and the block between the page's
# "keys" markers must be the same text. Regenerate the block with that
# command when a row of model/device_keys.def changes.
set -u
B=${MB_BIN:?MB_BIN unset}
page=${MB_SRC:?MB_SRC unset}/docs/devices.md
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$B" devices --keys --markdown >"$tmp/want" || { echo "FAIL: devices --keys --markdown"; exit 1; }
sed -n '/^<!-- keys: membound devices --keys --markdown -->$/,/^<!-- \/keys -->$/p' "$page" | sed '1d;$d' >"$tmp/got"
checks=0
if [ ! -s "$tmp/got" ]; then echo "FAIL: $page has no keys block"; exit 1; fi
checks=$((checks + 1))
rows=$(grep -c '^| `' "$tmp/want")
if [ "$rows" -lt 30 ]; then echo "FAIL: only $rows key rows"; exit 1; fi
checks=$((checks + 1))
if ! diff -u "$tmp/got" "$tmp/want"; then
  echo "FAIL: $page's key table differs from 'membound devices --keys --markdown' (above: - page, + table)"
  exit 1
fi
checks=$((checks + 1))
echo "$checks passed, 0 failed ($rows keys)"
