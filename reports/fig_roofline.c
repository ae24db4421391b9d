/* fig_roofline.c — a device's roofline: the model's points for the lecture's
 * operations (or the modelled series) and each measured series at its largest
 * n. Writes the data file only: plots/roofline.gp draws it. */
#include "fig_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int roof_measured(const mb_rpt_set *s, int devi, FILE *fp, int write, rpt_fig_keys *k);

/* The model's points of the roofline (block 1): label, flop/byte, TFLOP/s,
 * colour, marker, the point's op-rate ceiling in TFLOP/s (its operations
 * over its compute time alone: where it would sit if memory were free);
 * used[op] set for each op a point evaluates. */
static void roof_model_points(FILE *fp, const mb_rpt_set *s, const rpt_series *se, int ns, int lecture,
                              const mb_device *d, rpt_fig_keys *k, int used[MB_OP_COUNT])
{
    char b[200], lab[160];
    int nops = lecture ? (int)(sizeof roof_ops / sizeof roof_ops[0]) : 0;
    for (int i = 0; i < nops + ns; i++) {
        const roof_op *o = i < nops ? &roof_ops[i] : NULL;
        const rpt_series *x = o ? NULL : &se[i - nops];
        if (x && mb_rpt_demo_of(x->variant)) continue;
        mb_dtype dt = o ? o->dt : (mb_dtype)rpt_dtype_of(x->dtype);
        const char *var = o ? (o->label ? o->label : rpt_display(o->variant)) : rpt_display(x->variant);
        const char *plan = o ? o->plan : x->plan;
        snprintf(lab, sizeof lab, "%s %s %s", var, plan, mb_dtype_name(dt));
        mb_estimate e;
        mb_err err;
        int64_t n = o ? (int64_t)1 << 24 : x->n;
        double per[MB_OP_COUNT] = {0};
        if (rpt_estimate(s, o ? o->variant : x->variant, plan, dt, n, d, &e, per, &err) != MB_OK)
            continue;
        for (int op = 0; op < MB_OP_COUNT; op++) used[op] |= per[op] > 0;
        double ops = e.total.flops + e.total.sfu_ops;
        double bytes = (double)(e.total.dram_read_bytes + e.total.dram_write_bytes);
        if (bytes <= 0) bytes = (double)(e.total.read_bytes + e.total.write_bytes);
        if (ops > 0 && bytes > 0) { /* a copy does no arithmetic: not on a log axis */
            int vi, pi;
            rpt_keys_of(k, var, plan, mb_dtype_name(dt), &vi, &pi);
            fprintf(fp, "%s", rpt_dat_str(b, sizeof b, lab));
            rpt_dat_col(fp, ops / bytes);
            rpt_dat_col(fp, ops / e.total.time_s / 1e12);
            fprintf(fp, " %d %d", vi, pi);
            /* its own op-rate ceiling: its ops over its compute time alone */
            rpt_dat_col(fp, e.total.compute_s > 0 ? ops / e.total.compute_s / 1e12 : NAN);
            fputc('\n', fp);
        }
        mb_estimate_free(&e);
    }
}

/* A device with measured op rates (a calibrated CPU) is bound by the
 * slowest op of a kernel, far under its FMA peak: a ceiling for each
 * special-function op the points evaluate (sin, cos, tanh, ...), its
 * rate times its operations per element (the y axis counts flops and SFU
 * ops alike), as meta ceilingI_tflops and ceilingI_label; at most
 * MAX_CEILINGS, the slowest first. */
#define MAX_CEILINGS 4
static void roof_op_ceilings(FILE *fp, const mb_device *d, const int used[MB_OP_COUNT])
{
    int ops[MB_OP_COUNT], n = 0;
    for (int op = 1; op < MB_OP_COUNT; op++)
        if (used[op] && d->op_geps[op] > 0 && mb_op_info_of((mb_op)op)->cls == MB_COST_SFU) ops[n++] = op;
    for (int i = 1; i < n; i++) /* by ceiling, slowest first (a handful: insertion) */
        for (int j = i; j > 0; j--) {
            mb_op_cost a = mb_op_info_of((mb_op)ops[j - 1])->cost, b = mb_op_info_of((mb_op)ops[j])->cost;
            if (d->op_geps[ops[j - 1]] * (a.flops + a.sfu_ops) <= d->op_geps[ops[j]] * (b.flops + b.sfu_ops)) break;
            int t = ops[j]; ops[j] = ops[j - 1]; ops[j - 1] = t;
        }
    if (n > MAX_CEILINGS) n = MAX_CEILINGS;
    rpt_dat_meta_d(fp, "n_ceilings", n);
    for (int i = 0; i < n; i++) {
        mb_op_cost c = mb_op_info_of((mb_op)ops[i])->cost;
        char key[32], lab[96];
        snprintf(key, sizeof key, "ceiling%d_tflops", i + 1);
        rpt_dat_meta_d(fp, key, d->op_geps[ops[i]] * (c.flops + c.sfu_ops) / 1e3);
        snprintf(key, sizeof key, "ceiling%d_label", i + 1);
        snprintf(lab, sizeof lab, "%s alone: %.3g G/s x %.0f ops", mb_op_name((mb_op)ops[i]), d->op_geps[ops[i]],
                 c.flops + c.sfu_ops);
        rpt_dat_meta_s(fp, key, lab);
    }
}

int rpt_fig_roofline(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int devi,
                     const mb_device *d)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    static rpt_series se[MAX_SERIES];
    int ns = devi < 0 ? rpt_model_series(s, se, MAX_SERIES) : rpt_row_series(s, -1, devi, se, MAX_SERIES);
    int lecture = rpt_any_lecture(se, ns);
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
    rpt_fig_keys k;
    memset(&k, 0, sizeof k);
    int used[MB_OP_COUNT] = {0};
    roof_model_points(pf, s, se, ns, lecture, d, &k, used);
    int nmeas = roof_measured(s, devi, mf, 1, &k);
    fclose(pf);
    fclose(mf);
    rpt_dat_begin(fp, "roofline");
    rpt_dat_meta_s(fp, "title", title);
    rpt_dat_meta_s(fp, "device", d->label);
    rpt_dat_meta_d(fp, "bw_gbs", bw);
    rpt_dat_meta_s(fp, "bw_source", bws);
    rpt_dat_meta_d(fp, "fp32_tflops", d->fp32_tflops);
    rpt_dat_meta_d(fp, "bf16_tflops", d->bf16_tflops);
    rpt_dat_meta_d(fp, "measured_points", nmeas);
    roof_op_ceilings(fp, d, used);
    rpt_keys_meta(fp, &k);
    rpt_dat_block(fp);
    fputs("# label intensity_flop_per_byte tflops colour marker ceiling_tflops\n", fp);
    fputs(npts ? pts : "\"none\" NaN NaN 1 1 NaN\n", fp);
    rpt_dat_block(fp);
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
        if (r->dev != devi || !r->verified || !rpt_row_wanted(s, r)) continue;
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

static int roof_measured(const mb_rpt_set *s, int devi, FILE *fp, int write, rpt_fig_keys *keys)
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
            rpt_series_label(sl, sizeof sl, r->variant, r->plan, r->dtype, 0);
            snprintf(lab, sizeof lab, "%s (%s)", sl, r->backend);
            snprintf(pts[nmeas].label, sizeof pts[nmeas].label, "%s", lab);
            pts[nmeas].ai = ops / bytes;
            pts[nmeas].tflops = ops / r->time_s_median / 1e12;
            rpt_keys_of(keys, rpt_display(r->variant), r->plan, r->dtype, &pts[nmeas].vi, &pts[nmeas].pi);
            nmeas++;
        }
    }
    free(refs);
    if (write && nmeas) {
        qsort(pts, (size_t)nmeas, sizeof *pts, by_ai);
        for (int i = 0; i < nmeas; i++) {
            fprintf(fp, "%s", rpt_dat_str(b, sizeof b, pts[i].label));
            rpt_dat_col(fp, pts[i].ai);
            rpt_dat_col(fp, pts[i].tflops);
            fprintf(fp, " %d %d\n", pts[i].vi, pts[i].pi);
        }
    }
    free(pts);
    return nmeas;
}
