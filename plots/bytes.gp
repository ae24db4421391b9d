# bytes.gp — bytes moved per element for every variant and plan: the model's
# cache-aware DRAM bytes and, where counters ran, the measured DRAM bytes, side
# by side; the traffic-rule count (the lecture's "11n", shown in bytes on this
# axis) marked above each pair.
# Data (membound's bytes.dat): block 1 = label, traffic-rule B/elem, model
# DRAM B/elem, measured B/elem (NaN when not measured), count label
# ("11n = 44 B"), n.
# Usage: gnuplot -c bytes.gp bytes.dat bytes.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set title mb_title(meta('title'), meta('device') . ';  n = elements per tensor') tc rgb mb_tc(0)
set style data histograms
set style histogram clustered gap 1.2
set style fill solid 0.85 border rgb mb_ink(mb_dark ? '#cccccc' : '#333333')
set boxwidth 0.95
set ylabel 'bytes per element' tc rgb mb_tc(0)
unset xlabel
set grid noxtics
stats mb_data index 1 using 0 nooutput
mb_nx = int(STATS_records)
# each bar's label its own text unit (the bottom margin is fixed: the same
# axes whichever is drawn); smaller where the bars are narrow
mb_barpx = mb_width * 0.85 / mb_nx / mb_fscale
mb_xfont = mb_barpx > 140 ? ',13' : mb_barpx > 110 ? ',11' : mb_barpx > 85 ? ',10' : ',8'
mb_cfont = mb_barpx > 110 ? ',12' : mb_barpx > 85 ? ',10' : ',8'
set xtics scale 0 font mb_xfont
set xrange [-0.6 : mb_nx - 0.4]
# room above the tallest bar for its count label and for the legend
stats mb_data index 1 using 2 nooutput
set yrange [0:STATS_max * 1.45]
set key top right vertical font ',13'
set bmargin 5.5
mb_measured = metan('measured')
mb_mt = meta('measured_title')
# the model's bars: cache-aware, or (rows measured with every kernel from a
# flushed cache, ncu's default) each kernel's cold count, as they were judged
mb_modt = meta('model_title') ne '' ? meta('model_title') : 'model: DRAM bytes (cache-aware, cold)'
mb_ct = meta('count_title')
if (mb_measured > 0) {
    @mb_plotkey
    plot mb_data index 1 using 3:xtic(mb_txt(strcol(1))) title mb_modt lt 1, \
         '' index 1 using 4 title mb_mt lt 2, \
         '' index 1 using 0:2:(0.42) with xerrorbars lt 7 lw 3 pt -1 title mb_ct, \
         '' index 1 using 0:2:(mb_txt(strcol(5))) with labels offset 0, 0.9 font mb_cfont tc rgb mb_fg notitle
} else {
    if (mb_mt ne '') { set label 1 mb_mt at graph 0.01, graph 0.96 left font ',12' tc rgb mb_tcg(0) }
    @mb_plotkey
    plot mb_data index 1 using 3:xtic(mb_txt(strcol(1))) title mb_modt lt 1, \
         '' index 1 using 0:2:(0.42) with xerrorbars lt 7 lw 3 pt -1 title mb_ct, \
         '' index 1 using 0:2:(mb_txt(strcol(5))) with labels offset 0, 0.9 font mb_cfont tc rgb mb_fg notitle
}
