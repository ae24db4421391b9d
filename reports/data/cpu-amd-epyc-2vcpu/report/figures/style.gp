# style.gp — the shared look of membound's figures, loaded by every script in
# this folder: the terminal from the output file's extension (png via
# pngcairo, svg, pdf via pdfcairo), fonts, colours, grid, and helpers that
# read a data file's metadata block. Draws nothing itself.
#
# Every script is run headless as   gnuplot -c SCRIPT.gp DATA.dat OUT.png|svg|pdf
# and begins (load clears ARGn, so the script hands them over):
#   mb_argc = ARGC; mb_data = ARG1; mb_out = ARG2
#   mb_dir = ''; do for [i = 1:strlen(ARG0)] { if (ARG0[i:i] eq '/') { mb_dir = ARG0[1:i] } }
#   load mb_dir . 'style.gp'
# A data file's block 0 holds "key value" lines (strings in double quotes);
# meta('key') gives a value as a string, metan('key') as a number.

if (!exists("mb_argc") || mb_argc < 2) {
    print "usage: gnuplot -c SCRIPT.gp DATA.dat OUT.png|OUT.svg|OUT.pdf"
    exit status 2
}
mb_ext = strlen(mb_out) > 4 ? mb_out[strlen(mb_out) - 2:] : ''
if (!exists("mb_width")) mb_width = 1280
if (!exists("mb_height")) mb_height = 720

# 1280x720: a 16:9 slide; fonts sized to be read from the back of a room.
if (mb_ext eq 'png') {
    set terminal pngcairo enhanced size mb_width, mb_height font 'Sans,15' linewidth 1.6 background rgb 'white'
} else {
    if (mb_ext eq 'svg') {
        set terminal svg enhanced size mb_width, mb_height font 'Sans,15' linewidth 1.6 background rgb 'white'
    } else {
        if (mb_ext eq 'pdf') {
            set terminal pdfcairo enhanced size (mb_width / 96.0), (mb_height / 96.0) font 'Sans,11' linewidth 1.6
        } else {
            print sprintf("membound plots: unknown output extension in '%s' (png, svg, pdf)", mb_out)
            exit status 2
        }
    }
}
set output mb_out
set encoding utf8
set micro

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
set linetype 1 lc rgb '#0072B2' lw 2 pt 7 ps 1.3
set linetype 2 lc rgb '#D55E00' lw 2 pt 5 ps 1.3
set linetype 3 lc rgb '#009E73' lw 2 pt 9 ps 1.5
set linetype 4 lc rgb '#CC79A7' lw 2 pt 11 ps 1.5
set linetype 5 lc rgb '#E69F00' lw 2 pt 13 ps 1.5
set linetype 6 lc rgb '#56B4E9' lw 2 pt 15 ps 1.3
set linetype 7 lc rgb '#000000' lw 2 pt 3 ps 1.3
set linetype 8 lc rgb '#999999' lw 2 pt 1 ps 1.3
set linetype cycle 8
mb_grey = '#888888'

set border 3 lw 1.2
set tics nomirror out scale 0.6
set grid xtics ytics lc rgb '#e4e4e4' lw 1 dt 1
set key noautotitle
set key samplen 2.5 spacing 1.15 box lc rgb '#cccccc' opaque

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
