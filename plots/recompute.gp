# recompute.gp — sigmoid3 forward + backward under eager, store, recompute
# and optimal plans: bytes moved (lecture's count, model DRAM, measured DRAM),
# bytes saved for backward, and time (model; measured median with its
# min–p90 bar).
# Data (membound's recompute.dat): block 0 time_unit ("µs" or "ms");
# block 1, one plan per line: plan, traffic-rule MB, model DRAM MB,
# measured DRAM MB, saved MB, model time, measured time (in time_unit),
# the count, measured min, measured p90.
# Usage: gnuplot -c recompute.gp recompute.dat recompute.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb mb_ink(mb_dark ? '#cccccc' : '#333333')
set boxwidth 0.95
set grid noxtics
set xtics scale 0
set yrange [0:*]
# room above the bars for their labels and the legend
set offsets 0, 0, graph 0.35, 0
mb_narrow = mb_width / mb_fscale < 1100
mb_kf = mb_narrow ? ',9' : ',11'
set key top right font mb_kf samplen 1.5
mb_meas_bytes = metan('measured_bytes')
mb_meas_time = metan('measured_time')
set tics font ',12'
# plan names under the clusters, slanted (four in a third of the page); each
# its own text unit, the bottom margin fixed (the same axes whichever is drawn)
set xtics font ',11' rotate by 25 right
mb_tf = mb_narrow ? ',12' : ',15'
# fixed margins: the same axes whichever text is drawn
mb_lm = 0.075 * mb_fscale * 1280.0 / mb_width
mb_bm = 0.15 * mb_fscale * 720.0 / mb_height
mb_tm = 1 - 0.17 * mb_fscale * 720.0 / mb_height
set multiplot layout 1, 3 title mb_title(meta('title'), meta('device')) font mb_tf textcolor rgb mb_tc(0) margins screen mb_lm, 0.98, mb_bm, mb_tm spacing screen mb_lm + 0.02
set title 'bytes moved' font ',13' tc rgb mb_tc(0)
set ylabel 'MB (10^6 bytes)' tc rgb mb_tc(0)
# a box's centre in a cluster of c columns (gap 1): the i-th of c
mb_at(i, c) = (i - (c + 1) / 2.0) / (c + 1.0)
@mb_plotkey
if (mb_meas_bytes > 0) {
    plot mb_data index 1 using 2:xtic(mb_txt(strcol(1))) title "lecture's count" lt 8, \
         '' index 1 using 3 title 'model DRAM' lt 1, '' index 1 using 4 title 'measured DRAM' lt 2, \
         '' index 1 using ($0 + mb_at(1, 3)):2:(mb_txt(strcol(8))) with labels offset 0, 0.8 font ',12' tc rgb mb_fg notitle
} else {
    plot mb_data index 1 using 2:xtic(mb_txt(strcol(1))) title (mb_narrow ? 'count' : "lecture's count") lt 8, \
         '' index 1 using 3 title 'model DRAM' lt 1, \
         '' index 1 using ($0 + mb_at(1, 2)):2:(mb_txt(strcol(8))) with labels offset 0, 0.8 font ',12' tc rgb mb_fg notitle
}
set title 'saved for backward' font ',13' tc rgb mb_tc(0)
set ylabel 'MB (10^6 bytes)' tc rgb mb_tc(0)
unset key
set offsets 0, 0, graph 0.15, 0
plot mb_data index 1 using 5:xtic(mb_txt(strcol(1))) lt 3 notitle, \
     '' index 1 using 0:5:(mb_txt(sprintf('%.3g', $5))) with labels offset 0, 0.8 font mb_kf tc rgb mb_fg notitle
set title 'time' font ',13' tc rgb mb_tc(0)
# a linear axis in the data's own unit: no "0 s" under µs ticks
set ylabel 'time (' . meta('time_unit') . ')' tc rgb mb_tc(0)
set format y '%g'
set key top right
set offsets 0, 0, graph 0.35, 0
@mb_plotkey
if (mb_meas_time > 0) {
    plot mb_data index 1 using 6:xtic(mb_txt(strcol(1))) title 'model' lt 1, '' index 1 using 7 title 'measured median' lt 2, \
         '' index 1 using ($0 + mb_at(2, 2)):9:(0):($10 - $9) with vectors nohead lc rgb mb_ink(mb_fg) lw 2.5 title 'measured min to p90'
} else {
    plot mb_data index 1 using 6:xtic(mb_txt(strcol(1))) title 'model' lt 1
}
unset multiplot
