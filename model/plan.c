/* plan.c — grouping a graph's nodes into kernels (eager, fused, store,
 * recompute, or a given saved set) and deriving what each kernel reads and
 * writes by the traffic rule: a kernel reads each distinct tensor it consumes
 * that was produced outside it, once, and writes each tensor it produces that
 * is needed outside it, once. Does not cost anything (traffic.c), choose
 * the optimal plan's set (plan_optimal.c, which builds on this file) nor
 * dispatch on the plan kind (plan_build.c): it calls neither. */
#include "model_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int *v;
    int n, cap;
} ivec;

static int ivec_push(ivec *a, int x)
{
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        int *nv = realloc(a->v, (size_t)cap * sizeof *nv);
        if (!nv) return -1;
        a->v = nv;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

static int ivec_has(const ivec *a, int x)
{
    for (int i = 0; i < a->n; i++)
        if (a->v[i] == x) return 1;
    return 0;
}

static int new_kernel(mb_plan *p, const char *name, int is_backward, const ivec *nodes)
{
    mb_kernel *nk = realloc(p->kernels, (size_t)(p->n_kernels + 1) * sizeof *nk);
    if (!nk) return -1;
    p->kernels = nk;
    mb_kernel *k = &p->kernels[p->n_kernels++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->is_backward = is_backward;
    k->nodes = malloc((size_t)(nodes->n ? nodes->n : 1) * sizeof(int));
    if (!k->nodes) return -1;
    memcpy(k->nodes, nodes->v, (size_t)nodes->n * sizeof(int));
    k->n_nodes = nodes->n;
    return 0;
}

/* 1 when backward node i broadcasts a row value to the full shape (autodiff's
 * expand: a view in PyTorch, materialised only where an input's gradient). */
static int is_expand(const mb_graph *g, int i)
{
    const mb_node *nd = &g->nodes[i];
    return nd->op == MB_OP_COPY && nd->is_backward && nd->arg[0] >= 0 && nd->shape == MB_SHC_FULL &&
           g->nodes[nd->arg[0]].shape != MB_SHC_FULL;
}

int mb_graph_column_side(const mb_graph *g, char *side)
{
    int n = 0;
    memset(side, 0, (size_t)g->n_nodes);
    for (int i = g->n_forward; i < g->n_nodes; i++) {
        const mb_node *nd = &g->nodes[i];
        /* a colsum's per-block partial sums run in the row kernel */
        int c = MB_OP_IS_COLUMN(nd->op) && nd->shape != MB_SHC_PART;
        for (int a = 0; a < mb_op_arity(nd->op) && !c; a++) c = nd->arg[a] >= 0 && side[nd->arg[a]];
        side[i] = (char)c;
        n += c;
    }
    /* an expand read only by the column side is a view there */
    for (int i = g->n_nodes - 1; i >= g->n_forward; i--) {
        if (side[i] || !is_expand(g, i)) continue;
        int readers = 0, column = 0;
        for (int u = i + 1; u < g->n_nodes; u++)
            for (int a = 0; a < 2; a++)
                if (g->nodes[u].arg[a] == i) readers++, column += side[u];
        if (readers && readers == column) side[i] = 1, n++;
    }
    return n;
}

int mb_graph_split_colsums(mb_graph *g)
{
    if (!g->has_backward) return 0;
    char *side = malloc((size_t)g->n_nodes + 1);
    if (!side) return -1;
    mb_graph_column_side(g, side);
    const int n0 = g->n_nodes;
    int split = 0;
    for (int c = g->n_forward; c < n0; c++) {
        const int v = g->nodes[c].arg[0];
        if (g->nodes[c].op != MB_OP_COLSUM || g->nodes[c].shape != MB_SHC_COL || v < 0 ||
            g->nodes[v].shape != MB_SHC_FULL || side[v])
            continue;
        int id = mb_graph_add(g, MB_OP_COLSUM, v, 0, -1, 0, MB_F32, 1, g->nodes[c].origin);
        if (id < 0) { split = -1; break; }
        g->nodes[id].shape = MB_SHC_PART;
        snprintf(g->nodes[id].name, MB_NAME_MAX, "%.40s_part", g->nodes[c].name[0] ? g->nodes[c].name : "colsum");
        g->nodes[c].arg[0] = id;
        split++;
    }
    free(side);
    return split;
}

/* Eager: one kernel per forward op; in the backward, what PyTorch launches:
 * one kernel for the nodes of an op with a fused backward kernel (op_table.h's
 * bwd column: sigmoid_backward), and a second for a norm's weight and bias
 * gradients (GammaBetaBackward), else one per node (autodiff.c builds them in
 * PyTorch's order: a [cols] operand's sum over rows, a colsum, is a kernel of
 * its own as sum(dim=0) is), and each gradient accumulation its own kernel. */
static int group_eager(mb_plan *p)
{
    const mb_graph *g = p->g;
    ivec cur = {0};
    int rc = 0;
    for (int i = 0; i < g->n_forward && !rc; i++) {
        if (g->nodes[i].op == MB_OP_INPUT) continue;
        cur.n = 0;
        rc = ivec_push(&cur, i);
        /* nodes that run in this op's library kernel (layer_norm's bias) */
        while (!rc && i + 1 < g->n_forward && g->nodes[i + 1].joins) rc = ivec_push(&cur, ++i);
        if (!rc) rc = new_kernel(p, mb_op_name(g->nodes[cur.v[0]].op), 0, &cur);
    }
    int i = g->n_forward;
    while (i < g->n_nodes && !rc) {
        if (g->nodes[i].op == MB_OP_INPUT) { i++; continue; }
        int origin = g->nodes[i].origin;
        const char *fused = origin >= 0 ? mb_op_info_of(g->nodes[origin].op)->bwd_kernel : NULL;
        cur.n = 0;
        const char *name = g->nodes[i].engine ? MB_KERNEL_GRAD_CAST : origin < 0 ? "add_grad"
                           : fused ? fused : mb_op_name(g->nodes[i].op);
        if (fused) {
            const unsigned char gb = g->nodes[i].gamma_beta;
            if (gb) name = MB_KERNEL_GAMMA_BETA;
            while (i < g->n_nodes && g->nodes[i].op != MB_OP_INPUT && g->nodes[i].origin == origin &&
                   g->nodes[i].gamma_beta == gb && !rc)
                rc = ivec_push(&cur, i++);
        } else {
            /* an expand (a view) runs in the kernel of the node after it that reads it */
            while (!rc && is_expand(g, i) && i + 1 < g->n_nodes && g->nodes[i + 1].op != MB_OP_INPUT &&
                   (g->nodes[i + 1].arg[0] == i || g->nodes[i + 1].arg[1] == i))
                rc = ivec_push(&cur, i++);
            if (cur.n) name = g->nodes[i].origin < 0 ? "add_grad" : mb_op_name(g->nodes[i].op);
            if (!rc) rc = ivec_push(&cur, i++);
        }
        if (!rc) rc = new_kernel(p, name, 1, &cur);
    }
    free(cur.v);
    return rc;
}

/* live[i] = 1 when node i contributes to a result (a forward output or an
 * input's gradient). A fuser drops the rest; eager runs them, as PyTorch
 * runs every statement. Caller frees. */
static char *live_nodes(const mb_graph *g)
{
    char *live = calloc((size_t)g->n_nodes, 1);
    int *stack = malloc((size_t)(g->n_nodes + 2 * MB_MAX_IO) * sizeof(int));
    if (!live || !stack) { free(live); free(stack); return NULL; }
    int top = 0;
    for (int k = 0; k < g->n_outputs; k++) stack[top++] = g->outputs[k];
    if (g->has_backward)
        for (int k = 0; k < g->n_inputs; k++) stack[top++] = g->grad_inputs[k];
    while (top > 0) {
        int v = stack[--top];
        if (v < 0 || live[v]) continue;
        live[v] = 1;
        for (int a = 0; a < 2; a++)
            if (g->nodes[v].arg[a] >= 0 && !live[g->nodes[v].arg[a]]) stack[top++] = g->nodes[v].arg[a];
    }
    free(stack);
    return live;
}

/* One kernel of the live nodes in [lo, hi), after prefix (recomputed clones);
 * with side, only those of side[i] == want. */
static int group_side(mb_plan *p, const char *name, int is_backward, int lo, int hi, const ivec *prefix,
                      const char *side, char want)
{
    ivec cur = {0};
    char *live = live_nodes(p->g);
    int rc = live ? 0 : -1;
    if (prefix)
        for (int i = 0; i < prefix->n && !rc; i++) rc = ivec_push(&cur, prefix->v[i]);
    for (int i = lo; i < hi && !rc; i++)
        if (p->g->nodes[i].op != MB_OP_INPUT && live[i] && (!side || side[i] == want)) rc = ivec_push(&cur, i);
    free(live);
    if (!rc && cur.n) rc = new_kernel(p, name, is_backward, &cur);
    free(cur.v);
    return rc;
}

static int group_range(mb_plan *p, const char *name, int is_backward, int lo, int hi, const ivec *prefix)
{
    return group_side(p, name, is_backward, lo, hi, prefix, NULL, 0);
}

/* 1 when the column kernel of colsum reread evaluates row-side node v again
 * rather than reading it: a full tensor computed elementwise in the backward
 * (a forward clone of recompute and optimal included). Inputs, the
 * forward's stored tensors, row values, what needs a whole row (a norm, a
 * softmax, their backward) and the engine's cast of an incoming gradient
 * (the compiled backward's input) are read. */
static int reread_recomputes(const mb_graph *g, int v)
{
    const mb_node *nd = &g->nodes[v];
    return v >= g->n_forward && mb_op_info_of(nd->op)->kind == MB_OPK_MAP && nd->shape == MB_SHC_FULL &&
           !nd->engine;
}

/* Clone of row-side node v for the column kernel (its operands first, each
 * once: clone[] maps a node to its clone, -1 none yet), appended to order.
 * Returns the clone's id, -1 when out of memory. */
static int reread_clone(mb_graph *g, const char *side, int *clone, ivec *order, int v)
{
    if (clone[v] >= 0) return clone[v];
    mb_node src = g->nodes[v]; /* mb_graph_add may move the nodes */
    for (int a = 0; a < 2; a++) {
        int t = src.arg[a];
        if (t >= 0 && !side[t] && reread_recomputes(g, t) && (src.arg[a] = reread_clone(g, side, clone, order, t)) < 0)
            return -1;
    }
    int id = mb_graph_add(g, src.op, src.arg[0], src.scalar[0], src.arg[1], src.scalar[1], src.dtype, 1,
                          src.origin);
    if (id < 0) return -1;
    g->nodes[id] = src; /* name, shape, dim, keepdim, eps, origin as v's */
    clone[v] = id;
    return ivec_push(order, id) ? -1 : id;
}

/* colsum reread: the column side's operands that reread_recomputes are
 * cloned into clones (in evaluation order) and the column side pointed at
 * them; the row kernel then writes none of them. */
static int reread_split(mb_graph *g, const char *side, int lo, int hi, ivec *clones)
{
    const int n0 = g->n_nodes; /* side's nodes: [lo, hi) and recompute's clones after hi */
    int *clone = malloc((size_t)n0 * sizeof(int));
    if (!clone) return -1;
    for (int i = 0; i < n0; i++) clone[i] = -1;
    int rc = 0;
    for (int i = lo; i < hi && !rc; i++) {
        if (!side[i]) continue;
        for (int a = 0; a < 2 && !rc; a++) {
            int t = g->nodes[i].arg[a];
            if (t < 0 || side[t] || !reread_recomputes(g, t)) continue;
            int id = reread_clone(g, side, clone, clones, t);
            if (id < 0) rc = -1;
            else g->nodes[i].arg[a] = id;
        }
    }
    free(clone);
    return rc;
}

/* The fused backward of nodes [lo, hi) after prefix: one kernel, and, when
 * the graph has column reductions, a second after it holding them, the
 * expands they reduce and every node that reads their results (a sum over
 * the rows cannot finish in a kernel that works row by row: the first kernel
 * writes each full tensor a colsum reduces, the second reads it once and
 * writes cols elements; with colsum reread the second evaluates those
 * tensors again from what they are made of; docs/model.md). An incoming
 * gradient's cast (an engine node) runs before them in a kernel of its own. */
static int group_backward(mb_plan *p, const char *name, int lo, int hi, const ivec *prefix)
{
    char *side = malloc((size_t)p->g->n_nodes + 1);
    if (!side) return -1;
    int rc = 0, n_cols = mb_graph_column_side(p->g, side), n_engine = 0;
    for (int i = lo; i < hi; i++) /* the engine's casts: a kernel of their own, first */
        if (p->g->nodes[i].engine) side[i] = 2, n_engine++;
    if (n_engine) rc = group_side(p, MB_KERNEL_GRAD_CAST, 1, lo, hi, NULL, side, 2);
    if (!rc && !n_cols) rc = group_side(p, name, 1, lo, hi, prefix, side, 0);
    if (!rc && n_cols) {
        char cols_name[MB_NAME_MAX];
        snprintf(cols_name, sizeof cols_name, "%s_colsum", name);
        ivec clones = {0};
        if (p->g->colsum == MB_COLSUM_REREAD) rc = reread_split(p->g, side, lo, hi, &clones);
        if (!rc) rc = group_side(p, name, 1, lo, hi, prefix, side, 0);
        if (!rc) rc = group_side(p, cols_name, 1, lo, hi, &clones, side, 1);
        free(clones.v);
    }
    free(side);
    return rc;
}

/* Saving a set: the backward reads the forward tensors in save[] (a mask over
 * the forward nodes); every other forward tensor it needs is cloned, the
 * backward nodes are pointed at the clones, and the clones are evaluated in
 * the backward kernel. Recompute saves the inputs; the optimal plan the set a
 * minimum cut picks. Returns -1 when out of memory, -2 when a needed input
 * is not saved (nothing could recompute it; *missing names it). */
static int group_saving(mb_plan *p, const char *save, const char *bwd_name, int *missing)
{
    mb_graph *g = p->g;
    int nf = g->n_forward, nb_end = g->n_nodes;
    char *needed = calloc((size_t)nf, 1);
    int *clone = malloc((size_t)nf * sizeof(int));
    ivec clones = {0};
    int rc = (!needed || !clone) ? -1 : 0;
    for (int i = nf; i < nb_end && !rc; i++)
        for (int j = 0; j < 2; j++) {
            int a = g->nodes[i].arg[j];
            if (a >= 0 && a < nf && !save[a]) needed[a] = 1;
        }
    for (int i = nf - 1; i >= 0 && !rc; i--)
        if (needed[i]) {
            if (g->nodes[i].op == MB_OP_INPUT) { *missing = i; rc = -2; break; }
            for (int j = 0; j < 2; j++) {
                int a = g->nodes[i].arg[j];
                if (a >= 0 && !save[a]) needed[a] = 1;
            }
        }
    for (int i = 0; i < nf && !rc; i++) {
        clone[i] = i;
        if (!needed[i]) continue;
        mb_node src = g->nodes[i];
        for (int j = 0; j < 2; j++)
            if (src.arg[j] >= 0) src.arg[j] = clone[src.arg[j]];
        int id = mb_graph_add(g, src.op, src.arg[0], src.scalar[0], src.arg[1], src.scalar[1],
                              src.dtype, 1, i);
        if (id < 0) { rc = -1; break; }
        src.is_backward = 1; /* name, position, shape, dim, keepdim, eps as the original */
        src.origin = i;
        src.joins = 0;
        g->nodes[id] = src;
        clone[i] = id;
        rc = ivec_push(&clones, id);
    }
    for (int i = nf; i < nb_end && !rc; i++)
        for (int j = 0; j < 2; j++) {
            int a = g->nodes[i].arg[j];
            if (a >= 0 && a < nf) g->nodes[i].arg[j] = clone[a];
        }
    if (!rc) rc = group_range(p, "fused_fwd", 0, 0, nf, NULL);
    if (!rc) rc = group_backward(p, bwd_name, nf, nb_end, &clones);
    free(needed);
    free(clone);
    free(clones.v);
    return rc;
}

static int group_recompute(mb_plan *p)
{
    char *inputs = calloc((size_t)p->g->n_forward + 1, 1);
    if (!inputs) return -1;
    for (int k = 0; k < p->g->n_inputs; k++) inputs[p->g->inputs[k]] = 1;
    int missing = -1;
    int rc = group_saving(p, inputs, "recompute_bwd", &missing);
    free(inputs);
    return rc;
}

#ifndef NDEBUG
/* What a reader checks of a built plan (the traffic rule's preconditions):
 * every id names a node of p's graph; a node runs in one kernel at most, an
 * input in none, after the operands it evaluates itself in its kernel's
 * list (clones first: a recompute plan's ids are not in that order); a
 * forward kernel runs forward nodes and comes before every backward kernel;
 * a kernel's reads are distinct, its writes distinct nodes of its own, and
 * no tensor is both; a kernel reads only inputs (the graph's, the incoming
 * gradients) and tensors an earlier kernel wrote; every row read is made in
 * 1 to passes passes; a saved tensor is a forward one a backward kernel
 * reads (recompute: an input); a result is an input or written. */
static void check_plan(const mb_plan *p)
{
    const mb_graph *g = p->g;
    int *owner = malloc((size_t)g->n_nodes * sizeof(int));   /* kernel evaluating node i */
    int *at = malloc((size_t)g->n_nodes * sizeof(int));      /* its place in that kernel's list */
    int *written = malloc((size_t)g->n_nodes * sizeof(int)); /* kernel writing tensor i */
    if (!owner || !at || !written) { free(owner); free(at); free(written); return; }
    for (int i = 0; i < g->n_nodes; i++) owner[i] = at[i] = written[i] = -1;
    int seen_backward = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        seen_backward |= K->is_backward;
        assert(K->is_backward || !seen_backward);
        for (int j = 0; j < K->n_nodes; j++) {
            int v = K->nodes[j];
            assert(v >= 0 && v < g->n_nodes && owner[v] < 0 && g->nodes[v].op != MB_OP_INPUT);
            assert(K->is_backward ? v >= g->n_forward : v < g->n_forward);
            owner[v] = k;
            at[v] = j;
        }
        for (int j = 0; j < K->n_nodes; j++)
            for (int a = 0; a < 2; a++) {
                int t = g->nodes[K->nodes[j]].arg[a];
                assert(t < g->n_nodes && (t < 0 || owner[t] != k || at[t] < j));
            }
        assert(K->passes >= 1);
        for (int r = 0; r < K->n_reads; r++) {
            int t = K->reads[r];
            assert(t >= 0 && t < g->n_nodes && owner[t] != k);
            assert(g->nodes[t].op == MB_OP_INPUT || (written[t] >= 0 && written[t] < k));
            assert(K->read_passes[r] >= 1 && K->read_passes[r] <= K->passes);
            for (int q = 0; q < r; q++) assert(K->reads[q] != t);
        }
        for (int w = 0; w < K->n_writes; w++) {
            int t = K->writes[w];
            assert(t >= 0 && t < g->n_nodes && owner[t] == k && written[t] < 0);
            written[t] = k;
        }
    }
    for (int s = 0; s < p->n_saved; s++) {
        int t = p->saved[s], read = 0;
        assert(t >= 0 && t < g->n_forward);
        assert(p->kind != MB_PLAN_RECOMPUTE || g->nodes[t].op == MB_OP_INPUT);
        for (int k = 0; k < p->n_kernels; k++)
            for (int r = 0; r < p->kernels[k].n_reads && p->kernels[k].is_backward; r++)
                read |= p->kernels[k].reads[r] == t;
        assert(read);
    }
    for (int r = 0; r < p->n_results; r++) {
        int t = p->results[r];
        assert(t >= 0 && t < g->n_nodes && (g->nodes[t].op == MB_OP_INPUT || written[t] >= 0));
    }
    free(owner);
    free(at);
    free(written);
}
#else
#define check_plan(p) ((void)0)
#endif

/* Reads, writes, saved tensors and per-element costs from the grouping. */
static int derive_traffic(mb_plan *p)
{
    const mb_graph *g = p->g;
    int *owner = malloc((size_t)g->n_nodes * sizeof(int));
    if (!owner) return -1;
    for (int i = 0; i < g->n_nodes; i++) owner[i] = -1;
    for (int k = 0; k < p->n_kernels; k++)
        for (int j = 0; j < p->kernels[k].n_nodes; j++) owner[p->kernels[k].nodes[j]] = k;

    /* used_outside[t]: some node of another kernel consumes tensor t */
    char *used_outside = calloc((size_t)g->n_nodes, 1);
    if (!used_outside) { free(owner); return -1; }
    for (int u = 0; u < g->n_nodes; u++)
        for (int a = 0; a < 2; a++) {
            int t = g->nodes[u].arg[a];
            if (owner[u] >= 0 && t >= 0 && owner[t] != owner[u]) used_outside[t] = 1;
        }

    ivec results = {0}, saved = {0};
    int rc = 0;
    for (int k = 0; k < g->n_outputs && !rc; k++) rc = ivec_push(&results, g->outputs[k]);
    if (g->has_backward)
        for (int k = 0; k < g->n_inputs && !rc; k++)
            if (g->grad_inputs[k] >= 0 && !ivec_has(&results, g->grad_inputs[k]))
                rc = ivec_push(&results, g->grad_inputs[k]);

    for (int k = 0; k < p->n_kernels && !rc; k++) {
        mb_kernel *K = &p->kernels[k];
        ivec reads = {0}, writes = {0};
        for (int j = 0; j < K->n_nodes && !rc; j++) {
            const mb_node *nd = &g->nodes[K->nodes[j]];
            mb_op_cost c = mb_node_cost(g, K->nodes[j]);
            K->flops_per_elem += c.flops;
            K->sfu_per_elem += c.sfu_ops;
            for (int a = 0; a < 2 && !rc; a++) {
                int t = nd->arg[a];
                if (t >= 0 && owner[t] != k && !ivec_has(&reads, t)) rc = ivec_push(&reads, t);
            }
        }
        for (int j = 0; j < K->n_nodes && !rc; j++) {
            int v = K->nodes[j];
            /* an eager kernel materialises its op's result, as PyTorch does */
            int needed = (p->kind == MB_PLAN_EAGER && j == K->n_nodes - 1) || used_outside[v] ||
                         ivec_has(&results, v);
            if (needed) rc = ivec_push(&writes, v);
        }
        if (K->is_backward)
            for (int r = 0; r < reads.n && !rc; r++)
                if (reads.v[r] < g->n_forward && !ivec_has(&saved, reads.v[r]))
                    rc = ivec_push(&saved, reads.v[r]);
        K->reads = reads.v;
        K->n_reads = reads.n;
        K->writes = writes.v;
        K->n_writes = writes.n;
        if (!K->reads) K->reads = calloc(1, sizeof(int));
        if (!K->writes) K->writes = calloc(1, sizeof(int));
        if (!rc) rc = mb_kernel_derive_passes(g, K, p->kind == MB_PLAN_ONLINE);
        if (!rc && p->kind == MB_PLAN_EAGER) K->torch_layer_norm = mb_kernel_is_torch_layer_norm(g, K);
        K->engine = K->n_nodes > 0 && g->nodes[K->nodes[0]].engine;
    }
    p->results = results.v;
    p->n_results = results.n;
    p->saved = saved.v ? saved.v : calloc(1, sizeof(int));
    p->n_saved = saved.n;
    free(owner);
    free(used_outside);
    if (!rc && p->saved) check_plan(p);
    return rc;
}

/* A plan of kind k on a copy of g; store, recompute and optimal of a graph
 * with colsum partial on the copy split (mb_graph_split_colsums). */
static mb_plan *plan_new(const mb_graph *g, mb_plan_kind k)
{
    mb_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->kind = k;
    p->g = mb_graph_copy(g);
    if (!p->g) { free(p); return NULL; }
    int fused_bwd = k == MB_PLAN_STORE || k == MB_PLAN_RECOMPUTE || k == MB_PLAN_OPTIMAL;
    if (fused_bwd && g->colsum == MB_COLSUM_PARTIAL && mb_graph_split_colsums(p->g) < 0) {
        mb_plan_free(p);
        return NULL;
    }
    return p;
}

int mb_plan_build_fixed(const mb_graph *g, mb_plan_kind k, mb_plan **out, mb_err *err)
{
    *out = NULL;
    mb_plan *p = plan_new(g, k);
    int rc = p ? 0 : -1;
    if (!rc) {
        switch (k) {
        case MB_PLAN_EAGER: rc = group_eager(p); break;
        case MB_PLAN_FUSED: rc = group_range(p, "fused", 0, 0, g->n_forward, NULL); break;
        case MB_PLAN_ONLINE: rc = group_range(p, "online", 0, 0, g->n_forward, NULL); break;
        case MB_PLAN_STORE:
            rc = group_range(p, "fused_fwd", 0, 0, g->n_forward, NULL);
            if (!rc) rc = group_backward(p, "fused_bwd", g->n_forward, p->g->n_nodes, NULL);
            break;
        case MB_PLAN_RECOMPUTE: rc = group_recompute(p); break;
        default:
            mb_plan_free(p);
            return mb_err_set(err, MB_EINPUT, "plan '%s' is not a fixed grouping", mb_plan_name(k));
        }
    }
    if (!rc) rc = derive_traffic(p);
    if (rc) {
        mb_plan_free(p);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    *out = p;
    return MB_OK;
}

int mb_plan_build_saving(const mb_graph *g, const int *saved, int n_saved, mb_plan **out, mb_err *err)
{
    *out = NULL;
    if (!g->has_backward)
        return mb_err_set(err, MB_EINPUT, "variant '%s' has no backward pass: nothing to save", g->name);
    char *save = calloc((size_t)g->n_forward + 1, 1);
    if (!save) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int i = 0; i < n_saved; i++) {
        if (saved[i] < 0 || saved[i] >= g->n_forward) {
            free(save);
            return mb_err_set(err, MB_EINPUT, "variant '%s': node %d is not a forward tensor", g->name,
                              saved[i]);
        }
        save[saved[i]] = 1;
    }
    mb_plan *p = plan_new(g, MB_PLAN_OPTIMAL);
    int missing = -1;
    int rc = p ? group_saving(p, save, "optimal_bwd", &missing) : -1;
    free(save);
    if (!rc) rc = derive_traffic(p);
    if (rc) {
        mb_plan_free(p);
        if (rc == -2)
            return mb_err_set(err, MB_EINPUT, "variant '%s': the backward needs input '%s', which is "
                              "not saved", g->name, g->nodes[missing].name);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    *out = p;
    return MB_OK;
}

void mb_plan_free(mb_plan *p)
{
    if (!p) return;
    for (int k = 0; k < p->n_kernels; k++) {
        free(p->kernels[k].nodes);
        free(p->kernels[k].reads);
        free(p->kernels[k].writes);
        free(p->kernels[k].read_passes);
        free(p->kernels[k].eval_mask);
        free(p->kernels[k].stat_pass);
        free(p->kernels[k].online);
    }
    free(p->kernels);
    free(p->saved);
    free(p->results);
    mb_graph_free(p->g);
    free(p);
}
