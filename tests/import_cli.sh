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
