/* fig_time.c — the figures of time: against n (the model at every power of two
 * and every measured size, the measured points), and a group's fit residuals.
 * Writes data files only: plots/time_vs_n.gp, residuals.gp draw them. */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static void time_label(char *b1, size_t size, const rpt_series *se, int shared)
{
    if (shared)
        rpt_series_label(b1, size, se->variant, se->plan, se->dtype, strcmp(se->dtype, "f32") != 0);
    else if (rpt_by_dtype(se->variant))
        snprintf(b1, size, strcmp(se->plan, "eager") ? "%s (%s)" : "%s", se->dtype, se->plan);
    else
        snprintf(b1, size, strcmp(se->dtype, "f32") ? "%s %s" : "%s", se->plan, se->dtype);
}

/* Points a figure of rows draws at most, over its series: gnuplot drew 10^6
 * points in over a minute, 250,000 in 10 s, and no reader tells them apart.
 * A series past its share shows every stride-th of its sizes or rows. */
#define MAX_FIG_POINTS 20000

/* share: the most sizes the series shows (its part of MAX_FIG_POINTS); past
 * it every stride-th size, and every size of the model's grid (2^10..2^28). */
static int time_series(FILE *fp, const mb_rpt_set *s, int gi, const rpt_series *se, const mb_device *d,
                       int shared, int64_t share)
{
    mb_dtype dt = (mb_dtype)rpt_dtype_of(se->dtype);
    size_t m = 19, cap = 19 + 64;
    size_ref *sz = malloc(cap * sizeof *sz);
    if (!sz) return MB_ERUN;
    for (int lg = 10; lg <= 28; lg++) sz[lg - 10] = (size_ref){(int64_t)1 << lg, -1};
    for (int i = 0; gi >= 0 && i < s->n_rows; i++) {
        if (!rpt_row_is(&s->rows[i], gi, se)) continue;
        if (m == cap) {
            void *p = realloc(sz, 2 * cap * sizeof *sz);
            if (!p) { free(sz); return MB_ERUN; }
            sz = p;
            cap *= 2;
        }
        sz[m++] = (size_ref){s->rows[i].n, i};
    }
    qsort(sz, m, sizeof *sz, by_n_then_index);
    int64_t sizes = 0;
    for (size_t a = 0; a < m; a++) sizes += a == 0 || sz[a].n != sz[a - 1].n;
    const int64_t stride = sizes > share ? (sizes + share - 1) / share : 1;
    rpt_dat_block(fp);
    char b1[160], b2[200];
    time_label(b1, sizeof b1, se, shared);
    fprintf(fp, "%s model_s median_s min_s p90_s panel\n", rpt_dat_str(b2, sizeof b2, b1));
    if (stride > 1)
        fprintf(fp, "# every %lldth of %lld sizes, and the model's 2^10..2^28\n", (long long)stride, (long long)sizes);
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_plan_kind pk;
    mb_err err;
    if (mb_rpt_load_variant(s, -1, se->variant, dt, &g, &err) != MB_OK ||
        mb_plan_parse(se->plan, &pk) != MB_OK || mb_plan_build(g, pk, &p, &err) != MB_OK)
        p = NULL;
    for (size_t a = 0, size_no = 0; a < m; size_no++) {
        size_t b = a;
        const mb_rpt_row *r = NULL; /* the last verified row of this size */
        int grid = 0;
        for (; b < m && sz[b].n == sz[a].n; b++) {
            if (sz[b].i >= 0 && s->rows[sz[b].i].verified) r = &s->rows[sz[b].i];
            grid |= sz[b].i < 0;
        }
        if (size_no % (size_t)stride != 0 && !grid) {
            a = b;
            continue;
        }
        mb_estimate e;
        double model = NAN;
        if (p && mb_estimate_plan(p, sz[a].n, d, &e, &err) == MB_OK) {
            model = e.total.time_s;
            mb_estimate_free(&e);
        }
        fprintf(fp, "%lld", (long long)sz[a].n);
        rpt_dat_col(fp, model);
        rpt_dat_col(fp, r ? r->time_s_median : NAN);
        rpt_dat_col(fp, r ? (isfinite(r->time_s_min) ? r->time_s_min : r->time_s_median) : NAN);
        rpt_dat_col(fp, r ? (isfinite(r->time_s_p90) ? r->time_s_p90 : r->time_s_median) : NAN);
        fprintf(fp, " %d\n", se->panel);
        a = b;
    }
    mb_plan_free(p);
    mb_graph_free(g);
    free(sz);
    return MB_OK;
}

int rpt_fig_time(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                 const mb_device *d)
{
    rpt_series se[MAX_SERIES];
    int ns = rpt_collect_series(s, gi, se, MAX_SERIES);
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    int any_meas = rpt_group_has_rows(s, gi, 0);
    char title[256];
    snprintf(title, sizeof title, "Time against n: model%s", any_meas ? " (lines) vs measured (points)" : "");
    rpt_dat_begin(fp, "time against n");
    rpt_dat_meta_s(fp, "title", title);
    rpt_dat_meta_s(fp, "device", d->label);
    double cache_bytes = d->cache_mb * 1048576.0;
    rpt_dat_meta_d(fp, "cache_bytes", cache_bytes);
    rpt_dat_meta_d(fp, "knee_n", cache_bytes / 4.0); /* one f32 tensor fills the cache */
    rpt_dat_meta_d(fp, "cache_mib", d->cache_mb);
    rpt_dat_meta_d(fp, "launch_s", d->launch_overhead_us * 1e-6);
    rpt_dat_meta_d(fp, "measured", any_meas);
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
        rpt_dat_meta_s(fp, key, ptitle);
    }
    rpt_dat_meta_d(fp, "panels", np);
    /* one legend for every panel: a series' colour and dash by its name
     * (its plan, or dtype), the same in each panel */
    rpt_fig_keys names;
    memset(&names, 0, sizeof names);
    for (int j = 0; j < MB_PLAN_COUNT; j++) /* the plans first, in the table's order */
        for (int k = 0; k < ns; k++) {
            time_label(ptitle, sizeof ptitle, &se[k], shared_panel[se[k].panel]);
            int vi, pi;
            if (!strcmp(ptitle, mb_plan_name((mb_plan_kind)j))) rpt_keys_of(&names, ptitle, "", "f32", &vi, &pi);
        }
    for (int k = 0; k < ns; k++) {
        time_label(ptitle, sizeof ptitle, &se[k], shared_panel[se[k].panel]);
        int vi, pi;
        rpt_keys_of(&names, ptitle, "", "f32", &vi, &pi);
        snprintf(key, sizeof key, "cat%d", k + 1);
        rpt_dat_meta_d(fp, key, vi);
    }
    rpt_dat_meta_d(fp, "n_cats", names.nv);
    for (int i = 0; i < names.nv; i++) {
        snprintf(key, sizeof key, "catname%d", i + 1);
        rpt_dat_meta_s(fp, key, names.var[i]);
    }
    rc = MB_OK;
    for (int k = 0; k < ns && !rc; k++)
        rc = time_series(fp, s, gi, &se[k], d, shared_panel[se[k].panel], ns ? MAX_FIG_POINTS / ns : MAX_FIG_POINTS);
    if (rc) {
        mb_outfile_abort(&of);
        return mb_err_set(fc->err, rc, "out of memory");
    }
    return rpt_fig_finish(fc, &of, "time_vs_n", name, title);
}

/* ---- residuals ------------------------------------------------------------ */


int rpt_fig_residuals(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi)
{
    rpt_series se[MAX_SERIES];
    int ns = rpt_collect_series(s, gi, se, MAX_SERIES);
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    const mb_rpt_group *g = &s->groups[gi];
    int counted = rpt_group_has_rows(s, gi, 1);
    char title[256];
    snprintf(title, sizeof title, "Residuals of the fit time = t0 + bytes / bandwidth (%s, %s)",
             g->device, g->backend);
    rpt_dat_begin(fp, "residuals");
    rpt_dat_meta_s(fp, "title", title);
    rpt_dat_meta_d(fp, "counted", counted);
    rpt_dat_meta_d(fp, "fitted", g->fitted);
    rpt_dat_meta_s(fp, "fit", g->fitted && isfinite(g->bandwidth_gbs)
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
    rpt_dat_meta_s(fp, "fitline", fitline);
    rpt_dat_meta_d(fp, "line", line);
    /* one scale for every panel, symmetric about 1 on its log axis: the
     * largest ratio (or inverse ratio) any panel shows (each panel on its
     * own scale made a 5% miss look like a 50% one beside it) */
    double span = 1.05;
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (r->group != gi || !r->verified) continue;
        const double rel[3] = {line ? r->resid_time_rel : NAN, r->resid_model_rel,
                               counted ? r->resid_bytes_rel : NAN};
        for (int k = 0; k < 3; k++)
            if (isfinite(rel[k]) && rel[k] > -1) span = fmax(span, fmax(1 + rel[k], 1 / (1 + rel[k])));
    }
    rpt_dat_meta_d(fp, "ratio_span", span);
    /* colour by variant, marker by plan */
    rpt_fig_keys keys;
    memset(&keys, 0, sizeof keys);
    char key[32];
    for (int k = 0; k < ns; k++) {
        int vi, pi;
        rpt_keys_of(&keys, rpt_display(se[k].variant), se[k].plan, se[k].dtype, &vi, &pi);
        snprintf(key, sizeof key, "colour%d", k + 1);
        rpt_dat_meta_d(fp, key, vi);
        snprintf(key, sizeof key, "marker%d", k + 1);
        rpt_dat_meta_d(fp, key, pi);
    }
    rpt_keys_meta(fp, &keys);
    for (int k = 0; k < ns; k++) {
        rpt_dat_block(fp);
        char b1[160], b2[200];
        rpt_series_label(b1, sizeof b1, se[k].variant, se[k].plan, se[k].dtype, 0);
        fprintf(fp, "%s time_resid_pct model_resid_pct bytes_resid_pct outlier used\n",
                rpt_dat_str(b2, sizeof b2, b1));
        int any = 0;
        /* past its share of MAX_FIG_POINTS a series shows every stride-th
         * row (and every outlier) */
        int64_t m = 0, seen = 0, share = MAX_FIG_POINTS / ns;
        for (int i = 0; i < s->n_rows; i++) m += rpt_row_is(&s->rows[i], gi, &se[k]) && s->rows[i].verified;
        const int64_t stride = m > share ? (m + share - 1) / share : 1;
        if (stride > 1)
            fprintf(fp, "# every %lldth of %lld rows, and every outlier\n", (long long)stride, (long long)m);
        for (int i = 0; i < s->n_rows; i++) {
            const mb_rpt_row *r = &s->rows[i];
            if (!rpt_row_is(r, gi, &se[k]) || !r->verified) continue;
            if (seen++ % stride != 0 && !r->outlier) continue;
            fprintf(fp, "%lld", (long long)r->n);
            rpt_dat_col(fp, 100.0 * r->resid_time_rel);
            rpt_dat_col(fp, 100.0 * r->resid_model_rel);
            rpt_dat_col(fp, 100.0 * r->resid_bytes_rel);
            fprintf(fp, " %d %d\n", r->outlier, r->used);
            any = 1;
        }
        if (!any) fputs("1 NaN NaN NaN 0 0\n", fp);
    }
    return rpt_fig_finish(fc, &of, "residuals", name, title);
}
