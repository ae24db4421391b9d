/* kernels.h — run a model plan for real on the CPU: tensor storage, the
 * op-at-a-time and blocked fused executors, and the float64 reference with its
 * checks (result error, finite-difference gradients).
 * It does not time anything or choose sizes: measure/ does. Per-element math
 * lives in mb_ops.h (shared with the CUDA kernels). */
#ifndef MB_KERNELS_H
#define MB_KERNELS_H

#include "membound_model.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a kernel of a plan is evaluated on the CPU.
 *  AUTO:    single-node kernels one pass over whole arrays, multi-node
 *           kernels blocked (what `measure` uses);
 *  OPWISE:  every node of every kernel is its own pass over whole arrays, with
 *           full-size temporaries for values inside a kernel (numpy style);
 *  BLOCKED: every kernel streams its reads in cache-sized tiles, evaluates all
 *           its nodes on the tile and writes only the kernel's writes. */
typedef enum mb_kern_exec {
    MB_KERN_EXEC_AUTO = 0,
    MB_KERN_EXEC_OPWISE,
    MB_KERN_EXEC_BLOCKED,
    MB_KERN_EXEC_COUNT
} mb_kern_exec;

const char *mb_kern_exec_name(mb_kern_exec e); /* "auto", "opwise", "blocked" */

/* Elements per tile of the blocked executor: 512 f32 = 2 KiB per live value
 * (a kernel of ~30 values stays in L1/L2). Small enough that the out-of-order
 * core overlaps one tile's stores with the next tile's loads: Zen 4 VM, one
 * thread, n = 2^25 f32, y = (1-s)*s*g: 512 -> 19.9 ms, 1024 -> 26.3 ms,
 * 2048 -> 27.9 ms (a plain one-loop kernel: 12.7 ms for a*b). */
#define MB_KERN_TILE 512

/* Storage of every tensor a plan moves through memory, n elements each in the
 * node's dtype (64-byte aligned). data[i] is NULL for values that stay inside
 * a kernel. The struct owns its arrays; the plan is borrowed and must outlive it. */
typedef struct mb_kern_tensors {
    const mb_plan *plan;
    int64_t n;            /* elements of a full tensor: rows x cols */
    mb_shape shape;       /* rank 1 ([n]) or 2: row statistics hold rows
                             elements, weights cols (mb_tensor_elems_at) */
    void **data;          /* plan->g->n_nodes entries */
    void **alloc_base;    /* what was allocated for each (data is staggered in it) */
    size_t alloc_bytes;   /* bytes held now (grows when OPWISE adds temporaries) */
    int64_t nt_min_bytes; /* tensors of this many bytes or more are written with
                             non-temporal stores (bypassing the cache, no
                             read-for-ownership): the last-level cache's size, which
                             such a tensor fills; INT64_MAX: never. Set by alloc,
                             callers may change it. */
} mb_kern_tensors;

/* Bytes mb_kern_tensors_alloc would allocate for plan p at n elements (for
 * refusing sizes that do not fit before allocating). */
int64_t mb_kern_plan_bytes(const mb_plan *p, int64_t n);
/* The most bytes running plan p at n with executor e holds at once: the
 * stored tensors, plus the full temporaries op-at-a-time gives the nodes of
 * multi-node kernels. -1 when out of memory. */
int64_t mb_kern_plan_peak_bytes(const mb_plan *p, int64_t n, mb_kern_exec e);

/* Allocates storage for p at n elements and fills inputs with
 * mb_kern_fill_inputs(t, 1) and every other tensor with the poison of rep 0
 * (first touch in parallel, as the executors partition work).
 * Tensors larger than llc_bytes (<= 0: mb_kern_llc_bytes()) are written with
 * non-temporal stores: at such sizes every write reaches DRAM anyway, and
 * streaming avoids reading the line first (Zen 4 VM, n = 2^25 f32 copy:
 * 52.8 GB/s streaming vs 37.0 GB/s plain stores). MB_ERUN when memory runs out. */
int mb_kern_tensors_alloc(const mb_plan *p, int64_t n, int64_t llc_bytes,
                          mb_kern_tensors *t, mb_err *err);
/* The same at a shape (each tensor sized by its shape class). A plan with row
 * operations runs on the row executor (kernels/rows_run_cpu.c): by rows, each
 * kernel making the passes over a row model/passes.c derives; its results
 * are verified against a float64 reference evaluated row by row (a [cols]
 * weight's gradient, a sum over the rows, over every row). */
int mb_kern_tensors_alloc_shape(const mb_plan *p, mb_shape shape, int64_t llc_bytes,
                                mb_kern_tensors *t, mb_err *err);
void mb_kern_tensors_free(mb_kern_tensors *t);

/* Fills every graph input (forward inputs and incoming gradients) with
 * deterministic, non-zero, varied values: uniform in [0.5, 2] for inputs that
 * feed log, sqrt, rsqrt, a division or a non-integer power, else in [-2, 2]
 * (incoming gradients in [-1, 1]). Values are rounded to the input's dtype. */
void mb_kern_fill_inputs(mb_kern_tensors *t, uint64_t seed);

/* Overwrites every stored non-input tensor with the sentinel of repetition rep
 * (a finite value no kernel of the lecture produces, different per rep). */
void mb_kern_poison(mb_kern_tensors *t, unsigned rep);
float mb_kern_poison_value(unsigned rep);

/* Runs kernel k of the plan (or every kernel, in order) on t.
 * MB_EINPUT if the plan is malformed (an operand neither read nor computed). */
int mb_kern_run_kernel(mb_kern_tensors *t, int k, mb_kern_exec e, mb_err *err);
int mb_kern_run_plan(mb_kern_tensors *t, mb_kern_exec e, mb_err *err);

/* Worker threads the executors use (OpenMP), and setting it (n <= 0: all cores). */
int mb_kern_threads(void);
void mb_kern_set_threads(int n);

/* Size of the last-level cache in bytes (sysconf, else sysfs, else 32 MiB). */
int64_t mb_kern_llc_bytes(void);
/* A core's own cache (sysfs level 2, else the largest below the LLC; 1 MiB
 * if none): where the row executor's one-pass rows stay between passes
 * (a CPU spec's onchip_kib). */
int64_t mb_kern_core_cache_bytes(void);
/* A core's level-1 data cache (sysfs), 0 when the system does not say. */
int64_t mb_kern_l1_cache_bytes(void);
/* 1 when the row executor runs kernel K (of a plan with row ops) at rows of
 * cols in one pass (whole rows kept, each node evaluated once): K makes
 * several passes and cols x K->live_bytes_per_col fits the core's cache; 0:
 * it makes K->passes tiled passes, recomputing what each needs. */
int mb_kern_rows_onepass(const mb_kernel *K, int64_t cols);

/* The executors' tile primitive, for calibration: out[i] = op(a[i], b[i]) for
 * i < len in f32; a == NULL means the scalar as, b == NULL the scalar bs. */
void mb_kern_op_apply(mb_op op, const float *a, float as, const float *b, float bs, float *out,
                      int64_t len);

/* The executors' sin/cos pair primitive, for calibration: sin_out[i] =
 * sin(a[i]) and cos_out[i] = cos(a[i]) for i < len, one shared range
 * reduction (what a kernel evaluating sin and cos of one operand runs). */
void mb_kern_sincos_apply(const float *a, float *sin_out, float *cos_out, int64_t len);

/* Softmax's exp, for calibration and its accuracy test: out[i] = exp(a[i])
 * for a[i] <= 0 as compiled row kernels evaluate softmax's exp(x - max)
 * (vec_ops.h's MB_V_EXP_NONPOS; the vector tail in op_math.h's scalar exp). */
void mb_kern_exp_nonpos_apply(const float *a, float *out, int64_t len);

/* Compiled fused kernels. A kernel of the blocked executor that evaluates
 * two or more nodes, reads and writes only f32 and uses ops with a vector
 * form (every op but relu, abs, step, sign, and pow other than x**1, x**2, x**3)
 * is generated as C and built with a C compiler on first use into a
 * per-user cache, keyed by a hash of its source, compiler, flags and target
 * CPU; later runs and processes load it from there (only from a folder and
 * files of this user's that nobody else can write: else it is compiled for
 * this run alone). Anything else, and every failure
 * (no compiler, no cache directory, a failed build), runs the interpreter.
 *  AUTO: compile when possible (the default);
 *  OFF:  always interpret. */
typedef enum mb_kern_jit_mode {
    MB_KERN_JIT_AUTO = 0,
    MB_KERN_JIT_OFF,
    MB_KERN_JIT_COUNT
} mb_kern_jit_mode;

/* Sets the mode, the compiler (NULL: the one that built membound; a name
 * without '/' is looked up in PATH) and the cache directory (NULL:
 * $XDG_CACHE_HOME/membound/jit, else ~/.cache/membound/jit, both as given to
 * mb_kern_jit_set_env; created 0700).
 * Copies the strings and zeroes the statistics; forgets the kernels loaded
 * so far when the compiler or the directory changes. Not thread-safe: call
 * before running kernels. */
void mb_kern_jit_configure(mb_kern_jit_mode mode, const char *cc, const char *cache_dir);
/* The compiler's deadline in wall seconds (<= 0: the default, 60 s). A
 * compiler past it, or one running when the process is interrupted
 * (mb_intr_note), is killed with its process group, its files removed; the
 * kernel is interpreted, the warning callback says so once, and nothing
 * more is compiled until the next mb_kern_jit_configure. Process-wide. */
void mb_kern_jit_set_timeout(double timeout_s);

/* The environment the default cache directory comes from: $XDG_CACHE_HOME
 * and $HOME (NULL or "": unset), copied. The library reads no environment
 * variable: until this is called both are unset, and without a configured
 * directory nothing is compiled (mb_kern_jit_why_not says so). Not
 * thread-safe: call before running kernels. */
void mb_kern_jit_set_env(const char *xdg_cache_home, const char *home);

/* Where the JIT says, in one line, that its cache folder or an object in it
 * was not used (another user's, writable by others, a link: model/'s
 * trusted-folder rule) and what it did instead; NULL (the default): says
 * nothing. Once per folder. */
void mb_kern_jit_set_warn(void (*warn)(const char *line));

/* Kernels built by the compiler, loaded from the disk cache, and failed
 * (interpreted instead) since the last mb_kern_jit_configure. */
typedef struct mb_kern_jit_stats {
    int compiled, loaded, failed;
} mb_kern_jit_stats;
void mb_kern_jit_get_stats(mb_kern_jit_stats *out);
/* Why the last kernel that failed to compile was interpreted (no cache
 * folder, no compiler, a failed build), or NULL when none failed since the
 * last mb_kern_jit_configure. Owned by the library; valid until the next
 * kernel is looked up. */
const char *mb_kern_jit_why_not(void);

/* What the blocked executor evaluates per element for kernel k of t's plan:
 * evaluated: ops run (a node equal to an earlier one of the kernel is not
 * evaluated again; a sin and a cos of one operand are one sincos); sincos:
 * such pairs among them; compiled: 1 when it runs compiled code. May build
 * the kernel's compiled form. MB_EINPUT for k out of range or a malformed plan. */
typedef struct mb_kern_eval_info {
    int evaluated, sincos, compiled;
} mb_kern_eval_info;
int mb_kern_kernel_info(const mb_kern_tensors *t, int k, mb_kern_eval_info *out, mb_err *err);

/* Name of the vector math in use, e.g. "sleef-avx512f" or "scalar-libm". */
const char *mb_kern_vector_isa(void);

/* ---- float64 reference and checks ------------------------------------------ */

/* Result of comparing a run with the float64 reference. */
typedef struct mb_kern_check {
    double max_rel_err;   /* max over results and elements (see mb_kern_verify),
                             the elements f32's range explains left out */
    double tol;           /* tolerance used */
    int64_t bad;          /* elements above tol that no correct f32 evaluation
                             gives (non-finite mismatches included; past 256
                             of them on a thread, the rest above tol unjudged) */
    int64_t poisoned;     /* elements still holding the poison */
    int64_t inaccurate;   /* elements above tol that correct f32 evaluation
                             gives: the math, not the kernel (mb_kern_verify) */
    int64_t out_of_range; /* of those, the ones f32's range explains */
    double inaccurate_max_err; /* largest finite error among them (0: none) */
    int64_t first_bad;    /* index of the first bad element, -1 if none */
    int first_bad_node;   /* result node of it, -1 if none */
    double first_got, first_want;
    int passed;           /* bad == 0 && poisoned == 0 */
} mb_kern_check;

/* Verdict of a check: OK within tol of float64 everywhere; INACCURATE passed,
 * with elements off float64 as correct f32 evaluation is (the input range
 * makes the expression ill-conditioned in f32, or f32 overflows where
 * float64 does not); FAILED a kernel bug or unwritten elements. */
typedef enum mb_kern_accuracy {
    MB_KERN_ACC_OK = 0,
    MB_KERN_ACC_INACCURATE,
    MB_KERN_ACC_FAILED
} mb_kern_accuracy;
mb_kern_accuracy mb_kern_check_accuracy(const mb_kern_check *ck);
const char *mb_kern_accuracy_name(mb_kern_accuracy a); /* "ok", "inaccurate", "failed" */

/* One line on an INACCURATE check into buf ("" otherwise): "inaccurate: the
 * input range makes this expression ill-conditioned in f32 (...)" or
 * "inaccurate: float32 overflows or underflows where float64 does not (...)". */
void mb_kern_check_note(const mb_kern_check *ck, char *buf, size_t bufsz);

/* Default relative tolerance of a plan's results for storage dtype t:
 * f32 1e-4, f16 1e-2, bf16 6e-2 (eager plans round every intermediate). */
double mb_kern_default_tol(mb_dtype t);

/* Evaluates the plan's graph in float64 at element i from the stored inputs
 * of t; vals receives one value per node (plan->g->n_nodes entries). */
void mb_kern_reference_elem(const mb_kern_tensors *t, int64_t i, double *vals);

/* Compares every result tensor of the plan (every element) with the float64
 * reference evaluated from t's inputs. Error of element i:
 * |got - ref| / max(|ref|, m, 1e-3 * max|ref| of that tensor), where m is
 * the magnitude that went into the element (the reference with every sum
 * over absolute values: a result that is zero in exact arithmetic is judged
 * against the terms that cancelled); NaN/inf count as equal only when the
 * reference gives the same. An element above tol is judged against what
 * correct f32 evaluation gives (kernels_int.h's mb_kern_f32_judge: the graph
 * evaluated in f32, and a bound carried from every op's rounding through the
 * graph): inaccurate when that explains it, else bad. poison_rep is the rep
 * whose sentinel marks unwritten elements. tol <= 0 uses mb_kern_default_tol. */
int mb_kern_verify(const mb_kern_tensors *t, unsigned poison_rep, double tol,
                   mb_kern_check *out, mb_err *err);

/* Finite-difference gradient check of a backward plan in float64, as
 * torch.autograd.gradcheck: at up to n_points elements, the reference's
 * input gradients against central differences of the forward outputs weighted
 * by the incoming gradients (|num - ana| <= 1e-5 + 1e-3 |ana|), leaving out
 * elements whose forward outputs lie beyond their dtype's range (float64's
 * differences of infinities judge nothing an f32 kernel computes).
 * *max_err gets max |num - ana| / (1e-5 + 1e-3 |ana|) (<= 1 passes).
 * MB_OK with *passed set; MB_EINPUT if the plan has no backward. */
int mb_kern_gradcheck(const mb_kern_tensors *t, int n_points, double *max_err,
                      int *passed, mb_err *err);

/* ---- GEMMs through the system's OpenBLAS (gemm_cpu.c) ----
 * Loaded with dlopen on first use (never linked: kernels/gemm_cpu.c says why). */

/* 1 when OpenBLAS is loaded; 0 when the build has none or it will not load. */
int mb_kern_blas_load(void);
/* OpenBLAS's configuration line and file, or why there is no BLAS. */
const char *mb_kern_blas_desc(void);
/* OpenBLAS's own threads (n <= 0: mb_kern_threads()). */
void mb_kern_blas_set_threads(int n);

/* C[m,n] = alpha op(A) op(B) + beta C, row-major f32, op(X) = X or X^T when
 * trans_x (A is m x k as op(A) sees it, lda its row stride as stored).
 * MB_ERUN without a BLAS, MB_EINPUT for a size below 1 or beyond the
 * BLAS's indices. */
int mb_kern_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc, mb_err *err);

/* The largest error of `samples` entries of C (the two corners, then
 * entries drawn from seed) against alpha op(A) op(B) (beta = 0) summed in
 * float64: |c - ref| / (|alpha| sum |a b|), INFINITY for a NaN or inf.
 * Within mb_kern_gemm_tol(k) a product is right; a wrong transpose or
 * stride gives errors near 1. */
double mb_kern_gemm_check(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha, const float *a,
                          int64_t lda, const float *b, int64_t ldb, const float *c, int64_t ldc, int samples,
                          uint64_t seed);
/* The worst-case relative error of an f32 dot product of k terms, (k + 2) 2^-24. */
double mb_kern_gemm_tol(int64_t k);

/* ---- the transformer MLP on the CPU (mlp_cpu.c) ----
 * GPT-2's gelu(x @ w1 + b1) @ w2 + b2 and Llama's (silu(x @ wg) * (x @ wu)) @ wd,
 * f32, forward, every GEMM through mb_kern_sgemm. gelu is the exact (erf) GELU
 * (op_math.h; F.gelu's default), silu F.silu. Two plans:
 *   EAGER  as PyTorch eager runs it: each GEMM over all tokens (nn.Linear's
 *          addmm: the bias broadcast into the output, then the GEMM with
 *          beta = 1), then each elementwise op its own pass over the whole
 *          hidden tensor (gelu; silu, then the multiply), out of place.
 *   FUSED  the tokens in panels of panel rows: for each panel its GEMMs into a
 *          panel-sized hidden buffer, the epilogue (bias and gelu; silu and
 *          the multiply) applied to it at once while it is in cache, then the
 *          second GEMM (its bias as the first's) from it: the whole hidden
 *          tensor is never written. Panel rule (mb_kern_mlp_panel_rows): the
 *          panel's hidden rows (1 or 2 tensors of d_ff f32) fill at most half
 *          of the last-level cache, in multiples of 16 rows, and at least
 *          MB_KERN_MLP_MIN_PANEL rows, all tokens at most. Not the L2: OpenBLAS
 *          packs the whole weight at every call (0.3.21 keeps no packed
 *          operand between calls), 4 d_model d_ff bytes read against
 *          2 P d_model d_ff FLOPs of the panel's GEMM: the packing's share is
 *          about 2 R / (P BW) for a kernel rate R and a bandwidth BW, and at
 *          R / BW = 10 FLOP/B (this Xeon guest: ~100 GFLOP/s, ~10 GB/s) an
 *          L2-sized panel (80 GPT-2 rows in 1 MiB) spends 25% of its time
 *          packing, 512 rows 4%. */
#define MB_KERN_MLP_MIN_PANEL 512
typedef enum { MB_KERN_MLP_GPT2, MB_KERN_MLP_LLAMA } mb_kern_mlp_kind;
typedef enum { MB_KERN_MLP_EAGER, MB_KERN_MLP_FUSED } mb_kern_mlp_plan;

/* One MLP: tokens x d_model in and out, d_ff hidden. cache_bytes: what the
 * fused plan's panel fills half of (0: this core's L2 x threads, sysconf,
 * 1 MiB x threads where unknown); panel_rows > 0 overrides the rule.
 * threads: OpenMP and BLAS threads (<= 0: mb_kern_threads()). fault: 0 in
 * use; tests set 1 (the fused epilogue skips the activation on the last
 * panel) or 2 (it skips b1 / the multiply by x @ wu there) to show the check
 * catches a wrong epilogue (in backward: the derivative's factor left
 * out on the last panel). backward: 1 to allocate the backward's tensors
 * too (mb_kern_mlp_backward). */
typedef struct mb_kern_mlp {
    mb_kern_mlp_kind kind;
    int64_t tokens, d_model, d_ff;
    int64_t cache_bytes;
    int64_t panel_rows;
    int threads;
    int fault;
    int backward;
} mb_kern_mlp;

/* The tensors, row-major f32, owned by the struct (mb_kern_mlp_alloc /
 * mb_kern_mlp_free). GPT-2: w1 [d_model, d_ff], b1 [d_ff], w2 [d_ff, d_model],
 * b2 [d_model]; Llama: wg, wu [d_model, d_ff], wd [d_ff, d_model] (b1, b2,
 * w2 NULL); h, u: the hidden tensors, [tokens, d_ff] (u Llama's only; the
 * fused plan uses their first panel rows); g: eager's activation output;
 * p: Llama's eager g * u; y [tokens, d_model]. What the eager forward leaves
 * in h, g, u and p is what PyTorch's autograd saves: GPT-2 h = x w1 + b1 and
 * g = gelu(h); Llama h = x wg, u = x wu, g = silu(h), p = g u.
 * With cfg->backward: dy [tokens, d_model] (filled like x), the gradients
 * dx, dw1, db1, dw2, db2 (GPT-2) or dx, dwg, dwu, dwd (Llama), each the
 * shape of its tensor, and dh, du [tokens, d_ff]: the hidden gradients. */
typedef struct mb_kern_mlp_bufs {
    float *x, *w1, *b1, *w2, *b2, *wg, *wu, *wd;
    float *h, *u, *g, *p, *y;
    float *dy, *dx, *dw1, *db1, *dw2, *db2, *dwg, *dwu, *dwd, *dh, *du;
} mb_kern_mlp_bufs;

/* Rows of a fused panel for cfg (its panel_rows, else the rule above). */
int64_t mb_kern_mlp_panel_rows(const mb_kern_mlp *cfg);
/* FLOPs of the GEMMs: 2 tokens d_model d_ff x 2 (GPT-2) or x 3 (Llama). */
double mb_kern_mlp_flops(const mb_kern_mlp *cfg);
/* Allocates and fills b for cfg: x, weights and biases uniform in
 * [-1, 1) x 1/sqrt(fan-in) (nn.Linear's scale) from seed. MB_EINPUT for a
 * size below 1 or beyond 2^40 elements, MB_ERUN without memory; b zeroed on
 * failure. */
int mb_kern_mlp_alloc(const mb_kern_mlp *cfg, mb_kern_mlp_bufs *b, uint64_t seed, mb_err *err);
void mb_kern_mlp_free(mb_kern_mlp_bufs *b);
/* Bytes mb_kern_mlp_alloc takes for cfg (its backward's tensors with
 * cfg->backward), before allocating: for admission against the host's memory. */
double mb_kern_mlp_bytes(const mb_kern_mlp *cfg);
/* y = the MLP of x under plan. MB_ERUN without a BLAS. */
int mb_kern_mlp_run(const mb_kern_mlp *cfg, mb_kern_mlp_plan plan, mb_kern_mlp_bufs *b, mb_err *err);
/* The backward from dy, after an EAGER forward of the same b (it reads
 * the saved tensors above), cfg->backward set at alloc. EAGER runs
 * PyTorch autograd's kernels: the weights' gradients as GEMMs over all
 * tokens (x^T dh ...), the input's (dh w1^T ...), the biases' as column
 * sums, and the activation's backward as its own passes over the whole
 * hidden gradient (GeluBackward; MulBackward's two products, then
 * SiluBackward). FUSED applies those elementwise steps to each token panel
 * of the hidden gradient right after the GEMM that makes it (dy w2^T, in
 * cache), so the hidden gradient is written once, already final; the
 * weights' and input's GEMMs then run as in EAGER. MB_EINPUT without the
 * backward's tensors, MB_ERUN without a BLAS. */
int mb_kern_mlp_backward(const mb_kern_mlp *cfg, mb_kern_mlp_plan plan, mb_kern_mlp_bufs *b, mb_err *err);
/* The backward's gradients against float64 on sampled entries (rows of dx
 * and entries of each weight and bias gradient, samples of each), as
 * mb_kern_mlp_check judges y: the largest |got - ref| / bound, the bound
 * carried through each step (Higham's gamma_n for every sum, the slopes of
 * the activation and its derivative, 4 ulps for each). <= 1 passes. */
double mb_kern_mlp_check_backward(const mb_kern_mlp *cfg, const mb_kern_mlp_bufs *b, int samples, uint64_t seed);
/* FLOPs of the backward's GEMMs: twice the forward's. */
double mb_kern_mlp_backward_flops(const mb_kern_mlp *cfg);

/* y against float64 on sampled rows (the first and last token, then rows
 * drawn from seed; columns likewise, cols per row): the largest
 * |y - ref| / bound, where bound is the entry's f32 error bound (Higham's
 * gamma_n on both products, the hidden error carried through the
 * activation's slope, 4 ulps for the activation itself). <= 1 passes;
 * INFINITY for a NaN or inf. */
double mb_kern_mlp_check(const mb_kern_mlp *cfg, const mb_kern_mlp_bufs *b, int rows, int cols, uint64_t seed);
/* ---- attention on the CPU (attn_cpu.c, attn_ref.c) ----
 * softmax(q k^T scale [+ causal mask]) v with scale = 1/sqrt(head_dim), f32,
 * q, k, v, o (and do, dq, dk, dv) of shape [batch, heads, seq, head_dim],
 * contiguous. Two plans, as model/attention.c lists their kernels: standard
 * (PyTorch eager's: GEMMs through mb_kern_sgemm, every seq x seq tensor
 * written whole) and flash (FlashAttention-2's tiled forward with online
 * softmax and its backward recomputing P from the log-sum-exp). */

typedef enum mb_kern_attn_plan { MB_KERN_ATTN_STANDARD = 0, MB_KERN_ATTN_FLASH, MB_KERN_ATTN_N_PLANS } mb_kern_attn_plan;

/* The kernels of both plans, named as model/attention.c names them. */
typedef enum mb_kern_attn_kernel {
    MB_KERN_ATTN_QK = 0,      /* "bmm q@k^T":   S = q k^T */
    MB_KERN_ATTN_SCALE,       /* "mul scale":   S' = S scale */
    MB_KERN_ATTN_MASK,        /* "add mask":    S'' = S' + mask ([seq, seq], 0 or -inf) */
    MB_KERN_ATTN_SOFTMAX,     /* "softmax":     P = softmax(S'') by rows */
    MB_KERN_ATTN_PV,          /* "bmm P@v":     o = P v */
    MB_KERN_ATTN_DP,          /* "bmm dO@v^T":  dP = do v^T */
    MB_KERN_ATTN_DV,          /* "bmm P^T@dO":  dv = P^T do */
    MB_KERN_ATTN_SMBWD,       /* "softmax bwd": dS = P o (dP - rowsum(dP o P)), one pass as
                               * PyTorch's CPU kernel (no dP o P written) */
    MB_KERN_ATTN_DSSCALE,     /* "mul dS*scale": dS' = dS scale */
    MB_KERN_ATTN_DQ,          /* "bmm dS@k":    dq = dS' k */
    MB_KERN_ATTN_DK,          /* "bmm q^T@dS":  dk = dS'^T q */
    MB_KERN_ATTN_FLASH_FWD,   /* "flash fwd":   o and the f32 log-sum-exp */
    MB_KERN_ATTN_FLASH_PREP,  /* "flash bwd prep": D = rowsum(do o o), dq = 0 */
    MB_KERN_ATTN_FLASH_BWD,   /* "flash bwd":   dq, dk, dv, recomputing P */
    MB_KERN_ATTN_DPP,         /* "mul dP*P":    G = dP o P, a GPU's softmax bwd then dS = G - P rowsum(G) */
    MB_KERN_ATTN_FLASH_DQ,    /* "flash bwd dq": dq from the f32 accumulator the GPU's atomics add into */
    MB_KERN_ATTN_N_KERNELS
} mb_kern_attn_kernel;

const char *mb_kern_attn_kernel_name(mb_kern_attn_kernel k); /* the model's name */
const char *mb_kern_attn_plan_name(mb_kern_attn_plan p);     /* "standard", "flash" */
/* The kernels plan p runs, in order, into ids (MB_KERN_ATTN_N_KERNELS
 * entries); returns how many (the mask only when causal, the backward's
 * only when backward). */
int mb_kern_attn_plan_kernels(mb_kern_attn_plan p, int causal, int backward, mb_kern_attn_kernel *ids);
/* The same on a GPU (attn_cuda.cu), as model/attention.c lists a GPU's:
 * standard's backward forms dP o P in a kernel of its own ("mul dP*P"),
 * flash's ends with "flash bwd dq". Host only: needs no GPU. */
int mb_kern_attn_plan_kernels_gpu(mb_kern_attn_plan p, int causal, int backward, mb_kern_attn_kernel *ids);

/* One attention's sizes and options. */
typedef struct mb_kern_attn_dims {
    int64_t batch, heads, seq, head_dim;
    int causal, backward;
} mb_kern_attn_dims;

/* FlashAttention's tiles on this CPU: Br query rows by Bc key columns, Bc =
 * 2 Br, both powers of two, the largest with Bc <= 512 whose working set a
 * thread keeps (forward: Q and O tiles 2 Br d, K and V tiles 2 Bc d, S and
 * P Br Bc; backward: Q, dO, dQ 3 Br d, K, V, dK, dV 4 Bc d, P and dS
 * 2 Br Bc; f32) fits half the core's own cache (mb_kern_core_cache_bytes:
 * the other half for the BLAS's packed panels), at least Br 8; each clipped
 * to seq. */
typedef struct mb_kern_attn_tiles {
    int64_t fwd_r, fwd_c, bwd_r, bwd_c;
    int64_t cache_bytes; /* the core's cache they were sized from */
} mb_kern_attn_tiles;
void mb_kern_attn_tiles_for(const mb_kern_attn_dims *d, int64_t core_cache_bytes, mb_kern_attn_tiles *out);

/* The tensors of one attention run, 64-byte aligned, owned by the struct.
 * Standard: nn[0..2] hold seq x seq tensors of every head (two forward,
 * three with backward: each kernel writes a fresh one, as PyTorch's
 * out-of-place ops, into the one no longer needed) and mask the [seq, seq]
 * causal mask; flash: lse (f32, [batch, heads, seq]) and dsum (D). */
typedef struct mb_kern_attn {
    mb_kern_attn_dims d;
    mb_kern_attn_plan plan;
    mb_kern_attn_tiles tiles;
    float *q, *k, *v, *o, *dout, *dq, *dk, *dv; /* dout..dv NULL without backward */
    float *lse, *dsum;                          /* flash */
    float *nn[3], *mask;                        /* standard */
    int s_buf, p_buf, dp_buf, ds_buf;    /* which nn holds what, for the next kernel */
    int64_t nt_min_bytes; /* outputs of this many bytes or more get non-temporal stores */
    int64_t bytes;        /* held */
} mb_kern_attn;

/* Bytes mb_kern_attn_alloc takes for plan p at d (for refusing sizes that do
 * not fit before allocating); -1 beyond 2^62. */
int64_t mb_kern_attn_bytes(const mb_kern_attn_dims *d, mb_kern_attn_plan p);
/* Allocates a run of plan p at d and fills it: q and k uniform in [-2, 2],
 * v and do in [-1, 1] from seed (the same values for both plans), outputs
 * NaN. Tiles from mb_kern_core_cache_bytes(). MB_EINPUT for a size below 1
 * or beyond 2^62 bytes, MB_ERUN when memory runs out. */
int mb_kern_attn_alloc(const mb_kern_attn_dims *d, mb_kern_attn_plan p, uint64_t seed, mb_kern_attn *a,
                       mb_err *err);
void mb_kern_attn_free(mb_kern_attn *a);
/* Fills the outputs (o, lse, dq, dk, dv and the seq x seq tensors) with NaN:
 * an element a run does not write fails the check. */
void mb_kern_attn_poison(mb_kern_attn *a);

/* Runs kernel id of a's plan (in plan order: each reads what the ones
 * before it wrote), or the plan's forward (and backward when a->d.backward).
 * The GEMMs run through mb_kern_sgemm: standard a product per (batch, head)
 * on OpenBLAS's mb_kern_threads() threads; flash inside one OpenMP region
 * over (batch, head, query tile) forward, (batch, head) backward, OpenBLAS
 * on one thread there. MB_ERUN without a BLAS, MB_EINPUT for a kernel not
 * of the plan. */
int mb_kern_attn_run_kernel(mb_kern_attn *a, mb_kern_attn_kernel id, mb_err *err);
int mb_kern_attn_run(mb_kern_attn *a, mb_err *err);

/* The float64 check of a run (attn_ref.c). Each element's error is
 * |got - ref| / mag, mag the sum of the absolute values of the terms that
 * went into it, in float64 (o: sum_j p_j |v_j|), over tol, the bound of f32
 * evaluation (mb_kern_attn_tol): <= 1 passes. */
typedef struct mb_kern_attn_check {
    double o_err, lse_err, dq_err, dk_err, dv_err; /* largest error / tol; lse flash only; -1 unchecked */
    double tol_fwd, tol_bwd;
    double fd_err;        /* finite differences: largest |num - got| / (1e-3 (|num| + g)), g the largest |num|; -1 none */
    int fd_points;        /* elements judged by finite differences */
    int64_t rows_checked; /* rows of o (and dq) compared */
    int full;             /* 1: every element compared */
    int64_t nonfinite;    /* results NaN or inf (unwritten: poisoned) */
    int passed;
} mb_kern_attn_check;

/* Compares a's results with the float64 reference: every element when
 * batch x heads x seq^2 x head_dim <= full_limit, else sample_rows rows
 * spread over the heads (the first and last rows, rows at tile edges, the
 * rest drawn from seed) for o, the lse and dq, and dk and dv at sample_rows
 * key rows of the last head (whose reference takes seq^2 head_dim). With
 * backward, fd_points finite differences of the float64 forward loss
 * sum(do o o) at elements of q (and of k and v when seq^2 head_dim <= 2^24)
 * against the run's gradients. MB_OK with out filled; MB_ERUN when memory
 * runs out. */
int mb_kern_attn_verify(const mb_kern_attn *a, double full_limit, int sample_rows, int fd_points, uint64_t seed,
                        mb_kern_attn_check *out, mb_err *err);
/* The bounds the check uses at d, for a row whose largest score magnitude
 * scale sum |q k| is smag: forward (2 (d + 2) smag + 2 seq + 2 tiles + 16) u,
 * backward twice that plus (2 d + 2 seq) u, u = 2^-24 (each term: a dot
 * product's gamma_n, Higham 3.1; exp's and the online rescales' roundings). */
void mb_kern_attn_tol(const mb_kern_attn_dims *d, double smag, double *tol_fwd, double *tol_bwd);

#ifdef __cplusplus
}
#endif
#endif
