#!/usr/bin/env bash
# model_error_selftest.sh — bench/model_error.py on a CSV written here: the
# table's cells, the noisy, failed and drifted markers, the summary and the
# exit codes (0 all quiet steady rows within the bound, 1 one outside, 2 bad input).
set -u
src=${MB_SRC:?}
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
check() { local what=$1; shift; if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi; }
cols='device,backend,variant,plan,dtype,n,kernels,reps,time_s_median,time_s_min,time_s_p90,time_cv,model_time_s,read_bytes,write_bytes,model_dram_read_bytes,model_dram_write_bytes,dram_read_bytes,dram_write_bytes,counters,max_rel_err,verified,model_device,contended'
{
  echo '# membound measurement'
  echo "$cols"
  echo 'cpu,cpu,copy,eager,f32,262144,1,100,1.0e-4,1e-4,1e-4,0.01,1.1e-4,1,1,1,1,,,none-cpu,0,1,local-cpu,0'
  echo 'cpu,cpu,copy,eager,f32,33554432,1,100,1.0e-2,1e-2,1e-2,0.01,0.8e-2,1,1,1,1,,,none-cpu,0,1,local-cpu,0'
  echo 'cpu,cpu,copy,fused,f32,262144,1,100,1.0e-4,1e-4,1e-4,0.01,3.0e-4,1,1,1,1,,,none-cpu,0,1,local-cpu,50'
  echo 'cpu,cpu,copy,fused,f32,33554432,1,100,1.0e-2,1e-2,1e-2,0.01,1.05e-2,1,1,1,1,,,none-cpu,0,0,local-cpu,0'
} >"$t/m.csv"
py() { python3 "$src/bench/model_error.py" "$@"; }
py "$t/m.csv" >"$t/out.txt"; rc=$?
check "all quiet verified rows within 25%: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "header names the sizes" grep -q '^| variant | plan | dtype | 2^18 | 2^25 |$' "$t/out.txt"
check "errors per size" grep -q '^| copy | eager | f32 | +10% | -20% |$' "$t/out.txt"
check "noisy row bracketed, failed row marked" grep -q '^| copy | fused | f32 | \[+200%\] | +5%! |$' "$t/out.txt"
check "summary counts quiet verified rows" grep -q '^2 of 2 quiet, steady, verified rows within 25%; largest error -20.0% (copy eager f32 n = 2^25)' "$t/out.txt"
py "$t/m.csv" --bound 15 >/dev/null; rc=$?
check "a row outside the bound: exit 1 (got $rc)" [ "$rc" -eq 1 ]
py "$t/m.csv" --sizes 2^18 >"$t/out2.txt"
check "--sizes keeps those sizes" grep -q '^| copy | eager | f32 | +10% |$' "$t/out2.txt"
{ head -2 "$t/m.csv"; sed -n 3,4p "$t/m.csv"; } >"$t/a.csv"
{ head -2 "$t/m.csv"; sed -n 5,6p "$t/m.csv"; } >"$t/b.csv"
py "$t/a.csv" "$t/b.csv" >"$t/out3.txt"
check "two files read as one table" cmp -s "$t/out.txt" "$t/out3.txt"
# the host reference: a row more than 20% off its calibration (copy or op) is
# shown with its shares and counted apart (its -40% does not fail the run);
# 0.85 and 1.1 are steady
{
  echo "$cols,host_copy_gbs,host_copy_ratio,host_op_ratio"
  echo 'cpu,cpu,copy,eager,f32,262144,1,100,1.0e-4,1e-4,1e-4,0.01,1.1e-4,1,1,1,1,,,none-cpu,0,1,local-cpu,0,50,0.85,1.1'
  echo 'cpu,cpu,copy,eager,f32,33554432,1,100,1.0e-2,1e-2,1e-2,0.01,0.6e-2,1,1,1,1,,,none-cpu,0,1,local-cpu,0,84,1.4,0.7'
  echo 'cpu,cpu,copy,fused,f32,262144,1,100,1.0e-4,1e-4,1e-4,0.01,0.5e-4,1,1,1,1,,,none-cpu,0,1,local-cpu,0,60,1.0,0.75'
} >"$t/d.csv"
py "$t/d.csv" >"$t/out4.txt"; rc=$?
check "a drifted row outside the bound: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "drifted row shows the host's shares" grep -q '^| copy | eager | f32 | +10% | -40% (host copy 140%, op 70%) |$' "$t/out4.txt"
check "op drift alone marks a row" grep -q '^| copy | fused | f32 | -50% (host op 75%) |  |$' "$t/out4.txt"
check "summary counts drifted rows apart" grep -q '^1 of 1 quiet, steady, verified rows within 25%; largest error +10.0% .*; 0 of 2 rows measured while the host drifted more than 20%' "$t/out4.txt"
py "$t/missing.csv" 2>"$t/err.txt"; rc=$?
check "missing file: exit 2 and one line (got $rc)" [ "$rc" -eq 2 ] && grep -q 'model_error.py: error: .*missing.csv' "$t/err.txt"
printf 'a,b\n1,2\n' >"$t/bad.csv"
py "$t/bad.csv" 2>"$t/err.txt"; rc=$?
check "not a measure CSV: exit 2 (got $rc)" [ "$rc" -eq 2 ] && grep -q 'not a membound measure CSV' "$t/err.txt"
py "$t/m.csv" --sizes 'two' 2>"$t/err.txt"; rc=$?
check "bad --sizes: exit 2 (got $rc)" [ "$rc" -eq 2 ]
exit $fail
