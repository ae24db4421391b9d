/* kernels_int.h — shared by the files of kernels/ only: vectorised tile
 * primitives (vecmath.c), a kernel lowered for the tile loop and its compiled
 * form (jit_cpu.c), the f32 side of the checks (ref_f32.c), and what the
 * executors and the checks share. Not a public header.
 * The C files call one way, down, never up or around:
 *   checks     reference.c -> rows_verify.c, rows_bwd_cpu.c -> rows_ref.c
 *   executors  exec_cpu.c -> rows_run_cpu.c -> rows_cpu.c, rows_cols_cpu.c
 *              (their tile steps inline in rows_int.h); both -> jit_*.c
 *   bottom     exec_common.c, vecmath.c, ref_f32.c: call no other file of
 *              kernels/, and any file above may call them. */
#ifndef MB_KERNELS_INT_H
#define MB_KERNELS_INT_H

#include "kernels.h"

#ifdef __cplusplus
extern "C" { /* the CUDA lowering (cuda_cols.cu) calls the column rule */
#endif

/* out[i] = op(a[i], b[i]) for i < len; a == NULL means the scalar as, b == NULL
 * the scalar bs (unary ops ignore b). out may alias a or b. f32 arithmetic,
 * transcendental functions from the vector math library (SLEEF) when built with it. */
void mb_kern_vec_apply(mb_op op, const float *a, float as, const float *b, float bs,
                       float *out, int64_t len);

/* sin_out[i] = sin(a[i]), cos_out[i] = cos(a[i]) with one shared range
 * reduction (a == NULL: the scalar as). Outputs must not alias a. */
void mb_kern_vec_sincos(const float *a, float as, float *sin_out, float *cos_out, int64_t len);

/* dst[i] = src[i] widened to f32 (src already offset to the first element). */
void mb_kern_vec_load(const void *src, mb_dtype t, float *dst, int64_t len);

/* dst[i] = src[i] rounded to t (nearest even); nt: non-temporal stores when the
 * destination is 64-byte aligned. */
void mb_kern_vec_store(const float *src, void *dst, mb_dtype t, int64_t len, int nt);

/* dst[i] = src[i] (same dtype t), with non-temporal stores when nt. */
void mb_kern_vec_copy(const void *src, void *dst, mb_dtype t, int64_t len, int nt);

/* Fence after non-temporal stores (no-op without them). */
void mb_kern_vec_sfence(void);

/* One evaluated node of a kernel lowered for the tile loop (exec_cpu.c):
 * values 0..n_reads-1 are the kernel's reads, value n_reads + j is node j's. */
typedef struct mb_kern_pnode {
    mb_op op;
    int va, vb;     /* operand values, -1 for a scalar */
    float sa, sb;
    int pair;       /* sin or cos with a partner of the other op on the same
                       operand: the partner's value (this node evaluates both
                       with one sincos), else -1 */
    int skip;       /* the partner of an earlier node's pair: already computed */
} mb_kern_pnode;

/* Most reads, and most writes, of a kernel that is compiled. */
#define MB_KERN_JIT_IO_MAX MB_COMPILED_IO_MAX /* the model costs by the same rule */

/* A compiled kernel over one tile: src[r] and dst[w] point at the tile's
 * first element of each f32 read and write; nt: streaming stores. */
typedef void (*mb_kern_tile_fn)(const float *const *src, float *const *dst, int64_t len, int nt);

/* The compiled tile function of a kernel with n_reads f32 reads, nodes, and
 * writes of values w_val (all f32), generated as C and built with the
 * configured compiler on first use, cached on disk by the source's hash and
 * in this process (mb_kern_jit_configure). NULL when the JIT is off, an op
 * has no vector form, no compiler or cache directory is usable, or the build
 * failed: the caller interprets. Not thread-safe (call from one thread). */
mb_kern_tile_fn mb_kern_jit_lookup(int n_reads, const mb_kern_pnode *nodes, int n_nodes,
                                   const int *w_val, int n_writes);

/* The C source mb_kern_jit_lookup builds for the same kernel (malloc'ed), or
 * NULL (an op without a vector form, a non-finite scalar, out of memory);
 * and the compiler and flags it builds with ("" without SLEEF: no JIT).
 * For tests and the generator's fuzz target (tests/fuzz/fuzz_jit.c). */
char *mb_kern_jit_source(int n_reads, const mb_kern_pnode *nodes, int n_nodes, const int *w_val,
                         int n_writes);
const char *mb_kern_jit_build_cc(void);
const char *mb_kern_jit_build_cflags(void);

/* A growing text buffer for generated code (jit_cpu.c): oom set once an
 * allocation failed (the text is then incomplete; the caller frees p). */
typedef struct mb_kern_sbuf {
    char *p;
    size_t len, cap;
    int oom;
} mb_kern_sbuf;
void mb_kern_sb_printf(mb_kern_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The function symbol of the object built from text (malloc'ed C source,
 * freed here; NULL gives NULL), compiled and cached as mb_kern_jit_lookup's
 * tile functions are; NULL when the JIT is off or the build failed. Not
 * thread-safe. */
void *mb_kern_jit_symbol(char *text, const char *symbol);

/* The text of vec_ops.h, which generated code includes. */
extern const char mb_kern_vec_ops_text[];

/* A compiled row kernel (jit_rows.c) over rows [r0, r1): data[v] is graph
 * node v's tensor (every read and write f32), own[v] cols floats of this
 * thread's for node v (kept values of a one-pass kernel; unused otherwise),
 * nt: streaming stores for full writes. */
typedef void (*mb_kern_rows_fn)(void *const *data, float *const *own, int64_t r0, int64_t r1, int64_t cols,
                                int nt);

/* The compiled form of row kernel K of graph g: keep 1 for one pass over a
 * row kept in the core's cache (each value evaluated once, kept in own[]),
 * 0 for the passes K makes, each re-reading its inputs and recomputing what
 * it needs. NULL, and the caller interprets, when the JIT is off or fails,
 * or K has what the generator does not form: a read or write not in f32, an
 * op without a vector form, a row op over row values, a column sum, or (keep
 * 0) an online sum. Not thread-safe. */
mb_kern_rows_fn mb_kern_jit_rows_lookup(const mb_graph *g, const mb_kernel *K, int keep);
/* The C source mb_kern_jit_rows_lookup builds (malloc'ed), or NULL. */
char *mb_kern_jit_rows_source(const mb_graph *g, const mb_kernel *K, int keep);

/* ---- the float32 side of the reference check (ref_f32.c) ------------------ */

/* What correct f32 evaluation of a graph can give at one element: per node,
 * v32 its value evaluated in f32 from the stored inputs, err a bound on
 * |f32 value - float64 value| (each op's own rounding carried through the
 * graph by its float64 math at the operands moved by their bounds: the data's
 * condition number; infinity where unbounded); out_of_range: 1 when a value
 * (float64) lies beyond its dtype's finite range or among its subnormals. */
typedef struct mb_kern_f32_elem {
    double *err;  /* g->n_nodes entries, the caller's */
    float *v32;   /* g->n_nodes entries, the caller's */
    int out_of_range;
} mb_kern_f32_elem;

/* Fills e at one element from vals, the float64 reference of every node there
 * (inputs as stored), evaluating the cnt nodes of order (operands first). */
void mb_kern_f32_bound(const mb_graph *g, const int *order, int cnt, const double *vals,
                       mb_kern_f32_elem *e);

/* Largest finite value of dtype t (FLT_MAX, 65504, bf16's). */
double mb_kern_dtype_max(mb_dtype t);

/* Verdicts of mb_kern_f32_judge. */
enum { MB_KERN_F32_OFF = 0, MB_KERN_F32_COND = 1, MB_KERN_F32_RANGE = 2 };

/* Judges got, result node's value stored as dt, which is off the float64
 * want by more than tol x den: MB_KERN_F32_OFF when no correct f32
 * evaluation gives it (a kernel bug); else what explains it:
 * MB_KERN_F32_RANGE when f32's range does (an overflow, underflow or
 * non-finite value where float64 has a finite one), MB_KERN_F32_COND when
 * the condition number does (|got - want| <= tol x den + 2 err, or got
 * within tol x den of the f32 evaluation). */
int mb_kern_f32_judge(const mb_kern_f32_elem *e, int node, mb_dtype dt, double got, double want,
                      double den, double tol);

/* ---- what the executors and the checks share (exec_common.c) ------------- */

/* 1 for a row value: one a row ([rows, 1], [rows]) or one in all (a scalar). */
static inline int mb_kern_is_rowval(const mb_node *nd)
{
    return nd->shape == MB_SHC_ROW || nd->shape == MB_SHC_ROWV || nd->shape == MB_SHC_SCALAR;
}

/* The element where row r's values of a full, [cols] or GCOL tensor node
 * v start (cols a row): r x cols, 0, or its group row's (mb_graph_group). */
static inline int64_t mb_kern_row_base(const mb_graph *g, int v, int64_t r, int64_t cols)
{
    const mb_node *nd = &g->nodes[v];
    if (nd->shape == MB_SHC_COL) return 0;
    if (nd->shape != MB_SHC_GCOL) return r * cols;
    int64_t inner, outer;
    mb_graph_group(g, v, &inner, &outer);
    return (r / inner) % outer * cols;
}

/* 1 when kernel K reads or evaluates a GCOL tensor: the row interpreter runs
 * it (no compiled form indexes one). */
static inline int mb_kern_has_gcol(const mb_graph *g, const mb_kernel *K)
{
    for (int j = 0; j < K->n_nodes; j++)
        if (g->nodes[K->nodes[j]].shape == MB_SHC_GCOL) return 1;
    for (int q = 0; q < K->n_reads; q++)
        if (g->nodes[K->reads[q]].shape == MB_SHC_GCOL) return 1;
    return 0;
}

/* Gives node i storage (its shape's elements) if it has none, poisoned. */
int mb_kern_ensure_storage(mb_kern_tensors *t, int i, mb_err *err);
/* The tolerance a check of p's results uses: tol when > 0, else
 * mb_kern_default_tol of the result dtype that allows the most. */
double mb_kern_check_tol(const mb_plan *p, double tol);
/* post[i] = 1 for g's column reductions and every node reading one (their
 * values are sums over the rows, not a row's); returns how many. */
int mb_kern_col_post(const mb_graph *g, char *post);
/* post[j] = 1 for the nodes of kernel K evaluated once over the columns
 * after its row loop: its colsums and the nodes after them (graph_post, from
 * mb_kern_col_post); in a kernel whose nodes are all [cols], every node.
 * Returns 1 when K has any (a column kernel: the CPU's column executor and
 * the CUDA column evaluator run it), 0 for a row kernel. */
int mb_kern_col_phase(const mb_graph *g, const mb_kernel *K, const char *graph_post, char *post);

/* ---- the row executor (rows_run_cpu.c) ------------------------------------ */

/* Kernel k of t's plan (a plan with row operations) by rows; OPWISE runs
 * each node alone over whole arrays. */
int mb_kern_rows_run_kernel(mb_kern_tensors *t, int k, mb_kern_exec e, mb_err *err);
/* 1 when row kernel K of t's plan runs compiled (jit_rows.c; may build it). */
int mb_kern_rows_compiled(const mb_kern_tensors *t, const mb_kernel *K);

/* ---- the float64 reference of row plans (rows_ref.c) ---------------------- */

/* Every node of g in an order that evaluates each after its operands: the
 * forward nodes first, in their own order. Returns the count. */
int mb_kern_rows_order(const mb_graph *g, int *order);
/* Row r of nodes order[0..cnt) in float64: full and [cols] values into
 * val[node][0..cols), row values into val[node][0], magnitudes into mag the
 * same way; inputs are loaded from t. */
void mb_kern_rows_reference_row(const mb_kern_tensors *t, int64_t r, double **val, double **mag,
                                const int *order, int cnt);
/* The [cols] values of those nodes in float64 into val[node][0..cols) (and
 * their magnitudes into mag): each colsum summed over every row of the nodes
 * of order[0..cnt) it reads, then the nodes after it; the other nodes hold
 * row 0's values. 0, or -1 when out of memory. */
int mb_kern_rows_reference_cols(const mb_kern_tensors *t, double **val, double **mag, const int *order, int cnt);

/* ---- the checks of row plans (rows_verify.c, rows_bwd_cpu.c) -------------- */

/* mb_kern_verify for plans with row operations: every result element
 * against float64 (rows_verify.c). */
int mb_kern_rows_verify(const mb_kern_tensors *t, unsigned poison_rep, double tol, mb_kern_check *out,
                        mb_err *err);
/* mb_kern_gradcheck for graphs with row operations (rows_bwd_cpu.c). */
int mb_kern_rows_gradcheck(const mb_kern_tensors *t, int n_points, double *max_err, int *passed, mb_err *err);

#ifdef __cplusplus
}
#endif

#endif
