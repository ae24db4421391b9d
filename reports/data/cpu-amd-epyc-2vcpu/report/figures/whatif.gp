# whatif.gp — the lecture's demos on every GPU of the table, from the model:
# top, the speed-up of each remedy (fusion, recomputation, bf16); bottom, the
# predicted time of the fast version at the lecture's size.
# Data (membound's whatif.dat): block 1, one GPU per line: id, 8 times (s),
# 4 speed-ups.
# Usage: gnuplot -c whatif.gp whatif.dat whatif.png|svg|pdf
mb_width = 1600
mb_height = 980
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

# the time panel's range, before any axis setting can filter the points
mb_tmin = 1e30
mb_tmax = 0
do for [c in '3 5 7 9'] {
    stats mb_data index 1 using (column(c + 0)) nooutput
    mb_tmin = STATS_min < mb_tmin ? STATS_min : mb_tmin
    mb_tmax = STATS_max > mb_tmax ? STATS_max : mb_tmax
}

set style data histograms
set style histogram clustered gap 1.5
set style fill solid 0.85 border rgb '#333333'
set boxwidth 0.95
set grid noxtics
set xtics scale 0 rotate by 35 right font ',12'
set key above horizontal font ',12' maxrows 1 nobox
set multiplot layout 2, 1 title meta('title') font ',17'
set title 'speed-up of the remedy (slow / fast)' font ',14'
set ylabel 'speed-up (x)'
set ytics 2
set yrange [0:*]
set offsets 0, 0, graph 0.05, 0
plot mb_data index 1 using 10:xtic(1) title 'sin^2+cos^2: fused vs eager, n = 2^{24}' lt 1, \
     '' index 1 using 11 title 'GELU: fused vs eager, 2^{24}' lt 2, \
     '' index 1 using 12 title 'sigmoid^3: recompute vs eager, 2^{20}' lt 3, \
     '' index 1 using 13 title 'copy: bf16 vs f32, 2^{25}' lt 4
set title 'predicted time of the fast version' font ',14'
set ylabel 'time'
set logscale y
set ytics autofreq
set format y '%.0s %cs'
set yrange [10 ** floor(log10(mb_tmin)) : 10 ** ceil(log10(mb_tmax))]
set offsets 0, 0, 0, 0
plot mb_data index 1 using 3:xtic(1) title 'sin^2+cos^2 fused' lt 1, \
     '' index 1 using 5 title 'GELU fused' lt 2, \
     '' index 1 using 7 title 'sigmoid^3 recompute' lt 3, \
     '' index 1 using 9 title 'copy bf16' lt 4
unset multiplot
