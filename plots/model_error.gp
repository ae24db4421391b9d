# model_error.gp — the model's error across devices: every row's measured
# median time over the model's time on its device, one line per device x
# backend (names on the left), on a log axis (1 = as modelled); each line's
# p10-p90 range as a grey bar with its median as a black diamond; one colour
# per variant, named once in the legend above; the variants of a line sit
# side by side in its row.
# Without a row to draw (every row failed or noisy) the lines are drawn
# empty, and a note says so.
# Data (membound's model_error.dat): block 0 lines (count), points (rows
# drawn), n_variants, variantI; block 1, one line per device x backend: index, name, p10,
# median, p90, rows; block 1 + I, variant I's rows: line index, measured /
# model.
# Usage: gnuplot -c model_error.gp model_error.dat model_error.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_nl = int(metan('lines'))
mb_nv = int(metan('n_variants'))
mb_np = int(metan('points'))
# the variants of a line spread in its row
mb_off(i) = mb_nv > 1 ? (i - 1 - (mb_nv - 1) / 2.0) * 0.5 / (mb_nv - 1) : 0
set yrange [mb_nl - 0.5 : -0.5]
set grid noytics xtics mxtics
set tics font ',12'
set logscale x 10
set format x '%gx'
set xlabel 'measured / model time (log scale; 1 = as modelled)' font ',13' tc rgb mb_tc(0)
# the left margin for device names; rows as large as the height allows
mb_lm = 0.24 * mb_fscale * 1280.0 / mb_width
# the legend above: its entries (the variants and the median) in one row up
# to four, else in three columns of mb_kr rows
mb_ne = mb_nv + 1
mb_kr = mb_ne > 4 ? int((mb_ne + 2) / 3) : 1
mb_kt = 0.985 - 0.06 * mb_fscale
mb_top = mb_kt - (0.036 * mb_kr + 0.02) * mb_fscale * 720.0 / mb_height
mb_rowpt = (mb_top - 0.12) * mb_height / (mb_nl > 0 ? mb_nl : 1) * 0.5 / mb_fscale
mb_yfont = sprintf(',%d', mb_rowpt > 13 ? 13 : mb_rowpt < 7 ? 7 : int(mb_rowpt))
set ytics scale 0 font mb_yfont
set arrow 1 from 1, graph 0 to 1, graph 1 nohead lc rgb mb_dgrey dt 2 lw 1.5 back
set key at screen 0.5, screen mb_kt center top vertical maxrows mb_kr font ',12' spacing 1.0 samplen 1 width 1
set offsets graph 0.05, graph 0.05, 0, 0
if (mb_np == 0) {
    set xrange [0.1:10]
    set label 1 mb_txt('no verified, quiet row to draw') at graph 0.04, graph 0.5 left font ',14' tc rgb mb_tc(0)
}
set multiplot layout 1, 1 title meta('title') font ',15' textcolor rgb mb_tc(0) margins screen mb_lm, 0.97, 0.13 * mb_fscale * 720.0 / mb_height, mb_top
@mb_plotkey
if (mb_np == 0) {
    plot mb_data index 1 using (NaN):1:ytic(mb_txt(strcol(2))) notitle
} else {
plot mb_data index 1 using (NaN):1:ytic(mb_txt(strcol(2))) notitle, \
     mb_data index 1 using 4:1:3:5 with xerrorbars lc rgb mb_ink(mb_dark ? '#808080' : '#b0b0b0') lw 6 pt -1 notitle, \
     for [i = 1:mb_nv] mb_data index (1 + i) using 2:($1 + mb_off(i)) with points lt i pt 7 ps 1.1 title meta('variant' . i), \
     mb_data index 1 using 4:1 with points pt 13 ps 2.2 lc rgb mb_ink(mb_fg) title 'median of the line, bar p10-p90'
}
unset multiplot
