# recompute.gp — sigmoid^3 forward + backward under eager, store and
# recompute plans: bytes moved (lecture's count, model DRAM, measured DRAM),
# bytes saved for backward, and time (model, measured).
# Data (membound's recompute.dat): block 0 time_unit ("µs" or "ms");
# block 1, one plan per line: plan, traffic-rule MB, model DRAM MB,
# measured DRAM MB, saved MB, model time, measured time (in time_unit),
# the lecture's count.
# Usage: gnuplot -c recompute.gp recompute.dat recompute.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb '#333333'
set boxwidth 0.95
set grid noxtics
set xtics scale 0
set yrange [0:*]
set offsets 0, 0, graph 0.18, 0
set key top right font ',11' noopaque
mb_meas_bytes = metan('measured_bytes')
mb_meas_time = metan('measured_time')
set tics font ',12'
set multiplot layout 1, 3 title mb_title(meta('title'), meta('device')) font ',15'
set title 'bytes moved (forward + backward)' font ',13'
set ylabel 'MB (10^6 bytes)'
if (mb_meas_bytes > 0) {
    plot mb_data index 1 using 2:xtic(1) title "lecture's count" lt 8, \
         '' index 1 using 3 title 'model DRAM' lt 1, '' index 1 using 4 title 'measured DRAM' lt 2, \
         '' index 1 using ($0 - 0.27):2:8 with labels offset 0, 0.8 font ',13' notitle
} else {
    plot mb_data index 1 using 2:xtic(1) title "lecture's count" lt 8, \
         '' index 1 using 3 title 'model DRAM (cache-aware)' lt 1, \
         '' index 1 using ($0 - 0.2):2:8 with labels offset 0, 0.8 font ',13' notitle
}
set title 'saved for backward' font ',13'
set ylabel 'MB (10^6 bytes)'
unset key
plot mb_data index 1 using 5:xtic(1) lt 3 notitle, \
     '' index 1 using 0:5:(sprintf('%.3g MB', $5)) with labels offset 0, 0.8 font ',11' notitle
set title 'time' font ',13'
# a linear axis in the data's own unit: no "0 s" under µs ticks
set ylabel 'time (' . meta('time_unit') . ')'
set format y '%g'
set key top right
if (mb_meas_time > 0) {
    plot mb_data index 1 using 6:xtic(1) title 'model' lt 1, '' index 1 using 7 title 'measured median' lt 2
} else {
    plot mb_data index 1 using 6:xtic(1) title 'model' lt 1
}
unset multiplot
