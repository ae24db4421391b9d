/* fig_whatif.c — the what-if across devices: each variant's remedy (a slow
 * and a fast series) as the model times it on every GPU of the table, or the
 * devices chosen. Writes the data file only: plots/whatif.gp draws it. */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One remedy: a slow and a fast series of one variant at one size. */
typedef struct remedy {
    char variant[MB_NAME_MAX], slow_plan[16], fast_plan[16];
    mb_dtype slow_dt, fast_dt;
    int64_t n;
    char title[160], fast_title[160];
} remedy;

/* The remedies of the series: each lecture demo's claim of largest ratio,
 * and for any other variant its fused (or recompute) plan against eager. */
static int remedies(const mb_rpt_set *s, const rpt_series *se, int ns, remedy *out, int max)
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
        rpt_pow2_label(nb, sizeof nb, r->n);
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
int rpt_fig_whatif(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, const rpt_series *se,
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
             rpt_any_lecture(se, ns) ? "the lecture's remedies" : "fusion", n_devs > 0 ? "chosen devices"
             : own ? "every GPU of the table and the measured GPUs" : "every GPU of the table");
    rpt_dat_begin(fp, "what-if");
    rpt_dat_meta_s(fp, "title", title);
    rpt_dat_meta_d(fp, "remedies", nr);
    char key[32];
    for (int r = 0; r < nr; r++) {
        snprintf(key, sizeof key, "remedy%d", r + 1);
        rpt_dat_meta_s(fp, key, rm[r].title);
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
        rpt_dat_meta_s(fp, key, rm[r].fast_title);
    }
    rpt_dat_block(fp);
    fputs("# device then, per remedy: speed-up (slow / fast), fast time (s)\n", fp);
    for (int i = 0; i < nd; i++) {
        char b[200];
        fprintf(fp, "%s", rpt_dat_str(b, sizeof b, list[i]->name));
        for (int r = 0; r < nr; r++) {
            rpt_dat_col(fp, t[i][r][0] / t[i][r][1]);
            rpt_dat_col(fp, t[i][r][1]);
        }
        fputc('\n', fp);
    }
    free(t);
    return rpt_fig_finish(fc, &of, "whatif", name, title);
}
