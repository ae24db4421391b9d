/* calib_int.h — shared inside measure/'s calibration files only: the one
 * sample timer every probe takes its samples with, the figures calibrate
 * interleaves, and each file's probes. Not part of the public API.
 *   calib_sample.c    the sample timer and figures (warm-up, samples, rates)
 *   calib_streams.c   bandwidth (copy, read, write) and FMA-peak probes
 *   calib_ops.c       op rates: tile primitive, sincos, executor pass, compiled chains
 *   calib_overlap.c   overlap of memory and compute, read streams
 *   calib_touch.c     first touch of fresh allocations (a framework's eager outputs)
 *   calib_spec.c      the spec a calibration gives, the rules that refuse one
 *   calibrate_cpu.c   the sequence (mb_meas_calibrate_cpu) */
#ifndef MB_CALIB_INT_H
#define MB_CALIB_INT_H

#include "kernels.h"
#include "measure.h"

typedef void (*mb_meas_cal_fn)(void *ctx);

/* One sample: calls x fn(ctx), wall time; taken again, up to retries times,
 * while the process did not get its threads cores (mb_meas_contention). before
 * (may be NULL) runs untimed ahead of each attempt (a cache flush). */
typedef struct mb_meas_sampler {
    mb_meas_cal_fn fn;
    void *ctx;
    mb_meas_cal_fn before;
    void *before_ctx;
    int calls;
    int threads;
    int retries;
} mb_meas_sampler;

/* Seconds per call of the sample kept (the last attempt's). *contended (may be
 * NULL) gets 1 when that sample was contended; *retaken (may be NULL) counts
 * the attempts taken again. */
double mb_meas_sample_s(const mb_meas_sampler *s, int *contended, int *retaken);

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

typedef struct mb_meas_figure {
    const char *name;
    mb_meas_cal_fn fn;
    void *ctx;
    double work;             /* bytes, elements or flops per call of fn */
    int inner;               /* calls per sample */
    double s[CAL_ROUNDS];    /* seconds per call */
    int ns, contended, retaken;
} mb_meas_figure;

/* Warm-up (page faults) and the calls a sample needs (CAL_SAMPLE_S). */
void mb_meas_figure_warm(mb_meas_figure *f);
/* One sample into f->s (mb_meas_sample_s, CAL_RETRIES). */
void mb_meas_figure_sample(mb_meas_figure *f, int threads);
/* work per second over the median sample (1e9/s); the CV into *spread when
 * larger (spread may be NULL). */
double mb_meas_figure_rate(const mb_meas_figure *f, double *spread);
/* Median seconds per call. */
double mb_meas_figure_median_s(const mb_meas_figure *f);

/* ---- calib_streams.c ---- */
typedef struct mb_meas_stream_ctx {
    float *a, *b;
    int64_t n;
    volatile float sink;
} mb_meas_stream_ctx;
/* The vector ISA these probes were compiled for: "avx512f", "avx2" or
 * "scalar" (each must match the executors': the roofs are theirs). */
const char *mb_meas_cal_streams_isa(void);
void mb_meas_cal_copy_nt(void *stream_ctx);     /* b = a, non-temporal stores */
void mb_meas_cal_copy_plain(void *stream_ctx);  /* b = a, ordinary stores */
void mb_meas_cal_read_sum(void *stream_ctx);    /* sum of a */
void mb_meas_cal_write_nt(void *stream_ctx);    /* b = 1.5, non-temporal */
void mb_meas_cal_write_plain(void *stream_ctx); /* b = 1.5 + (i & 7) */

/* FMA peak: 8 independent vector chains per thread, register resident; flops
 * is set by each call. */
typedef struct mb_meas_fma_ctx {
    int64_t iters;
    volatile float sink;
    double flops;
} mb_meas_fma_ctx;
void mb_meas_cal_fma_peak(void *fma_ctx);

/* ---- calib_ops.c ---- */
/* One op over an L1-resident tile, repeated, on every thread
 * (mb_meas_op_rate_run); elements is set by each call. */
typedef struct mb_meas_op_ctx {
    mb_op op;
    int64_t rounds;
    double elements;
} mb_meas_op_ctx;
void mb_meas_cal_op_rate(void *op_ctx);

/* Elements/s (1e9/s) of a sin and a cos of one operand evaluated together by
 * the executors' sincos primitive, L1-resident, on every thread: the median
 * of 7 samples (3 quick). */
double mb_meas_cal_sincos_geps(int quick);
/* Softmax's exp (mb_kern_exp_nonpos_apply) over the exp op's tile primitive,
 * both over L1-resident tiles of arguments in [-20, 0], all threads, in
 * alternating samples: the median of the samples' ratios (0 when a timing
 * failed). */
double mb_meas_cal_exp_nonpos_gain(int quick);

/* A plan ready to run: one executor pass per call of mb_meas_cal_pass. */
typedef struct mb_meas_pass_ctx {
    mb_graph *g;
    mb_plan *p;
    mb_kern_tensors t;
    int have_t;
} mb_meas_pass_ctx;
/* The plan of expr (kind k) at n elements, run once (warm: page faults
 * taken, a compiled form built). */
int mb_meas_cal_pass_init(mb_meas_pass_ctx *c, const char *expr, mb_plan_kind k, int64_t n,
                          mb_err *err);
void mb_meas_cal_pass(void *pass_ctx);
void mb_meas_cal_pass_free(mb_meas_pass_ctx *c);

/* Compiled chains (calib_ops.c has why): chains[0] CHAIN_SHALLOW adds,
 * 1..n_ops each op of op_table.h with a chain (CHAIN_DEEP links), then the
 * sincos chain. */
#define CHAIN_DEEP 12
#define CHAIN_SHALLOW 2
#define CHAIN_N 32768
#define MB_MEAS_MAX_CHAINS (MB_OP_COUNT + 2)
typedef struct mb_meas_chains {
    mb_meas_pass_ctx c[MB_MEAS_MAX_CHAINS];
    mb_op op[MB_MEAS_MAX_CHAINS]; /* chains[i]'s op (ADD for 0, COUNT for sincos) */
    int n;                        /* chains: n_ops + 2 */
    int ready;                    /* built and compiled */
} mb_meas_chains;
/* Builds the chains at n elements; a chain the executor would not run
 * compiled is left empty (have_t = 0). Returns how many are ready. */
int mb_meas_cal_chains_init(mb_meas_chains *ch, int64_t n);
void mb_meas_cal_chains_free(mb_meas_chains *ch);
/* Each op's compiled rate into out from the chains' figures (one per ready
 * chain, in order), n elements per pass. */
void mb_meas_cal_compiled_rates(const mb_meas_chains *ch, const mb_meas_figure *figs, int64_t n,
                                mb_meas_calib *out);

/* ---- calib_touch.c ---- */
/* The first-touch figures of out (touch_*, first_touch_gbs,
 * alloc_mmap_threshold_mb), all threads. MB_ERUN when memory runs out. */
int mb_meas_cal_first_touch(mb_meas_calib *out, int quick, mb_err *err);

/* ---- calib_spec.c ---- */
/* Why the figures cannot be trusted, into why; 0 when they can: a figure with
 * half its samples contended, then mb_meas_calib_implausible. */
int mb_meas_cal_refused(const mb_meas_calib *c, const mb_meas_figure *figs, int nf, int quick,
                        char *why, size_t whysz);

#endif
