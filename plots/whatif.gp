# whatif.gp — each remedy of the variants on every device, from the model,
# as dot plots with one row per device (names level, on the left): left,
# the remedy's speed-up (slow / fast); right, the fast version's time on a
# log axis. One colour and one open marker shape per remedy, named once in
# the legend above; the remedies of a device sit side by side in its row.
# Data (membound's whatif.dat): block 0 remedies (count), remedyI and fastI
# (titles); block 1, one device per line: id, then per remedy its speed-up
# and the fast version's time (s).
# Usage: gnuplot -c whatif.gp whatif.dat whatif.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_nr = int(metan('remedies'))
stats mb_data index 1 using 0 nooutput
mb_nd = int(STATS_records)
# one row per device, the first at the top; the remedies spread in the row
mb_off(i) = mb_nr > 1 ? (i - 1 - (mb_nr - 1) / 2.0) * 0.6 / (mb_nr - 1) : 0
# an open marker of its own shape per remedy: remedies that move the same
# bytes land on one time (a bf16 copy at 2^25 and the fused kernels at 2^24
# all move 256 MiB), and open shapes of different forms stay visible there
# where filled dots of one size hid three of four
array mb_pts[6] = [6, 4, 8, 12, 10, 14]
mb_pt(i) = mb_pts[(i - 1) % 6 + 1]
set yrange [mb_nd - 0.5 : -0.5]
set grid noxtics ytics xtics
set tics font ',12'
mb_tf = mb_width / mb_fscale < 1100 ? ',14' : ',17'
mb_xl1 = mb_width / mb_fscale < 1100 ? 'speed-up (slow / fast)' : 'speed-up of the remedy (slow / fast)'
mb_xl2 = mb_width / mb_fscale < 1100 ? 'time of the fast version' : 'predicted time of the fast version (log scale)'
# the left margin: the longest device name at the tics' font
mb_lm = 0.14 * mb_fscale * 1280.0 / mb_width
# the legend above both panels: one column, two past four remedies
mb_kr = mb_nr > 4 ? (mb_nr + 1) / 2 : mb_nr
mb_kt = 0.985 - 0.06 * mb_fscale
mb_top = mb_kt - (0.036 * mb_kr + 0.02) * mb_fscale * 720.0 / mb_height
# device names as large as their rows allow, each its own text unit
mb_rowpt = (mb_top - 0.12) * mb_height / mb_nd * 0.72 / mb_fscale
mb_yfont = sprintf(',%d', mb_rowpt > 13 ? 13 : mb_rowpt < 6 ? 6 : int(mb_rowpt))
set ytics scale 0 font mb_yfont
set key at screen 0.5, screen mb_kt center top vertical maxrows mb_kr font ',12' spacing 1.0 samplen 1 width 1
set multiplot layout 1, 2 title meta('title') font mb_tf textcolor rgb mb_tc(0) margins screen mb_lm, 0.97, 0.12 * mb_fscale * 720.0 / mb_height, mb_top spacing screen 0.05
set xlabel mb_xl1 tc rgb mb_tc(0)
set xrange [0:*]
set offsets graph 0, graph 0.05, 0, 0
@mb_plotkey
plot mb_data index 1 using (NaN):0:ytic(mb_txt(strcol(1))) notitle, \
     for [i = 1:mb_nr] mb_data index 1 using (column(2 * i)):($0 + mb_off(i)) with points lt i pt mb_pt(i) ps 1.3 lw 2 title meta('remedy' . i)
unset key
set xlabel mb_xl2 tc rgb mb_tc(0)
set format y ''
set logscale x
set xrange [*:*]
set format x '%.0s %cs'
set offsets graph 0.05, graph 0.05, 0, 0
plot for [i = 1:mb_nr] mb_data index 1 using (column(2 * i + 1)):($0 + mb_off(i)) with points lt i pt mb_pt(i) ps 1.3 lw 2 notitle
unset multiplot
