/* rows_cpu.c — one row of a row kernel, interpreted: the row operations (sum,
 * mean, amax, softmax, log_softmax, layer_norm, rms_norm over the last
 * dimension) and the elementwise nodes around them, for the row executor
 * (rows_run_cpu.c), which gives each thread whole rows.
 *
 * A kernel whose row (of what it reads in several passes) fits the core's
 * cache keeps the whole row in row-long buffers and evaluates each node once
 * (one pass); else it makes the passes over a row that model/passes.c derives
 * (mb_kernel.passes, eval_mask, stat_pass), each pass streaming the row in
 * tiles of MB_KERN_TILE columns and recomputing the elementwise values that
 * pass needs from the kernel's reads, as a looped reduction does. A row that
 * fits the core's private cache (the model's onchip_kib on a CPU: L2, 1 MiB a
 * core on the Zen 4 guest) is read from memory once and re-read from there
 * (one pass); a longer one goes to memory in every pass (multi-pass).
 * Broadcasting indexes an operand by its shape class: [rows, cols] by
 * element, [rows, 1] and [rows] by row, [cols] by column, a scalar once.
 * Sums accumulate a tile in f32 (bf16 and f16 inputs widen to f32, as
 * PyTorch's CPU kernels accumulate) in vector lanes, four vectors of them,
 * added pairwise at the end (each lane sums cols / 64 elements of a row), and
 * the tiles' partial sums in double; LayerNorm's mean and variance are
 * shifted by the row's first element (sums of x - x0 and its square), so
 * that a row far from 0 does not cancel in f32. f32 reads are used where
 * they lie (no copy); f32 and 16-bit writes of tensors of
 * t->nt_min_bytes or more go out with non-temporal stores, as exec_cpu.c's do.
 * Does not choose how a kernel runs nor split rows among threads
 * (rows_run_cpu.c), nor run column kernels (rows_cols_cpu.c), elementwise
 * plans (exec_cpu.c) or time anything (measure/). */
#include "rows_int.h"

#include <math.h>

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

static void begin_stats(mb_kern_rowstate *S, int v)
{
    S->acc[v] = S->acc2[v] = 0;
    S->mx[v] = -INFINITY;
}

/* A row op's statistics from one tile, in pass p (its stat_pass is sp). */
static void stats_tile(mb_kern_rowstate *S, int j, int p, int len)
{
    const mb_node *nd = &S->g->nodes[S->K->nodes[j]];
    int v = S->K->nodes[j], sp = S->K->stat_pass[j];
    float xs = 0;
    const float *x = mb_kern_row_operand(S, nd->op == MB_OP_SUM && S->K->online[j] ?
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
static void finish_stats(mb_kern_rowstate *S, int j)
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
static void library_tile(mb_kern_rowstate *S, int v, int len, float *tmp)
{
    const mb_node *nd = &S->g->nodes[v];
    float xs = 0, ws = (float)nd->scalar[1];
    const float *x = mb_kern_row_operand(S, nd->arg[0], &xs);
    const float *w = nd->arg[1] >= 0 ? mb_kern_row_operand(S, nd->arg[1], &ws) : NULL;
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
void mb_kern_row_pass(mb_kern_rowstate *S, int64_t r, int p, float *tmp)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    for (int j = 0; j < K->n_nodes; j++)
        if (K->stat_pass[j] == p) begin_stats(S, K->nodes[j]);
    for (int64_t c0 = 0; c0 < S->cols; c0 += TILE) {
        int len = (int)(S->cols - c0 < TILE ? S->cols - c0 : TILE);
        for (int q = 0; q < K->n_reads; q++) {
            int v = K->reads[q];
            if (!mb_kern_is_rowval(&g->nodes[v])) mb_kern_row_load_tile(S, v, r, c0, len);
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
            if (K->eval_mask[j] >> p & 1) mb_kern_row_node_apply(S, v, c0 == 0, len);
        }
        for (int q = 0; q < K->n_writes; q++) {
            int v = K->writes[q], j = 0;
            while (K->nodes[j] != v) j++;
            const mb_node *nd = &g->nodes[v];
            if (mb_kern_is_rowval(nd) || lowest_bit(K->eval_mask[j]) != p) continue;
            mb_kern_row_store_tile(S, v, r, c0, len);
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
void mb_kern_row_kept_pass(mb_kern_rowstate *S, int64_t r, float *tmp)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    const int len = (int)S->cols;
    for (int q = 0; q < K->n_reads; q++) {
        int v = K->reads[q];
        if (!mb_kern_is_rowval(&g->nodes[v])) mb_kern_row_load_tile(S, v, r, 0, len);
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
        mb_kern_row_node_apply(S, v, 1, len);
    }
    for (int q = 0; q < K->n_writes; q++) {
        int v = K->writes[q];
        const mb_node *nd = &g->nodes[v];
        if (mb_kern_is_rowval(nd)) {
            mb_store_f32(S->t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype, S->scal[v]);
            continue;
        }
        mb_kern_row_store_tile(S, v, r, 0, len);
    }
}
