/* rows_ref.c — the float64 reference of plans with row operations: an order
 * over every node of a plan's graph (its backward nodes and recomputed clones
 * after what they read), a row of those nodes with the magnitudes that went
 * into each value, and the sums over the rows (colsum) over every row.
 * Called by the checks of row plans (mb_kern_rows_verify, rows_bwd_cpu.c's
 * gradients); calls only exec_common.c. Does not run kernels nor judge. */
#include "kernels_int.h"
#include "mb_ops.h"

#include <math.h>
#include <stdlib.h>

int mb_kern_rows_order(const mb_graph *g, int *order)
{
    const int nn = g->n_nodes;
    char *state = calloc((size_t)nn + 1, 1); /* 0 new, 1 on the stack, 2 placed */
    int *stack = malloc(((size_t)nn + 1) * sizeof *stack);
    int cnt = 0;
    if (!state || !stack) { free(state); free(stack); return 0; }
    for (int i = 0; i < g->n_forward; i++) { /* forward nodes are in evaluation order */
        order[cnt++] = i;
        state[i] = 2;
    }
    for (int root = g->n_forward; root < nn; root++) {
        if (state[root]) continue;
        int top = 0;
        stack[top++] = root;
        state[root] = 1;
        while (top > 0) {
            int v = stack[top - 1], pushed = 0;
            for (int a = 0; a < 2 && !pushed; a++) {
                int u = g->nodes[v].arg[a];
                if (u >= 0 && !state[u]) {
                    state[u] = 1;
                    stack[top++] = u;
                    pushed = 1;
                }
            }
            if (pushed) continue;
            order[cnt++] = v;
            state[v] = 2;
            top--;
        }
    }
    free(state);
    free(stack);
    return cnt;
}

/* The magnitude that went into an elementwise result (op_table.h's mag
 * column, as reference.c judges elementwise plans): sums of absolute values,
 * so that a result cancelling to near 0 is judged against its terms. */
static double mag_of(mb_op op, double v, double ma, double mb, double b)
{
    switch (mb_op_info_of(op)->mag) {
    case MB_MAG_SUM: return ma + mb;
    case MB_MAG_PROD: return ma * mb;
    case MB_MAG_QUOT: return b != 0 ? ma / fabs(b) : fabs(v);
    case MB_MAG_PASS: return ma;
    default: return fabs(v);
    }
}

/* Row r of the nodes order[0..cnt) in float64, in that order: full and
 * [cols] nodes into val[node][0..cols), row values into val[node][0]; their
 * magnitudes into mag[][] the same way. */
void mb_kern_rows_reference_row(const mb_kern_tensors *t, int64_t r, double **val, double **mag,
                                const int *order, int cnt)
{
    const mb_graph *g = t->plan->g;
    const int64_t C = t->shape.cols;
    for (int k = 0; k < cnt; k++) {
        int v = order[k];
        const mb_node *nd = &g->nodes[v];
        double *y = val[v];
        int rv = mb_kern_is_rowval(nd);
        int64_t len = rv ? 1 : C;
        if (nd->op == MB_OP_INPUT) {
            if (!t->data[v]) continue;
            int64_t base = rv ? (nd->shape == MB_SHC_SCALAR ? 0 : r) : mb_kern_row_base(g, v, r, C);
            for (int64_t i = 0; i < len; i++) mag[v][i] = fabs(y[i] = mb_load_f32(t->data[v], base + i, nd->dtype));
            continue;
        }
        const double *mx = nd->arg[0] >= 0 ? mag[nd->arg[0]] : NULL;
        const double *mbv = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? mag[nd->arg[1]] : NULL;
        double *my = mag[v];
        const double *x = nd->arg[0] >= 0 ? val[nd->arg[0]] : NULL;
        int xr = nd->arg[0] >= 0 && mb_kern_is_rowval(&g->nodes[nd->arg[0]]);
        const double *b = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? val[nd->arg[1]] : NULL;
        int br = b && mb_kern_is_rowval(&g->nodes[nd->arg[1]]);
#define XI(i) (x ? x[xr ? 0 : (i)] : nd->scalar[0])
#define BI(i) (b ? b[br ? 0 : (i)] : nd->scalar_cols ? (double)C : nd->scalar[1])
#define MXI(i) (mx ? mx[xr ? 0 : (i)] : fabs(nd->scalar[0]))
#define MBI(i) (mbv ? mbv[br ? 0 : (i)] : fabs(nd->scalar[1]))
        double s = 0, s2 = 0, m = -INFINITY, ms = 0;
        switch (nd->op) {
        case MB_OP_SUM: case MB_OP_MEAN:
            for (int64_t i = 0; i < C; i++) s += XI(i), ms += MXI(i);
            y[0] = nd->op == MB_OP_MEAN ? s / (double)C : s;
            my[0] = nd->op == MB_OP_MEAN ? ms / (double)C : ms;
            break;
        case MB_OP_AMAX:
            for (int64_t i = 0; i < C; i++) m = XI(i) > m ? XI(i) : m;
            y[0] = m;
            my[0] = fabs(m);
            break;
        case MB_OP_COLSUM: /* this row's term of the sum over rows (mb_kern_rows_reference_cols) */
            for (int64_t i = 0; i < C; i++) y[i] = XI(i), my[i] = MXI(i);
            break;
        case MB_OP_SOFTMAX: case MB_OP_LOG_SOFTMAX:
            for (int64_t i = 0; i < C; i++) m = XI(i) > m ? XI(i) : m;
            for (int64_t i = 0; i < C; i++) s += exp(XI(i) - m);
            for (int64_t i = 0; i < C; i++) {
                y[i] = nd->op == MB_OP_SOFTMAX ? exp(XI(i) - m) / s : XI(i) - m - log(s);
                my[i] = nd->op == MB_OP_SOFTMAX ? y[i] : fabs(XI(i)) + fabs(m) + fabs(log(s));
            }
            break;
        case MB_OP_LAYER_NORM:
            for (int64_t i = 0; i < C; i++) s += XI(i);
            s /= (double)C;
            for (int64_t i = 0; i < C; i++) s2 += (XI(i) - s) * (XI(i) - s);
            s2 = 1.0 / sqrt(s2 / (double)C + nd->eps);
            for (int64_t i = 0; i < C; i++) {
                y[i] = (XI(i) - s) * s2 * BI(i);
                my[i] = (fabs(XI(i)) + fabs(s)) * s2 * fabs(BI(i));
            }
            break;
        case MB_OP_RMS_NORM:
            for (int64_t i = 0; i < C; i++) s += XI(i) * XI(i);
            s = 1.0 / sqrt(s / (double)C + nd->eps);
            for (int64_t i = 0; i < C; i++) {
                y[i] = XI(i) * s * BI(i);
                my[i] = fabs(y[i]);
            }
            break;
        default:
            for (int64_t i = 0; i < len; i++) {
                y[i] = mb_op_apply_f64(nd->op, XI(i), BI(i));
                my[i] = mag_of(nd->op, y[i], MXI(i), MBI(i), BI(i));
            }
            break;
        }
#undef XI
#undef BI
#undef MXI
#undef MBI
    }
}

int mb_kern_rows_reference_cols(const mb_kern_tensors *t, double **val, double **mag, const int *order, int cnt)
{
    const mb_graph *g = t->plan->g;
    const int nn = g->n_nodes;
    const int64_t C = t->shape.cols, R = t->shape.rows;
    char *post = malloc((size_t)nn + 1);
    int *pre = malloc(((size_t)cnt + 1) * sizeof(int)), *after = malloc(((size_t)cnt + 1) * sizeof(int));
    int *cs = malloc(((size_t)cnt + 1) * sizeof(int)); /* the colsums in order */
    int failed = !post || !pre || !after || !cs, n_pre = 0, n_after = 0, n_cs = 0;
    if (!failed) {
        mb_kern_col_post(g, post);
        for (int k = 0; k < cnt; k++) {
            if (!post[order[k]]) pre[n_pre++] = order[k];
            else if (MB_OP_IS_COLUMN(g->nodes[order[k]].op)) cs[n_cs++] = order[k];
            else after[n_after++] = order[k];
        }
    }
    const size_t sums = 2 * (size_t)n_cs * (size_t)C; /* each colsum's sums, then their magnitudes */
    double *tot = failed ? NULL : calloc(sums + 1, sizeof(double));
    failed |= !tot;
    int par = !failed && C <= ((int64_t)1 << 16);
#pragma omp parallel if (par)
    {
        double **v = malloc(2 * (size_t)nn * sizeof *v), **m = v ? v + nn : NULL;
        double *slab = malloc(2 * (size_t)nn * (size_t)C * sizeof(double));
        double *mine = calloc(sums + 1, sizeof(double));
        int ok = !failed && v && slab && mine;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
        for (int i = 0; ok && i < 2 * nn; i++) v[i] = slab + (size_t)i * (size_t)C;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < R; r++) {
            if (!ok) continue;
            mb_kern_rows_reference_row(t, r, v, m, pre, n_pre);
            for (int k = 0; k < n_cs; k++) {
                int a = g->nodes[cs[k]].arg[0], rv = mb_kern_is_rowval(&g->nodes[a]);
                double *sv = mine + (size_t)k * (size_t)C, *sm = mine + ((size_t)n_cs + k) * (size_t)C;
                for (int64_t c = 0; c < C; c++) sv[c] += v[a][rv ? 0 : c], sm[c] += m[a][rv ? 0 : c];
            }
        }
#pragma omp critical(mb_colsum_ref)
        if (ok)
            for (size_t i = 0; i < sums; i++) tot[i] += mine[i];
        free(v);
        free(slab);
        free(mine);
    }
    if (!failed) {
        /* row 0 for the [cols] values the nodes after the sums read, then those nodes */
        mb_kern_rows_reference_row(t, 0, val, mag, pre, n_pre);
        for (int k = 0; k < n_cs; k++)
            for (int64_t c = 0; c < C; c++) {
                val[cs[k]][c] = tot[(size_t)k * (size_t)C + c];
                mag[cs[k]][c] = tot[((size_t)n_cs + k) * (size_t)C + c];
            }
        mb_kern_rows_reference_row(t, 0, val, mag, after, n_after);
    }
    free(post);
    free(pre);
    free(after);
    free(cs);
    free(tot);
    return failed ? -1 : 0;
}
