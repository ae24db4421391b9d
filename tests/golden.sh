#!/usr/bin/env bash
# golden.sh — behaviour held still: the outputs users and scripts read
# (model --json, whatif --csv, plan, report's summary of a committed CSV)
# compared byte for byte with tests/golden/, dates and commits masked, and
# the optimal plan's rows dropped (they need igraph; test_model_optimal
# covers them). A change that alters an output on purpose regenerates the
# goldens with MB_GOLDEN_UPDATE=1 and says why in its commit.
set -u
B=$(realpath "${MB_BIN:?MB_BIN not set}")
S=${MB_SRC:?MB_SRC not set}
G=$S/tests/golden
command -v jq >/dev/null || { echo "jq missing: skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0

# mask: dates, commits and the optimal plan out of any text output
# and numbers to 6 significant digits: an optimised and a debug (sanitizer)
# build differ in the last digits of a fit's terms, not in behaviour
mask() {
  sed -E -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+Z/DATE/g' \
         -e 's/(git_commit[^0-9a-f]*)[0-9a-f]{7,40}/\1COMMIT/g' |
    perl -pe 's/(?<![\w.])(-?\d+\.\d{6,}(?:[eE][-+]?\d+)?|-?\d+(?:\.\d+)?[eE][-+]?\d+)(?![\w.])/sprintf("%.6g",$1)/ge' |
    grep -v -E '(^|[ ,"])optimal([ ,"]|$)' || true
}
nooptimal_json() { jq 'if .results then .results |= map(select(.plan != "optimal")) else . end'; }

# golden NAME CMD...: runs CMD, masks its stdout, compares with golden/NAME
golden() {
  local name=$1; shift
  if ! "$@" >"$tmp/raw" 2>"$tmp/err"; then
    echo "FAIL: $name: '$*' exited non-zero: $(head -3 "$tmp/err")" >&2; fail=1; return
  fi
  case $name in *.json) nooptimal_json <"$tmp/raw" | mask >"$tmp/out" ;; *) mask <"$tmp/raw" >"$tmp/out" ;; esac
  if [ -n "${MB_GOLDEN_UPDATE:-}" ]; then cp "$tmp/out" "$G/$name"; echo "updated $name"; return; fi
  if ! diff -u "$G/$name" "$tmp/out" >"$tmp/diff"; then
    echo "FAIL: $name differs from tests/golden/$name:" >&2; head -40 "$tmp/diff" >&2; fail=1
  fi
}

golden model-sin2cos2.json "$B" model sin2_plus_cos2 --n 2^24 --json
golden model-sigmoid3.json "$B" model sigmoid3 --n 2^20 --json
golden model-gelu-bf16.json "$B" model gelu_tanh --n 2^26 --dtype bf16 --device a100-80gb --json
golden model-expr.csv "$B" model --expr 'name sq; y = x * x + exp(-x)' --n 2^22 --csv
golden whatif.csv "$B" whatif --sizes 2^16,2^24,2^30 --csv
golden whatif-copy.txt "$B" whatif copy --devices h100-sxm,b200,rtx-4090 --n 2^28
golden plan-sigmoid3.txt "$B" plan sigmoid3
golden plan-frontier.csv "$B" plan sigmoid3 --frontier --csv

# report: a committed CSV copied under a fixed name, every summary file
csv=$S/reports/data/cpu-amd-epyc-2vcpu/all-sigmoid3.csv
cp "$csv" "$tmp/in.csv"
( cd "$tmp" && "$B" report in.csv -o rep --no-figures >/dev/null 2>&1 ); rc=$?
[ "$rc" -le 1 ] || { echo "FAIL: report exited $rc" >&2; fail=1; }
for f in summary.csv fits.csv verdicts.csv summary.json; do
  golden "report-$f" cat "$tmp/rep/$f"
done

[ "$fail" -eq 0 ] && echo "goldens unchanged" 
exit "$fail"
