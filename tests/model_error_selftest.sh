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
# --at-host-rates: each row with both ratios against model_host_time_s (the model
# at the host's rates), counted with the rest; a row without the column keeps
# model_time_s and its drift mark
{
  echo "$cols,host_copy_gbs,host_copy_ratio,host_op_ratio,model_host_time_s"
  echo 'cpu,cpu,copy,eager,f32,262144,1,100,1.0e-4,1e-4,1e-4,0.01,1.1e-4,1,1,1,1,,,none-cpu,0,1,local-cpu,0,50,0.85,1.1,1.2e-4'
  echo 'cpu,cpu,copy,eager,f32,33554432,1,100,1.0e-2,1e-2,1e-2,0.01,0.6e-2,1,1,1,1,,,none-cpu,0,1,local-cpu,0,84,1.4,0.7,0.9e-2'
  echo 'cpu,cpu,copy,fused,f32,262144,1,100,1.0e-4,1e-4,1e-4,0.01,0.5e-4,1,1,1,1,,,none-cpu,0,1,local-cpu,0,60,1.0,0.75,'
} >"$t/h.csv"
py "$t/h.csv" --at-host-rates >"$t/out7.txt"; rc=$?
check "--at-host-rates: drifted rows counted (exit $rc)" [ "$rc" -eq 0 ]
check "--at-host-rates: errors against model_host_time_s" grep -q '^| copy | eager | f32 | +20% | -10% (host copy 140%, op 70%) |$' "$t/out7.txt"
check "--at-host-rates: no column, the model column" grep -q '^| copy | fused | f32 | -50% (host op 75%) |  |$' "$t/out7.txt"
check "--at-host-rates: summary" grep -q "^2 of 2 quiet, verified rows within 25%, the model at the host's rates.*; 0 of 1 rows measured while the host drifted" "$t/out7.txt"
# a row in two modes: the model's error against each (model 1.1e-2; modes 1.0e-2
# and 1.375e-2, 40% high)
{
  echo "$cols,host_copy_gbs,host_copy_ratio,host_op_ratio,model_host_time_s,time_s_lower_mode,time_s_upper_mode,upper_mode_share"
  echo 'cpu,cpu,copy,eager,f32,33554432,1,100,1.0e-2,1e-2,1e-2,0.01,1.1e-2,1,1,1,1,,,none-cpu,0,1,local-cpu,0,50,1.0,1.0,1.1e-2,1.0e-2,1.375e-2,0.4'
  echo 'cpu,cpu,copy,fused,f32,33554432,1,100,1.0e-2,1e-2,1e-2,0.01,1.1e-2,1,1,1,1,,,none-cpu,0,1,local-cpu,0,50,1.0,1.0,1.1e-2,,,'
} >"$t/modes.csv"
py "$t/modes.csv" >"$t/out10.txt"
check "two modes: the error against each" grep -q '^| copy | eager | f32 | +10% (two modes: +10% / -20%, 40% high) |$' "$t/out10.txt"
check "one mode: no mark" grep -q '^| copy | fused | f32 | +10% |$' "$t/out10.txt"
# several runs of the same rows: each cell the median over the runs that count
# (run 3's 2^25 drifted: left out), its range and count; the summary counts the
# medians (2^25: -30%, outside), then the single runs
{
  echo "$cols,host_copy_gbs,host_copy_ratio,host_op_ratio"
  for e in '1.1e-4 0.8e-2 1.0' '1.3e-4 0.6e-2 1.0' '1.2e-4 0.4e-2 1.5'; do
    set -- $e
    echo "cpu,cpu,copy,eager,f32,262144,1,100,1.0e-4,1e-4,1e-4,0.01,$1,1,1,1,1,,,none-cpu,0,1,local-cpu,0,50,1.0,1.0"
    echo "cpu,cpu,copy,eager,f32,33554432,1,100,1.0e-2,1e-2,1e-2,0.01,$2,1,1,1,1,,,none-cpu,0,1,local-cpu,0,50,$3,1.0"
  done
} >"$t/runs.csv"
py "$t/runs.csv" >"$t/out9.txt"; rc=$?
check "runs: a median outside the bound: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "runs: median, range and count per cell" grep -q '^| copy | eager | f32 | +20% (+10..+30%, 3 of 3) | -30% (-40..-20%, 2 of 3) |$' "$t/out9.txt"
check "runs: summary of medians, then single runs" grep -q '^Medians over runs: 1 of 2 rows within 25%; largest -30.0% (copy eager f32 n = 2^25). Single runs: 3 of 5 counted rows within 25%.$' "$t/out9.txt"
py "$t/runs.csv" --bound 35 >/dev/null; rc=$?
check "runs: every median within the bound: exit 0 (got $rc)" [ "$rc" -eq 0 ]
# --membound: the model's times recomputed from the spec and variant text the
# CSV carries (copy at 2^25 f32 on a 100 GB/s spec: 2.68 ms; measured 10% longer)
if [ -x "${MB_BIN:-}" ]; then
  {
    echo '# membound measurement'
    printf '# device_spec: %s\n' '[device]' 'name = t' 'kind = gpu' 'mem_bandwidth_gbs = 100' \
      'cache_mb = 1' 'fp32_tflops = 10' 'bf16_tflops = 10' 'launch_overhead_us = 1e-6' 'source = test'
    sed 's/^/# variant_text copy: /' "$src/model/variants/copy.mb"
    echo "$cols"
    echo 'cpu,cpu,copy,eager,f32,33554432,1,100,2.952790016e-3,1e-2,1e-2,0.01,5.905580032e-3,1,1,1,1,,,none-cpu,0,1,t,0'
  } >"$t/r.csv"
  py "$t/r.csv" --membound "$MB_BIN" >"$t/out5.txt"; rc=$?
  check "--membound: the model recomputed (exit $rc)" grep -q '^| copy | eager | f32 | -9% |$' "$t/out5.txt"
  # at the host's rates: the spec's bandwidth halved, the copy's time doubled
  sed 's/,none-cpu,0,1,t,0$/,none-cpu,0,1,t,0,40,0.5,1/; s/,model_device,contended$/,model_device,contended,host_copy_gbs,host_copy_ratio,host_op_ratio/; s/^\(cpu,cpu,copy,eager,f32,33554432,1,100,\)2.952790016e-3/\15.905580032e-3/' "$t/r.csv" >"$t/rh.csv"
  py "$t/rh.csv" --membound "$MB_BIN" --at-host-rates >"$t/out8.txt"; rc=$?
  check "--membound --at-host-rates: the spec at the host's rates (exit $rc)" grep -q '^| copy | eager | f32 | -9% (host copy 50%) |$' "$t/out8.txt"
  py "$t/r.csv" >"$t/out6.txt"
  check "without it: the CSV's model_time_s" grep -q '^| copy | eager | f32 | +100% |$' "$t/out6.txt"
  grep -v '^# device_spec' "$t/r.csv" >"$t/nospec.csv"
  py "$t/nospec.csv" --membound "$MB_BIN" 2>"$t/err.txt"; rc=$?
  check "--membound without an embedded spec: exit 2 (got $rc)" [ "$rc" -eq 2 ] && grep -q "no '# device_spec:' lines" "$t/err.txt"
else
  echo "skip --membound cases: no MB_BIN"
fi
py "$t/missing.csv" 2>"$t/err.txt"; rc=$?
check "missing file: exit 2 and one line (got $rc)" [ "$rc" -eq 2 ] && grep -q 'model_error.py: error: .*missing.csv' "$t/err.txt"
printf 'a,b\n1,2\n' >"$t/bad.csv"
py "$t/bad.csv" 2>"$t/err.txt"; rc=$?
check "not a measure CSV: exit 2 (got $rc)" [ "$rc" -eq 2 ] && grep -q 'not a membound measure CSV' "$t/err.txt"
py "$t/m.csv" --sizes 'two' 2>"$t/err.txt"; rc=$?
check "bad --sizes: exit 2 (got $rc)" [ "$rc" -eq 2 ]
exit $fail
