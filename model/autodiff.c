/* autodiff.c — reverse-mode differentiation of a forward graph (elementwise
 * ops and row operations over the last dimension; each backward node gets its
 * shape, and a gradient of a broadcast operand is summed as autograd's sum_to
 * does: over the row for a [rows, 1] one, over the rows (a colsum, one
 * sum(dim=0) kernel in PyTorch eager) for a [cols] weight or bias).
 * Every op's derivative is written only in terms of the incoming gradient and
 * the tensors the op saves (its inputs or its output, as PyTorch's autograd
 * does): as data in op_table.h (g * dop(x) and the like), or, for the rows
 * marked MB_DER_CODE, in rule() below, each as PyTorch's own formula builds
 * it, node by node, so that the eager plan launches what PyTorch launches.
 * Plans decide what is stored or recomputed; this file only appends backward
 * nodes, and appends them again when a graph changes rank (mb_graph_set_rank:
 * shape.c derives the forward shapes first, the backward ones follow them). */
#include "model_int.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    mb_graph *g;
    int origin;       /* forward node being differentiated (-1: accumulation) */
    int *grad;        /* per forward node: its gradient so far, -1 none */
    char *needs;      /* per forward node: 1 when an input with a gradient
                         reaches it (PyTorch's requires_grad) */
    int pend_node[3], pend_grad[3], pend_sem[3], pend_gb[3], n_pend; /* the contributions of one rule */
    int sem;          /* the shape class a rule's contributions have (its output's; -1: its operand's) */
    int gamma_beta;   /* 1 while a norm's weight and bias gradients are built */
    int failed;
    int bad_node;     /* failed == 4: the node whose gradient is a sum over every element */
} ad;

/* Row values: one per row ([rows, 1], [rows]) or one in all ([] at rank 1). */
static int rowval(int c) { return c == MB_SHC_ROW || c == MB_SHC_ROWV || c == MB_SHC_SCALAR; }

/* The shape of a backward node from its operands' (-1: a scalar operand).
 * A gradient may be held as a row value where its tensor is full (the
 * expand of sum's backward, a view in PyTorch): it broadcasts as [rows, 1]
 * does, so [rows] meets [rows, cols] here as [rows, 1]. */
static unsigned char join_shape(int a, int b)
{
    if (a < 0) return (unsigned char)(b < 0 ? MB_SHC_SCALAR : b);
    if (b < 0 || a == b) return (unsigned char)a;
    if (a == MB_SHC_GCOL || b == MB_SHC_GCOL) /* beside a [cols] tensor it stays, else the full shape */
        return a == MB_SHC_COL || b == MB_SHC_COL ? MB_SHC_GCOL : MB_SHC_FULL;
    if (a == MB_SHC_FULL || b == MB_SHC_FULL) return MB_SHC_FULL;
    if (a == MB_SHC_COL || b == MB_SHC_COL) return rowval(a) && rowval(b) ? MB_SHC_COL : MB_SHC_FULL;
    if (a == MB_SHC_ROW || b == MB_SHC_ROW) return MB_SHC_ROW;
    return MB_SHC_ROWV;
}

/* Operand helpers: a "ref" is a node id, or a scalar when id < 0. */
static int mk(ad *A, mb_op op, int a, double sa, int b, double sb)
{
    if (A->failed) return -1;
    mb_dtype t;
    if (a >= 0 && b >= 0) t = mb_dtype_promote(A->g->nodes[a].dtype, A->g->nodes[b].dtype);
    else t = A->g->nodes[a >= 0 ? a : b].dtype;
    int id = mb_graph_add(A->g, op, a, sa, b, sb, t, 1, A->origin);
    if (id < 0) { A->failed = 1; return -1; }
    mb_node *nd = &A->g->nodes[id];
    nd->gamma_beta = (unsigned char)A->gamma_beta;
    if (mb_op_info_of(op)->kind == MB_OPK_REDUCTION) { /* over the last dimension, keepdim=True */
        nd->dim = -1;
        nd->keepdim = 1;
        nd->shape = MB_SHC_ROW;
    } else {
        nd->shape = join_shape(a >= 0 ? A->g->nodes[a].shape : -1,
                               mb_op_arity(op) == 2 && b >= 0 ? A->g->nodes[b].shape : -1);
        if (nd->shape == MB_SHC_GCOL) { /* its run of leading dimensions is its GCOL operand's */
            const mb_node *src = &A->g->nodes[a >= 0 && A->g->nodes[a].shape == MB_SHC_GCOL ? a : b];
            nd->grp_lo = src->grp_lo;
            nd->grp_hi = src->grp_hi;
        }
    }
    return id;
}
static int un(ad *A, mb_op op, int a) { return mk(A, op, a, 0, -1, 0); }
static int bi(ad *A, mb_op op, int a, int b) { return mk(A, op, a, 0, b, 0); }
static int bs(ad *A, mb_op op, int a, double s) { return mk(A, op, a, 0, -1, s); }
static int sb(ad *A, mb_op op, double s, int b) { return mk(A, op, -1, s, b, 0); }

/* g broadcast to the full shape, materialised (an expand, a view in PyTorch:
 * the eager plan runs it in its consumer's kernel). */
static int expand(ad *A, int g)
{
    int id = un(A, MB_OP_COPY, g);
    if (id >= 0) A->g->nodes[id].shape = MB_SHC_FULL;
    return id;
}

/* A reduction over the last dimension of a, keepdim=True. */
static int red(ad *A, mb_op op, int a) { return un(A, op, a); }

/* A rule's gradient for an operand, held until the rule is done (a rule
 * contributes at most once per operand: a norm to x, its weight and bias). */
static void contribute(ad *A, int node, int grad)
{
    /* an operand that needs no gradient gets none (autograd's
     * needs_input_grad): what the rule built for it is pruned after */
    if (A->failed || grad < 0 || !A->needs[node]) return;
    if (A->n_pend == 3) { A->failed = 2; return; }
    A->pend_node[A->n_pend] = node;
    A->pend_sem[A->n_pend] = A->sem;
    A->pend_gb[A->n_pend] = A->gamma_beta;
    A->pend_grad[A->n_pend++] = grad;
}

/* The sum over the rows of gradient grad (full, or a row value standing for
 * a full tensor: expanded first, a view), a [cols] tensor: autograd's sum_to
 * for a [cols] operand, one sum(dim=0) kernel in PyTorch eager (a
 * reduce_kernel). (A graph with a [cols] tensor runs on the row executors:
 * shape.c says so.) */
static int col_sum(ad *A, int grad)
{
    int full = A->g->nodes[grad].shape == MB_SHC_FULL ? grad : expand(A, grad);
    int r = un(A, MB_OP_COLSUM, full);
    if (r < 0) return r;
    mb_node *nd = &A->g->nodes[r];
    nd->shape = MB_SHC_COL;
    nd->dim = 0;
    return r;
}

/* A contribution of shape class sem (held as grad's shape or a row value
 * within it) brought to node's shape, as autograd's sum_to does: a full
 * gradient of a row value is summed over the row, of a [cols] tensor over
 * the rows. A [cols] contribution to a row value would be a sum over every
 * element, which no rule makes (failed 4). */
static int fit(ad *A, int node, int grad, int sem)
{
    int ns = A->g->nodes[node].shape;
    if (sem < 0 || sem == ns || ns == MB_SHC_FULL || (rowval(sem) && rowval(ns))) return grad;
    if (ns == MB_SHC_COL) return col_sum(A, grad);
    if (sem == MB_SHC_COL) {
        A->failed = 4;
        A->bad_node = node;
        return -1;
    }
    int full = A->g->nodes[grad].shape == MB_SHC_FULL ? grad : expand(A, grad);
    int r = red(A, MB_OP_SUM, full);
    if (r >= 0 && ns != MB_SHC_ROW) {
        A->g->nodes[r].keepdim = 0;
        A->g->nodes[r].shape = (unsigned char)ns;
    }
    return r;
}

/* Adds a gradient to a node's as autograd's engine does once a backward
 * function returns: the first is kept, each later one is summed into it at
 * once by an accumulation add (origin -1: the eager plan's add_grad kernel). */
static void accumulate(ad *A, int node, int grad)
{
    if (A->failed || grad < 0) return;
    if (A->grad[node] < 0) { A->grad[node] = grad; return; }
    int save = A->origin, save_gb = A->gamma_beta;
    A->origin = -1;
    A->gamma_beta = 0;
    A->grad[node] = bi(A, MB_OP_ADD, A->grad[node], grad);
    A->origin = save;
    A->gamma_beta = save_gb;
}

static int to_dtype(ad *A, int node, int grad);

/* A rule's contributions as autograd's engine takes a function's outputs:
 * every output brought to its operand's shape first (validate_outputs'
 * sum_to, in the function's kernels: a norm's weight and bias sums in its
 * GammaBetaBackward kernel), then each added into its operand's gradient in
 * order (the input buffers). */
static void flush(ad *A)
{
    int fitted[3];
    for (int k = 0; k < A->n_pend; k++) {
        A->gamma_beta = A->pend_gb[k];
        fitted[k] = to_dtype(A, A->pend_node[k], fit(A, A->pend_node[k], A->pend_grad[k], A->pend_sem[k]));
    }
    A->gamma_beta = 0;
    for (int k = 0; k < A->n_pend; k++) accumulate(A, A->pend_node[k], fitted[k]);
    A->n_pend = 0;
}

/* grad in node's dtype, as autograd's validate_outputs casts a gradient to
 * its operand's dtype after sum_to (x.to(f32)'s backward, the bf16 operand
 * of an f32 product): one copy into that dtype, in the rule's kernels. */
static int to_dtype(ad *A, int node, int grad)
{
    if (A->failed || grad < 0 || A->g->nodes[grad].dtype == A->g->nodes[node].dtype) return grad;
    int id = un(A, MB_OP_COPY, grad);
    if (id >= 0) A->g->nodes[id].dtype = A->g->nodes[node].dtype;
    return id;
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

/* The bias of norm node i: the tensor its joined add (layer_norm(x, w, b)'s
 * bias, in the op's kernel) adds, or -1. */
static int joined_bias(const mb_graph *g, int i)
{
    if (i + 1 >= g->n_forward) return -1;
    const mb_node *a = &g->nodes[i + 1];
    return a->joins && a->op == MB_OP_ADD && a->arg[0] == i ? a->arg[1] : -1;
}

/* layer_norm(x, w, b) and rms_norm(x, w), as native_layer_norm_backward:
 * x_hat = (x - mean) rstd, gw = g w,
 * dx = rstd (gw - mean(gw) - x_hat mean(gw x_hat)) (layer_norm),
 * dx = rstd gw - x rstd^3 mean(gw x) (rms_norm): one kernel. PyTorch saves
 * x, w and the row statistics mean and rstd; here the backward kernel
 * recomputes the statistics from x (2 row values fewer read, the same full
 * tensors). The weight's and bias's gradients, dw = sum over rows of g x_hat
 * and db = sum over rows of g, are a second kernel, as on CUDA:
 * layer_norm_kernel.cu's LayerNormBackwardKernelImplInternal launches the dx
 * kernel (layer_norm_grad_input_kernel), then GammaBetaBackwardCUDAKernel
 * (or its Simple / 32x32 forms), which reads dY, X, mean and rstd again
 * (torch 1.13 and later; the fused rms_norm backward of later releases does
 * the same without mean). Here that kernel reads g, x and the row
 * statistics the dx kernel computed (2 row values written there instead of
 * by the forward, as PyTorch's are). */
static void norm_rule(ad *A, int i, const mb_node *nd, int g)
{
    int x = nd->arg[0], w = nd->arg[1], ln = nd->op == MB_OP_LAYER_NORM, b = joined_bias(A->g, i);
    A->sem = -1;
    int d = x, gw = g, mu = -1;
    if (w >= 0) gw = bi(A, MB_OP_MUL, g, w);
    else if (nd->scalar[1] != 1.0) gw = bs(A, MB_OP_MUL, g, nd->scalar[1]);
    if (ln) d = bi(A, MB_OP_SUB, x, mu = red(A, MB_OP_MEAN, x));
    int r = un(A, MB_OP_RSQRT, bs(A, MB_OP_ADD, red(A, MB_OP_MEAN, bi(A, MB_OP_MUL, d, d)), nd->eps));
    int gx;
    if (ln) {
        int xh = bi(A, MB_OP_MUL, d, r);
        int t = bi(A, MB_OP_SUB, gw, red(A, MB_OP_MEAN, gw));
        t = bi(A, MB_OP_SUB, t, bi(A, MB_OP_MUL, xh, red(A, MB_OP_MEAN, bi(A, MB_OP_MUL, gw, xh))));
        gx = bi(A, MB_OP_MUL, t, r);
    } else {
        int r3 = bs(A, MB_OP_POW, r, 3.0);
        int m = red(A, MB_OP_MEAN, bi(A, MB_OP_MUL, gw, x));
        gx = bi(A, MB_OP_SUB, bi(A, MB_OP_MUL, gw, r), bi(A, MB_OP_MUL, x, bi(A, MB_OP_MUL, m, r3)));
    }
    contribute(A, x, gx);
    /* then the GammaBetaBackward kernel's nodes: g x_hat, and (flush) the sums */
    A->gamma_beta = 1;
    A->sem = MB_SHC_FULL;
    if (w >= 0) {
        int xh = ln ? bi(A, MB_OP_MUL, bi(A, MB_OP_SUB, x, mu), r) : bi(A, MB_OP_MUL, x, r);
        contribute(A, w, bi(A, MB_OP_MUL, g, xh));
    }
    if (b >= 0) contribute(A, b, g);
    A->gamma_beta = 0;
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
    A->sem = nd.shape; /* an elementwise op's contributions have its output's shape */
    if (table_rule(A, &nd, i, g)) return;
    int a = nd.arg[0], b = nd.arg[1];
    double s0 = nd.scalar[0], s1 = nd.scalar[1];
    int t, u;
    switch (nd.op) {
    case MB_OP_ADD: /* saves nothing, launches nothing (a norm's joined bias: its rule's) */
        if (a >= 0) contribute(A, a, g);
        if (b >= 0 && !nd.joins) contribute(A, b, g);
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
    case MB_OP_SUM: /* an expand of the gradient: a view, no kernel */
        A->sem = -1;
        contribute(A, a, g);
        break;
    case MB_OP_MEAN: /* expand, then one div by the row length */
        A->sem = -1;
        t = bs(A, MB_OP_DIV, expand(A, g), 1.0);
        if (t >= 0) A->g->nodes[t].scalar_cols = 1;
        contribute(A, a, t);
        break;
    case MB_OP_AMAX: /* scale_grad_by_count: (grad / mask.sum()) * mask, mask = (out == x): */
        A->sem = -1;  /* tied maxima share the gradient evenly: eq, sum, div, mul */
        t = bi(A, MB_OP_EQ, a, i);
        u = red(A, MB_OP_SUM, t);
        u = bi(A, MB_OP_DIV, g, u);
        contribute(A, a, bi(A, MB_OP_MUL, u, t));
        break;
    case MB_OP_SOFTMAX: /* saves the output: g y - y sum(g y), one _softmax_backward_data */
        A->sem = -1;
        t = bi(A, MB_OP_MUL, g, i);
        u = red(A, MB_OP_SUM, t);
        u = bi(A, MB_OP_MUL, i, u);
        contribute(A, a, bi(A, MB_OP_SUB, t, u));
        break;
    case MB_OP_LOG_SOFTMAX: /* saves the output: g - exp(y) sum(g), one _log_softmax_backward_data */
        A->sem = -1;
        u = red(A, MB_OP_SUM, g);
        t = un(A, MB_OP_EXP, i);
        t = bi(A, MB_OP_MUL, t, u);
        contribute(A, a, bi(A, MB_OP_SUB, g, t));
        break;
    case MB_OP_LAYER_NORM:
    case MB_OP_RMS_NORM: norm_rule(A, i, &nd, g); break;
    default: A->failed = 2; break; /* a row of MB_DER_CODE without its rule here */
    }
}

#ifndef NDEBUG
/* What a reader checks of a finished backward graph: every input's gradient
 * and every output's incoming gradient hold as many elements as their tensor
 * at any size (each sum_to and expand done), and are tensors of the graph. */
static void check_grads(const mb_graph *g)
{
    /* rows and cols of different sizes, so that [rows, 1] and [cols] differ */
    mb_shape s = g->rank == 2 ? (mb_shape){2, 3, 5, 0} : mb_shape_1d(7);
    for (int k = 0; k < g->n_inputs; k++) {
        assert(g->nodes[g->inputs[k]].nograd ? g->grad_inputs[k] == -1
                                              : g->grad_inputs[k] >= g->n_forward && g->grad_inputs[k] < g->n_nodes);
        if (g->grad_inputs[k] < 0) continue;
        assert(mb_tensor_elems_at(g, g->grad_inputs[k], s) == mb_tensor_elems_at(g, g->inputs[k], s));
    }
    for (int k = 0; k < g->n_outputs; k++)
        assert(mb_tensor_elems_at(g, g->grad_outputs[k], s) == mb_tensor_elems_at(g, g->outputs[k], s));
}
#else
#define check_grads(g) ((void)0)
#endif

/* AccumulateGrad on input in's complete gradient, as y.backward() runs it:
 * at once, before any other function (its priority), after the rule of
 * in's first reader (before: the loop's node). It copies the gradient
 * (new_empty_strided and copy_) where it cannot take the tensor over — an
 * expand (a view, not in the input's layout), the incoming gradient itself
 * (the caller holds it: y = x + 0.5), or a tensor that a function not yet
 * run or another input's gradient also holds (y = (x + w) * 2: the first of
 * x and w copies it, the second takes it) — else keeps the tensor. The
 * copy is its own kernel (origin: the input). */
static void accumulate_leaf(ad *A, int in, int before, char *done)
{
    const mb_graph *g = A->g;
    int gi = A->grad[in];
    done[in] = 1;
    if (A->failed || gi < 0 || g->nodes[in].inner) return;
    const mb_node *gn = &g->nodes[gi];
    int copy = g->nodes[in].shape == MB_SHC_FULL && gn->shape != MB_SHC_FULL; /* an expand */
    copy |= gn->op == MB_OP_INPUT; /* the incoming gradient */
    for (int j = 0; j < g->n_forward && !copy; j++) /* held by another buffer */
        copy = j != in && A->grad[j] == gi && (g->nodes[j].op == MB_OP_INPUT ? !done[j] : j < before);
    if (!copy) return;
    A->origin = in;
    int c = gn->shape == MB_SHC_FULL || g->nodes[in].shape != MB_SHC_FULL ? un(A, MB_OP_COPY, gi) : expand(A, gi);
    if (c >= 0) A->g->nodes[c].shape = g->nodes[in].shape;
    A->origin = -1;
    A->grad[in] = c;
}

/* Drops the backward nodes that no gradient of an input reads (what a rule
 * built for an operand that needs no gradient), keeping every incoming
 * gradient, and renumbers the rest. MB_ERUN when out of memory. */
static int prune(mb_graph *g)
{
    int nf = g->n_forward, n = g->n_nodes;
    char *live = calloc((size_t)n, 1);
    int *stack = malloc((size_t)(2 * n + MB_MAX_IO) * sizeof(int)), *map = malloc((size_t)n * sizeof(int));
    int rc = live && stack && map ? MB_OK : MB_ERUN, top = 0; /* each live node pushes <= 2 */
    for (int k = 0; k < g->n_inputs && !rc; k++)
        if (g->grad_inputs[k] >= 0) stack[top++] = g->grad_inputs[k];
    while (top > 0) {
        int v = stack[--top];
        if (v < nf || live[v]) continue;
        live[v] = 1;
        for (int a = 0; a < 2; a++)
            if (g->nodes[v].arg[a] >= nf) stack[top++] = g->nodes[v].arg[a];
    }
    for (int k = 0; k < g->n_outputs && !rc; k++) live[g->grad_outputs[k]] = 1;
    int m = nf;
    for (int i = nf; i < n && !rc; i++) {
        if (!live[i]) continue;
        map[i] = m;
        g->nodes[m] = g->nodes[i];
        for (int a = 0; a < 2; a++)
            if (g->nodes[m].arg[a] >= nf) g->nodes[m].arg[a] = map[g->nodes[m].arg[a]];
        m++;
    }
    if (!rc) {
        for (int k = 0; k < g->n_outputs; k++) g->grad_outputs[k] = map[g->grad_outputs[k]];
        for (int k = 0; k < g->n_inputs; k++)
            if (g->grad_inputs[k] >= 0) g->grad_inputs[k] = map[g->grad_inputs[k]];
        g->n_nodes = m;
    }
    free(live);
    free(stack);
    free(map);
    return rc;
}

int mb_autodiff(mb_graph *g, mb_err *err)
{
    int nf = g->n_forward;
    ad A = {.g = g, .origin = -1, .grad = malloc((size_t)(nf ? nf : 1) * sizeof(int)),
            .needs = calloc((size_t)(nf ? nf : 1), 1), .sem = -1, .bad_node = -1};
    if (!A.grad || !A.needs) {
        free(A.grad);
        free(A.needs);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    for (int i = 0; i < nf; i++) {
        const mb_node *nd = &g->nodes[i];
        A.grad[i] = -1;
        if (nd->op == MB_OP_INPUT) A.needs[i] = !nd->nograd;
        for (int a = 0; a < 2; a++) A.needs[i] |= nd->arg[a] >= 0 && A.needs[nd->arg[a]];
    }
    for (int i = 0; i < nf; i++)
        if (A.needs[i] && g->nodes[i].shape == MB_SHC_GCOL) {
            const mb_node *nd = &g->nodes[i];
            free(A.grad);
            free(A.needs);
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: '%s' is broadcast within the leading dimensions and "
                              "needs a gradient (a sum over the dimensions it broadcasts), which is not "
                              "modelled: declare the inputs it reads nograd (a mask, a bias that is not "
                              "trained)", g->path, nd->line, nd->col,
                              nd->name[0] ? nd->name : mb_op_name(nd->op));
        }
    for (int k = 0; k < g->n_outputs; k++)
        if (!A.needs[g->outputs[k]]) {
            const mb_node *o = &g->nodes[g->outputs[k]];
            free(A.grad);
            free(A.needs);
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: output '%s' reads no input with a gradient (every "
                              "input it reads is nograd): 'backward' has nothing to differentiate",
                              g->path, o->line, o->col, o->name);
        }
    /* incoming gradients: one input per output, in the output's dtype or
     * 'backward grad DTYPE''s, which autograd's engine casts to the output's
     * (validate_outputs: its own eager kernel before the backward) */
    for (int k = 0; k < g->n_outputs; k++) {
        int o = g->outputs[k];
        const mb_dtype odt = g->nodes[o].dtype, gdt = g->grad_dtype_set ? g->grad_dtype : odt;
        int id = mb_graph_add(g, MB_OP_INPUT, -1, 0, -1, 0, gdt, 1, -1);
        if (id < 0) { A.failed = 1; break; }
        char out_name[MB_NAME_MAX];
        memcpy(out_name, g->nodes[o].name, MB_NAME_MAX);
        snprintf(g->nodes[id].name, MB_NAME_MAX, "grad_%.*s", MB_NAME_MAX - 6, out_name);
        g->nodes[id].shape = g->nodes[o].shape;
        g->grad_outputs[k] = id;
        int seed = id;
        if (gdt != odt) {
            seed = mb_graph_add(g, MB_OP_COPY, id, 0, -1, 0, odt, 1, -1);
            if (seed < 0) { A.failed = 1; break; }
            snprintf(g->nodes[seed].name, MB_NAME_MAX, "grad_%.*s_%s", MB_NAME_MAX - 12, out_name, mb_dtype_name(odt));
            g->nodes[seed].shape = g->nodes[o].shape;
            g->nodes[seed].engine = 1;
        }
        accumulate(&A, o, seed);
    }
    /* each input's gradient is complete once its first reader's rule has run */
    int *first_use = malloc((size_t)(nf ? nf : 1) * sizeof *first_use);
    char *done = calloc((size_t)(nf ? nf : 1), 1);
    if (!first_use || !done) A.failed = 1;
    for (int i = 0; i < nf && !A.failed; i++) {
        first_use[i] = nf;
        for (int a = 0; a < 2; a++) {
            int u = g->nodes[i].arg[a];
            if (u >= 0 && i < first_use[u]) first_use[u] = i;
        }
    }
    /* reverse evaluation order: autograd's order too (a node runs once every
     * node that consumes it has, the latest created first) */
    for (int i = nf - 1; i >= 0 && !A.failed; i--) {
        int gi = A.grad[i];
        if (g->nodes[i].op != MB_OP_INPUT && A.needs[i] && gi >= 0) { /* gi < 0: reaches no output */
            A.origin = i;
            rule(&A, i, gi);
            flush(&A); /* a sum_to of a contribution is the rule's own kernel */
            A.origin = -1;
        }
        for (int k = 0; k < g->n_inputs && !A.failed; k++)
            if (first_use[g->inputs[k]] == i && !g->nodes[g->inputs[k]].nograd)
                accumulate_leaf(&A, g->inputs[k], i, done);
    }
    for (int k = 0; k < g->n_inputs && !A.failed; k++) {
        int in = g->inputs[k];
        int gi = A.grad[in];
        if (g->nodes[in].nograd) {
            g->grad_inputs[k] = -1;
            continue;
        }
        if (gi < 0) {
            A.failed = 3;
            mb_err_set(err, MB_EINPUT, "%s:%d:%d: input '%s' does not reach any output: no gradient",
                       g->path, g->nodes[in].line, g->nodes[in].col, g->nodes[in].name);
            break;
        }
        g->grad_inputs[k] = gi;
    }
    free(first_use);
    free(done);
    free(A.grad);
    free(A.needs);
    if (!A.failed && prune(g)) A.failed = 1;
    if (A.failed == 3) return MB_EINPUT;
    if (A.failed == 4) {
        const mb_node *b = &g->nodes[A.bad_node];
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: the gradient of %s'%s' (%s) from a [cols] tensor is "
                          "a sum over every element, which is not modelled", g->path, b->line, b->col,
                          b->op == MB_OP_INPUT ? "input " : "", b->name[0] ? b->name : mb_op_name(b->op),
                          mb_shape_class_text((mb_shape_class)b->shape, g->rank));
    }
    if (A.failed == 2) return mb_err_set(err, MB_ERUN, "autodiff: unexpected op in forward graph");
    if (A.failed) return mb_err_set(err, MB_ERUN, "out of memory");
    check_grads(g);
    return MB_OK;
}

/* A graph at another rank: its forward shapes derived again (shape.c), then
 * its backward nodes built again with theirs. */
int mb_graph_set_rank(mb_graph *g, int rank, mb_err *err)
{
    if (g->rank == rank || g->flat) return MB_OK; /* flat: its n elements at any shape */
    if (g->rank_declared && g->rank == 2 && g->n_dims) {
        char full[MB_MAX_DIMS * MB_DIM_NAME_MAX];
        return mb_err_set(err, MB_EINPUT, "variant '%s' has named dimensions %s: give their sizes, --dims "
                          "%s=SIZE,... (or a 'dims' line in the variant), not --n", g->name,
                          mb_graph_class_text(g, MB_SHC_FULL, full, sizeof full), g->dim_names[0]);
    }
    if (g->rank_declared && g->rank == 2)
        return mb_err_set(err, MB_EINPUT, "variant '%s' is 2-D (its inputs are [rows, cols]): give a "
                          "shape, --shape ROWSxCOLS, not --n", g->name);
    if (!g->has_row_ops) {
        g->rank = rank;
        return MB_OK;
    }
    if (g->rank_declared)
        return mb_err_set(err, MB_EINPUT, "variant '%s' is 1-D (its inputs are [n]): give --n, not a "
                          "ROWSxCOLS shape", g->name);
    int rc = mb_graph_derive_shapes(g, rank, err);
    if (rc) return rc;
    /* backward nodes: autodiff gives each its shape as it builds them, so a
     * graph with row ops is differentiated again at the new rank */
    if (!g->has_backward || !g->has_row_ops || g->n_nodes == g->n_forward) {
        for (int i = g->n_forward; i < g->n_nodes; i++) g->nodes[i].shape = MB_SHC_FULL;
        return MB_OK;
    }
    g->n_nodes = g->n_forward;
    return mb_autodiff(g, err);
}
