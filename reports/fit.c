/* fit.c — GSL fits: a weighted straight line with confidence intervals and
 * one pass of outlier rejection, a weighted multilinear fit that says when it
 * is underdetermined, and the per device × backend fits of a joined set.
 * Does not read or write files. */
#include "report_int.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_vector.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* GSL's default handler aborts the process; a library must not. */
static void gsl_quiet(void)
{
    static int done;
    if (!done) {
        gsl_set_error_handler_off();
        done = 1;
    }
}

/* Fits the points with mask[i] set. Fills out (not n_points/n_rejected)
 * and, when cov_unscaled is given, the unscaled covariance (for leverages). */
static int line_once(const double *x, const double *y, const double *w, size_t n,
                     const unsigned char *mask, mb_rpt_line *out, double cov_unscaled[3],
                     mb_err *err)
{
    size_t m = 0;
    double *buf = malloc(3 * n * sizeof *buf);
    if (!buf) return mb_err_set(err, MB_ERUN, "out of memory");
    double *xs = buf, *ys = buf + n, *ws = buf + 2 * n;
    for (size_t i = 0; i < n; i++) {
        if (!mask[i]) continue;
        xs[m] = x[i];
        ys[m] = y[i];
        ws[m] = w ? w[i] : 1.0;
        m++;
    }
    int rc = MB_OK;
    if (m < 3) {
        rc = mb_err_set(err, MB_EINPUT, "%zu points: a line with confidence intervals needs 3", m);
        goto out;
    }
    int distinct = 0;
    for (size_t i = 1; i < m; i++)
        if (xs[i] != xs[0]) { distinct = 1; break; }
    if (!distinct) {
        rc = mb_err_set(err, MB_EINPUT, "all %zu points have the same x: the slope is undetermined", m);
        goto out;
    }
    for (size_t i = 0; i < m; i++) {
        if (!isfinite(xs[i]) || !isfinite(ys[i]) || !(ws[i] > 0) || !isfinite(ws[i])) {
            rc = mb_err_set(err, MB_EINPUT, "point %zu is not finite or has weight <= 0", i);
            goto out;
        }
    }
    double c0, c1, cov00, cov01, cov11, chi2;
    int st = gsl_fit_wlinear(xs, 1, ws, 1, ys, 1, m, &c0, &c1, &cov00, &cov01, &cov11, &chi2);
    if (st != GSL_SUCCESS) {
        rc = mb_err_set(err, MB_ERUN, "gsl_fit_wlinear: %s", gsl_strerror(st));
        goto out;
    }
    double dof = (double)m - 2.0;
    double s2 = chi2 / dof;
    double sw = 0, swy = 0;
    for (size_t i = 0; i < m; i++) { sw += ws[i]; swy += ws[i] * ys[i]; }
    double ybar = swy / sw, tss = 0;
    for (size_t i = 0; i < m; i++) tss += ws[i] * (ys[i] - ybar) * (ys[i] - ybar);
    double t = gsl_cdf_tdist_Pinv(0.975, dof);
    out->n_used = (int)m;
    out->c0 = c0;
    out->c1 = c1;
    out->sd0 = sqrt(cov00 * s2);
    out->sd1 = sqrt(cov11 * s2);
    out->cov01 = cov01 * s2;
    out->ci0 = t * out->sd0;
    out->ci1 = t * out->sd1;
    out->chi2 = chi2;
    out->dof = dof;
    out->resid_sd = sqrt(s2);
    out->r2 = tss > 0 ? 1.0 - chi2 / tss : NAN;
    if (cov_unscaled) { cov_unscaled[0] = cov00; cov_unscaled[1] = cov01; cov_unscaled[2] = cov11; }
    if (!isfinite(c0) || !isfinite(c1) || !isfinite(out->sd0) || !isfinite(out->sd1) || !isfinite(t))
        rc = mb_err_set(err, MB_ERUN, "the line fit gave a non-finite result (c0 %g, c1 %g)", c0, c1);
out:
    free(buf);
    return rc;
}

int mb_rpt_fit_line(const double *x, const double *y, const double *w, size_t n, int reject,
                    unsigned char *used, double *stud, mb_rpt_line *out, mb_err *err)
{
    gsl_quiet();
    memset(out, 0, sizeof *out);
    out->n_points = (int)n;
    unsigned char *mask = malloc(n ? n : 1);
    if (!mask) return mb_err_set(err, MB_ERUN, "out of memory");
    memset(mask, 1, n);
    double cov[3];
    int rc = line_once(x, y, w, n, mask, out, cov, err);
    if (rc == MB_OK) {
        /* externally studentised residuals of the first fit */
        double m = (double)n, p = 2.0, s2 = out->chi2 / out->dof;
        int drop = 0;
        for (size_t i = 0; i < n; i++) {
            double wi = w ? w[i] : 1.0;
            double e = sqrt(wi) * (y[i] - out->c0 - out->c1 * x[i]);
            double h = wi * (cov[0] + 2.0 * x[i] * cov[1] + x[i] * x[i] * cov[2]);
            double r = NAN, ext = NAN;
            if (s2 > 0 && h < 1.0) {
                r = e / sqrt(s2 * (1.0 - h));
                double den = m - p - r * r;
                ext = den > 0 ? r * sqrt((m - p - 1.0) / den) : copysign(INFINITY, r);
            }
            if (stud) stud[i] = ext;
            if (reject && n >= 5 && isfinite(r) && fabs(ext) > 3.0) {
                mask[i] = 0;
                drop++;
            }
        }
        if (drop && n - (size_t)drop >= 3) {
            mb_rpt_line second;
            memset(&second, 0, sizeof second);
            mb_err e2;
            if (line_once(x, y, w, n, mask, &second, NULL, &e2) == MB_OK) {
                second.n_points = (int)n;
                *out = second;
                out->n_rejected = drop;
            } else {
                memset(mask, 1, n); /* keep the first fit */
            }
        } else {
            memset(mask, 1, n);
        }
        out->n_points = (int)n;
    }
    if (used) memcpy(used, mask, n);
    free(mask);
    return rc;
}

int mb_rpt_fit_multi(const double *X, const double *y, const double *w, size_t n, int p,
                     const char *const *names, mb_rpt_multi *out, mb_err *err)
{
    gsl_quiet();
    memset(out, 0, sizeof *out);
    if (p < 1 || p > MB_RPT_MAX_PARAMS)
        return mb_err_set(err, MB_EINPUT, "%d parameters (1..%d)", p, MB_RPT_MAX_PARAMS);
    out->p = p;
    out->n_points = (int)n;
    for (int j = 0; j < p; j++) {
        snprintf(out->names[j], sizeof out->names[0], "%s", names ? names[j] : "c");
        out->c[j] = out->sd[j] = out->ci[j] = NAN;
    }
    out->chi2 = out->dof = out->r2 = NAN;
    if (n < 1) {
        snprintf(out->note, sizeof out->note, "no points");
        return MB_OK;
    }
    /* columns scaled to unit max magnitude: bytes (1e9) and a constant (1)
     * in one matrix would otherwise make the rank test meaningless */
    double scale[MB_RPT_MAX_PARAMS];
    gsl_matrix *A = gsl_matrix_alloc(n, (size_t)p);
    gsl_vector *wv = gsl_vector_alloc(n), *yv = gsl_vector_alloc(n), *c = gsl_vector_alloc((size_t)p);
    gsl_matrix *cov = gsl_matrix_alloc((size_t)p, (size_t)p);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, (size_t)p);
    int rc = MB_OK;
    if (!A || !wv || !yv || !c || !cov || !ws) {
        rc = mb_err_set(err, MB_ERUN, "out of memory");
        goto out;
    }
    for (int j = 0; j < p; j++) {
        double mx = 0;
        for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(X[i * (size_t)p + (size_t)j]));
        scale[j] = mx > 0 ? mx : 1.0;
    }
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < p; j++)
            gsl_matrix_set(A, i, (size_t)j, X[i * (size_t)p + (size_t)j] / scale[j]);
        gsl_vector_set(wv, i, w ? w[i] : 1.0);
        gsl_vector_set(yv, i, y[i]);
    }
    double chi2;
    size_t rank = 0;
    int st = gsl_multifit_wlinear_tsvd(A, wv, yv, 1e-9, c, cov, &chi2, &rank, ws);
    if (st != GSL_SUCCESS) {
        rc = mb_err_set(err, MB_ERUN, "gsl_multifit_wlinear_tsvd: %s", gsl_strerror(st));
        goto out;
    }
    out->rank = (int)rank;
    out->dof = (double)n - (double)p;
    out->chi2 = chi2;
    out->determined = (int)rank == p && out->dof >= 1;
    if (!out->determined) {
        if ((int)rank < p)
            snprintf(out->note, sizeof out->note,
                     "underdetermined: %zu rows give rank %zu < %d parameters (the rows do not "
                     "separate these costs)", n, rank, p);
        else
            snprintf(out->note, sizeof out->note,
                     "underdetermined: %zu rows for %d parameters leave no degree of freedom",
                     n, p);
        goto out;
    }
    double s2 = chi2 / out->dof;
    double t = gsl_cdf_tdist_Pinv(0.975, out->dof);
    for (int j = 0; j < p; j++) {
        out->c[j] = gsl_vector_get(c, (size_t)j) / scale[j];
        out->sd[j] = sqrt(gsl_matrix_get(cov, (size_t)j, (size_t)j) * s2) / scale[j];
        out->ci[j] = t * out->sd[j];
        if (!isfinite(out->c[j]) || !isfinite(out->ci[j])) {
            rc = mb_err_set(err, MB_ERUN, "the multilinear fit gave a non-finite %s", out->names[j]);
            goto out;
        }
    }
    double sw = 0, swy = 0, tss = 0;
    for (size_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        sw += wi;
        swy += wi * y[i];
    }
    for (size_t i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        tss += wi * (y[i] - swy / sw) * (y[i] - swy / sw);
    }
    out->r2 = tss > 0 ? 1.0 - chi2 / tss : NAN;
out:
    gsl_matrix_free(A);
    gsl_vector_free(wv);
    gsl_vector_free(yv);
    gsl_vector_free(c);
    gsl_matrix_free(cov);
    if (ws) gsl_multifit_linear_free(ws);
    return rc;
}

/* ---- per device × backend ------------------------------------------- */

/* Weight of a row: 1/sigma² with sigma its time spread (CV, else half the
 * min–p90 range), floored at 1% of its time so a lucky quiet row cannot
 * carry the fit alone; 5% when nothing says how noisy it was. */
static double row_weight(const mb_rpt_row *r)
{
    double t = r->time_s_median, rel = NAN;
    if (isfinite(r->time_cv) && r->time_cv > 0) rel = r->time_cv;
    else if (isfinite(r->time_s_p90) && isfinite(r->time_s_min) && r->time_s_p90 > r->time_s_min)
        rel = 0.5 * (r->time_s_p90 - r->time_s_min) / t;
    if (!isfinite(rel)) rel = 0.05;
    if (rel < 0.01) rel = 0.01;
    double sigma = rel * t;
    return 1.0 / (sigma * sigma);
}

static double row_bytes(const mb_rpt_row *r)
{
    if (r->has_dram) return (double)(r->dram_read_bytes + r->dram_write_bytes);
    return (double)(r->pred_dram_read_bytes + r->pred_dram_write_bytes);
}

static int fittable(const mb_rpt_row *r)
{
    return r->verified == 1 && !r->noisy && r->dev >= 0 && r->time_s_median > 0 &&
           isfinite(r->time_s_median);
}

/* Ops that cost little next to their bytes are one "arith" column; the
 * others get a column each (then proportional columns are merged). POW is
 * cheap: the lecture's powers are x**2 and x**3, multiplies (as the model
 * costs them). */
static int cheap_op(int op)
{
    return op > 0 && op < MB_OP_COUNT && mb_op_info_of((mb_op)op)->cls == MB_COST_ARITH; /* op_table.h */
}

/* Element evaluations of op k in row r. */
static double op_evals(const mb_rpt_row *r, int k)
{
    return r->op_per_elem ? r->op_per_elem[k] * (double)r->n : 0.0;
}

static int ops_fit(mb_rpt_set *s, mb_rpt_group *g, const int *idx, int m, mb_err *err)
{
    /* candidate columns: 1, bytes, arith, then each costly op present */
    enum { MAXC = MB_RPT_MAX_PARAMS };
    char names[MAXC][48];
    int nc = 0;
    /* column-major: cols[j*m+i]; calloc'd, so the columns never filled take
     * no memory (a page is resident once written) */
    double *cols = calloc((size_t)m * MAXC, sizeof *cols);
    double *y = malloc((size_t)m * sizeof *y), *w = malloc((size_t)m * sizeof *w);
    int rc = MB_OK;
    if (!cols || !y || !w) { rc = mb_err_set(err, MB_ERUN, "out of memory"); goto out; }
    /* one pass over the rows: each op's evaluations summed here (a pass per
     * op was most of the fit's time at 10^6 rows, a cache miss a row each) */
    double any_op[MB_OP_COUNT] = {0};
    for (int i = 0; i < m; i++) {
        const mb_rpt_row *r = &s->rows[idx[i]];
        y[i] = r->time_s_median;
        w[i] = row_weight(r);
        cols[0 * m + i] = 1.0;
        cols[1 * m + i] = row_bytes(r);
        double a = 0;
        for (int k = 0; k < MB_OP_COUNT; k++) {
            double e = op_evals(r, k);
            if (cheap_op(k)) a += e;
            else any_op[k] += e;
        }
        cols[2 * m + i] = a;
    }
    snprintf(names[0], sizeof names[0], "t0_s");
    snprintf(names[1], sizeof names[1], "s_per_byte");
    snprintf(names[2], sizeof names[2], "arith");
    nc = 3;
    for (int k = 1; k < MB_OP_COUNT && nc < MAXC; k++) {
        if (cheap_op(k) || any_op[k] <= 0) continue;
        for (int i = 0; i < m; i++) cols[nc * m + i] = op_evals(&s->rows[idx[i]], k);
        snprintf(names[nc], sizeof names[0], "%s", mb_op_name((mb_op)k));
        nc++;
    }
    /* drop an empty arith column; merge columns proportional to an earlier op column */
    int keep[MAXC];
    for (int j = 0; j < nc; j++) keep[j] = 1;
    {
        double any = 0;
        for (int i = 0; i < m; i++) any += cols[2 * m + i];
        if (any <= 0) keep[2] = 0;
    }
    char merged[256] = "";
    for (int j = 3; j < nc; j++) {
        for (int k = 2; k < j; k++) {
            if (!keep[k]) continue;
            double ratio = NAN;
            int prop = 1;
            for (int i = 0; i < m && prop; i++) {
                double a = cols[j * m + i], b = cols[k * m + i];
                if (a == 0 && b == 0) continue;
                if (a == 0 || b == 0) { prop = 0; break; }
                if (isnan(ratio)) ratio = a / b;
                else if (fabs(a / b - ratio) > 1e-12 * fabs(ratio)) prop = 0;
            }
            if (prop && isfinite(ratio)) {
                /* one column for both: the fitted cost is of their sum */
                for (int i = 0; i < m; i++) cols[k * m + i] += cols[j * m + i];
                size_t ml = strlen(merged);
                snprintf(merged + ml, sizeof merged - ml, "%s%s always with %s (one cost for both)",
                         ml ? "; " : "", names[j], names[k]);
                char joined[2 * sizeof names[0]];
                snprintf(joined, sizeof joined, "%s+%s", names[k], names[j]);
                snprintf(names[k], sizeof names[0], "%.47s", joined);
                keep[j] = 0;
                break;
            }
        }
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        int p = 0, kept[MAXC];
        const char *pn[MAXC];
        for (int j = 0; j < nc; j++) {
            if (!keep[j]) continue;
            kept[p] = j;
            pn[p++] = names[j];
        }
        /* the kept columns as rows of p (no m x MAXC copy: 128 bytes a row) */
        double *Xp = malloc((size_t)m * (size_t)p * sizeof *Xp);
        if (!Xp) { rc = mb_err_set(err, MB_ERUN, "out of memory"); goto out; }
        for (int i = 0; i < m; i++)
            for (int j = 0; j < p; j++) Xp[(size_t)i * (size_t)p + (size_t)j] = cols[(size_t)kept[j] * (size_t)m + (size_t)i];
        rc = mb_rpt_fit_multi(Xp, y, w, (size_t)m, p, pn, &g->ops, err);
        free(Xp);
        if (rc) goto out;
        if (g->ops.determined || !keep[2]) break;
        keep[2] = 0; /* retry without the cheap-arithmetic column */
        if (attempt == 0) {
            size_t ml = strlen(merged);
            snprintf(merged + ml, sizeof merged - ml, "%sthe cheap-arithmetic column dropped (underdetermined with it)",
                     ml ? "; " : "");
        }
    }
    if (merged[0]) {
        size_t l = strlen(g->ops.note);
        /* after a reason ("...no degree of freedom"), a sentence of its own */
        snprintf(g->ops.note + l, sizeof g->ops.note - l, "%s%s", l ? ". Columns: " : "", merged);
    }
    g->has_ops = 1;
out:
    free(cols);
    free(y);
    free(w);
    return rc;
}

static int fit_group(mb_rpt_set *s, int gi, mb_err *err)
{
    mb_rpt_group *g = &s->groups[gi];
    int *idx = malloc((size_t)s->n_rows * sizeof *idx);
    int *mem = malloc((size_t)s->n_rows * sizeof *mem);
    double *x = malloc((size_t)s->n_rows * sizeof *x), *y = malloc((size_t)s->n_rows * sizeof *y);
    double *w = malloc((size_t)s->n_rows * sizeof *w), *st = malloc((size_t)s->n_rows * sizeof *st);
    unsigned char *used = malloc((size_t)s->n_rows + 1);
    int rc = MB_OK, m = 0, mm = 0, counted = 0, compute_rows = 0;
    if (!idx || !mem || !x || !y || !w || !st || !used) { rc = mb_err_set(err, MB_ERUN, "out of memory"); goto out; }
    for (int i = 0; i < s->n_rows; i++) {
        mb_rpt_row *r = &s->rows[i];
        if (r->group != gi || !fittable(r)) continue;
        idx[m++] = i;
        if (r->has_dram) counted++;
        if (r->pred_bound == MB_BOUND_COMPUTE) compute_rows++;
        else mem[mm++] = i;
    }
    /* memory- and launch-bound rows carry the bandwidth; compute-bound rows
     * (sin, tanh on a CPU) would bend it, so they enter only the op fit */
    const int *fit_idx = idx;
    int fm = m;
    if (mm >= 3) {
        fit_idx = mem;
        fm = mm;
        if (compute_rows)
            snprintf(g->rows_note, sizeof g->rows_note,
                     "the %d of %d verified rows the model calls memory- or launch-bound "
                     "(%d compute-bound rows left to the per-op fit)", mm, m, compute_rows);
        else
            snprintf(g->rows_note, sizeof g->rows_note, "all %d verified rows", m);
    } else {
        snprintf(g->rows_note, sizeof g->rows_note,
                 "all %d verified rows (fewer than 3 are memory-bound by the model)", m);
    }
    snprintf(g->bytes_note, sizeof g->bytes_note, "%s",
             counted == m && m ? "measured DRAM bytes (counters)"
             : counted ? "measured DRAM bytes where counters ran, model DRAM bytes elsewhere"
                       : "model DRAM bytes (no counters)");
    for (int i = 0; i < fm; i++) {
        const mb_rpt_row *r = &s->rows[fit_idx[i]];
        x[i] = row_bytes(r);
        y[i] = r->time_s_median;
        w[i] = row_weight(r);
    }
    mb_err e;
    int frc = mb_rpt_fit_line(x, y, w, (size_t)fm, 1, used, st, &g->line, &e);
    if (frc == MB_ERUN) { rc = mb_err_set(err, MB_ERUN, "%s/%s: %s", g->device, g->backend, e.msg); goto out; }
    if (frc != MB_OK) {
        snprintf(g->why, sizeof g->why, "not fitted: %.200s", e.msg);
    } else {
        g->fitted = 1;
        g->t0_s = g->line.c0;
        g->t0_ci_s = g->line.ci0;
        /* a launch time below zero cannot be: the writers say so beside t0 */
        g->t0_negative = g->t0_s + g->t0_ci_s < 0;
        double c1 = g->line.c1, ci = g->line.ci1;
        if (c1 > 0) {
            g->bandwidth_gbs = 1e-9 / c1;
            g->bandwidth_lo_gbs = 1e-9 / (c1 + ci);
            g->bandwidth_hi_gbs = c1 - ci > 0 ? 1e-9 / (c1 - ci) : INFINITY;
            /* a number that cannot be true: even the interval's low end beats
             * the peak. A CPU spec's peak is its calibration's, and a shared
             * host drifts: its reference copy during the rows (measure's
             * host check) raises the ceiling by as much; beyond the calibrated
             * figure but within that, the host drifted */
            const mb_device *dev = &s->devices[g->dev];
            double drift = 1.0;
            g->host_copy_ratio_max = NAN;
            for (int i = 0; i < fm; i++) {
                const double q = s->rows[fit_idx[i]].host_copy_ratio;
                if (!used[i] || !(q > 0) || !isfinite(q)) continue;
                if (!(q <= g->host_copy_ratio_max)) g->host_copy_ratio_max = q;
            }
            if (!strcmp(dev->kind, "cpu") && g->host_copy_ratio_max > 1.0) drift = g->host_copy_ratio_max;
            const double peak = dev->mem_bandwidth_gbs;
            g->impossible = peak > 0 && g->bandwidth_lo_gbs > peak * drift;
            g->above_calibrated = peak > 0 && !g->impossible && g->bandwidth_lo_gbs > peak;
        } else {
            g->bandwidth_gbs = g->bandwidth_lo_gbs = g->bandwidth_hi_gbs = NAN;
            snprintf(g->why, sizeof g->why,
                     "the fitted slope is not positive (%.3g s/B): time does not grow with bytes "
                     "over these rows, so no bandwidth", c1);
        }
        for (int i = 0; i < fm; i++) {
            mb_rpt_row *r = &s->rows[fit_idx[i]];
            r->used = used[i];
            r->outlier = !used[i];
            r->stud_resid = st[i];
        }
        for (int i = 0; i < s->n_rows; i++) {
            mb_rpt_row *r = &s->rows[i];
            if (r->group != gi || r->dev < 0) continue;
            r->fit_bytes = row_bytes(r);
            r->fit_time_s = g->line.c0 + g->line.c1 * r->fit_bytes;
            r->resid_time_rel = fittable(r) ? r->time_s_median / r->fit_time_s - 1.0 : NAN;
        }
    }
    /* per-op costs where compute matters: CPUs, or any compute-bound row */
    if (m >= 1 && (compute_rows > 0 || !strcmp(g->backend, "cpu")))
        rc = ops_fit(s, g, idx, m, err);
out:
    free(idx);
    free(mem);
    free(x);
    free(y);
    free(w);
    free(st);
    free(used);
    return rc;
}

int mb_rpt_fit(mb_rpt_set *s, mb_err *err)
{
    gsl_quiet();
    free(s->groups);
    s->groups = NULL;
    s->n_groups = 0;
    for (int i = 0; i < s->n_rows; i++) {
        mb_rpt_row *r = &s->rows[i];
        r->group = -1;
        r->used = r->outlier = 0;
        if (r->dev < 0)
            return mb_err_set(err, MB_EINPUT, "%s:%d: row not joined with the model (call mb_rpt_join)",
                              r->file, r->line);
        const char *dname = s->devices[r->dev].name;
        int gi = -1;
        for (int k = 0; k < s->n_groups; k++)
            if (!strcmp(s->groups[k].device, dname) && !strcmp(s->groups[k].backend, r->backend))
                gi = k;
        if (gi < 0) {
            void *p = realloc(s->groups, (size_t)(s->n_groups + 1) * sizeof *s->groups);
            if (!p) return mb_err_set(err, MB_ERUN, "out of memory");
            s->groups = p;
            gi = s->n_groups++;
            mb_rpt_group *g = &s->groups[gi];
            memset(g, 0, sizeof *g);
            snprintf(g->device, sizeof g->device, "%s", dname);
            snprintf(g->backend, sizeof g->backend, "%s", r->backend);
            g->dev = r->dev;
            g->bandwidth_gbs = g->bandwidth_lo_gbs = g->bandwidth_hi_gbs = NAN;
            g->t0_s = g->t0_ci_s = NAN;
        }
        r->group = gi;
    }
    for (int k = 0; k < s->n_groups; k++) {
        int rc = fit_group(s, k, err);
        if (rc) return rc;
    }
    return mb_rpt_verdicts(s, err);
}

const char *mb_rpt_peak_what(const mb_device *d)
{
    return strcmp(d->kind, "cpu") ? "datasheet peak" : "calibrated bandwidth";
}
