/* figures.c — writes the data file of every figure (gnuplot blocks: block 0
 * holds "key value" metadata, the rest one series each) and asks render.c
 * to copy its script and draw it. Does not draw anything itself: the look
 * of every figure lives in plots/NAME.gp. */
#include "report_int.h"
#include "render_int.h"
#include "fig_knee.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- data file helpers ------------------------------------------------ */

/* A string for a data file: double-quoted, without characters that gnuplot's
 * enhanced text would read as markup ('_' becomes '-'). */
static const char *q(char *buf, size_t size, const char *s)
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

static void meta_begin(FILE *fp, const char *what)
{
    fprintf(fp, "# membound figure data: %s\n# block 0: metadata; each later block: one series\n"
                "key value\n", what);
}

static void meta_s(FILE *fp, const char *key, const char *val)
{
    char b[512];
    fprintf(fp, "%s %s\n", key, q(b, sizeof b, val));
}

/* Numbers in block 0 are read by gnuplot's string-to-number conversion,
 * which does not accept exponents ("3e-06"): plain decimals, 12 digits. */
static void meta_d(FILE *fp, const char *key, double v)
{
    if (!isfinite(v) || v == 0) { fprintf(fp, "%s 0\n", key); return; }
    int mag = (int)floor(log10(fabs(v)));
    int dec = 11 - mag;
    if (dec < 0) dec = 0;
    if (dec > 40) dec = 40;
    fprintf(fp, "%s %.*f\n", key, dec, v);
}

static void block(FILE *fp) { fputs("\n\n", fp); }

/* A number column: NaN stays "NaN" (gnuplot skips it). */
static void col(FILE *fp, double v)
{
    if (isfinite(v)) fprintf(fp, " %.9g", v);
    else fputs(" NaN", fp);
}

/* 1 when variant is the lecture's dtype demo: its series are told apart by dtype. */
static int by_dtype(const char *variant)
{
    const mb_rpt_demo *d = rpt_dtype_demo();
    return d && !strcmp(variant, d->variant);
}

static const char *series_label(char *buf, size_t size, const char *variant, const char *plan,
                                const char *dtype, int show_dtype)
{
    if (by_dtype(variant))
        snprintf(buf, size, strcmp(plan, "eager") ? "%s %s (%s)" : "%s %s", rpt_display(variant), dtype, plan);
    else if (show_dtype)
        snprintf(buf, size, "%s %s %s", rpt_display(variant), plan, dtype);
    else
        snprintf(buf, size, "%s %s", rpt_display(variant), plan);
    return buf;
}

static int dtype_of(const char *s)
{
    mb_dtype d;
    return mb_dtype_parse(s, &d) == MB_OK ? (int)d : 0;
}

/* "2^{24}" (gnuplot enhanced text) when n is a power of two, else n. */
static const char *pow2_label(char *buf, size_t size, int64_t n)
{
    int lg = 0;
    while (lg < 62 && ((int64_t)1 << lg) < n) lg++;
    if (((int64_t)1 << lg) == n) snprintf(buf, size, "2^{%d}", lg);
    else snprintf(buf, size, "%lld", (long long)n);
    return buf;
}

/* ---- series of a figure ----------------------------------------------- */

#define MAX_SERIES 48
#define MAX_PANELS 6

typedef rpt_series series;

/* Lecture demos first (in table order), then other variants in order of
 * appearance; panels numbered in that order, at most MAX_PANELS (the rest
 * share the last). */
static int demo_rank(const char *variant)
{
    const mb_rpt_demo *d = mb_rpt_demo_of(variant);
    return d ? (int)(d - mb_rpt_lecture) : MB_RPT_N_DEMOS;
}

static void order_series(series *out, int n)
{
    for (int i = 1; i < n; i++) { /* stable by demo rank */
        series t = out[i];
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

static int push_series(series *out, int n, int max, const char *v, const char *plan,
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
static int push_demo(const mb_rpt_set *defs, const mb_rpt_demo *d, series *out, int n, int max)
{
    for (int k = 0; k < d->n_series; k++)
        if (wanted(defs, d->series[k].plan, d->series[k].dtype))
            n = push_series(out, n, max, d->variant, d->series[k].plan, mb_dtype_name(d->series[k].dtype), d->n);
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
                    n = push_series(out, n, max, v->name, mb_plan_name(k), mb_dtype_name(dt),
                                    g->default_n ? g->default_n : ((int64_t)1 << 24));
            }
        }
        mb_graph_free(g);
    }
    order_series(out, n);
    return n;
}

/* 1 when a row's variant and plan pass report's --variants / --plan. */
static int row_wanted(const mb_rpt_set *s, const mb_rpt_row *r)
{
    int v_ok = s->n_fig_variants == 0, p_ok = s->n_fig_plans == 0;
    for (int k = 0; !v_ok && k < s->n_fig_variants; k++) v_ok = !strcmp(r->variant, s->fig_variants[k]);
    for (int k = 0; !p_ok && k < s->n_fig_plans; k++) p_ok = !strcmp(r->plan, mb_plan_name(s->fig_plans[k]));
    return v_ok && p_ok;
}

/* The series of group gi's rows (gi < 0: every row of device devi), each
 * with its lecture size when measured there, else its largest size. */
static int row_series(const mb_rpt_set *s, int gi, int devi, series *out, int max)
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
        if (!row_wanted(s, r)) continue;
#define SAME(k) (seen[k][0] == r->variant && seen[k][1] == r->plan && seen[k][2] == r->dtype)
        int k = last;
        if (!(k < n && SAME(k)))
            for (k = 0; k < n && !SAME(k); k++) {}
#undef SAME
        if (k == n) {
            int was = n;
            n = push_series(out, n, max, r->variant, r->plan, r->dtype, 0);
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

static int collect_series(const mb_rpt_set *s, int gi, series *out, int max)
{
    int n = gi < 0 ? rpt_model_series(s, out, max) : row_series(s, gi, -1, out, max);
    for (int k = 0; k < n; k++) {
        out[k].iv = rpt_interned(s, out[k].variant);
        out[k].ip = rpt_interned(s, out[k].plan);
        out[k].idt = rpt_interned(s, out[k].dtype);
    }
    return n;
}

/* 1 when any series is one of the lecture's demos. */
static int any_lecture(const series *se, int ns)
{
    for (int k = 0; k < ns; k++)
        if (mb_rpt_demo_of(se[k].variant)) return 1;
    return 0;
}

/* By pointer: rows hold interned strings, and collect_series gives each
 * series the set's pointers (strcmp here was a third of report's time at
 * 10^6 rows). */
static int row_is(const mb_rpt_row *r, int gi, const series *se)
{
    return r->group == gi && r->variant == se->iv && r->plan == se->ip && r->dtype == se->idt;
}

/* 1 when group gi of s has a verified row (with counted DRAM bytes when
 * need_dram); 0 for a model-only figure (gi < 0). */
static int group_has_rows(const mb_rpt_set *s, int gi, int need_dram)
{
    for (int i = 0; gi >= 0 && i < s->n_rows; i++)
        if (s->rows[i].group == gi && s->rows[i].verified && (!need_dram || s->rows[i].has_dram))
            return 1;
    return 0;
}

/* A figure's legend by colour and by marker: each variant one colour, each
 * plan (with its dtype when not f32) one marker, so the legend names the
 * variants and the plans once each instead of every pair. */
typedef struct fig_keys {
    char var[12][MB_NAME_MAX];
    char shape[10][MB_NAME_MAX];
    int nv, nsh;
} fig_keys;

/* 1-based index of s in list (added when new; the last when full). */
static int key_index(char (*list)[MB_NAME_MAX], int *n, int max, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(list[i], s)) return i + 1;
    if (*n >= max) return max;
    snprintf(list[*n], MB_NAME_MAX, "%s", s);
    return ++*n;
}

static void keys_of(fig_keys *k, const char *variant, const char *plan, const char *dtype, int *vi,
                    int *pi)
{
    char sh[MB_NAME_MAX];
    snprintf(sh, sizeof sh, strcmp(dtype, "f32") ? "%s %s" : "%s", plan, dtype);
    *vi = key_index(k->var, &k->nv, 12, variant);
    *pi = key_index(k->shape, &k->nsh, 10, sh);
}

static void keys_meta(FILE *fp, const fig_keys *k)
{
    char key[32];
    meta_d(fp, "n_variants", k->nv);
    meta_d(fp, "n_shapes", k->nsh);
    for (int i = 0; i < k->nv; i++) {
        snprintf(key, sizeof key, "variant%d", i + 1);
        meta_s(fp, key, k->var[i]);
    }
    for (int i = 0; i < k->nsh; i++) {
        snprintf(key, sizeof key, "shape%d", i + 1);
        meta_s(fp, key, k->shape[i]);
    }
}

/* ---- bytes per element -------------------------------------------------- */

static int fig_bytes(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                     const mb_device *d)
{
    series se[MAX_SERIES];
    int ns = collect_series(s, gi, se, MAX_SERIES);
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    int measured = group_has_rows(s, gi, 1);
    int lecture = any_lecture(se, ns);
    char title[256];
    snprintf(title, sizeof title, "Bytes moved per element: model vs %s",
             measured ? "measured (DRAM counters)" : lecture ? "the lecture's count" : "the traffic rule");
    meta_begin(fp, "bytes per element");
    meta_s(fp, "title", title);
    meta_s(fp, "device", d->label);
    meta_d(fp, "measured", measured);
    meta_s(fp, "measured_title", measured ? "measured DRAM (counters)"
                                 : gi >= 0 ? "measured DRAM: no counters on this backend" : "");
    meta_s(fp, "count_title", lecture ? "lecture's count (traffic rule)" : "traffic-rule count");
    block(fp);
    char b1[160], b2[200], b3[64], nb[32];
    fputs("# label count_bytes_per_elem model_dram measured count_label n\n", fp);
    for (int k = 0; k < ns; k++) {
        mb_dtype dt = (mb_dtype)dtype_of(se[k].dtype);
        int64_t n = se[k].n;
        const mb_rpt_row *best = NULL;
        for (int i = 0; gi >= 0 && i < s->n_rows; i++)
            if (row_is(&s->rows[i], gi, &se[k]) && s->rows[i].verified && s->rows[i].n == n)
                best = &s->rows[i];
        mb_estimate e;
        mb_err err;
        if (rpt_estimate(s, se[k].variant, se[k].plan, dt, n, d, &e, NULL, &err) != MB_OK) continue;
        double lect = (double)(e.total.read_bytes + e.total.write_bytes) / (double)n;
        double dram = (double)(e.total.dram_read_bytes + e.total.dram_write_bytes) / (double)n;
        double meas = NAN;
        if (best && best->has_dram)
            meas = (double)(best->dram_read_bytes + best->dram_write_bytes) / (double)n;
        mb_estimate_free(&e);
        /* the count in elements ("11n") and what it is in bytes on this axis */
        const char *cnt = rpt_lecture_count(se[k].variant, se[k].plan, dt);
        char cbuf[32], clab[64];
        if (!cnt) {
            snprintf(cbuf, sizeof cbuf, "%.3gn", lect / (double)mb_dtype_bytes(dt));
            cnt = cbuf;
        }
        snprintf(clab, sizeof clab, "%s = %.3g B", cnt, lect);
        /* tick label on three lines: variant, plan (dtype for the dtype demo), size */
        snprintf(b1, sizeof b1, "%s\\n%s", rpt_display(se[k].variant),
                 by_dtype(se[k].variant) ? se[k].dtype : se[k].plan);
        if (!by_dtype(se[k].variant) && dt != MB_F32) {
            size_t l = strlen(b1);
            snprintf(b1 + l, sizeof b1 - l, " %s", se[k].dtype);
        }
        char lab[200];
        snprintf(lab, sizeof lab, "%s\\nn = %s", b1, pow2_label(nb, sizeof nb, n));
        fprintf(fp, "%s", q(b2, sizeof b2, lab));
        col(fp, lect);
        col(fp, dram);
        col(fp, meas);
        fprintf(fp, " %s %lld\n", q(b3, sizeof b3, clab), (long long)n);
    }
    return rpt_fig_finish(fc, &of, "bytes", name, title);
}

/* ---- time against n ----------------------------------------------------- */

/* A row of a series and where it is in the set (file order breaks ties). */
typedef struct size_ref {
    int64_t n;
    int i;
} size_ref;

static int by_n_then_index(const void *a, const void *b)
{
    const size_ref *x = a, *y = b;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* One series' block of the time-against-n data: every power of two
 * 2^10..2^28 and every measured size, the model at each (its plan built
 * once) and the last verified row of that size. Sorted once: n log n in
 * the series' rows (was a scan of every row for each of 256 sizes, and
 * sizes past the 256th dropped). MB_ERUN when out of memory. */
/* A series' name in time against n: in a panel of its own variant (the
 * panel's title names it) its plan, or its dtype in the dtype demo's. */
static void time_label(char *b1, size_t size, const series *se, int shared)
{
    if (shared)
        series_label(b1, size, se->variant, se->plan, se->dtype, strcmp(se->dtype, "f32") != 0);
    else if (by_dtype(se->variant))
        snprintf(b1, size, strcmp(se->plan, "eager") ? "%s (%s)" : "%s", se->dtype, se->plan);
    else
        snprintf(b1, size, strcmp(se->dtype, "f32") ? "%s %s" : "%s", se->plan, se->dtype);
}

static int time_series(FILE *fp, const mb_rpt_set *s, int gi, const series *se, const mb_device *d,
                       int shared)
{
    mb_dtype dt = (mb_dtype)dtype_of(se->dtype);
    size_t m = 19, cap = 19 + 64;
    size_ref *sz = malloc(cap * sizeof *sz);
    if (!sz) return MB_ERUN;
    for (int lg = 10; lg <= 28; lg++) sz[lg - 10] = (size_ref){(int64_t)1 << lg, -1};
    for (int i = 0; gi >= 0 && i < s->n_rows; i++) {
        if (!row_is(&s->rows[i], gi, se)) continue;
        if (m == cap) {
            void *p = realloc(sz, 2 * cap * sizeof *sz);
            if (!p) { free(sz); return MB_ERUN; }
            sz = p;
            cap *= 2;
        }
        sz[m++] = (size_ref){s->rows[i].n, i};
    }
    qsort(sz, m, sizeof *sz, by_n_then_index);
    block(fp);
    char b1[160], b2[200];
    time_label(b1, sizeof b1, se, shared);
    fprintf(fp, "%s model_s median_s min_s p90_s panel\n", q(b2, sizeof b2, b1));
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_plan_kind pk;
    mb_err err;
    if (mb_rpt_load_variant(s, -1, se->variant, dt, &g, &err) != MB_OK ||
        mb_plan_parse(se->plan, &pk) != MB_OK || mb_plan_build(g, pk, &p, &err) != MB_OK)
        p = NULL;
    for (size_t a = 0; a < m;) {
        size_t b = a;
        const mb_rpt_row *r = NULL; /* the last verified row of this size */
        for (; b < m && sz[b].n == sz[a].n; b++)
            if (sz[b].i >= 0 && s->rows[sz[b].i].verified) r = &s->rows[sz[b].i];
        mb_estimate e;
        double model = NAN;
        if (p && mb_estimate_plan(p, sz[a].n, d, &e, &err) == MB_OK) {
            model = e.total.time_s;
            mb_estimate_free(&e);
        }
        fprintf(fp, "%lld", (long long)sz[a].n);
        col(fp, model);
        col(fp, r ? r->time_s_median : NAN);
        col(fp, r ? (isfinite(r->time_s_min) ? r->time_s_min : r->time_s_median) : NAN);
        col(fp, r ? (isfinite(r->time_s_p90) ? r->time_s_p90 : r->time_s_median) : NAN);
        fprintf(fp, " %d\n", se->panel);
        a = b;
    }
    mb_plan_free(p);
    mb_graph_free(g);
    free(sz);
    return MB_OK;
}

static int fig_time(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                    const mb_device *d)
{
    series se[MAX_SERIES];
    int ns = collect_series(s, gi, se, MAX_SERIES);
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    int any_meas = group_has_rows(s, gi, 0);
    char title[256];
    snprintf(title, sizeof title, "Time against n: model%s", any_meas ? " (lines) vs measured (points)" : "");
    meta_begin(fp, "time against n");
    meta_s(fp, "title", title);
    meta_s(fp, "device", d->label);
    double cache_bytes = d->cache_mb * 1048576.0;
    meta_d(fp, "cache_bytes", cache_bytes);
    meta_d(fp, "knee_n", cache_bytes / 4.0); /* one f32 tensor fills the cache */
    meta_d(fp, "cache_mib", d->cache_mb);
    meta_d(fp, "launch_s", d->launch_overhead_us * 1e-6);
    meta_d(fp, "measured", any_meas);
    int np = 0, shared_panel[MAX_PANELS] = {0};
    char key[32], ptitle[160];
    for (int k = 0; k < ns; k++) {
        if (se[k].panel < np) continue;
        const mb_rpt_demo *dm = mb_rpt_demo_of(se[k].variant);
        int shared = 0; /* the last panel holds every variant beyond MAX_PANELS */
        for (int j = k + 1; j < ns; j++)
            shared |= se[j].panel == se[k].panel && strcmp(se[j].variant, se[k].variant);
        snprintf(ptitle, sizeof ptitle, "%s",
                 shared ? "other variants" : dm ? dm->title : se[k].variant);
        shared_panel[np] = shared;
        snprintf(key, sizeof key, "panel%d", np++);
        meta_s(fp, key, ptitle);
    }
    meta_d(fp, "panels", np);
    /* one legend for every panel: a series' colour and dash by its name
     * (its plan, or dtype), the same in each panel */
    fig_keys names;
    memset(&names, 0, sizeof names);
    for (int j = 0; j < MB_PLAN_COUNT; j++) /* the plans first, in the table's order */
        for (int k = 0; k < ns; k++) {
            time_label(ptitle, sizeof ptitle, &se[k], shared_panel[se[k].panel]);
            int vi, pi;
            if (!strcmp(ptitle, mb_plan_name((mb_plan_kind)j))) keys_of(&names, ptitle, "", "f32", &vi, &pi);
        }
    for (int k = 0; k < ns; k++) {
        time_label(ptitle, sizeof ptitle, &se[k], shared_panel[se[k].panel]);
        int vi, pi;
        keys_of(&names, ptitle, "", "f32", &vi, &pi);
        snprintf(key, sizeof key, "cat%d", k + 1);
        meta_d(fp, key, vi);
    }
    meta_d(fp, "n_cats", names.nv);
    for (int i = 0; i < names.nv; i++) {
        snprintf(key, sizeof key, "catname%d", i + 1);
        meta_s(fp, key, names.var[i]);
    }
    rc = MB_OK;
    for (int k = 0; k < ns && !rc; k++) rc = time_series(fp, s, gi, &se[k], d, shared_panel[se[k].panel]);
    if (rc) {
        mb_outfile_abort(&of);
        return mb_err_set(fc->err, rc, "out of memory");
    }
    return rpt_fig_finish(fc, &of, "time_vs_n", name, title);
}

/* ---- roofline ----------------------------------------------------------- */

typedef struct roof_op {
    const char *label, *variant, *plan;
    mb_dtype dt;
} roof_op;

/* The lecture's operations at 2^24; the copy demo does no arithmetic (no
 * place on a log axis) and stands here as a copy with one op per element. */
static const roof_op roof_ops[] = {
    {"copy (as ReLU)", "expr:y = relu(x)", "eager", MB_F32},
    {"copy (as ReLU)", "expr:y = relu(x)", "eager", MB_BF16},
    {NULL, "sin2_plus_cos2", "eager", MB_F32},
    {NULL, "sin2_plus_cos2", "fused", MB_F32},
    {NULL, "gelu_tanh", "eager", MB_F32},
    {NULL, "gelu_tanh", "fused", MB_F32},
};

static int roof_measured(const mb_rpt_set *s, int devi, FILE *fp, int write, fig_keys *k);

/* The model's points of the roofline (block 1): label, flop/byte, TFLOP/s,
 * colour, marker. */
static void roof_model_points(FILE *fp, const mb_rpt_set *s, const series *se, int ns, int lecture,
                              const mb_device *d, fig_keys *k)
{
    char b[200], lab[160];
    int nops = lecture ? (int)(sizeof roof_ops / sizeof roof_ops[0]) : 0;
    for (int i = 0; i < nops + ns; i++) {
        const roof_op *o = i < nops ? &roof_ops[i] : NULL;
        const series *x = o ? NULL : &se[i - nops];
        if (x && mb_rpt_demo_of(x->variant)) continue;
        mb_dtype dt = o ? o->dt : (mb_dtype)dtype_of(x->dtype);
        const char *var = o ? (o->label ? o->label : rpt_display(o->variant)) : rpt_display(x->variant);
        const char *plan = o ? o->plan : x->plan;
        snprintf(lab, sizeof lab, "%s %s %s", var, plan, mb_dtype_name(dt));
        mb_estimate e;
        mb_err err;
        int64_t n = o ? (int64_t)1 << 24 : x->n;
        if (rpt_estimate(s, o ? o->variant : x->variant, plan, dt, n, d, &e, NULL, &err) != MB_OK)
            continue;
        double ops = e.total.flops + e.total.sfu_ops;
        double bytes = (double)(e.total.dram_read_bytes + e.total.dram_write_bytes);
        if (bytes <= 0) bytes = (double)(e.total.read_bytes + e.total.write_bytes);
        if (ops > 0 && bytes > 0) { /* a copy does no arithmetic: not on a log axis */
            int vi, pi;
            keys_of(k, var, plan, mb_dtype_name(dt), &vi, &pi);
            fprintf(fp, "%s", q(b, sizeof b, lab));
            col(fp, ops / bytes);
            col(fp, ops / e.total.time_s / 1e12);
            fprintf(fp, " %d %d\n", vi, pi);
        }
        mb_estimate_free(&e);
    }
}

static int fig_roofline(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int devi,
                        const mb_device *d)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    static series se[MAX_SERIES];
    int ns = devi < 0 ? rpt_model_series(s, se, MAX_SERIES) : row_series(s, -1, devi, se, MAX_SERIES);
    int lecture = any_lecture(se, ns);
    const char *bws;
    double bw = mb_device_bandwidth_gbs(d, &bws);
    char title[256];
    snprintf(title, sizeof title, "Roofline of %s with %s", d->label,
             lecture ? "the lecture's operations" : "the modelled operations");
    /* the points first (in memory): the legend's keys go in block 0 */
    char *pts = NULL, *mpts = NULL;
    size_t npts = 0, nmpts = 0;
    FILE *pf = open_memstream(&pts, &npts), *mf = open_memstream(&mpts, &nmpts);
    if (!pf || !mf) {
        if (pf) fclose(pf);
        if (mf) fclose(mf);
        free(pts);
        free(mpts);
        mb_outfile_abort(&of);
        return mb_err_set(fc->err, MB_ERUN, "out of memory");
    }
    fig_keys k;
    memset(&k, 0, sizeof k);
    roof_model_points(pf, s, se, ns, lecture, d, &k);
    int nmeas = roof_measured(s, devi, mf, 1, &k);
    fclose(pf);
    fclose(mf);
    meta_begin(fp, "roofline");
    meta_s(fp, "title", title);
    meta_s(fp, "device", d->label);
    meta_d(fp, "bw_gbs", bw);
    meta_s(fp, "bw_source", bws);
    meta_d(fp, "fp32_tflops", d->fp32_tflops);
    meta_d(fp, "bf16_tflops", d->bf16_tflops);
    meta_d(fp, "measured_points", nmeas);
    keys_meta(fp, &k);
    block(fp);
    fputs("# label intensity_flop_per_byte tflops colour marker\n", fp);
    fputs(npts ? pts : "\"none\" NaN NaN 1 1\n", fp);
    block(fp);
    fputs("# label intensity_flop_per_byte tflops colour marker\n", fp);
    fputs(nmeas ? mpts : "\"none\" NaN NaN 1 1\n", fp);
    free(pts);
    free(mpts);
    return rpt_fig_finish(fc, &of, "roofline", name, title);
}

/* Writes (when write is set) and counts the measured roofline points of
 * device devi: each series at its largest verified n. */
typedef struct roof_pt {
    char label[200];
    double ai, tflops;
    int vi, pi;
} roof_pt;

static int by_ai(const void *a, const void *b)
{
    double x = ((const roof_pt *)a)->ai, y = ((const roof_pt *)b)->ai;
    return (x > y) - (x < y);
}

/* A verified row of the device, for the sort that finds each series' largest n. */
typedef struct row_ref {
    const mb_rpt_row *r;
    int i;
} row_ref;

/* Series (variant, plan, dtype, backend), then n largest first, then file order. */
static int by_series_largest_n(const void *a, const void *b)
{
    const mb_rpt_row *x = ((const row_ref *)a)->r, *y = ((const row_ref *)b)->r;
    /* interned: equal strings are one pointer */
    int c = x->variant == y->variant ? 0 : strcmp(x->variant, y->variant);
    if (!c) c = x->plan == y->plan ? 0 : strcmp(x->plan, y->plan);
    if (!c) c = x->dtype == y->dtype ? 0 : strcmp(x->dtype, y->dtype);
    if (!c) c = x->backend == y->backend ? 0 : strcmp(x->backend, y->backend);
    if (c) return c;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return (((const row_ref *)a)->i > ((const row_ref *)b)->i) - (((const row_ref *)a)->i < ((const row_ref *)b)->i);
}

static int same_series(const mb_rpt_row *x, const mb_rpt_row *y)
{
    return x->variant == y->variant && x->plan == y->plan && x->dtype == y->dtype && x->backend == y->backend;
}

/* Each series' row of largest n (the first in file order among equals)
 * among the device's verified rows, into refs (n_rows entries); returns
 * their count. Linear: one pass, the series found by a hash of their
 * interned strings (a sort of every row was a tenth of report at 10^6). */
static int series_largest(const mb_rpt_set *s, int devi, row_ref *refs)
{
    size_t cap = 64;
    while (cap < 2 * (size_t)s->n_rows + 2 && cap < ((size_t)1 << 22)) cap *= 2;
    int *slot = malloc(cap * sizeof *slot), nr = 0;
    if (!slot) return 0;
    memset(slot, 0xff, cap * sizeof *slot); /* -1: empty */
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (r->dev != devi || !r->verified || !row_wanted(s, r)) continue;
        uintptr_t h = (uintptr_t)r->variant * 31 ^ (uintptr_t)r->plan * 131 ^ (uintptr_t)r->dtype * 1031 ^
                      (uintptr_t)r->backend * 10007;
        size_t j = (size_t)(h ^ h >> 17) & (cap - 1);
        for (; slot[j] >= 0 && !same_series(refs[slot[j]].r, r); j = (j + 1) & (cap - 1)) {}
        if (slot[j] < 0) {
            if ((size_t)nr * 2 + 2 > cap) break; /* more series than slots: the rest unseen */
            slot[j] = nr;
            refs[nr++] = (row_ref){r, i};
        } else if (r->n > refs[slot[j]].r->n) {
            refs[slot[j]] = (row_ref){r, i};
        }
    }
    free(slot);
    return nr;
}

static int roof_measured(const mb_rpt_set *s, int devi, FILE *fp, int write, fig_keys *keys)
{
    int nmeas = 0;
    char b[200];
    if (!s || devi < 0) return 0; /* model only */
    roof_pt *pts = calloc((size_t)s->n_rows + 1, sizeof *pts);
    row_ref *refs = calloc((size_t)s->n_rows + 1, sizeof *refs);
    if (!pts || !refs) {
        free(pts);
        free(refs);
        return 0;
    }
    int nr = series_largest(s, devi, refs);
    qsort(refs, (size_t)nr, sizeof *refs, by_series_largest_n);
    for (int k = 0; k < nr; k++) {
        const mb_rpt_row *r = refs[k].r;
        if (k > 0 && same_series(refs[k - 1].r, r)) continue; /* not its series' largest */
        if (!(r->time_s_median > 0)) continue;
        {
            double ops = r->pred_flops + r->pred_sfu_ops;
            double bytes = r->has_dram ? (double)(r->dram_read_bytes + r->dram_write_bytes)
                                       : (double)(r->pred_dram_read_bytes + r->pred_dram_write_bytes);
            if (!(ops > 0) || !(bytes > 0)) continue;
            char lab[200], sl[160];
            series_label(sl, sizeof sl, r->variant, r->plan, r->dtype, 0);
            snprintf(lab, sizeof lab, "%s (%s)", sl, r->backend);
            snprintf(pts[nmeas].label, sizeof pts[nmeas].label, "%s", lab);
            pts[nmeas].ai = ops / bytes;
            pts[nmeas].tflops = ops / r->time_s_median / 1e12;
            keys_of(keys, rpt_display(r->variant), r->plan, r->dtype, &pts[nmeas].vi, &pts[nmeas].pi);
            nmeas++;
        }
    }
    free(refs);
    if (write && nmeas) {
        qsort(pts, (size_t)nmeas, sizeof *pts, by_ai);
        for (int i = 0; i < nmeas; i++) {
            fprintf(fp, "%s", q(b, sizeof b, pts[i].label));
            col(fp, pts[i].ai);
            col(fp, pts[i].tflops);
            fprintf(fp, " %d %d\n", pts[i].vi, pts[i].pi);
        }
    }
    free(pts);
    return nmeas;
}

/* ---- what-if across devices ------------------------------------------------ */

/* One remedy: a slow and a fast series of one variant at one size. */
typedef struct remedy {
    char variant[MB_NAME_MAX], slow_plan[16], fast_plan[16];
    mb_dtype slow_dt, fast_dt;
    int64_t n;
    char title[160], fast_title[160];
} remedy;

/* The remedies of the series: each lecture demo's claim of largest ratio,
 * and for any other variant its fused (or recompute) plan against eager. */
static int remedies(const mb_rpt_set *s, const series *se, int ns, remedy *out, int max)
{
    int n = 0;
    char nb[32];
    for (int k = 0; k < ns && n < max; k++) {
        int seen = 0;
        for (int j = 0; j < n; j++) seen |= !strcmp(out[j].variant, se[k].variant);
        if (seen) continue;
        remedy *r = &out[n];
        memset(r, 0, sizeof *r);
        snprintf(r->variant, sizeof r->variant, "%s", se[k].variant);
        const mb_rpt_demo *d = mb_rpt_demo_of(se[k].variant);
        if (d) {
            const mb_rpt_claim *c = &d->claims[0];
            for (int i = 1; i < d->n_claims; i++)
                if (d->claims[i].ratio > c->ratio) c = &d->claims[i];
            const mb_rpt_lecture_series *a = &d->series[c->slow], *b = &d->series[c->fast];
            snprintf(r->slow_plan, sizeof r->slow_plan, "%s", a->plan);
            snprintf(r->fast_plan, sizeof r->fast_plan, "%s", b->plan);
            r->slow_dt = a->dtype;
            r->fast_dt = b->dtype;
            r->n = d->n;
        } else {
            mb_graph *g = NULL;
            mb_err e;
            if (mb_rpt_load_variant(s, -1, se[k].variant, MB_F32, &g, &e) != MB_OK) continue;
            mb_plan_kind fast = mb_plan_supported(g, MB_PLAN_FUSED) ? MB_PLAN_FUSED : MB_PLAN_RECOMPUTE;
            int ok = mb_plan_supported(g, fast) && mb_plan_supported(g, MB_PLAN_EAGER);
            mb_graph_free(g);
            if (!ok) continue;
            snprintf(r->slow_plan, sizeof r->slow_plan, "eager");
            snprintf(r->fast_plan, sizeof r->fast_plan, "%s", mb_plan_name(fast));
            r->slow_dt = r->fast_dt = MB_F32;
            r->n = se[k].n;
        }
        pow2_label(nb, sizeof nb, r->n);
        if (r->slow_dt != r->fast_dt) {
            snprintf(r->title, sizeof r->title, "%s: %s vs %s, n = %s", rpt_display(r->variant),
                     mb_dtype_name(r->fast_dt), mb_dtype_name(r->slow_dt), nb);
            snprintf(r->fast_title, sizeof r->fast_title, "%s %s", rpt_display(r->variant),
                     mb_dtype_name(r->fast_dt));
        } else {
            snprintf(r->title, sizeof r->title, "%s: %s vs %s, n = %s", rpt_display(r->variant),
                     r->fast_plan, r->slow_plan, nb);
            snprintf(r->fast_title, sizeof r->fast_title, "%s %s", rpt_display(r->variant),
                     r->fast_plan);
        }
        n++;
    }
    return n;
}

/* The what-if of the series se across devs (n_devs 0: every GPU of the
 * table, then the set's own devices that are not in it). */
static int fig_whatif(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, const series *se,
                      int ns, const mb_device *devs, int n_devs)
{
    remedy rm[8];
    int nr = remedies(s, se, ns, rm, 8);
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    const mb_device *list[64];
    int nd = 0, own = 0;
    if (n_devs > 0) {
        for (int i = 0; i < n_devs && nd < 64; i++) list[nd++] = &devs[i];
    } else {
        for (int i = 0; i < mb_device_count() && nd < 64; i++)
            if (!strcmp(mb_device_at(i)->kind, "gpu")) list[nd++] = mb_device_at(i);
        /* the set's own GPUs that the table lacks; a CPU is not a GPU (and
         * its milliseconds squeezed every GPU into the axis' bottom) */
        for (int i = 0; s && i < s->n_devices && nd < 64; i++) {
            int in_table = 0;
            for (int k = 0; k < mb_device_count(); k++)
                in_table |= !strcmp(mb_device_at(k)->name, s->devices[i].name);
            if (!in_table && !strcmp(s->devices[i].kind, "gpu")) { list[nd++] = &s->devices[i]; own++; }
        }
    }
    char title[200];
    snprintf(title, sizeof title, "What if: %s on %s (model)",
             any_lecture(se, ns) ? "the lecture's remedies" : "fusion", n_devs > 0 ? "chosen devices"
             : own ? "every GPU of the table and the measured GPUs" : "every GPU of the table");
    meta_begin(fp, "what-if");
    meta_s(fp, "title", title);
    meta_d(fp, "remedies", nr);
    char key[32];
    for (int r = 0; r < nr; r++) {
        snprintf(key, sizeof key, "remedy%d", r + 1);
        meta_s(fp, key, rm[r].title);
    }
    /* times[i][r][0 slow, 1 fast] */
    double (*t)[8][2] = calloc((size_t)nd + 1, sizeof *t);
    if (!t) { mb_outfile_abort(&of); return mb_err_set(fc->err, MB_ERUN, "out of memory"); }
    for (int i = 0; i < nd; i++)
        for (int r = 0; r < nr; r++)
            for (int k = 0; k < 2; k++) {
                mb_estimate e;
                mb_err err;
                t[i][r][k] = NAN;
                if (rpt_estimate(s, rm[r].variant, k ? rm[r].fast_plan : rm[r].slow_plan,
                                 k ? rm[r].fast_dt : rm[r].slow_dt, rm[r].n, list[i], &e, NULL,
                                 &err) == MB_OK) {
                    t[i][r][k] = e.total.time_s;
                    mb_estimate_free(&e);
                }
            }
    for (int r = 0; r < nr; r++) {
        snprintf(key, sizeof key, "fast%d", r + 1);
        meta_s(fp, key, rm[r].fast_title);
    }
    block(fp);
    fputs("# device then, per remedy: speed-up (slow / fast), fast time (s)\n", fp);
    for (int i = 0; i < nd; i++) {
        char b[200];
        fprintf(fp, "%s", q(b, sizeof b, list[i]->name));
        for (int r = 0; r < nr; r++) {
            col(fp, t[i][r][0] / t[i][r][1]);
            col(fp, t[i][r][1]);
        }
        fputc('\n', fp);
    }
    free(t);
    return rpt_fig_finish(fc, &of, "whatif", name, title);
}

/* ---- recomputation -------------------------------------------------------- */

/* The recomputation figure's plans: the demo's, then optimal (the least
 * traffic, which the lecture does not name) where the variant has it. */
static int recompute_plans(const mb_rpt_set *s, const mb_rpt_demo *dm, const char **plans,
                           const char **counts)
{
    int np = 0;
    for (int k = 0; k < dm->n_series && np < 7; k++) {
        plans[np] = dm->series[k].plan;
        counts[np++] = dm->series[k].count;
    }
    mb_graph *g = NULL;
    mb_err e;
    if (mb_rpt_load_variant(s, -1, dm->variant, MB_F32, &g, &e) == MB_OK) {
        if (mb_plan_supported(g, MB_PLAN_OPTIMAL)) {
            plans[np] = mb_plan_name(MB_PLAN_OPTIMAL);
            counts[np++] = NULL;
        }
        mb_graph_free(g);
    }
    return np;
}

static int fig_recompute(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                         const mb_device *d)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    const mb_rpt_demo *dm = rpt_recompute_demo();
    int64_t n = dm->n;
    const char *plans[8], *counts[8];
    int np = recompute_plans(s, dm, plans, counts);
    char title[256], nb[32];
    snprintf(title, sizeof title, "Recomputation: %s forward + backward, n = %s f32", dm->display,
             pow2_label(nb, sizeof nb, n));
    meta_begin(fp, "recomputation");
    meta_s(fp, "title", title);
    meta_s(fp, "device", d->label);
    meta_d(fp, "n", (double)n);
    int mb_bytes = 0, mb_time = 0;
    /* times in us, or ms when the slowest is a millisecond or more */
    double tmax = 0;
    const mb_rpt_row *rw[8] = {NULL};
    mb_estimate e[8];
    int ok[8];
    for (int k = 0; k < np; k++) {
        mb_err err;
        ok[k] = rpt_estimate(s, dm->variant, plans[k], MB_F32, n, d, &e[k], NULL, &err) == MB_OK;
        for (int i = 0; gi >= 0 && i < s->n_rows; i++) {
            const mb_rpt_row *x = &s->rows[i];
            if (x->group == gi && x->verified && x->n == n && !strcmp(x->variant, dm->variant) &&
                !strcmp(x->plan, plans[k]) && !strcmp(x->dtype, "f32"))
                rw[k] = x;
        }
        if (rw[k]) mb_time = 1;
        if (rw[k] && rw[k]->has_dram) mb_bytes = 1;
        if (ok[k] && e[k].total.time_s > tmax) tmax = e[k].total.time_s;
        if (rw[k] && rw[k]->time_s_median > tmax) tmax = rw[k]->time_s_median;
        if (rw[k] && isfinite(rw[k]->time_s_p90) && rw[k]->time_s_p90 > tmax) tmax = rw[k]->time_s_p90;
    }
    meta_d(fp, "measured_bytes", mb_bytes);
    meta_d(fp, "measured_time", mb_time);
    meta_d(fp, "plans", np);
    double unit = tmax >= 1e-3 ? 1e-3 : 1e-6;
    meta_s(fp, "time_unit", unit == 1e-3 ? "ms" : "µs");
    block(fp);
    fputs("# plan count_mb model_dram_mb measured_dram_mb saved_mb model_time measured_time count "
          "measured_min measured_p90\n", fp);
    for (int k = 0; k < np; k++) {
        if (!ok[k]) continue;
        const mb_rpt_row *r = rw[k];
        char b[64], cb[32];
        double lect = (double)(e[k].total.read_bytes + e[k].total.write_bytes);
        if (!counts[k]) snprintf(cb, sizeof cb, "%.3gn", lect / (double)n / 4.0);
        fprintf(fp, "%s", plans[k]);
        col(fp, lect / 1e6);
        col(fp, (double)(e[k].total.dram_read_bytes + e[k].total.dram_write_bytes) / 1e6);
        col(fp, r && r->has_dram ? (double)(r->dram_read_bytes + r->dram_write_bytes) / 1e6 : NAN);
        col(fp, (double)e[k].saved_bytes / 1e6);
        col(fp, e[k].total.time_s / unit);
        col(fp, r ? r->time_s_median / unit : NAN);
        fprintf(fp, " %s", q(b, sizeof b, counts[k] ? counts[k] : cb));
        col(fp, r ? (isfinite(r->time_s_min) ? r->time_s_min : r->time_s_median) / unit : NAN);
        col(fp, r ? (isfinite(r->time_s_p90) ? r->time_s_p90 : r->time_s_median) / unit : NAN);
        fputc('\n', fp);
        mb_estimate_free(&e[k]);
    }
    return rpt_fig_finish(fc, &of, "recompute", name, title);
}

/* ---- residuals ------------------------------------------------------------ */

#define MAX_RESID_POINTS 20000

static int fig_residuals(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi)
{
    series se[MAX_SERIES];
    int ns = collect_series(s, gi, se, MAX_SERIES);
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    const mb_rpt_group *g = &s->groups[gi];
    int counted = group_has_rows(s, gi, 1);
    char title[256];
    snprintf(title, sizeof title, "Residuals of the fit time = t0 + bytes / bandwidth (%s, %s)",
             g->device, g->backend);
    meta_begin(fp, "residuals");
    meta_s(fp, "title", title);
    meta_d(fp, "counted", counted);
    meta_d(fp, "fitted", g->fitted);
    meta_s(fp, "fit", g->fitted && isfinite(g->bandwidth_gbs)
                          ? "" : g->why[0] ? g->why : "no fit");
    char fitline[300], t0[32];
    int line = g->fitted && isfinite(g->bandwidth_gbs);
    if (line && (g->t0_s < 0 || g->t0_negative))
        /* a negative intercept is no launch time: the sizes do not pin it */
        snprintf(fitline, sizeof fitline, "fit: bandwidth = %.4g GB/s, R^2 = %.4f; t0 below zero (not a "
                 "launch time: the sizes do not pin the intercept)", g->bandwidth_gbs, g->line.r2);
    else if (line)
        snprintf(fitline, sizeof fitline, "fit: t0 = %s, bandwidth = %.4g GB/s, R^2 = %.4f",
                 rpt_time(t0, sizeof t0, g->t0_s), g->bandwidth_gbs, g->line.r2);
    else
        snprintf(fitline, sizeof fitline, "no bandwidth fit (%s): measured against the model only",
                 g->why[0] ? g->why : "too few rows");
    meta_s(fp, "fitline", fitline);
    meta_d(fp, "line", line);
    /* colour by variant, marker by plan */
    fig_keys keys;
    memset(&keys, 0, sizeof keys);
    char key[32];
    for (int k = 0; k < ns; k++) {
        int vi, pi;
        keys_of(&keys, rpt_display(se[k].variant), se[k].plan, se[k].dtype, &vi, &pi);
        snprintf(key, sizeof key, "colour%d", k + 1);
        meta_d(fp, key, vi);
        snprintf(key, sizeof key, "marker%d", k + 1);
        meta_d(fp, key, pi);
    }
    keys_meta(fp, &keys);
    for (int k = 0; k < ns; k++) {
        block(fp);
        char b1[160], b2[200];
        series_label(b1, sizeof b1, se[k].variant, se[k].plan, se[k].dtype, 0);
        fprintf(fp, "%s time_resid_pct model_resid_pct bytes_resid_pct outlier used\n",
                q(b2, sizeof b2, b1));
        int any = 0;
        /* past its share of MAX_RESID_POINTS (the figure's, over its series)
         * a series shows every stride-th row (and every outlier): gnuplot
         * drew 10^6 points in over a minute, 250,000 in 10 s, and no reader
         * tells them apart */
        int64_t m = 0, seen = 0, share = MAX_RESID_POINTS / ns;
        for (int i = 0; i < s->n_rows; i++) m += row_is(&s->rows[i], gi, &se[k]) && s->rows[i].verified;
        const int64_t stride = m > share ? (m + share - 1) / share : 1;
        if (stride > 1)
            fprintf(fp, "# every %lldth of %lld rows, and every outlier\n", (long long)stride, (long long)m);
        for (int i = 0; i < s->n_rows; i++) {
            const mb_rpt_row *r = &s->rows[i];
            if (!row_is(r, gi, &se[k]) || !r->verified) continue;
            if (seen++ % stride != 0 && !r->outlier) continue;
            fprintf(fp, "%lld", (long long)r->n);
            col(fp, 100.0 * r->resid_time_rel);
            col(fp, 100.0 * r->resid_model_rel);
            col(fp, 100.0 * r->resid_bytes_rel);
            fprintf(fp, " %d %d\n", r->outlier, r->used);
            any = 1;
        }
        if (!any) fputs("1 NaN NaN NaN 0 0\n", fp);
    }
    return rpt_fig_finish(fc, &of, "residuals", name, title);
}

/* ---- the table of figures ------------------------------------------------- */

/* What a figure is drawn from: the set (measured rows, or variant
 * definitions for the model's figures: gi and devi -1), a group or device
 * of it, the series, the what-if devices. */
typedef struct fig_args {
    const mb_rpt_set *s;
    int gi, devi;          /* the group / device drawn; -1: the model's figures */
    const mb_device *d;    /* the model device */
    const series *se;      /* the what-if's series */
    int ns;
    const mb_device *whatif;
    int n_whatif;
} fig_args;

static int draw_bytes(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return fig_bytes(fc, name, a->s, a->gi, a->d);
}

static int draw_time(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return fig_time(fc, name, a->s, a->gi, a->d);
}

static int draw_residuals(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return fig_residuals(fc, name, a->s, a->gi);
}

static int draw_roofline(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return fig_roofline(fc, name, a->s, a->devi, a->d);
}

static int draw_whatif(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return fig_whatif(fc, name, a->s, a->se, a->ns, a->whatif, a->n_whatif);
}

static int draw_recompute(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return fig_recompute(fc, name, a->s, a->gi, a->d);
}

/* The recomputation figure needs its demo's variant: among the model's
 * series, or among the group's rows. */
static int wants_recompute(const fig_args *a)
{
    const mb_rpt_demo *dm = rpt_recompute_demo();
    if (!dm) return 0;
    if (a->gi < 0) {
        for (int k = 0; k < a->ns; k++)
            if (!strcmp(a->se[k].variant, dm->variant)) return 1;
        return 0;
    }
    for (int i = 0; i < a->s->n_rows; i++)
        if (a->s->rows[i].group == a->gi && !strcmp(a->s->rows[i].variant, dm->variant) &&
            row_wanted(a->s, &a->s->rows[i]))
            return 1;
    return 0;
}

/* Bytes, time against n and the what-if draw 1-D rows: wanted for the
 * model's figures and where a 1-D row was measured (in the group, for the
 * per-group ones) (2-D rows are on the knee figure). */
static int wants_1d(const fig_args *a)
{
    if (!a->s || a->s->n_rows == 0) { /* the model's: a series of a variant without row ops */
        for (int k = 0; k < a->ns; k++)
            if (!rpt_has_row_ops(a->s, a->se[k].variant)) return 1;
        return a->ns == 0;
    }
    for (int i = 0; i < a->s->n_rows; i++)
        if ((a->gi < 0 || a->s->rows[i].group == a->gi) && a->s->rows[i].cols == 0 &&
            row_wanted(a->s, &a->s->rows[i]))
            return 1;
    return 0;
}

/* The knee figure (fig_knee.c): wanted when a variant with row operations is drawn. */
static int wants_knee(const fig_args *a) { return rpt_knee_variant(a->s, a->se, a->ns) != NULL; }

static int draw_knee(rpt_fig_ctx *fc, const char *name, const fig_args *a)
{
    return rpt_fig_knee(fc, name, a->s, rpt_knee_variant(a->s, a->se, a->ns), a->d);
}

typedef enum fig_scope {
    FIG_PER_GROUP,  /* one per device x backend of the measured rows */
    FIG_PER_DEVICE, /* one per device, every backend's points on it */
    FIG_ONCE        /* one for the whole report */
} fig_scope;

/* One figure: its file stem (and plots/STEM.gp's), how often a report of
 * measurements draws it, whether the model-only figures have it, when it
 * is wanted (NULL: always) and what draws it. A report draws the
 * per-group figures of each group in this order, then the per-device ones,
 * then the others; the model's figures are drawn in this order. */
typedef struct fig_kind {
    const char *stem;
    fig_scope scope;
    int in_model;
    int (*wanted)(const fig_args *a);
    int (*draw)(rpt_fig_ctx *fc, const char *name, const fig_args *a);
} fig_kind;

static const fig_kind fig_kinds[] = {
    {"bytes", FIG_PER_GROUP, 1, wants_1d, draw_bytes},
    {"time_vs_n", FIG_PER_GROUP, 1, wants_1d, draw_time},
    {"residuals", FIG_PER_GROUP, 0, NULL, draw_residuals},
    {"roofline", FIG_PER_DEVICE, 1, NULL, draw_roofline},
    {"whatif", FIG_ONCE, 1, wants_1d, draw_whatif},
    {"recompute", FIG_PER_GROUP, 1, wants_recompute, draw_recompute},
    {"knee", FIG_ONCE, 1, wants_knee, draw_knee},
};
#define N_FIG_KINDS ((int)(sizeof fig_kinds / sizeof fig_kinds[0]))

/* Draws the kinds of scope (in_model: the model's figures, any scope) with
 * the file stem's suffix suf. */
static int draw_kinds(rpt_fig_ctx *fc, int model, fig_scope scope, const char *suf, const fig_args *a)
{
    int rc = 0;
    char name[160];
    for (int k = 0; k < N_FIG_KINDS && !rc; k++) {
        const fig_kind *f = &fig_kinds[k];
        if (model ? !f->in_model : f->scope != scope) continue;
        if (f->wanted && !f->wanted(a)) continue;
        snprintf(name, sizeof name, "%s%s", f->stem, suf);
        rc = f->draw(fc, name, a);
    }
    return rc;
}

/* ---- entry points --------------------------------------------------------- */

int mb_rpt_model_figures(const mb_rpt_set *defs, const mb_device *d, const mb_device *whatif,
                         int n_whatif, const char *dir, unsigned formats, int render,
                         mb_rpt_figures *out, mb_err *err)
{
    rpt_fig_ctx fc;
    int rc = rpt_fig_begin(&fc, dir, formats, render, defs ? &defs->look : NULL, out, err);
    if (rc) return rc;
    series se[MAX_SERIES];
    int ns = rpt_model_series(defs, se, MAX_SERIES);
    fig_args a = {defs, -1, -1, d, se, ns, whatif, n_whatif};
    rc = draw_kinds(&fc, 1, FIG_ONCE, "", &a);
    return rpt_fig_end(&fc, rc);
}

/* A file-name-safe suffix for a group or device. */
static void suffix(char *buf, size_t size, const char *a, const char *b)
{
    snprintf(buf, size, "_%s%s%s", a, b ? "-" : "", b ? b : "");
    for (char *p = buf + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '.'))
            *p = '-';
}

/* One roofline per device (with every backend's points on it), and the
 * other per-device kinds. */
static int draw_devices(rpt_fig_ctx *fc, const mb_rpt_set *s)
{
    char suf[128];
    int rc = 0, ndev = 0;
    for (int k = 0; k < s->n_devices; k++)
        for (int g = 0; g < s->n_groups; g++) if (s->groups[g].dev == k) { ndev++; break; }
    for (int di = 0; di < s->n_devices && !rc; di++) {
        int used = 0;
        for (int g = 0; g < s->n_groups; g++) if (s->groups[g].dev == di) used = 1;
        if (!used) continue;
        if (ndev > 1) suffix(suf, sizeof suf, s->devices[di].name, NULL);
        else suf[0] = '\0';
        fig_args a = {s, -1, di, &s->devices[di], NULL, 0, NULL, 0};
        rc = draw_kinds(fc, 0, FIG_PER_DEVICE, suf, &a);
    }
    return rc;
}

int mb_rpt_set_figures(const mb_rpt_set *s, const char *dir, unsigned formats, int render,
                       mb_rpt_figures *out, mb_err *err)
{
    rpt_fig_ctx fc;
    int rc = rpt_fig_begin(&fc, dir, formats, render, &s->look, out, err);
    if (rc) return rc;
    char suf[128];
    for (int g = 0; g < s->n_groups && !rc; g++) {
        if (s->n_groups > 1) suffix(suf, sizeof suf, s->groups[g].device, s->groups[g].backend);
        else suf[0] = '\0';
        fig_args a = {s, g, s->groups[g].dev, &s->devices[s->groups[g].dev], NULL, 0, NULL, 0};
        rc = draw_kinds(&fc, 0, FIG_PER_GROUP, suf, &a);
    }
    if (!rc) rc = draw_devices(&fc, s);
    /* the what-if of every variant measured */
    series se[MAX_SERIES];
    int ns = 0;
    for (int g = 0; g < s->n_groups; g++) {
        series sg[MAX_SERIES];
        int m = row_series(s, g, -1, sg, MAX_SERIES);
        for (int k = 0; k < m; k++)
            ns = push_series(se, ns, MAX_SERIES, sg[k].variant, sg[k].plan, sg[k].dtype, sg[k].n);
    }
    fig_args a = {s, -1, -1, NULL, se, ns, NULL, 0};
    if (!rc) rc = draw_kinds(&fc, 0, FIG_ONCE, "", &a);
    return rpt_fig_end(&fc, rc);
}
