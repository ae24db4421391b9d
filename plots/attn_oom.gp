# attn_oom.gp — the longest sequence whose forward and backward fit each
# GPU's memory, standard attention (three seq x seq tensors live in its
# backward; recompute's is within a token of it and not drawn) against
# FlashAttention (no seq x seq tensor in DRAM), a bar pair a GPU, log scale.
# Data (membound attention --figures DIR: attn_oom.dat): block 0 metadata
# (title); block 1 a GPU a line: name, memory GB, longest seq for standard,
# recompute and flash.
# Usage: gnuplot -c attn_oom.gp attn_oom.dat attn_oom.png|svg|pdf
mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
load mb_dir . 'style.gp'

set title mb_title(meta('title'), 'the model: peak memory of forward and backward within the GPU''s memory (mem\_gb)') font ',15' tc rgb mb_tc(0)
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb mb_ink(mb_dark ? '#cccccc' : '#333333')
set boxwidth 0.9
set grid noxtics
set xtics scale 0 rotate by 45 right font ',11'
set logscale y 10
set yrange [1000 : *]
set format y '%.0s%c'
set ylabel 'longest sequence (tokens, log scale)' tc rgb mb_tc(0)
set offsets 0, 0, graph 0.12, 0
# fixed margins: the same axes whichever text is drawn (the slanted names)
set lmargin at screen 0.085 * mb_fscale * 1280.0 / mb_width
set rmargin at screen 0.985
set bmargin at screen 0.27 * mb_fscale * 720.0 / mb_height
set tmargin at screen 1 - 0.14 * mb_fscale * 720.0 / mb_height
set key top left font ',12'
@mb_plotkey
plot mb_data index 1 using 3:xtic(mb_txt(strcol(1) . sprintf(' (%g GB)', $2))) lt 2 title 'standard (P kept)', \
     '' index 1 using 5 lt 1 title 'flash'
