/* render_int.h — shared by the figure files (fig_int.h), render.c and
 * gnuplot.c only: a figure set being written (data files through mb_outfile,
 * scripts copied, gnuplot run). */
#ifndef MEMBOUND_RENDER_INT_H
#define MEMBOUND_RENDER_INT_H

#include "report.h"
#include "mb_child.h"

#include <stdio.h>

typedef struct rpt_fig_ctx {
    char dir[1024];
    unsigned formats;
    int render;
    mb_rpt_figures *out;
    mb_err *err;
    const char *plots;          /* scripts' directory, NULL when not found */
    char gnuplot[1024];
    int have_gnuplot;
    char copied[16][32];        /* scripts already copied */
    int n_copied;
    char cmds[MB_RPT_MAX_FIGURES][160]; /* "bytes.gp bytes" for render.sh */
    int n_cmds;
    int failed;                 /* a rendering failed (message in out->render_error) */
    int hung;                   /* gnuplot timed out or was interrupted: no more runs */
    mb_rpt_look look;           /* written as look.gp beside style.gp */
} rpt_fig_ctx;

/* look: the set's (NULL: the defaults). */
int rpt_fig_begin(rpt_fig_ctx *fc, const char *dir, unsigned formats, int render,
                  const mb_rpt_look *look, mb_rpt_figures *out, mb_err *err);
/* Opens dir/name.dat; *fp is the stream to write. */
int rpt_fig_open(rpt_fig_ctx *fc, const char *name, mb_outfile *of, FILE **fp);
/* Commits the data file, copies plots/script.gp beside it and renders it. */
int rpt_fig_finish(rpt_fig_ctx *fc, mb_outfile *of, const char *script, const char *name,
                   const char *title);
/* Writes render.sh; returns rc, or MB_ERUN when figures could not be drawn. */
int rpt_fig_end(rpt_fig_ctx *fc, int rc);

/* gnuplot -c script data tmp (gnuplot: as mb_rpt_find_gnuplot found it) in
 * its own process group under mb_rpt_gnuplot_timeout_s's deadline; its
 * output into log with its errors (log NULL: none kept, its errors to our
 * standard error). tmp and log are removed when it is killed. res says how
 * it ended; MB_ERUN only when it could not be waited for (mb_child_run). */
int rpt_gnuplot_run(const char *gnuplot, const char *script, const char *data, const char *tmp,
                    const char *log, mb_child_result *res, mb_err *err);
/* Draws figure (its extension picks png, svg or pdf) from dat, a data file
 * its caller wrote, with plots/STEM.gp, under a temporary name beside it
 * renamed when gnuplot succeeds (gnuplot.c). MB_ERUN naming dat when the
 * scripts or gnuplot are not found or the drawing fails. */
int rpt_draw_given(const char *stem, const char *dat, const char *figure, mb_err *err);

#endif
