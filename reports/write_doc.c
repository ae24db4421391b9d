/* write_doc.c — the report document (report.md, report.html: one rpt_doc)
 * and the index of the model-only figures. Does not write the CSV or JSON
 * files (write_csv.c, write_json.c) and computes nothing the set does not
 * already hold. */
#include "write_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *ratio(char *buf, size_t size, double v)
{
    if (!isfinite(v)) return "—";
    snprintf(buf, size, "%.2fx", v);
    return buf;
}

static const char *pow2(char *buf, size_t size, int64_t n)
{
    int lg = 0;
    while (lg < 62 && ((int64_t)1 << lg) < n) lg++;
    if (n > 0 && ((int64_t)1 << lg) == n) snprintf(buf, size, "2^%d", lg);
    else snprintf(buf, size, "%lld", (long long)n);
    return buf;
}

/* ---- the report document --------------------------------------------------- */

/* The counted bytes ratio, or "modelled" where no counters ran. */
static const char *counted_or(char *buf, size_t size, const mb_rpt_verdict *v)
{
    if (isfinite(v->meas_bytes_ratio)) return ratio(buf, size, v->meas_bytes_ratio);
    snprintf(buf, size, "%s", v->bytes && v->bytes[0] ? "modelled" : "—");
    return buf;
}

/* The notes' standing sentences ("NOISY: ...", "DRIFTED: ...": the same
 * words on many rows) printed once under the table; a row keeps the tag
 * and the sentence's number. */
#define MAX_SHARED_NOTES 12

typedef struct shared_notes {
    char text[MAX_SHARED_NOTES][600];
    int n;
} shared_notes;

static const char *const note_tags[] = {"NOISY:", "DRIFTED:", "SMOKE TEST:", "FALLBACK:", "STALE:"};

/* The tag that starts at p, or NULL. */
static const char *tag_at(const char *p)
{
    for (size_t t = 0; t < sizeof note_tags / sizeof note_tags[0]; t++)
        if (!strncmp(p, note_tags[t], strlen(note_tags[t]))) return note_tags[t];
    return NULL;
}

static const char *note_cell(char *buf, size_t size, const char *note, shared_notes *sn)
{
    size_t j = 0;
    buf[0] = '\0';
    for (const char *p = note; *p && j + 1 < size;) {
        const char *tag = (p == note || (p >= note + 2 && p[-1] == ' ' && p[-2] == '.')) ? tag_at(p) : NULL;
        if (!tag) { buf[j++] = *p++; buf[j] = '\0'; continue; }
        const char *end = strstr(p, ". ");
        size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
        int k = 0;
        while (k < sn->n && (strlen(sn->text[k]) != len || strncmp(sn->text[k], p, len))) k++;
        if (k == sn->n && sn->n < MAX_SHARED_NOTES) snprintf(sn->text[sn->n++], sizeof sn->text[0], "%.*s", (int)len, p);
        int w = k < sn->n ? snprintf(buf + j, size - j, "%.*s see note %d.", (int)strlen(tag) - 1, tag, k + 1)
                          : snprintf(buf + j, size - j, "%.*s", (int)len, p);
        if (w > 0) j += (size_t)w < size - j ? (size_t)w : size - j - 1;
        p += len;
    }
    return buf;
}

static void verdict_section(rpt_doc *d, const mb_rpt_set *s)
{
    if (!s->n_verdicts) {
        rpt_doc_h(d, 2, "Verdict");
        rpt_doc_p(d, "This data has none of the lecture's variants (copy, sin2\\_plus\\_cos2, "
                     "gelu\\_tanh, sigmoid3), so no lecture claim is checked: the fits, figures "
                     "and rows below compare each variant with its own model.");
        return;
    }
    rpt_doc_h(d, 2, "Verdict: the lecture's claims on this data");
    int smoke = 0;
    for (int i = 0; i < s->n_verdicts; i++) smoke |= s->verdicts[i].smoke_test;
    if (smoke)
        rpt_doc_p(d, "**SMOKE TEST.** These rows were measured at small sizes or against a quick "
                     "calibration (`demo --quick`): the verdicts check that the tool runs end to end and "
                     "say nothing about this machine. Run `membound demo` without `--quick` for figures.");
    rpt_doc_p(d, "Ratios are slow / fast (a speed-up above 1). Each claim gets two separate judgements. "
                 "**The lecture's claim here**: its bytes (where DRAM counters ran, the counted ratio within "
                 "±%.0f%% of the lecture's; without counters the model's, *modelled, not counted on this "
                 "backend*) and its measured time ratio, in direction and rough size: *holds* within "
                 "±%.0f%% of the lecture's ratio (an *at least* claim has no upper edge), *exceeds* above "
                 "it (faster than claimed), *falls short* below it, *reversed* when the series the lecture "
                 "calls faster ran slower. **The model's expectation here**: the measured ratio within "
                 "±%.0f%% of the model's time ratio on this device (*model*). Wherever the two part, the "
                 "*why* says which device-level reason separates them: compute-bound here, launch-bound "
                 "at this size, or the cache (modelled, or measured: a row faster than the device's DRAM "
                 "bandwidth allows). The **minimum** times decide between like rows (both quiet, sample "
                 "counts within %.0fx, spreads under %.0f%% CV: a busy machine adds time, never takes it "
                 "away); otherwise the **medians**, firm only where the minima fall on the same side. A "
                 "verdict is *inconclusive* where the rows do not decide, and its note names the command "
                 "to measure again.",
              100 * MB_RPT_TOL_BYTES, 100 * MB_RPT_TOL_TIME, 100 * MB_RPT_TOL_TIME, MB_RPT_LIKE_REPS,
              100 * MB_RPT_QUIET_CV);
    static const char *head[] = {"claim", "device (backend)", "n", "lecture", "model bytes",
                                 "model DRAM", "model time", "measured (min)", "measured (median)",
                                 "measured bytes", "lecture's claim here", "model's expectation here",
                                 "note"};
    rpt_doc_table(d, 13, head);
    static shared_notes sn;
    sn.n = 0;
    for (int i = 0; i < s->n_verdicts; i++) {
        const mb_rpt_verdict *v = &s->verdicts[i];
        char dev[160], n[32], a[32], b[32], c[32], e[32], f[32], g[32], note[2048];
        snprintf(dev, sizeof dev, "%s (%s)", v->device, v->backend);
        const char *cells[] = {v->claim, dev, v->n > 0 ? pow2(n, sizeof n, v->n) : "—", v->lecture,
                               ratio(a, sizeof a, v->model_bytes_ratio),
                               ratio(b, sizeof b, v->model_dram_ratio),
                               ratio(c, sizeof c, v->expected_ratio),
                               ratio(g, sizeof g, v->meas_min_ratio),
                               ratio(e, sizeof e, v->meas_time_ratio),
                               counted_or(f, sizeof f, v), v->holds, v->model_agrees,
                               note_cell(note, sizeof note, v->note, &sn)};
        rpt_doc_row(d, cells);
    }
    rpt_doc_table_end(d);
    for (int k = 0; k < sn.n; k++) {
        char md[700];
        rpt_doc_p(d, "Note %d. %s", k + 1, rpt_md(md, sizeof md, sn.text[k]));
    }
}

/* How a group's verified rows were used: the one count table and prose share. */
typedef struct row_counts {
    int total, verified, failed, noisy, used, rejected, compute, other;
} row_counts;

static row_counts count_rows(const mb_rpt_set *s, int gi)
{
    row_counts c = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (gi >= 0 && r->group != gi) continue;
        c.total++;
        if (!r->verified) { c.failed++; continue; }
        c.verified++;
        if (r->noisy) c.noisy++;
        else if (r->used) c.used++;
        else if (r->outlier) c.rejected++;
        else if (r->pred_bound == MB_BOUND_COMPUTE) c.compute++;
        else c.other++;
    }
    return c;
}

static void fit_section(rpt_doc *d, const mb_rpt_set *s)
{
    rpt_doc_h(d, 2, "Fits: time = t0 + bytes / bandwidth");
    rpt_doc_p(d, "Weighted least squares (GSL `gsl_fit_wlinear`), each row weighted by "
                 "1/(CV × median time)² with the CV floored at 1%%; 95%% confidence intervals from "
                 "Student's t with the covariance scaled by χ²/dof. Rows whose externally "
                 "studentised residual exceeds 3 are rejected once and the line refitted. Rows "
                 "that failed verification are never fitted; rows the model calls compute-bound "
                 "go to the per-op fit instead of the line.");
    static const char *head[] = {"device", "backend", "rows used", "rejected", "t0 (95% CI)",
                                 "bandwidth GB/s (95% CI)", "model's bandwidth", "R²", "bytes"};
    rpt_doc_table(d, 9, head);
    for (int i = 0; i < s->n_groups; i++) {
        const mb_rpt_group *g = &s->groups[i];
        const mb_device *dev = &s->devices[g->dev];
        row_counts rc = count_rows(s, i);
        char used[64], rej[32], t0[240], bw[240], mbw[96], r2[32], x1[32], x2[32];
        const char *bws;
        double model_bw = mb_device_bandwidth_gbs(dev, &bws);
        snprintf(mbw, sizeof mbw, "%.4g GB/s (%s)", model_bw, bws);
        if (g->fitted) {
            snprintf(used, sizeof used, "%d of %d verified", rc.used, rc.verified);
            snprintf(rej, sizeof rej, "%d", rc.rejected);
            /* an unbounded interval or a negative intercept is no result:
             * said so, the numbers only in brackets */
            int unbounded = !isfinite(g->bandwidth_hi_gbs);
            if (g->t0_negative)
                snprintf(t0, sizeof t0, "not determined (%s ± %s: below zero, not a launch time; the "
                         "sizes do not pin the intercept)", rpt_time(x1, sizeof x1, g->t0_s),
                         rpt_time(x2, sizeof x2, g->t0_ci_s));
            else
                snprintf(t0, sizeof t0, "%s ± %s", rpt_time(x1, sizeof x1, g->t0_s),
                         rpt_time(x2, sizeof x2, g->t0_ci_s));
            if (isfinite(g->bandwidth_gbs) && unbounded)
                snprintf(bw, sizeof bw, "not determined (%.4g, interval [%.4g, unbounded]: the rows do "
                         "not bound it)", g->bandwidth_gbs, g->bandwidth_lo_gbs);
            else if (isfinite(g->bandwidth_gbs))
                snprintf(bw, sizeof bw, "%.4g [%.4g, %s]%s", g->bandwidth_gbs, g->bandwidth_lo_gbs,
                         rpt_num(x1, sizeof x1, g->bandwidth_hi_gbs, 4),
                         g->impossible ? (strcmp(dev->kind, "cpu")
                                              ? " IMPOSSIBLE: above the datasheet peak"
                                              : " IMPOSSIBLE: above the calibrated bandwidth")
                         : g->above_calibrated ? " above the calibrated bandwidth: the host drifted" : "");
            else
                snprintf(bw, sizeof bw, "—");
            rpt_num(r2, sizeof r2, g->line.r2, 4);
        } else {
            snprintf(used, sizeof used, "0 of %d verified", rc.verified);
            snprintf(rej, sizeof rej, "—");
            snprintf(t0, sizeof t0, "—");
            snprintf(bw, sizeof bw, "—");
            snprintf(r2, sizeof r2, "—");
        }
        const char *cells[] = {g->device, g->backend, used, rej, t0, bw, mbw, r2, g->bytes_note};
        rpt_doc_row(d, cells);
    }
    rpt_doc_table_end(d);
    for (int i = 0; i < s->n_groups; i++) {
        const mb_rpt_group *g = &s->groups[i];
        const mb_device *dev = &s->devices[g->dev];
        row_counts rc = count_rows(s, i);
        rpt_doc_p(d, "%s / %s: %d rows: %d used in the line, %d rejected as outliers, %d "
                     "compute-bound (per-op fit), %d not in the line fit otherwise, %d noisy "
                     "(over a fifth of their samples contended: not fitted), %d failed "
                     "verification.", g->device, g->backend, rc.total, rc.used, rc.rejected,
                  rc.compute, rc.other, rc.noisy, rc.failed);
        if (g->rows_note[0])
            rpt_doc_p(d, "%s / %s: the line's candidates were %s; outliers among them are "
                         "rejected as above.", g->device, g->backend, g->rows_note);
        if (g->why[0]) rpt_doc_p(d, "%s / %s: %s", g->device, g->backend, g->why);
        if (g->impossible)
            rpt_doc_p(d, "**Impossible number**: %s / %s: the fitted bandwidth %.4g GB/s (lower "
                         "bound %.4g) exceeds the device's %s, %.4g GB/s%s. The byte counts "
                         "understate the traffic (data served from cache, or a wrong element size).",
                      g->device, g->backend, g->bandwidth_gbs, g->bandwidth_lo_gbs,
                      mb_rpt_peak_what(dev), dev->mem_bandwidth_gbs,
                      g->host_copy_ratio_max > 1 && !strcmp(dev->kind, "cpu")
                          ? " times the host's drift during the rows" : "");
        else if (g->above_calibrated)
            rpt_doc_p(d, "**Above the calibration**: %s / %s: the fitted bandwidth %.4g GB/s (lower "
                         "bound %.4g) exceeds the calibrated %.4g GB/s, but the host's own reference "
                         "copy ran up to %.0f%% of its calibrated figure during these rows: the host "
                         "drifted since its calibration (a shared host does), so the rows are faster "
                         "than the spec, not faster than the hardware. Calibrate again, or measure "
                         "when the host is steady.",
                      g->device, g->backend, g->bandwidth_gbs, g->bandwidth_lo_gbs,
                      dev->mem_bandwidth_gbs, 100 * g->host_copy_ratio_max);
        if (!g->has_ops) continue;
        char h[256];
        snprintf(h, sizeof h, "Per-op costs, %s / %s: time = t0 + bytes/bandwidth + Σ evals_k × c_k",
                 g->device, g->backend);
        rpt_doc_h(d, 3, h);
        const mb_rpt_multi *m = &g->ops;
        if (!m->determined) {
            rpt_doc_p(d, "Not fitted: %s", m->note);
            continue;
        }
        rpt_doc_p(d, "Weighted multilinear fit (GSL `gsl_multifit_wlinear_tsvd`) over %d rows, "
                     "rank %d, R² %.4f. %s%s", m->n_points, m->rank, m->r2,
                  m->note[0] ? "Columns: " : "", m->note);
        static const char *oh[] = {"term", "cost", "95% CI", "as a rate", "significant?"};
        rpt_doc_table(d, 5, oh);
        for (int j = 0; j < m->p; j++) {
            char v[96], ci[96], rate[96];
            const char *name = m->names[j];
            if (!strcmp(name, "t0_s")) {
                rpt_time(v, sizeof v, m->c[j]);
                char t[64];
                snprintf(ci, sizeof ci, "± %s", rpt_time(t, sizeof t, m->ci[j]));
                snprintf(rate, sizeof rate, "—");
                name = "t0";
            } else if (!strcmp(name, "s_per_byte")) {
                snprintf(v, sizeof v, "%.4g ps/B", m->c[j] * 1e12);
                snprintf(ci, sizeof ci, "± %.3g ps/B", m->ci[j] * 1e12);
                if (m->c[j] > 0) snprintf(rate, sizeof rate, "%.4g GB/s", 1e-9 / m->c[j]);
                else snprintf(rate, sizeof rate, "—");
                name = "per byte";
            } else {
                snprintf(v, sizeof v, "%.4g ns/elem", m->c[j] * 1e9);
                snprintf(ci, sizeof ci, "± %.3g ns/elem", m->ci[j] * 1e9);
                if (m->c[j] > 0) snprintf(rate, sizeof rate, "%.4g Gelem/s", 1e-9 / m->c[j]);
                else snprintf(rate, sizeof rate, "—");
            }
            const char *cells[] = {name, v, ci, rate, fabs(m->c[j]) > m->ci[j] ? "yes" : "no (CI spans 0)"};
            rpt_doc_row(d, cells);
        }
        rpt_doc_table_end(d);
    }
}

/* "copy 78%, op 65%": a row's host reference as shares of its calibration
 * (the ratios it has). */
static const char *host_shares(char *buf, size_t size, const mb_rpt_row *r)
{
    int len = 0;
    buf[0] = '\0';
    if (isfinite(r->host_copy_ratio)) len = snprintf(buf, size, "copy %.0f%%", 100 * r->host_copy_ratio);
    if (isfinite(r->host_op_ratio) && len >= 0 && (size_t)len < size)
        snprintf(buf + len, size - (size_t)len, "%sop %.0f%%", len ? ", " : "", 100 * r->host_op_ratio);
    return buf;
}

/* The rows table's measured/model: "1.12", then the host's shares when the
 * row drifted ("(host at copy 79% of calibrated; at those rates 0.95)"), then
 * each mode's when its samples fell in two ("(two modes: 0.98 / 1.41, 25%
 * high)"). */
static const char *model_cell(char *buf, size_t size, const mb_rpt_row *r)
{
    char hs[48], at[48] = "", modes[80] = "";
    if (!isfinite(r->resid_model_rel)) return "—";
    if (r->drifted && isfinite(r->pred_host_time_s))
        rpt_fmt(at, sizeof at, "; at those rates %.2f", r->time_s_median / r->pred_host_time_s);
    if (r->two_modes && r->pred_time_s > 0)
        rpt_fmt(modes, sizeof modes, " (two modes: %.2f / %.2f, %.0f%% high)",
                r->time_s_lower_mode / r->pred_time_s, r->time_s_upper_mode / r->pred_time_s,
                100 * r->upper_mode_share);
    if (r->drifted)
        return rpt_fmt(buf, size, "%.2f (host at %s of calibrated%s)%s", r->resid_model_rel + 1,
                       host_shares(hs, sizeof hs, r), at, modes);
    return rpt_fmt(buf, size, "%.2f%s", r->resid_model_rel + 1, modes);
}

/* The bytes residual with the harness's verdict on it (count_check). */
static const char *bytes_cell(char *buf, size_t size, const mb_rpt_row *r)
{
    if (!isfinite(r->resid_bytes_rel)) return "—";
    const char *v = !strcmp(r->count_check, "off") ? " OFF (over 3%)"
                    : !strcmp(r->count_check, "ok") ? " ok"
                    : !strcmp(r->count_check, "below 4x L2") ? " (below 4x L2: not judged)" : "";
    return rpt_fmt(buf, size, "%+.1f%%%s", 100 * r->resid_bytes_rel, v);
}

/* Rows shown in the documents' table: report.html stays a page a browser
 * opens (5,000 rows are ~1 MB of HTML; 10^5 rows were 22 MB, and cmark
 * holds the whole table in memory); summary.csv and summary.json keep
 * every row. */
#define MB_RPT_DOC_MAX_ROWS 5000

static void rows_section(rpt_doc *d, const mb_rpt_set *s)
{
    rpt_doc_h(d, 2, "Rows: measured against the model and the fit");
    rpt_doc_p(d, "measured/model is the median time over the model's roofline time on the row's "
                 "device (with the host's copy bandwidth and op rate during the row, as shares "
                 "of the calibrated ones, where one was more than 20%% off: a shared host "
                 "drifts, and the model assumes the calibrated machine; then measured over the "
                 "model with the device's bandwidths and op rates at those shares); fit residual is the median time over the fitted line minus 1; bytes "
                 "residual compares counted DRAM bytes with the model's cache-aware DRAM bytes, "
                 "with the harness's verdict: ok within 3%%, OFF beyond (a kernel's own row is "
                 "allowed one L2 more, the write-back it leaves to the next kernel), not judged "
                 "where a tensor is under 4x the L2. Rows imported from ncu or the PyTorch "
                 "profiler are verified only in that their launches matched the plan: membound "
                 "checked none of their outputs; ncu's counts (each kernel from a flushed cache) "
                 "are compared with each kernel's cold count, the lecture's.");
    static const char *head[] = {"device", "backend", "variant", "plan", "dtype", "n", "verified",
                                 "median time", "model time", "bound (model)", "measured/model",
                                 "fit residual", "bytes residual", "fit"};
    rpt_doc_table(d, 14, head);
    const int shown = s->n_rows < MB_RPT_DOC_MAX_ROWS ? s->n_rows : MB_RPT_DOC_MAX_ROWS;
    for (int i = 0; i < shown; i++) {
        const mb_rpt_row *r = &s->rows[i];
        char n[32], t[32], mt[32], mm[224], fr[32], br[64];
        const char *dev = r->dev >= 0 ? s->devices[r->dev].name : r->device;
        const char *cells[] = {
            dev, r->backend, r->variant, r->plan, r->dtype, pow2(n, sizeof n, r->n),
            !r->verified ? "FAILED" : MB_MEAS_IMPORTED(r->counters) ? "imported (outputs unchecked)" : "yes", rpt_time(t, sizeof t, r->time_s_median),
            rpt_time(mt, sizeof mt, r->pred_time_s), mb_bound_name(r->pred_bound),
            model_cell(mm, sizeof mm, r),
            isfinite(r->resid_time_rel) ? rpt_fmt(fr, sizeof fr, "%+.1f%%", 100 * r->resid_time_rel) : "—",
            bytes_cell(br, sizeof br, r),
            !r->verified ? "skipped (failed)" : r->noisy ? "skipped (noisy: samples contended)"
            : r->outlier ? "rejected (outlier)" : r->used ? "used" : "not in line fit"};
        rpt_doc_row(d, cells);
    }
    rpt_doc_table_end(d);
    if (shown < s->n_rows)
        rpt_doc_p(d, "The first %d rows of %d; the other %d are in summary.csv and summary.json.", shown,
                  s->n_rows, s->n_rows - shown);
}

/* The variants the rows measured, with the text each was joined with. */
static void variants_section(rpt_doc *d, const mb_rpt_set *s)
{
    int any = 0;
    for (int i = 0; i < s->n_vars; i++) any |= s->vars[i].text != NULL;
    if (!any) return;
    rpt_doc_h(d, 2, "Variants");
    rpt_doc_p(d, "The text of each variant as the measurement ran it (carried in its CSV) or as "
                 "given to `report`; a row joins with its own CSV's text first.");
    for (int i = 0; i < s->n_vars; i++) {
        const mb_rpt_vardef *v = &s->vars[i];
        if (!v->text) continue;
        char origin[1300];
        rpt_doc_p(d, "`%s` (%s%s):", v->name, v->is_expr ? "--expr, " : "",
                  rpt_md(origin, sizeof origin, v->origin));
        rpt_doc_pre(d, v->text);
    }
}

/* The time formula as the model applied it on each device. */
static void method_section(rpt_doc *d, const mb_rpt_set *s)
{
    rpt_doc_h(d, 2, "Method");
    rpt_doc_p(d, "The model counts each kernel's reads and writes by the traffic rule (the "
                 "lecture's count) and predicts cold-start DRAM bytes with a cache-capacity rule "
                 "(a read hits when the bytes touched since that tensor's last use, plus its "
                 "size, fit in the last-level cache; every write reaches DRAM). Each kernel takes "
                 "`launch + max(memory, compute) + serial_fraction × min(memory, compute)`, "
                 "where memory is the DRAM bytes over the bandwidth, or, when the spec gives a "
                 "read bandwidth and that takes longer, the read bytes over it divided by "
                 "`1 + read_stream_penalty × (tensors read − 1)` (or times `1 + read_stream_gain × "
                 "(tensors read − 1)`), and never less than all the "
                 "kernel's bytes over the cache bandwidth when the spec gives one; compute is the "
                 "ops over their measured rates, else the FP32 and special-function peaks. A "
                 "plan's time is the sum over its kernels.");
    static const char *head[] = {"device", "bandwidth", "launch", "serial_fraction",
                                 "read bandwidth", "read_stream_penalty", "cache bandwidth",
                                 "last-level cache"};
    rpt_doc_table(d, 8, head);
    for (int i = 0; i < s->n_devices; i++) {
        const mb_device *v = &s->devices[i];
        const char *bws;
        char bw[64], la[32], sf[32], rb[64], rp[32], cb[64], cm[32];
        double b = mb_device_bandwidth_gbs(v, &bws);
        snprintf(bw, sizeof bw, "%.4g GB/s (%s)", b, bws);
        rpt_time(la, sizeof la, v->launch_overhead_us * 1e-6);
        snprintf(sf, sizeof sf, "%.3g", v->serial_fraction);
        if (v->read_bandwidth_gbs > 0) snprintf(rb, sizeof rb, "%.4g GB/s", v->read_bandwidth_gbs);
        else snprintf(rb, sizeof rb, "— (not used)");
        if (v->read_stream_gain > 0) snprintf(rp, sizeof rp, "gain %.3g", v->read_stream_gain);
        else snprintf(rp, sizeof rp, "%.3g", v->read_stream_penalty);
        if (v->cache_bandwidth_gbs > 0) snprintf(cb, sizeof cb, "%.4g GB/s", v->cache_bandwidth_gbs);
        else snprintf(cb, sizeof cb, "— (not used)");
        snprintf(cm, sizeof cm, "%.4g MiB", v->cache_mb);
        const char *cells[] = {v->name, bw, la, sf, rb, rp, cb, cm};
        rpt_doc_row(d, cells);
    }
    rpt_doc_table_end(d);
}

int rpt_write_doc(const mb_rpt_set *s, const mb_rpt_figures *figs, const char *dir, rpt_outs *outs,
                     mb_err *err)
{
    rpt_doc d;
    int lecture = s->n_verdicts > 0;
    rpt_doc_begin(&d, lecture ? "membound report: the lecture's claims against measurement"
                              : "membound report: measurement against the model");
    row_counts rc_all = count_rows(s, -1);
    char files[1500] = "", md[600];
    for (int i = 0; i < s->n_files; i++) {
        size_t l = strlen(files);
        snprintf(files + l, sizeof files - l, "%s`%s`", i ? ", " : "", s->files[i]);
    }
    char devs[1500] = "";
    for (int i = 0; i < s->n_devices; i++) {
        size_t l = strlen(devs);
        snprintf(devs + l, sizeof devs - l, "%s`%s` (%s)", i ? "; " : "", s->devices[i].name,
                 rpt_md(md, sizeof md, s->devices[i].label));
    }
    rpt_doc_p(&d, "%d measurement rows from %s, joined with the model on %s: %d used in the "
                  "bandwidth fits, %d rejected as outliers, %d compute-bound (per-op fit only), "
                  "%d in no line fit, %d noisy (over a fifth of their samples contended) and "
                  "%d that failed verification are not fitted.",
              rc_all.total, files, devs, rc_all.used, rc_all.rejected, rc_all.compute,
              rc_all.other, rc_all.noisy, rc_all.failed);
    int drifted = 0;
    for (int i = 0; i < s->n_rows; i++) drifted += s->rows[i].drifted;
    if (drifted)
        rpt_doc_p(&d, "%d row%s measured while the host's copy bandwidth or op rate was more "
                      "than 20%% off the calibrated figure the model assumes (a shared host drifts): their "
                      "measured/model says as much about the host as about the model. The rows "
                      "table gives each one's share.", drifted, drifted == 1 ? " was" : "s were");
    int two = 0;
    for (int i = 0; i < s->n_rows; i++) two += s->rows[i].two_modes;
    if (two)
        rpt_doc_p(&d, "%d row%s samples fell in two modes: %s median is one of them, and so is its "
                      "measured/model; the rows table gives measured/model for each mode.", two,
                  two == 1 ? "'s" : "s'", two == 1 ? "its" : "each one's");
    int judged = 0, off = 0;
    for (int i = 0; i < s->n_rows; i++) {
        judged += !strcmp(s->rows[i].count_check, "ok") || !strcmp(s->rows[i].count_check, "off");
        off += !strcmp(s->rows[i].count_check, "off");
    }
    if (off)
        rpt_doc_p(&d, "**%d of %d counted row%s at tensors of 4x the L2 or more moved more than 3%% "
                      "more or fewer DRAM bytes than the model says** (OFF in the rows table): the model "
                      "or the kernel that ran is wrong there.", off, judged, judged == 1 ? "" : "s");
    else if (judged)
        rpt_doc_p(&d, "All %d counted row%s at tensors of 4x the L2 or more moved the model's DRAM "
                      "bytes within 3%%.", judged, judged == 1 ? "" : "s");
    if (s->n_kernel_rows_skipped)
        rpt_doc_p(&d, "%d per-kernel rows (%d file%s holding only per-kernel rows) are not "
                      "reported: each plan's row carries its totals.", s->n_kernel_rows_skipped,
                  s->n_kernel_files, s->n_kernel_files == 1 ? "" : "s");
    verdict_section(&d, s);
    fit_section(&d, s);
    rpt_machines_section(&d, s);
    if (figs && figs->n) {
        rpt_doc_h(&d, 2, "Figures");
        rpt_doc_p(&d, "Each figure's data (`.dat`) and gnuplot script (`.gp`, sharing `style.gp`) "
                      "are in `figures/`; `sh figures/render.sh png svg pdf` redraws them.");
        if (figs->gnuplot_missing || figs->render_error[0])
            rpt_doc_p(&d, "**Figures not drawn**: %s", rpt_md(md, sizeof md, figs->render_error));
        for (int i = 0; i < figs->n; i++) {
            char rel[256];
            snprintf(rel, sizeof rel, "figures/%s.png", figs->fig[i].name);
            rpt_doc_h(&d, 3, figs->fig[i].title);
            if (figs->fig[i].rendered) rpt_doc_img(&d, rel, figs->fig[i].title);
            else rpt_doc_p(&d, "(not drawn: data in `figures/%s.dat`)", figs->fig[i].name);
        }
    }
    rows_section(&d, s);
    variants_section(&d, s);
    rpt_doc_h(&d, 2, "Provenance");
    if (s->n_prov) {
        size_t cap = (size_t)s->n_prov * 520 + 1, len = 0;
        char *text = malloc(cap);
        if (text) {
            text[0] = '\0';
            for (int i = 0; i < s->n_prov; i++)
                len += (size_t)snprintf(text + len, cap - len, "%s%s", i ? "\n" : "", s->prov[i]);
            rpt_doc_pre(&d, text);
            free(text);
        }
    } else {
        rpt_doc_p(&d, "The inputs carry no provenance lines.");
    }
    for (int i = 0; i < s->n_devices; i++) {
        char lab[600], src[1200], at[600];
        rpt_doc_p(&d, "Device `%s`: %s. Source: %s%s%s", s->devices[i].name,
                  rpt_md(lab, sizeof lab, s->devices[i].label),
                  rpt_md(src, sizeof src, s->devices[i].source),
                  s->devices[i].measured_at[0] ? ". Measured: " : "",
                  rpt_md(at, sizeof at, s->devices[i].measured_at));
    }
    method_section(&d, s);
    return rpt_write_pages(&d, dir, "report", outs, err);
}

/* ---- model-only index ----------------------------------------------------- */

int mb_rpt_write_model_index(const mb_rpt_set *defs, const mb_device *dv,
                             const mb_rpt_figures *figs, const char *dir, mb_err *err)
{
    rpt_series se[48];
    int ns = rpt_model_series(defs, se, 48);
    int lecture = 0;
    for (int k = 0; k < ns; k++) lecture |= mb_rpt_demo_of(se[k].variant) != NULL;
    rpt_doc d;
    char title[256], lab[600], src[1200], t[32];
    snprintf(title, sizeof title, "membound: %s on %s (model only)",
             lecture ? "the lecture's figures" : "figures", dv->label);
    rpt_doc_begin(&d, title);
    const char *bws;
    double bw = mb_device_bandwidth_gbs(dv, &bws);
    rpt_doc_p(&d, "Device `%s` (%s): %.4g GB/s (%s), last-level cache %.4g MiB, FP32 %.4g "
                  "TFLOP/s, BF16 tensor %.4g TFLOP/s, launch overhead %s. Source: %s.",
              dv->name, rpt_md(lab, sizeof lab, dv->label), bw, bws, dv->cache_mb, dv->fp32_tflops,
              dv->bf16_tflops, rpt_time(t, sizeof t, dv->launch_overhead_us * 1e-6),
              rpt_md(src, sizeof src, dv->source));
    static const char *head[] = {"variant", "plan", "dtype", "n", "kernels", "count (elements)",
                                 "bytes (traffic rule)", "DRAM bytes (cache-aware)", "saved for backward",
                                 "time", "bound"};
    rpt_doc_table(&d, 11, head);
    for (int i = 0; i < ns; i++) {
        mb_dtype dt = MB_F32;
        mb_dtype_parse(se[i].dtype, &dt);
        mb_estimate e;
        mb_err e2;
        if (rpt_estimate(defs, se[i].variant, se[i].plan, dt, se[i].n, dv, &e, NULL, &e2) != MB_OK)
            continue;
        char n[32], k[16], b1[32], b2[32], b3[32], tm[32], cnt[32];
        const char *lc = rpt_lecture_count(se[i].variant, se[i].plan, dt);
        if (lc) snprintf(cnt, sizeof cnt, "%s (lecture)", lc);
        else snprintf(cnt, sizeof cnt, "%.3gn", (double)(e.total.read_bytes + e.total.write_bytes) /
                                                    (double)se[i].n / (double)mb_dtype_bytes(dt));
        const char *cells[] = {
            se[i].variant, se[i].plan, se[i].dtype, pow2(n, sizeof n, se[i].n),
            rpt_fmt(k, sizeof k, "%d", e.n_kernels), cnt,
            rpt_fmt(b1, sizeof b1, "%.4g MB", (double)(e.total.read_bytes + e.total.write_bytes) / 1e6),
            rpt_fmt(b2, sizeof b2, "%.4g MB", (double)(e.total.dram_read_bytes + e.total.dram_write_bytes) / 1e6),
            rpt_fmt(b3, sizeof b3, "%.4g MB", (double)e.saved_bytes / 1e6),
            rpt_time(tm, sizeof tm, e.total.time_s), mb_bound_name(e.total.bound)};
        rpt_doc_row(&d, cells);
        mb_estimate_free(&e);
    }
    rpt_doc_table_end(&d);
    if (figs) {
        rpt_doc_p(&d, "Data (`.dat`) and gnuplot scripts (`.gp`, sharing `style.gp`) are beside "
                      "the images; `sh render.sh png svg pdf` redraws them.");
        if (figs->render_error[0])
            rpt_doc_p(&d, "**Figures not drawn**: %s", rpt_md(src, sizeof src, figs->render_error));
        for (int i = 0; i < figs->n; i++) {
            char rel[256];
            snprintf(rel, sizeof rel, "%s.png", figs->fig[i].name);
            rpt_doc_h(&d, 2, figs->fig[i].title);
            if (figs->fig[i].rendered) rpt_doc_img(&d, rel, figs->fig[i].title);
            else rpt_doc_p(&d, "(not drawn: data in `%s.dat`)", figs->fig[i].name);
        }
    }
    rpt_outs *outs = calloc(1, sizeof *outs);
    if (!outs) {
        rpt_doc_end(&d, NULL, NULL, NULL, NULL);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    return rpt_outs_finish(outs, rpt_write_pages(&d, dir, "index", outs, err), err);
}
