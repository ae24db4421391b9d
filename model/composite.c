/* composite.c — the eager plan as a framework runs it on a device without a
 * fused kernel for a library op: torch 2.x's F.rms_norm on the CPU is its
 * composite (at::rms_norm: x.pow(2).mean(-1, keepdim=True), add eps, rsqrt,
 * x times that, then times the weight; a bf16 or f16 x cast to f32 first and
 * back before the weight), five kernels, six with a weight, where CUDA (torch
 * 2.8 on) runs one fused kernel. Writes the op out in a copy of the forward
 * graph and differentiates it again; does not group kernels (plan.c). */
#include "model_int.h"

#include <stdlib.h>
#include <string.h>

/* Appends a forward node like src's (position, name kept by the caller). */
static int add(mb_graph *h, const mb_node *src, mb_op op, int a, double sa, int b, double sb, mb_dtype t)
{
    int id = mb_graph_add(h, op, a, sa, b, sb, t, 0, -1);
    if (id < 0) return -1;
    mb_node *nd = &h->nodes[id];
    nd->line = src->line;
    nd->col = src->col;
    return id;
}

/* rms_norm node nd of g, its operands at x and w (-1: none) of h, written
 * out in h; returns the node that holds its result, -1 out of memory. */
static int write_out(mb_graph *h, const mb_node *nd, int x, int w)
{
    mb_dtype t = h->nodes[x].dtype, f = MB_F32;
    int up = t != MB_F32 ? add(h, nd, MB_OP_COPY, x, 0, -1, 0, f) : x; /* input.to(opmath) */
    int p = up < 0 ? -1 : add(h, nd, MB_OP_POW, up, 0, -1, 2.0, f);
    int m = p < 0 ? -1 : add(h, nd, MB_OP_MEAN, p, 0, -1, 0, f);
    if (m >= 0) h->nodes[m].dim = -1, h->nodes[m].keepdim = 1;
    int a = m < 0 ? -1 : add(h, nd, MB_OP_ADD, m, 0, -1, nd->eps, f);
    int r = a < 0 ? -1 : add(h, nd, MB_OP_RSQRT, a, 0, -1, 0, f);
    int y = r < 0 ? -1 : add(h, nd, MB_OP_MUL, up, 0, r, 0, f);
    if (y >= 0 && t != MB_F32) y = add(h, nd, MB_OP_COPY, y, 0, -1, 0, t); /* .type_as(input) */
    if (y >= 0 && w >= 0) y = add(h, nd, MB_OP_MUL, y, 0, w, 0, mb_dtype_promote(t, h->nodes[w].dtype));
    return y;
}

static int has_rms_norm(const mb_graph *g)
{
    for (int i = 0; i < g->n_forward; i++)
        if (g->nodes[i].op == MB_OP_RMS_NORM) return 1;
    return 0;
}

int mb_plan_build_on(const mb_graph *g, mb_plan_kind k, const struct mb_device *d, mb_plan **out, mb_err *err)
{
    if (k != MB_PLAN_EAGER || !d || strcmp(d->kind, "cpu") || !has_rms_norm(g)) return mb_plan_build(g, k, out, err);
    *out = NULL;
    mb_graph *h = mb_graph_copy(g);
    int *map = malloc((size_t)g->n_forward * sizeof *map);
    int rc = h && map ? MB_OK : MB_ERUN;
    if (h) h->n_nodes = 0;
    for (int i = 0; i < g->n_forward && !rc; i++) {
        const mb_node *nd = &g->nodes[i];
        int a = nd->arg[0] >= 0 ? map[nd->arg[0]] : -1, b = nd->arg[1] >= 0 ? map[nd->arg[1]] : -1;
        int id;
        if (nd->op == MB_OP_RMS_NORM) {
            id = write_out(h, nd, a, b);
            if (id >= 0) memcpy(h->nodes[id].name, nd->name, sizeof nd->name);
        } else {
            id = mb_graph_add(h, nd->op, a, nd->scalar[0], b, nd->scalar[1], nd->dtype, 0, -1);
            if (id >= 0) {
                h->nodes[id] = *nd;
                h->nodes[id].arg[0] = a;
                h->nodes[id].arg[1] = b;
            }
        }
        if (id < 0) rc = MB_ERUN;
        map[i] = id;
    }
    if (!rc) {
        for (int k2 = 0; k2 < g->n_inputs; k2++) h->inputs[k2] = map[g->inputs[k2]];
        for (int k2 = 0; k2 < g->n_outputs; k2++) h->outputs[k2] = map[g->outputs[k2]];
        h->n_forward = h->n_nodes;
        rc = mb_graph_derive_shapes(h, g->rank, err);
        if (!rc && g->has_backward) rc = mb_autodiff(h, err);
        if (!rc) rc = mb_plan_build(h, k, out, err);
    } else {
        mb_err_set(err, MB_ERUN, "out of memory");
    }
    free(map);
    mb_graph_free(h);
    return rc;
}
