# residuals.gp — how far measured times sit from the fitted line
# time = t0 + bytes / bandwidth and from the model's roofline time, and
# (where counters ran) measured DRAM bytes from the model's, against n, as
# ratios on log axes (1 = agreement). Rejected outliers are ringed. A panel
# with nothing to show is left out: no line panel without a fit, no bytes
# panel without counters (the subtitle says which). Colour: the variant;
# marker: the plan.
# Data (membound's residuals.dat): block 0 line, counted, ratio_span (every
# panel's y range: 1/span..span), colourK, markerK, variantI, shapeI; each block after 0 is one series: n, time residual %,
# model residual %, bytes residual %, outlier, used.
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
set xlabel 'n (elements per tensor)' font ',12' tc rgb mb_tc(0)
set logscale y 10
set format y '%g'
# one scale for every panel, symmetric about 1 (ratio_span: the largest
# ratio or inverse ratio shown), with a margin
mb_span = metan('ratio_span') > 1 ? metan('ratio_span') * 1.15 : 1.2
set yrange [1 / mb_span : mb_span]
# ticks at powers of a step that fits the span, both ways from 1
mb_tstep = mb_span > 3 ? 2 : mb_span > 1.6 ? 1.25 : 1.05
set ytics ('1' 1)
do for [k = 1:12] {
    if (mb_tstep ** k <= mb_span) { set ytics add (sprintf('%.3g', mb_tstep ** k) mb_tstep ** k, sprintf('%.3g', mb_tstep ** -k) mb_tstep ** -k) }
}
set tics font ',11'
mb_one(x) = 1
mb_r(p) = 1 + p / 100.0
array mb_pt[6] = [7, 5, 9, 11, 13, 15]
mb_c(b) = int(metan('colour' . b))
mb_m(b) = mb_pt[(int(metan('marker' . b)) - 1) % 6 + 1]
mb_line = metan('line') > 0
mb_counted = metan('counted') > 0
mb_np = 1 + mb_line + mb_counted
mb_why = (mb_counted ? '' : 'no DRAM counters on this backend: bytes not measured')
unset key
# the panels and a legend strip, side by side
mb_w = 0.8 / mb_np
mb_sub = meta('fitline') . (mb_why eq '' ? '' : ';  ' . mb_why)
set multiplot title mb_title(meta('title'), mb_sub) font ',14' textcolor rgb mb_tc(0)
set size mb_w, 0.86
mb_x = 0.0
if (mb_line) {
    set origin mb_x, 0.0
    set title 'measured / fitted line' font ',13' tc rgb mb_tc(0)
    set ylabel 'ratio (1 = on the line)' font ',12' tc rgb mb_tc(0)
    plot for [b = 1:mb_nb - 1] mb_data index b using 1:(mb_r($2)) with points pt mb_m(b) lt mb_c(b), \
         for [b = 1:mb_nb - 1] mb_data index b using 1:($5 > 0 ? mb_r($2) : NaN) with points pt 6 ps 3 lw 2 lc rgb mb_ink(mb_fg), \
         mb_one(x) with lines lc rgb mb_dgrey dt 2
    mb_x = mb_x + mb_w
}
set origin mb_x, 0.0
set title 'measured / model (roofline time)' font ',13' tc rgb mb_tc(0)
set ylabel 'ratio (1 = as modelled)' font ',12' tc rgb mb_tc(0)
plot for [b = 1:mb_nb - 1] mb_data index b using 1:(mb_r($3)) with points pt mb_m(b) lt mb_c(b), \
     mb_one(x) with lines lc rgb mb_dgrey dt 2
mb_x = mb_x + mb_w
if (mb_counted) {
    set origin mb_x, 0.0
    set title 'DRAM bytes: measured / model' font ',13' tc rgb mb_tc(0)
    set ylabel 'ratio' font ',12' tc rgb mb_tc(0)
    plot for [b = 1:mb_nb - 1] mb_data index b using 1:(mb_r($4)) with points pt mb_m(b) lt mb_c(b), \
         mb_one(x) with lines lc rgb mb_dgrey dt 2
    mb_x = mb_x + mb_w
}
# the legend strip: each variant's colour, each plan's marker, the ring
set origin mb_x, 0.0
set size 1 - mb_x, 0.86
unset title
unset border
unset tics
unset xlabel
unset ylabel
unset grid
unset logscale
set xrange [0:1]
set yrange [0:1]
mb_nv = int(metan('n_variants'))
mb_ns = int(metan('n_shapes'))
set key at screen 0.98, screen 0.45 right center font ',11' samplen 1 spacing 1.2 nobox
@mb_plotkey
plot for [i = 1:mb_nv] mb_data index 1 using (NaN):(NaN) with points pt 7 lt i title meta('variant' . i), \
     for [i = 1:mb_ns] mb_data index 1 using (NaN):(NaN) with points pt mb_pt[(i - 1) % 6 + 1] lc rgb mb_dgrey title meta('shape' . i), \
     mb_data index 1 using (NaN):(NaN) with points pt 6 ps 3 lw 2 lc rgb mb_ink(mb_fg) title 'rejected outlier'
unset multiplot
