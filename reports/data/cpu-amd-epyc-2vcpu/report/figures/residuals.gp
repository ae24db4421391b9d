# residuals.gp — how far measured times sit from the fitted line
# time = t0 + bytes / bandwidth and from the model's roofline time, and
# (where counters ran) measured DRAM bytes from the model's, against n.
# Rejected outliers are ringed.
# Data (membound's residuals.dat): each block after 0 is one series:
# n, time residual %, model residual %, bytes residual %, outlier, used.
# Usage: gnuplot -c residuals.gp residuals.dat residuals.png|svg|pdf
mb_width = 1600
mb_height = 720
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

stats mb_data using 1 nooutput
mb_nb = STATS_blocks
mb_xlo = STATS_min / 1.6
mb_xhi = STATS_max * 1.6
set logscale x 2
set format x '2^{%L}'
set xtics 4
set xrange [mb_xlo:mb_xhi]
set xlabel 'n (elements per tensor)'
mb_zero(x) = 0
unset key
# three panels and a legend strip, side by side
mb_w = 0.265
set multiplot title mb_title(meta('title'), meta('fitline')) font ',15'
set size mb_w, 0.9
set origin 0.0, 0.0
set title 'measured vs fitted line' font ',14'
set ylabel 'residual (%)'
plot for [b = 1:mb_nb - 1] mb_data index b using 1:2 with points lt b, \
     for [b = 1:mb_nb - 1] mb_data index b using 1:($5 > 0 ? $2 : NaN) with points pt 6 ps 3 lw 2 lc rgb '#000000', \
     mb_zero(x) with lines lc rgb mb_grey dt 2
set origin mb_w, 0.0
set title 'measured vs model (roofline time)' font ',14'
set ylabel 'measured / model - 1 (%)'
plot for [b = 1:mb_nb - 1] mb_data index b using 1:3 with points lt b, \
     mb_zero(x) with lines lc rgb mb_grey dt 2
set origin 2 * mb_w, 0.0
set title 'DRAM bytes: measured vs model' font ',14'
set ylabel 'measured / model - 1 (%)'
if (metan('counted') > 0) {
    plot for [b = 1:mb_nb - 1] mb_data index b using 1:4 with points lt b, \
         mb_zero(x) with lines lc rgb mb_grey dt 2
} else {
    set label 1 "no DRAM counters\non this backend:\nbytes not measured" at graph 0.5, graph 0.5 center font ',14' tc rgb mb_grey
    set yrange [-1:1]
    plot mb_zero(x) with lines lc rgb mb_grey dt 2
    unset label 1
}
# the legend strip: every series once, and the outlier ring
set origin 3 * mb_w, 0.0
set size 1 - 3 * mb_w, 0.9
unset title
unset border
unset tics
unset xlabel
unset ylabel
unset grid
unset logscale x
set xrange [0:1]
set yrange [0:1]
set key center left font ',12' samplen 1 spacing 1.3 nobox
plot for [b = 1:mb_nb - 1] mb_data index b using (NaN):(NaN) with points lt b title columnheader(1), \
     NaN with points pt 6 ps 3 lw 2 lc rgb '#000000' title 'rejected outlier'
unset multiplot
