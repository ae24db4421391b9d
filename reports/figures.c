/* figures.c — writes the data file of every figure (gnuplot blocks: block 0
 * holds "key value" metadata, the rest one series each) and asks render.c
 * to copy its script and draw it. Does not draw anything itself: the look
 * of every figure lives in plots/NAME.gp. */
#include "report_int.h"
#include "render_int.h"

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

/* Display name of a variant (gnuplot enhanced text). */
static const char *pretty(const char *variant)
{
    if (!strcmp(variant, "sin2_plus_cos2")) return "sin^2+cos^2";
    if (!strcmp(variant, "gelu_tanh")) return "GELU tanh";
    if (!strcmp(variant, "sigmoid3")) return "sigmoid^3";
    return variant;
}

static const char *series_label(char *buf, size_t size, const char *variant, const char *plan,
                                const char *dtype, int show_dtype)
{
    if (!strcmp(variant, "copy"))
        snprintf(buf, size, strcmp(plan, "eager") ? "copy %s (%s)" : "copy %s", dtype, plan);
    else if (show_dtype)
        snprintf(buf, size, "%s %s %s", pretty(variant), plan, dtype);
    else
        snprintf(buf, size, "%s %s", pretty(variant), plan);
    return buf;
}

static int dtype_of(const char *s)
{
    mb_dtype d;
    return mb_dtype_parse(s, &d) == MB_OK ? (int)d : 0;
}

/* ---- series of a figure ----------------------------------------------- */

typedef struct series {
    char variant[MB_NAME_MAX], plan[16], dtype[8];
    int panel;
} series;

/* The lecture's series, or the distinct (variant, plan, dtype) of a group's
 * rows in lecture order then first appearance. */
static int collect_series(const mb_rpt_set *s, int gi, series *out, int max)
{
    int n = 0;
    if (!s) {
        for (int i = 0; i < RPT_N_LECTURE && n < max; i++, n++) {
            snprintf(out[n].variant, sizeof out[n].variant, "%s", rpt_lecture[i].variant);
            snprintf(out[n].plan, sizeof out[n].plan, "%s", rpt_lecture[i].plan);
            snprintf(out[n].dtype, sizeof out[n].dtype, "%s", mb_dtype_name(rpt_lecture[i].dtype));
            out[n].panel = rpt_lecture[i].panel;
        }
        return n;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < s->n_rows && n < max; i++) {
            const mb_rpt_row *r = &s->rows[i];
            if (r->group != gi) continue;
            int panel = rpt_panel_of(r->variant);
            if ((pass == 0) != (panel < RPT_N_PANELS - 1)) continue;
            int dup = 0;
            for (int k = 0; k < n; k++)
                if (!strcmp(out[k].variant, r->variant) && !strcmp(out[k].plan, r->plan) &&
                    !strcmp(out[k].dtype, r->dtype))
                    dup = 1;
            if (dup) continue;
            snprintf(out[n].variant, sizeof out[n].variant, "%s", r->variant);
            snprintf(out[n].plan, sizeof out[n].plan, "%s", r->plan);
            snprintf(out[n].dtype, sizeof out[n].dtype, "%s", r->dtype);
            out[n].panel = panel;
            n++;
        }
    }
    /* lecture order inside the known panels */
    for (int i = 1; i < n; i++) {
        series t = out[i];
        int j = i;
        while (j > 0 && out[j - 1].panel > t.panel) { out[j] = out[j - 1]; j--; }
        out[j] = t;
    }
    return n;
}

static int row_is(const mb_rpt_row *r, int gi, const series *se)
{
    return r->group == gi && !strcmp(r->variant, se->variant) && !strcmp(r->plan, se->plan) &&
           !strcmp(r->dtype, se->dtype);
}

#define MAX_SERIES 48

/* 1 when group gi of s has a verified row (with counted DRAM bytes when
 * need_dram); 0 for a model-only figure (s NULL). */
static int group_has_rows(const mb_rpt_set *s, int gi, int need_dram)
{
    for (int i = 0; s && i < s->n_rows; i++)
        if (s->rows[i].group == gi && s->rows[i].verified && (!need_dram || s->rows[i].has_dram))
            return 1;
    return 0;
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
    char title[256];
    snprintf(title, sizeof title, "Bytes moved per element: model vs %s",
             measured ? "measured (DRAM counters)" : "the lecture's count");
    meta_begin(fp, "bytes per element");
    meta_s(fp, "title", title);
    meta_s(fp, "device", d->label);
    meta_d(fp, "measured", measured);
    meta_s(fp, "measured_title", measured ? "measured DRAM (counters)"
                                           : s ? "measured DRAM: no counters on this backend" : "");
    block(fp);
    char b1[160], b2[160], b3[64];
    fputs("# label lecture model_dram measured count n\n", fp);
    for (int k = 0; k < ns; k++) {
        mb_dtype dt = (mb_dtype)dtype_of(se[k].dtype);
        /* size: the lecture's, or the largest measured */
        int64_t n = 0;
        const mb_rpt_row *best = NULL;
        for (int i = 0; i < RPT_N_LECTURE; i++)
            if (!strcmp(rpt_lecture[i].variant, se[k].variant)) n = rpt_lecture[i].lecture_n;
        if (s) {
            for (int i = 0; i < s->n_rows; i++) {
                const mb_rpt_row *r = &s->rows[i];
                if (!row_is(r, gi, &se[k]) || !r->verified) continue;
                if (!best || (best->n != n && (r->n == n || r->n > best->n))) best = r;
            }
            if (best) n = best->n;
        }
        if (n <= 0) n = (int64_t)1 << 24;
        mb_estimate e;
        mb_err err;
        if (rpt_estimate(se[k].variant, se[k].plan, dt, n, d, &e, NULL, &err) != MB_OK) continue;
        double lect = (double)(e.total.read_bytes + e.total.write_bytes) / (double)n;
        double dram = (double)(e.total.dram_read_bytes + e.total.dram_write_bytes) / (double)n;
        double meas = NAN;
        if (best && best->has_dram)
            meas = (double)(best->dram_read_bytes + best->dram_write_bytes) / (double)n;
        mb_estimate_free(&e);
        const char *cnt = rpt_lecture_count(se[k].variant, se[k].plan, dt);
        char cbuf[32];
        if (!cnt) {
            snprintf(cbuf, sizeof cbuf, "%.3gn", lect / (double)mb_dtype_bytes(dt));
            cnt = cbuf;
        }
        /* tick label on three lines: variant, plan (dtype for copy), size */
        snprintf(b1, sizeof b1, "%s\\n%s", pretty(se[k].variant),
                 !strcmp(se[k].variant, "copy") ? se[k].dtype : se[k].plan);
        if (strcmp(se[k].variant, "copy") != 0 && dt != MB_F32) {
            size_t l = strlen(b1);
            snprintf(b1 + l, sizeof b1 - l, " %s", se[k].dtype);
        }
        char lab[200];
        int lg = 0;
        while (lg < 62 && ((int64_t)1 << lg) < n) lg++;
        if (((int64_t)1 << lg) == n) snprintf(lab, sizeof lab, "%s\\nn=2^{%d}", b1, lg);
        else snprintf(lab, sizeof lab, "%s\\nn=%lld", b1, (long long)n);
        fprintf(fp, "%s", q(b2, sizeof b2, lab));
        col(fp, lect);
        col(fp, dram);
        col(fp, meas);
        fprintf(fp, " %s %lld\n", q(b3, sizeof b3, cnt), (long long)n);
    }
    return rpt_fig_finish(fc, &of, "bytes", name, title);
}

/* ---- time against n ----------------------------------------------------- */

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
    meta_d(fp, "launch_s", d->launch_overhead_us * 1e-6);
    meta_d(fp, "measured", any_meas);
    int used_panels[RPT_N_PANELS] = {0};
    for (int k = 0; k < ns; k++) used_panels[se[k].panel] = 1;
    int np = 0;
    char key[32];
    int panel_map[RPT_N_PANELS];
    for (int p = 0; p < RPT_N_PANELS; p++) {
        panel_map[p] = -1;
        if (!used_panels[p]) continue;
        snprintf(key, sizeof key, "panel%d", np);
        meta_s(fp, key, rpt_panel_titles[p]);
        panel_map[p] = np++;
    }
    meta_d(fp, "panels", np);
    for (int k = 0; k < ns; k++) {
        mb_dtype dt = (mb_dtype)dtype_of(se[k].dtype);
        /* sizes: every power of two 2^10..2^28, plus the measured ones */
        int64_t sizes[256];
        int nn = 0;
        for (int lg = 10; lg <= 28; lg++) sizes[nn++] = (int64_t)1 << lg;
        if (s)
            for (int i = 0; i < s->n_rows && nn < 256; i++)
                if (row_is(&s->rows[i], gi, &se[k])) sizes[nn++] = s->rows[i].n;
        for (int i = 1; i < nn; i++) { /* sort, unique */
            int64_t t = sizes[i];
            int j = i;
            while (j > 0 && sizes[j - 1] > t) { sizes[j] = sizes[j - 1]; j--; }
            sizes[j] = t;
        }
        block(fp);
        char b1[160], b2[200];
        series_label(b1, sizeof b1, se[k].variant, se[k].plan, se[k].dtype, 0);
        fprintf(fp, "%s model_s median_s min_s p90_s panel\n", q(b2, sizeof b2, b1));
        int64_t prev = -1;
        for (int i = 0; i < nn; i++) {
            if (sizes[i] == prev) continue;
            prev = sizes[i];
            mb_estimate e;
            mb_err err;
            double model = NAN;
            if (rpt_estimate(se[k].variant, se[k].plan, dt, sizes[i], d, &e, NULL, &err) == MB_OK) {
                model = e.total.time_s;
                mb_estimate_free(&e);
            }
            const mb_rpt_row *r = NULL;
            if (s)
                for (int j = 0; j < s->n_rows; j++)
                    if (row_is(&s->rows[j], gi, &se[k]) && s->rows[j].n == sizes[i] &&
                        s->rows[j].verified)
                        r = &s->rows[j];
            fprintf(fp, "%lld", (long long)sizes[i]);
            col(fp, model);
            col(fp, r ? r->time_s_median : NAN);
            col(fp, r ? (isfinite(r->time_s_min) ? r->time_s_min : r->time_s_median) : NAN);
            col(fp, r ? (isfinite(r->time_s_p90) ? r->time_s_p90 : r->time_s_median) : NAN);
            fprintf(fp, " %d\n", panel_map[se[k].panel]);
        }
    }
    return rpt_fig_finish(fc, &of, "time_vs_n", name, title);
}

/* ---- roofline ----------------------------------------------------------- */

typedef struct roof_op {
    const char *label, *variant, *plan;
    mb_dtype dt;
} roof_op;

static const roof_op roof_ops[] = {
    {"ReLU f32", "expr:y = relu(x)", "fused", MB_F32},
    {"ReLU bf16", "expr:y = relu(x)", "fused", MB_BF16},
    {"sin^2+cos^2 eager", "sin2_plus_cos2", "eager", MB_F32},
    {"sin^2+cos^2 fused", "sin2_plus_cos2", "fused", MB_F32},
    {"GELU eager", "gelu_tanh", "eager", MB_F32},
    {"GELU fused", "gelu_tanh", "fused", MB_F32},
};

static int roof_measured(const mb_rpt_set *s, int devi, FILE *fp, int write);

static int fig_roofline(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int devi,
                        const mb_device *d)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    const char *bws;
    double bw = mb_device_bandwidth_gbs(d, &bws);
    char title[256];
    snprintf(title, sizeof title, "Roofline of %s with the lecture's operations", d->label);
    meta_begin(fp, "roofline");
    meta_s(fp, "title", title);
    meta_s(fp, "device", d->label);
    meta_d(fp, "bw_gbs", bw);
    meta_s(fp, "bw_source", bws);
    meta_d(fp, "fp32_tflops", d->fp32_tflops);
    meta_d(fp, "bf16_tflops", d->bf16_tflops);
    meta_d(fp, "measured_points", roof_measured(s, devi, NULL, 0));
    block(fp);
    fputs("# label intensity_flop_per_byte tflops\n", fp);
    char b[200];
    for (size_t i = 0; i < sizeof roof_ops / sizeof roof_ops[0]; i++) {
        const roof_op *o = &roof_ops[i];
        mb_estimate e;
        mb_err err;
        int64_t n = (int64_t)1 << 24;
        if (rpt_estimate(o->variant, o->plan, o->dt, n, d, &e, NULL, &err) != MB_OK) continue;
        double ops = e.total.flops + e.total.sfu_ops;
        double bytes = (double)(e.total.dram_read_bytes + e.total.dram_write_bytes);
        if (bytes <= 0) bytes = (double)(e.total.read_bytes + e.total.write_bytes);
        fprintf(fp, "%s", q(b, sizeof b, o->label));
        col(fp, ops / bytes);
        col(fp, ops / e.total.time_s / 1e12);
        fputc('\n', fp);
        mb_estimate_free(&e);
    }
    block(fp);
    fputs("# label intensity_flop_per_byte tflops\n", fp);
    int nmeas = roof_measured(s, devi, fp, 1);
    if (!nmeas) fputs("\"none\" NaN NaN\n", fp);
    return rpt_fig_finish(fc, &of, "roofline", name, title);
}

/* Writes (when write is set) and counts the measured roofline points of
 * device devi: each series at its largest verified n. */
typedef struct roof_pt {
    char label[200];
    double ai, tflops;
} roof_pt;

static int by_ai(const void *a, const void *b)
{
    double x = ((const roof_pt *)a)->ai, y = ((const roof_pt *)b)->ai;
    return (x > y) - (x < y);
}

static int roof_measured(const mb_rpt_set *s, int devi, FILE *fp, int write)
{
    int nmeas = 0;
    char b[200];
    roof_pt *pts = s ? calloc((size_t)s->n_rows + 1, sizeof *pts) : NULL;
    if (s && !pts) return 0;
    if (s) {
        for (int i = 0; i < s->n_rows; i++) {
            const mb_rpt_row *r = &s->rows[i];
            if (r->dev != devi || !r->verified || !(r->time_s_median > 0)) continue;
            int larger = 0;
            for (int j = 0; j < s->n_rows; j++) {
                const mb_rpt_row *o = &s->rows[j];
                if (o != r && o->dev == devi && o->verified && !strcmp(o->variant, r->variant) &&
                    !strcmp(o->plan, r->plan) && !strcmp(o->dtype, r->dtype) &&
                    !strcmp(o->backend, r->backend) && (o->n > r->n || (o->n == r->n && j < i)))
                    larger = 1;
            }
            if (larger) continue;
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
            nmeas++;
        }
    }
    if (write && nmeas) {
        qsort(pts, (size_t)nmeas, sizeof *pts, by_ai);
        for (int i = 0; i < nmeas; i++) {
            fprintf(fp, "%s", q(b, sizeof b, pts[i].label));
            col(fp, pts[i].ai);
            col(fp, pts[i].tflops);
            fputc('\n', fp);
        }
    }
    free(pts);
    return nmeas;
}

/* ---- what-if across the GPU table ----------------------------------------- */

static int fig_whatif(rpt_fig_ctx *fc, const char *name)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    const char *title = "What if: the lecture's demos on every GPU of the table (model)";
    meta_begin(fp, "what-if");
    meta_s(fp, "title", title);
    block(fp);
    fputs("# gpu sin_eager_s sin_fused_s gelu_eager_s gelu_fused_s sig_eager_s sig_recompute_s "
          "copy_f32_s copy_bf16_s sin_speedup gelu_speedup sig_speedup copy_speedup\n", fp);
    static const struct { const char *v, *p; mb_dtype dt; } cols[] = {
        {"sin2_plus_cos2", "eager", MB_F32}, {"sin2_plus_cos2", "fused", MB_F32},
        {"gelu_tanh", "eager", MB_F32},      {"gelu_tanh", "fused", MB_F32},
        {"sigmoid3", "eager", MB_F32},       {"sigmoid3", "recompute", MB_F32},
        {"copy", "eager", MB_F32},           {"copy", "eager", MB_BF16},
    };
    for (int i = 0; i < mb_device_count(); i++) {
        const mb_device *d = mb_device_at(i);
        if (strcmp(d->kind, "gpu") != 0) continue;
        double t[8];
        for (int k = 0; k < 8; k++) {
            t[k] = NAN;
            int64_t n = (int64_t)1 << 24;
            for (int j = 0; j < RPT_N_LECTURE; j++)
                if (!strcmp(rpt_lecture[j].variant, cols[k].v)) n = rpt_lecture[j].lecture_n;
            mb_estimate e;
            mb_err err;
            if (rpt_estimate(cols[k].v, cols[k].p, cols[k].dt, n, d, &e, NULL, &err) == MB_OK) {
                t[k] = e.total.time_s;
                mb_estimate_free(&e);
            }
        }
        char b[200];
        fprintf(fp, "%s", q(b, sizeof b, d->name));
        for (int k = 0; k < 8; k++) col(fp, t[k]);
        for (int k = 0; k < 8; k += 2) col(fp, t[k] / t[k + 1]);
        fputc('\n', fp);
    }
    return rpt_fig_finish(fc, &of, "whatif", name, title);
}

/* ---- recomputation -------------------------------------------------------- */

static int fig_recompute(rpt_fig_ctx *fc, const char *name, const mb_rpt_set *s, int gi,
                         const mb_device *d)
{
    FILE *fp;
    mb_outfile of;
    int rc = rpt_fig_open(fc, name, &of, &fp);
    if (rc) return rc;
    int64_t n = (int64_t)1 << 20;
    char title[256];
    snprintf(title, sizeof title, "Recomputation: sigmoid^3 forward + backward, n = 2^{20} f32");
    meta_begin(fp, "recomputation");
    meta_s(fp, "title", title);
    meta_s(fp, "device", d->label);
    meta_d(fp, "n", (double)n);
    int mb_bytes = 0, mb_time = 0;
    if (s)
        for (int i = 0; i < s->n_rows; i++) {
            const mb_rpt_row *x = &s->rows[i];
            if (x->group == gi && x->verified && x->n == n && !strcmp(x->variant, "sigmoid3") &&
                !strcmp(x->dtype, "f32")) {
                mb_time = 1;
                if (x->has_dram) mb_bytes = 1;
            }
        }
    meta_d(fp, "measured_bytes", mb_bytes);
    meta_d(fp, "measured_time", mb_time);
    block(fp);
    fputs("# plan lecture_mb model_dram_mb measured_dram_mb saved_mb model_ms measured_ms count\n", fp);
    static const char *plans[] = {"eager", "store", "recompute"};
    for (int k = 0; k < 3; k++) {
        mb_estimate e;
        mb_err err;
        if (rpt_estimate("sigmoid3", plans[k], MB_F32, n, d, &e, NULL, &err) != MB_OK) continue;
        const mb_rpt_row *r = NULL;
        if (s)
            for (int i = 0; i < s->n_rows; i++) {
                const mb_rpt_row *x = &s->rows[i];
                if (x->group == gi && x->verified && x->n == n && !strcmp(x->variant, "sigmoid3") &&
                    !strcmp(x->plan, plans[k]) && !strcmp(x->dtype, "f32"))
                    r = x;
            }
        char b[64];
        fprintf(fp, "%s", plans[k]);
        col(fp, (double)(e.total.read_bytes + e.total.write_bytes) / 1e6);
        col(fp, (double)(e.total.dram_read_bytes + e.total.dram_write_bytes) / 1e6);
        col(fp, r && r->has_dram ? (double)(r->dram_read_bytes + r->dram_write_bytes) / 1e6 : NAN);
        col(fp, (double)e.saved_bytes / 1e6);
        col(fp, e.total.time_s * 1e3);
        col(fp, r ? r->time_s_median * 1e3 : NAN);
        const char *cnt = rpt_lecture_count("sigmoid3", plans[k], MB_F32);
        fprintf(fp, " %s\n", q(b, sizeof b, cnt ? cnt : ""));
        mb_estimate_free(&e);
    }
    return rpt_fig_finish(fc, &of, "recompute", name, title);
}

/* ---- residuals ------------------------------------------------------------ */

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
    char fitline[200];
    if (g->fitted && isfinite(g->bandwidth_gbs))
        snprintf(fitline, sizeof fitline, "fit: t0 = %.3g us, bandwidth = %.4g GB/s, R^2 = %.4f",
                 g->t0_s * 1e6, g->bandwidth_gbs, g->line.r2);
    else
        snprintf(fitline, sizeof fitline, "no bandwidth fit");
    meta_s(fp, "fitline", fitline);
    for (int k = 0; k < ns; k++) {
        block(fp);
        char b1[160], b2[200];
        series_label(b1, sizeof b1, se[k].variant, se[k].plan, se[k].dtype, 0);
        fprintf(fp, "%s time_resid_pct model_resid_pct bytes_resid_pct outlier used\n",
                q(b2, sizeof b2, b1));
        int any = 0;
        for (int i = 0; i < s->n_rows; i++) {
            const mb_rpt_row *r = &s->rows[i];
            if (!row_is(r, gi, &se[k]) || !r->verified) continue;
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

/* ---- entry points --------------------------------------------------------- */

int mb_rpt_model_figures(const mb_device *d, const char *dir, unsigned formats, int render,
                         mb_rpt_figures *out, mb_err *err)
{
    rpt_fig_ctx fc;
    int rc = rpt_fig_begin(&fc, dir, formats, render, out, err);
    if (rc) return rc;
    if (!rc) rc = fig_bytes(&fc, "bytes", NULL, -1, d);
    if (!rc) rc = fig_time(&fc, "time_vs_n", NULL, -1, d);
    if (!rc) rc = fig_roofline(&fc, "roofline", NULL, -1, d);
    if (!rc) rc = fig_whatif(&fc, "whatif");
    if (!rc) rc = fig_recompute(&fc, "recompute", NULL, -1, d);
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

int mb_rpt_set_figures(const mb_rpt_set *s, const char *dir, unsigned formats, int render,
                       mb_rpt_figures *out, mb_err *err)
{
    rpt_fig_ctx fc;
    int rc = rpt_fig_begin(&fc, dir, formats, render, out, err);
    if (rc) return rc;
    char name[160], suf[128];
    for (int g = 0; g < s->n_groups && !rc; g++) {
        const mb_device *d = &s->devices[s->groups[g].dev];
        if (s->n_groups > 1) suffix(suf, sizeof suf, s->groups[g].device, s->groups[g].backend);
        else suf[0] = '\0';
        snprintf(name, sizeof name, "bytes%s", suf);
        rc = fig_bytes(&fc, name, s, g, d);
        snprintf(name, sizeof name, "time_vs_n%s", suf);
        if (!rc) rc = fig_time(&fc, name, s, g, d);
        snprintf(name, sizeof name, "residuals%s", suf);
        if (!rc) rc = fig_residuals(&fc, name, s, g);
        int has_sig = 0;
        for (int i = 0; i < s->n_rows; i++)
            if (s->rows[i].group == g && !strcmp(s->rows[i].variant, "sigmoid3")) has_sig = 1;
        snprintf(name, sizeof name, "recompute%s", suf);
        if (!rc && has_sig) rc = fig_recompute(&fc, name, s, g, d);
    }
    /* one roofline per device, with every backend's points on it */
    for (int di = 0; di < s->n_devices && !rc; di++) {
        int used = 0;
        for (int g = 0; g < s->n_groups; g++) if (s->groups[g].dev == di) used = 1;
        if (!used) continue;
        int ndev = 0;
        for (int k = 0; k < s->n_devices; k++)
            for (int g = 0; g < s->n_groups; g++) if (s->groups[g].dev == k) { ndev++; break; }
        if (ndev > 1) suffix(suf, sizeof suf, s->devices[di].name, NULL);
        else suf[0] = '\0';
        snprintf(name, sizeof name, "roofline%s", suf);
        rc = fig_roofline(&fc, name, s, di, &s->devices[di]);
    }
    if (!rc) rc = fig_whatif(&fc, "whatif");
    return rpt_fig_end(&fc, rc);
}
