# mlp_frontier.gp — an MLP's activation checkpointing frontier: for every
# plan and checkpoint option, the activation memory saved for the backward
# against the model's time (forward + backward); the step line is the least
# time any option takes within each memory budget, filled points the options
# on the frontier (none saves no more and is no slower).
# Data (membound mlp --backward --figures DIR: DIR/mlp_frontier.dat): block
# 0 metadata (title, device); block 1 one line an option: saved MB, time ms,
# label, 1 on the frontier; block 2 the step line: saved MB, least time ms.
# Usage: gnuplot -c mlp_frontier.gp mlp_frontier.dat mlp_frontier.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set title mb_title(meta('title'), meta('device')) font ',15' tc rgb mb_tc(0)
set xlabel 'activation memory saved for backward (MB, 10^6 bytes)' tc rgb mb_tc(0)
set ylabel 'model time, forward + backward (ms)' tc rgb mb_tc(0)
stats mb_data index 1 using 1 nooutput
mb_xlo = STATS_min; mb_xhi = STATS_max
stats mb_data index 1 using 2 nooutput
mb_ylo = STATS_min; mb_yhi = STATS_max
mb_xr = mb_xhi - mb_xlo > 0 ? mb_xhi - mb_xlo : mb_xhi + 1
mb_yr = mb_yhi - mb_ylo > 0 ? mb_yhi - mb_ylo : mb_yhi + 1
set xrange [mb_xlo - 0.08 * mb_xr : mb_xhi + 0.3 * mb_xr]
set yrange [mb_ylo - 0.15 * mb_yr : mb_yhi + 0.3 * mb_yr]
set key top right font ',11'
@mb_plotkey
plot mb_data index 2 using 1:2 with steps lt 1 title 'least time within the budget', \
     '' index 1 using ($4 == 1 ? $1 : NaN):2 with points lt 1 pt 7 ps 2 title 'on the frontier', \
     '' index 1 using ($4 == 1 ? NaN : $1):2 with points lt 2 pt 4 ps 2 title 'dominated', \
     '' index 1 using 1:2:(mb_txt(strcol(3))) with labels left offset 1.2, 0.8 font ',12' tc rgb mb_fg noenhanced notitle
