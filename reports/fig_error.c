/* fig_error.c — the model's error across devices: every verified row's
 * measured median time over the model's time on its device, one line of
 * the figure per device x backend, coloured by variant, with each line's
 * median and its p10-p90 range; drawn when a report holds more than one
 * device x backend (noisy rows, over a fifth of their samples contended,
 * left out, as from the fits). Writes the data file only:
 * plots/model_error.gp draws it. Also the quantiles the report's Machines
 * table gives. */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A row whose ratio says something about the model: verified, not noisy,
 * both times known and positive. */
static int error_row(const mb_rpt_row *r)
{
    return r->verified == 1 && !r->noisy && isfinite(r->time_s_median) && r->time_s_median > 0 &&
           isfinite(r->pred_time_s) && r->pred_time_s > 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted v[0..n) (linear between order statistics). */
static double quantile(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int i = (int)floor(at);
    if (i >= n - 1) return v[n - 1];
    return v[i] + (at - i) * (v[i + 1] - v[i]);
}

int rpt_error_quantiles(const mb_rpt_set *s, int gi, double q[3])
{
    int m = 0;
    for (int i = 0; i < s->n_rows; i++) m += s->rows[i].group == gi && error_row(&s->rows[i]);
    q[0] = q[1] = q[2] = NAN;
    if (m == 0) return 0;
    double *v = malloc((size_t)m * sizeof *v);
    if (!v) return -1;
    int k = 0;
    for (int i = 0; i < s->n_rows; i++)
        if (s->rows[i].group == gi && error_row(&s->rows[i]))
            v[k++] = s->rows[i].time_s_median / s->rows[i].pred_time_s;
    qsort(v, (size_t)m, sizeof *v, cmp_double);
    q[0] = quantile(v, m, 0.1);
    q[1] = quantile(v, m, 0.5);
    q[2] = quantile(v, m, 0.9);
    free(v);
    return m;
}

/* At most this many points a line: a series of 10^6 rows shows every k-th
 * (as the residuals figure does); the quantiles use every row. */
#define MAX_POINTS 20000

int rpt_fig_model_error(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    /* the variants, one colour each, in the order rows name them */
    rpt_fig_keys keys;
    memset(&keys, 0, sizeof keys);
    int *vi_of = calloc((size_t)s->n_rows + 1, sizeof *vi_of);
    if (!vi_of) { mb_outfile_abort(&of); return mb_err_set(fc->err, MB_ERUN, "out of memory"); }
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (r->group < 0 || !error_row(r) || !rpt_row_wanted(s, r)) continue;
        int pi;
        rpt_keys_of(&keys, r->variant, "eager", "f32", &vi_of[i], &pi);
    }
    int points = 0;
    for (int i = 0; i < s->n_rows; i++) points += vi_of[i] > 0;
    rpt_dat_begin(fp, "model error across devices");
    rpt_dat_meta_s(fp, "title", "The model's error across devices: measured / model time of every row");
    rpt_dat_meta_d(fp, "lines", s->n_groups);
    rpt_dat_meta_d(fp, "points", points);
    rpt_keys_meta(fp, &keys);
    rpt_dat_block(fp);
    /* block 1: each line: index, its name, p10, median, p90, rows */
    fputs("# line, device (backend), p10, median, p90 of measured / model, rows\n", fp);
    for (int g = 0; g < s->n_groups; g++) {
        char lab[200], b[240];
        double q[3];
        int m = rpt_error_quantiles(s, g, q);
        snprintf(lab, sizeof lab, "%s (%s)", s->groups[g].device, s->groups[g].backend);
        fprintf(fp, "%d %s", g, rpt_dat_str(b, sizeof b, lab));
        for (int k = 0; k < 3; k++) rpt_dat_col(fp, q[k]);
        fprintf(fp, " %d\n", m > 0 ? m : 0);
    }
    /* a block per variant: line, measured / model */
    for (int v = 1; v <= keys.nv; v++) {
        rpt_dat_block(fp);
        fputs("# line, measured / model\n", fp);
        for (int g = 0; g < s->n_groups; g++) {
            int m = 0, k = 0;
            for (int i = 0; i < s->n_rows; i++) m += s->rows[i].group == g && vi_of[i] == v;
            int stride = m > MAX_POINTS ? (m + MAX_POINTS - 1) / MAX_POINTS : 1;
            for (int i = 0; i < s->n_rows; i++) {
                const mb_rpt_row *r = &s->rows[i];
                if (r->group != g || vi_of[i] != v || k++ % stride) continue;
                fprintf(fp, "%d", g);
                rpt_dat_col(fp, r->time_s_median / r->pred_time_s);
                fputc('\n', fp);
            }
        }
    }
    free(vi_of);
    return rpt_fig_finish(fc, &of, "model_error", name,
                          "The model's error across devices: measured / model time of every row");
}
