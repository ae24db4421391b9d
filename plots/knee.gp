# knee.gp — one pass or several: a row kernel's traffic (in n, the lecture's
# count dashed, the cache-aware DRAM count solid) and time against the row
# length at a fixed n, on each device (one colour each; the online plan in a
# lighter dash), each device's knee (dotted: the longest row the fused kernel
# keeps on chip), and the CPU's measured medians as points.
# Data (membound's knee.dat): block 0 n, devices, plans, device_I, knee_I, measured,
# measured_device; blocks 1..2*devices: "DEVICE PLAN" cols lecture_n dram_n
# time_s passes dev (fused, then online when the variant has it, per device);
# the last block: measured cols median_s min_s.
# Usage: gnuplot -c knee.gp knee.dat knee.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

mb_nd = int(metan('devices'))
mb_meas = metan('measured') > 0
mb_np = int(metan('plans'))
stats mb_data using 1 nooutput
mb_nb = STATS_blocks
set logscale x 2
set format x '2^{%L}'
set xtics 2**4, 2**4
set xlabel 'row length (columns; rows = n / columns)' font ',13' offset 0, 0.4 tc rgb mb_tc(0)
set tics font ',12'
do for [i = 1:mb_nd] {
    k = metan(sprintf('knee_%d', i))
    if (k > 0) { set arrow i from k, graph 0 to k, graph 1 nohead dt 3 lc i lw 1.5 }
}
# fused blocks: 1, 1 + mb_np, ...; online (mb_np = 2): 2, 4, ...
mb_last = mb_nb - 2
mb_on = mb_np == 2 ? 2 : mb_last + 1
mb_sub = 'solid: fused, dashed: online; dotted verticals: each device''s knee'
set multiplot layout 1, 2 title meta('title') . "\n{/*0.75 " . mb_sub . '}' font ',15' textcolor rgb mb_tc(0)
set title 'traffic (in n; thin: the lecture count)' font ',13' tc rgb mb_tc(0)
set ylabel 'n' font ',13' tc rgb mb_tc(0)
set yrange [0:5]
set key bottom left font ',11' samplen 3 spacing 1.05 width -2
@mb_plotkey
plot for [b = 1:mb_last:mb_np] mb_data index b using 1:3:6 with lines lc variable title columnhead(1), \
     for [b = mb_on:mb_last:2] mb_data index b using 1:3:6 with lines lc variable dt (8, 5) title columnhead(1), \
     for [b = 1:mb_last] mb_data index b using 1:2:6 with lines lc variable dt 2 lw 0.8 notitle
set title 'time' font ',13' tc rgb mb_tc(0)
set ylabel 'time per run' font ',13' tc rgb mb_tc(0)
set logscale y 10
set format y '%.0s %cs'
set yrange [*:*]
set key bottom left font ',11' samplen 1 width 0
if (mb_meas) {
    @mb_plotkey
    plot for [b = 1:mb_last:mb_np] mb_data index b using 1:4:6 with lines lc variable notitle, \
         for [b = mb_on:mb_last:2] mb_data index b using 1:4:6 with lines lc variable dt (8, 5) notitle, \
         mb_data index (mb_nb - 1) using 1:2 with points lt 7 pt 7 ps 1.6 title 'measured (' . meta('measured_device') . ')'
} else {
    @mb_plotkey
    plot for [b = 1:mb_last:mb_np] mb_data index b using 1:4:6 with lines lc variable notitle, \
         for [b = mb_on:mb_last:2] mb_data index b using 1:4:6 with lines lc variable dt (8, 5) notitle
}
unset multiplot
