#!/usr/bin/env bash
# torch_gpu_selftest.sh — bench/torch_gpu.py without PyTorch or a GPU: --help,
# --list, --selftest FILE (its CSV writer against the design's columns), and
# its run path against tests/torch_fake (a pure-Python torch stand-in with a
# simulated GPU stream): rows timed behind the sleep hold the simulated kernel
# time, not Python's; capture and compile failures become notes and the
# per-row protocol; a run stopped or killed mid-way leaves a valid CSV of the
# rows so far. It does not check PyTorch itself (that needs the GPU session).
set -u
SRC=${MB_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || { echo "python3 missing: skipped"; exit 77; }
S=$SRC/bench/torch_gpu.py
FAKE=$SRC/tests/torch_fake
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
export MB_TORCH_SYSTEM=1          # the stand-in torch, never the bench venv (nothing downloaded)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# check.py FILE [key=value...]: the CSV is the design's columns, every row parses;
# rows=N / min_rows=N, protocol counts (cuda-graph=N), absent=variant/plan,
# blocked_max_s=S (median of every row timed behind the sleep), verified=1.
cat >"$tmp/check.py" <<'EOF'
import csv, re, sys
COLUMNS = ("device,backend,variant,plan,dtype,n,kernels,reps,time_s_median,time_s_min,time_s_p90,"
           "time_cv,model_time_s,read_bytes,write_bytes,model_dram_read_bytes,model_dram_write_bytes,"
           "dram_read_bytes,dram_write_bytes,counters,max_rel_err,verified").split(",")
path, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
lines = [l for l in open(path, newline="") if l.strip()]
if any(l.startswith("#") for l in lines):
    sys.exit(f"{path}: a '#' line: the CSV is plain")
recs = list(csv.reader(lines))
if recs and recs[0] == COLUMNS + ["provenance"]:
    recs = [r[:-1] for r in recs]
if not recs or recs[0] != COLUMNS:
    sys.exit(f"{path}: header is {recs[0] if recs else 'missing'}")
rows, protos = [], {}
for i, r in enumerate(recs[1:], 1):
    if len(r) != len(COLUMNS):
        sys.exit(f"{path}: row {i} has {len(r)} fields")
    d = dict(zip(COLUMNS, r))
    m = re.fullmatch(r"none-torch; protocol=(cuda-graph|blocking-sleep|cuda-graph-unblocked|direct)", d["counters"])
    if not m or d["backend"] not in ("torch-eager", "torch-compile") or d["verified"] not in ("0", "1") \
            or int(d["n"]) < 1 or int(d["reps"]) < 10 or d["kernels"] != "":
        sys.exit(f"{path}: row {i}: {r}")
    for k in ("time_s_median", "time_s_min", "time_s_p90"):
        if not float(d[k]) > 0:
            sys.exit(f"{path}: row {i}: {k} = {d[k]}")
    if not float(d["time_s_min"]) <= float(d["time_s_median"]) <= float(d["time_s_p90"]):
        sys.exit(f"{path}: row {i}: min <= median <= p90 does not hold")
    float(d["max_rel_err"])
    protos[m.group(1)] = protos.get(m.group(1), 0) + 1
    rows.append(d)
def need(cond, what):
    if not cond:
        sys.exit(f"{path}: {what} (rows {len(rows)}, protocols {protos})")
for k, v in want.items():
    if k == "rows": need(len(rows) == int(v), f"{v} rows expected")
    elif k == "min_rows": need(len(rows) >= int(v), f">= {v} rows expected")
    elif k == "verified": need(all(d["verified"] == v for d in rows), f"verified = {v} expected in every row")
    elif k == "absent": need(not any(f"{d['variant']}/{d['plan']}" == v for d in rows), f"no {v} row expected")
    elif k == "blocked_max_s":
        slow = [(d["variant"], d["plan"], d["time_s_median"]) for d in rows
                if d["counters"].endswith(("=cuda-graph", "=blocking-sleep")) and float(d["time_s_median"]) > float(v)]
        need(not slow, f"rows timed behind the sleep above {v} s: {slow}")
    elif k.startswith("proto:"):  # proto:variant/plan=protocol
        vp = k[6:]
        got = {d["counters"].split("=", 1)[1] for d in rows if f"{d['variant']}/{d['plan']}" == vp}
        need(got == {v}, f"{vp} timed as {got or 'nothing'}, expected {v}")
    else: need(protos.get(k, 0) == int(v), f"{v} rows of protocol {k} expected")
print(len(rows))
EOF
check() { "$PY" "$tmp/check.py" "$@" >/dev/null 2>"$tmp/check.err" && ok || bad "$(cat "$tmp/check.err")"; }
rows_of() { grep -vc '^#\|^device,' "$1" 2>/dev/null; }
# prov FILE: the provenance lines the file's rows carry (the last row's: every
# row carries the lines so far), one per line
prov() {
  "$PY" -c 'import csv, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # grep -q stops reading early
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
text = rows[-1]["provenance"] if rows else ""
out, i = [], 0
while i < len(text):
    if text[i] == "\\" and text[i + 1:i + 2] in ("n", "\\"):
        out.append("\n" if text[i + 1] == "n" else "\\"); i += 2
    else:
        out.append(text[i]); i += 1
print("".join(out))' "$1"
}

# 1. no PyTorch needed: compiles, --help, --list, bad usage
"$PY" -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
  "$S" "$tmp/torch_gpu.pyc" && ok || bad "py_compile"
"$PY" "$S" --help >"$tmp/help" 2>&1 && grep -q -- '--selftest' "$tmp/help" && ok || bad "--help"
[ "$("$PY" "$S" --list --sizes 2^10 --dtype f32 | wc -l)" -eq 8 ] && ok || bad "--list: not 8 cases"
"$PY" "$S" --dtype f64 --list >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--dtype f64 not exit 2"
# the largest size first (the cold-memory rows the validation needs)
[ "$("$PY" "$S" --list --sizes 2^20,2^26 --dtype f32 | head -n1)" = "copy eager torch-eager f32 n=67108864" ] \
  && ok || bad "--list: 2^26 not first"

# 2. --selftest FILE: the writer with mocked timings (re-reads the file after every row itself)
"$PY" "$S" --selftest "$tmp/self.csv" 2>"$tmp/self.err" && ok || bad "--selftest: $(cat "$tmp/self.err")"
check "$tmp/self.csv" rows=16 cuda-graph=4 blocking-sleep=4 cuda-graph-unblocked=4 direct=4
"$PY" "$S" --selftest -o "$tmp/self2.csv" --sizes 2^4 --dtype f16 copy 2>/dev/null && ok || bad "--selftest -o"
check "$tmp/self2.csv" rows=1
if ! "$PY" -c 'import torch' 2>/dev/null; then
  "$PY" "$S" --sizes 2^10 -o "$tmp/none.csv" 2>/dev/null; [ $? -eq 3 ] && ok || bad "no PyTorch: not exit 3"
fi

# 3. the run path against the stand-in torch
fake() { PYTHONPATH="$FAKE" "$PY" "$S" "$@"; }
fake --sizes 2^6 --dtype f32,bf16 --timeout 2 -o "$tmp/a.csv" 2>"$tmp/a.err"; r=$?
[ $r -eq 0 ] && ok || { bad "fake run exited $r"; tail -5 "$tmp/a.err" >&2; }
check "$tmp/a.csv" rows=16 verified=1 blocked_max_s=4e-5 proto:copy/eager=cuda-graph \
  proto:sigmoid3/eager=cuda-graph proto:gelu_tanh/fused=cuda-graph
prov "$tmp/a.csv" | grep -q '^torch_compile_s: ' && ok || bad "no torch_compile_s line"
prov "$tmp/a.csv" | grep -q '^protocols: cuda-graph' && ok || bad "no protocols summary"
# the headline case compiled first, at its largest size, then the other dtype
fake --sizes 2^6,2^8 --dtype bf16,f32 --timeout 2 -o "$tmp/o.csv" 2>/dev/null
[ "$(prov "$tmp/o.csv" | grep '^torch_compile: ' | head -n2 | cut -d: -f2 | cut -d' ' -f2-4 | tr '\n' ';')" = \
  "sin2_plus_cos2 bf16 n=256;sin2_plus_cos2 bf16 n=64;" ] && ok || bad "compile order: $(prov "$tmp/o.csv" | grep '^torch_compile: ' | head -n3)"
# compile before the rows: every torch_compile line precedes the lines written after them
prov "$tmp/a.csv" | awk '/^protocols: / { after = 1 } /^torch_compile/ { if (after) bad = 1 } END { exit bad }' \
  && ok || bad "a torch_compile line after the rows"

# failures: capture fails (Function, compiled), a replay that leaves its output
# stale, a compiler that fails: notes, blocking-sleep rows, no fused s2c2 row
FAKE_TORCH_CAPTURE_FAIL=ThreeSigmoidsRecompute,gelu_tanh FAKE_TORCH_REPLAY_STALE=clone \
  FAKE_TORCH_COMPILE_FAIL=sin2_plus_cos2 fake --sizes 2^6 --dtype f32 --timeout 2 -o "$tmp/b.csv" 2>"$tmp/b.err"
[ $? -eq 1 ] && ok || bad "failing fake run: not exit 1"
check "$tmp/b.csv" rows=7 verified=1 blocked_max_s=4e-5 absent=sin2_plus_cos2/fused \
  proto:sigmoid3/recompute=blocking-sleep proto:gelu_tanh/fused=blocking-sleep \
  proto:copy/eager=blocking-sleep proto:sigmoid3/store=cuda-graph
prov "$tmp/b.csv" | grep -q '^torch_compile: sin2_plus_cos2 f32 n=64: torch.compile failed' && ok \
  || bad "no compile failure line"
prov "$tmp/b.csv" | grep -q '^failed: sin2_plus_cos2/fused/f32/64' && ok || bad "no failed line"
prov "$tmp/b.csv" | grep -q '^note: copy eager f32 n=64: the graph replay.s result failed the check' && ok \
  || bad "no stale-replay note"
prov "$tmp/b.csv" | grep -q '^note: sigmoid3 recompute f32 n=64: CUDA graph capture failed' && ok || bad "no capture note"

# no torch.cuda._sleep: graph replay unblocked, calls direct, said so
FAKE_TORCH_NO_SLEEP=1 FAKE_TORCH_CAPTURE_FAIL=clone fake copy sigmoid3 --sizes 2^6 --dtype f32 --timeout 2 \
  -o "$tmp/c.csv" 2>/dev/null
check "$tmp/c.csv" rows=4 proto:copy/eager=direct proto:sigmoid3/eager=cuda-graph-unblocked
prov "$tmp/c.csv" | grep -q '^blocking_kernel: none (torch.cuda._sleep is missing)' && ok || bad "no blocking_kernel line"

# --budget-s: counted after compilation; copy takes >= 0.2 s, the cases after it are
# skipped and named
fake copy sigmoid3 --sizes 2^6 --dtype f32 --budget-s 0.05 -o "$tmp/d.csv" 2>/dev/null
[ $? -eq 1 ] && ok || bad "budget run: not exit 1"
check "$tmp/d.csv" rows=1
prov "$tmp/d.csv" | grep -q '^skipped (budget 0.05 s): sigmoid3/eager/f32/64 sigmoid3/store/f32/64' && ok \
  || bad "no skipped line"

# stopped (SIGTERM, as timeout(1) does) and killed (SIGKILL) mid-way: the
# rows measured so far are on disk and the file is a valid CSV. The 6th
# torch.rand call (the 4th case's input) hangs.
for sig in TERM KILL; do
  f=$tmp/kill-$sig.csv
  FAKE_TORCH_HANG_RAND=6 PYTHONPATH="$FAKE" "$PY" "$S" --sizes 2^6 --dtype f32 --timeout 2 -o "$f" 2>/dev/null &
  pid=$!
  for _ in $(seq 600); do [ "$(rows_of "$f")" -ge 3 ] 2>/dev/null && break; sleep 0.1; done
  sleep 0.3
  kill -"$sig" "$pid"
  { wait "$pid"; } 2>/dev/null; r=$?
  if [ "$sig" = TERM ]; then
    [ $r -eq 1 ] && ok || bad "SIGTERM: exit $r, not 1"
    prov "$f" | grep -q '^stopped (signal 15) after 3 rows' && ok || bad "SIGTERM: no stopped line"
  else
    [ $r -eq 137 ] && ok || bad "SIGKILL: exit $r, not 137"
  fi
  check "$f" rows=3
done

# membound's own reader takes the files (the provenance column, the protocol
# in counters), where the build has report and gnuplot is installed
B=${MB_BIN:-}
if [ -x "$B" ] && command -v gnuplot >/dev/null && "$B" report --help >/dev/null 2>&1; then
  cp "$tmp/b.csv" "$tmp/torch_gpu.csv"
  "$B" report "$tmp/torch_gpu.csv" "$tmp/kill-KILL.csv" -o "$tmp/rep" >/dev/null 2>"$tmp/rep.err" && ok \
    || bad "membound report: $(tail -3 "$tmp/rep.err")"
  grep -q 'torch_gpu.csv: note: copy eager f32 n=64' "$tmp/rep/report.md" && ok || bad "report lost the notes"
else
  echo "membound report or gnuplot missing: the report check is skipped"
fi

echo "torch_gpu_selftest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
