/* rows_verify.c — mb_kern_verify for plans with row operations: every
 * result element against the float64 reference (rows_ref.c), row by row, the
 * sums over the rows (colsum) after every row. Called by reference.c; calls
 * the reference and exec_common.c only. Does not run kernels (rows_run_cpu.c). */
#include "kernels_int.h"
#include "mb_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Compares result v's [cols] values with the reference's (val, mag: one
 * "row" of column values), into the check's running figures. */
static void verify_cols(const mb_kern_tensors *t, int v, const double *val, const double *mag, float pv,
                        double tol, double *max_err, int64_t *bad, int64_t *poisoned, int64_t *first,
                        int *first_node, double *first_got, double *first_want)
{
    const mb_node *nd = &t->plan->g->nodes[v];
    const int64_t C = t->shape.cols;
    double scale = 0;
    for (int64_t i = 0; i < C; i++) scale = fabs(val[i]) > scale ? fabs(val[i]) : scale;
    for (int64_t i = 0; i < C; i++) {
        float got = mb_load_f32(t->data[v], i, nd->dtype);
        double want = val[i], den = fmax(fmax(fabs(want), mag[i]), 1e-3 * scale);
        double e = den > 0 ? fabs(got - want) / den : fabs(got - want);
        if (got == pv && want != pv) ++*poisoned;
        if (!(e <= *max_err)) *max_err = isnan(e) ? INFINITY : e;
        if (!(e <= tol)) {
            ++*bad;
            if (*first < 0) *first = i, *first_node = v, *first_got = got, *first_want = want;
        }
    }
}

int mb_kern_rows_verify(const mb_kern_tensors *t, unsigned poison_rep, double tol, mb_kern_check *out,
                        mb_err *err)
{
    const mb_plan *p = t->plan;
    const mb_graph *g = p->g;
    const int64_t C = t->shape.cols, R = t->shape.rows;
    const float pv = mb_kern_poison_value(poison_rep);
    memset(out, 0, sizeof *out);
    out->first_bad = -1;
    out->first_bad_node = -1;
    for (int q = 0; q < p->n_results; q++)
        if (!t->data[p->results[q]]) return mb_err_set(err, MB_EINPUT, "result node %d has no storage", p->results[q]);
    out->tol = mb_kern_check_tol(p, tol);
    int failed = 0;
    double max_err = 0;
    int64_t bad = 0, poisoned = 0, first = -1;
    int first_node = -1;
    double first_got = 0, first_want = 0;
    /* every node, backward ones after what they read (mb_kern_rows_order) */
    const int nv = g->n_nodes;
    int *order = malloc(((size_t)nv + 1) * sizeof *order);
    int n_order = order ? mb_kern_rows_order(g, order) : 0;
    /* results that are sums over the rows: judged after the rows */
    char *post = malloc((size_t)nv + 1);
    int n_post = post ? mb_kern_col_post(g, post) : 0;
    /* long rows: one row at a time (a row of 2^22 doubles per node is 32 MiB) */
    int par = C <= ((int64_t)1 << 16);
#pragma omp parallel if (par)
    {
        double **val = malloc(2 * (size_t)nv * sizeof *val), **mag = val ? val + nv : NULL;
        double *slab = malloc(2 * (size_t)nv * (size_t)C * sizeof(double));
        int ok = val && slab && order && post;
        for (int v = 0; ok && v < 2 * nv; v++) val[v] = slab + (size_t)v * (size_t)C;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static) reduction(max : max_err) reduction(+ : bad, poisoned)
        for (int64_t r = 0; r < R; r++) {
            if (!ok) continue;
            mb_kern_rows_reference_row(t, r, val, mag, order, n_order);
            for (int q = 0; q < p->n_results; q++) {
                int v = p->results[q];
                const mb_node *nd = &g->nodes[v];
                int rv = mb_kern_is_rowval(nd);
                if ((rv && nd->shape == MB_SHC_SCALAR && r > 0) || post[v]) continue;
                int64_t len = rv ? 1 : C, base = rv ? (nd->shape == MB_SHC_SCALAR ? 0 : r) : mb_kern_row_base(g, v, r, C);
                double scale = 0;
                for (int64_t i = 0; i < len; i++) scale = fabs(val[v][i]) > scale ? fabs(val[v][i]) : scale;
                for (int64_t i = 0; i < len; i++) {
                    float got = mb_load_f32(t->data[v], base + i, nd->dtype);
                    double want = val[v][i], den = fmax(fmax(fabs(want), mag[v][i]), 1e-3 * scale);
                    double e = den > 0 ? fabs(got - want) / den : fabs(got - want);
                    if (got == pv && want != pv) poisoned++;
                    if (!(e <= max_err)) max_err = isnan(e) ? INFINITY : e;
                    if (!(e <= out->tol)) {
                        bad++;
#pragma omp critical(mb_rows_first)
                        if (first < 0 || base + i < first) {
                            first = base + i;
                            first_node = v;
                            first_got = got;
                            first_want = want;
                        }
                    }
                }
            }
        }
        free(val);
        free(slab);
    }
    if (!failed && n_post) {
        double **val = malloc(2 * (size_t)nv * sizeof *val);
        double *slab = malloc(2 * (size_t)nv * (size_t)C * sizeof(double));
        if (val && slab) {
            for (int v = 0; v < 2 * nv; v++) val[v] = slab + (size_t)v * (size_t)C;
            if (mb_kern_rows_reference_cols(t, val, val + nv, order, n_order)) failed = 1;
            for (int q = 0; q < p->n_results && !failed; q++)
                if (post[p->results[q]])
                    verify_cols(t, p->results[q], val[p->results[q]], val[nv + p->results[q]], pv, out->tol,
                                &max_err, &bad, &poisoned, &first, &first_node, &first_got, &first_want);
        } else {
            failed = 1;
        }
        free(val);
        free(slab);
    }
    free(order);
    free(post);
    if (failed) return mb_err_set(err, MB_ERUN, "out of memory for the float64 reference");
    out->max_rel_err = max_err;
    out->bad = bad;
    out->poisoned = poisoned;
    out->first_bad = first;
    out->first_bad_node = first_node;
    out->first_got = first_got;
    out->first_want = first_want;
    out->passed = bad == 0 && poisoned == 0;
    return MB_OK;
}
