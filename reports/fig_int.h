/* fig_int.h — shared by the figure files (figures.c's table and fig_*.c) and
 * no other: a figure's data file, the series it draws, its legend keys, and
 * each figure's data writer. Drawing is render_int.h's (render.c). */
#ifndef MEMBOUND_FIG_INT_H
#define MEMBOUND_FIG_INT_H

#include "render_int.h"
#include "report_int.h"

#include <stdio.h>

/* ---- a data file (fig_data.c) ----------------------------------------- */
/* gnuplot blocks: block 0 holds "key value" metadata, the rest one series
 * each; plots/NAME.gp reads them. */

/* s double-quoted for a data file, without what gnuplot's enhanced text
 * reads as markup ('_' becomes '-'), into buf; returns buf. */
const char *rpt_dat_str(char *buf, size_t size, const char *s);
/* Opens block 0: what the file holds, then its "key value" lines. */
void rpt_dat_begin(FILE *fp, const char *what);
/* A "key value" line of block 0: a string (quoted as rpt_dat_str does), a
 * number (plain decimals: gnuplot reads no exponent there). */
void rpt_dat_meta_s(FILE *fp, const char *key, const char *val);
void rpt_dat_meta_d(FILE *fp, const char *key, double v);
/* Ends a block: the next series is gnuplot's next index. */
void rpt_dat_block(FILE *fp);
/* A number column: NaN stays "NaN" (gnuplot skips it). */
void rpt_dat_col(FILE *fp, double v);

/* 1 when variant is the lecture's dtype demo: its series are told apart by dtype. */
int rpt_by_dtype(const char *variant);
/* A series' name in a legend: variant and plan (the dtype demo's: its
 * dtype), with the dtype when show_dtype; into buf, returns buf. */
const char *rpt_series_label(char *buf, size_t size, const char *variant, const char *plan,
                             const char *dtype, int show_dtype);
/* The mb_dtype s names, 0 when none. */
int rpt_dtype_of(const char *s);
/* "2^{24}" (gnuplot enhanced text) when n is a power of two, else n. */
const char *rpt_pow2_label(char *buf, size_t size, int64_t n);

/* ---- the series of a figure (fig_data.c) -------------------------------- */

#define MAX_SERIES 48
#define MAX_PANELS 6

/* Adds variant v, plan and dtype at size to out[0..n) unless it is there or
 * out holds max; returns the new count. */
int rpt_push_series(rpt_series *out, int n, int max, const char *v, const char *plan,
                    const char *dtype, int64_t size);
/* 1 when a row's variant and plan pass report's --variants / --plan. */
int rpt_row_wanted(const mb_rpt_set *s, const mb_rpt_row *r);
/* The series of group gi's rows (gi < 0: every row of device devi), each
 * with its lecture size when measured there, else its largest size; in
 * panel order (lecture demos first, at most MAX_PANELS panels). */
int rpt_row_series(const mb_rpt_set *s, int gi, int devi, rpt_series *out, int max);
/* The series of group gi (gi < 0: the model's, rpt_model_series), each
 * with the set's interned strings for rpt_row_is. */
int rpt_collect_series(const mb_rpt_set *s, int gi, rpt_series *out, int max);
/* 1 when any series is one of the lecture's demos. */
int rpt_any_lecture(const rpt_series *se, int ns);
/* 1 when group gi of s has a verified row (with counted DRAM bytes when
 * need_dram); 0 for a model-only figure (gi < 0). */
int rpt_group_has_rows(const mb_rpt_set *s, int gi, int need_dram);

/* 1 when row r of group gi is of series se. By pointer: rows hold interned
 * strings, and rpt_collect_series gives each series the set's pointers
 * (strcmp here was a third of report's time at 10^6 rows); inline, as it
 * runs for every row of every series. */
static inline int rpt_row_is(const mb_rpt_row *r, int gi, const rpt_series *se)
{
    return r->group == gi && r->variant == se->iv && r->plan == se->ip && r->dtype == se->idt;
}

/* ---- legend keys (fig_data.c) ------------------------------------------- */

/* A figure's legend by colour and by marker: each variant one colour, each
 * plan (with its dtype when not f32) one marker, so the legend names the
 * variants and the plans once each instead of every pair. */
typedef struct rpt_fig_keys {
    char var[12][MB_NAME_MAX];
    char shape[10][MB_NAME_MAX];
    int nv, nsh;
} rpt_fig_keys;

/* variant's colour (*vi) and plan's marker (*pi), 1-based, each added when new. */
void rpt_keys_of(rpt_fig_keys *k, const char *variant, const char *plan, const char *dtype, int *vi,
                 int *pi);
/* The keys as block 0's lines: n_variants, n_shapes, variantK, shapeK. */
void rpt_keys_meta(FILE *fp, const rpt_fig_keys *k);

/* ---- the figures' data writers: each writes name.dat and has
 * plots/STEM.gp drawn (rpt_fig_finish); figures.c's table calls them ---- */

/* Bytes per element of each series (the lecture's count, the model's DRAM
 * bytes, the measured counters), and the recomputation demo's plans (fig_traffic.c). */
int rpt_fig_bytes(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                  const mb_device *d);
int rpt_fig_recompute(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                      const mb_device *d);
/* Time against n, and group gi's fit residuals (fig_time.c). */
int rpt_fig_time(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                 const mb_device *d);
int rpt_fig_residuals(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi);
/* The lecture's claims as ratios against n (fig_speedup.c): wanted when
 * group gi measured both series of a claim at one size at least. */
int rpt_speedup_wanted(const mb_rpt_set *s, int gi);
int rpt_fig_speedup(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi, const mb_device *d);
/* The roofline of device devi with its measured points (devi < 0: the
 * model's) (fig_roofline.c). */
int rpt_fig_roofline(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int devi,
                     const mb_device *d);
/* The what-if of the series se across devs (n_devs 0: every GPU of the
 * table, then the set's own devices that are not in it) (fig_whatif.c). */
int rpt_fig_whatif(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, const rpt_series *se,
                   int ns, const mb_device *devs, int n_devs);

/* The model's error across devices: every verified row's measured / model
 * time, a line per device x backend, coloured by variant, with each line's
 * p10, median and p90 (fig_error.c). */
int rpt_fig_model_error(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s);

/* ---- the knee figure (fig_knee.c) ----------------------------------------- */

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
