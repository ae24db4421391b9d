#!/usr/bin/env bash
# import_scale.sh — how `membound import` scales with the launches of its
# input: for each launch count, a generated ncu raw CSV (kernels renamed by
# their NVTX range) and a generated PyTorch trace (gpu_user_annotation spans),
# each with two copy launches under every mark (so launches/2 distinct marks,
# sizes n = 2^20 + k), imported with -q and timed by /usr/bin/time: wall
# seconds, CPU seconds (user + system) and peak resident memory. Prints one
# line per run. A benchmark, not a test: the machine's load moves the times;
# compare the growth with launches.
# usage: bench/import_scale.sh [--bin PATH] [LAUNCHES...]   (default 10000 100000 1000000)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$repo/build/bin/membound
if [ "${1:-}" = --bin ]; then bin=$2; shift 2; fi
export MEMBOUND_VARIANTS=${MEMBOUND_VARIANTS:-$repo/model/variants}
[ $# -gt 0 ] || set -- 10000 100000 1000000
[ -x /usr/bin/time ] || { echo "import_scale: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%9s %7s %-11s %9s %9s %9s %9s\n' launches marks format wall_s cpu_s peak_mib in_mib
for launches in "$@"; do
  marks=$((launches / 2))
  awk -v m="$marks" 'BEGIN {
    print "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\",\"gpu__time_duration.sum\""
    print "\"\",\"\",\"\",\"\",\"byte\",\"byte\",\"nsecond\""
    for (k = 0; k < m; k++)
      for (r = 0; r < 2; r++)
        printf "\"%d\",\"membound:copy:eager:n=%d:f32\",\"(128, 1, 1)\",\"(2048, 1, 1)\",\"%d\",\"%d\",\"%d\"\n",
               2 * k + r, 1048576 + k, 4 * (1048576 + k), 4 * (1048576 + k), 3000 + r
  }' >"$tmp/in.csv"
  awk -v m="$marks" 'BEGIN {
    printf "{\"deviceProperties\": [{\"name\": \"NVIDIA H200\"}], \"traceEvents\": [\n"
    for (k = 0; k < m; k++) {
      t = 100 * k
      printf "%s{\"cat\": \"gpu_user_annotation\", \"name\": \"membound:copy:eager:n=%d:f32\", \"ts\": %d, \"dur\": 90}", k ? ",\n" : "", 1048576 + k, t
      for (r = 0; r < 2; r++)
        printf ",\n{\"cat\": \"kernel\", \"name\": \"direct_copy_kernel_cuda\", \"ts\": %d, \"dur\": 3.%d, \"args\": {\"grid\": [2048, 1, 1], \"block\": [128, 1, 1]}}", t + 10 + 40 * r, r
    }
    printf "]}\n"
  }' >"$tmp/in.json"
  for fmt in ncu torch-trace; do
    in=$tmp/in.csv
    [ "$fmt" = ncu ] || in=$tmp/in.json
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/t" "$bin" import "$fmt" "$in" --device h200 -q -o "$tmp/out.csv" \
      >/dev/null 2>"$tmp/err" || { echo "import_scale: import $fmt of $launches launches failed: $(cat "$tmp/err")" >&2; exit 1; }
    read -r wall user sys kib <"$tmp/t"
    printf '%9d %7d %-11s %9.2f %9.2f %9.1f %9.1f\n' "$launches" "$marks" "$fmt" "$wall" "$(echo "$user + $sys" | bc)" \
      "$(echo "$kib / 1024" | bc -l)" "$(echo "$(stat -c %s "$in") / 1048576" | bc -l)"
  done
done
