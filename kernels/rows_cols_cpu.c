/* rows_cols_cpu.c — the CPU's column kernels: a colsum (a [cols] weight's
 * gradient, the sum over the rows) runs its row nodes by rows, each thread
 * summing its rows' share, then the nodes after the sums once over the
 * columns; the reference sums every row's term the same way
 * (mb_kern_rows_reference_cols). Called by rows_run_cpu.c; takes rows_int.h's
 * tile steps. Does not run row kernels (rows_cpu.c) nor judge results. */
#include "rows_int.h"

#include <omp.h>
#include <stdlib.h>

/* Rows whose f32 partial sums a thread keeps before adding them into its
 * double sums: each column's f32 sum runs over at most 256 terms (bf16 and
 * f16 operands widen to f32 first, as PyTorch's reduce kernels accumulate in
 * float), the blocks in double, as the row sums' tiles are. */
#define COL_BLOCK_ROWS 256

/* The row loop of a column kernel: per row, its row nodes (elementwise, tile
 * by tile) and each colsum's operand added into the thread's partial sums
 * (part: f32, this block of rows; total: double, n_cs x cols each). */
static void column_rows(mb_kern_rowstate *S, const char *post, int64_t r0, int64_t r1, float *part, double *total)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    const int64_t C = S->cols;
    for (int64_t r = r0; r < r1; r++) {
        for (int q = 0; q < K->n_reads; q++) {
            int v = K->reads[q];
            const mb_node *nd = &g->nodes[v];
            if (mb_kern_is_rowval(nd))
                S->scal[v] = mb_load_f32(S->t->data[v], nd->shape == MB_SHC_SCALAR ? 0 : r, nd->dtype);
        }
        for (int64_t c0 = 0; c0 < C; c0 += MB_KERN_TILE) {
            int len = (int)(C - c0 < MB_KERN_TILE ? C - c0 : MB_KERN_TILE);
            for (int q = 0; q < K->n_reads; q++) {
                const mb_node *rd = &g->nodes[K->reads[q]];
                if (!mb_kern_is_rowval(rd) && rd->shape != MB_SHC_PART) mb_kern_row_load_tile(S, K->reads[q], r, c0, len);
            }
            for (int j = 0, cs = 0; j < K->n_nodes; j++) {
                int v = K->nodes[j];
                const mb_node *nd = &g->nodes[v];
                if (MB_OP_IS_COLUMN(nd->op) && g->nodes[nd->arg[0]].shape == MB_SHC_PART) { /* summed after the rows */
                    cs++;
                    continue;
                }
                if (MB_OP_IS_COLUMN(nd->op)) {
                    float xs = 0, *acc = part + (size_t)cs++ * (size_t)C + c0;
                    const float *x = mb_kern_row_operand(S, nd->arg[0], &xs);
                    for (int i = 0; i < len; i++) acc[i] += x ? x[i] : xs;
                    continue;
                }
                if (!post[j]) mb_kern_row_node_apply(S, v, c0 == 0, len);
            }
            for (int q = 0; q < K->n_writes; q++) { /* row nodes needed outside */
                int v = K->writes[q], j = 0;
                while (K->nodes[j] != v) j++;
                if (!post[j] && !mb_kern_is_rowval(&g->nodes[v])) mb_kern_row_store_tile(S, v, r, c0, len);
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
static void column_finish(mb_kern_rowstate *S, const char *post, const double *total)
{
    const mb_kernel *K = S->K;
    const mb_graph *g = S->g;
    const int64_t C = S->cols;
    for (int q = 0; q < K->n_reads; q++) {
        int v = K->reads[q];
        const mb_node *nd = &g->nodes[v];
        if (nd->shape == MB_SHC_COL) mb_kern_row_load_tile(S, v, 0, 0, (int)C);
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
        mb_kern_row_node_apply(S, v, 1, C);
    }
    for (int q = 0; q < K->n_writes; q++) {
        int v = K->writes[q], j = 0;
        while (K->nodes[j] != v) j++;
        if (post[j]) mb_kern_row_store_tile(S, v, 0, 0, (int)C);
    }
}

/* Runs column kernel K of t: its rows split among the threads, each summing
 * its rows' share of every colsum, the sums added together, then the nodes
 * after them once. */
int mb_kern_rows_run_columns(mb_kern_tensors *t, const mb_kernel *K, const char *post, mb_err *err)
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
    int failed = !total, has_rows = 0;
    /* a sum of a row kernel's per-block partial sums (PART): its blocks'
     * rows added in double; any other colsum sums the rows below */
    for (int j = 0, cs = 0; j < K->n_nodes && !failed; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]];
        if (!MB_OP_IS_COLUMN(nd->op)) continue;
        double *tt = total + (size_t)cs++ * (size_t)C;
        if (g->nodes[nd->arg[0]].shape != MB_SHC_PART) {
            has_rows = 1;
            continue;
        }
        const float *pp = (const float *)t->data[nd->arg[0]];
        const int64_t blocks = t->shape.blocks > 1 ? t->shape.blocks : 1;
        for (int64_t b = 0; b < blocks; b++)
            for (int64_t c = 0; c < C; c++) tt[c] += pp[b * C + c];
    }
#pragma omp parallel if (has_rows && !failed)
    {
        mb_kern_rowstate S = {g, K, t, C, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
        const size_t width = MB_KERN_TILE;
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
            mb_kern_rowstate F = S;
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
