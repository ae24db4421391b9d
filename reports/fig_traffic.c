/* fig_traffic.c — the figures of bytes moved: per element of each series (the
 * lecture's count, the model's DRAM bytes, the counters), and the recomputation
 * demo's plans. Writes data files only: plots/bytes.gp, recompute.gp draw them. */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- bytes per element -------------------------------------------------- */

int rpt_fig_bytes(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                  const mb_device *d)
{
    rpt_series se[MAX_SERIES];
    int ns = rpt_collect_series(s, gi, se, MAX_SERIES);
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    int measured = rpt_group_has_rows(s, gi, 1);
    int lecture = rpt_any_lecture(se, ns);
    char title[256];
    snprintf(title, sizeof title, "Bytes moved per element: model vs %s",
             measured ? "measured (DRAM counters)" : lecture ? "the lecture's count" : "the traffic rule");
    rpt_dat_begin(fp, "bytes per element");
    rpt_dat_meta_s(fp, "title", title);
    rpt_dat_meta_s(fp, "device", d->label);
    rpt_dat_meta_d(fp, "measured", measured);
    rpt_dat_meta_s(fp, "measured_title", measured ? "measured DRAM (counters)"
                                 : gi >= 0 ? "measured DRAM: no counters on this backend" : "");
    rpt_dat_meta_s(fp, "count_title", lecture ? "lecture's count (traffic rule)" : "traffic-rule count");
    int any_cold = 0;
    for (int i = 0; gi >= 0 && i < s->n_rows; i++)
        any_cold |= s->rows[i].group == gi && s->rows[i].has_dram && s->rows[i].cold_kernels;
    if (any_cold)
        rpt_dat_meta_s(fp, "model_title", "model: DRAM bytes (cache-aware; each kernel cold where marked)");
    rpt_dat_block(fp);
    char b1[160], b2[200], b3[64], nb[32];
    fputs("# label count_bytes_per_elem model_dram measured count_label n\n", fp);
    for (int k = 0; k < ns; k++) {
        mb_dtype dt = (mb_dtype)rpt_dtype_of(se[k].dtype);
        int64_t n = se[k].n;
        const mb_rpt_row *best = NULL;
        for (int i = 0; gi >= 0 && i < s->n_rows; i++)
            if (rpt_row_is(&s->rows[i], gi, &se[k]) && s->rows[i].verified && s->rows[i].n == n)
                best = &s->rows[i];
        mb_estimate e;
        mb_err err;
        if (rpt_estimate(s, se[k].variant, se[k].plan, dt, n, d, &e, NULL, &err) != MB_OK) continue;
        double lect = (double)(e.total.read_bytes + e.total.write_bytes) / (double)n;
        double dram = (double)(e.total.dram_read_bytes + e.total.dram_write_bytes) / (double)n;
        /* a row measured with every kernel from a flushed cache was judged
         * on the cold count: its model bar is that count, not the
         * cache-aware one (sin^2+cos^2 eager under ncu: 44 B, not 24) */
        int cold = best && best->has_dram && best->cold_kernels;
        if (cold) dram = lect;
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
                 rpt_by_dtype(se[k].variant) ? se[k].dtype : se[k].plan);
        if (!rpt_by_dtype(se[k].variant) && dt != MB_F32) {
            size_t l = strlen(b1);
            snprintf(b1 + l, sizeof b1 - l, " %s", se[k].dtype);
        }
        char lab[200];
        snprintf(lab, sizeof lab, "%s\\nn = %s%s", b1, rpt_pow2_label(nb, sizeof nb, n),
                 cold ? "\\nmodel: cold per kernel" : "");
        fprintf(fp, "%s", rpt_dat_str(b2, sizeof b2, lab));
        rpt_dat_col(fp, lect);
        rpt_dat_col(fp, dram);
        rpt_dat_col(fp, meas);
        fprintf(fp, " %s %lld\n", rpt_dat_str(b3, sizeof b3, clab), (long long)n);
    }
    return rpt_fig_finish(fc, &of, "bytes", name, title);
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

int rpt_fig_recompute(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
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
             rpt_pow2_label(nb, sizeof nb, n));
    rpt_dat_begin(fp, "recomputation");
    rpt_dat_meta_s(fp, "title", title);
    rpt_dat_meta_s(fp, "device", d->label);
    rpt_dat_meta_d(fp, "n", (double)n);
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
    rpt_dat_meta_d(fp, "measured_bytes", mb_bytes);
    rpt_dat_meta_d(fp, "measured_time", mb_time);
    rpt_dat_meta_d(fp, "plans", np);
    double unit = tmax >= 1e-3 ? 1e-3 : 1e-6;
    rpt_dat_meta_s(fp, "time_unit", unit == 1e-3 ? "ms" : "µs");
    rpt_dat_block(fp);
    fputs("# plan count_mb model_dram_mb measured_dram_mb saved_mb model_time measured_time count "
          "measured_min measured_p90\n", fp);
    for (int k = 0; k < np; k++) {
        if (!ok[k]) continue;
        const mb_rpt_row *r = rw[k];
        char b[64], cb[32];
        double lect = (double)(e[k].total.read_bytes + e[k].total.write_bytes);
        if (!counts[k]) snprintf(cb, sizeof cb, "%.3gn", lect / (double)n / 4.0);
        fprintf(fp, "%s", plans[k]);
        rpt_dat_col(fp, lect / 1e6);
        rpt_dat_col(fp, (double)(e[k].total.dram_read_bytes + e[k].total.dram_write_bytes) / 1e6);
        rpt_dat_col(fp, r && r->has_dram ? (double)(r->dram_read_bytes + r->dram_write_bytes) / 1e6 : NAN);
        rpt_dat_col(fp, (double)e[k].saved_bytes / 1e6);
        rpt_dat_col(fp, e[k].total.time_s / unit);
        rpt_dat_col(fp, r ? r->time_s_median / unit : NAN);
        fprintf(fp, " %s", rpt_dat_str(b, sizeof b, counts[k] ? counts[k] : cb));
        rpt_dat_col(fp, r ? (isfinite(r->time_s_min) ? r->time_s_min : r->time_s_median) / unit : NAN);
        rpt_dat_col(fp, r ? (isfinite(r->time_s_p90) ? r->time_s_p90 : r->time_s_median) / unit : NAN);
        fputc('\n', fp);
        mb_estimate_free(&e[k]);
    }
    return rpt_fig_finish(fc, &of, "recompute", name, title);
}
