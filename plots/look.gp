# look.gp — the look of the figures beside it: size in pixels (1280x720 is a
# 16:9 slide, 960x720 a 4:3 one), a font scale and the theme (light or dark).
# membound figures/report write this file from --size, --font-scale and
# --theme; edit it and run render.sh to redraw. A value given with
# gnuplot -e before -c wins.
if (!exists("mb_width")) mb_width = 1280
if (!exists("mb_height")) mb_height = 720
if (!exists("mb_fscale")) mb_fscale = 1.0
if (!exists("mb_theme")) mb_theme = 'light'
