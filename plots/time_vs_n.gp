# time_vs_n.gp — time against n, log-log, one panel per variant (the
# lecture's demos first): the model's time as lines, measured medians as
# points with min–p90 bars, in the series' colour; the launch-overhead floor
# (dotted) and the n at which one f32 tensor fills the last-level cache
# (dashed: the knee). Series whose model lines coincide stay visible: each
# later one is dashed over the earlier. Text only in titles and legends.
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
set xlabel 'n (elements per tensor)' font ',13' offset 0, 0.4 tc rgb mb_tc(0)
set ylabel 'time per run' font ',13' tc rgb mb_tc(0)
set tics font ',12'
# the legend in the panel's empty corner (times rise to the right); room
# above the data for it
set key top left font ',11' samplen 2.5 spacing 1.0 width -2
mb_dt(j) = j == 1 ? 1 : j == 2 ? 2 : j == 3 ? 4 : 5
mb_lw(j) = j == 1 ? 3.5 : 2
set arrow 1 from mb_knee, graph 0 to mb_knee, graph 1 nohead dt 2 lc rgb mb_dgrey lw 1.5
mb_sub = mb_meas ? 'lines: model, points: measured median (bar: min to p90)' : 'lines: the model'
mb_knee_s = sprintf('the cache knee: one f32 tensor fills the %.3g MiB last-level cache', metan('cache_mib'))
set multiplot layout mb_rows, mb_cols title meta('title') . "\n{/*0.75 " . meta('device') . ';  ' . mb_sub . "}\n{/*0.75 " . mb_knee_s . '}' font ',15' textcolor rgb mb_tc(0)
mb_knee_t = 'cache knee'
do for [p = 1:mb_np] {
    set title meta('panel' . (p - 1)) font ',13' tc rgb mb_tc(0)
    L = mb_list[p]
    # the panel's decades, and room above them for the legend (no tics there)
    mb_lo = 1e30
    mb_hi = 0
    do for [j = 1:words(L)] {
        do for [c = 2:5] {
            stats mb_data index (word(L, j) + 0) using (valid(c) ? column(c) : column(2)) nooutput
            if (STATS_records > 0 && STATS_min < mb_lo) { mb_lo = STATS_min }
            if (STATS_records > 0 && STATS_max > mb_hi) { mb_hi = STATS_max }
        }
    }
    if (mb_launch > 0 && mb_launch < mb_lo) { mb_lo = mb_launch }
    mb_dlo = floor(log10(mb_lo) - 1e-9)
    mb_dhi = ceil(log10(mb_hi) + 1e-9)
    # the legend's share of the panel's height (its lines at ~1.35 times the
    # font, the panel's plot about 0.75 / rows of the figure) over the left
    # part of the panel, where times are a few decades under the top: about
    # half of it must be headroom
    mb_f = 0.5 * (words(L) + 2) * 1.35 * 11 * mb_fscale / (mb_height * 0.75 / mb_rows - 60)
    mb_f = mb_f > 0.5 ? 0.5 : mb_f
    mb_top = mb_dlo + (mb_dhi - mb_dlo) / (1 - mb_f)
    set yrange [10**mb_dlo : 10**mb_top]
    set ytics 10**mb_dlo, (mb_dhi - mb_dlo > 6 ? 100 : 10), 10**mb_dhi
    @mb_plotkey
    plot for [j = 1:words(L)] keyentry with linespoints lt j dt mb_dt(j) lw mb_lw(j) pt 7 ps 1.0 title meta('series' . word(L, j)), \
         for [j = 1:words(L)] mb_data index (word(L, j) + 0) using 1:2 with lines lt j dt mb_dt(j) lw mb_lw(j) notitle, \
         for [j = 1:words(L)] mb_data index (word(L, j) + 0) using 1:3:4:5 with yerrorbars lt j pt 7 ps 1.0 lw 1.2 notitle, \
         (mb_launch > 0 ? mb_launch : NaN) with lines dt 3 lc rgb mb_dgrey lw 2 title 'launch floor', \
         keyentry with lines dt 2 lc rgb mb_dgrey lw 1.5 title mb_knee_t
}
unset multiplot
