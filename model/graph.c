/* graph.c — storage of graphs: nodes, copies, per-element costs, bytes.
 * Does not parse or plan. */
#include "model_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *mb_colsum_name(mb_colsum c)
{
    return c == MB_COLSUM_PARTIAL ? "partial" : c == MB_COLSUM_REREAD ? "reread" : "written";
}

int mb_colsum_parse(const char *s, mb_colsum *out)
{
    for (int c = 0; c < MB_COLSUM_COUNT; c++)
        if (s && !strcmp(s, mb_colsum_name((mb_colsum)c))) { *out = (mb_colsum)c; return MB_OK; }
    return MB_EINPUT;
}

mb_graph *mb_graph_new(void)
{
    return calloc(1, sizeof(mb_graph));
}

int mb_graph_add(mb_graph *g, mb_op op, int a, double sa, int b, double sb,
                 mb_dtype dtype, int is_backward, int origin)
{
    /* graphs are built in evaluation order: operands exist before their
     * users (a recompute plan repoints its backward nodes at later clones
     * afterwards: mb_graph.h) */
    assert(a < g->n_nodes && b < g->n_nodes);
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

mb_graph *mb_graph_clone(const mb_graph *g) { return mb_graph_copy(g); }

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

/* Per-element cost of each op: op_table.h's flops and sfu columns, the
 * model's assumptions for a GPU: SFU (MUFU) ops for rcp, sqrt, rsqrt, ex2,
 * lg2, sin, cos, tanh, plus the FP32 instructions around them (range
 * reduction, scaling). On a machine calibrated by `membound calibrate`,
 * measured op rates replace them. */
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
    return mb_op_info_of(nd->op)->cost;
}
