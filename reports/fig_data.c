/* fig_data.c — what every figure's data file is made of: gnuplot blocks
 * (block 0 "key value" metadata, the rest one series each), quoted labels,
 * the series a figure draws and its legend keys. Writes no figure: fig_*.c do. */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- data file helpers ------------------------------------------------ */

/* A string for a data file: double-quoted, without characters that gnuplot's
 * enhanced text would read as markup ('_' becomes '-'). */
const char *rpt_dat_str(char *buf, size_t size, const char *s)
{
    size_t j = 0;
    if (size < 3) return "\"\"";
    buf[j++] = '"';
    for (; *s && j + 2 < size; s++) {
        char c = *s;
        if (c == '"') c = '\'';
        else if (c == '_' || c == '@' || c == '&' || c == '~') c = '-';
        else if (c == '\n' || c == '\t') c = ' ';
        buf[j++] = c;
    }
    buf[j++] = '"';
    buf[j] = '\0';
    return buf;
}

void rpt_dat_begin(FILE *fp, const char *what)
{
    fprintf(fp, "# membound figure data: %s\n# block 0: metadata; each later block: one series\n"
                "key value\n", what);
}

void rpt_dat_meta_s(FILE *fp, const char *key, const char *val)
{
    char b[512];
    fprintf(fp, "%s %s\n", key, rpt_dat_str(b, sizeof b, val));
}

/* Numbers in block 0 are read by gnuplot's string-to-number conversion,
 * which does not accept exponents ("3e-06"): plain decimals, 12 digits. */
void rpt_dat_meta_d(FILE *fp, const char *key, double v)
{
    if (!isfinite(v) || v == 0) { fprintf(fp, "%s 0\n", key); return; }
    int mag = (int)floor(log10(fabs(v)));
    int dec = 11 - mag;
    if (dec < 0) dec = 0;
    if (dec > 40) dec = 40;
    fprintf(fp, "%s %.*f\n", key, dec, v);
}

void rpt_dat_block(FILE *fp) { fputs("\n\n", fp); }

/* A number column: NaN stays "NaN" (gnuplot skips it). */
void rpt_dat_col(FILE *fp, double v)
{
    if (isfinite(v)) fprintf(fp, " %.9g", v);
    else fputs(" NaN", fp);
}

/* 1 when variant is the lecture's dtype demo: its series are told apart by dtype. */
int rpt_by_dtype(const char *variant)
{
    const mb_rpt_demo *d = rpt_dtype_demo();
    return d && !strcmp(variant, d->variant);
}

const char *rpt_series_label(char *buf, size_t size, const char *variant, const char *plan,
                             const char *dtype, int show_dtype)
{
    if (rpt_by_dtype(variant))
        snprintf(buf, size, strcmp(plan, "eager") ? "%s %s (%s)" : "%s %s", rpt_display(variant), dtype, plan);
    else if (show_dtype)
        snprintf(buf, size, "%s %s %s", rpt_display(variant), plan, dtype);
    else
        snprintf(buf, size, "%s %s", rpt_display(variant), plan);
    return buf;
}

int rpt_dtype_of(const char *s)
{
    mb_dtype d;
    return mb_dtype_parse(s, &d) == MB_OK ? (int)d : 0;
}

/* "2^{24}" (gnuplot enhanced text) when n is a power of two, else n. */
const char *rpt_pow2_label(char *buf, size_t size, int64_t n)
{
    int lg = 0;
    while (lg < 62 && ((int64_t)1 << lg) < n) lg++;
    if (((int64_t)1 << lg) == n) snprintf(buf, size, "2^{%d}", lg);
    else snprintf(buf, size, "%lld", (long long)n);
    return buf;
}

/* ---- series of a figure ----------------------------------------------- */

/* Lecture demos first (in table order), then other variants in order of
 * appearance; panels numbered in that order, at most MAX_PANELS (the rest
 * share the last). */
static int demo_rank(const char *variant)
{
    const mb_rpt_demo *d = mb_rpt_demo_of(variant);
    return d ? (int)(d - mb_rpt_lecture) : MB_RPT_N_DEMOS;
}

static void order_series(rpt_series *out, int n)
{
    for (int i = 1; i < n; i++) { /* stable by demo rank */
        rpt_series t = out[i];
        int j = i;
        while (j > 0 && demo_rank(out[j - 1].variant) > demo_rank(t.variant)) { out[j] = out[j - 1]; j--; }
        out[j] = t;
    }
    int np = 0;
    for (int i = 0; i < n; i++) {
        out[i].panel = -1;
        for (int k = 0; k < i; k++)
            if (!strcmp(out[k].variant, out[i].variant)) out[i].panel = out[k].panel;
        if (out[i].panel < 0) out[i].panel = np < MAX_PANELS ? np++ : MAX_PANELS - 1;
    }
}

int rpt_push_series(rpt_series *out, int n, int max, const char *v, const char *plan,
                    const char *dtype, int64_t size)
{
    if (n >= max) return n;
    for (int k = 0; k < n; k++)
        if (!strcmp(out[k].variant, v) && !strcmp(out[k].plan, plan) && !strcmp(out[k].dtype, dtype))
            return n;
    snprintf(out[n].variant, sizeof out[n].variant, "%s", v);
    snprintf(out[n].plan, sizeof out[n].plan, "%s", plan);
    snprintf(out[n].dtype, sizeof out[n].dtype, "%s", dtype);
    out[n].n = size;
    return n + 1;
}

/* 1 when plan / dtype pass the figures' --plan / --dtype lists (none: all). */
static int wanted(const mb_rpt_set *defs, const char *plan, mb_dtype dt)
{
    int p_ok = !defs || defs->n_fig_plans == 0, d_ok = !defs || defs->n_fig_dtypes == 0;
    for (int k = 0; !p_ok && k < defs->n_fig_plans; k++) p_ok = !strcmp(plan, mb_plan_name(defs->fig_plans[k]));
    for (int k = 0; !d_ok && k < defs->n_fig_dtypes; k++) d_ok = dt == defs->fig_dtypes[k];
    return p_ok && d_ok;
}

/* A lecture demo's series that pass the lists. */
static int push_demo(const mb_rpt_set *defs, const mb_rpt_demo *d, rpt_series *out, int n, int max)
{
    for (int k = 0; k < d->n_series; k++)
        if (wanted(defs, d->series[k].plan, d->series[k].dtype))
            n = rpt_push_series(out, n, max, d->variant, d->series[k].plan, mb_dtype_name(d->series[k].dtype), d->n);
    return n;
}

/* The model-only series: the lecture's, or every plan of each variant
 * defined on the command line (a lecture variant: its own series), at f32;
 * with figures' --dtype / --plan lists, only those (a variant of the command
 * line at each of its dtypes, with each of its plans it supports). */
int rpt_model_series(const mb_rpt_set *defs, rpt_series *out, int max)
{
    int n = 0, given = 0;
    for (int i = 0; defs && i < defs->n_vars; i++) given |= defs->vars[i].file < 0;
    for (int i = 0; i < MB_RPT_N_DEMOS && !given; i++) n = push_demo(defs, &mb_rpt_lecture[i], out, n, max);
    int nd = defs && defs->n_fig_dtypes ? defs->n_fig_dtypes : 1;
    for (int i = 0; given && i < defs->n_vars; i++) {
        const mb_rpt_vardef *v = &defs->vars[i];
        const mb_rpt_demo *d = mb_rpt_demo_of(v->name);
        if (v->file >= 0) continue;
        if (d && !v->text) {
            n = push_demo(defs, d, out, n, max);
            continue;
        }
        mb_graph *g = NULL;
        mb_err e;
        if (mb_rpt_load_variant(defs, -1, v->name, MB_F32, &g, &e) != MB_OK) continue;
        for (int t = 0; t < nd; t++) {
            mb_dtype dt = defs->n_fig_dtypes ? defs->fig_dtypes[t] : MB_F32;
            int np = defs->n_fig_plans ? defs->n_fig_plans : MB_PLAN_COUNT;
            for (int j = 0; j < np; j++) { /* --plan's order, else the table's */
                mb_plan_kind k = defs->n_fig_plans ? defs->fig_plans[j] : (mb_plan_kind)j;
                if (mb_plan_supported(g, k))
                    n = rpt_push_series(out, n, max, v->name, mb_plan_name(k), mb_dtype_name(dt),
                                    g->default_n ? g->default_n : ((int64_t)1 << 24));
            }
        }
        mb_graph_free(g);
    }
    order_series(out, n);
    return n;
}

/* 1 when a row's variant and plan pass report's --variants / --plan. */
int rpt_row_wanted(const mb_rpt_set *s, const mb_rpt_row *r)
{
    int v_ok = s->n_fig_variants == 0, p_ok = s->n_fig_plans == 0;
    for (int k = 0; !v_ok && k < s->n_fig_variants; k++) v_ok = !strcmp(r->variant, s->fig_variants[k]);
    for (int k = 0; !p_ok && k < s->n_fig_plans; k++) p_ok = !strcmp(r->plan, mb_plan_name(s->fig_plans[k]));
    return v_ok && p_ok;
}

/* The series of group gi's rows (gi < 0: every row of device devi), each
 * with its lecture size when measured there, else its largest size. */
int rpt_row_series(const mb_rpt_set *s, int gi, int devi, rpt_series *out, int max)
{
    /* one pass: each row's series found by its strings' pointers (interned),
     * the last series found tried first (rows come in runs) */
    int n = 0, last = 0;
    const char *seen[MAX_SERIES][3];
    int64_t best[MAX_SERIES], lect[MAX_SERIES];
    if (max > MAX_SERIES) max = MAX_SERIES;
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (gi >= 0 ? r->group != gi : r->dev != devi) continue;
        if (!rpt_row_wanted(s, r)) continue;
#define SAME(k) (seen[k][0] == r->variant && seen[k][1] == r->plan && seen[k][2] == r->dtype)
        int k = last;
        if (!(k < n && SAME(k)))
            for (k = 0; k < n && !SAME(k); k++) {}
#undef SAME
        if (k == n) {
            int was = n;
            n = rpt_push_series(out, n, max, r->variant, r->plan, r->dtype, 0);
            if (n == was) continue; /* full */
            seen[k][0] = r->variant;
            seen[k][1] = r->plan;
            seen[k][2] = r->dtype;
            const mb_rpt_demo *d = mb_rpt_demo_of(r->variant);
            best[k] = 0;
            lect[k] = d ? d->n : -1;
        }
        last = k;
        if (r->verified && best[k] != lect[k] && (r->n == lect[k] || r->n > best[k])) best[k] = r->n;
    }
    for (int k = 0; k < n; k++) out[k].n = best[k] > 0 ? best[k] : lect[k] > 0 ? lect[k] : ((int64_t)1 << 24);
    order_series(out, n);
    return n;
}

int rpt_collect_series(const mb_rpt_set *s, int gi, rpt_series *out, int max)
{
    int n = gi < 0 ? rpt_model_series(s, out, max) : rpt_row_series(s, gi, -1, out, max);
    for (int k = 0; k < n; k++) {
        out[k].iv = rpt_interned(s, out[k].variant);
        out[k].ip = rpt_interned(s, out[k].plan);
        out[k].idt = rpt_interned(s, out[k].dtype);
    }
    return n;
}

/* 1 when any series is one of the lecture's demos. */
int rpt_any_lecture(const rpt_series *se, int ns)
{
    for (int k = 0; k < ns; k++)
        if (mb_rpt_demo_of(se[k].variant)) return 1;
    return 0;
}

/* 1 when group gi of s has a verified row (with counted DRAM bytes when
 * need_dram); 0 for a model-only figure (gi < 0). */
int rpt_group_has_rows(const mb_rpt_set *s, int gi, int need_dram)
{
    for (int i = 0; gi >= 0 && i < s->n_rows; i++)
        if (s->rows[i].group == gi && s->rows[i].verified && (!need_dram || s->rows[i].has_dram))
            return 1;
    return 0;
}

/* 1-based index of s in list (added when new; the last when full). */
static int key_index(char (*list)[MB_NAME_MAX], int *n, int max, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(list[i], s)) return i + 1;
    if (*n >= max) return max;
    snprintf(list[*n], MB_NAME_MAX, "%s", s);
    return ++*n;
}

void rpt_keys_of(rpt_fig_keys *k, const char *variant, const char *plan, const char *dtype, int *vi,
                 int *pi)
{
    char sh[MB_NAME_MAX];
    snprintf(sh, sizeof sh, strcmp(dtype, "f32") ? "%s %s" : "%s", plan, dtype);
    *vi = key_index(k->var, &k->nv, 12, variant);
    *pi = key_index(k->shape, &k->nsh, 10, sh);
}

void rpt_keys_meta(FILE *fp, const rpt_fig_keys *k)
{
    char key[32];
    rpt_dat_meta_d(fp, "n_variants", k->nv);
    rpt_dat_meta_d(fp, "n_shapes", k->nsh);
    for (int i = 0; i < k->nv; i++) {
        snprintf(key, sizeof key, "variant%d", i + 1);
        rpt_dat_meta_s(fp, key, k->var[i]);
    }
    for (int i = 0; i < k->nsh; i++) {
        snprintf(key, sizeof key, "shape%d", i + 1);
        rpt_dat_meta_s(fp, key, k->shape[i]);
    }
}
