# attn_tflops.gp — attention's achieved TFLOP/s against sequence length on
# one GPU as attention papers plot it (their FLOP count, 4·BH·N²·d forward,
# 3.5x that with the backward, halved when causal, over the time), here the
# model's prediction, not a measurement: forward and backward for the three
# plans, the forward alone for standard and flash, the dtype's GEMM peak as
# a ceiling.
# Data: attn_seq.gp's (attn_DEV.dat): columns 11-13 TFLOP/s forward and
# backward (standard, recompute, flash), 14-15 forward (standard, flash);
# block 0's peak_tflops and peak_key.
# Usage: gnuplot -c attn_tflops.gp attn_DEV.dat attn_tflops_DEV.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_peak = metan('peak_tflops')
set title mb_title('PREDICTED by the model (not measured): ' . meta('title'), meta('device')) font ',15' tc rgb mb_tc(0)
set logscale x 2
set xtics ('128' 128, '512' 512, '2K' 2048, '8K' 8192, '32K' 32768, '128K' 131072, '512K' 524288, '2M' 2097152)
set xlabel 'sequence length (tokens)' tc rgb mb_tc(0)
set ylabel 'TFLOP/s (attention papers'' FLOP count / model time)' tc rgb mb_tc(0)
set yrange [0 : mb_peak * 1.45]
set key top left font ',12' samplen 2
set label 1 sprintf('%s peak: %g TFLOP/s', meta('peak_key'), mb_peak) at graph 0.98, first mb_peak right offset 0, 0.8 font ',11' tc rgb mb_tc(0) noenhanced
@mb_plotkey
plot mb_data index 1 using 1:13 with linespoints lt 1 title 'flash, forward + backward', \
     '' index 1 using 1:15 with linespoints lt 1 dt 2 pt 6 title 'flash, forward', \
     '' index 1 using 1:11 with linespoints lt 2 title 'standard, forward + backward', \
     '' index 1 using 1:14 with linespoints lt 2 dt 2 pt 4 title 'standard, forward', \
     '' index 1 using 1:12 with linespoints lt 5 title 'recompute, forward + backward', \
     mb_peak with lines dt 3 lw 1.5 lc rgb mb_dgrey notitle
