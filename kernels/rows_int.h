/* rows_int.h — shared by the row executor's files only (rows_run_cpu.c,
 * rows_cpu.c, rows_cols_cpu.c): a thread's state on one row kernel, the tile
 * steps every row and column loop takes (small, inline), and the loops each
 * file gives the others. The checks (rows_ref.c, rows_verify.c) need none. */
#ifndef MB_ROWS_INT_H
#define MB_ROWS_INT_H

#include "kernels_int.h"
#include "mb_ops.h"

/* Per-thread state of one kernel on one row. */
typedef struct mb_kern_rowstate {
    const mb_graph *g;
    const mb_kernel *K;
    const mb_kern_tensors *t;
    int64_t cols;
    float **buf;     /* per graph node: its values now (full and [cols] values):
                        own[v], or an f32 read where it lies */
    float **own;     /* per graph node: MB_KERN_TILE (or cols) floats of this thread's */
    float *scal;     /* per graph node: its value for this row (row values) */
    double *acc, *acc2; /* reductions and library statistics */
    float *mx;       /* running max (amax, softmax) */
    float *mprev;    /* an amax's value before the current tile (online sums) */
    char *in_k;      /* node evaluated by K */
    int64_t part_row; /* the block of the rows it runs: the row of each PART
                        tensor (a colsum's partial sums) it adds them into */
} mb_kern_rowstate;

/* Operand v at the tile: its buffer, or NULL with its value in *sv (a row
 * value; v < 0, a scalar: *sv left as it is). */
static inline const float *mb_kern_row_operand(mb_kern_rowstate *S, int v, float *sv)
{
    if (v < 0) return NULL;
    if (mb_kern_is_rowval(&S->g->nodes[v])) { *sv = S->scal[v]; return NULL; }
    return S->buf[v];
}

/* Elementwise node v over len values of its buffer (from the tile start its
 * operands' buffers point at), or, a row value, once a row (first: the
 * row's first tile). */
static inline void mb_kern_row_node_apply(mb_kern_rowstate *S, int v, int first, int64_t len)
{
    const mb_node *nd = &S->g->nodes[v];
    if (nd->shape == MB_SHC_PART) return; /* added into its block's row as it is written */
    float as = (float)nd->scalar[0], bs = nd->scalar_cols ? (float)S->cols : (float)nd->scalar[1];
    const float *a = nd->arg[0] >= 0 ? mb_kern_row_operand(S, nd->arg[0], &as) : NULL;
    const float *b = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0 ? mb_kern_row_operand(S, nd->arg[1], &bs) : NULL;
    if (!mb_kern_is_rowval(nd)) mb_kern_op_apply(nd->op, a, as, b, bs, S->buf[v], len);
    else if (first) mb_kern_op_apply(nd->op, NULL, as, NULL, bs, &S->scal[v], 1);
}

/* Read v's tile [c0, c0 + len) of row r (full or [cols]): an f32 one where
 * it lies (S->buf[v] points there; reads are never written), others widened
 * into S->own[v]. */
static inline void mb_kern_row_load_tile(mb_kern_rowstate *S, int v, int64_t r, int64_t c0, int len)
{
    const mb_node *nd = &S->g->nodes[v];
    const void *src = S->t->data[v];
    int64_t base = mb_kern_row_base(S->g, v, r, S->cols) + c0;
    if (nd->dtype == MB_F32) {
        S->buf[v] = (float *)src + base;
        return;
    }
    S->buf[v] = S->own[v];
    mb_kern_vec_load((const char *)src + base * (int64_t)mb_dtype_bytes(nd->dtype), nd->dtype, S->buf[v], len);
}

/* Node v's tile [c0, c0 + len) of row r out to its tensor; a colsum's
 * partial sums (PART, f32) its operand's tile added into the block's row. */
static inline void mb_kern_row_store_tile(mb_kern_rowstate *S, int v, int64_t r, int64_t c0, int len)
{
    const mb_node *nd = &S->g->nodes[v];
    if (nd->shape == MB_SHC_PART) {
        float xs = 0;
        const float *x = mb_kern_row_operand(S, nd->arg[0], &xs);
        float *acc = (float *)S->t->data[v] + S->part_row * S->cols + c0;
        for (int i = 0; i < len; i++) acc[i] += x ? x[i] : xs;
        return;
    }
    int64_t base = mb_kern_row_base(S->g, v, r, S->cols) + c0;
    int nt = nd->shape == MB_SHC_FULL && S->t->n * (int64_t)mb_dtype_bytes(nd->dtype) >= S->t->nt_min_bytes;
    mb_kern_vec_store(S->buf[v], (char *)S->t->data[v] + base * (int64_t)mb_dtype_bytes(nd->dtype), nd->dtype,
                      len, nt);
}

/* One pass p of K's passes over row r (rows_cpu.c). tmp: MB_KERN_TILE
 * floats of the thread's. */
void mb_kern_row_pass(mb_kern_rowstate *S, int64_t r, int p, float *tmp);
/* Row r in one pass, every value of the row kept (rows_cpu.c): S->own[v]
 * and tmp of cols floats. */
void mb_kern_row_kept_pass(mb_kern_rowstate *S, int64_t r, float *tmp);
/* Column kernel K of t (rows_cols_cpu.c): post from mb_kern_col_phase. */
int mb_kern_rows_run_columns(mb_kern_tensors *t, const mb_kernel *K, const char *post, mb_err *err);

#endif
