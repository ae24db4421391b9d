/* fig_knee.h — the one-pass -> multi-pass knee figure (fig_knee.c), for the
 * figures table of figures.c. Not a public header. */
#ifndef MEMBOUND_FIG_KNEE_H
#define MEMBOUND_FIG_KNEE_H

#include "render_int.h"
#include "report_int.h"

/* 1 when variant (in s's definitions, else the built-ins) has row operations
 * (a reduction or a library row op): its sizes are shapes. */
int rpt_has_row_ops(const mb_rpt_set *s, const char *variant);

/* The variant the knee figure draws: the first with row operations among
 * the set's 2-D rows, else among the series given (the model figures'),
 * else NULL (no knee figure). */
const char *rpt_knee_variant(const mb_rpt_set *s, const rpt_series *se, int ns);

/* Writes name.dat (and renders plots/knee.gp): the model's traffic (in n)
 * and time of variant's fused and online plans (f32) against the row
 * length cols at a fixed n, rows = n / cols, on h100-sxm, a100-80gb and the
 * CPU (cpu: a spec of kind cpu, or NULL: the CPU of the set's rows, if
 * any), each device's knee (the longest row the fused kernel keeps on chip),
 * and the set's measured 2-D rows of that variant and plan on the CPU as
 * points. n: that of the measured rows (the most common), else 2^24. */
int rpt_fig_knee(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, const char *variant,
                 const mb_device *cpu);

#endif
