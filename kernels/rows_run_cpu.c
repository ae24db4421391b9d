/* rows_run_cpu.c — the CPU executor of plans with row operations: how each
 * kernel runs, and the threads over its rows (each thread takes whole rows).
 * A row kernel runs compiled (jit_rows.c) or interpreted, in one pass over
 * rows kept in the core's cache or in model/passes.c's tiled passes
 * (rows_cpu.c); a kernel of row values alone as one vector op a node; a
 * column kernel by columns (rows_cols_cpu.c). Op at a time runs every node as
 * a kernel of its own over whole arrays. Called by exec_cpu.c's
 * mb_kern_run_kernel. Does not judge results (rows_verify.c). */
#include "rows_int.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

int mb_kern_rows_onepass(const mb_kernel *K, int64_t cols)
{
    return K->passes > 1 && (double)cols * K->live_bytes_per_col <= (double)mb_kern_core_cache_bytes();
}

/* Most rows a compiled row kernel is called for at once. */
#define JIT_BLOCK_ROWS 64

/* The compiled form of row kernel K (jit_rows.c): a kernel with a row op,
 * or of two nodes or more (a lone elementwise op is one vector primitive a
 * tile already, as exec_cpu.c rules), at most MB_KERN_JIT_IO_MAX reads and
 * writes (model/lower.c's mb_kernel_compiled costs by the same); NULL:
 * interpret. */
static mb_kern_rows_fn rows_jit(const mb_graph *g, const mb_kernel *K, int onepass)
{
    int row_op = 0;
    for (int j = 0; j < K->n_nodes; j++) row_op |= MB_OP_IS_ROW(g->nodes[K->nodes[j]].op);
    if ((K->n_nodes < 2 && !row_op) || K->n_reads > MB_KERN_JIT_IO_MAX || K->n_writes > MB_KERN_JIT_IO_MAX ||
        mb_kern_has_gcol(g, K))
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

/* A kernel of GCOL nodes alone, of one run of leading dimensions, runs over
 * its own rows only: row i x *inner of the full shape, i < *outer, is its
 * row i (mb_graph_group); 0 for another kernel (every row). */
static int gcol_rows(const mb_graph *g, const mb_kernel *K, int64_t *inner, int64_t *outer)
{
    for (int j = 0; j < K->n_nodes; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]], *n0 = &g->nodes[K->nodes[0]];
        if (nd->shape != MB_SHC_GCOL || nd->grp_lo != n0->grp_lo || nd->grp_hi != n0->grp_hi) return 0;
    }
    if (K->n_nodes) mb_graph_group(g, K->nodes[0], inner, outer);
    return K->n_nodes > 0;
}

/* Row r of K, interpreted: its row values read, then one pass or its passes. */
static void run_row(mb_kern_rowstate *S, int64_t r, int onepass, float *tmp)
{
    const mb_kernel *K = S->K;
    for (int q = 0; q < K->n_reads; q++) { /* row values read: loaded once a row */
        int v = K->reads[q];
        const mb_node *nd = &S->g->nodes[v];
        if (mb_kern_is_rowval(nd))
            S->scal[v] = mb_load_f32(S->t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype);
    }
    if (onepass) mb_kern_row_kept_pass(S, r, tmp);
    else
        for (int p = 0; p < K->passes; p++) mb_kern_row_pass(S, r, p, tmp);
}

/* Blocks of rows K sums a colsum's operand over (it writes PART tensors:
 * each zeroed here, block b's partial sums its row b), else 0. */
static int64_t part_blocks(mb_kern_tensors *t, const mb_kernel *K)
{
    int64_t blocks = 0;
    for (int q = 0; q < K->n_writes; q++)
        if (t->plan->g->nodes[K->writes[q]].shape == MB_SHC_PART) {
            blocks = t->shape.blocks > 1 ? t->shape.blocks : 1;
            memset(t->data[K->writes[q]], 0, (size_t)(blocks * t->shape.cols) * sizeof(float));
        }
    return blocks;
}

/* Runs kernel K over every row of t, rows split among the threads (by
 * blocks of consecutive rows when it sums partial sums, a block a thread's
 * at a time). */
static int run_rows(mb_kern_tensors *t, const mb_kernel *K, mb_err *err)
{
    const mb_graph *g = t->plan->g;
    const int nn = g->n_nodes;
    int64_t rows = t->shape.rows, step = 1; /* rows r = i x step, i < rows */
    if (gcol_rows(g, K, &step, &rows) == 0) rows = t->shape.rows, step = 1;
    const int onepass = mb_kern_rows_onepass(K, t->shape.cols);
    const mb_kern_rows_fn fn = rows_jit(g, K, onepass);
    const int64_t blocks = part_blocks(t, K);
    const int nt = t->n * (int64_t)sizeof(float) >= t->nt_min_bytes; /* compiled: f32 writes only */
    int failed = 0;
#pragma omp parallel
    {
        mb_kern_rowstate S = {g, K, t, t->shape.cols, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
        /* one pass keeps whole rows: buffers of cols floats */
        const size_t width = onepass ? (size_t)t->shape.cols : MB_KERN_TILE;
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
        if (fn && blocks) { /* compiled, summing partial sums: each PART
                               tensor's data[] the block's row */
            void **d = malloc(((size_t)nn + 1) * sizeof *d);
            if (!d) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp for schedule(static)
            for (int64_t b = 0; b < blocks; b++) {
                if (!d || !ok) continue;
                for (int i = 0; i < nn; i++)
                    d[i] = g->nodes[i].shape == MB_SHC_PART && t->data[i] ? (float *)t->data[i] + b * t->shape.cols
                                                                         : t->data[i];
                for (int64_t r0 = rows * b / blocks, end = rows * (b + 1) / blocks; r0 < end; r0 += JIT_BLOCK_ROWS)
                    fn(d, S.own, r0, r0 + JIT_BLOCK_ROWS < end ? r0 + JIT_BLOCK_ROWS : end, t->shape.cols, nt);
            }
            free(d);
        } else if (fn) { /* compiled: blocks of rows (the code prefetches a block's next
                     row), at least four a thread */
            int64_t br = rows / (4 * (int64_t)omp_get_num_threads());
            br = br < 1 ? 1 : br > JIT_BLOCK_ROWS ? JIT_BLOCK_ROWS : br;
#pragma omp for schedule(static)
            for (int64_t b = 0; b < (rows + br - 1) / br; b++) {
                int64_t r0 = b * br, r1 = r0 + br < rows ? r0 + br : rows;
                if (ok) fn(t->data, S.own, r0, r1, t->shape.cols, nt);
            }
        } else if (blocks) {
#pragma omp for schedule(static)
            for (int64_t b = 0; b < blocks; b++) {
                S.part_row = b;
                for (int64_t i = rows * b / blocks; ok && i < rows * (b + 1) / blocks; i++) run_row(&S, i, onepass, tmp);
            }
        } else
#pragma omp for schedule(static)
        for (int64_t i = 0; i < rows; i++)
            if (ok) run_row(&S, i * step, onepass, tmp);
        mb_kern_vec_sfence(); /* this thread's non-temporal stores, before the kernel ends */
        free(slab); free(tmp); free(S.buf); free(S.scal); free(S.acc); free(S.acc2); free(S.mx); free(S.mprev);
    }
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
    if (mb_kern_col_phase(g, K, graph_post, post)) rc = mb_kern_rows_run_columns(t, K, post, err);
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
