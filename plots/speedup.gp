# speedup.gp — the lecture's claims as ratios (slow / fast) against n: per
# claim, in its colour, the model's ratio (line), the measured ratio of
# medians (points, with a bar from slow's min over fast's p90 to slow's p90
# over fast's min) and the lecture's ratio (dashed); the n at which one f32
# tensor fills the last-level cache (grey dashes: the knee). The ratio axis
# is logarithmic and fitted to the data, so 1.2x and 9x both read.
# Data (membound's speedup.dat): each block after 0 is one claim:
# n, model_ratio, measured_ratio, lo, hi.
# Usage: gnuplot -c speedup.gp speedup.dat speedup.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_nc = int(metan('n_claims'))
mb_knee = metan('knee_n')
# the ratio axis: every ratio drawn and every lecture line, a margin either side
mb_lo = 1e30
mb_hi = 0
do for [c = 1:mb_nc] {
    do for [k = 2:5] {
        stats mb_data index c using (valid(k) ? column(k) : NaN) nooutput
        if (STATS_records > 0 && STATS_min < mb_lo) { mb_lo = STATS_min }
        if (STATS_records > 0 && STATS_max > mb_hi) { mb_hi = STATS_max }
    }
    if (metan('lecture' . c) < mb_lo) { mb_lo = metan('lecture' . c) }
    if (metan('lecture' . c) > mb_hi) { mb_hi = metan('lecture' . c) }
}
if (mb_lo > 1) { mb_lo = 1 }
if (mb_hi < 1) { mb_hi = 1 }
set logscale x 2
set logscale y 2
set format x '2^{%L}'
set xtics 2**10, 2**4
set xrange [2**10:2**28]
set yrange [mb_lo / 1.15 : mb_hi * 1.15]
set ytics ('0.5x' 0.5, '1x' 1, '1.5x' 1.5, '2x' 2, '3x' 3, '4x' 4, '6x' 6, '8x' 8, '12x' 12, '16x' 16)
set xlabel 'n (elements per tensor)' font ',13' tc rgb mb_tc(0)
set ylabel 'time ratio, slow / fast' font ',13' tc rgb mb_tc(0)
set tics font ',12'
set title mb_title(meta('title'), meta('device')) font ',15' tc rgb mb_tc(0)
set arrow 1 from mb_knee, graph 0 to mb_knee, graph 1 nohead dt 2 lc rgb mb_dgrey lw 1.5
set key at screen 0.72, graph 1 left top reverse Left vertical font ',11' samplen 2.5 spacing 1.1
set rmargin at screen 0.70
@mb_plotkey
plot for [c = 1:mb_nc] mb_data index c using 1:2 with lines lt c lw 2.5 notitle, \
     for [c = 1:mb_nc] mb_data index c using 1:(metan('lecture' . c)) with lines lt c dt 2 lw 1.5 notitle, \
     for [c = 1:mb_nc] mb_data index c using 1:4:(0):($5 - $4) with vectors nohead lt c lw 1.5 notitle, \
     for [c = 1:mb_nc] mb_data index c using 1:3 with points lt c pt 7 ps 1.1 notitle, \
     for [c = 1:mb_nc] mb_data index c using (NaN):(NaN) with linespoints lt c lw 2.5 pt 7 title meta('claim' . c), \
     mb_data index 1 using (NaN):(NaN) with lines lc rgb mb_dgrey lw 2.5 title 'model', \
     mb_data index 1 using (NaN):(NaN) with lines lc rgb mb_dgrey dt 2 lw 1.5 title 'lecture', \
     mb_data index 1 using (NaN):(NaN) with points lc rgb mb_dgrey pt 7 title 'measured median', \
     mb_data index 1 using (NaN):(NaN) with lines lc rgb mb_dgrey dt 2 lw 1.5 title 'cache knee'
