# style.gp — the shared look of membound's figures, loaded by every script in
# this folder: the terminal from the output file's extension (png via
# pngcairo, svg, pdf via pdfcairo), size, fonts, theme, colours, grid, and
# helpers that read a data file's metadata block. Draws nothing itself.
#
# Every script is run headless as   gnuplot -c SCRIPT.gp DATA.dat OUT.png|svg|pdf
# and begins (load clears ARGn, so the script hands them over):
#   mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
#   mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
#   load mb_dir . 'style.gp'
# A data file's block 0 holds "key value" lines (strings in double quotes);
# meta('key') gives a value as a string, metan('key') as a number.
#
# The look (size, font scale, light or dark) is in look.gp beside this file
# (membound figures/report --size, --font-scale, --theme write it); a
# variable given with gnuplot -e before -c wins over it.
#
# Layers, for the overlap test (tests/fig_overlap.sh): with -e "mb_layer='text'"
# only text is drawn (titles, axis and tic labels, annotations, the legend as
# a filled box) and with mb_layer='data' only data (lines, points, bars);
# axes and grid are drawn in neither, at the same place. mb_only=K (text
# layer) draws only the K-th text unit. Every text of a script therefore
# takes its colour from mb_tc(0) / mb_tcg(0), a plot 'with labels' its text
# from mb_txt(text) (one unit a label), every data colour from mb_ink('#rrggbb'), and
# a script says @mb_plotkey before each plot.

if (!exists("mb_argc") || mb_argc < 2) {
    print "usage: gnuplot -c SCRIPT.gp DATA.dat OUT.png|OUT.svg|OUT.pdf"
    exit status 2
}
mb_ext = strlen(mb_out) > 4 ? mb_out[strlen(mb_out) - 2:] : ''
load mb_dir . 'look.gp'
if (!exists("mb_width")) mb_width = 1280
if (!exists("mb_height")) mb_height = 720
if (!exists("mb_fscale")) mb_fscale = 1.0
if (!exists("mb_theme")) mb_theme = 'light'
if (!exists("mb_layer")) mb_layer = 'all'
if (!exists("mb_only")) mb_only = 0

# the theme: background, text, muted text, grid
mb_dark = mb_theme eq 'dark'
mb_bg = mb_dark ? '#1b1d21' : '#ffffff'
mb_fg = mb_dark ? '#e8e8e8' : '#000000'
mb_grey = mb_dark ? '#a8a8a8' : '#666666'
mb_gridc = mb_dark ? '#3a3d44' : '#e4e4e4'
mb_none = '#FF000000'

# 1280x720: a 16:9 slide; fonts sized to be read from the back of a room.
mb_bgopt = mb_layer eq 'all' ? sprintf("background rgb '%s'", mb_bg) : 'transparent'
if (mb_ext eq 'png') {
    set terminal pngcairo enhanced size mb_width, mb_height font 'Sans,15' fontscale mb_fscale linewidth 1.6 @mb_bgopt
} else {
    if (mb_ext eq 'svg') {
        set terminal svg enhanced size mb_width, mb_height font 'Sans,15' fontscale mb_fscale linewidth 1.6 background rgb mb_bg
    } else {
        if (mb_ext eq 'pdf') {
            set terminal pdfcairo enhanced size (mb_width / 96.0), (mb_height / 96.0) font 'Sans,11' fontscale mb_fscale linewidth 1.6 background rgb mb_bg
        } else {
            print sprintf("membound plots: unknown output extension in '%s' (png, svg, pdf)", mb_out)
            exit status 2
        }
    }
}
set output mb_out
set encoding utf8
set micro

# text units: each call is one unit (a title, a label, the tic labels, the
# legend); in the text layer with mb_only set, only that unit is drawn
mb_unit = 0
mb_show(u) = mb_layer ne 'data' && (mb_only == 0 || mb_only == u)
mb_tc(x) = (mb_unit = mb_unit + 1, mb_show(mb_unit) ? mb_fg : mb_none)
mb_tcg(x) = (mb_unit = mb_unit + 1, mb_show(mb_unit) ? mb_grey : mb_none)
mb_txt(s) = (mb_unit = mb_unit + 1, mb_show(mb_unit) ? s : '')
mb_ink(c) = mb_layer eq 'text' ? mb_none : c
mb_frame = mb_layer eq 'all' ? mb_fg : mb_none
mb_gridl = mb_layer eq 'all' ? mb_gridc : mb_none

# Okabe-Ito colours: distinguishable with the common colour-vision
# deficiencies (on the dark theme the dark blue and black give way to light ones).
set linetype 1 lc rgb mb_ink(mb_dark ? '#56B4E9' : '#0072B2') lw 2 pt 7 ps 1.3
set linetype 2 lc rgb mb_ink('#D55E00') lw 2 pt 5 ps 1.3
set linetype 3 lc rgb mb_ink('#009E73') lw 2 pt 9 ps 1.5
set linetype 4 lc rgb mb_ink('#CC79A7') lw 2 pt 11 ps 1.5
set linetype 5 lc rgb mb_ink('#E69F00') lw 2 pt 13 ps 1.5
set linetype 6 lc rgb mb_ink(mb_dark ? '#F0E442' : '#56B4E9') lw 2 pt 15 ps 1.3
set linetype 7 lc rgb mb_ink(mb_fg) lw 2 pt 3 ps 1.3
set linetype 8 lc rgb mb_ink('#999999') lw 2 pt 1 ps 1.3
set linetype cycle 8
# the muted colour of data (reference lines, ceilings)
mb_dgrey = mb_ink(mb_dark ? '#b0b0b0' : '#555555')

set border 3 lw 1.2 lc rgb mb_frame
set tics nomirror out scale 0.6
set tics textcolor rgb mb_tc(0)
set grid xtics ytics lc rgb mb_gridl lw 1 dt 1
set key noautotitle
set key samplen 2.5 spacing 1.15 nobox
set key textcolor rgb mb_tc(0)
# the legend: opaque on the page; one filled box in the text layer
if (mb_layer eq 'text') {
    set key opaque fc rgb (mb_show(mb_unit) ? mb_fg : mb_none)
} else {
    set key opaque fc rgb mb_bg
}
mb_plotkey = mb_layer eq 'data' ? 'unset key' : ''
set style textbox opaque noborder fc rgb mb_bg

# Metadata of block 0 as "|key=value|key=value|".
mb_m = '|'
set table $mb_meta_sink
plot mb_data index 0 using (mb_m = mb_m . strcol(1) . '=' . strcol(2) . '|', 0):(0) with table
unset table
mb_cut(s) = s[1:strstrt(s, '|') - 1]
meta(k) = strstrt(mb_m, '|' . k . '=') ? mb_cut(mb_m[strstrt(mb_m, '|' . k . '=') + strlen(k) + 2:]) : ''
metan(k) = meta(k) eq '' ? 0 : real(meta(k))

# The i-th (1-based) item of "a|b|c|".
mb_item(s, i) = i <= 1 ? mb_cut(s) : mb_item(s[strstrt(s, '|') + 1:], i - 1)

# Title with the device as a smaller second line.
mb_title(t, d) = d eq '' ? t : t . "\n{/*0.75 " . d . "}"
