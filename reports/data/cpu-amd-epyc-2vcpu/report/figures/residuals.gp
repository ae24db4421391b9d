# residuals.gp — how far measured times sit from the fitted line
# time = t0 + bytes / bandwidth and from the model's roofline time, and
# (where counters ran) measured DRAM bytes from the model's, against n, as
# ratios on log axes (1 = agreement). Rejected outliers are ringed.
# Data (membound's residuals.dat): each block after 0 is one series:
# n, time residual %, model residual %, bytes residual %, outlier, used.
# Usage: gnuplot -c residuals.gp residuals.dat residuals.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

stats mb_data using 1 nooutput
mb_nb = STATS_blocks
# whole powers of two around the sizes, ticks on them
mb_lo = floor(log(STATS_min) / log(2) + 1e-9)
mb_hi = ceil(log(STATS_max) / log(2) - 1e-9)
mb_step = mb_hi - mb_lo > 8 ? 4 : 2
set logscale x 2
set format x '2^{%L}'
set xrange [2**(mb_lo - 1) : 2**(mb_hi + 1)]
set xtics 2**mb_lo, 2**mb_step
set xlabel 'n (elements per tensor)' font ',12'
set logscale y 10
set format y '%g'
set tics font ',11'
mb_one(x) = 1
mb_r(p) = 1 + p / 100.0
unset key
# three panels and a legend strip, side by side
mb_w = 0.27
set multiplot title mb_title(meta('title'), meta('fitline')) font ',14'
set size mb_w, 0.88
set origin 0.0, 0.0
set title 'measured / fitted line' font ',13'
set ylabel 'ratio (1 = on the line)' font ',12'
plot for [b = 1:mb_nb - 1] mb_data index b using 1:(mb_r($2)) with points lt b, \
     for [b = 1:mb_nb - 1] mb_data index b using 1:($5 > 0 ? mb_r($2) : NaN) with points pt 6 ps 3 lw 2 lc rgb '#000000', \
     mb_one(x) with lines lc rgb mb_grey dt 2
set origin mb_w, 0.0
set title 'measured / model (roofline time)' font ',13'
set ylabel 'ratio (1 = as modelled)' font ',12'
plot for [b = 1:mb_nb - 1] mb_data index b using 1:(mb_r($3)) with points lt b, \
     mb_one(x) with lines lc rgb mb_grey dt 2
set origin 2 * mb_w, 0.0
set title 'DRAM bytes: measured / model' font ',13'
set ylabel 'ratio' font ',12'
if (metan('counted') > 0) {
    plot for [b = 1:mb_nb - 1] mb_data index b using 1:(mb_r($4)) with points lt b, \
         mb_one(x) with lines lc rgb mb_grey dt 2
} else {
    set label 1 "no DRAM counters\non this backend:\nbytes not measured" at graph 0.5, graph 0.75 center font ',13' tc rgb mb_grey
    set yrange [0.5:2]
    plot mb_one(x) with lines lc rgb mb_grey dt 2
    unset label 1
}
# the legend strip: every series once, and the outlier ring
set origin 3 * mb_w, 0.0
set size 1 - 3 * mb_w, 0.88
unset title
unset border
unset tics
unset xlabel
unset ylabel
unset grid
unset logscale
set xrange [0:1]
set yrange [0:1]
set key center left font ',11' samplen 1 spacing 1.2 nobox
plot for [b = 1:mb_nb - 1] mb_data index b using (NaN):(NaN) with points lt b title columnheader(1), \
     NaN with points pt 6 ps 3 lw 2 lc rgb '#000000' title 'rejected outlier'
unset multiplot
