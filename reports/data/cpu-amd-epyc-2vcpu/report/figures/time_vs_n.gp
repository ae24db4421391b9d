# time_vs_n.gp — time against n, log-log, one panel per variant (the
# lecture's demos first): the model's time as lines, measured medians as
# points with min–p90 bars; the launch-overhead floor (dotted) and the n at
# which one f32 tensor fills the last-level cache (dashed: the knee).
# Data (membound's time_vs_n.dat): each block after 0 is one series:
# n, model_s, median_s, min_s, p90_s, panel.
# Usage: gnuplot -c time_vs_n.gp time_vs_n.dat time_vs_n.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_np = int(metan('panels'))
mb_knee = metan('knee_n')
mb_launch = metan('launch_s')
mb_meas = metan('measured') > 0
stats mb_data using 1 nooutput
mb_nb = STATS_blocks
mb_na = mb_np > 0 ? mb_np : 1
array mb_list[mb_na]
do for [p = 1:mb_np] { mb_list[p] = '' }
do for [b = 1:mb_nb - 1] {
    stats mb_data index b using 6 nooutput
    mb_list[int(STATS_min) + 1] = mb_list[int(STATS_min) + 1] . ' ' . b
}
mb_cols = mb_np <= 1 ? 1 : mb_np <= 4 ? 2 : 3
mb_rows = (mb_np + mb_cols - 1) / mb_cols
set logscale x 2
set logscale y 10
set format x '2^{%L}'
set format y '%.0s %cs'
set xtics 2**10, 2**6
set xrange [2**10:2**28]
set xlabel 'n (elements per tensor)' font ',13' offset 0, 0.4
set ylabel 'time' font ',13'
set tics font ',12'
set key top left font ',11' samplen 1.5 spacing 1.05 nobox noopaque
# the knee, labelled along its line; the launch floor
set arrow 1 from mb_knee, graph 0 to mb_knee, graph 1 nohead dt 2 lc rgb mb_grey lw 1.5
set label 1 'cache knee' at mb_knee, graph 0.97 rotate by 90 right offset -0.9, 0 font ',10' tc rgb mb_grey
set multiplot layout mb_rows, mb_cols title mb_title(meta('title'), meta('device')) font ',15'
do for [p = 1:mb_np] {
    set title meta('panel' . (p - 1)) font ',13'
    L = mb_list[p]
    plot for [j = 1:words(L)] mb_data index (word(L, j) + 0) using 1:2 with lines lt j title columnheader(1), \
         for [j = 1:words(L)] mb_data index (word(L, j) + 0) using 1:3:4:5 with yerrorbars lt j pt 7 ps 1.0 lw 1.2 notitle, \
         (mb_launch > 0 ? mb_launch : NaN) with lines dt 3 lc rgb mb_grey lw 2 title 'launch floor', \
         keyentry with points pt 7 ps 1.0 lc rgb '#000000' title (mb_meas && p == 1 ? 'measured: median, bar min to p90' : '')
}
unset multiplot
