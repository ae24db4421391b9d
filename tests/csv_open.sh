#!/usr/bin/env bash
# csv_open.sh — every CSV membound writes (measure's and its per-kernel file,
# an interrupted measure's, model/whatif/plan --csv, report's summary, fits and
# verdicts, import's rows and per-kernel rows) opens with default arguments in
# Python's csv module and in pandas (Debian's python3-pandas): header first, one
# row per line, no comment lines.
# The measure CSV stays self-contained: report reads it moved alone, with its
# custom variants; an old-format CSV from reports/data/ ('#' lines) still reports.
set -u
B=${MB_BIN:?MB_BIN not set}
SRC=${MB_SRC:?MB_SRC not set}
. "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
PY=python3
/usr/bin/python3 -c 'import pandas' 2>/dev/null && PY=/usr/bin/python3
have_pandas=0; $PY -c 'import pandas' 2>/dev/null && have_pandas=1
spec=$SRC/reports/data/cpu-amd-epyc-2vcpu/local-cpu.ini
cd "$tmp" || exit 1

# inputs in order: a built-in, a file, two --expr; plans in --plan's order
printf 'name mine\ninput x\ny = exp(x)\noutput y\n' >mine.mb
"$B" measure copy mine.mb --expr 'name a; y = sin(x)' --expr 'name b; y = x * sigmoid(x)' --sizes 2^12 --plan fused,eager \
  --device "$spec" --timeout 0.05 -q -o m.csv --per-kernel mk.csv 2>err.txt >/dev/null
rc=$?; [ "$rc" -le 1 ] && [ -s m.csv ] && ok || bad "measure exited $rc: $(tail -3 err.txt)"
# interrupted: the rows so far, with a 'partial:' provenance line
"$B" measure copy --expr 'name s; y = sin(x)' --warm --sizes 2^12,2^24 --reps 1000 --timeout 60 --device "$spec" -o int.csv \
  >int.out 2>int.err &
pid=$!   # stopped once a row is in (SIGTERM: a background job ignores SIGINT); the first
# row came after 51 s alone at load 9 and after more than 60 s beside another test: 240 s
for _ in $(seq 480); do grep -q '^copy ' int.out 2>/dev/null && break; sleep 0.5; done
kill -TERM "$pid"; wait "$pid"; rc=$?
[ "$rc" -eq 143 ] && [ -s int.csv ] && ok || bad "interrupted measure exited $rc (no int.csv: $([ -s int.csv ] || echo missing))"

"$B" model --expr 'name a; y = sin(x)' copy --dtype f32,bf16 --csv >model.csv || bad "model --csv"
"$B" whatif copy gelu_tanh --devices 'h100-sxm,b200' --dtype bf16,f32 --csv >whatif.csv || bad "whatif --csv"
"$B" plan sigmoid3 --csv >plan.csv || bad "plan --csv"
"$B" plan sigmoid3 --frontier --csv >frontier.csv || bad "plan --frontier --csv"
# report from a folder holding only the CSV (custom variants a, b, mine: their texts are in it)
mkdir alone && cp m.csv alone/ && (cd alone && "$B" report m.csv -o rep --no-figures >/dev/null 2>../rep.err) \
  && ok || bad "report of a moved measure CSV: $(cat rep.err)"
grep -q "m.csv: model_device: local-cpu" alone/rep/report.md && grep -q "m.csv: host_check: copy" alone/rep/report.md \
  && ok || bad "report lacks the CSV's provenance"
# the old format ('#' lines) reports as before, from a folder holding only it
old=$SRC/reports/data/cpu-amd-epyc-2vcpu/all-copy.csv
mkdir oldfmt && cp "$old" oldfmt/ && (cd oldfmt && "$B" report all-copy.csv -o rep --no-figures >/dev/null 2>../old.err) \
  && ok || bad "report of an old-format CSV: $(cat old.err)"
[ "$(($(wc -l <oldfmt/rep/summary.csv) - 1))" -eq "$(grep -vc '^#' "$old" | awk '{print $1 - 1}')" ] && ok \
  || bad "old-format rows: $(wc -l <oldfmt/rep/summary.csv) summary lines"
grep -q "all-copy.csv: model_device: local-cpu" oldfmt/rep/report.md && ok || bad "old-format provenance lost"

# what import writes from a profiler's file (the import's fixtures)
imports=""
if "$B" import --help >/dev/null 2>&1; then
  "$B" import torch-trace "$SRC/tests/data/import/torch_trace_lecture.json" -q -o imp.csv --per-kernel impk.csv \
    >/dev/null 2>imp.err && ok || bad "import: $(cat imp.err)"
  imports="imp.csv impk.csv"
fi
files="m.csv mk.csv int.csv model.csv whatif.csv plan.csv frontier.csv alone/rep/summary.csv alone/rep/fits.csv
       alone/rep/verdicts.csv oldfmt/rep/summary.csv oldfmt/rep/fits.csv oldfmt/rep/verdicts.csv $imports"
# shellcheck disable=SC2086
out=$($PY - $have_pandas $files <<'PYEOF' 2>&1
import csv, sys
have_pandas = sys.argv[1] == "1"
bad = []
for f in sys.argv[2:]:
    lines = open(f, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if any(l.startswith("#") for l in lines):
        bad.append(f + ": a '#' line")
    rows = list(csv.reader(open(f, newline="", encoding="utf-8")))
    if len(rows) < 2:
        bad.append(f + ": no rows")
        continue
    if len(rows) != len(lines):
        bad.append(f"{f}: {len(rows)} rows on {len(lines)} lines (a row over several lines)")
    widths = {len(r) for r in rows}
    if widths != {len(rows[0])}:
        bad.append(f"{f}: rows of {sorted(widths)} fields, header {len(rows[0])}")
    if have_pandas:
        import pandas
        try:
            df = pandas.read_csv(f)
        except Exception as e:
            bad.append(f"{f}: pandas: {e}")
            continue
        if list(df.columns) != rows[0] or len(df) != len(rows) - 1:
            bad.append(f"{f}: pandas read {df.shape}, csv {len(rows) - 1} rows")
# the measure CSV: the inputs in order, their texts and the provenance in columns
rows = list(csv.DictReader(open("m.csv", newline="")))
order = []
for r in rows:
    if r["variant"] not in order:
        order.append(r["variant"])
if order != ["copy", "mine", "a", "b"]:
    bad.append(f"m.csv: variants {order}")
if [r["plan"] for r in rows if r["variant"] == "copy"] != ["fused", "eager"]:
    bad.append("m.csv: plans of copy not in --plan's order")
for r in rows:
    want = {"a": ("", "name a; y = sin(x)"), "b": ("", "name b; y = x * sigmoid(x)"),
            "mine": (r"name mine\ninput x\ny = exp(x)\noutput y\n", "")}.get(r["variant"])
    if want and (r["variant_text"], r["variant_expr"]) != want:
        bad.append(f"m.csv: texts of {r['variant']}: {r['variant_text']!r} {r['variant_expr']!r}")
    if not r["device_spec"].startswith(r"[device]\nname = local-cpu\n"):
        bad.append("m.csv: device_spec " + r["device_spec"][:40])
    if not ("model_device: local-cpu" in r["provenance"] and r"\nhost_check: copy" in r["provenance"]):
        bad.append("m.csv: provenance " + r["provenance"][:80])
if not all(r"partial: interrupted by SIGTERM" in r["provenance"] for r in csv.DictReader(open("int.csv", newline=""))):
    bad.append("int.csv: no 'partial: interrupted' provenance line")
if not {r["kernel"] for r in csv.DictReader(open("mk.csv", newline=""))} >= {"copy", "sin", "exp"}:
    bad.append("mk.csv: kernels")
print("\n".join(bad) if bad else "ok")
PYEOF
)
[ "$out" = ok ] && ok || bad "$out"
cli_done || exit 1
[ "$have_pandas" -eq 1 ] || { echo "pandas missing (apt-get install python3-pandas): its half skipped"; exit 77; }
