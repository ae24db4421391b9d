#!/usr/bin/env bash
# cpu_colsum.sh — a weight's gradient written out against summed in
# per-block partial sums ('colsum written' / 'colsum partial'), measured on
# this CPU: RMSNorm and LayerNorm with their weights (and LayerNorm's bias),
# store and recompute, f32, at shapes a 2-vCPU guest runs in seconds, each
# row beside the model on a CPU spec (membound measure). The two variants
# of each pair differ in their 'colsum' line alone. Writes the CSVs and
# the text into OUT (default: a temporary folder, printed) with the load
# average; prints the measured and modelled ratio partial / written; never
# asserts.
#
#   bench/cpu_colsum.sh [--device SPEC.ini] [--threads N] [--out DIR] [MEMBOUND]
set -euo pipefail
cd "$(dirname "$0")/.."
dev=() thr=() out=""
while [ $# -gt 0 ]; do
    case $1 in
    --device) dev=(--device "$2"); shift 2 ;;
    --threads) thr=(--threads "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) break ;;
    esac
done
B=${1:-build/bin/membound}
[ -x "$B" ] || { echo "cpu_colsum.sh: $B not built" >&2; exit 2; }
command -v python3 >/dev/null || { echo "cpu_colsum.sh: python3 missing" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"
shapes=4096x1024,4096x4096,1024x16384
for v in rmsnorm_affine_bwd layernorm_affine_bwd; do
    for how in written partial; do
        f=$out/${v%_bwd}_$how.mb
        sed "s/^backward\$/backward\ncolsum $how/; s/^name .*/name ${v%_bwd}_$how/" "model/variants/$v.mb" >"$f"
        echo "== ${v%_bwd} colsum $how, load $(cut -d' ' -f1-3 /proc/loadavg)"
        "$B" measure "$f" --shape "$shapes" --plan store,recompute "${dev[@]}" "${thr[@]}" \
            -o "$out/${v%_bwd}_$how.csv" 2>&1 | tee "$out/${v%_bwd}_$how.txt"
    done
done
python3 - "$out" <<'EOF'
import csv, os, sys
out = sys.argv[1]
rows = {}
for f in sorted(os.listdir(out)):
    if f.endswith(".csv"):
        for r in csv.DictReader(open(os.path.join(out, f))):
            base, how = r["variant"].rsplit("_", 1)
            rows[(base, r["plan"], r["shape"], how)] = r
print(f"{'variant':<18} {'plan':<10} {'shape':<11} {'written ms':>10} {'partial ms':>10} "
      f"{'measured':>8} {'model':>8}  (partial / written, medians)")
for (base, plan, shape, how), r in sorted(rows.items()):
    if how != "written" or (base, plan, shape, "partial") not in rows:
        continue
    p = rows[(base, plan, shape, "partial")]
    wm, pm = float(r["time_s_median"]), float(p["time_s_median"])
    wmod, pmod = float(r["model_time_s"]), float(p["model_time_s"])
    print(f"{base:<18} {plan:<10} {shape:<11} {wm * 1e3:>10.3f} {pm * 1e3:>10.3f} "
          f"{pm / wm:>8.2f} {pmod / wmod:>8.2f}")
EOF
echo "written: $out (load $(cut -d' ' -f1-3 /proc/loadavg))"
