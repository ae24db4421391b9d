/* rows_cpu.c — the CPU executors of plans with row operations (sum, mean,
 * amax, softmax, log_softmax, layer_norm, rms_norm over the last dimension)
 * and their float64 reference.
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
 * PyTorch's CPU kernels accumulate) and the tiles' partial sums in double.
 * Does not time anything (measure/), nor run elementwise plans (exec_cpu.c). */
#include "kernels_int.h"
#include "mb_ops.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TILE MB_KERN_TILE

static int is_rowval(const mb_node *nd)
{
    return nd->shape == MB_SHC_ROW || nd->shape == MB_SHC_ROWV || nd->shape == MB_SHC_SCALAR;
}

/* Per-thread state of one kernel on one row. */
typedef struct {
    const mb_graph *g;
    const mb_kernel *K;
    const mb_kern_tensors *t;
    int64_t cols;
    float **buf;     /* per graph node: TILE floats (full and [cols] values) */
    float *scal;     /* per graph node: its value for this row (row values) */
    double *acc, *acc2; /* reductions and library statistics */
    float *mx;       /* running max (amax, softmax) */
    float *mprev;    /* an amax's value before the current tile (online sums) */
    char *in_k;      /* node evaluated by K */
} rowstate;

static const float *operand(rowstate *S, int v, float *sv)
{
    if (v < 0) return NULL;
    if (is_rowval(&S->g->nodes[v])) { *sv = S->scal[v]; return NULL; }
    return S->buf[v];
}

/* Loads read v's tile [c0, c0 + len) of row r (full or [cols]). */
static void load_tile(rowstate *S, int v, int64_t r, int64_t c0, int len)
{
    const mb_node *nd = &S->g->nodes[v];
    const void *src = S->t->data[v];
    int64_t base = nd->shape == MB_SHC_COL ? c0 : r * S->cols + c0;
    float *b = S->buf[v];
    if (nd->dtype == MB_F32) memcpy(b, (const float *)src + base, (size_t)len * sizeof(float));
    else
        for (int i = 0; i < len; i++) b[i] = mb_load_f32(src, base + i, nd->dtype);
}

static float tile_sum(const float *x, float xs, int len)
{
    float s = 0;
    if (!x) return xs * (float)len;
    for (int i = 0; i < len; i++) s += x[i];
    return s;
}

static float tile_max(const float *x, float xs, int len)
{
    float m = x ? -INFINITY : xs;
    for (int i = 0; x && i < len; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* sum over the tile of exp(x - m) (f32, vector exp) */
static float tile_sum_exp(const float *x, float xs, float m, int len, float *tmp)
{
    for (int i = 0; i < len; i++) tmp[i] = (x ? x[i] : xs) - m;
    mb_kern_op_apply(MB_OP_EXP, tmp, 0, NULL, 0, tmp, len);
    return tile_sum(tmp, 0, len);
}

static void begin_stats(rowstate *S, int v)
{
    S->acc[v] = S->acc2[v] = 0;
    S->mx[v] = -INFINITY;
}

/* A row op's statistics from one tile, in pass p (its stat_pass is sp). */
static void stats_tile(rowstate *S, int j, int p, int len, float *tmp)
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
            S->acc[v] += tile_sum_exp(x, xs, mn, len, tmp);
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
            S->acc[v] += tile_sum_exp(x, xs, S->mx[v], len, tmp);
        } else if (p == sp) {
            float m = tile_max(x, xs, len);
            if (m > S->mx[v]) S->mx[v] = m;
        } else {
            S->acc[v] += tile_sum_exp(x, xs, S->mx[v], len, tmp);
        }
        break;
    case MB_OP_LAYER_NORM: /* sums in double across tiles: mean and variance */
        for (int i = 0; i < len; i++) {
            float e = x ? x[i] : xs;
            S->acc[v] += e;
            S->acc2[v] += (double)e * e;
        }
        break;
    case MB_OP_RMS_NORM: {
        float s = 0;
        for (int i = 0; i < len; i++) s += (x ? x[i] : xs) * (x ? x[i] : xs);
        S->acc[v] += s;
        break;
    }
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

/* A library row op's output tile. */
static void library_tile(rowstate *S, int v, int len, float *tmp)
{
    const mb_node *nd = &S->g->nodes[v];
    float xs = 0, ws = (float)nd->scalar[1];
    const float *x = operand(S, nd->arg[0], &xs);
    const float *w = nd->arg[1] >= 0 ? operand(S, nd->arg[1], &ws) : NULL;
    float *y = S->buf[v];
    switch (nd->op) {
    case MB_OP_SOFTMAX:
    case MB_OP_LOG_SOFTMAX: {
        float m = S->mx[v], s = (float)S->acc[v];
        if (nd->op == MB_OP_LOG_SOFTMAX) {
            float ls = logf(s);
            for (int i = 0; i < len; i++) y[i] = (x ? x[i] : xs) - m - ls;
            break;
        }
        for (int i = 0; i < len; i++) tmp[i] = (x ? x[i] : xs) - m;
        mb_kern_op_apply(MB_OP_EXP, tmp, 0, NULL, 0, y, len);
        float inv = 1.0f / s;
        for (int i = 0; i < len; i++) y[i] *= inv;
        break;
    }
    case MB_OP_LAYER_NORM: {
        double mean = S->acc[v] / (double)S->cols, var = S->acc2[v] / (double)S->cols - mean * mean;
        float mu = (float)mean, rstd = (float)(1.0 / sqrt((var > 0 ? var : 0) + nd->eps));
        for (int i = 0; i < len; i++) y[i] = ((x ? x[i] : xs) - mu) * rstd * (w ? w[i] : ws);
        break;
    }
    case MB_OP_RMS_NORM: {
        float rstd = (float)(1.0 / sqrt(S->acc[v] / (double)S->cols + nd->eps));
        for (int i = 0; i < len; i++) y[i] = (x ? x[i] : xs) * rstd * (w ? w[i] : ws);
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
            if (!is_rowval(&g->nodes[v])) load_tile(S, v, r, c0, len);
        }
        for (int j = 0; j < K->n_nodes; j++) {
            int v = K->nodes[j];
            const mb_node *nd = &g->nodes[v];
            int sp = K->stat_pass[j];
            if (sp >= 0) {
                int last_stat = sp + (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION || K->online[j] ||
                                      nd->op == MB_OP_LAYER_NORM || nd->op == MB_OP_RMS_NORM ? 0 : 1);
                if (p >= sp && p <= last_stat) stats_tile(S, j, p, len, tmp);
                if (MB_OP_IS_ROW(nd->op) && mb_op_info_of(nd->op)->kind != MB_OPK_REDUCTION &&
                    (K->eval_mask[j] >> p & 1))
                    library_tile(S, v, len, tmp);
                continue;
            }
            if (!(K->eval_mask[j] >> p & 1)) continue;
            float as = (float)nd->scalar[0], bs = nd->scalar_cols ? (float)S->cols : (float)nd->scalar[1];
            const float *a = nd->arg[0] >= 0 ? operand(S, nd->arg[0], &as) : NULL;
            const float *b = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? operand(S, nd->arg[1], &bs) : NULL;
            if (is_rowval(nd)) {
                if (c0 == 0) mb_kern_op_apply(nd->op, NULL, as, NULL, bs, &S->scal[v], 1);
            } else {
                mb_kern_op_apply(nd->op, a, as, b, bs, S->buf[v], len);
            }
        }
        for (int q = 0; q < K->n_writes; q++) {
            int v = K->writes[q], j = 0;
            while (K->nodes[j] != v) j++;
            const mb_node *nd = &g->nodes[v];
            if (is_rowval(nd) || lowest_bit(K->eval_mask[j]) != p) continue;
            int64_t base = nd->shape == MB_SHC_COL ? c0 : r * S->cols + c0;
            if (nd->dtype == MB_F32) memcpy((float *)S->t->data[v] + base, S->buf[v], (size_t)len * sizeof(float));
            else
                for (int i = 0; i < len; i++) mb_store_f32(S->t->data[v], base + i, nd->dtype, S->buf[v][i]);
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
        if (is_rowval(nd) && at == p)
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
        if (!is_rowval(&g->nodes[v])) load_tile(S, v, r, 0, len);
    }
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        const mb_node *nd = &g->nodes[v];
        if (MB_OP_IS_ROW(nd->op)) {
            int sp = K->stat_pass[j];
            begin_stats(S, v);
            if (nd->op == MB_OP_SUM && K->online[j]) { /* its amax is complete: no rescaling */
                int m = g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[1];
                S->mprev[m] = S->mx[m];
            }
            stats_tile(S, j, sp, len, tmp);
            if ((nd->op == MB_OP_SOFTMAX || nd->op == MB_OP_LOG_SOFTMAX) && !K->online[j])
                stats_tile(S, j, sp + 1, len, tmp);
            if (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION) finish_stats(S, j);
            else library_tile(S, v, len, tmp);
            continue;
        }
        float as = (float)nd->scalar[0], bs = nd->scalar_cols ? (float)S->cols : (float)nd->scalar[1];
        const float *a = nd->arg[0] >= 0 ? operand(S, nd->arg[0], &as) : NULL;
        const float *b = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? operand(S, nd->arg[1], &bs) : NULL;
        if (is_rowval(nd)) mb_kern_op_apply(nd->op, NULL, as, NULL, bs, &S->scal[v], 1);
        else mb_kern_op_apply(nd->op, a, as, b, bs, S->buf[v], len);
    }
    for (int q = 0; q < K->n_writes; q++) {
        int v = K->writes[q];
        const mb_node *nd = &g->nodes[v];
        if (is_rowval(nd)) {
            mb_store_f32(S->t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype, S->scal[v]);
            continue;
        }
        int64_t base = nd->shape == MB_SHC_COL ? 0 : r * S->cols;
        if (nd->dtype == MB_F32) memcpy((float *)S->t->data[v] + base, S->buf[v], (size_t)len * sizeof(float));
        else
            for (int i = 0; i < len; i++) mb_store_f32(S->t->data[v], base + i, nd->dtype, S->buf[v][i]);
    }
}

int mb_kern_rows_onepass(const mb_kernel *K, int64_t cols)
{
    return K->passes > 1 && (double)cols * K->live_bytes_per_col <= (double)mb_kern_core_cache_bytes();
}

/* Runs kernel K over every row of t, rows split among the threads. */
static int run_rows(mb_kern_tensors *t, const mb_kernel *K, mb_err *err)
{
    const mb_graph *g = t->plan->g;
    const int nn = g->n_nodes;
    const int64_t rows = t->shape.rows;
    const int onepass = mb_kern_rows_onepass(K, t->shape.cols);
    int failed = 0;
#pragma omp parallel
    {
        rowstate S = {g, K, t, t->shape.cols, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        /* one pass keeps whole rows: buffers of cols floats */
        const size_t width = onepass ? (size_t)t->shape.cols : TILE;
        float *slab = malloc(((size_t)nn + 1) * width * sizeof(float));
        float *tmp = malloc(width * sizeof(float));
        S.buf = malloc((size_t)nn * sizeof(float *));
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
        for (int i = 0; ok && i < nn; i++) S.buf[i] = slab + (size_t)i * width;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            if (!ok) continue;
            for (int q = 0; q < K->n_reads; q++) { /* row values read: loaded once a row */
                int v = K->reads[q];
                const mb_node *nd = &g->nodes[v];
                if (is_rowval(nd))
                    S.scal[v] = mb_load_f32(t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype);
            }
            if (onepass) row_onepass(&S, r, tmp);
            else
                for (int p = 0; p < K->passes; p++) row_pass(&S, r, p, tmp);
        }
        free(slab); free(tmp); free(S.buf); free(S.scal); free(S.acc); free(S.acc2); free(S.mx); free(S.mprev);
    }
    if (failed) return mb_err_set(err, MB_ERUN, "out of memory");
    return MB_OK;
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
    if (!rc) rc = run_rows(t, &K, err);
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
    if (e != MB_KERN_EXEC_OPWISE || K->n_nodes <= 1) return run_rows(t, K, err);
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        int rc = mb_kern_ensure_storage(t, v, err);
        if (!rc) rc = run_node_alone(t, v, err);
        if (rc) return rc;
    }
    return MB_OK;
}

/* ---- float64 reference ---------------------------------------------------- */

/* The magnitude that went into an elementwise result (op_table.h's mag
 * column, as reference.c judges elementwise plans): sums of absolute values,
 * so that a result cancelling to near 0 is judged against its terms. */
static double mag_of(mb_op op, double v, double ma, double mb, double b)
{
    switch (mb_op_info_of(op)->mag) {
    case MB_MAG_SUM: return ma + mb;
    case MB_MAG_PROD: return ma * mb;
    case MB_MAG_QUOT: return b != 0 ? ma / fabs(b) : fabs(v);
    case MB_MAG_PASS: return ma;
    default: return fabs(v);
    }
}

/* Row r of the nodes order[0..cnt) in float64, in that order: full and
 * [cols] nodes into val[node][0..cols), row values into val[node][0]; their
 * magnitudes into mag[][] the same way. */
void mb_kern_rows_reference_row(const mb_kern_tensors *t, int64_t r, double **val, double **mag,
                                const int *order, int cnt)
{
    const mb_graph *g = t->plan->g;
    const int64_t C = t->shape.cols;
    for (int k = 0; k < cnt; k++) {
        int v = order[k];
        const mb_node *nd = &g->nodes[v];
        double *y = val[v];
        int rv = is_rowval(nd);
        int64_t len = rv ? 1 : C;
        if (nd->op == MB_OP_INPUT) {
            if (!t->data[v]) continue;
            int64_t base = nd->shape == MB_SHC_COL ? 0 : rv ? (nd->shape == MB_SHC_SCALAR ? 0 : r) : r * C;
            for (int64_t i = 0; i < len; i++) mag[v][i] = fabs(y[i] = mb_load_f32(t->data[v], base + i, nd->dtype));
            continue;
        }
        const double *mx = nd->arg[0] >= 0 ? mag[nd->arg[0]] : NULL;
        const double *mbv = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? mag[nd->arg[1]] : NULL;
        double *my = mag[v];
        const double *x = nd->arg[0] >= 0 ? val[nd->arg[0]] : NULL;
        int xr = nd->arg[0] >= 0 && is_rowval(&g->nodes[nd->arg[0]]);
        const double *b = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? val[nd->arg[1]] : NULL;
        int br = b && is_rowval(&g->nodes[nd->arg[1]]);
#define XI(i) (x ? x[xr ? 0 : (i)] : nd->scalar[0])
#define BI(i) (b ? b[br ? 0 : (i)] : nd->scalar_cols ? (double)C : nd->scalar[1])
#define MXI(i) (mx ? mx[xr ? 0 : (i)] : fabs(nd->scalar[0]))
#define MBI(i) (mbv ? mbv[br ? 0 : (i)] : fabs(nd->scalar[1]))
        double s = 0, s2 = 0, m = -INFINITY, ms = 0;
        switch (nd->op) {
        case MB_OP_SUM: case MB_OP_MEAN:
            for (int64_t i = 0; i < C; i++) s += XI(i), ms += MXI(i);
            y[0] = nd->op == MB_OP_MEAN ? s / (double)C : s;
            my[0] = nd->op == MB_OP_MEAN ? ms / (double)C : ms;
            break;
        case MB_OP_AMAX:
            for (int64_t i = 0; i < C; i++) m = XI(i) > m ? XI(i) : m;
            y[0] = m;
            my[0] = fabs(m);
            break;
        case MB_OP_SOFTMAX: case MB_OP_LOG_SOFTMAX:
            for (int64_t i = 0; i < C; i++) m = XI(i) > m ? XI(i) : m;
            for (int64_t i = 0; i < C; i++) s += exp(XI(i) - m);
            for (int64_t i = 0; i < C; i++) {
                y[i] = nd->op == MB_OP_SOFTMAX ? exp(XI(i) - m) / s : XI(i) - m - log(s);
                my[i] = nd->op == MB_OP_SOFTMAX ? y[i] : fabs(XI(i)) + fabs(m) + fabs(log(s));
            }
            break;
        case MB_OP_LAYER_NORM:
            for (int64_t i = 0; i < C; i++) s += XI(i);
            s /= (double)C;
            for (int64_t i = 0; i < C; i++) s2 += (XI(i) - s) * (XI(i) - s);
            s2 = 1.0 / sqrt(s2 / (double)C + nd->eps);
            for (int64_t i = 0; i < C; i++) {
                y[i] = (XI(i) - s) * s2 * BI(i);
                my[i] = (fabs(XI(i)) + fabs(s)) * s2 * fabs(BI(i));
            }
            break;
        case MB_OP_RMS_NORM:
            for (int64_t i = 0; i < C; i++) s += XI(i) * XI(i);
            s = 1.0 / sqrt(s / (double)C + nd->eps);
            for (int64_t i = 0; i < C; i++) {
                y[i] = XI(i) * s * BI(i);
                my[i] = fabs(y[i]);
            }
            break;
        default:
            for (int64_t i = 0; i < len; i++) {
                y[i] = mb_op_apply_f64(nd->op, XI(i), BI(i));
                my[i] = mag_of(nd->op, y[i], MXI(i), MBI(i), BI(i));
            }
            break;
        }
#undef XI
#undef BI
#undef MXI
#undef MBI
    }
}

int mb_kern_rows_verify(const mb_kern_tensors *t, unsigned poison_rep, double tol, mb_kern_check *out,
                        mb_err *err)
{
    const mb_plan *p = t->plan;
    const mb_graph *g = p->g;
    const int64_t C = t->shape.cols, R = t->shape.rows;
    const float pv = mb_kern_poison_value(poison_rep);
    memset(out, 0, sizeof *out);
    out->first_bad = -1;
    out->first_bad_node = -1;
    mb_dtype worst = MB_F32;
    for (int q = 0; q < p->n_results; q++) {
        mb_dtype dt = g->nodes[p->results[q]].dtype;
        if (mb_kern_default_tol(dt) > mb_kern_default_tol(worst)) worst = dt;
        if (!t->data[p->results[q]]) return mb_err_set(err, MB_EINPUT, "result node %d has no storage", p->results[q]);
    }
    out->tol = tol > 0 ? tol : mb_kern_default_tol(worst);
    int failed = 0;
    double max_err = 0;
    int64_t bad = 0, poisoned = 0, first = -1;
    int first_node = -1;
    double first_got = 0, first_want = 0;
    /* every node, backward ones after what they read (mb_kern_rows_order) */
    const int nv = g->n_nodes;
    int *order = malloc(((size_t)nv + 1) * sizeof *order);
    int n_order = order ? mb_kern_rows_order(g, order) : 0;
    /* long rows: one row at a time (a row of 2^22 doubles per node is 32 MiB) */
    int par = C <= ((int64_t)1 << 16);
#pragma omp parallel if (par)
    {
        double **val = malloc(2 * (size_t)nv * sizeof *val), **mag = val ? val + nv : NULL;
        double *slab = malloc(2 * (size_t)nv * (size_t)C * sizeof(double));
        int ok = val && slab && order;
        for (int v = 0; ok && v < 2 * nv; v++) val[v] = slab + (size_t)v * (size_t)C;
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(static) reduction(max : max_err) reduction(+ : bad, poisoned)
        for (int64_t r = 0; r < R; r++) {
            if (!ok) continue;
            mb_kern_rows_reference_row(t, r, val, mag, order, n_order);
            for (int q = 0; q < p->n_results; q++) {
                int v = p->results[q];
                const mb_node *nd = &g->nodes[v];
                int rv = is_rowval(nd);
                if (rv && nd->shape == MB_SHC_SCALAR && r > 0) continue;
                int64_t len = rv ? 1 : C, base = rv ? (nd->shape == MB_SHC_SCALAR ? 0 : r) : r * C;
                double scale = 0;
                for (int64_t i = 0; i < len; i++) scale = fabs(val[v][i]) > scale ? fabs(val[v][i]) : scale;
                for (int64_t i = 0; i < len; i++) {
                    float got = mb_load_f32(t->data[v], base + i, nd->dtype);
                    double want = val[v][i], den = fmax(fmax(fabs(want), mag[v][i]), 1e-3 * scale);
                    double e = den > 0 ? fabs(got - want) / den : fabs(got - want);
                    if (got == pv && want != pv) poisoned++;
                    if (!(e <= max_err)) max_err = isnan(e) ? INFINITY : e;
                    if (!(e <= out->tol)) {
                        bad++;
#pragma omp critical(mb_rows_first)
                        if (first < 0 || base + i < first) {
                            first = base + i;
                            first_node = v;
                            first_got = got;
                            first_want = want;
                        }
                    }
                }
            }
        }
        free(val);
        free(slab);
    }
    free(order);
    if (failed) return mb_err_set(err, MB_ERUN, "out of memory for the float64 reference");
    out->max_rel_err = max_err;
    out->bad = bad;
    out->poisoned = poisoned;
    out->first_bad = first;
    out->first_bad_node = first_node;
    out->first_got = first_got;
    out->first_want = first_want;
    out->passed = bad == 0 && poisoned == 0;
    return MB_OK;
}
