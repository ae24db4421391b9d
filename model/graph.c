/* graph.c — storage of graphs: nodes, copies, per-element costs, bytes.
 * Does not parse or plan. */
#include "model_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

mb_graph *mb_graph_new(void)
{
    return calloc(1, sizeof(mb_graph));
}

int mb_graph_add(mb_graph *g, mb_op op, int a, double sa, int b, double sb,
                 mb_dtype dtype, int is_backward, int origin)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 32;
        mb_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return -1;
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    mb_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->arg[0] = a;
    n->arg[1] = b;
    n->scalar[0] = sa;
    n->scalar[1] = sb;
    n->dtype = dtype;
    n->is_backward = is_backward;
    n->origin = origin;
    return g->n_nodes++;
}

mb_graph *mb_graph_copy(const mb_graph *g)
{
    mb_graph *c = malloc(sizeof *c);
    if (!c) return NULL;
    *c = *g;
    c->cap_nodes = g->n_nodes ? g->n_nodes : 1;
    c->nodes = malloc((size_t)c->cap_nodes * sizeof *c->nodes);
    if (!c->nodes) { free(c); return NULL; }
    if (g->n_nodes) memcpy(c->nodes, g->nodes, (size_t)g->n_nodes * sizeof *g->nodes);
    return c;
}

void mb_graph_free(mb_graph *g)
{
    if (!g) return;
    free(g->nodes);
    free(g);
}

mb_dtype mb_dtype_promote(mb_dtype a, mb_dtype b)
{
    return a == b ? a : MB_F32;
}

int64_t mb_tensor_bytes(const mb_graph *g, int i, int64_t n)
{
    return n * (int64_t)mb_dtype_bytes(g->nodes[i].dtype);
}

/* Per-element cost of each op. These are the model's assumptions for a GPU:
 * SFU (MUFU) ops for rcp, sqrt, rsqrt, ex2, lg2, sin, cos, tanh, plus the
 * FP32 instructions around them (range reduction, scaling). On a machine
 * calibrated by `membound calibrate`, measured op rates replace them. */
static const mb_op_cost op_costs[MB_OP_COUNT] = {
    [MB_OP_INPUT] = {0, 0},
    [MB_OP_ADD] = {1, 0},  [MB_OP_SUB] = {1, 0}, [MB_OP_MUL] = {1, 0},
    [MB_OP_DIV] = {2, 1},  /* rcp + 2 FMA refinement */
    [MB_OP_POW] = {2, 2},  /* general case: lg2, mul, ex2 */
    [MB_OP_NEG] = {1, 0},
    [MB_OP_SIN] = {4, 1},  [MB_OP_COS] = {4, 1}, [MB_OP_TAN] = {6, 3},
    [MB_OP_TANH] = {2, 1}, [MB_OP_EXP] = {2, 1}, [MB_OP_LOG] = {2, 1},
    [MB_OP_SQRT] = {1, 1}, [MB_OP_RSQRT] = {0, 1},
    [MB_OP_SIGMOID] = {3, 2}, /* ex2 + rcp */
    [MB_OP_RELU] = {1, 0}, [MB_OP_ABS] = {1, 0},
    [MB_OP_GELU] = {12, 1}, /* erf polynomial */
    [MB_OP_COPY] = {0, 0},
    [MB_OP_RECIPROCAL] = {2, 1}, /* rcp + refinement, as div */
    [MB_OP_STEP] = {1, 0}, [MB_OP_SIGN] = {2, 0},
    [MB_OP_GELU_GRAD] = {16, 2},
};

mb_op_cost mb_node_cost(const mb_graph *g, int i)
{
    const mb_node *nd = &g->nodes[i];
    if (nd->op == MB_OP_POW && nd->arg[1] < 0) {
        double k = nd->scalar[1];
        if (k == 2.0) return (mb_op_cost){1, 0};
        if (k == 3.0) return (mb_op_cost){2, 0};
        if (k == 4.0) return (mb_op_cost){2, 0};
        if (k == 1.0 || k == 0.0) return (mb_op_cost){0, 0};
        if (k == 0.5 || k == -0.5 || k == -1.0) return (mb_op_cost){0, 1};
    }
    return op_costs[nd->op];
}
