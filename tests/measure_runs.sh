#!/usr/bin/env bash
# measure_runs.sh — what measure, calibrate and report say about a run:
# the one calibration line (which, whose file, how old); copy's eager and
# fused measured once and reported under both; one warning summary line per
# kind (each row's in full with --verbose); a full calibration refused for
# contention (MEMBOUND_TEST_CALIB_REFUSE, the CLI's test hook) taken again,
# then a quick one instead, said so, and the rows measured against it marked
# 'fallback' in the CSV and in the report's verdicts.
set -u
B=${MB_BIN:?MB_BIN not set}
S=${MB_SRC:?MB_SRC not set}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export MEMBOUND_CACHE_DIR=$tmp/cache
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
has() { grep -qF -- "$2" "$1" && ok || bad "$1 lacks '$2': $(head -c 600 "$1")"; }
hasnt() { ! grep -qF -- "$2" "$1" && ok || bad "$1 has '$2'"; }
col() { python3 -c "import csv,sys; print([r[sys.argv[2]] for r in csv.DictReader(open(sys.argv[1]))])" "$1" "$2"; }
cd "$tmp" || exit 1

# copy: one kernel whatever the plan, measured once and reported under both
"$B" measure copy --backend cpu --threads 1 --device h100-sxm --plan eager,fused --sizes 2^12,2^14 \
  --timeout 0.2 -o once.csv --per-kernel oncek.csv >out 2>err || bad "measure copy exited $?"
has err "copy: plans eager and fused are the same kernels: measured once, reported under both"
has err "calibration: none (the spec h100-sxm"
[ "$(col once.csv plan)" = "['eager', 'eager', 'fused', 'fused']" ] && ok || bad "plans $(col once.csv plan)"
python3 - once.csv <<'EOF' && ok || bad "eager and fused rows differ in their measured columns"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
same = ("reps", "time_s_median", "time_s_min", "time_s_p90", "time_cv", "contended")
sys.exit(0 if all(r[i][k] == r[i + 2][k] and r[i]["n"] == r[i + 2]["n"] for i in (0, 1) for k in same) else 1)
EOF
[ "$(col oncek.csv plan)" = "['eager', 'eager', 'fused', 'fused']" ] && ok || bad "kernel rows $(col oncek.csv plan)"
python3 - oncek.csv <<'EOF' && ok || bad "fused's kernel rows are not eager's, each named"
import csv, sys
k = list(csv.DictReader(open(sys.argv[1])))
sys.exit(0 if all(k[i]["time_s_median"] == k[i + 2]["time_s_median"] for i in (0, 1)) and all(r["kernel"] for r in k) else 1)
EOF

# a host far off its spec (host_ref_copy_gbs 100000): one summary line, the
# row's own warning only with --verbose
spec=$S/reports/data/cpu-amd-epyc-2vcpu/steady-run-cb591e2/local-cpu.ini
sed -e 's/^host_ref_copy_gbs = .*/host_ref_copy_gbs = 100000/' \
    -e 's/^measured_at = .*/measured_at = vm 2026-11-01T00:00:00Z/' "$spec" >fast.ini
"$B" measure copy --backend cpu --threads 1 --device fast.ini --plan eager --sizes 2^12,2^13 --timeout 0.2 \
  -o d.csv >out 2>err || bad "measure (drifted) exited $?"
has err "2 of 2 rows measured while the host's copy bandwidth or op rate was more than 20% off"
has err "--verbose for each row"
hasnt err "during the row the host ran at"
has err "calibration: full but stale (older than a day), from fast.ini"
[ "$(col d.csv calibration)" = "['stale', 'stale']" ] && ok || bad "calibration column $(col d.csv calibration)"
"$B" measure copy --backend cpu --threads 1 --device fast.ini --plan eager --sizes 2^12 --timeout 0.2 \
  --verbose -o d.csv >out 2>err || bad "measure --verbose exited $?"
has err "during the row the host ran at"
# one sign: measured / model - 1 in the table, positive when slower than the model
python3 - d.csv out <<'EOF' && ok || bad "err% is not measured / model - 1: $(cat out)"
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
line = [l for l in open(sys.argv[2]) if l.startswith("copy ")][0].split()
err = float(line[[i for i, w in enumerate(line) if w.endswith("%")][1]].rstrip("%"))
want = 100 * (float(r["time_s_median"]) / float(r["model_time_s"]) - 1)
sys.exit(0 if abs(err - want) <= 0.1 + 1e-3 * abs(want) else 1)
EOF

# a full calibration refused for contention, three times: a quick one instead
MEMBOUND_TEST_CALIB_REFUSE=3 "$B" calibrate --threads 1 -o fb.ini >out 2>err || bad "calibrate exited $?: $(tail -3 err)"
has err "(try 2 of 3)"
has err "(try 3 of 3)"
has err "falling back to a quick calibration"
has err "calibration: fallback (quick, full ones refused)"
has err "every full one was refused (the last: refused by the test hook"
has err "full calibrations were refused 3 times (the last: refused by the test hook)"
grep -q '^calibration = fallback$' fb.ini && ok || bad "fb.ini is not marked fallback"
[ ! -e cache ] || [ -z "$(ls cache)" ] && ok || bad "a fallback calibration was cached: $(ls cache)"
# the f32 GEMM rate through OpenBLAS where the build links it, and gemm runs the spec at it
if grep -aq 'libopenblas64.so.0\|libopenblas.so.0' "$B"; then # kernels/'s BLAS, compiled in where the build found it
  python3 -c "import sys; v = [l.split('=')[1] for l in open('fb.ini') if l.startswith('gemm_gflops ')]; sys.exit(0 if v and float(v[0]) > 0 else 1)" \
    && ok || bad "fb.ini has no positive gemm_gflops: $(grep gemm fb.ini)"
  cat out err | grep -q '^  gemm_gflops ' && ok || bad "calibrate's summary lacks gemm_gflops"
  "$B" gemm --mnk 512x512x512 --device fb.ini --json >gj 2>err || bad "gemm --device fb.ini exited $?"
  python3 -c "import json, sys; r = json.load(open('gj'))['results'][0]; sys.exit(0 if r['peak_key'] == 'gemm_gflops' and not r['tiled'] else 1)" \
    && ok || bad "gemm on fb.ini: $(head -c 300 gj)"
fi
"$B" measure copy --backend cpu --threads 1 --plan eager --dtype f32,bf16 --sizes 2^12 --timeout 0.2 --device fb.ini \
  -o fb.csv >out 2>err || bad "measure against fb.ini exited $?"
has err "calibration: fallback"
[ "$(col fb.csv calibration)" = "['fallback', 'fallback']" ] && ok || bad "calibration column $(col fb.csv calibration)"
"$B" report fb.csv -o rep --no-figures >rout 2>rerr; [ $? -le 1 ] && ok || bad "report exited >1: $(cat rerr)"
has rep/verdicts.csv "FALLBACK: the model columns come from a fallback calibration"
has rout "calibration: fallback"
# every calibration refused, quick ones too, no cache: exit 1 naming the refusals
MEMBOUND_TEST_CALIB_REFUSE=9 "$B" calibrate --quick --threads 1 -o no.ini >out 2>err
[ $? -eq 1 ] && ok || bad "calibrate with every try refused did not exit 1"
has err "every calibration was refused (3 tries)"
[ ! -e no.ini ] && ok || bad "no.ini written"
# report --smoke-test: every verdict labelled
"$B" report fb.csv -o rep2 --no-figures --smoke-test >rout 2>rerr
has rout "SMOKE TEST"
has rep2/report.md "**SMOKE TEST.**"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
