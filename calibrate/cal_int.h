/* cal_int.h — shared inside calibrate/ only: the figures calibrate
 * interleaves and each file's probes. Not part of the public API.
 *   figure.c    the figures (warm-up, samples through measure's sample
 *               timer, rates)
 *   streams.c   bandwidth (copy, read, write) and FMA-peak probes
 *   ops.c       op rates: tile primitive, sincos, executor pass, compiled chains
 *   overlap.c   overlap of memory and compute, read streams
 *   knee.c      the last-level cache's knee
 *   touch.c     first touch of fresh allocations (a framework's eager outputs)
 *   spec.c      the spec a calibration gives, the rules that refuse one
 *   cpu.c       the sequence (mb_cal_cpu)
 *   cache.c     the per-host calibration cache
 *   choice.c    the spec a run uses (mb_cal_spec_get)
 *   cuda.c      the GPU's probes (mb_cal_cuda), summary.c the summary */
#ifndef MB_CAL_INT_H
#define MB_CAL_INT_H

#include "calibrate.h"
#include "kernels.h"

/* One figure of the calibration: one sample of fn per round, the rounds of
 * all figures interleaved so that a shared host's drift (memory bandwidth
 * swings by tens of percent over minutes here) spreads over every figure
 * alike; the figure is the median over rounds, its spread the CV. */
#define CAL_ROUNDS 7
#define CAL_ROUNDS_QUICK 3
/* a sample repeats fn for at least 2 ms: timer and fork/join noise below 1% */
#define CAL_SAMPLE_S 2e-3
/* a contended sample is taken again up to this often, then kept and counted */
#define CAL_RETRIES 4

typedef struct mb_cal_figure {
    const char *name;
    mb_meas_fn fn;
    void *ctx;
    double work;             /* bytes, elements or flops per call of fn */
    int inner;               /* calls per sample */
    double s[CAL_ROUNDS];    /* seconds per call */
    int ns, contended, retaken;
    mb_meas_fn before;       /* NULL, or untimed before each sample (on ctx) */
} mb_cal_figure;

/* Warm-up (page faults) and the calls a sample needs (CAL_SAMPLE_S). */
void mb_cal_figure_warm(mb_cal_figure *f);
/* One sample into f->s (mb_meas_sample_s, CAL_RETRIES). */
void mb_cal_figure_sample(mb_cal_figure *f, int threads);
/* work per second over the median sample (1e9/s); the CV into *spread when
 * larger (spread may be NULL). */
double mb_cal_figure_rate(const mb_cal_figure *f, double *spread);
/* Median seconds per call. */
double mb_cal_figure_median_s(const mb_cal_figure *f);

/* ---- streams.c ---- */
typedef struct mb_cal_stream_ctx {
    float *a, *b;
    int64_t n;
    volatile float sink;
} mb_cal_stream_ctx;
/* The vector ISA these probes were compiled for: "avx512f", "avx2" or
 * "scalar" (each must match the executors': the roofs are theirs). */
const char *mb_cal_streams_isa(void);
void mb_cal_copy_nt(void *stream_ctx);     /* b = a, non-temporal stores */
void mb_cal_copy_plain(void *stream_ctx);  /* b = a, ordinary stores */
/* The last-level cache's copy (cache_bandwidth_gbs): a plain copy of cc's
 * arrays, each sample after an untimed one, so it times them in the cache. */
mb_cal_figure mb_cal_cache_copy_figure(mb_cal_stream_ctx *cc);
void mb_cal_read_sum(void *stream_ctx);    /* sum of a */
void mb_cal_write_nt(void *stream_ctx);    /* b = 1.5, non-temporal */
void mb_cal_write_plain(void *stream_ctx); /* b = 1.5 + (i & 7) */

/* FMA peak: 8 independent vector chains per thread, register resident; flops
 * is set by each call. */
typedef struct mb_cal_fma_ctx {
    int64_t iters;
    volatile float sink;
    double flops;
} mb_cal_fma_ctx;
void mb_cal_fma_peak(void *fma_ctx);

/* ---- gemm.c ---- */
/* The f32 GEMM probe: C = A B, n x n x n, row-major, through cblas_sgemm.
 * 1024^3 (2.1 GFLOP, ~10 ms on 2 Sapphire Rapids vCPUs) is past the sizes
 * where OpenBLAS's small-matrix kernels and packing overheads weigh, and its
 * three 4 MiB operands fit neither a core's L2 (2 MiB there) nor stay out of
 * the LLC: the middle of the sizes bench/cpu_gemm.py judges it on (512 to
 * 4096, skinny, batched). Each sample follows an untimed product (the
 * figure's before): a round's streaming probes evict the operands, and a
 * product timed cold ran 8% under a warm one at 1024^3 on 2 threads, 25%
 * at 512^3, where `gemm --measure` and bench/cpu_gemm.py time products
 * back to back, warm. --quick runs it too (a fallback calibration is a
 * quick one: its GEMM rate then comes from the declared shape all the same,
 * at 3 rounds; ~30 ms more). */
#define MB_CAL_GEMM_N MB_GEMM_CPU_CAL_N /* the model takes its traffic out of the rate (model/gemm.c) */
typedef struct mb_cal_gemm_ctx {
    float *a, *b, *c;
    int n;
} mb_cal_gemm_ctx;
/* Arrays and BLAS threads; 0 when the build has no BLAS (or no memory). */
int mb_cal_gemm_init(mb_cal_gemm_ctx *g, int threads);
void mb_cal_gemm(void *gemm_ctx);
void mb_cal_gemm_free(mb_cal_gemm_ctx *g);
/* openblas_get_config()'s line, "" without a BLAS. */
const char *mb_cal_gemm_blas(void);

/* ---- ops.c ---- */
/* One op over an L1-resident tile, repeated, on every thread
 * (mb_meas_op_rate_run); elements is set by each call. */
typedef struct mb_cal_op_ctx {
    mb_op op;
    int64_t rounds;
    double elements;
} mb_cal_op_ctx;
void mb_cal_op_rate(void *op_ctx);

/* Elements/s (1e9/s) of a sin and a cos of one operand evaluated together by
 * the executors' sincos primitive, L1-resident, on every thread: the median
 * of 7 samples (3 quick). */
double mb_cal_sincos_geps(int quick);
/* Softmax's exp (mb_kern_exp_nonpos_apply) over the exp op's tile primitive,
 * both over L1-resident tiles of arguments in [-20, 0], all threads, in
 * alternating samples: the median of the samples' ratios (0 when a timing
 * failed). */
double mb_cal_exp_nonpos_gain(int quick);

/* A plan ready to run: one executor pass per call of mb_cal_pass. */
typedef struct mb_cal_pass_ctx {
    mb_graph *g;
    mb_plan *p;
    mb_kern_tensors t;
    int have_t;
} mb_cal_pass_ctx;
/* The plan of expr (kind k) at n elements, run once (warm: page faults
 * taken, a compiled form built). */
int mb_cal_pass_init(mb_cal_pass_ctx *c, const char *expr, mb_plan_kind k, int64_t n,
                          mb_err *err);
void mb_cal_pass(void *pass_ctx);
void mb_cal_pass_free(mb_cal_pass_ctx *c);

/* Compiled chains (ops.c has why): chains[0] CHAIN_SHALLOW adds,
 * 1..n_ops each op of op_table.h with a chain (CHAIN_DEEP links), then the
 * sincos chain. */
#define CHAIN_DEEP 12
#define CHAIN_SHALLOW 2
#define CHAIN_N 32768
#define MB_CAL_MAX_CHAINS (MB_OP_COUNT + 2)
typedef struct mb_cal_chains {
    mb_cal_pass_ctx c[MB_CAL_MAX_CHAINS];
    mb_op op[MB_CAL_MAX_CHAINS]; /* chains[i]'s op (ADD for 0, COUNT for sincos) */
    int n;                        /* chains: n_ops + 2 */
    int ready;                    /* built and compiled */
} mb_cal_chains;
/* Builds the chains at n elements; a chain the executor would not run
 * compiled is left empty (have_t = 0). Returns how many are ready. */
int mb_cal_chains_init(mb_cal_chains *ch, int64_t n);
void mb_cal_chains_free(mb_cal_chains *ch);
/* Each op's compiled rate into out from the chains' figures (one per ready
 * chain, in order), n elements per pass. */
void mb_cal_compiled_rates(const mb_cal_chains *ch, const mb_cal_figure *figs, int64_t n,
                                mb_cal_result *out);

/* ---- touch.c ---- */
/* The first-touch figures of out (touch_*, first_touch_gbs,
 * alloc_mmap_threshold_mb), all threads. MB_ERUN when memory runs out. */
int mb_cal_first_touch(mb_cal_result *out, int quick, mb_err *err);

/* ---- spec.c ---- */
/* Why the figures cannot be trusted, into why; 0 when they can: a figure with
 * half its samples contended, then mb_cal_implausible. */
int mb_cal_refused(const mb_cal_result *c, const mb_cal_figure *figs, int nf, int quick,
                        char *why, size_t whysz);

#endif
