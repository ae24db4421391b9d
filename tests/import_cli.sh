#!/usr/bin/env bash
# import_cli.sh — the guide's commands (docs/import.md) end to end on the
# fixtures of tests/data/import/: membound import ncu and torch-trace, then
# membound report on the imported CSVs alone and with a measure run's CSV;
# each bad fixture exits 2 with one error line and leaves no output file.
# Needs MB_BIN and MB_SRC.
set -u
B=${MB_BIN:?} D=${MB_SRC:?}/tests/data/import
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# run CODE -- ARGS...: exit code; stderr in err
run() {
  local code=$1; shift 2
  "$B" "$@" >out 2>err; local rc=$?
  [ "$rc" -eq "$code" ] && ok || bad "membound $* exited $rc, expected $code: $(cat err)"
}
has() { grep -qF -- "$2" "$1" && ok || bad "$1 lacks '$2': $(head -c 600 "$1")"; }
# a column of a CSV row, by header name (the CSVs quote only text columns,
# which come after the ones read here)
col() { awk -F, -v c="$2" -v row="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next } NR == row + 1 { print $h[c] }' "$1"; }

# ---- the guide: ncu (details and raw pages), then the trace, then report ------
run 0 -- import ncu "$D/ncu_details_sin2_eager.csv" --variant sin2_plus_cos2 --plan eager --n 2^20 \
  --device h200 -o ncu-eager.csv --per-kernel ncu-eager-kernels.csv
has err "1 launch of 'FillFunctor'"
has err "have a grid that cannot cover n: left out"
has err "auto-scaled units (Mbyte, usecond) keep 3-5 significant digits: profile with --print-units base"
[ "$(col ncu-eager.csv counters 1)" = ncu ] && ok || bad "counters: $(col ncu-eager.csv counters 1)"
[ "$(col ncu-eager.csv dram_read_bytes 1),$(col ncu-eager.csv dram_write_bytes 1)" = 25200000,20950000 ] && ok ||
  bad "ncu-eager.csv bytes: $(col ncu-eager.csv dram_read_bytes 1),$(col ncu-eager.csv dram_write_bytes 1)"
[ "$(col ncu-eager.csv time_s_median 1)" = 1.845e-05 ] && ok || bad "time: $(col ncu-eager.csv time_s_median 1)"
[ "$(awk 'END { print NR }' ncu-eager-kernels.csv)" = 6 ] && ok || bad "per-kernel rows: $(wc -l <ncu-eager-kernels.csv)"
has ncu-eager.csv "outputs were not checked by membound"
run 0 -- import ncu "$D/ncu_details_sin2_fused.csv" --variant sin2_plus_cos2 --plan fused --n 2^20 --device h200 -o ncu-fused.csv
run 0 -- import ncu "$D/ncu_raw_gelu_eager.csv" --variant gelu_tanh --plan eager --n 2^20 --device h200 -o ncu-gelu.csv
run 0 -- import ncu "$D/ncu_raw_sigmoid3_nvtx.csv" --device h200 -o ncu-sigmoid3.csv
# the variant as an expression, its text carried to report
run 0 -- import ncu "$D/ncu_details_sin2_eager.csv" --expr 'name my_sc; y = sin(x)**2 + cos(x)**2' --plan eager \
  --n 2^20 --device h200 -o expr.csv
has out "my_sc            eager      f32      1048576       5     2     18.45 us     25200000     20950000    +0.03%  ok"
run 0 -- report expr.csv -o rep-expr --no-figures
has out "fit h200 (cuda-ncu)"
# a value ncu could not collect (n/a) for a matched kernel: the row has no counts, times still
sed '/^"1",.*"dram__bytes_write.sum"/s/"Mbyte","4.19"/"Mbyte","n\/a"/' "$D/ncu_details_sin2_eager.csv" >na.csv
run 0 -- import ncu na.csv --variant sin2_plus_cos2 --plan eager --n 2^20 --device h200 -o na-out.csv
has out "sin2_plus_cos2   eager      f32      1048576       5     2     18.45 us            -            -         -  -"
# a renamed kernel whose range carries its domain
sed 's/"membound:sigmoid3/"default@membound:sigmoid3/' "$D/ncu_raw_sigmoid3_nvtx.csv" >domain.csv
run 0 -- import ncu domain.csv --device h200 -o domain-out.csv
has out "sigmoid3         eager      f32      1048576       6     2     21.00 us     37754880     25165824    +0.01%  ok"
# marks in a column whose header names NVTX (no --variant needed)
sed -e '/^"ID"/s/$/,"NVTX Push\/Pop Ranges"/' -e '/^"[0-9]/s/$/,"default:membound:sin2_plus_cos2:fused:n=1048576:f32"/' \
  "$D/ncu_details_sin2_fused.csv" >nvtxcol.csv
run 0 -- import ncu nvtxcol.csv --device h200 -o nvtxcol-out.csv
has out "sin2_plus_cos2   fused      f32      1048576       1     3      2.51 us      4198400      4194304    +0.05%  ok"
# a raw page without its units row: ncu's base units
grep -v '^"",' "$D/ncu_raw_sigmoid3_nvtx.csv" >nounits.csv
run 0 -- import ncu nounits.csv --device h200 -o nounits-out.csv
has out "21.00 us     37754880     25165824"
run 0 -- import torch-trace "$D/torch_trace_lecture.json" -o torch.csv
has err "GPU 'NVIDIA H200': the device table's h200"
[ "$(awk 'END { print NR }' torch.csv)" = 5 ] && ok || bad "torch.csv rows: $(wc -l <torch.csv)"

# the same trace without its GPU-side spans: marks from the CPU spans around each launch call
if command -v jq >/dev/null; then
  jq 'del(.traceEvents[] | select(.cat == "gpu_user_annotation"))' "$D/torch_trace_lecture.json" >cpuspans.json
  run 0 -- import torch-trace cpuspans.json -o cpuspans.csv
  has err "27 launches, 26 matched, 1 left out: 4 rows"
  has out "sigmoid3         eager      f32      1048576       6     2     22.20 us"
fi
run 0 -- report ncu-eager.csv ncu-fused.csv ncu-gelu.csv ncu-sigmoid3.csv torch.csv -o rep --no-figures
has out "fit h200 (cuda-ncu)"
has out "fit h200 (cuda-torch)"
grep -F "fusion: sin^2+cos^2 fused moves 2n instead of 11n" out | grep -qF "h200 (cuda-ncu)" && ok ||
  bad "report's verdicts lack the sin^2+cos^2 claim on h200 (cuda-ncu): $(cat out)"
has rep/report.md "imported (outputs unchecked)"
has rep/report.md "each kernel's cold count"
# the bytes figure draws the ncu rows against the count they were judged on:
# sin^2+cos^2 eager's cold count per kernel, 44 B/element (11n), not the
# cache-aware 24 B; the torch rows (no counters) against the cache-aware one
bytes_model() { want=$2 awk -F'" ' 'index($1, ENVIRON["want"]) { split($2, c, " "); print c[2]; exit }' "$1"; }
ncu_bytes=$(ls rep/figures/bytes*.dat | xargs grep -l 'cold where marked' | head -1)
[ -n "$ncu_bytes" ] && ok || bad "no bytes figure with the ncu rows' cold count: $(ls rep/figures)"
[ "$(bytes_model "$ncu_bytes" 'eager\nn = 2^{20}\nmodel: cold per kernel')" = 44 ] && ok ||
  bad "ncu eager drawn against $(bytes_model "$ncu_bytes" 'eager\nn = 2^{20}\nmodel: cold per kernel') B, not its cold 44"
# with a measure run's CSV: its own group, the imported rows apart from it
run 0 -- report torch.csv "$MB_SRC/reports/data/cpu-amd-epyc-2vcpu/copy-2p25.csv" -o rep2 --no-figures
has out "(cpu)"
has out "fit h200 (cuda-torch)"

# ---- the bad fixtures: exit 2, one error line, nothing written ---------------
bad_case() { # FRAGMENT -- ARGS...
  local frag=$1; shift 2
  rm -f bad.csv
  run 2 -- "$@" -o bad.csv
  [ "$(grep -c '^membound: error:' err)" = 1 ] && [ "$(wc -l <err)" = 1 ] && ok || bad "membound $*: not one error line: $(cat err)"
  has err "$frag"
  [ ! -e bad.csv ] && ok || bad "membound $*: left bad.csv behind"
}
bad_case "too few kernels for the plan" -- import ncu "$D/ncu_too_few.csv" --variant sin2_plus_cos2 --plan eager --n 2^20
bad_case "ncu_truncated.csv:14:38: unterminated quoted field at the end of the file" -- \
  import ncu "$D/ncu_truncated.csv" --variant sin2_plus_cos2 --plan eager --n 2^20
bad_case "too many kernels for the plan" -- import ncu "$D/ncu_details_sin2_fused.csv" --variant sigmoid3 --plan store --n 2^20
bad_case "no membound: marks" -- import ncu "$D/ncu_details_sin2_eager.csv"
bad_case "not JSON" -- import torch-trace "$D/ncu_too_few.csv"
sed 's/membound:copy:eager:n=2097152:f32/membound:copy:eager/' "$D/torch_trace_lecture.json" >badmark.json
bad_case "trace event 32: mark 'membound:copy:eager': expected membound:VARIANT:PLAN:n=N:DTYPE" -- import torch-trace badmark.json
sed 's/membound:copy:eager:n=2097152:f32/membound:copy:store:n=2097152:f32/' "$D/torch_trace_lecture.json" >badplan.json
bad_case "badplan.json: membound:copy:store:n=2097152:f32: variant 'copy' has no plan 'store'" -- import torch-trace badplan.json
bad_case "unknown format 'nsys'" -- import nsys "$D/ncu_too_few.csv"
bad_case "--cache-control: expected all or none" -- import ncu "$D/ncu_too_few.csv" --cache-control some

# ---- imported data is data: it names no file, drives no terminal, and each
# number is read whole, in its unit, within what a kernel can do -------------
esc=$(printf '\033')
noesc() { grep -q "$esc" "$1" && bad "$1 carries an ESC byte: $(cat -v "$1" | head -c 600)" || ok; }
T="$D/torch_trace_lecture.json" F="$D/ncu_details_sin2_fused.csv" S="$D/ncu_raw_sigmoid3_nvtx.csv"
# a mark names no file: not a path (whose first word an error would echo), not a .mb in the working folder
printf 'TOPSECRET words\n' >secret.mb
sed 's|membound:copy:eager:n=2097152:f32|membound:./secret.mb:eager:n=2097152:f32|' "$T" >pathmark.json
bad_case "'./secret.mb' is no variant name" -- import torch-trace pathmark.json
grep -q TOPSECRET err && bad "a mark's file echoed: $(cat err)" || ok
cp "$MEMBOUND_VARIANTS/sigmoid3.mb" evil.mb
sed 's/membound:sigmoid3:/membound:evil.mb:/' "$S" >evilmark.csv
bad_case "'evil.mb' is no variant name: a mark selects a built-in variant" -- import ncu evilmark.csv --device h200
# names from the data printed with their control characters escaped
sed 's/"name": "NVIDIA H200"/"name": "NVIDIA H200\\u001b]0;pwned\\u0007\\u001b[2J"/' "$T" >escgpu.json
run 0 -- import torch-trace escgpu.json -o escgpu.csv
has err 'GPU '"'"'NVIDIA H200\x1b]0;pwned\x07\x1b[2J'"'"': the device table'"'"'s h200'
noesc err; noesc out; noesc escgpu.csv
sed "/^\"[0-9]/s/\"0\",\"9.0\"/\"NVIDIA H200${esc}[2J\",\"9.0\"/" "$S" >escdev.csv
run 0 -- import ncu escdev.csv -o escdev-out.csv
has err 'NVIDIA H200\x1b[2J'
noesc err; noesc escdev-out.csv
# byte counts past what a double counts exactly (2^53) are refused with their line, not wrapped
sed '4s/"4195328","4194304","3300"/"9300000000000000000","4194304","3300"/' "$S" >huge.csv
bad_case "huge.csv:4:125: dram__bytes_read.sum value '9300000000000000000' byte: more than 2^53 bytes" -- \
  import ncu huge.csv --device h200
# a trace: duplicate keys refused; quoted numbers read whole, in microseconds, bounded
sed '0,/"dur": 2.5,/s//"dur": 2.5, "dur": 999,/' "$T" >dupkey.json
bad_case "duplicate object key" -- import torch-trace dupkey.json
for v in '"1e400"' '"3.4ms"' '"0x10"' '1e+308' '"inf"'; do
  sed "0,/\"dur\": 2.5,/s//\"dur\": $v,/" "$T" >num.json
  bad_case "\"dur\": $v: expected a decimal number from 0 to 3.6e+09 (microseconds, no unit)" -- import torch-trace num.json
done
sed '0,/"dur": 2.5,/s//"dur": "2.5",/' "$T" >quoted.json
run 0 -- import torch-trace quoted.json -o quoted.csv
has out "sin2_plus_cos2   fused      f32      1048576       1     2      2.50 us"
# a name longer than the pieces the reader takes the text in (64 KiB), the GPU's name after the events:
# the same rows as the trace itself
if command -v jq >/dev/null; then
  jq --arg pad "$(head -c 100000 /dev/zero | tr '\0' x)" \
    '{traceEvents: ([{cat: "cpu_op", name: $pad}] + .traceEvents), deviceProperties: .deviceProperties}' "$T" >long.json
  run 0 -- import torch-trace long.json -o long.csv
  "$B" import torch-trace "$T" -o again.csv >again.out 2>/dev/null
  cmp -s out again.out && ok || bad "a trace with a 100000-byte name: other rows: $(diff out again.out | head -5)"
fi
# a byte order mark before the JSON or the CSV
{ printf '\357\273\277'; cat "$T"; } >bom.json
run 0 -- import torch-trace bom.json -o bom.csv
{ printf '\357\273\277'; cat "$F"; } >bom.csv
run 0 -- import ncu bom.csv --variant sin2_plus_cos2 --plan fused --n 2^20 --device h200 -o bom-out.csv
# ncu: a decimal comma, hex, a negative grid refused; 70 leading zeros read, not cut
sed '0,/"usecond","3.40"/s//"usecond","2,5"/' "$D/ncu_details_sin2_eager.csv" >comma.csv
bad_case "gpu__time_duration.sum value '2,5': expected a decimal number >= 0" -- \
  import ncu comma.csv --variant sin2_plus_cos2 --plan eager --n 2^20 --device h200
sed '0,/"byte","4,198,400"/s//"byte","0x1000"/' "$F" >hex.csv
bad_case "hex.csv:3:" -- import ncu hex.csv --variant sin2_plus_cos2 --plan fused --n 2^20 --device h200
zeros=$(printf '0%.0s' $(seq 70))
sed "s/\"byte\",\"4,198,400\"/\"byte\",\"${zeros}4198400\"/" "$F" >zeros.csv
run 0 -- import ncu zeros.csv --variant sin2_plus_cos2 --plan fused --n 2^20 --device h200 -o zeros-out.csv
has out "2.51 us      4198400      4194304"
sed '4s/"(2048, 1, 1)"/"(-2048, 1, 1)"/' "$S" >neg.csv
bad_case "neg.csv:4:" -- import ncu neg.csv --device h200
has err "grid size '(-2048, 1, 1)': expected (X, Y, Z), each a whole number from 1 to 2147483647"
# ncu: a metric twice for one launch, one ID for two launches
sed '3p' "$F" >twice.csv
bad_case "twice.csv:4:" -- import ncu twice.csv --variant sin2_plus_cos2 --plan fused --n 2^20 --device h200
has err "metric 'dram__bytes_read.sum' given twice for launch ID 0"
sed '/^"1",/s/^"1",/"0",/' "$F" >oneid.csv
bad_case "given twice for launch ID 0" -- import ncu oneid.csv --variant sin2_plus_cos2 --plan fused --n 2^20 --device h200
sed '7s/^"3",/"1",/' "$S" >idback.csv
bad_case "idback.csv:7:1: launch ID '1' after ID 2: expected a larger whole number" -- import ncu idback.csv --device h200
# an Inductor kernel named for other ops is no copy
bad_case "too few kernels for the plan" -- import ncu "$F" --variant copy --plan fused --n 2^20 --device h200
has err "0 launches match the plan"
# a 2-D shape in a mark
sed 's/:n=1048576:/:n=1024x1024:/' "$S" >twod.csv
run 0 -- import ncu twod.csv --device h200 -o twod-out.csv
has out "sigmoid3         eager      f32      1048576       6     2     21.00 us"
[ "$(head -1 twod-out.csv | awk -F, '{ print $(NF-1) }')" = shape ] && [ "$(tail -1 twod-out.csv | awk -F, '{ print $(NF-1) }')" = 1024x1024 ] &&
  ok || bad "twod-out.csv: no shape 1024x1024 in its column before dims"
# a write that fails (past a file-size limit) prints its one error line, not the notes before it
rm -f wfail.csv
( trap '' XFSZ; ulimit -f 1; exec "$B" import torch-trace "$T" -o wfail.csv ) >out 2>err
r=$?
[ "$r" -eq 1 ] && ok || bad "a failed write exited $r, expected 1: $(cat err)"
[ "$(wc -l <err)" = 1 ] && grep -q '^membound: error:' err && ok || bad "a failed write: not one error line: $(cat err)"
[ ! -e wfail.csv ] && ok || bad "a failed write left wfail.csv"

# ---- scripts/gpu-ncu.sh on the same path: its import and report step on a fixture
# standing in for ncu's CSV; without ncu it profiles nothing and exits 3 ----------
build=$(dirname "$(dirname "$B")")
mkdir -p gn
cp "$D/ncu_raw_sigmoid3_nvtx.csv" gn/lecture-ncu.csv
bash "$MB_SRC/scripts/gpu-ncu.sh" --build "$build" --device h200 --import-only gn >gn.log 2>&1
r=$?
[ "$r" -eq 0 ] && ok || bad "gpu-ncu.sh --import-only exited $r: $(cat gn.log)"
has gn/ncu-summary.txt "sigmoid3         eager      f32      1048576       6     2     21.00 us     37754880     25165824    +0.01%  ok"
[ -s gn/ncu.csv ] && [ -s gn/ncu-kernels.csv ] && ok || bad "gpu-ncu.sh --import-only: no ncu.csv, ncu-kernels.csv"
PATH=/usr/bin:/bin bash "$MB_SRC/scripts/gpu-ncu.sh" --build "$build" gn2 >gn2.log 2>&1
r=$?
if command -v ncu >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/ncu ] || compgen -G "/opt/nvidia/nsight-compute/*/ncu" >/dev/null; then
  ok # an ncu here: the no-ncu path is not reachable
else
  [ "$r" -eq 3 ] && ok || bad "gpu-ncu.sh without ncu exited $r, expected 3: $(cat gn2.log)"
fi

echo "import_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
