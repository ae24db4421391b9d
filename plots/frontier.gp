# frontier.gp — the memory-traffic frontier of one variant with a backward
# pass: for each budget of activation memory (bytes saved from forward to
# backward), the least traffic any plan achieves, with the saved set of each
# frontier point, and the store and recompute plans for comparison.
# Data (membound plan --frontier --figure): block 0 metadata (title, device);
# block 1 the frontier points: saved MB, traffic MB, traffic bytes/element,
# model time ms, saved set; block 2 the store and recompute plans: label,
# saved MB, traffic MB; block 3 the least-traffic step line: saved MB,
# traffic MB.
# Usage: gnuplot -c frontier.gp frontier.dat frontier.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set title mb_title(meta('title'), meta('device')) font ',16' tc rgb mb_tc(0)
set xlabel 'activation memory saved for backward (MB, 10^6 bytes)' tc rgb mb_tc(0)
set ylabel 'traffic, forward + backward (MB)' tc rgb mb_tc(0)
set xrange [0:*]
set yrange [0:*]
set offsets graph 0.05, graph 0.3, graph 0.15, graph 0.05
set key bottom left
@mb_plotkey
plot mb_data index 3 using 1:2 with steps lt 1 title 'least traffic within the budget', \
     '' index 1 using 1:2 with points lt 1 pt 7 ps 1.8 title 'frontier point (minimum cut): what it saves', \
     '' index 1 using 1:2:(mb_txt(sprintf('saves %s: %.3g B/elem moved', strcol(5), $3))) with labels left offset 1, 1 font ',12' tc rgb mb_fg notitle, \
     '' index 2 using 2:3 with points lt 2 pt 4 ps 3 title 'store and recompute plans', \
     '' index 2 using 2:3:(mb_txt(strcol(1))) with labels right offset -1.5, -1.2 font ',12' tc rgb mb_fg noenhanced notitle
