#!/usr/bin/env bash
# cli_model.sh — the model commands as a user runs them: the design's JSON
# contract, exit codes, one-line errors, variants found without the source tree.
set -u
B=${MB_BIN:?MB_BIN not set}
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"

n=16777216
"$B" model sin2_plus_cos2 --n 2^24 --device h100-sxm --json >"$tmp/out" || bad "model --json failed"
jcheck '.device' h100-sxm
jcheck '.n' $n
jcheck '.results[] | select(.plan=="eager") | .kernels' 5
jcheck '.results[] | select(.plan=="eager") | .read_bytes' $((6 * 4 * n))
jcheck '.results[] | select(.plan=="eager") | .write_bytes' $((5 * 4 * n))
jcheck '.results[] | select(.plan=="fused") | .kernels' 1
jcheck '.results[] | select(.plan=="fused") | .read_bytes' $((4 * n))
jcheck '.results[] | select(.plan=="fused") | .write_bytes' $((4 * n))
jcheck '.results[] | select(.plan=="eager") | .per_kernel | length' 5
jcheck '.results[] | select(.plan=="eager") | .per_kernel[0].name' sin

"$B" model sigmoid3 --n 2^20 --json >"$tmp/out" || bad "sigmoid3 failed"
jcheck '[.results[] | select(.plan != "optimal") | .saved_bytes] | join(",")' 12582912,12582912,4194304
jcheck '[.results[] | select(.plan != "optimal") | (.read_bytes + .write_bytes) / (4 * 1048576)] | join(",")' 15,9,5
# optimal (a build with igraph): the minimum cut saves x alone, as recompute
optimal=0; "$B" model sigmoid3 --plan optimal >/dev/null 2>&1 && optimal=1
[ "$(jq '[.results[] | select(.plan == "optimal")] | length' "$tmp/out")" -eq "$optimal" ] && ok || bad "optimal rows"

"$B" model copy --dtype bf16 --n 2^25 --json >"$tmp/out"; b16=$(jq '.results[0].read_bytes + .results[0].write_bytes' "$tmp/out")
"$B" model copy --dtype f32 --n 2^25 --json >"$tmp/out"; b32=$(jq '.results[0].read_bytes + .results[0].write_bytes' "$tmp/out")
[ $((2 * b16)) -eq "$b32" ] && ok || bad "bf16 copy bytes $b16 not half of f32 $b32"

"$B" model --expr 'y = sin(x)**2 + cos(x)**2' --n 16M --csv >"$tmp/out" || bad "--expr --csv failed"
[ "$(head -1 "$tmp/out" | cut -d, -f1-5)" = "device,variant,plan,dtype,n" ] && ok || bad "csv header"
[ "$(wc -l <"$tmp/out")" -eq 3 ] && ok || bad "csv rows"

# whatif: every device, every built-in variant, 30 sizes
"$B" whatif --sizes '2^10..2^39' --csv >"$tmp/out" || bad "whatif failed"
ndev=$("$B" devices --json | jq '.devices | length')
[ "$ndev" -ge 15 ] && ok || bad "only $ndev devices"
rows=$(($(wc -l <"$tmp/out") - 1))
# plans: copy 2, gelu_tanh 2, sigmoid3 3 (4 with optimal), sin2_plus_cos2 2 = 9 per device and size
[ "$rows" -eq $((ndev * (9 + optimal) * 30)) ] && ok || bad "whatif rows $rows, expected $((ndev * (9 + optimal) * 30))"
"$B" whatif copy --devices h100-sxm,a100-80gb --n 2^25 --json >"$tmp/out" || bad "whatif json"
jcheck '[.results[].device] | unique | join(",")' a100-80gb,h100-sxm

# bad input: one line, exit 2
expect 2 "unknown variant 'sin3' (variants: copy, gelu_tanh, sigmoid3, sin2_plus_cos2" -- model sin3
expect 2 "did you mean h100-sxm" -- model copy --device h10-sxm
expect 2 "<expr>:1:10: expected ',' or ')'" -- model --expr 'y = sin(x'
expect 2 "<expr>:1:5: unknown function 'sinh'" -- model --expr 'y = sinh(x)'
expect 2 "must be at least 1" -- model copy --n 0
expect 2 "too large to count" -- model copy --n 2^60
# a literal that is 0 in float32: one warning line at its line:column, the model runs
expect 0 "membound: warning: <expr>:1:9: number '1e-400' is 0 in float32" -- model --expr 'y = x * 1e-400' --n 2^10
[ "$(wc -l <"$tmp/err")" -eq 1 ] && ok || bad "1e-400: $(wc -l <"$tmp/err") stderr lines"
expect 2 "unknown option '--bogus'" -- model --bogus
expect 2 "needs a value" -- model copy --n
expect 2 "unknown dtype 'f64'" -- model copy --dtype f64
expect 2 "unknown plan 'lazy'" -- model copy --plan lazy
expect 2 "plans: eager, store, recompute" -- model sigmoid3 --plan fused
expect 2 "unknown command 'modle'" -- modle
expect 2 "unknown option '--bogus'" -- whatif --bogus
expect 2 "unknown device" -- whatif --devices h100-sxm,nope
printf '[device]\nname = x\nmem_bandwidth_gbs = fast\n' >"$tmp/bad.ini"
expect 2 "mem_bandwidth_gbs" -- model copy --device "$tmp/bad.ini"
printf 'input x\ny = x +* 2\n' >"$tmp/bad.mb"
expect 2 "bad.mb:2:8: expected an expression" -- model "$tmp/bad.mb"
expect 2 "must be an integer from 1 to 64" -- model copy --sizes '1..2^44:4294967297'
expect 2 "unknown variant 'foo\\x0abar'" -- model $'foo\nbar'
printf 'input x bf16\ninput w f16\ny = x*w + x*2\n' >"$tmp/mixed.mb"
"$B" model "$tmp/mixed.mb" --plan eager --json >"$tmp/out" || bad "mixed dtypes"
jcheck '.results[0].dtype' mixed
jcheck '.results[0].traffic_elements' 8   # mul 2r1w, mul 1r1w, add 2r1w
"$B" model copy gelu_tanh --n 2^20 --json >"$tmp/out" && jcheck '.n' 1048576
"$B" model copy gelu_tanh --json >"$tmp/out" && jcheck '.n' null   # lecture sizes differ
for c in devices model whatif; do "$B" $c --help >/dev/null && ok || bad "$c --help"; done

# variants are found next to the binary, without the source tree or MEMBOUND_VARIANTS
share=$(dirname "$B")/../share/membound/variants
mkdir -p "$tmp/prefix/bin" "$tmp/prefix/share/membound"
cp "$B" "$tmp/prefix/bin/" && cp -r "$share" "$tmp/prefix/share/membound/"
(cd / && env -u MEMBOUND_VARIANTS "$tmp/prefix/bin/membound" model gelu_tanh --json) >"$tmp/out" 2>"$tmp/err" \
  && ok || bad "relocated binary: $(cat "$tmp/err")"
jcheck '.results[0].variant' gelu_tanh

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
