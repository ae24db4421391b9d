/* fig_speedup.c — the lecture's claims as ratios against n: for each claim
 * whose two series a group measured, the measured ratio of medians (slow /
 * fast) at every size both ran, with its range (slow's min over fast's p90
 * to slow's p90 over fast's min), the model's ratio at every power of two
 * and every measured size, and the lecture's ratio. Time against n spans
 * six decades, where the 1.2-1.8x a claim is about cannot be seen; here
 * the ratio is the axis. Writes the data file only: plots/speedup.gp draws it. */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rows a claim's series uses: group gi's last verified 1-D row of
 * variant, plan and dtype at each size. */
typedef struct side {
    const char *variant, *plan, *dtype;
} side;

static int row_of(const mb_rpt_set *s, int gi, const mb_rpt_row *r, const side *sd)
{
    return r->group == gi && r->verified && r->cols == 0 && !strcmp(r->variant, sd->variant) &&
           !strcmp(r->plan, sd->plan) && !strcmp(r->dtype, sd->dtype) && rpt_row_wanted(s, r);
}

static void claim_sides(const mb_rpt_demo *dm, const mb_rpt_claim *c, side *slow, side *fast)
{
    *slow = (side){dm->variant, dm->series[c->slow].plan, mb_dtype_name(dm->series[c->slow].dtype)};
    *fast = (side){dm->variant, dm->series[c->fast].plan, mb_dtype_name(dm->series[c->fast].dtype)};
}

/* 1 when group gi has a size at which both sides of claim c ran verified. */
static int claim_measured(const mb_rpt_set *s, int gi, const mb_rpt_demo *dm, const mb_rpt_claim *c)
{
    side a, b;
    claim_sides(dm, c, &a, &b);
    for (int i = 0; i < s->n_rows; i++) {
        if (!row_of(s, gi, &s->rows[i], &a)) continue;
        for (int j = 0; j < s->n_rows; j++)
            if (s->rows[j].n == s->rows[i].n && row_of(s, gi, &s->rows[j], &b)) return 1;
    }
    return 0;
}

int rpt_speedup_wanted(const mb_rpt_set *s, int gi)
{
    if (!s || gi < 0) return 0;
    for (int k = 0; k < MB_RPT_N_DEMOS; k++)
        for (int c = 0; c < mb_rpt_lecture[k].n_claims; c++)
            if (claim_measured(s, gi, &mb_rpt_lecture[k], &mb_rpt_lecture[k].claims[c])) return 1;
    return 0;
}

/* The last row of side sd at size n in group gi, or NULL. */
static const mb_rpt_row *at(const mb_rpt_set *s, int gi, const side *sd, int64_t n)
{
    const mb_rpt_row *r = NULL;
    for (int i = 0; i < s->n_rows; i++)
        if (s->rows[i].n == n && row_of(s, gi, &s->rows[i], sd)) r = &s->rows[i];
    return r;
}

static double or_median(double v, const mb_rpt_row *r) { return isfinite(v) ? v : r->time_s_median; }

/* side sd's plan at its dtype, or NULL when it does not build */
static mb_plan *plan_of(const mb_rpt_set *s, const side *sd, mb_graph **g)
{
    mb_plan_kind pk;
    mb_plan *p = NULL;
    mb_err err;
    *g = NULL;
    if (mb_rpt_load_variant(s, -1, sd->variant, (mb_dtype)rpt_dtype_of(sd->dtype), g, &err) != MB_OK ||
        mb_plan_parse(sd->plan, &pk) != MB_OK || mb_plan_build(*g, pk, &p, &err) != MB_OK)
        return NULL;
    return p;
}

static double model_time(const mb_plan *p, int64_t n, const mb_device *d)
{
    mb_estimate e;
    mb_err err;
    if (!p || mb_estimate_plan(p, n, d, &e, &err) != MB_OK) return NAN;
    double t = e.total.time_s;
    mb_estimate_free(&e);
    return t;
}

static int by_size(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One claim's block: the sizes of the model's grid (2^10..2^28) and every
 * size either side measured, sorted, each once. MB_ERUN out of memory. */
static int claim_block(FILE *fp, const mb_rpt_set *s, int gi, const mb_device *d, const side *slow,
                       const side *fast)
{
    size_t m = 0, cap = 19 + 2 * (size_t)s->n_rows;
    int64_t *n = malloc(cap * sizeof *n);
    if (!n) return MB_ERUN;
    for (int lg = 10; lg <= 28; lg++) n[m++] = (int64_t)1 << lg;
    for (int i = 0; i < s->n_rows; i++)
        if (row_of(s, gi, &s->rows[i], slow) || row_of(s, gi, &s->rows[i], fast)) n[m++] = s->rows[i].n;
    qsort(n, m, sizeof *n, by_size);
    mb_graph *gs, *gf;
    mb_plan *ps = plan_of(s, slow, &gs), *pf = plan_of(s, fast, &gf);
    for (size_t a = 0; a < m; a++) {
        if (a > 0 && n[a] == n[a - 1]) continue;
        const mb_rpt_row *rs = at(s, gi, slow, n[a]), *rf = at(s, gi, fast, n[a]);
        fprintf(fp, "%lld", (long long)n[a]);
        rpt_dat_col(fp, model_time(ps, n[a], d) / model_time(pf, n[a], d));
        int both = rs && rf;
        rpt_dat_col(fp, both ? rs->time_s_median / rf->time_s_median : NAN);
        rpt_dat_col(fp, both ? or_median(rs->time_s_min, rs) / or_median(rf->time_s_p90, rf) : NAN);
        rpt_dat_col(fp, both ? or_median(rs->time_s_p90, rs) / or_median(rf->time_s_min, rf) : NAN);
        fputc('\n', fp);
    }
    mb_plan_free(ps);
    mb_plan_free(pf);
    mb_graph_free(gs);
    mb_graph_free(gf);
    free(n);
    return MB_OK;
}

int rpt_fig_speedup(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi, const mb_device *d)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    const char *title = "The lecture's claims as ratios: model (lines), measured (points), lecture (dashed)";
    rpt_dat_begin(fp, "speedup against n");
    rpt_dat_meta_s(fp, "title", title);
    rpt_dat_meta_s(fp, "device", d->label);
    rpt_dat_meta_d(fp, "knee_n", d->cache_mb * 1048576.0 / 4.0); /* one f32 tensor fills the cache */
    rpt_dat_meta_d(fp, "cache_mib", d->cache_mb);
    int nc = 0;
    char key[32], label[200];
    for (int k = 0; k < MB_RPT_N_DEMOS; k++) {
        const mb_rpt_demo *dm = &mb_rpt_lecture[k];
        for (int c = 0; c < dm->n_claims; c++) {
            if (!claim_measured(s, gi, dm, &dm->claims[c])) continue;
            const mb_rpt_lecture_series *a = &dm->series[dm->claims[c].slow], *b = &dm->series[dm->claims[c].fast];
            if (rpt_by_dtype(dm->variant))
                snprintf(label, sizeof label, "%s: %s / %s", dm->display, mb_dtype_name(a->dtype),
                         mb_dtype_name(b->dtype));
            else
                snprintf(label, sizeof label, "%s: %s / %s", dm->display, a->plan, b->plan);
            nc++;
            snprintf(key, sizeof key, "claim%d", nc);
            rpt_dat_meta_s(fp, key, label);
            snprintf(key, sizeof key, "lecture%d", nc);
            rpt_dat_meta_d(fp, key, dm->claims[c].ratio);
        }
    }
    rpt_dat_meta_d(fp, "n_claims", nc);
    rc = MB_OK;
    for (int k = 0; k < MB_RPT_N_DEMOS && !rc; k++) {
        const mb_rpt_demo *dm = &mb_rpt_lecture[k];
        for (int c = 0; c < dm->n_claims && !rc; c++) {
            if (!claim_measured(s, gi, dm, &dm->claims[c])) continue;
            side slow, fast;
            claim_sides(dm, &dm->claims[c], &slow, &fast);
            rpt_dat_block(fp);
            fprintf(fp, "# n model_ratio measured_ratio lo hi\n");
            rc = claim_block(fp, s, gi, d, &slow, &fast);
        }
    }
    if (rc) {
        mb_outfile_abort(&of);
        return mb_err_set(fc->err, rc, "out of memory");
    }
    return rpt_fig_finish(fc, &of, "speedup", name, title);
}
