/* rows_cpu.c — the CPU executors of plans with row operations (sum, mean,
 * amax, softmax, log_softmax, layer_norm, rms_norm over the last dimension).
 *
 * Blocked by rows: each thread takes whole rows. A kernel whose row (of what
 * it reads in several passes) fits the core's cache keeps the whole row in
 * row-long buffers and evaluates each node once (one pass); else it makes the passes
 * over a row that model/passes.c derives (mb_kernel.passes, eval_mask,
 * stat_pass), each pass streaming the row in tiles of MB_KERN_TILE columns
 * and recomputing the elementwise values that pass needs from the kernel's
 * reads, as a looped reduction does. A row that fits the core's private
 * cache (the model's onchip_kib on a CPU: L2, 1 MiB a core on the Zen 4
 * guest) is read from memory once and re-read from there (one pass); a
 * longer one goes to memory in every pass (multi-pass). Op at a time runs
 * every node as a kernel of its own over whole arrays. Broadcasting indexes
 * an operand by its shape class: [rows, cols] by element, [rows, 1] and
 * [rows] by row, [cols] by column, a scalar once.
 * Sums accumulate a tile in f32 (bf16 and f16 inputs widen to f32, as
 * PyTorch's CPU kernels accumulate) in vector lanes, four vectors of them,
 * added pairwise at the end (each lane sums cols / 64 elements of a row), and
 * the tiles' partial sums in double; LayerNorm's mean and variance are
 * shifted by the row's first element (sums of x - x0 and its square), so
 * that a row far from 0 does not cancel in f32. f32 reads are used where
 * they lie (no copy); f32 and 16-bit writes of tensors of
 * t->nt_min_bytes or more go out with non-temporal stores, as exec_cpu.c's do.
 * A column kernel (a colsum: a [cols] weight's gradient, the sum over the
 * rows) runs its row nodes by rows, each thread summing its rows' share,
 * then the nodes after the sums once over the columns; the reference sums
 * every row's term the same way (mb_kern_rows_reference_cols).
 * Does not time anything (measure/), nor run elementwise plans (exec_cpu.c),
 * nor judge results (rows_verify.c). */
#include "kernels_int.h"
#include "mb_ops.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "vec_ops.h"

#define TILE MB_KERN_TILE

#define ROW_VMAX V_MAX

/* ---- vector row primitives (f32 lanes, 4 vector accumulators) ------------- */

#if defined(MB_VW)
static float lanes_sum(vf v)
{
    float l[MB_VW], s = 0;
    V_ST(l, v);
    for (int w = MB_VW; w > 1; w /= 2) /* pairwise */
        for (int i = 0; i < w / 2; i++) l[i] += l[i + w / 2];
    s = l[0];
    return s;
}

static float lanes_max(vf v)
{
    float l[MB_VW], m;
    V_ST(l, v);
    m = l[0];
    for (int i = 1; i < MB_VW; i++) m = l[i] > m ? l[i] : m;
    return m;
}
#endif

/* sum of x[0..len) */
static float vsum(const float *x, int64_t len)
{
    int64_t i = 0;
    float s = 0;
#if defined(MB_VW)
    vf a0 = V_SET(0), a1 = a0, a2 = a0, a3 = a0;
    for (; i + 4 * MB_VW <= len; i += 4 * MB_VW) {
        a0 = V_ADD(a0, V_LD(x + i));
        a1 = V_ADD(a1, V_LD(x + i + MB_VW));
        a2 = V_ADD(a2, V_LD(x + i + 2 * MB_VW));
        a3 = V_ADD(a3, V_LD(x + i + 3 * MB_VW));
    }
    for (; i + MB_VW <= len; i += MB_VW) a0 = V_ADD(a0, V_LD(x + i));
    s = lanes_sum(V_ADD(V_ADD(a0, a1), V_ADD(a2, a3)));
#endif
    for (; i < len; i++) s += x[i];
    return s;
}

/* sum of x[i]^2 */
static float vsum_sq(const float *x, int64_t len)
{
    int64_t i = 0;
    float s = 0;
#if defined(MB_VW)
    vf a0 = V_SET(0), a1 = a0, a2 = a0, a3 = a0;
    for (; i + 4 * MB_VW <= len; i += 4 * MB_VW) {
        vf x0 = V_LD(x + i), x1 = V_LD(x + i + MB_VW), x2 = V_LD(x + i + 2 * MB_VW), x3 = V_LD(x + i + 3 * MB_VW);
        a0 = V_ADD(a0, V_MUL(x0, x0));
        a1 = V_ADD(a1, V_MUL(x1, x1));
        a2 = V_ADD(a2, V_MUL(x2, x2));
        a3 = V_ADD(a3, V_MUL(x3, x3));
    }
    for (; i + MB_VW <= len; i += MB_VW) {
        vf x0 = V_LD(x + i);
        a0 = V_ADD(a0, V_MUL(x0, x0));
    }
    s = lanes_sum(V_ADD(V_ADD(a0, a1), V_ADD(a2, a3)));
#endif
    for (; i < len; i++) s += x[i] * x[i];
    return s;
}

/* *s1 = sum of x[i] - k, *s2 = sum of (x[i] - k)^2 */
static void vsum_shifted(const float *x, float k, int64_t len, float *s1, float *s2)
{
    int64_t i = 0;
    float a = 0, b = 0;
#if defined(MB_VW)
    const vf kv = V_SET(k);
    vf a0 = V_SET(0), a1 = a0, b0 = a0, b1 = a0;
    for (; i + 2 * MB_VW <= len; i += 2 * MB_VW) {
        vf d0 = V_SUB(V_LD(x + i), kv), d1 = V_SUB(V_LD(x + i + MB_VW), kv);
        a0 = V_ADD(a0, d0);
        a1 = V_ADD(a1, d1);
        b0 = V_ADD(b0, V_MUL(d0, d0));
        b1 = V_ADD(b1, V_MUL(d1, d1));
    }
    a = lanes_sum(V_ADD(a0, a1));
    b = lanes_sum(V_ADD(b0, b1));
#endif
    for (; i < len; i++) {
        float d = x[i] - k;
        a += d;
        b += d * d;
    }
    *s1 = a;
    *s2 = b;
}

/* max of x[i] (a NaN element is passed over, as before: x > m ? x : m) */
static float vmax(const float *x, int64_t len)
{
    int64_t i = 0;
    float m = -INFINITY;
#if defined(MB_VW)
    vf a0 = V_SET(-INFINITY), a1 = a0;
    for (; i + 2 * MB_VW <= len; i += 2 * MB_VW) {
        a0 = ROW_VMAX(V_LD(x + i), a0);
        a1 = ROW_VMAX(V_LD(x + i + MB_VW), a1);
    }
    m = lanes_max(ROW_VMAX(a0, a1));
#endif
    for (; i < len; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* sum of exp(x[i] - m); with y, also y[i] = exp(x[i] - m) */
static float vsum_exp(const float *x, float m, float *y, int64_t len)
{
    int64_t i = 0;
    float s = 0;
#if defined(MB_VW)
    const vf mv = V_SET(m);
    vf a0 = V_SET(0), a1 = a0;
    for (; i + 2 * MB_VW <= len; i += 2 * MB_VW) {
        vf e0 = V_EXP(V_SUB(V_LD(x + i), mv)), e1 = V_EXP(V_SUB(V_LD(x + i + MB_VW), mv));
        if (y) {
            V_ST(y + i, e0);
            V_ST(y + i + MB_VW, e1);
        }
        a0 = V_ADD(a0, e0);
        a1 = V_ADD(a1, e1);
    }
    s = lanes_sum(V_ADD(a0, a1));
#endif
    for (; i < len; i++) {
        float e = mb_op_apply_f32(MB_OP_EXP, x[i] - m, 0.0f);
        if (y) y[i] = e;
        s += e;
    }
    return s;
}

/* y[i] = exp(x[i] - m) * c (x == y allowed: y[i] *= c when x is NULL) */
static void vexp_scale(const float *x, float m, float c, float *y, int64_t len)
{
    int64_t i = 0;
#if defined(MB_VW)
    const vf mv = V_SET(m), cv = V_SET(c);
    if (x)
        for (; i + MB_VW <= len; i += MB_VW) V_ST(y + i, V_MUL(V_EXP(V_SUB(V_LD(x + i), mv)), cv));
    else
        for (; i + MB_VW <= len; i += MB_VW) V_ST(y + i, V_MUL(V_LD(y + i), cv));
#endif
    for (; i < len; i++) y[i] = (x ? mb_op_apply_f32(MB_OP_EXP, x[i] - m, 0.0f) : y[i]) * c;
}

/* y[i] = (x[i] - k) * c * w[i] (w NULL: the scalar ws) */
static void vnorm(const float *x, float k, float c, const float *w, float ws, float *y, int64_t len)
{
    int64_t i = 0;
#if defined(MB_VW)
    const vf kv = V_SET(k), cv = V_SET(c), wv = V_SET(ws);
    for (; i + MB_VW <= len; i += MB_VW)
        V_ST(y + i, V_MUL(V_MUL(V_SUB(V_LD(x + i), kv), cv), w ? V_LD(w + i) : wv));
#endif
    for (; i < len; i++) y[i] = (x[i] - k) * c * (w ? w[i] : ws);
}

/* Per-thread state of one kernel on one row. */
typedef struct {
    const mb_graph *g;
    const mb_kernel *K;
    const mb_kern_tensors *t;
    int64_t cols;
    float **buf;     /* per graph node: its values now (full and [cols] values):
                        own[v], or an f32 read where it lies */
    float **own;     /* per graph node: TILE (or cols) floats of this thread's */
    float *scal;     /* per graph node: its value for this row (row values) */
    double *acc, *acc2; /* reductions and library statistics */
    float *mx;       /* running max (amax, softmax) */
    float *mprev;    /* an amax's value before the current tile (online sums) */
    char *in_k;      /* node evaluated by K */
} rowstate;

static const float *operand(rowstate *S, int v, float *sv)
{
    if (v < 0) return NULL;
    if (mb_kern_is_rowval(&S->g->nodes[v])) { *sv = S->scal[v]; return NULL; }
    return S->buf[v];
}

/* Elementwise node v over len values of its buffer (from the tile start its
 * operands' buffers point at), or, a row value, once a row (first: the
 * row's first tile). */
static void node_apply(rowstate *S, int v, int first, int64_t len)
{
    const mb_node *nd = &S->g->nodes[v];
    float as = (float)nd->scalar[0], bs = nd->scalar_cols ? (float)S->cols : (float)nd->scalar[1];
    const float *a = nd->arg[0] >= 0 ? operand(S, nd->arg[0], &as) : NULL;
    const float *b = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? operand(S, nd->arg[1], &bs) : NULL;
    if (!mb_kern_is_rowval(nd)) mb_kern_op_apply(nd->op, a, as, b, bs, S->buf[v], len);
    else if (first) mb_kern_op_apply(nd->op, NULL, as, NULL, bs, &S->scal[v], 1);
}

/* Read v's tile [c0, c0 + len) of row r (full or [cols]): an f32 one where
 * it lies (S->buf[v] points there; reads are never written), others widened
 * into S->own[v]. */
static void load_tile(rowstate *S, int v, int64_t r, int64_t c0, int len)
{
    const mb_node *nd = &S->g->nodes[v];
    const void *src = S->t->data[v];
    int64_t base = nd->shape == MB_SHC_COL ? c0 : r * S->cols + c0;
    if (nd->dtype == MB_F32) {
        S->buf[v] = (float *)src + base;
        return;
    }
    S->buf[v] = S->own[v];
    mb_kern_vec_load((const char *)src + base * (int64_t)mb_dtype_bytes(nd->dtype), nd->dtype, S->buf[v], len);
}

/* Node v's tile [c0, c0 + len) of row r out to its tensor. */
static void store_tile(rowstate *S, int v, int64_t r, int64_t c0, int len)
{
    const mb_node *nd = &S->g->nodes[v];
    int64_t base = nd->shape == MB_SHC_COL ? c0 : r * S->cols + c0;
    int nt = nd->shape == MB_SHC_FULL && S->t->n * (int64_t)mb_dtype_bytes(nd->dtype) >= S->t->nt_min_bytes;
    mb_kern_vec_store(S->buf[v], (char *)S->t->data[v] + base * (int64_t)mb_dtype_bytes(nd->dtype), nd->dtype,
                      len, nt);
}

static float tile_sum(const float *x, float xs, int len)
{
    if (!x) return xs * (float)len;
    return vsum(x, len);
}

static float tile_max(const float *x, float xs, int len)
{
    return x ? vmax(x, len) : xs;
}

/* sum over the tile of exp(x - m) (f32, vector exp) */
static float tile_sum_exp(const float *x, float xs, float m, int len)
{
    if (!x) return mb_op_apply_f32(MB_OP_EXP, xs - m, 0.0f) * (float)len;
    return vsum_exp(x, m, NULL, len);
}

static void begin_stats(rowstate *S, int v)
{
    S->acc[v] = S->acc2[v] = 0;
    S->mx[v] = -INFINITY;
}

/* A row op's statistics from one tile, in pass p (its stat_pass is sp). */
static void stats_tile(rowstate *S, int j, int p, int len)
{
    const mb_node *nd = &S->g->nodes[S->K->nodes[j]];
    int v = S->K->nodes[j], sp = S->K->stat_pass[j];
    float xs = 0;
    const float *x = operand(S, nd->op == MB_OP_SUM && S->K->online[j] ?
                             S->g->nodes[S->g->nodes[nd->arg[0]].arg[0]].arg[0] : nd->arg[0], &xs);
    switch (nd->op) {
    case MB_OP_SUM:
        if (S->K->online[j]) { /* sum of exp(a - m) beside m = amax(a): rescale when m grows */
            int m = S->g->nodes[S->g->nodes[nd->arg[0]].arg[0]].arg[1];
            float mo = S->mprev[m], mn = S->mx[m];
            if (mo != mn && S->acc[v] != 0) S->acc[v] *= exp((double)mo - (double)mn);
            S->acc[v] += tile_sum_exp(x, xs, mn, len);
        } else {
            S->acc[v] += tile_sum(x, xs, len);
        }
        break;
    case MB_OP_MEAN: S->acc[v] += tile_sum(x, xs, len); break;
    case MB_OP_AMAX: {
        float m = tile_max(x, xs, len);
        S->mprev[v] = S->mx[v];
        if (m > S->mx[v]) S->mx[v] = m;
        break;
    }
    case MB_OP_SOFTMAX:
    case MB_OP_LOG_SOFTMAX:
        if (S->K->online[j]) {
            float m = tile_max(x, xs, len), mo = S->mx[v];
            if (m > mo) {
                if (S->acc[v] != 0) S->acc[v] *= exp((double)mo - (double)m);
                S->mx[v] = m;
            }
            S->acc[v] += tile_sum_exp(x, xs, S->mx[v], len);
        } else if (p == sp) {
            float m = tile_max(x, xs, len);
            if (m > S->mx[v]) S->mx[v] = m;
        } else {
            S->acc[v] += tile_sum_exp(x, xs, S->mx[v], len);
        }
        break;
    case MB_OP_LAYER_NORM: { /* sums of x - x0 and its square, in double across tiles */
        if (S->mx[v] == -INFINITY) S->mx[v] = x ? x[0] : xs; /* the row's shift x0 */
        float s1 = 0, s2 = 0;
        if (x) vsum_shifted(x, S->mx[v], len, &s1, &s2);
        else s1 = (xs - S->mx[v]) * (float)len, s2 = s1 * (xs - S->mx[v]);
        S->acc[v] += s1;
        S->acc2[v] += s2;
        break;
    }
    case MB_OP_RMS_NORM:
        S->acc[v] += x ? vsum_sq(x, len) : (double)xs * xs * len;
        break;
    default: break;
    }
}

/* A reduction's value once its pass has ended. */
static void finish_stats(rowstate *S, int j)
{
    int v = S->K->nodes[j];
    switch (S->g->nodes[v].op) {
    case MB_OP_SUM: S->scal[v] = (float)S->acc[v]; break;
    case MB_OP_MEAN: S->scal[v] = (float)(S->acc[v] / (double)S->cols); break;
    case MB_OP_AMAX: S->scal[v] = S->mx[v]; break;
    default: break;
    }
}

/* A library row op's output tile (x, when it is a row value: its tile of
 * copies in tmp first). */
static void library_tile(rowstate *S, int v, int len, float *tmp)
{
    const mb_node *nd = &S->g->nodes[v];
    float xs = 0, ws = (float)nd->scalar[1];
    const float *x = operand(S, nd->arg[0], &xs);
    const float *w = nd->arg[1] >= 0 ? operand(S, nd->arg[1], &ws) : NULL;
    float *y = S->buf[v];
    if (!x) {
        for (int i = 0; i < len; i++) tmp[i] = xs;
        x = tmp;
    }
    switch (nd->op) {
    case MB_OP_SOFTMAX:
        vexp_scale(x, S->mx[v], 1.0f / (float)S->acc[v], y, len);
        break;
    case MB_OP_LOG_SOFTMAX:
        vnorm(x, S->mx[v] + logf((float)S->acc[v]), 1.0f, NULL, 1.0f, y, len);
        break;
    case MB_OP_LAYER_NORM: { /* acc, acc2: sums of x - x0, (x - x0)^2 (x0 in mx) */
        double d = S->acc[v] / (double)S->cols, var = S->acc2[v] / (double)S->cols - d * d;
        float mu = (float)(S->mx[v] + d), rstd = (float)(1.0 / sqrt((var > 0 ? var : 0) + nd->eps));
        vnorm(x, mu, rstd, w, ws, y, len);
        break;
    }
    case MB_OP_RMS_NORM: {
        float rstd = (float)(1.0 / sqrt(S->acc[v] / (double)S->cols + nd->eps));
        vnorm(x, 0.0f, rstd, w, ws, y, len);
        break;
    }
    default: break;
    }
}

static int lowest_bit(int m)
{
    for (int p = 0; p < 31; p++)
        if (m >> p & 1) return p;
    return -1;
}

/* One pass p over row r: tiles of every read the pass needs, the nodes it
 * evaluates, the statistics it accumulates, the writes it produces. */
static void row_pass(rowstate *S, int64_t r, int p, float *tmp)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    for (int j = 0; j < K->n_nodes; j++)
        if (K->stat_pass[j] == p) begin_stats(S, K->nodes[j]);
    for (int64_t c0 = 0; c0 < S->cols; c0 += TILE) {
        int len = (int)(S->cols - c0 < TILE ? S->cols - c0 : TILE);
        for (int q = 0; q < K->n_reads; q++) {
            int v = K->reads[q];
            if (!mb_kern_is_rowval(&g->nodes[v])) load_tile(S, v, r, c0, len);
        }
        for (int j = 0; j < K->n_nodes; j++) {
            int v = K->nodes[j];
            const mb_node *nd = &g->nodes[v];
            int sp = K->stat_pass[j];
            if (sp >= 0) {
                int last_stat = sp + (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION || K->online[j] ||
                                      nd->op == MB_OP_LAYER_NORM || nd->op == MB_OP_RMS_NORM ? 0 : 1);
                if (p >= sp && p <= last_stat) stats_tile(S, j, p, len);
                if (MB_OP_IS_ROW(nd->op) && mb_op_info_of(nd->op)->kind != MB_OPK_REDUCTION &&
                    (K->eval_mask[j] >> p & 1))
                    library_tile(S, v, len, tmp);
                continue;
            }
            if (K->eval_mask[j] >> p & 1) node_apply(S, v, c0 == 0, len);
        }
        for (int q = 0; q < K->n_writes; q++) {
            int v = K->writes[q], j = 0;
            while (K->nodes[j] != v) j++;
            const mb_node *nd = &g->nodes[v];
            if (mb_kern_is_rowval(nd) || lowest_bit(K->eval_mask[j]) != p) continue;
            store_tile(S, v, r, c0, len);
        }
    }
    for (int j = 0; j < K->n_nodes; j++)
        if (K->stat_pass[j] == p && mb_op_info_of(g->nodes[K->nodes[j]].op)->kind == MB_OPK_REDUCTION)
            finish_stats(S, j);
    /* row values written: reductions when their pass ends, others when evaluated */
    for (int q = 0; q < K->n_writes; q++) {
        int v = K->writes[q], j = 0;
        while (K->nodes[j] != v) j++;
        const mb_node *nd = &g->nodes[v];
        int at = K->stat_pass[j] >= 0 ? K->stat_pass[j] : lowest_bit(K->eval_mask[j]);
        if (mb_kern_is_rowval(nd) && at == p)
            mb_store_f32(S->t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype, S->scal[v]);
    }
}

/* One pass over row r with every value of the row kept (row-long buffers,
 * S->buf[v] of cols floats): the nodes in order, each once, a reduction
 * over its operand's whole row as soon as that is complete. What a kernel
 * does when its row fits the core's cache (the model's one pass). */
static void row_onepass(rowstate *S, int64_t r, float *tmp)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    const int len = (int)S->cols;
    for (int q = 0; q < K->n_reads; q++) {
        int v = K->reads[q];
        if (!mb_kern_is_rowval(&g->nodes[v])) load_tile(S, v, r, 0, len);
    }
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        const mb_node *nd = &g->nodes[v];
        if (nd->op == MB_OP_SOFTMAX && !mb_kern_is_rowval(&g->nodes[nd->arg[0]])) {
            /* max, then exp(x - max) kept and summed, then scaled: one exp an element */
            const float *x = S->buf[nd->arg[0]];
            S->mx[v] = vmax(x, len);
            S->acc[v] = vsum_exp(x, S->mx[v], S->buf[v], len);
            vexp_scale(NULL, 0.0f, 1.0f / (float)S->acc[v], S->buf[v], len);
            continue;
        }
        if (nd->op == MB_OP_SUM && K->online[j] && !mb_kern_is_rowval(&g->nodes[nd->arg[0]])) {
            /* a sum of exp(a - m) beside its amax: exp(a - m) is in its buffer already */
            S->acc[v] = vsum(S->buf[nd->arg[0]], len);
            finish_stats(S, j);
            continue;
        }
        if (MB_OP_IS_ROW(nd->op)) {
            int sp = K->stat_pass[j];
            begin_stats(S, v);
            if (nd->op == MB_OP_SUM && K->online[j]) { /* its amax is complete: no rescaling */
                int m = g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[1];
                S->mprev[m] = S->mx[m];
            }
            stats_tile(S, j, sp, len);
            if ((nd->op == MB_OP_SOFTMAX || nd->op == MB_OP_LOG_SOFTMAX) && !K->online[j])
                stats_tile(S, j, sp + 1, len);
            if (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION) finish_stats(S, j);
            else library_tile(S, v, len, tmp);
            continue;
        }
        node_apply(S, v, 1, len);
    }
    for (int q = 0; q < K->n_writes; q++) {
        int v = K->writes[q];
        const mb_node *nd = &g->nodes[v];
        if (mb_kern_is_rowval(nd)) {
            mb_store_f32(S->t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype, S->scal[v]);
            continue;
        }
        store_tile(S, v, r, 0, len);
    }
}

int mb_kern_rows_onepass(const mb_kernel *K, int64_t cols)
{
    return K->passes > 1 && (double)cols * K->live_bytes_per_col <= (double)mb_kern_core_cache_bytes();
}

/* Most rows a compiled row kernel is called for at once. */
#define JIT_BLOCK_ROWS 64

/* The compiled form of row kernel K (jit_rows.c): a kernel with a row op,
 * or of two nodes or more (a lone elementwise op is one vector primitive a
 * tile already, as exec_cpu.c rules), at most MB_KERN_JIT_IO_MAX reads and
 * writes (model/traffic.c's mb_kernel_compiled costs by the same); NULL:
 * interpret. */
static mb_kern_rows_fn rows_jit(const mb_graph *g, const mb_kernel *K, int onepass)
{
    int row_op = 0;
    for (int j = 0; j < K->n_nodes; j++) row_op |= MB_OP_IS_ROW(g->nodes[K->nodes[j]].op);
    if ((K->n_nodes < 2 && !row_op) || K->n_reads > MB_KERN_JIT_IO_MAX || K->n_writes > MB_KERN_JIT_IO_MAX)
        return NULL;
    return mb_kern_jit_rows_lookup(g, K, onepass);
}

int mb_kern_rows_compiled(const mb_kern_tensors *t, const mb_kernel *K)
{
    return rows_jit(t->plan->g, K, mb_kern_rows_onepass(K, t->shape.cols)) != NULL;
}

/* 1 when kernel K is row values alone, f32 and stored: elementwise [rows, 1]
 * and [rows] nodes of such operands or scalars (eager LayerNorm's and
 * RMSNorm's var + eps and rsqrt). */
static int rowvals_only(const mb_kern_tensors *t, const mb_kernel *K)
{
    const mb_graph *g = t->plan->g;
    for (int j = 0; j < K->n_nodes; j++) {
        const int v = K->nodes[j];
        const mb_node *nd = &g->nodes[v];
        if (!mb_kern_is_rowval(nd) || nd->shape == MB_SHC_SCALAR || MB_OP_IS_ROW(nd->op) || MB_OP_IS_COLUMN(nd->op) ||
            nd->dtype != MB_F32 || !t->data[v])
            return 0;
        for (int a = 0; a < mb_op_arity(nd->op); a++) {
            const int u = nd->arg[a];
            if (u >= 0 && (!mb_kern_is_rowval(&g->nodes[u]) || g->nodes[u].dtype != MB_F32 || !t->data[u])) return 0;
        }
    }
    return K->n_nodes > 0;
}

/* Such a kernel as one vector op a node over the rows: the row loop would
 * pay its per-row work for one element a row (4096 rows: 0.2-0.4 ms on the
 * 2-vCPU Xeon guest, against 3 us for a 4096-element add). */
static void run_rowvals(mb_kern_tensors *t, const mb_kernel *K)
{
    const mb_graph *g = t->plan->g;
    for (int j = 0; j < K->n_nodes; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]];
        float s[2] = {(float)nd->scalar[0], nd->scalar_cols ? (float)t->shape.cols : (float)nd->scalar[1]};
        const float *ab[2] = {NULL, NULL};
        for (int a = 0; a < mb_op_arity(nd->op); a++) {
            const int u = nd->arg[a];
            if (u < 0) continue;
            if (g->nodes[u].shape == MB_SHC_SCALAR) s[a] = *(const float *)t->data[u];
            else ab[a] = (const float *)t->data[u];
        }
        mb_kern_op_apply(nd->op, ab[0], s[0], ab[1], s[1], (float *)t->data[K->nodes[j]], t->shape.rows);
    }
}

/* Runs kernel K over every row of t, rows split among the threads. */
static int run_rows(mb_kern_tensors *t, const mb_kernel *K, mb_err *err)
{
    const mb_graph *g = t->plan->g;
    const int nn = g->n_nodes;
    const int64_t rows = t->shape.rows;
    const int onepass = mb_kern_rows_onepass(K, t->shape.cols);
    const mb_kern_rows_fn fn = rows_jit(g, K, onepass);
    const int nt = t->n * (int64_t)sizeof(float) >= t->nt_min_bytes; /* compiled: f32 writes only */
    int failed = 0;
#pragma omp parallel
    {
        rowstate S = {g, K, t, t->shape.cols, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        /* one pass keeps whole rows: buffers of cols floats */
        const size_t width = onepass ? (size_t)t->shape.cols : TILE;
        float *slab = malloc(((size_t)nn + 1) * width * sizeof(float));
        float *tmp = malloc(width * sizeof(float));
        S.buf = malloc(2 * (size_t)nn * sizeof(float *));
        S.own = S.buf ? S.buf + nn : NULL;
        S.scal = calloc((size_t)nn, sizeof(float));
        S.acc = calloc((size_t)nn, sizeof(double));
        S.acc2 = calloc((size_t)nn, sizeof(double));
        S.mx = calloc((size_t)nn, sizeof(float));
        S.mprev = calloc((size_t)nn, sizeof(float));
        int ok = slab && tmp && S.buf && S.scal && S.acc && S.acc2 && S.mx && S.mprev;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
        for (int i = 0; ok && i < nn; i++) S.buf[i] = S.own[i] = slab + (size_t)i * width;
        if (fn) { /* compiled: blocks of rows (the code prefetches a block's next
                     row), at least four a thread */
            int64_t br = rows / (4 * (int64_t)omp_get_num_threads());
            br = br < 1 ? 1 : br > JIT_BLOCK_ROWS ? JIT_BLOCK_ROWS : br;
#pragma omp for schedule(static)
            for (int64_t b = 0; b < (rows + br - 1) / br; b++) {
                int64_t r0 = b * br, r1 = r0 + br < rows ? r0 + br : rows;
                if (ok) fn(t->data, S.own, r0, r1, t->shape.cols, nt);
            }
        } else
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!ok) continue;
            for (int q = 0; q < K->n_reads; q++) { /* row values read: loaded once a row */
                int v = K->reads[q];
                const mb_node *nd = &g->nodes[v];
                if (mb_kern_is_rowval(nd))
                    S.scal[v] = mb_load_f32(t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype);
            }
            if (onepass) row_onepass(&S, r, tmp);
            else
                for (int p = 0; p < K->passes; p++) row_pass(&S, r, p, tmp);
        }
        mb_kern_vec_sfence(); /* this thread's non-temporal stores, before the kernel ends */
        free(slab); free(tmp); free(S.buf); free(S.scal); free(S.acc); free(S.acc2); free(S.mx); free(S.mprev);
    }
    if (failed) return mb_err_set(err, MB_ERUN, "out of memory");
    return MB_OK;
}

/* ---- column kernels: sums over the rows (colsum) -------------------------- */

/* Rows whose f32 partial sums a thread keeps before adding them into its
 * double sums: each column's f32 sum runs over at most 256 terms (bf16 and
 * f16 operands widen to f32 first, as PyTorch's reduce kernels accumulate in
 * float), the blocks in double, as the row sums' tiles are. */
#define COL_BLOCK_ROWS 256

/* The row loop of a column kernel: per row, its row nodes (elementwise, tile
 * by tile) and each colsum's operand added into the thread's partial sums
 * (part: f32, this block of rows; total: double, n_cs x cols each). */
static void column_rows(rowstate *S, const char *post, int64_t r0, int64_t r1, float *part, double *total)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    const int64_t C = S->cols;
    for (int64_t r = r0; r < r1; r++) {
        for (int q = 0; q < K->n_reads; q++) {
            int v = K->reads[q];
            const mb_node *nd = &g->nodes[v];
            if (mb_kern_is_rowval(nd)) S->scal[v] = mb_load_f32(S->t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype);
        }
        for (int64_t c0 = 0; c0 < C; c0 += TILE) {
            int len = (int)(C - c0 < TILE ? C - c0 : TILE);
            for (int q = 0; q < K->n_reads; q++)
                if (!mb_kern_is_rowval(&g->nodes[K->reads[q]])) load_tile(S, K->reads[q], r, c0, len);
            for (int j = 0, cs = 0; j < K->n_nodes; j++) {
                int v = K->nodes[j];
                const mb_node *nd = &g->nodes[v];
                if (MB_OP_IS_COLUMN(nd->op)) {
                    float xs = 0, *acc = part + (size_t)cs++ * (size_t)C + c0;
                    const float *x = operand(S, nd->arg[0], &xs);
                    for (int i = 0; i < len; i++) acc[i] += x ? x[i] : xs;
                    continue;
                }
                if (!post[j]) node_apply(S, v, c0 == 0, len);
            }
            for (int q = 0; q < K->n_writes; q++) { /* row nodes needed outside */
                int v = K->writes[q], j = 0;
                while (K->nodes[j] != v) j++;
                if (!post[j] && !mb_kern_is_rowval(&g->nodes[v])) store_tile(S, v, r, c0, len);
            }
        }
        if ((r - r0) % COL_BLOCK_ROWS == COL_BLOCK_ROWS - 1 || r == r1 - 1) {
            for (int j = 0, cs = 0; j < K->n_nodes; j++) {
                if (!MB_OP_IS_COLUMN(g->nodes[K->nodes[j]].op)) continue;
                float *pp = part + (size_t)cs * (size_t)C;
                double *tt = total + (size_t)cs++ * (size_t)C;
                for (int64_t c = 0; c < C; c++) tt[c] += pp[c], pp[c] = 0;
            }
        }
    }
}

/* The column phase: each colsum's sum (total, double) and the nodes after
 * it, once over the columns in f32 (with the [cols] nodes of the row loop
 * again, the operands they may read), then K's writes among them. */
static void column_finish(rowstate *S, const char *post, const double *total)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    const int64_t C = S->cols;
    for (int q = 0; q < K->n_reads; q++) {
        int v = K->reads[q];
        const mb_node *nd = &g->nodes[v];
        if (nd->shape == MB_SHC_COL) load_tile(S, v, 0, 0, (int)C);
    }
    for (int j = 0, cs = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        const mb_node *nd = &g->nodes[v];
        if (!post[j] && nd->shape != MB_SHC_COL) continue;
        if (MB_OP_IS_COLUMN(nd->op)) {
            const double *tt = total + (size_t)cs++ * (size_t)C;
            for (int64_t c = 0; c < C; c++) S->buf[v][c] = (float)tt[c];
            continue;
        }
        node_apply(S, v, 1, C);
    }
    for (int q = 0; q < K->n_writes; q++) {
        int v = K->writes[q], j = 0;
        while (K->nodes[j] != v) j++;
        if (post[j]) store_tile(S, v, 0, 0, (int)C);
    }
}

/* Runs column kernel K of t: its rows split among the threads, each summing
 * its rows' share of every colsum, the sums added together, then the nodes
 * after them once. */
static int run_columns(mb_kern_tensors *t, const mb_kernel *K, const char *post, mb_err *err)
{
    const mb_graph *g = t->plan->g;
    const int nn = g->n_nodes;
    const int64_t C = t->shape.cols, rows = t->shape.rows;
    int n_cs = 0;
    for (int j = 0; j < K->n_nodes; j++) {
        if (MB_OP_IS_ROW(g->nodes[K->nodes[j]].op))
            return mb_err_set(err, MB_EINPUT, "kernel %s: a row operation beside a column reduction", K->name);
        n_cs += MB_OP_IS_COLUMN(g->nodes[K->nodes[j]].op);
    }
    double *total = calloc((size_t)(n_cs ? n_cs : 1) * (size_t)C, sizeof(double));
    int failed = !total;
    const int has_rows = n_cs > 0;
#pragma omp parallel if (has_rows && !failed)
    {
        rowstate S = {g, K, t, C, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        const size_t width = TILE;
        float *slab = malloc(((size_t)nn + 1) * width * sizeof(float));
        float *part = calloc((size_t)(n_cs ? n_cs : 1) * (size_t)C, sizeof(float));
        double *mine = calloc((size_t)(n_cs ? n_cs : 1) * (size_t)C, sizeof(double));
        S.buf = malloc(2 * (size_t)nn * sizeof(float *));
        S.own = S.buf ? S.buf + nn : NULL;
        S.scal = calloc((size_t)nn, sizeof(float));
        int ok = !failed && slab && part && mine && S.buf && S.scal;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
        for (int i = 0; ok && i < nn; i++) S.buf[i] = S.own[i] = slab + (size_t)i * width;
        if (ok && has_rows) {
            int nt = omp_get_num_threads(), me = omp_get_thread_num();
            int64_t r0 = rows * me / nt, r1 = rows * (me + 1) / nt;
            column_rows(&S, post, r0, r1, part, mine);
#pragma omp critical(mb_colsum_total)
            for (size_t i = 0; i < (size_t)n_cs * (size_t)C; i++) total[i] += mine[i];
        }
#pragma omp barrier
#pragma omp single
        if (!failed) {
            /* the column phase on one thread, with buffers of cols floats for
             * the nodes it evaluates and the [cols] tensors it reads */
            rowstate F = S;
            float **fb = calloc(2 * (size_t)nn, sizeof(float *));
            int wide_n = 0;
            for (int j = 0; j < K->n_nodes; j++) wide_n += post[j] || g->nodes[K->nodes[j]].shape == MB_SHC_COL;
            for (int q = 0; q < K->n_reads; q++) wide_n += g->nodes[K->reads[q]].shape == MB_SHC_COL;
            float *wide = malloc(((size_t)wide_n + 1) * (size_t)C * sizeof(float));
            if (wide && fb) {
                F.buf = fb;
                F.own = fb + nn;
                int w = 0;
                for (int j = 0; j < K->n_nodes; j++)
                    if (post[j] || g->nodes[K->nodes[j]].shape == MB_SHC_COL)
                        F.buf[K->nodes[j]] = F.own[K->nodes[j]] = wide + (size_t)w++ * (size_t)C;
                for (int q = 0; q < K->n_reads; q++)
                    if (g->nodes[K->reads[q]].shape == MB_SHC_COL)
                        F.buf[K->reads[q]] = F.own[K->reads[q]] = wide + (size_t)w++ * (size_t)C;
                column_finish(&F, post, total);
            } else {
                failed = 1;
            }
            free(wide);
            free(fb);
        }
        mb_kern_vec_sfence();
        free(slab); free(part); free(mine); free(S.buf); free(S.scal);
    }
    free(total);
    if (failed) return mb_err_set(err, MB_ERUN, "out of memory");
    return MB_OK;
}

/* A kernel of t's plan by rows, or by columns when it has a column reduction
 * or holds [cols] values only. */
static int run_kernel_at(mb_kern_tensors *t, const mb_kernel *K, mb_err *err)
{
    const mb_graph *g = t->plan->g;
    char *graph_post = malloc((size_t)g->n_nodes + (size_t)K->n_nodes + 1);
    if (!graph_post) return mb_err_set(err, MB_ERUN, "out of memory");
    char *post = graph_post + g->n_nodes;
    mb_kern_col_post(g, graph_post);
    int rc = MB_OK;
    if (mb_kern_col_phase(g, K, graph_post, post)) rc = run_columns(t, K, post, err);
    else if (rowvals_only(t, K)) run_rowvals(t, K);
    else rc = run_rows(t, K, err);
    free(graph_post);
    return rc;
}

/* One node as a kernel of its own (op at a time): reads its operands from
 * memory, writes its result. */
static int run_node_alone(mb_kern_tensors *t, int v, mb_err *err)
{
    const mb_graph *g = t->plan->g;
    mb_kernel K;
    memset(&K, 0, sizeof K);
    int nodes[1] = {v}, reads[2], nr = 0;
    for (int a = 0; a < mb_op_arity(g->nodes[v].op); a++) {
        int u = g->nodes[v].arg[a];
        if (u >= 0 && (nr == 0 || reads[0] != u)) reads[nr++] = u;
    }
    K.nodes = nodes;
    K.n_nodes = 1;
    K.reads = reads;
    K.n_reads = nr;
    K.writes = nodes;
    K.n_writes = 1;
    int rc = mb_kernel_derive_passes(g, &K, 0) ? mb_err_set(err, MB_ERUN, "out of memory") : MB_OK;
    if (!rc) rc = run_kernel_at(t, &K, err);
    free(K.read_passes);
    free(K.eval_mask);
    free(K.stat_pass);
    free(K.online);
    return rc;
}

int mb_kern_rows_run_kernel(mb_kern_tensors *t, int k, mb_kern_exec e, mb_err *err)
{
    const mb_plan *p = t->plan;
    const mb_kernel *K = &p->kernels[k];
    if (e != MB_KERN_EXEC_OPWISE || K->n_nodes <= 1) return run_kernel_at(t, K, err);
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        int rc = mb_kern_ensure_storage(t, v, err);
        if (!rc) rc = run_node_alone(t, v, err);
        if (rc) return rc;
    }
    return MB_OK;
}
