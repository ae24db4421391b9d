/* rows_bwd_cpu.c — the finite-difference check of the float64 reference's
 * gradients for graphs with row operations (mb_kern_gradcheck's, reference.c),
 * row by row (a row operation couples a row's elements, never two rows), and
 * for a [cols] input over every row (its element c reaches every row: its
 * gradient is a sum over the rows, mb_kern_rows_reference_cols). The
 * reference it differentiates is rows_ref.c's.
 * The backward kernels themselves run in the row executor (rows_run_cpu.c):
 * autodiff builds them of the same sums, means and elementwise ops as the
 * forward.
 * Does not run kernels, nor judge a plan's outputs (mb_kern_rows_verify). */
#include "kernels_int.h"
#include "mb_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const mb_kern_tensors *t;
    const mb_graph *g;
    int64_t C;
    double **val, **mag;
    int *all, n_all;     /* every node (mb_kern_rows_order) */
    int *fwd, n_fwd;     /* the forward nodes that are not inputs */
    int *load, n_load;   /* the forward nodes and the incoming gradients */
} gcheck;

/* sum over the outputs' row r of grad_output x output: the function whose
 * gradient the backward computes. */
static double objective(const gcheck *G, const double *const *gout)
{
    double f = 0;
    for (int o = 0; o < G->g->n_outputs; o++) {
        int v = G->g->outputs[o];
        int64_t len = G->g->nodes[v].shape == MB_SHC_FULL ? G->C : 1;
        for (int64_t i = 0; i < len; i++) f += gout[o][i] * G->val[v][i];
    }
    return f;
}

/* Central differences at (row r, column c) of every input with a gradient
 * against the reference's gradient; the worst error so far into *worst. */
static void check_point(gcheck *G, int64_t r, int64_t c, double **gout, double *worst)
{
    const mb_graph *g = G->g;
    mb_kern_rows_reference_row(G->t, r, G->val, G->mag, G->all, G->n_all);
    for (int o = 0; o < g->n_outputs; o++) {
        int v = g->outputs[o], go = g->grad_outputs[o];
        int64_t len = g->nodes[v].shape == MB_SHC_FULL ? G->C : 1;
        memcpy(gout[o], G->val[go], (size_t)len * sizeof(double));
        for (int64_t i = 0; i < len; i++)
            if (!(fabs(G->val[v][i]) <= mb_kern_dtype_max(g->nodes[v].dtype))) return; /* f32 overflows */
    }
    for (int j = 0; j < g->n_inputs; j++) {
        int x = g->inputs[j], gi = g->grad_inputs[j];
        const mb_node *nx = &g->nodes[x];
        if (gi < 0 || (nx->shape != MB_SHC_FULL && nx->shape != MB_SHC_ROW && nx->shape != MB_SHC_ROWV)) continue;
        int64_t at = nx->shape == MB_SHC_FULL ? c : 0;
        int64_t gat = g->nodes[gi].shape == MB_SHC_FULL ? c : 0;
        mb_kern_rows_reference_row(G->t, r, G->val, G->mag, G->all, G->n_all);
        double ana = G->val[gi][gat], x0 = G->val[x][at];
        double h = 1e-6 * (fabs(x0) > 1.0 ? fabs(x0) : 1.0), f[2];
        for (int s = 0; s < 2; s++) {
            G->val[x][at] = x0 + (s ? -h : h);
            mb_kern_rows_reference_row(G->t, r, G->val, G->mag, G->fwd, G->n_fwd);
            f[s] = objective(G, (const double *const *)gout);
        }
        G->val[x][at] = x0;
        double num = (f[0] - f[1]) / (2.0 * h);
        double e = fabs(num - ana) / (1e-5 + 1e-3 * fabs(ana));
        if (!(e <= *worst)) *worst = isnan(e) ? INFINITY : e;
    }
}

/* The objective summed over every row with input x's element c (a [cols]
 * input) at x0 + dx. */
static double objective_all_rows(gcheck *G, int x, int64_t c, double dx, double **gout)
{
    const mb_graph *g = G->g;
    double f = 0;
    for (int64_t r = 0; r < G->t->shape.rows; r++) {
        mb_kern_rows_reference_row(G->t, r, G->val, G->mag, G->load, G->n_load);
        for (int o = 0; o < g->n_outputs; o++) {
            int64_t len = g->nodes[g->outputs[o]].shape == MB_SHC_FULL ? G->C : 1;
            memcpy(gout[o], G->val[g->grad_outputs[o]], (size_t)len * sizeof(double));
        }
        G->val[x][c] += dx;
        mb_kern_rows_reference_row(G->t, r, G->val, G->mag, G->fwd, G->n_fwd);
        f += objective(G, (const double *const *)gout);
    }
    return f;
}

/* Central differences at column c of every [cols] input with a gradient
 * against the reference's sums over the rows (col: their [cols] values). */
static void check_col_point(gcheck *G, int64_t c, double **col, double **gout, double *worst)
{
    const mb_graph *g = G->g;
    for (int j = 0; j < g->n_inputs; j++) {
        int x = g->inputs[j], gi = g->grad_inputs[j];
        if (gi < 0 || g->nodes[x].shape != MB_SHC_COL) continue;
        double ana = col[gi][c], x0 = mb_load_f32(G->t->data[x], c, g->nodes[x].dtype);
        double h = 1e-6 * (fabs(x0) > 1.0 ? fabs(x0) : 1.0);
        double num = (objective_all_rows(G, x, c, h, gout) - objective_all_rows(G, x, c, -h, gout)) / (2.0 * h);
        double e = fabs(num - ana) / (1e-5 + 1e-3 * fabs(ana));
        if (!(e <= *worst)) *worst = isnan(e) ? INFINITY : e;
    }
}

/* 1 when g has a [cols] input with a gradient. */
static int has_col_grad(const mb_graph *g)
{
    for (int j = 0; j < g->n_inputs; j++)
        if (g->grad_inputs[j] >= 0 && g->nodes[g->inputs[j]].shape == MB_SHC_COL) return 1;
    return 0;
}

int mb_kern_rows_gradcheck(const mb_kern_tensors *t, int n_points, double *max_err, int *passed, mb_err *err)
{
    const mb_graph *g = t->plan->g;
    const int nn = g->n_nodes;
    const int64_t C = t->shape.cols, R = t->shape.rows;
    gcheck G = {t, g, C, NULL, NULL, NULL, 0, NULL, 0, NULL, 0};
    G.val = malloc(2 * (size_t)nn * sizeof *G.val);
    double *slab = malloc(2 * (size_t)nn * (size_t)C * sizeof(double));
    double *gslab = malloc(((size_t)g->n_outputs + 1) * (size_t)C * sizeof(double));
    double *gout[MB_MAX_IO];
    G.all = malloc(((size_t)nn + 1) * sizeof(int));
    G.fwd = malloc(((size_t)nn + 1) * sizeof(int));
    G.load = malloc(((size_t)nn + 1) * sizeof(int));
    int rc = MB_OK;
    if (!G.val || !slab || !gslab || !G.all || !G.fwd || !G.load) {
        rc = mb_err_set(err, MB_ERUN, "out of memory for the finite differences");
    } else {
        G.mag = G.val + nn;
        for (int v = 0; v < 2 * nn; v++) G.val[v] = slab + (size_t)v * (size_t)C;
        for (int o = 0; o < g->n_outputs; o++) gout[o] = gslab + (size_t)o * (size_t)C;
        G.n_all = mb_kern_rows_order(g, G.all);
        for (int v = 0; v < g->n_forward; v++) {
            G.load[G.n_load++] = v;
            if (g->nodes[v].op != MB_OP_INPUT) G.fwd[G.n_fwd++] = v;
        }
        for (int o = 0; o < g->n_outputs; o++) G.load[G.n_load++] = g->grad_outputs[o];
        /* about 2^25 node-elements of float64 work at most */
        int64_t cap = ((int64_t)1 << 25) / ((int64_t)C * (nn + 1) + 1);
        if (n_points < 1) n_points = 1;
        if (n_points > cap) n_points = cap > 4 ? (int)cap : 4;
        double worst = 0;
        for (int p = 0; p < n_points; p++) {
            int64_t r = (int64_t)(((uint64_t)p * 7919u) % (uint64_t)R);
            int64_t c = (int64_t)(((uint64_t)p * 104729u + 17u) % (uint64_t)C);
            check_point(&G, r, c, gout, &worst);
        }
        if (has_col_grad(g)) {
            /* a [cols] point evaluates the forward over every row twice: about
             * 2^21 node-elements of points (a few at 5x1613, the tests' rows),
             * at least one (about 2^28 node-elements at 4096x1024) */
            double **col = malloc(2 * (size_t)nn * sizeof *col);
            double *cslab = malloc(2 * (size_t)nn * (size_t)C * sizeof(double));
            int64_t per = 2 * R * C * (G.n_load + G.n_fwd + 1), col_points = ((int64_t)1 << 21) / (per > 0 ? per : 1);
            if (col_points < 1) col_points = 1;
            if (col_points > n_points) col_points = n_points;
            if (!col || !cslab) {
                rc = mb_err_set(err, MB_ERUN, "out of memory for the finite differences");
            } else {
                for (int v = 0; v < 2 * nn; v++) col[v] = cslab + (size_t)v * (size_t)C;
                if (mb_kern_rows_reference_cols(t, col, col + nn, G.all, G.n_all))
                    rc = mb_err_set(err, MB_ERUN, "out of memory for the finite differences");
                for (int64_t p = 0; p < col_points && !rc; p++)
                    check_col_point(&G, (int64_t)(((uint64_t)p * 104729u + 5u) % (uint64_t)C), col, gout, &worst);
            }
            free(col);
            free(cslab);
        }
        *max_err = worst;
        *passed = worst <= 1.0;
    }
    free(G.val);
    free(slab);
    free(gslab);
    free(G.all);
    free(G.fwd);
    free(G.load);
    return rc;
}
