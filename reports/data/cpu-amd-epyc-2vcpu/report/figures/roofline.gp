# roofline.gp — the device's roofline: FP32 and BF16-tensor ceilings, the
# memory slope, ridge points, the lecture's operations as the model places
# them and measured points where there are any.
# Data (membound's roofline.dat): block 0 bw_gbs, fp32_tflops, bf16_tflops;
# block 1 model points (label, flop/byte, TFLOP/s); block 2 measured points.
# Usage: gnuplot -c roofline.gp roofline.dat roofline.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_bw = metan('bw_gbs') / 1000.0          # TB/s: TFLOP/s per flop/byte
mb_f32 = metan('fp32_tflops')
mb_bf16 = metan('bf16_tflops')
# a device whose bf16 rate is its fp32 rate (a CPU) has one ceiling
if (mb_f32 > 0 && abs(mb_bf16 / mb_f32 - 1) < 0.02) { mb_bf16 = 0 }
mb_top = mb_bf16 > mb_f32 ? mb_bf16 : mb_f32
mb_r32 = mb_f32 > 0 ? mb_f32 / mb_bw : NaN
mb_r16 = mb_bf16 > 0 ? mb_bf16 / mb_bw : NaN
mb_xmax = 10 ** ceil(log10((mb_top > 0 ? mb_top : 100 * mb_bw) / mb_bw) + 0.7)
mb_xmin = 0.01
set logscale xy
set xrange [mb_xmin:mb_xmax]
set yrange [mb_xmin * mb_bw / 3 : (mb_top > 0 ? mb_top : 100 * mb_bw) * 4]
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'arithmetic intensity (flop per DRAM byte)'
set ylabel 'performance (TFLOP/s)'
mb_bf16_text = mb_bf16 > 0 ? sprintf(', BF16 tensor %.4g TFLOP/s', mb_bf16) : ', no separate BF16 rate'
set title mb_title(meta('title'), sprintf('memory %.0f GB/s (%s), FP32 %.3g TFLOP/s', metan('bw_gbs'), meta('bw_source'), mb_f32) . mb_bf16_text)
mb_fdt = mb_bf16 > 0 ? 2 : 1
roof(x, peak) = x * mb_bw < peak ? x * mb_bw : peak
if (mb_r32 == mb_r32) {
    set arrow 1 from mb_r32, graph 0 to mb_r32, mb_f32 nohead dt 3 lc rgb mb_grey
    set label 1 sprintf("ridge FP32\n%.3g flop/B", mb_r32) at mb_r32, mb_f32 / 4 offset 0.6, 0 font ',11' tc rgb '#555555'
}
if (mb_r16 == mb_r16) {
    set arrow 2 from mb_r16, graph 0 to mb_r16, mb_bf16 nohead dt 3 lc rgb mb_grey
    set label 2 sprintf("ridge BF16\n%.3g flop/B", mb_r16) at mb_r16, mb_bf16 / 4 offset 0.6, 0 font ',11' tc rgb '#555555'
}
# the memory slope, labelled above its left end (measured points sit below it)
set label 3 sprintf('memory slope: %.3g TB/s', mb_bw) at mb_xmin * 1.5, mb_xmin * 1.5 * mb_bw * 4 font ',12' tc rgb '#444444'
set samples 400
# model points' labels into "a|b|c|"
mb_lab = ''
set table $mb_sink
plot mb_data index 1 using (mb_lab = mb_lab . strcol(1) . '|', 0):(0) with table
unset table
mb_nl = strlen(mb_lab) > 0 ? words(mb_lab) : 0
mb_npts = 0
do for [i = 1:strlen(mb_lab)] { if (mb_lab[i:i] eq '|') { mb_npts = mb_npts + 1 } }
mb_nmeas = metan('measured_points')
# measured points' labels, the same way
mb_mlab = ''
if (mb_nmeas > 0) {
    set table $mb_sink2
    plot mb_data index 2 using (mb_mlab = mb_mlab . strcol(1) . '|', 0):(0) with table
    unset table
}
# measured points: black, one open marker each, named in the legend
array mb_mpt[10] = [4, 6, 8, 10, 12, 14, 1, 2, 3, 5]
mb_meas = mb_nmeas > 0 ? "for [i = 1:mb_nmeas] mb_data index 2 every ::(i - 1)::(i - 1) using 2:3 with points pt mb_mpt[(i - 1) % 10 + 1] ps 2.0 lw 2 lc rgb '#000000' title 'measured: ' . mb_item(mb_mlab, i)" : 'NaN notitle'
# many points: the legend beside the plot, never over it
if (mb_npts + mb_nmeas > 8) { set key outside right top font ',10' spacing 1.0 samplen 1.5 } else { set key bottom right font ',12' }
plot (mb_bf16 > 0 ? roof(x, mb_bf16) : NaN) lw 3 lc rgb '#444444' title (mb_bf16 > 0 ? 'BF16 tensor ceiling' : ''), \
     (mb_f32 > 0 ? roof(x, mb_f32) : NaN) lw 3 lc rgb '#444444' dt mb_fdt title 'FP32 ceiling', \
     for [i = 1:mb_npts] mb_data index 1 every ::(i - 1)::(i - 1) using 2:3 with points lt i ps 2.2 title 'model: ' . mb_item(mb_lab, i), \
     @mb_meas
