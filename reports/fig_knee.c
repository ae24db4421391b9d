/* fig_knee.c — traffic and time against row length at a fixed n: where a
 * row kernel's one pass (a row kept on chip) gives way to several (each
 * re-reading the row), on two GPUs and a CPU, from the model
 * (mb_estimate_plan_shape, mb_kernel_onepass_max_cols), with a CPU's
 * measured rows on it. Writes the data file and has plots/knee.gp drawn
 * (render.c); does not choose which figures a report has (figures.c). */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KNEE_MIN_LOG2 4 /* rows of 16 columns ... */
#define KNEE_MAX_DEVICES 3

static const char *const knee_gpus[] = {"h100-sxm", "a100-80gb"};

static int is_cpu_row(const mb_rpt_row *r)
{
    return r->cols > 0 && r->backend && !strcmp(r->backend, "cpu");
}

int rpt_has_row_ops(const mb_rpt_set *s, const char *variant)
{
    mb_graph *g = NULL;
    mb_err e;
    if (mb_rpt_load_variant(s, -1, variant, MB_F32, &g, &e)) return 0;
    int rows = g->has_row_ops;
    mb_graph_free(g);
    return rows;
}

/* 1 when variant has row operations and a fused plan, which the knee
 * figure draws (a backward variant, softmax_bwd, has store and recompute). */
static int knee_drawable(const mb_rpt_set *s, const char *variant)
{
    mb_graph *g = NULL;
    mb_err e;
    if (mb_rpt_load_variant(s, -1, variant, MB_F32, &g, &e)) return 0;
    int ok = g->has_row_ops && mb_plan_supported(g, MB_PLAN_FUSED);
    mb_graph_free(g);
    return ok;
}

const char *rpt_knee_variant(const mb_rpt_set *s, const rpt_series *se, int ns)
{
    /* each variant judged once: rows hold interned names, one pointer each */
    const char *seen[64];
    int n_seen = 0;
    for (int i = 0; s && i < s->n_rows; i++) {
        const char *v = s->rows[i].variant;
        if (s->rows[i].cols <= 0 || !v) continue;
        int known = 0;
        for (int k = 0; k < n_seen && !known; k++) known = seen[k] == v;
        if (known) continue;
        if (knee_drawable(s, v)) return v;
        if (n_seen < 64) seen[n_seen++] = v;
    }
    for (int i = 0; i < ns; i++)
        if (knee_drawable(s, se[i].variant)) return se[i].variant;
    return NULL;
}

/* The measured rows drawn: verified 2-D CPU rows of variant and plan, f32. */
static int measured(const mb_rpt_row *r, const char *variant, const char *plan)
{
    return is_cpu_row(r) && r->verified && !strcmp(r->variant, variant) && !strcmp(r->plan, plan) &&
           r->dtype && !strcmp(r->dtype, "f32");
}

/* The n of the figure: the most common among the measured rows, else 2^24. */
static int64_t knee_n(const mb_rpt_set *s, const char *variant)
{
    int64_t best = (int64_t)1 << 24;
    int best_count = 0;
    for (int i = 0; s && i < s->n_rows; i++) {
        if (!measured(&s->rows[i], variant, "fused")) continue;
        int c = 0;
        for (int j = 0; j < s->n_rows; j++) c += measured(&s->rows[j], variant, "fused") && s->rows[j].n == s->rows[i].n;
        if (c > best_count) best = s->rows[i].n, best_count = c;
    }
    return best;
}

/* The CPU of the set's measured rows (its first group of backend cpu). */
static const mb_device *set_cpu(const mb_rpt_set *s)
{
    for (int g = 0; s && g < s->n_groups; g++)
        if (!strcmp(s->groups[g].backend, "cpu")) return &s->devices[s->groups[g].dev];
    return NULL;
}

static void knee_meta(FILE *fp, const char *key, const char *val)
{
    fprintf(fp, "%s \"", key);
    for (const char *p = val; *p; p++) fputc(*p == '"' ? '\'' : *p == '_' ? '-' : *p, fp);
    fputs("\"\n", fp);
}

static void knee_col(FILE *fp, double v)
{
    if (isfinite(v)) fprintf(fp, " %.9g", v);
    else fputs(" NaN", fp);
}

/* One model series: plan on d, cols = 2^KNEE_MIN_LOG2 .. n. */
static int model_block(FILE *fp, const mb_plan *p, const mb_device *d, int64_t n, int dev_index, mb_err *err)
{
    fprintf(fp, "\n\n\"%s %s\" cols lecture_n dram_n time_s passes dev\n", d->name, mb_plan_name(p->kind));
    for (int64_t cols = (int64_t)1 << KNEE_MIN_LOG2; cols <= n; cols *= 2) {
        mb_estimate e;
        int rc = mb_estimate_plan_shape(p, (mb_shape){2, n / cols, cols, 0}, d, &e, err);
        if (rc) return rc;
        double per_n = (double)n * 4.0;
        int passes = 0;
        for (int k = 0; k < e.n_kernels; k++) passes = e.per_kernel[k].passes > passes ? e.per_kernel[k].passes : passes;
        fprintf(fp, "%lld", (long long)cols);
        knee_col(fp, (double)(e.total.read_bytes + e.total.write_bytes) / per_n);
        knee_col(fp, (double)(e.total.dram_read_bytes + e.total.dram_write_bytes) / per_n);
        knee_col(fp, e.total.time_s);
        fprintf(fp, " %d %d\n", passes, dev_index);
        mb_estimate_free(&e);
    }
    return MB_OK;
}

/* The devices drawn: the two GPUs and the CPU (when there is one). */
static int knee_devices(const mb_device *cpu, mb_device *out, mb_err *err)
{
    int nd = 0;
    for (size_t i = 0; i < sizeof knee_gpus / sizeof knee_gpus[0]; i++) {
        int rc = mb_device_find(knee_gpus[i], &out[nd], err);
        if (rc) return -1;
        nd++;
    }
    if (cpu) out[nd++] = *cpu;
    return nd;
}

int rpt_fig_knee(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, const char *variant,
                 const mb_device *cpu)
{
    mb_err *err = fc->err;
    if (!cpu || strcmp(cpu->kind, "cpu")) cpu = set_cpu(s);
    mb_device dev[KNEE_MAX_DEVICES];
    int nd = knee_devices(cpu, dev, err);
    if (nd < 0) return MB_EINPUT;
    mb_graph *g = NULL;
    int rc = mb_rpt_load_variant(s, -1, variant, MB_F32, &g, err);
    if (!rc) rc = mb_graph_set_rank(g, 2, err);
    mb_plan *plans[2] = {NULL, NULL};
    static const mb_plan_kind kinds[2] = {MB_PLAN_FUSED, MB_PLAN_ONLINE};
    for (int k = 0; k < 2 && !rc; k++)
        if (mb_plan_supported(g, kinds[k])) rc = mb_plan_build(g, kinds[k], &plans[k], err);
    FILE *fp = NULL;
    mb_outfile of;
    if (!rc && !plans[0]) rc = mb_err_set(err, MB_EINPUT, "knee figure: '%s' has no fused plan", variant);
    if (!rc) rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) {
        for (int k = 0; k < 2; k++) mb_plan_free(plans[k]);
        mb_graph_free(g);
        return rc;
    }
    const int64_t n = knee_n(s, variant);
    char title[256];
    snprintf(title, sizeof title, "One pass or several: %s at n = 2^{%d} f32 against the row length", variant,
             (int)lround(log2((double)n)));
    fputs("# membound figure data: knee\n# block 0: metadata; each later block: one series\nkey value\n", fp);
    knee_meta(fp, "title", title);
    knee_meta(fp, "variant", variant);
    fprintf(fp, "n %lld\ndevices %d\nplans %d\n", (long long)n, nd, plans[1] ? 2 : 1);
    for (int i = 0; i < nd; i++) { /* each device's knee: the fused kernel's longest one-pass row */
        int64_t most = INT64_MAX;
        for (int k = 0; k < plans[0]->n_kernels; k++) {
            int64_t m = mb_kernel_onepass_max_cols(&plans[0]->kernels[k], &dev[i]);
            if (m > 0 && m < most) most = m;
        }
        char key[32];
        snprintf(key, sizeof key, "device_%d", i + 1);
        knee_meta(fp, key, dev[i].name);
        fprintf(fp, "knee_%d %lld\n", i + 1, most == INT64_MAX ? 0LL : (long long)most);
    }
    int n_measured = 0;
    for (int i = 0; s && i < s->n_rows; i++) n_measured += measured(&s->rows[i], variant, "fused") && s->rows[i].n == n;
    fprintf(fp, "measured %d\n", n_measured);
    knee_meta(fp, "measured_device", cpu ? cpu->name : "");
    for (int i = 0; i < nd && !rc; i++)
        for (int k = 0; k < 2 && !rc; k++)
            if (plans[k]) rc = model_block(fp, plans[k], &dev[i], n, i + 1, err);
    fputs("\n\n\"measured fused\" cols median_s min_s\n", fp);
    for (int i = 0; s && i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (!measured(r, variant, "fused") || r->n != n) continue;
        fprintf(fp, "%lld", (long long)r->cols);
        knee_col(fp, r->time_s_median);
        knee_col(fp, r->time_s_min);
        fputc('\n', fp);
    }
    if (!n_measured) fputs("1 NaN NaN\n", fp);
    for (int k = 0; k < 2; k++) mb_plan_free(plans[k]);
    mb_graph_free(g);
    if (rc) {
        mb_outfile_abort(&of);
        return rc;
    }
    return rpt_fig_finish(fc, &of, "knee", name, title);
}
