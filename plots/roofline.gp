# roofline.gp — the device's roofline: the memory slope, the FP32 and
# BF16-tensor ceilings (each from its own ridge point), a calibrated CPU's
# op-rate ceilings (sin, cos, tanh alone at their measured rates), the lecture's
# operations as the model places them (filled markers) and measured points
# (open markers). One colour per variant, one marker per plan: the legend
# names each once. Every number is in the legend, none on the plot.
# Data (membound's roofline.dat): block 0 bw_gbs, fp32_tflops, bf16_tflops,
# n_variants, variantI, n_shapes, shapeI, n_ceilings, ceilingI_tflops,
# ceilingI_label; block 1 model points (label,
# flop/byte, TFLOP/s, colour, marker, the point's own op-rate ceiling, drawn
# as a bar across it where the device has op rates); block 2 measured points, the same.
# Usage: gnuplot -c roofline.gp roofline.dat roofline.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_nmeas = metan('measured_points')
mb_f32 = metan('fp32_tflops')
mb_bf16 = metan('bf16_tflops')
# a device whose bf16 rate is its fp32 rate (a CPU) has one ceiling
if (mb_f32 > 0 && abs(mb_bf16 / mb_f32 - 1) < 0.02) { mb_bf16 = 0 }
mb_top = mb_bf16 > mb_f32 ? mb_bf16 : mb_f32
# the unit: TFLOP/s, or GFLOP/s on a device below 1 TFLOP/s (a CPU)
mb_u = mb_top > 0 && mb_top < 1 ? 1000.0 : 1.0
mb_un = mb_u > 1 ? 'GFLOP/s' : 'TFLOP/s'
mb_f32 = mb_f32 * mb_u
mb_bf16 = mb_bf16 * mb_u
mb_top = mb_top * mb_u
mb_bw = metan('bw_gbs') / 1000.0 * mb_u    # the unit per flop/byte
mb_r32 = mb_f32 > 0 ? mb_f32 / mb_bw : NaN
mb_r16 = mb_bf16 > 0 ? mb_bf16 / mb_bw : NaN
mb_rtop = mb_top > 0 ? mb_top / mb_bw : 100
mb_xmax = 10 ** ceil(log10(mb_rtop) + 0.7)
mb_xmin = 0.01
mb_ytop = (mb_top > 0 ? mb_top : 100 * mb_bw) * 4
set logscale xy
set xrange [mb_xmin:mb_xmax]
# room under the slope's left end for the legend
set yrange [mb_xmin * mb_bw / 30 : mb_ytop]
set format x '10^{%L}'
set format y '10^{%L}'
set xlabel 'arithmetic intensity (flop per DRAM byte)' tc rgb mb_tc(0)
set ylabel 'performance (' . mb_un . ')' tc rgb mb_tc(0)
set title mb_title(meta('title'), mb_nmeas > 0 ? 'filled markers: the model; open markers: measured' : 'markers: the model') tc rgb mb_tc(0)
# the roofs as exact segments: the slope up to the top ridge, each ceiling
# from its own ridge (a sampled min() started the FP32 one late)
mb_roof = mb_dgrey
mb_fdt = mb_bf16 > 0 ? 2 : 1
set arrow 10 from mb_xmin, mb_xmin * mb_bw to mb_rtop, mb_rtop * mb_bw nohead lw 3 lc rgb mb_roof front
if (mb_f32 > 0) {
    set arrow 11 from mb_r32, mb_f32 to mb_xmax, mb_f32 nohead lw 3 lc rgb mb_roof dt mb_fdt front
}
if (mb_bf16 > 0) {
    set arrow 12 from mb_r16, mb_bf16 to mb_xmax, mb_bf16 nohead lw 3 lc rgb mb_roof front
}
# a CPU's op-rate ceilings (each op alone at its measured rate): a kernel
# under its memory roof may be bound by one of them
mb_nc = int(metan('n_ceilings'))
mb_ceil(i) = metan('ceiling' . i . '_tflops') * mb_u
do for [i = 1:mb_nc] {
    mb_tag = 20 + i
    mb_cdt = i + 2
    set arrow mb_tag from mb_ceil(i) / mb_bw, mb_ceil(i) to mb_xmax, mb_ceil(i) nohead lw 2 lc rgb mb_roof dt mb_cdt front
}
mb_nv = int(metan('n_variants'))
mb_ns = int(metan('n_shapes'))
# filled markers for the model, the open one of each for measured
array mb_pt[6] = [7, 5, 9, 11, 13, 15]
array mb_po[6] = [6, 4, 8, 10, 12, 14]
mb_fill(i) = mb_pt[(int(i) - 1) % 6 + 1]
mb_open(i) = mb_po[(int(i) - 1) % 6 + 1]
mb_mem = sprintf('memory %.4g GB/s (%s)', metan('bw_gbs'), meta('bw_source'))
mb_t32 = sprintf('FP32 %.3g %s, ridge %.3g flop/B', mb_f32, mb_un, mb_r32)
mb_t16 = sprintf('BF16 tensor %.3g %s, ridge %.3g flop/B', mb_bf16, mb_un, mb_r16)
# the legend: under the ceilings, right of the slope (the operations sit on
# or under the slope's left part; the ridges are in the legend)
mb_kf = mb_width / mb_fscale >= 1100 ? ",12" : ",10"
set key bottom right font mb_kf spacing 1.1 samplen 2 box lc rgb mb_frame width 1
@mb_plotkey
plot keyentry with lines lw 3 lc rgb mb_roof title mb_mem, \
     keyentry with lines lw 3 lc rgb mb_roof dt mb_fdt title (mb_f32 > 0 ? mb_t32 : ''), \
     keyentry with lines lw 3 lc rgb mb_roof title (mb_bf16 > 0 ? mb_t16 : ''), \
     for [i = 1:mb_nc] keyentry with lines lw 2 lc rgb mb_roof dt 2 + i title sprintf('%s (%.3g %s)', meta('ceiling' . i . '_label'), mb_ceil(i), mb_un), \
     for [i = 1:mb_nv] keyentry with points pt 7 ps 1.8 lt i title meta('variant' . i), \
     for [i = 1:mb_ns] keyentry with points pt mb_fill(i) ps 1.8 lc rgb mb_dgrey title meta('shape' . i), \
     keyentry with points pt 6 ps 1.8 lw 2 lc rgb mb_dgrey title (mb_nmeas > 0 ? 'open marker: measured' : ''), \
     keyentry with lines lw 3 lc rgb mb_dgrey title (mb_nc > 0 ? 'bar: a point''s own op-rate ceiling' : ''), \
     mb_data index 1 using ($2 / 1.5):(mb_nc > 0 ? $6 * mb_u : NaN):($2 * 1.5 - $2 / 1.5):(0):4 with vectors nohead lw 3 lc variable notitle, \
     mb_data index 1 using 2:($3 * mb_u):(mb_fill($5)):4 with points pt variable lc variable ps 2.2 notitle, \
     mb_data index 2 using 2:($3 * mb_u):(mb_open($5)):4 with points pt variable lc variable ps 2.4 lw 2 notitle
