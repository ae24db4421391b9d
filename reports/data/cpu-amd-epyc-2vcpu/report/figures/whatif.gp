# whatif.gp — each remedy of the variants on every device, from the model:
# top, its speed-up (slow / fast, bars); bottom, the fast version's time
# (points on a log axis; fast versions with equal times share one line).
# Data (membound's whatif.dat): block 0 remedies (count), remedyI and fastI
# (titles; fastI empty when another line draws it); block 1, one device per
# line: id, then per remedy its speed-up and the fast version's time (s).
# Usage: gnuplot -c whatif.gp whatif.dat whatif.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_nr = int(metan('remedies'))
stats mb_data index 1 using 0 nooutput
mb_nd = int(STATS_records)
# device names: small enough to fit under the bars, slanted when many
mb_tfont = mb_nd > 12 ? ',11' : ',13'
set xtics scale 0 font mb_tfont
if (mb_nd > 6) { set xtics rotate by 35 right }
set xrange [-0.6 : mb_nd - 0.4]
set grid noxtics ytics
# the legend at the right, beside both panels
set key at screen 0.995, screen 0.88 right top vertical font ',12' spacing 1.3 samplen 2 nobox noopaque
set multiplot layout 2, 1 title meta('title') font ',17' margins screen 0.08, 0.68, 0.14, 0.88 spacing screen 0.21
set style data histograms
set style histogram clustered gap 1.2
set style fill solid 0.85 border rgb '#333333'
set boxwidth 0.95
set title 'speed-up of the remedy (slow / fast)' font ',14'
set ylabel 'speed-up (x)'
set yrange [0:*]
set ytics 2
set offsets 0, 0, graph 0.05, 0
plot for [i = 1:mb_nr] mb_data index 1 using (column(2 * i)):xtic(1) title meta('remedy' . i) lt i
set key at screen 0.995, screen 0.40 spacing 3.2
set style data linespoints
set title 'predicted time of the fast version' font ',14'
set ylabel 'time'
set logscale y
set ytics autofreq
set format y '%.0s %cs'
set yrange [*:*]
set offsets 0, 0, 0, 0
plot for [i = 1:mb_nr] mb_data index 1 using 0:(column(2 * i + 1)):xtic(1) lt i pt 7 ps 1.3 lw 1.5 title meta('fast' . i)
unset multiplot
