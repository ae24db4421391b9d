/* autodiff.c — reverse-mode differentiation of an elementwise forward graph.
 * Every op's derivative is written only in terms of the incoming gradient and
 * the tensors the op saves (its inputs or its output, as PyTorch's autograd
 * does): as data in op_table.h (g * dop(x) and the like), or, for the rows
 * marked MB_DER_CODE, in rule() below. Plans decide what is stored or
 * recomputed; this file only appends backward nodes. */
#include "model_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    mb_graph *g;
    int origin;       /* forward node being differentiated (-1: accumulation) */
    int **contrib;    /* per forward node: gradient contributions */
    int *n_contrib;
    int failed;
} ad;

/* Operand helpers: a "ref" is a node id, or a scalar when id < 0. */
static int mk(ad *A, mb_op op, int a, double sa, int b, double sb)
{
    if (A->failed) return -1;
    mb_dtype t;
    if (a >= 0 && b >= 0) t = mb_dtype_promote(A->g->nodes[a].dtype, A->g->nodes[b].dtype);
    else t = A->g->nodes[a >= 0 ? a : b].dtype;
    int id = mb_graph_add(A->g, op, a, sa, b, sb, t, 1, A->origin);
    if (id < 0) A->failed = 1;
    return id;
}
static int un(ad *A, mb_op op, int a) { return mk(A, op, a, 0, -1, 0); }
static int bi(ad *A, mb_op op, int a, int b) { return mk(A, op, a, 0, b, 0); }
static int bs(ad *A, mb_op op, int a, double s) { return mk(A, op, a, 0, -1, s); }
static int sb(ad *A, mb_op op, double s, int b) { return mk(A, op, -1, s, b, 0); }

static void contribute(ad *A, int node, int grad)
{
    if (A->failed || grad < 0) return;
    int *c = realloc(A->contrib[node], (size_t)(A->n_contrib[node] + 1) * sizeof *c);
    if (!c) { A->failed = 1; return; }
    c[A->n_contrib[node]++] = grad;
    A->contrib[node] = c;
}

/* Sums the contributions of node i, one accumulation add each (as autograd
 * accumulates a tensor used more than once). Returns the gradient or -1. */
static int total_grad(ad *A, int i)
{
    if (A->n_contrib[i] == 0) return -1;
    int gsum = A->contrib[i][0];
    int save = A->origin;
    A->origin = -1;
    for (int k = 1; k < A->n_contrib[i]; k++)
        gsum = bi(A, MB_OP_ADD, gsum, A->contrib[i][k]);
    A->origin = save;
    return gsum;
}

/* The unary rules op_table.h states as data (its der and dop columns). */
static int table_rule(ad *A, const mb_node *nd, int i, int g)
{
    const mb_op_info *in = mb_op_info_of(nd->op);
    int a = nd->arg[0];
    switch (in->der) {
    case MB_DER_G_OP_X: contribute(A, a, bi(A, MB_OP_MUL, g, un(A, in->dop, a))); return 1;
    case MB_DER_G_OP_Y: contribute(A, a, bi(A, MB_OP_MUL, g, un(A, in->dop, i))); return 1;
    case MB_DER_G_Y: contribute(A, a, bi(A, MB_OP_MUL, g, i)); return 1;
    case MB_DER_G_DIV_X: contribute(A, a, bi(A, MB_OP_DIV, g, a)); return 1;
    case MB_DER_PASS: contribute(A, a, g); return 1; /* clone's backward passes the gradient on */
    case MB_DER_NONE: A->failed = 2; return 1; /* autodiff helpers never appear in a forward graph */
    case MB_DER_CODE: break;
    }
    return 0;
}

/* The derivative rules: given gradient g of node i, contribute to operands
 * (op_table.h's rows of MB_DER_CODE here, the rest table_rule). */
static void rule(ad *A, int i, int g)
{
    const mb_node nd = A->g->nodes[i]; /* copy: the array may move */
    if (table_rule(A, &nd, i, g)) return;
    int a = nd.arg[0], b = nd.arg[1];
    double s0 = nd.scalar[0], s1 = nd.scalar[1];
    switch (nd.op) {
    case MB_OP_ADD: /* saves nothing */
        if (a >= 0) contribute(A, a, g);
        if (b >= 0) contribute(A, b, g);
        break;
    case MB_OP_SUB:
        if (a >= 0) contribute(A, a, g);
        if (b >= 0) contribute(A, b, un(A, MB_OP_NEG, g));
        break;
    case MB_OP_MUL: /* saves the other operand */
        if (a >= 0) contribute(A, a, b >= 0 ? bi(A, MB_OP_MUL, g, b) : bs(A, MB_OP_MUL, g, s1));
        if (b >= 0) contribute(A, b, a >= 0 ? bi(A, MB_OP_MUL, g, a) : bs(A, MB_OP_MUL, g, s0));
        break;
    case MB_OP_DIV: /* saves both operands: d/da = 1/b, d/db = -a/b^2 */
        if (a >= 0) contribute(A, a, b >= 0 ? bi(A, MB_OP_DIV, g, b) : bs(A, MB_OP_MUL, g, 1.0 / s1));
        if (b >= 0) {
            int num = a >= 0 ? bi(A, MB_OP_MUL, g, a) : bs(A, MB_OP_MUL, g, s0);
            contribute(A, b, un(A, MB_OP_NEG, bi(A, MB_OP_DIV, num, bi(A, MB_OP_MUL, b, b))));
        }
        break;
    case MB_OP_POW:
        if (a >= 0 && b < 0) { /* x**k saves x: k * x**(k-1) */
            int d;
            if (s1 == 1.0) { contribute(A, a, g); break; }
            if (s1 == 2.0) d = a;
            else d = bs(A, MB_OP_POW, a, s1 - 1.0);
            contribute(A, a, bi(A, MB_OP_MUL, bs(A, MB_OP_MUL, g, s1), d));
        } else if (a < 0) { /* s**y saves the output: out * log(s) */
            contribute(A, b, bs(A, MB_OP_MUL, bi(A, MB_OP_MUL, g, i), log(s0)));
        } else { /* x**y saves x, y and the output */
            int d = bi(A, MB_OP_MUL, b, bi(A, MB_OP_POW, a, bs(A, MB_OP_SUB, b, 1.0)));
            contribute(A, a, bi(A, MB_OP_MUL, g, d));
            contribute(A, b, bi(A, MB_OP_MUL, g, bi(A, MB_OP_MUL, i, un(A, MB_OP_LOG, a))));
        }
        break;
    case MB_OP_NEG: contribute(A, a, un(A, MB_OP_NEG, g)); break;
    case MB_OP_COS: contribute(A, a, un(A, MB_OP_NEG, bi(A, MB_OP_MUL, g, un(A, MB_OP_SIN, a)))); break;
    case MB_OP_TAN: /* saves the output: 1 + out^2 */
        contribute(A, a, bi(A, MB_OP_MUL, g, bs(A, MB_OP_ADD, bi(A, MB_OP_MUL, i, i), 1.0)));
        break;
    case MB_OP_TANH: /* saves the output: 1 - out^2 */
        contribute(A, a, bi(A, MB_OP_MUL, g, sb(A, MB_OP_SUB, 1.0, bi(A, MB_OP_MUL, i, i))));
        break;
    case MB_OP_SQRT: /* saves the output: 1 / (2 out) */
        contribute(A, a, bi(A, MB_OP_DIV, bs(A, MB_OP_MUL, g, 0.5), i));
        break;
    case MB_OP_RSQRT: /* saves the output: -out^3 / 2 */
        contribute(A, a, bi(A, MB_OP_MUL, bs(A, MB_OP_MUL, g, -0.5), bs(A, MB_OP_POW, i, 3.0)));
        break;
    case MB_OP_SIGMOID: /* saves the output: out (1 - out) */
        contribute(A, a, bi(A, MB_OP_MUL, g, bi(A, MB_OP_MUL, i, sb(A, MB_OP_SUB, 1.0, i))));
        break;
    case MB_OP_RECIPROCAL: /* saves the output: -out^2 */
        contribute(A, a, un(A, MB_OP_NEG, bi(A, MB_OP_MUL, g, bi(A, MB_OP_MUL, i, i))));
        break;
    default: A->failed = 2; break; /* a row of MB_DER_CODE without its rule here */
    }
}

int mb_autodiff(mb_graph *g, mb_err *err)
{
    int nf = g->n_forward;
    ad A = {g, -1, calloc((size_t)nf, sizeof(int *)), calloc((size_t)nf, sizeof(int)), 0};
    if (!A.contrib || !A.n_contrib) {
        free(A.contrib);
        free(A.n_contrib);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    /* incoming gradients: one input per output */
    for (int k = 0; k < g->n_outputs; k++) {
        int o = g->outputs[k];
        int id = mb_graph_add(g, MB_OP_INPUT, -1, 0, -1, 0, g->nodes[o].dtype, 1, -1);
        if (id < 0) { A.failed = 1; break; }
        char out_name[MB_NAME_MAX];
        memcpy(out_name, g->nodes[o].name, MB_NAME_MAX);
        snprintf(g->nodes[id].name, MB_NAME_MAX, "grad_%.*s", MB_NAME_MAX - 6, out_name);
        g->grad_outputs[k] = id;
        contribute(&A, o, id);
    }
    for (int i = nf - 1; i >= 0 && !A.failed; i--) {
        if (g->nodes[i].op == MB_OP_INPUT) continue;
        int gi = total_grad(&A, i);
        if (gi < 0) continue; /* does not reach an output */
        A.origin = i;
        rule(&A, i, gi);
        A.origin = -1;
    }
    for (int k = 0; k < g->n_inputs && !A.failed; k++) {
        int in = g->inputs[k];
        int gi = total_grad(&A, in);
        if (gi < 0) {
            A.failed = 3;
            mb_err_set(err, MB_EINPUT, "%s:%d:%d: input '%s' does not reach any output: no gradient",
                       g->path, g->nodes[in].line, g->nodes[in].col, g->nodes[in].name);
            break;
        }
        g->grad_inputs[k] = gi;
    }
    for (int i = 0; i < nf; i++) free(A.contrib[i]);
    free(A.contrib);
    free(A.n_contrib);
    if (A.failed == 3) return MB_EINPUT;
    if (A.failed == 2) return mb_err_set(err, MB_ERUN, "autodiff: unexpected op in forward graph");
    if (A.failed) return mb_err_set(err, MB_ERUN, "out of memory");
    return MB_OK;
}
