#!/bin/sh
# Redraws every figure from its data file: edit style.gp (the shared look)
# or one script, then run this. Usage: sh render.sh [png|svg|pdf]...
set -e
cd "$(dirname "$0")"
[ $# -gt 0 ] || set -- png
for ext in "$@"; do
  gnuplot -c bytes.gp bytes.dat bytes."$ext"
  gnuplot -c time_vs_n.gp time_vs_n.dat time_vs_n."$ext"
  gnuplot -c residuals.gp residuals.dat residuals."$ext"
  gnuplot -c recompute.gp recompute.dat recompute."$ext"
  gnuplot -c roofline.gp roofline.dat roofline."$ext"
  gnuplot -c whatif.gp whatif.dat whatif."$ext"
done
