# mlp_roofline.gp — an MLP's kernels on the device's roofline: each kernel
# of the eager and fused plans (forward, and backward with every saved
# tensor stored where the run has one) at its arithmetic intensity (FLOPs
# per DRAM byte) and the FLOP rate the model gives it; the memory slope and
# the GEMM's peak for the dtype as roofs. GEMMs and the kernels around them
# (activation, bias, norms, sums) each in their own marker: the GEMMs sit
# by the compute roof, the rest on the memory slope. Every number is in the
# legend, none on the plot.
# Data (membound mlp --figures DIR: DIR/mlp_roofline.dat): block 0 metadata
# (title, device, bw_gbs, peak_tflops, peak_key); block 1 the eager plan's
# kernels, block 2 the fused plan's: flop/byte, TFLOP/s, 1 for a GEMM, 1 for
# a backward kernel, name.
# Usage: gnuplot -c mlp_roofline.gp mlp_roofline.dat mlp_roofline.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_peak = metan('peak_tflops')
# the unit: TFLOP/s, or GFLOP/s on a device below 1 TFLOP/s (a CPU)
mb_u = mb_peak > 0 && mb_peak < 1 ? 1000.0 : 1.0
mb_un = mb_u > 1 ? 'GFLOP/s' : 'TFLOP/s'
mb_top = mb_peak * mb_u
mb_bw = metan('bw_gbs') / 1000.0 * mb_u    # the unit per flop/byte
mb_ridge = mb_top / mb_bw
stats mb_data index 1 using 1 nooutput
mb_xlo = STATS_min
stats mb_data index 2 using 1 nooutput
mb_xlo = STATS_min < mb_xlo ? STATS_min : mb_xlo
mb_xmin = 10 ** floor(log10(mb_xlo) - 0.3)
mb_xmax = 10 ** ceil(log10(mb_ridge) + 1.5)
set logscale xy
set xrange [mb_xmin:mb_xmax]
set yrange [mb_xmin * mb_bw / 3 : mb_top * 4]
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'arithmetic intensity (flop per DRAM byte)' tc rgb mb_tc(0)
set ylabel 'model performance (' . mb_un . ')' tc rgb mb_tc(0)
set title mb_title(meta('title'), meta('device')) font ',15' tc rgb mb_tc(0)
mb_roof = mb_dgrey
set arrow 10 from mb_xmin, mb_xmin * mb_bw to mb_ridge, mb_top nohead lw 3 lc rgb mb_roof front
set arrow 11 from mb_ridge, mb_top to mb_xmax, mb_top nohead lw 3 lc rgb mb_roof front
mb_mem = sprintf('memory %.4g GB/s', metan('bw_gbs'))
mb_pk = sprintf('GEMM peak %.4g %s (%s), ridge %.3g flop/B', mb_top, mb_un, meta('peak_key'), mb_ridge)
set key bottom right font ',11' spacing 1.1 samplen 2 box lc rgb mb_frame width 1
@mb_plotkey
plot keyentry with lines lw 3 lc rgb mb_roof title mb_mem, \
     keyentry with lines lw 3 lc rgb mb_roof title mb_pk noenhanced, \
     mb_data index 1 using ($3 == 1 ? $1 : NaN):($2 * mb_u) with points pt 7 ps 2.2 lc rgb mb_ink('#0072B2') title 'eager: GEMMs', \
     '' index 1 using ($3 == 1 ? NaN : $1):($2 * mb_u) with points pt 9 ps 2.2 lc rgb mb_ink('#E69F00') title 'eager: the kernels around them', \
     '' index 2 using ($3 == 1 ? $1 : NaN):($2 * mb_u) with points pt 6 ps 2.6 lw 2 lc rgb mb_ink('#009E73') title 'fused: GEMMs (epilogues in them)', \
     '' index 2 using ($3 == 1 ? NaN : $1):($2 * mb_u) with points pt 8 ps 2.6 lw 2 lc rgb mb_ink('#D55E00') title 'fused: the kernels left'
