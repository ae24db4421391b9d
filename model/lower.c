/* lower.c — how an executor lowers a kernel's nodes: the one rule the model
 * counts and kernels/ runs (common subexpressions evaluated once, a sin and a
 * cos of one operand as one sincos, which kernels run as compiled code).
 * Does not cost anything (roofline.c) or run anything (kernels/). */
#include "model_int.h"

#include <math.h>
#include <stdlib.h>

int mb_lower_nodes(const mb_graph *g, const int *nodes, int nk, int *common, int *pair,
                   unsigned char *evaluated)
{
    int *arg = malloc((size_t)(2 * nk + 1) * sizeof(int)); /* operands, common ones merged */
    int *same = malloc((size_t)g->n_nodes * sizeof(int));  /* node -> node evaluated for it */
    if (!arg || !same) {
        free(arg);
        free(same);
        return -1;
    }
    for (int i = 0; i < g->n_nodes; i++) same[i] = i;
    for (int j = 0; j < nk; j++) {
        const mb_node *a = &g->nodes[nodes[j]];
        evaluated[j] = a->op != MB_OP_INPUT;
        if (common) common[j] = -1;
        if (pair) pair[j] = -1;
        for (int s = 0; s < 2; s++)
            arg[2 * j + s] = s < mb_op_arity(a->op) && a->arg[s] >= 0 ? same[a->arg[s]] : -1;
        for (int q = 0; q < j && evaluated[j]; q++) {
            const mb_node *b = &g->nodes[nodes[q]];
            if (!evaluated[q] || b->op != a->op || arg[2 * q] != arg[2 * j] ||
                arg[2 * q + 1] != arg[2 * j + 1] || (arg[2 * j] < 0 && b->scalar[0] != a->scalar[0]) ||
                (arg[2 * j + 1] < 0 && mb_op_arity(a->op) == 2 && b->scalar[1] != a->scalar[1]))
                continue;
            same[nodes[j]] = nodes[q];
            evaluated[j] = 0;
            if (common) common[j] = q;
        }
    }
    /* sin/cos pairs, first come first paired */
    for (int j = 0; j < nk; j++) {
        mb_op op = g->nodes[nodes[j]].op;
        if (evaluated[j] != 1 || (op != MB_OP_SIN && op != MB_OP_COS)) continue;
        mb_op other = op == MB_OP_SIN ? MB_OP_COS : MB_OP_SIN;
        for (int q = j + 1; q < nk; q++) {
            const mb_node *b = &g->nodes[nodes[q]];
            if (evaluated[q] != 1 || b->op != other || arg[2 * q] != arg[2 * j] ||
                (arg[2 * j] < 0 && b->scalar[0] != g->nodes[nodes[j]].scalar[0]))
                continue;
            evaluated[j] = 2;
            evaluated[q] = 3;
            if (pair) pair[j] = q, pair[q] = j;
            break;
        }
    }
    free(arg);
    free(same);
    return 0;
}

int mb_node_compiles(const mb_node *a)
{
    for (int s = 0; s < mb_op_arity(a->op); s++)
        if (a->arg[s] < 0 && !isfinite((float)a->scalar[s])) return 0; /* as the executor holds it */
    if (a->op == MB_OP_POW)
        return a->arg[0] >= 0 && a->arg[1] < 0 &&
               ((float)a->scalar[1] == 1.0f || (float)a->scalar[1] == 2.0f || (float)a->scalar[1] == 3.0f);
    return (mb_op_info_of(a->op)->flags & MB_OPF_JIT) != 0;
}

int mb_node_exp_nonpos(const mb_graph *g, int v)
{
    const mb_node *e = &g->nodes[v];
    if (e->op != MB_OP_EXP || e->arg[0] < 0) return 0;
    const mb_node *s = &g->nodes[e->arg[0]];
    if (s->op != MB_OP_SUB || s->arg[0] < 0 || s->arg[1] < 0) return 0;
    const mb_node *m = &g->nodes[s->arg[1]];
    return m->op == MB_OP_AMAX && m->arg[0] == s->arg[0];
}

static int is_rowval_shape(const mb_node *nd)
{
    return nd->shape == MB_SHC_ROW || nd->shape == MB_SHC_ROWV || nd->shape == MB_SHC_SCALAR;
}

/* A kernel of a graph with row operations compiles (kernels/jit_rows.c, as
 * rows_run_cpu.c chooses, which runs them all) when it has a row op or two
 * nodes or more, each elementwise one with a
 * compiled form, each row op over a full operand (an online sum's exp
 * operand's too), and no column sum but a colsum's per-block partial sums
 * (PART: the row kernel adds each row into its block's). */
static int row_kernel_compiles(const mb_graph *g, const mb_kernel *K)
{
    int row_op = 0;
    for (int j = 0; j < K->n_nodes; j++) row_op |= MB_OP_IS_ROW(g->nodes[K->nodes[j]].op);
    if (K->n_nodes < 2 && !row_op) return 0;
    for (int q = 0; q < K->n_reads; q++) /* a GCOL tensor: the interpreter (kernels/rows_run_cpu.c) */
        if (g->nodes[K->reads[q]].shape == MB_SHC_GCOL) return 0;
    for (int j = 0; j < K->n_nodes; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]];
        if (MB_OP_IS_COLUMN(nd->op) && nd->shape == MB_SHC_PART && nd->arg[0] >= 0 &&
            g->nodes[nd->arg[0]].shape == MB_SHC_FULL)
            continue;
        if (MB_OP_IS_COLUMN(nd->op) || nd->op == MB_OP_INPUT || nd->shape == MB_SHC_GCOL) return 0;
        if (!MB_OP_IS_ROW(nd->op)) {
            if (!mb_node_compiles(nd)) return 0;
            continue;
        }
        if (nd->arg[0] < 0 || is_rowval_shape(&g->nodes[nd->arg[0]])) return 0;
        if (K->online && K->online[j] && mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION) {
            int a = g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[0];
            if (a < 0 || is_rowval_shape(&g->nodes[a])) return 0;
        }
    }
    return 1;
}

int mb_kernel_compiled(const mb_graph *g, const mb_kernel *K)
{
    if (K->n_reads > MB_COMPILED_IO_MAX || K->n_writes > MB_COMPILED_IO_MAX) return 0;
    for (int r = 0; r < K->n_reads; r++)
        if (g->nodes[K->reads[r]].dtype != MB_F32) return 0;
    for (int w = 0; w < K->n_writes; w++)
        if (g->nodes[K->writes[w]].dtype != MB_F32) return 0;
    if (g->has_row_ops) return row_kernel_compiles(g, K); /* every kernel of the plan runs there */
    unsigned char *evaluated = malloc((size_t)K->n_nodes + 1);
    if (!evaluated || mb_lower_nodes(g, K->nodes, K->n_nodes, NULL, NULL, evaluated)) {
        free(evaluated);
        return 0;
    }
    int ops = 0, compiles = 1;
    for (int j = 0; j < K->n_nodes; j++) {
        if (evaluated[j] == 0 || evaluated[j] == 3) continue;
        ops++;
        compiles &= mb_node_compiles(&g->nodes[K->nodes[j]]);
    }
    free(evaluated);
    return compiles && ops >= 2;
}
