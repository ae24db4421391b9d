/* autodiff.c — reverse-mode differentiation of an elementwise forward graph.
 * Every op's derivative is written only in terms of the incoming gradient and
 * the tensors the op saves (its inputs or its output, as PyTorch's autograd
 * does): as data in op_table.h (g * dop(x) and the like), or, for the rows
 * marked MB_DER_CODE, in rule() below, each as PyTorch's own formula builds
 * it, node by node, so that the eager plan launches what PyTorch launches.
 * Plans decide what is stored or recomputed; this file only appends backward
 * nodes. */
#include "model_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    mb_graph *g;
    int origin;       /* forward node being differentiated (-1: accumulation) */
    int *grad;        /* per forward node: its gradient so far, -1 none */
    int pend_node[2], pend_grad[2], n_pend; /* the contributions of one rule */
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

/* A rule's gradient for an operand, held until the rule is done (a rule
 * contributes at most once per operand). */
static void contribute(ad *A, int node, int grad)
{
    if (A->failed || grad < 0) return;
    if (A->n_pend == 2) { A->failed = 2; return; }
    A->pend_node[A->n_pend] = node;
    A->pend_grad[A->n_pend++] = grad;
}

/* Adds a gradient to a node's as autograd's engine does once a backward
 * function returns: the first is kept, each later one is summed into it at
 * once by an accumulation add (origin -1: the eager plan's add_grad kernel). */
static void accumulate(ad *A, int node, int grad)
{
    if (A->failed || grad < 0) return;
    if (A->grad[node] < 0) { A->grad[node] = grad; return; }
    int save = A->origin;
    A->origin = -1;
    A->grad[node] = bi(A, MB_OP_ADD, A->grad[node], grad);
    A->origin = save;
}

static void flush(ad *A)
{
    for (int k = 0; k < A->n_pend; k++) accumulate(A, A->pend_node[k], A->pend_grad[k]);
    A->n_pend = 0;
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

/* x**k for a constant k, as PyTorch's pow_backward: grad * (k * x.pow(k - 1)),
 * three kernels (pow, mul, mul) for every k but 0 (x**0's gradient is zero;
 * PyTorch launches zeros_like, here one mul by 0). */
static void pow_scalar_rule(ad *A, int a, double k, int g)
{
    if (k == 0.0) { contribute(A, a, bs(A, MB_OP_MUL, g, 0.0)); return; }
    int p = bs(A, MB_OP_POW, a, k - 1.0);
    int m = bs(A, MB_OP_MUL, p, k);
    contribute(A, a, bi(A, MB_OP_MUL, g, m));
}

/* x / w: d/dx = grad / w; d/dw = -grad * (x / w) / w (PyTorch's
 * div_tensor_other_backward: div, neg, mul, div). */
static void div_rule(ad *A, int a, double s0, int b, double s1, int g)
{
    if (a >= 0) contribute(A, a, b >= 0 ? bi(A, MB_OP_DIV, g, b) : bs(A, MB_OP_DIV, g, s1));
    if (b < 0) return;
    int q = a >= 0 ? bi(A, MB_OP_DIV, a, b) : sb(A, MB_OP_DIV, s0, b);
    int ng = un(A, MB_OP_NEG, g);
    int m = bi(A, MB_OP_MUL, ng, q);
    contribute(A, b, bi(A, MB_OP_DIV, m, b));
}

/* The derivative rules: given gradient g of node i, contribute to operands
 * (op_table.h's rows of MB_DER_CODE here, the rest table_rule). Each rule is
 * PyTorch's formula (torch 1.13's derivatives.yaml and FunctionsManual.cpp)
 * with its kernels in the order PyTorch launches them, one node per kernel:
 * the eager plan runs the nodes of a composite backward as they come
 * (op_table.h's bwd column), so the order is written out step by step. */
static void rule(ad *A, int i, int g)
{
    const mb_node nd = A->g->nodes[i]; /* copy: the array may move */
    if (table_rule(A, &nd, i, g)) return;
    int a = nd.arg[0], b = nd.arg[1];
    double s0 = nd.scalar[0], s1 = nd.scalar[1];
    int t, u;
    switch (nd.op) {
    case MB_OP_ADD: /* saves nothing, launches nothing */
        if (a >= 0) contribute(A, a, g);
        if (b >= 0) contribute(A, b, g);
        break;
    case MB_OP_SUB: /* and rsub (1 - x): the subtrahend's gradient is -grad */
        if (a >= 0) contribute(A, a, g);
        if (b >= 0) contribute(A, b, un(A, MB_OP_NEG, g));
        break;
    case MB_OP_MUL: /* saves the other operand: one mul per tensor operand */
        if (a >= 0) contribute(A, a, b >= 0 ? bi(A, MB_OP_MUL, g, b) : bs(A, MB_OP_MUL, g, s1));
        if (b >= 0) contribute(A, b, a >= 0 ? bi(A, MB_OP_MUL, g, a) : bs(A, MB_OP_MUL, g, s0));
        break;
    case MB_OP_DIV: div_rule(A, a, s0, b, s1, g); break; /* saves both operands */
    case MB_OP_POW:
        if (a >= 0 && b < 0) { /* x**k saves x */
            pow_scalar_rule(A, a, s1, g);
        } else if (a < 0) { /* s**y saves the output: grad * (out * log(s)) */
            t = bs(A, MB_OP_MUL, i, log(s0));
            contribute(A, b, bi(A, MB_OP_MUL, g, t));
        } else { /* x**y saves x, y and the output */
            int d = bi(A, MB_OP_MUL, b, bi(A, MB_OP_POW, a, bs(A, MB_OP_SUB, b, 1.0)));
            contribute(A, a, bi(A, MB_OP_MUL, g, d));
            contribute(A, b, bi(A, MB_OP_MUL, g, bi(A, MB_OP_MUL, i, un(A, MB_OP_LOG, a))));
        }
        break;
    case MB_OP_NEG: contribute(A, a, un(A, MB_OP_NEG, g)); break;
    case MB_OP_COS: /* grad * -sin(x): sin, neg, mul */
        t = un(A, MB_OP_SIN, a);
        t = un(A, MB_OP_NEG, t);
        contribute(A, a, bi(A, MB_OP_MUL, g, t));
        break;
    case MB_OP_TAN: /* saves the output: grad * (1 + out.pow(2)): pow, add, mul */
        t = bs(A, MB_OP_POW, i, 2.0);
        t = bs(A, MB_OP_ADD, t, 1.0);
        contribute(A, a, bi(A, MB_OP_MUL, g, t));
        break;
    case MB_OP_TANH: /* saves the output: grad (1 - out^2), one tanh_backward */
        t = bi(A, MB_OP_MUL, i, i);
        t = sb(A, MB_OP_SUB, 1.0, t);
        contribute(A, a, bi(A, MB_OP_MUL, g, t));
        break;
    case MB_OP_SQRT: /* saves the output: grad / (2 out): mul, div */
        t = bs(A, MB_OP_MUL, i, 2.0);
        contribute(A, a, bi(A, MB_OP_DIV, g, t));
        break;
    case MB_OP_RSQRT: /* saves the output: -0.5 grad out.pow(3): pow, mul, mul */
        t = bs(A, MB_OP_POW, i, 3.0);
        u = bs(A, MB_OP_MUL, g, -0.5);
        contribute(A, a, bi(A, MB_OP_MUL, u, t));
        break;
    case MB_OP_SIGMOID: /* saves the output: grad out (1 - out), one sigmoid_backward */
        t = sb(A, MB_OP_SUB, 1.0, i);
        t = bi(A, MB_OP_MUL, i, t);
        contribute(A, a, bi(A, MB_OP_MUL, g, t));
        break;
    case MB_OP_RECIPROCAL: /* saves the output: -grad (out out): mul, neg, mul */
        t = bi(A, MB_OP_MUL, i, i);
        u = un(A, MB_OP_NEG, g);
        contribute(A, a, bi(A, MB_OP_MUL, u, t));
        break;
    case MB_OP_ERF: /* saves x: 2/sqrt(pi) exp(-(x.pow(2))) grad: pow, neg, exp, mul, mul */
        t = bs(A, MB_OP_POW, a, 2.0);
        t = un(A, MB_OP_NEG, t);
        t = un(A, MB_OP_EXP, t);
        t = bs(A, MB_OP_MUL, t, 1.12837916709551257390); /* 2 / sqrt(pi) */
        contribute(A, a, bi(A, MB_OP_MUL, t, g));
        break;
    default: A->failed = 2; break; /* a row of MB_DER_CODE without its rule here */
    }
}

int mb_autodiff(mb_graph *g, mb_err *err)
{
    int nf = g->n_forward;
    ad A = {g, -1, malloc((size_t)(nf ? nf : 1) * sizeof(int)), {0}, {0}, 0, 0};
    if (!A.grad) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int i = 0; i < nf; i++) A.grad[i] = -1;
    /* incoming gradients: one input per output */
    for (int k = 0; k < g->n_outputs; k++) {
        int o = g->outputs[k];
        int id = mb_graph_add(g, MB_OP_INPUT, -1, 0, -1, 0, g->nodes[o].dtype, 1, -1);
        if (id < 0) { A.failed = 1; break; }
        char out_name[MB_NAME_MAX];
        memcpy(out_name, g->nodes[o].name, MB_NAME_MAX);
        snprintf(g->nodes[id].name, MB_NAME_MAX, "grad_%.*s", MB_NAME_MAX - 6, out_name);
        g->grad_outputs[k] = id;
        accumulate(&A, o, id);
    }
    /* reverse evaluation order: autograd's order too (a node runs once every
     * node that consumes it has, the latest created first) */
    for (int i = nf - 1; i >= 0 && !A.failed; i--) {
        if (g->nodes[i].op == MB_OP_INPUT) continue;
        int gi = A.grad[i];
        if (gi < 0) continue; /* does not reach an output */
        A.origin = i;
        rule(&A, i, gi);
        A.origin = -1;
        flush(&A);
    }
    for (int k = 0; k < g->n_inputs && !A.failed; k++) {
        int in = g->inputs[k];
        int gi = A.grad[in];
        if (gi < 0) {
            A.failed = 3;
            mb_err_set(err, MB_EINPUT, "%s:%d:%d: input '%s' does not reach any output: no gradient",
                       g->path, g->nodes[in].line, g->nodes[in].col, g->nodes[in].name);
            break;
        }
        g->grad_inputs[k] = gi;
    }
    free(A.grad);
    if (A.failed == 3) return MB_EINPUT;
    if (A.failed == 2) return mb_err_set(err, MB_ERUN, "autodiff: unexpected op in forward graph");
    if (A.failed) return mb_err_set(err, MB_ERUN, "out of memory");
    return MB_OK;
}
