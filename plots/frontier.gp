# frontier.gp — the memory-traffic frontier of one variant with a backward
# pass: for each budget of activation memory (bytes saved from forward to
# backward), the least traffic any plan achieves, with the saved set of each
# frontier point, and the store and recompute plans for comparison.
# Every point is costed alike (the model's traffic, passes included): one
# metric on each axis.
# Data (membound plan --frontier --figure): block 0 metadata (title, device);
# block 1 the frontier points: saved MB, traffic MB, traffic bytes/element,
# model time ms, saved set (and "= plan" where a plan is that point); block
# 2 the store and recompute plans and, at a 2-D shape, the time objective's
# where it moves less: label ("-" where block 1 names it), saved MB,
# traffic MB; block 3 the least traffic of all of them within each budget (a
# step line): saved MB, traffic MB.
# Usage: gnuplot -c frontier.gp frontier.dat frontier.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set title mb_title(meta('title'), meta('device')) font ',16' tc rgb mb_tc(0)
set xlabel 'activation memory saved for backward (MB, 10^6 bytes)' tc rgb mb_tc(0)
set ylabel 'traffic, forward + backward (MB)' tc rgb mb_tc(0)
# axes fitted to the points (from 0, a frontier near 1 GB sat in one
# corner), with room for the labels and the legend; points of one memory
# (or one traffic) get a range of +-10% around it
stats mb_data index 3 using 1 nooutput
mb_xlo = STATS_min; mb_xhi = STATS_max
stats mb_data index 3 using 2 nooutput
mb_ylo = STATS_min; mb_yhi = STATS_max
stats mb_data index 1 using 2 nooutput
mb_yhi = STATS_max > mb_yhi ? STATS_max : mb_yhi
stats mb_data index 2 using 3 nooutput
mb_yhi = STATS_max > mb_yhi ? STATS_max : mb_yhi
if (mb_xhi - mb_xlo < 1e-3 * mb_xhi) { mb_xlo = 0.9 * mb_xlo; mb_xhi = 1.1 * mb_xhi }
if (mb_yhi - mb_ylo < 1e-3 * mb_yhi) { mb_ylo = 0.9 * mb_ylo; mb_yhi = 1.1 * mb_yhi }
mb_xr = mb_xhi - mb_xlo; mb_yr = mb_yhi - mb_ylo
set xrange [mb_xlo - 0.1 * mb_xr : mb_xhi + 0.45 * mb_xr]
set yrange [mb_ylo - 0.3 * mb_yr : mb_yhi + 0.45 * mb_yr]
set key top left
@mb_plotkey
plot mb_data index 3 using 1:2 with steps lt 1 title 'least traffic of any plan shown within the budget', \
     '' index 1 using 1:2 with points lt 1 pt 7 ps 1.8 title 'frontier point (minimum cut): what it saves', \
     '' index 1 using 1:2:(mb_txt(sprintf('saves %s: %.3g B/elem moved', strcol(5), $3))) with labels left offset 1, 1 font ',12' tc rgb mb_fg notitle, \
     '' index 2 using 2:3 with points lt 2 pt 4 ps 3 title 'store, recompute (and the time objective''s plan)', \
     '' index 2 using 2:3:(mb_txt(strcol(1) eq '-' ? '' : strcol(1))) with labels left offset 1.5, -1.6 font ',12' tc rgb mb_fg noenhanced notitle
