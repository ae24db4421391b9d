#!/usr/bin/env bash
# bad_input.sh — the bad-input catalogue: every command, every kind of input
# (expressions, variant files, device specs, CSVs, sizes, options, output
# paths, devices and FIFOs where files belong, full disks). Each case checks
# the exit code, that stderr is exactly one "membound: error:" line naming
# the problem (a pattern), and that no file was left behind or destroyed.
# Cases run with a 20 s limit: a hang is a failure, not a stuck suite.
set -uo pipefail
bin=${MB_BIN:?MB_BIN not set}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# ---- fixtures -----------------------------------------------------------------------
mkdir adir
mkfifo fifo
printf '[device]\nname = x\nlabel = a\0b\nmem_bandwidth_gbs = 100\n' >nul.ini
printf '[device]\nname = x\nlabel = caf\xe9\nmem_bandwidth_gbs = 100\n' >badutf8.ini
printf '[device]\nname = x\nmem_bandwith_gbs = 100\n' >badkey.ini
printf 'name v\ninput x\ny = sin(x\noutput y\n' >bad.mb
good_header=device,backend,variant,plan,dtype,n,time_s_median,verified
printf '%s\nh100-sxm,cpu,copy,eager,f32,4096,1e-6,1\n' "$good_header" >ok.csv
printf 'task,target,state\n0,a,OK\n' >tasks_nocsv.csv        # fleet task tables (report --fleet)
printf 'task,target,state,csv\n0,a,,ok.csv\n' >tasks_nostate.csv
printf '%s,dram_read_bytes\nh100-sxm,cpu,copy,eager,f32,4096,1e-6,1,100\n' "$good_header" >halfdram.csv
printf '%s,dram_write_bytes\nh100-sxm,cpu,copy,eager,f32,4096,1e-6,1,100\n' "$good_header" >halfdram2.csv
printf '%s\nh100-sxm,cpu,copy,eager,f32,lots,1e-6,1\n' "$good_header" >bad_n.csv
printf '%s\nh100-sxm,cpu,copy,eager,f32,4096\n' "$good_header" >short.csv
printf 'device,variant\nh100-sxm,copy\n' >nohdr.csv
# a report's own summary.csv given back to report (its columns as write_csv.c writes them)
printf 'file,line,device,backend,variant,plan,dtype,n,verified,time_s_median,resid_model_rel\nm.csv,2,local-cpu,cpu,copy,eager,f32,4096,1,1e-6,0.1\n' >summary.csv
printf '%s\n/dev/zero,cpu,copy,eager,f32,4096,1e-6,1\n' "$good_header" >devzero.csv
printf '# model_device: /dev/zero\n%s\nnosuchdev,cpu,copy,eager,f32,4096,1e-6,1\n' "$good_header" >provzero.csv
printf '%s\nh100-sxm,cpu,copy,eager,f32,4096,1e-6,1\0\n' "$good_header" >nul.csv
printf '%s\nh100-sxm,cpu,c\xffpy,eager,f32,4096,1e-6,1\n' "$good_header" >badutf8.csv
printf '%s\nspec:0,cpu,copy,eager,f32,4096,1e-6,1\n' "$good_header" >specdev.csv
printf 'keep\n' >keep.txt
# a variant of its own named like a built-in would stand in for it in report
printf 'name copy\ninput x\ny = x * 2\noutput y\n' >mycopy.mb
mkdir -p own && printf 'input x\ny = x * 2\noutput y\n' >own/copy.mb
printf 'name a\ninput x\nname b\ny = x * 2\noutput y\n' >twoname.mb
# variant texts a CSV carries must match its rows' bytes; one text per variant
bytes_header=device,backend,variant,plan,dtype,n,time_s_median,read_bytes,write_bytes,verified
{ printf '# variant_text v: %s\n' 'name v' 'input x, a, b' 'y = x + a + b' 'output y'
  printf '%s\nh100-sxm,cpu,v,eager,f32,4096,1e-6,16384,16384,1\n' "$bytes_header"; } >text3in.csv
{ printf '# variant_text v: %s\n' 'name v' 'input x' 'y = x * 2' 'output y'
  printf '%s\nh100-sxm,cpu,v,eager,f32,4096,1e-6,16384,16384,1\n' "$bytes_header"; } >textok.csv
{ printf '# variant_expr v: y = x * 2\n# variant_expr v: y = x * 2 + x\n'
  printf '%s\nh100-sxm,cpu,v,eager,f32,4096,1e-6,16384,16384,1\n' "$bytes_header"; } >text2expr.csv
{ printf '# variant_text v: %s\n' 'name v' 'input x' 'y = x * 2' 'output y'
  printf '# variant_expr v: y = x * 2\n'
  printf '%s\nh100-sxm,cpu,v,eager,f32,4096,1e-6,16384,16384,1\n' "$bytes_header"; } >textexpr.csv
# a text named like a built-in (measured before such files were refused) must be the built-in
{ printf '# variant_text copy: %s\n' 'name copy' 'input x, a' 'y = x + a' 'output y'
  printf '%s\nh100-sxm,cpu,copy,eager,f32,4096,1e-6,32768,16384,1\n' "$bytes_header"; } >textcopy.csv
# the model's DRAM bytes on the CSV's spec (1 MiB cache): an edited one is refused
{ printf '# device_spec: %s\n' '[device]' 'name = t' 'mem_bandwidth_gbs = 100' 'cache_mb = 1' \
    'fp32_tflops = 10' 'bf16_tflops = 10' 'launch_overhead_us = 1' 'source = test'
  printf '# variant_expr v: y = x * 2\n'
  printf 'device,backend,variant,plan,dtype,n,time_s_median,read_bytes,write_bytes,model_dram_read_bytes,model_dram_write_bytes,verified\n'
  printf 't,cpu,v,eager,f32,4096,1e-6,16384,16384,16384,99,1\n'; } >textdram.csv
printf '[device]\nname = c\nkind = cpu\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\nbf16_tflops = 1\nlaunch_overhead_us = 1\nsource = s\n' >cpuspec.ini
# spec figures outside their plausible ranges (a denormal bandwidth made every time inf)
spec_tail='cache_mb = 1\nfp32_tflops = 1\nbf16_tflops = 1\nsource = s\n'
printf "[device]\nname = t\nmem_bandwidth_gbs = 1e-320\nlaunch_overhead_us = 1\n$spec_tail" >tinybw.ini
printf "[device]\nname = t\nmem_bandwidth_gbs = 1e30\nlaunch_overhead_us = 1\n$spec_tail" >hugebw.ini
printf "[device]\nname = t\nmem_bandwidth_gbs = 100\nlaunch_overhead_us = 1e30\n$spec_tail" >hugelaunch.ini
printf '[device]\nname = c\nkind = cpu\nmem_bandwidth_gbs = 100\ncache_mb = 1\nfp32_tflops = 1\nlaunch_overhead_us = 1\nsource = s\ncalibration = guessed\n' >badcal.ini
{ printf '# membound measurement\n# backend: cpu\n'
  printf '# device_spec: %s\n' '[device]' 'name = t' 'mem_bandwidth_gbs = 100' 'cache_mb = 1e30' \
    'fp32_tflops = 10' 'bf16_tflops = 10' 'launch_overhead_us = 1' 'source = test'
  printf '%s\nh100-sxm,cpu,copy,eager,f32,4096,1e-6,1\n' "$good_header"; } >bigcache.csv
# the same spec in the device_spec column of the rows (newlines written as \n)
{ printf '%s,device_spec\n' "$good_header"
  printf 'h100-sxm,cpu,copy,eager,f32,4096,1e-6,1,"%s"\n' \
    '[device]\nname = t\nmem_bandwidth_gbs = 100\ncache_mb = 1e30\nfp32_tflops = 10\nbf16_tflops = 10\nlaunch_overhead_us = 1\nsource = test'
  printf 'h100-sxm,cpu,copy,fused,f32,4096,1e-6,1,"%s"\n' '[device]\nname = u'; } >bigcache2.csv
head -n 2 bigcache2.csv >bigcache3.csv
ln -s nowhere.csv dangling.csv
# profilers' files for import: cut inside a quoted field, an unknown unit, a kernel without dur
printf '"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n"0","k","1' >cut.ncu.csv
printf '"ID","Kernel Name","gpu__time_duration.sum"\n"","","furlong"\n' >unit.ncu.csv
printf '{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 1}]}' >nodur.json

snapshot() { ls -la --time-style=+%s . | awk 'NR > 1 { print $1, $5, $7 }' | sort; }
before=$(snapshot)
has() { "$bin" "$1" --help >/dev/null 2>&1; }

n=0 fails=0
# expect EXIT PATTERN -- ARGS...: stdout is thrown away
expect() {
  local want=$1 pat=$2
  shift 3
  n=$((n + 1))
  local err r lines
  err=$(timeout 20 "$bin" "$@" 2>&1 >/dev/null </dev/null)
  r=$?
  lines=$(printf '%s' "$err" | grep -c '')
  local why=""
  [ "$r" -eq "$want" ] || why="exit $r, expected $want"
  [ -z "$why" ] && [ "$lines" -ne 1 ] && why="$lines stderr lines, expected 1"
  [ -z "$why" ] && ! printf '%s' "$err" | grep -q '^membound: error: ' && why="not an error line"
  [ -z "$why" ] && ! printf '%s' "$err" | grep -qiE -- "$pat" && why="no '$pat' in the message"
  local after
  after=$(snapshot)
  [ -z "$why" ] && [ "$after" != "$before" ] && why="files changed: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  if [ -n "$why" ]; then
    fails=$((fails + 1))
    echo "FAIL [$n] membound $*: $why"
    printf '%s\n' "$err" | head -n 5 | sed 's/^/    /'
  else
    echo "ok   [$n] membound $*"
  fi
}
# expect_stdout_full ARGS...: output sent to /dev/full must fail with 1
expect_full() {
  n=$((n + 1))
  local err r
  err=$(timeout 20 "$bin" "$@" 2>&1 >/dev/full </dev/null)
  r=$?
  if [ "$r" -eq 1 ] && printf '%s' "$err" | grep -q 'standard output'; then
    echo "ok   [$n] membound $* >/dev/full"
  else
    fails=$((fails + 1))
    echo "FAIL [$n] membound $* >/dev/full: exit $r: $err"
  fi
}

# ---- top level ------------------------------------------------------------------------
expect 2 'no command' --
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 2 "unknown command '--bogus'" -- --bogus

# ---- model: expressions, variants, options, devices -------------------------------------
expect 2 '<expr>:1:' -- model --expr 'y = sin(x'
expect 2 'too large' -- model --expr 'y = 1e400 * x'
expect 2 '<expr>:1:5: .*3.5e38.*float32' -- model --expr 'y = 3.5e38 * x'
expect 2 '<expr>:1:9: .*1e309.*float32' -- model --expr 'y = x * 1e309'
expect 2 '1:5' -- model --expr 'y = $x'
expect 2 'n' -- model copy --n 0
expect 2 'n' -- model copy --n 2^99
expect 2 'n' -- model copy --n lots
expect 2 'cannot be combined' -- model copy --n 2^10 --sizes 2^12
expect 2 'cannot be combined' -- model copy --json --csv
expect 2 'given twice' -- model copy --n 2^10 --n 2^12
expect 2 "unknown plan 'warp'" -- model copy --plan warp
expect 2 "unknown plan 'bogus'" -- model copy --n 2^10 --plan bogus
expect 2 'dtype' -- model copy --dtype f64
expect 2 'nosuch' -- model copy --device nosuch
expect 2 'character device' -- model copy --device /dev/zero
expect 2 'FIFO' -- model copy --device fifo
expect 2 'directory' -- model copy --device ./adir
expect 2 'NUL' -- model copy --device nul.ini
expect 2 'UTF-8' -- model copy --device badutf8.ini
expect 2 'mem_bandwith_gbs' -- model copy --device badkey.ini
expect 2 'nosuchvariant' -- model nosuchvariant
expect 2 "mycopy.mb:1:1: variant name 'copy' is a built-in's" -- model ./mycopy.mb
expect 2 "own/copy.mb: variant name 'copy' \(from the file name\) is a built-in's" -- model own/copy.mb
expect 2 "<expr>:1:1: variant name 'copy' is a built-in's" -- model --expr 'name copy; y = x * 2'
expect 2 "twoname.mb:3:1: a second 'name' directive \(the first is on line 1\)" -- model ./twoname.mb
expect 2 "tinybw.ini:3: key 'mem_bandwidth_gbs': .*got '1e-320'" -- model copy --device tinybw.ini --json
expect 2 "hugebw.ini:3: key 'mem_bandwidth_gbs': .*got '1e30'" -- model copy --device hugebw.ini
expect 2 "hugelaunch.ini:4: key 'launch_overhead_us': .*got '1e30'" -- whatif copy --devices hugelaunch.ini --json
expect 2 "badcal.ini:9: key 'calibration': expected 'full', 'quick' or 'fallback', got 'guessed'" -- model copy --device badcal.ini
expect 2 'character device' -- model /dev/zero
expect 2 'FIFO' -- model ./fifo
expect 2 'bad.mb:4:1' -- model ./bad.mb
expect 2 "variant 'copy' is given twice: by 'copy' \(input 1\) and by 'copy' \(input 2\)" -- model copy copy
expect 2 "variant 'v' is given twice: by --expr 1 \('name v; y = x \* 1.5'\) \(input 1\) and by --expr 2" -- whatif --expr 'name v; y = x * 1.5' --expr 'name v; y = x * 2'
expect 2 'needs a value' -- model copy --n
expect 2 "unknown option '--bogus'" -- model --bogus
expect 2 'empty' -- model copy --sizes 2^20..2^10

# ---- whatif and devices ------------------------------------------------------------------
expect 2 'nosuch' -- whatif copy --devices h100-sxm,nosuch
expect 2 'empty' -- whatif copy --devices ''
expect 2 "unknown plan 'bogus'" -- whatif copy --n 2^10 --plan bogus
expect 2 'cannot be combined' -- whatif copy --json --csv
expect 2 'character device' -- whatif copy --devices /dev/zero
expect 2 'FIFO' -- whatif copy --devices ./fifo
expect 2 "unknown option" -- devices --bogus
expect_full devices --json
expect_full model copy --json
expect_full whatif copy --csv

# ---- gemm --------------------------------------------------------------------------------
expect 2 'needs --mnk' -- gemm
expect 2 "three sizes" -- gemm --mnk 4096x
expect 2 'needs a value' -- gemm --mnk
expect 2 'character device' -- gemm --mnk 64x64x64 --device /dev/zero
expect 2 'FIFO' -- gemm --mnk 64x64x64 --device ./fifo
expect 2 "unexpected argument 'extra'" -- gemm --mnk 64x64x64 extra
expect_full gemm --mnk 64x64x64 --json

# ---- attention ---------------------------------------------------------------------------
expect 2 'needs --dims' -- attention
expect 2 'needs a value' -- attention --dims
expect 2 "unknown key 'seqlen'" -- attention --dims seqlen=4096,head_dim=64
expect 2 'character device' -- attention --dims seq=64,head_dim=64 --device /dev/zero
expect 2 'FIFO' -- attention --dims seq=64,head_dim=64 --device ./fifo
expect 2 "unexpected argument 'extra'" -- attention --dims seq=64,head_dim=64 extra
expect_full attention --dims seq=64,head_dim=64 --json
expect_full attention --dims seq=64,head_dim=64

# ---- mlp ---------------------------------------------------------------------------------
expect 2 'needs d_model and d_ff' -- mlp
expect 2 'needs a value' -- mlp --dims
expect 2 "unknown key 'hidden'" -- mlp --dims hidden=4096,d_ff=64
expect 2 "unknown layer 'mistral'" -- mlp --layer mistral --preset llama-7b
expect 2 'character device' -- mlp --preset gpt2-small --device /dev/zero
expect 2 'FIFO' -- mlp --preset gpt2-small --device ./fifo
expect 2 "unexpected argument 'extra'" -- mlp --preset gpt2-small extra
expect_full mlp --preset gpt2-small --json
expect_full mlp --preset gpt2-small --backward

# ---- measure and calibrate: refused before anything runs -------------------------------
if has measure; then
  expect 2 'backend' -- measure copy --backend warp
  expect 2 'backend' -- measure copy --n 2^10 --backend bogus
  expect 2 "unknown plan" -- measure copy --n 2^10 --plan bogus
  expect 2 "unknown option '--bogus'" -- measure copy --n 2^10 --bogus
  expect 2 'directory' -- measure copy --sizes 2^10 --device h100-sxm -o adir
  expect 2 'FIFO' -- measure copy --sizes 2^10 --device h100-sxm -o fifo
  expect 2 'cannot write' -- measure copy --sizes 2^10 --device h100-sxm -o no/such/dir/x.csv
  expect 2 'link to nothing' -- measure copy --sizes 2^10 --device h100-sxm -o dangling.csv
  expect 2 'directory' -- measure copy --sizes 2^10 --device h100-sxm -o x.csv --per-kernel adir
  expect 2 'cannot be combined|given twice' -- measure copy --n 2^10 --sizes 2^12 --device h100-sxm
  expect 2 'cannot be combined' -- measure copy --warm --cold --sizes 2^10 --device h100-sxm
  expect 2 'twice' -- measure copy --dtype f32,f32 --sizes 2^10 --device h100-sxm
  expect 2 'GB' -- measure copy --sizes 2^40 --device h100-sxm
  expect 2 '<expr>:1:' -- measure --expr 'y = sin(' --device h100-sxm
  expect 2 'character device' -- measure copy --sizes 2^10 --device /dev/zero
  expect 2 "unknown option '--bogus'" -- measure copy --sizes 2^10 copy --bogus
  expect 2 'directory' -- calibrate -o adir
  long=$(printf 'a%.0s' $(seq 5000))
  expect 2 "aaaa \[\.\.\.\] aaaa.*\.ini: path too long$" -- calibrate -o "no/$long.ini"
  expect 2 "aaaa \[\.\.\.\] aaaa.*\.csv: path too long$" -- measure copy --sizes 2^10 --device h100-sxm -o "no/$long.csv"
  expect 2 'backend' -- calibrate --backend bogus
  expect 2 "--name 'a b': a device id is 1 to 63 letters" -- calibrate --name 'a b' -o x.ini
  expect 2 "--name '': a device id" -- calibrate --name '' -o x.ini
fi

# ---- report and figures: measurement CSVs ---------------------------------------------
if has report; then
  expect 2 'missing.csv: cannot open' -- report missing.csv -o out
  expect 2 'directory' -- report adir -o out
  expect 2 'FIFO' -- report fifo -o out
  expect 2 'character device' -- report /dev/zero -o out
  expect 2 'NUL' -- report nul.csv -o out
  expect 2 'UTF-8' -- report badutf8.csv -o out
  expect 2 "without 'dram_write_bytes'" -- report halfdram.csv -o out
  expect 2 "without 'dram_read_bytes'" -- report halfdram2.csv -o out
  expect 2 "column 'n'" -- report bad_n.csv -o out
  expect 2 'fields' -- report short.csv -o out
  expect 2 'missing column' -- report nohdr.csv -o out
  expect 2 "summary.csv: this is a report's summary .*not measurements: pass the measure CSVs" -- report summary.csv -o out
  expect 2 'character device' -- report devzero.csv -o out
  expect 2 'character device|nosuchdev' -- report provzero.csv -o out
  expect 2 "unknown device 'spec:0'" -- report specdev.csv -o out
  long=$(printf 'a%.0s' $(seq 5000))
  expect 2 "aaaa \[\.\.\.\] aaaa.*: path too long$" -- report ok.csv -o "no/$long"
  expect 2 "mycopy.mb:1:1: variant name 'copy' is a built-in's" -- report ok.csv ./mycopy.mb -o out
  expect 2 "<expr>:1:1: variant name 'copy' is a built-in's" -- report ok.csv --expr 'name copy; y = x * 2' -o out
  expect 2 "text3in.csv:6: column 'read_bytes' is 16384, but the text of variant 'v' this CSV carries \(line 1\) gives 65536" -- report text3in.csv -o out
  expect 2 "textcopy.csv:6: the text of variant 'copy' this CSV carries \(line 1\) is not the built-in 'copy'" -- report textcopy.csv -o out
  expect 2 "text2expr.csv:2: a second text of variant 'v'.*line 1" -- report text2expr.csv -o out
  expect 2 "textexpr.csv:5: a second text of variant 'v'.*line 1" -- report textexpr.csv -o out
  expect 2 "textdram.csv:11: column 'model_dram_write_bytes' is 99, .* gives 16384" -- report textdram.csv -o out
  expect 2 "textdram.csv:11: column 'model_dram_write_bytes' is 99" -- report textdram.csv --device cpuspec.ini -o out
  # a GPU's model for CPU rows: refused, not relabelled
  expect 2 "textdram.csv:11: --device b200 is a GPU but this row was measured on the cpu backend" -- report textdram.csv --device b200 -o out
  expect 2 "bigcache.csv:6: key 'cache_mb': .*got '1e30' \(the device spec this CSV carries\)" -- report bigcache.csv -o out
  expect 2 "bigcache2.csv:3:[0-9]*: column 'device_spec' differs from an earlier row's" -- report bigcache2.csv -o out
  expect 2 "bigcache3.csv:2: device_spec:4: key 'cache_mb': .*got '1e30' \(the device spec this CSV carries\)" -- report bigcache3.csv -o out
  expect 2 'not a directory|exists|directory' -- report ok.csv -o keep.txt
  # a fleet's task table (report --fleet)
  expect 2 "tasks_nocsv.csv:1: no column 'csv'" -- report ok.csv --fleet tasks_nocsv.csv -o out
  expect 2 "tasks_nostate.csv:2:5: column 'state' is empty" -- report ok.csv --fleet tasks_nostate.csv -o out
  expect 2 'missing_tasks.csv: cannot open' -- report ok.csv --fleet missing_tasks.csv -o out
  expect 2 'directory' -- report ok.csv --fleet adir -o out
  expect 2 "unknown option" -- figures --bogus
  expect 2 "unknown option" -- demo --bogus
fi

# ---- import: profilers' files ------------------------------------------------------
if has import; then
  expect 2 'missing.csv: cannot open' -- import ncu missing.csv -o out.csv
  expect 2 'directory' -- import ncu adir -o out.csv
  expect 2 'FIFO' -- import ncu fifo -o out.csv
  expect 2 'character device' -- import torch-trace /dev/zero -o out.csv
  expect 2 'NUL' -- import ncu nul.csv -o out.csv
  expect 2 "cut.ncu.csv:3:9: unterminated quoted field" -- import ncu cut.ncu.csv -o out.csv
  expect 2 "unit.ncu.csv:2:7: unit 'furlong': expected a time unit" -- import ncu unit.ncu.csv -o out.csv
  expect 2 'traceEvents\[0\]: a kernel event needs "name", "ts" and "dur"' -- import torch-trace nodur.json -o out.csv
  expect 2 "unknown format 'nvprof'" -- import nvprof ok.csv -o out.csv
  expect 2 "no -o OUT.csv" -- import ncu ok.csv
  expect 2 "is also the input" -- import ncu ok.csv -o ok.csv
  expect 2 "mycopy.mb: is also the input" -- import ncu ok.csv --variant mycopy.mb -o mycopy.mb
  expect 2 "cpuspec.ini: is also the input cpuspec.ini" -- import ncu ok.csv --device cpuspec.ini -o out.csv --per-kernel cpuspec.ini
  expect 2 "unknown option" -- import ncu ok.csv --bogus
  expect 2 "warmup: expected a count" -- import ncu ok.csv --warmup -1 -o out.csv
  expect 2 'not a directory|exists|directory' -- import ncu ok.csv -o adir
  expect 2 "--n and --sizes cannot be combined" -- import ncu ok.csv --n 2^20 --sizes 2^20 -o out.csv
  expect 2 "--dtype given twice" -- import ncu ok.csv --dtype f32 --dtype bf16 -o out.csv
  expect 2 "--variant or --expr, not both" -- import ncu ok.csv --variant copy --expr 'y = x' -o out.csv
fi

# a report whose one file cannot be written writes none of the others
if has report; then
  n=$((n + 1))
  mkdir -p rep/summary.json
  err=$(timeout 60 "$bin" report ok.csv -o rep --no-figures 2>&1 >/dev/null)
  r=$?
  left=$(cd rep && ls -A | grep -v '^summary.json$' | grep -v '^figures$' | tr '\n' ' ')
  if [ "$r" -eq 2 ] && [ -z "$left" ] && printf '%s' "$err" | grep -q 'summary.json'; then
    echo "ok   [$n] report with summary.json in the way: exit 2, no other report file"
  else
    fails=$((fails + 1))
    echo "FAIL [$n] report with summary.json in the way: exit $r, left: $left; $err"
  fi
  rm -rf rep
fi

echo "$n cases: $((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
