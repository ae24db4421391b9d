# attn_seq.gp — attention on one GPU against sequence length, the three
# plans of membound attention (standard: P kept for backward; recompute:
# the log-sum-exp kept, S and P made again in the backward by separate
# kernels; flash: FlashAttention): time, DRAM traffic and the memory kept
# for backward, forward and backward, all from the model; the seq beyond
# which the standard plan no longer fits the GPU's memory marked.
# Data (membound attention --figures DIR: attn_DEV.dat): block 0 metadata
# (title, device, mem_gb, max_seq_standard, ...); block 1 one seq a line:
# seq, time ms (standard, recompute, flash), DRAM GB (same), saved GB
# (same), then TFLOP/s (attn_tflops.gp's).
# Usage: gnuplot -c attn_seq.gp attn_DEV.dat attn_seq_DEV.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_oom = metan('max_seq_standard')
mb_mem = metan('mem_gb')
set logscale x 2
set logscale y 10
set xtics ('128' 128, '512' 512, '2K' 2048, '8K' 8192, '32K' 32768, '128K' 131072, '512K' 524288, '2M' 2097152)
set xlabel 'sequence length (tokens)' tc rgb mb_tc(0)
set format y '10^{%L}'
set tics font ',12'
mb_lm = 0.09 * mb_fscale * 1280.0 / mb_width
mb_bm = 0.13 * mb_fscale * 720.0 / mb_height
mb_tm = 1 - 0.15 * mb_fscale * 720.0 / mb_height
set multiplot layout 1, 3 title mb_title(meta('title') . ' (model)', meta('device')) font ',15' textcolor rgb mb_tc(0) margins screen mb_lm, 0.985, mb_bm, mb_tm spacing screen 0.08
# the standard plan's out-of-memory seq: a dashed line in each panel
if (mb_oom > 0) {
    # (up to below the first panel's legend)
    set arrow 1 from mb_oom, graph 0 to mb_oom, graph 0.76 nohead dt 2 lw 1.5 lc rgb mb_dgrey
}
set title 'time, forward + backward' font ',13' tc rgb mb_tc(0)
set ylabel 'time (ms)' tc rgb mb_tc(0)
set key top left font ',11' samplen 1.5
if (mb_oom > 0) {
    set label 1 sprintf("standard and recompute\ndo not fit past %d", mb_oom) at mb_oom, graph 0.1 left offset 0.5, 0 font ',10' tc rgb mb_tc(0)
}
@mb_plotkey
plot mb_data index 1 using 1:2 with linespoints lt 2 title 'standard (P kept)', \
     '' index 1 using 1:3 with linespoints lt 5 title 'recompute (LSE kept)', \
     '' index 1 using 1:4 with linespoints lt 1 title 'flash'
unset label 1
set title 'DRAM traffic, forward + backward' font ',13' tc rgb mb_tc(0)
set ylabel 'GB (10^9 bytes)' tc rgb mb_tc(0)
unset key
plot mb_data index 1 using 1:5 with linespoints lt 2 notitle, \
     '' index 1 using 1:6 with linespoints lt 5 notitle, \
     '' index 1 using 1:7 with linespoints lt 1 notitle
set title 'memory kept for backward' font ',13' tc rgb mb_tc(0)
set ylabel 'GB (10^9 bytes)' tc rgb mb_tc(0)
# the GPU's memory as a ceiling
if (mb_mem > 0) {
    set label 2 sprintf('GPU memory, %g GB', mb_mem) at graph 0.03, first mb_mem offset 0, 0.8 font ',10' tc rgb mb_tc(0)
}
plot mb_data index 1 using 1:8 with linespoints lt 2 notitle, \
     '' index 1 using 1:9 with linespoints lt 5 notitle, \
     '' index 1 using 1:10 with linespoints lt 1 notitle, \
     (mb_mem > 0 ? mb_mem : 1/0) with lines dt 2 lw 2 lc rgb mb_dgrey notitle
unset multiplot
