# time_vs_n.gp — time against n, log-log, one panel per variant (the
# lecture's demos first): the model's time as lines, measured medians as
# points with min–p90 bars, in the series' colour (bars as vectors: an
# error bar clears its point's area, white even on a transparent page); the launch-overhead floor
# (dotted) and the n at which one f32 tensor fills the last-level cache
# (dashed: the knee). Series whose model lines coincide stay visible: each
# later one is thinner, over the earlier. Text only in titles and legends.
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
set rmargin 5
# one legend above the panels: a series' colour and dash by its name (its
# plan, or dtype), the same in every panel; the panels below it at fixed
# margins (the same axes in every layer)
mb_ncat = int(metan('n_cats'))
mb_cat(b) = int(metan('cat' . b))
mb_dt(c) = c == 1 ? 1 : c == 2 ? 2 : c == 3 ? 4 : c == 4 ? 5 : c == 5 ? 1 : c == 6 ? 2 : c == 7 ? 4 : 5
# within a panel each later series thinner, so one that coincides with an
# earlier one shows inside it
mb_lw(j) = j == 1 ? 4.5 : j == 2 ? 3.3 : j == 3 ? 2.3 : 1.5
mb_kcols = int(mb_width / (230.0 * mb_fscale))
mb_kcols = mb_kcols < 1 ? 1 : mb_kcols
mb_krows = (mb_ncat + 2 + mb_kcols - 1) / mb_kcols
mb_line = 0.036 * mb_fscale * 720.0 / mb_height    # one line of 12 pt text
mb_ktop = 1 - 3.3 * mb_line                        # under the three title lines
mb_top = mb_ktop - (mb_krows + 0.6) * mb_line      # the panels' top
set arrow 1 from mb_knee, graph 0 to mb_knee, graph 1 nohead dt 2 lc rgb mb_dgrey lw 1.5
mb_sub = mb_meas ? 'lines: model, points: measured median (bar: min to p90)' : 'lines: the model'
mb_knee_s = sprintf('the cache knee: one f32 tensor fills the %.3g MiB last-level cache', metan('cache_mib'))
set multiplot title meta('title') . "\n{/*0.75 " . meta('device') . ';  ' . mb_sub . "}\n{/*0.75 " . mb_knee_s . '}' font ',15' textcolor rgb mb_tc(0)
# the panels by hand, each in its cell (gnuplot's layout would squeeze the
# legend strip below into a cell)
mb_pw = 1.0 / mb_cols
mb_ph = mb_top / mb_rows
# panel titles smaller in narrow cells (a 4:3 page, a large font scale)
mb_cellpt = mb_pw * mb_width / mb_fscale
mb_ptf = mb_cellpt >= 560 ? ',12' : mb_cellpt >= 440 ? ',10' : ',9'
unset key
do for [p = 1:mb_np] {
    set origin ((p - 1) % mb_cols) * mb_pw, mb_top - ((p - 1) / mb_cols + 1) * mb_ph
    set size mb_pw, mb_ph
    set title meta('panel' . (p - 1)) font mb_ptf tc rgb mb_tc(0)
    L = mb_list[p]
    # the panel's decades (stats keeps to the y range: the last panel's is let go)
    set yrange [*:*]
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
    set yrange [10**mb_dlo : 10**mb_dhi]
    set ytics 10**mb_dlo, (mb_dhi - mb_dlo > 6 ? 100 : 10), 10**mb_dhi
    plot for [j = 1:words(L)] mb_data index (word(L, j) + 0) using 1:2 with lines lt mb_cat(word(L, j)) dt mb_dt(mb_cat(word(L, j))) lw mb_lw(j) notitle, \
         for [j = 1:words(L)] mb_data index (word(L, j) + 0) using 1:4:(0):($5 - $4) with vectors nohead lt mb_cat(word(L, j)) lw 1.5 notitle, \
         for [j = 1:words(L)] mb_data index (word(L, j) + 0) using 1:3 with points lt mb_cat(word(L, j)) pt 7 ps 1.0 notitle, \
         (mb_launch > 0 ? mb_launch : NaN) with lines dt 3 lc rgb mb_dgrey lw 2 notitle
}
# the legend strip under the title, as wide as the page
set origin 0, mb_top
set size 1, mb_ktop - mb_top
unset title
unset border
unset tics
unset xlabel
unset ylabel
unset grid
unset logscale
unset arrow
set xrange [0:1]
set yrange [0:1]
set key center center horizontal maxcols mb_kcols font ',12' samplen 2.5 spacing 1.0 width 1
@mb_plotkey
plot for [c = 1:mb_ncat] mb_data index 1 using (NaN):(NaN) with linespoints lt c dt mb_dt(c) lw 2.5 pt 7 ps 1.0 title meta('catname' . c), \
     mb_data index 1 using (NaN):(NaN) with lines dt 3 lc rgb mb_dgrey lw 2 title (mb_launch > 0 ? 'launch floor' : ''), \
     mb_data index 1 using (NaN):(NaN) with lines dt 2 lc rgb mb_dgrey lw 1.5 title 'cache knee'
unset multiplot
