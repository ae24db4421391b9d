# mlp_kernels.gp — an MLP's model time by kernel class, one stacked bar per
# plan (and checkpoint option with a backward pass): GEMMs and the other
# kernels (elementwise, norms, sums) of the forward and of the backward, and
# the checkpoint's recomputation; the total above each bar.
# Data (membound mlp --figures DIR: DIR/mlp_kernels.dat): block 0 metadata
# (title, device); block 1 one line a plan: label, then ms of GEMM forward,
# other forward, GEMM backward, other backward, recompute, total.
# Usage: gnuplot -c mlp_kernels.gp mlp_kernels.dat mlp_kernels.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set title mb_title(meta('title'), meta('device')) font ',15' tc rgb mb_tc(0)
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border rgb mb_ink(mb_dark ? '#cccccc' : '#333333')
set boxwidth 0.6
set grid noxtics
set xtics scale 0 font ',12'
set yrange [0:*]
set offsets 0, 0, graph 0.25, 0
set bmargin 5
set ylabel 'model time (ms)' tc rgb mb_tc(0)
set key top left font ',11' samplen 1.5 maxrows 3
@mb_plotkey
plot mb_data index 1 using 2:xtic(1) title 'GEMMs, forward' lc rgb mb_ink('#0072B2'), \
     '' index 1 using 3 title 'elementwise and norm, forward' lc rgb mb_ink('#E69F00'), \
     '' index 1 using 4 title 'GEMMs, backward' lc rgb mb_ink('#56B4E9'), \
     '' index 1 using 5 title 'elementwise, norm and sums, backward' lc rgb mb_ink('#D55E00'), \
     '' index 1 using 6 title 'recompute (checkpoint), in the backward' lc rgb mb_ink('#009E73'), \
     '' index 1 using ($0):7:(mb_txt(sprintf('%.3g ms', $7))) with labels offset 0, 0.8 font ',12' tc rgb mb_fg notitle
