#!/usr/bin/env bash
# report_scale.sh — how `membound report` scales with the rows of its input:
# for each row count, a generated CSV (the lecture's series on h100-sxm, every
# series at random sizes 2^16..2^28, or with --distinct at a size of its own
# per row, n = 2^16 + row: the verdicts' search for the largest size both
# series share, quadratic before, meets every row; times on a 3 TB/s line),
# then `report`
# with figures and with --no-figures, each timed by /usr/bin/time: wall
# seconds, CPU seconds (user + system: less moved by other work on a shared
# host), peak resident memory and the 1-minute load average after the run.
# Prints one line per run. A benchmark, not
# a test: the machine's load moves the times; compare the growth with rows.
# usage: bench/report_scale.sh [--bin PATH] [--distinct] [ROWS...]   (default 1000 10000 100000 1000000)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$repo/build/bin/membound
if [ "${1:-}" = --bin ]; then bin=$2; shift 2; fi
distinct=0
if [ "${1:-}" = --distinct ]; then distinct=1; shift; fi
# the lecture's variants from this tree (a binary copied elsewhere finds none)
export MEMBOUND_VARIANTS=${MEMBOUND_VARIANTS:-$repo/model/variants}
[ $# -gt 0 ] || set -- 1000 10000 100000 1000000
[ -x /usr/bin/time ] || { echo "report_scale: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%9s %-12s %9s %9s %12s %9s %6s\n' rows figures wall_s cpu_s peak_mib csv_mib load1
for rows in "$@"; do
  python3 - "$rows" "$tmp/in.csv" "$distinct" <<'PY'
import random, sys
rows, path, distinct = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
random.seed(rows)
series = [("copy", "eager"), ("sin2_plus_cos2", "eager"), ("sin2_plus_cos2", "fused"), ("gelu_tanh", "eager"),
          ("gelu_tanh", "fused"), ("sigmoid3", "eager"), ("sigmoid3", "store"), ("sigmoid3", "recompute")]
with open(path, "w") as f:
    f.write("device,backend,variant,plan,dtype,n,time_s_median,verified\n")
    for i in range(rows):
        v, p = series[i % len(series)]
        d = ("f32", "bf16")[(i // len(series)) % 2]
        n = (1 << 16) + i if distinct else 1 << random.randint(16, 28)
        f.write(f"h100-sxm,cuda,{v},{p},{d},{n},{n * 8 / 3e12 * (1 + 0.05 * random.random()) + 5e-6:.6g},1\n")
PY
  for fig in with --no-figures; do
    args=()
    [ "$fig" = with ] || args=(--no-figures)
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$bin" report "$tmp/in.csv" ${args[@]+"${args[@]}"} -o "$tmp/out" \
      >/dev/null 2>"$tmp/err" || { echo "report_scale: report failed at $rows rows: $(tail -1 "$tmp/err")" >&2; }
    read -r wall user sys kb < <(tail -1 "$tmp/t")
    printf '%9d %-12s %9.2f %9.2f %12.1f %9.1f %6s\n' "$rows" "$fig" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
      "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')" "$(awk -v b="$(stat -c %s "$tmp/in.csv")" 'BEGIN { print b / 1048576 }')" \
      "$(cut -d' ' -f1 /proc/loadavg)"
    rm -rf "$tmp/out"
  done
done
