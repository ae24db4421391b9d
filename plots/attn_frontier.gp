# attn_frontier.gp — attention's backward at one shape on one GPU: the
# memory each plan keeps from forward to backward against its time
# (forward and backward, the model's), with the least time within each
# budget of kept memory as a step line: over all three plans, and over the
# unfused ones alone (standard and recompute: what a framework without a
# FlashAttention kernel can choose between). Log memory: the log-sum-exp
# is thousands of times smaller than P.
# Data (membound attention --figures DIR: attn_frontier_DEV.dat): block 0
# metadata (title, device); block 1 a plan a line: name, kept MB, time ms,
# 1 when on the frontier, label; block 2 the frontier's steps over all
# plans (kept MB, time ms); block 3 the unfused plans' steps.
# Usage: gnuplot -c attn_frontier.gp attn_frontier_DEV.dat out.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set title mb_title(meta('title'), meta('device')) font ',15' tc rgb mb_tc(0)
set logscale x 10
set format x '10^{%L}'
set xlabel 'memory kept for backward (MB, 10^6 bytes; log scale)' tc rgb mb_tc(0)
set ylabel 'time, forward + backward (ms)' tc rgb mb_tc(0)
stats mb_data index 1 using 2 nooutput
mb_xlo = STATS_min; mb_xhi = STATS_max
stats mb_data index 1 using 3 nooutput
mb_yhi = STATS_max
set xrange [mb_xlo / 10 : mb_xhi * 30]
set yrange [0 : mb_yhi * 1.35]
set key top right font ',12'
@mb_plotkey
plot mb_data index 2 using 1:2 with steps lt 1 lw 2.5 title 'least time within the budget, any plan', \
     '' index 3 using 1:2 with steps lt 2 dt 2 title 'least time within the budget, unfused kernels only', \
     '' index 1 using 2:3 with points lt 7 pt 7 ps 2 title 'a plan', \
     '' index 1 using 2:3:(mb_txt(strcol(5))) with labels left offset 1.2, 0.9 font ',12' tc rgb mb_fg notitle
