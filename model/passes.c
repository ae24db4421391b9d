/* passes.c — how many passes over a row a kernel with row operations makes,
 * and which tensors each pass reads: the traffic rule for reductions.
 *
 * A value is available in pass avail(v): an input of the kernel in any pass
 * (0); an elementwise op when its operands are; a reduction (sum, mean,
 * amax) one pass after its operand (the whole row must be seen first); a
 * library op after its statistics passes: softmax and log_softmax 2 (max,
 * then sum of exp: PyTorch's cunn_SoftMaxForward, 3 reads + 1 write per
 * element, SoftMax.cu), layer_norm 1 (Welford's mean and variance in one
 * pass, then the normalize loop re-reads x: vectorized_layer_norm_kernel),
 * rms_norm 1. The online plan folds softmax's max and sum into one pass, for
 * the library op and for sum(exp(a - amax(a))) written out (Milakov &
 * Gimelshein 2018: safe softmax 4 accesses per element, online 3; Inductor's
 * online_softmax). A pass that needs an elementwise value recomputes it from
 * the kernel's inputs, as Inductor's looped reductions do, so each pass reads
 * the inputs its values need. A row that fits on chip is read once.
 * Does not cost anything (traffic.c, roofline.c) nor group kernels (plan.c). */
#include "model_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Statistics passes of a library row op before its output exists. */
static int stat_passes(mb_op op, int online)
{
    switch (op) {
    case MB_OP_SOFTMAX:
    case MB_OP_LOG_SOFTMAX: return online ? 1 : 2;
    case MB_OP_LAYER_NORM:
    case MB_OP_RMS_NORM: return 1;
    default: return 0;
    }
}

/* 1 when node r (in the kernel) is sum(exp(a - m)) with m = amax(a) of the
 * same a, also in the kernel: the online plan computes it beside m. */
static int online_sum(const mb_graph *g, const int *in_k, int r)
{
    const mb_node *s = &g->nodes[r];
    if (s->op != MB_OP_SUM || s->arg[0] < 0 || !in_k[s->arg[0]]) return 0;
    const mb_node *e = &g->nodes[s->arg[0]];
    if (e->op != MB_OP_EXP || e->arg[0] < 0 || !in_k[e->arg[0]]) return 0;
    const mb_node *d = &g->nodes[e->arg[0]];
    if (d->op != MB_OP_SUB || d->arg[0] < 0 || d->arg[1] < 0 || !in_k[d->arg[1]]) return 0;
    const mb_node *m = &g->nodes[d->arg[1]];
    return m->op == MB_OP_AMAX && m->arg[0] == d->arg[0];
}

typedef struct {
    const mb_graph *g;
    const mb_kernel *K;
    const int *in_k;    /* node -> 1 when evaluated by K */
    int *avail;         /* node -> pass its value is available from */
    int *demanded;      /* node -> bit mask of passes it is demanded in */
    int *read_mask;     /* K->reads[r] -> passes reading it */
    int maxpass;        /* the last pass anything is computed in */
} walk;

#define MAX_PASSES 30

static void demand(walk *w, int v, int pass)
{
    if (v < 0 || pass >= MAX_PASSES || (w->demanded[v] >> pass & 1)) return;
    w->demanded[v] |= 1 << pass;
    if (pass > w->maxpass) w->maxpass = pass;
    if (!w->in_k[v]) {
        for (int r = 0; r < w->K->n_reads; r++)
            if (w->K->reads[r] == v) w->read_mask[r] |= 1 << pass;
        return;
    }
    const mb_node *nd = &w->g->nodes[v];
    if (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION) return; /* a per-row value, kept */
    for (int a = 0; a < mb_op_arity(nd->op); a++) demand(w, nd->arg[a], pass);
}

int mb_kernel_derive_passes(const mb_graph *g, mb_kernel *K, int online)
{
    K->passes = 1;
    K->live_bytes_per_col = 0;
    free(K->read_passes);
    free(K->eval_mask);
    free(K->stat_pass);
    free(K->online);
    K->read_passes = calloc((size_t)K->n_reads + 1, sizeof(int));
    K->eval_mask = calloc((size_t)K->n_nodes + 1, sizeof(int));
    K->stat_pass = malloc(((size_t)K->n_nodes + 1) * sizeof(int));
    K->online = calloc((size_t)K->n_nodes + 1, 1);
    if (!K->read_passes || !K->eval_mask || !K->stat_pass || !K->online) return -1;
    for (int j = 0; j < K->n_nodes; j++) K->stat_pass[j] = -1, K->eval_mask[j] = 1;
    int has_row = 0;
    for (int j = 0; j < K->n_nodes; j++) has_row |= MB_OP_IS_ROW(g->nodes[K->nodes[j]].op);
    if (!has_row) {
        for (int r = 0; r < K->n_reads; r++) K->read_passes[r] = 1;
        return 0;
    }
    walk w = {g, K, calloc((size_t)g->n_nodes, sizeof(int)), calloc((size_t)g->n_nodes, sizeof(int)),
              calloc((size_t)g->n_nodes, sizeof(int)), calloc((size_t)K->n_reads + 1, sizeof(int)), 0};
    int *in_k = (int *)w.in_k;
    if (!w.in_k || !w.avail || !w.demanded || !w.read_mask) {
        free(in_k); free(w.avail); free(w.demanded); free(w.read_mask);
        return -1;
    }
    for (int j = 0; j < K->n_nodes; j++) in_k[K->nodes[j]] = 1;
    /* availability, in evaluation order; a reduction is computed in the
     * pass its operand is available (online sums: beside their max) */
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        const mb_node *nd = &g->nodes[v];
        int a = 0;
        for (int s = 0; s < mb_op_arity(nd->op); s++)
            if (nd->arg[s] >= 0 && in_k[nd->arg[s]] && w.avail[nd->arg[s]] > a) a = w.avail[nd->arg[s]];
        if (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION) {
            int at = a;
            if (online && online_sum(g, in_k, v)) {
                int x = g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[0];
                at = in_k[x] ? w.avail[x] : 0;
                K->online[j] = 1;
            }
            K->stat_pass[j] = at;
            w.avail[v] = at + 1;
            if (at > w.maxpass) w.maxpass = at;
            demand(&w, online && online_sum(g, in_k, v) ? g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[0]
                                                        : nd->arg[0], at);
        } else if (MB_OP_IS_ROW(nd->op)) {
            int k = stat_passes(nd->op, online);
            K->stat_pass[j] = a;
            K->online[j] = (unsigned char)(online && k == 1 && stat_passes(nd->op, 0) == 2);
            for (int p = 0; p < k; p++) demand(&w, nd->arg[0], a + p);
            w.avail[v] = a + k;
        } else {
            w.avail[v] = a;
        }
    }
    /* writes are produced in the pass their value is available */
    for (int o = 0; o < K->n_writes; o++) {
        int v = K->writes[o];
        if (mb_op_info_of(g->nodes[v].op)->kind != MB_OPK_REDUCTION) demand(&w, v, w.avail[v]);
    }
    K->passes = w.maxpass + 1;
    /* a value is evaluated in the passes that demand it; a reduction's or an
     * online sum's operand in its accumulation pass (demand above) */
    for (int j = 0; j < K->n_nodes; j++) K->eval_mask[j] = w.demanded[K->nodes[j]];
    for (int r = 0; r < K->n_reads; r++) {
        int c = 0;
        for (int p = 0; p < MAX_PASSES; p++) c += w.read_mask[r] >> p & 1;
        K->read_passes[r] = c ? c : 1;
        /* a full row read in two passes or more is what one pass keeps on chip */
        if (c > 1 && g->nodes[K->reads[r]].shape == MB_SHC_FULL)
            K->live_bytes_per_col += (double)mb_dtype_bytes(g->nodes[K->reads[r]].dtype);
    }
    free(in_k); free(w.avail); free(w.demanded); free(w.read_mask);
    return 0;
}

int64_t mb_kernel_onepass_max_cols(const mb_kernel *K, const mb_device *d)
{
    if (K->passes <= 1 || !(K->live_bytes_per_col > 0)) return INT64_MAX;
    if (!(d->onchip_kib > 0)) return 0;
    return (int64_t)(d->onchip_kib * 1024.0 / K->live_bytes_per_col);
}

double mb_kernel_register_bytes_per_col(const mb_graph *g, const mb_kernel *K)
{
    if (K->passes <= 1 || !K->read_passes) return 0;
    int n = 0;
    for (int r = 0; r < K->n_reads; r++) {
        mb_shape_class sh = g->nodes[K->reads[r]].shape;
        n += (sh == MB_SHC_FULL && K->read_passes[r] > 1) || sh == MB_SHC_COL;
    }
    for (int w = 0; w < K->n_writes; w++) n += g->nodes[K->writes[w]].shape == MB_SHC_PART;
    return 4.0 * n;
}

int64_t mb_kernel_register_max_cols(const mb_graph *g, const mb_kernel *K, const mb_device *d)
{
    double b = mb_kernel_register_bytes_per_col(g, K);
    if (!(b > 0)) return INT64_MAX;
    if (!(d->register_kib > 0)) return 0;
    return (int64_t)(d->register_kib * 1024.0 / b);
}

/* ---- what each pass uses (kernels/jit_rows.c runs by it) ------------------ */

static int rowval_shape(const mb_node *nd)
{
    return nd->shape == MB_SHC_ROW || nd->shape == MB_SHC_ROWV || nd->shape == MB_SHC_SCALAR;
}

static int lowest_pass(int mask)
{
    for (int p = 0; p < MAX_PASSES; p++)
        if (mask >> p & 1) return p;
    return -1;
}

/* 1 when node v has a per-element value: not a row value nor a reduction. */
static int vector_valued(const mb_graph *g, int v)
{
    return !rowval_shape(&g->nodes[v]) && mb_op_info_of(g->nodes[v].op)->kind != MB_OPK_REDUCTION;
}

int mb_kernel_row_stats_in(const mb_graph *g, const mb_kernel *K, int j, int p)
{
    int sp = K->stat_pass[j];
    mb_op op = g->nodes[K->nodes[j]].op;
    if (sp < 0 || p < sp) return 0;
    if (mb_op_info_of(op)->kind == MB_OPK_REDUCTION) return p == sp;
    if (!MB_OP_IS_ROW(op)) return 0;
    int n = (op == MB_OP_SOFTMAX || op == MB_OP_LOG_SOFTMAX) && !K->online[j] ? 2 : 1;
    return p < sp + n;
}

int mb_kernel_row_stat_operand(const mb_graph *g, const mb_kernel *K, int j)
{
    const mb_node *nd = &g->nodes[K->nodes[j]];
    if (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION && K->online[j])
        return g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[0];
    return nd->arg[0];
}

/* Marks node u needed in cur (a vector value of K's). */
static void mark(const mb_graph *g, const int *pos, char *cur, int u)
{
    if (u >= 0 && pos[u] >= 0 && vector_valued(g, u)) cur[pos[u]] = 1;
}

int mb_kernel_row_needs(const mb_graph *g, const mb_kernel *K, int keep, char *need, char *kept)
{
    const int n = K->n_nodes;
    int *pos = malloc(((size_t)g->n_nodes + 1) * sizeof(int));
    if (!pos) return -1;
    for (int i = 0; i < g->n_nodes; i++) pos[i] = -1;
    for (int j = 0; j < n; j++) pos[K->nodes[j]] = j;
    memset(kept, 0, (size_t)n);
    int rc = 0;
    for (int p = 0; p < K->passes && !rc; p++) {
        char *cur = need + (size_t)p * (size_t)n;
        for (int j = 0; j < n; j++) {
            int v = K->nodes[j], w = 0;
            for (int o = 0; o < K->n_writes; o++) w |= K->writes[o] == v;
            cur[j] = vector_valued(g, v) && lowest_pass(K->eval_mask[j]) == p && w;
        }
        for (int j = n - 1; j >= 0; j--) {
            const mb_node *nd = &g->nodes[K->nodes[j]];
            if (mb_kernel_row_stats_in(g, K, j, p)) mark(g, pos, cur, mb_kernel_row_stat_operand(g, K, j));
            if (!cur[j]) continue;
            int computed = keep ? lowest_pass(K->eval_mask[j]) == p : (K->eval_mask[j] >> p & 1);
            if (!computed) {
                if (!keep) rc = -1;
                kept[j] = 1;
                continue;
            }
            if (keep && nd->op == MB_OP_SOFTMAX && !K->online[j]) continue; /* scales its kept exp */
            for (int k = 0; k < mb_op_arity(nd->op); k++) mark(g, pos, cur, nd->arg[k]);
        }
    }
    free(pos);
    return rc;
}

double mb_kernel_onepass_cache_accesses(const mb_graph *g, const mb_kernel *K)
{
    if (K->passes <= 1 || !K->eval_mask) return 0;
    mb_kernel K2 = *K; /* the passes without the online fold */
    K2.read_passes = NULL;
    K2.eval_mask = K2.stat_pass = NULL;
    K2.online = NULL;
    double acc = -1;
    char *need = NULL, *kept = malloc((size_t)K->n_nodes + 1);
    if (kept && mb_kernel_derive_passes(g, &K2, 0) == 0 &&
        (need = calloc((size_t)K2.passes * (size_t)K->n_nodes + 1, 1)) != NULL &&
        mb_kernel_row_needs(g, &K2, 1, need, kept) == 0) {
        acc = 0;
        for (int q = 0; q < K->n_reads; q++) { /* reads loaded in a later pass, [cols] ones in each */
            int u = K->reads[q], first = 1;
            if (!vector_valued(g, u)) continue;
            for (int p = 0; p < K2.passes; p++) {
                int used = 0;
                for (int j = 0; j < K->n_nodes && !used; j++) {
                    const mb_node *nd = &g->nodes[K->nodes[j]];
                    if (mb_kernel_row_stats_in(g, &K2, j, p) && mb_kernel_row_stat_operand(g, &K2, j) == u) used = 1;
                    int computed = lowest_pass(K2.eval_mask[j]) == p;
                    if (need[(size_t)p * (size_t)K->n_nodes + j] && computed &&
                        !(nd->op == MB_OP_SOFTMAX && !K2.online[j]))
                        for (int k = 0; k < mb_op_arity(nd->op); k++) used |= nd->arg[k] == u;
                }
                if (!used) continue;
                if (!first || g->nodes[u].shape == MB_SHC_COL) acc += 1;
                first = 0;
            }
        }
        for (int j = 0; j < K->n_nodes; j++) {
            const mb_node *nd = &g->nodes[K->nodes[j]];
            if (nd->op == MB_OP_SOFTMAX && !K2.online[j]) acc += 2; /* exp(x - max) stored, loaded */
            if (nd->shape == MB_SHC_PART) acc += 2; /* the block's partial sums: loaded, stored */
            if (!kept[j]) continue;
            acc += 1; /* its store */
            for (int p = 0; p < K2.passes; p++)
                acc += need[(size_t)p * (size_t)K->n_nodes + j] && lowest_pass(K2.eval_mask[j]) != p;
        }
    }
    free(need);
    free(kept);
    free(K2.read_passes);
    free(K2.eval_mask);
    free(K2.stat_pass);
    free(K2.online);
    return acc;
}

int mb_kernel_is_torch_layer_norm(const mb_graph *g, const mb_kernel *K)
{
    if (K->n_nodes < 1) return 0;
    if (!K->is_backward) return g->nodes[K->nodes[0]].op == MB_OP_LAYER_NORM;
    const int origin = g->nodes[K->nodes[0]].origin;
    return origin >= 0 && g->nodes[origin].op == MB_OP_LAYER_NORM &&
           !strcmp(K->name, mb_op_info_of(MB_OP_LAYER_NORM)->bwd_kernel);
}

int mb_kernel_reread_rows(const mb_kernel *K, const mb_device *d, mb_framework fw)
{
    return K->torch_layer_norm && fw == MB_FW_PYTORCH && strcmp(d->kind, "cpu") != 0;
}

int mb_kernel_read_passes_on(const mb_graph *g, const mb_kernel *K, int r, const mb_device *d, mb_framework fw)
{
    if (mb_kernel_reread_rows(K, d, fw)) return g->nodes[K->reads[r]].shape == MB_SHC_FULL ? 2 : 1;
    return K->read_passes[r];
}
