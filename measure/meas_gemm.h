/* meas_gemm.h — timing one (batched) f32 GEMM on the CPU through the BLAS
 * kernels/ loads (OpenBLAS's cblas_sgemm), and a transformer MLP built on
 * it (kernels/mlp_cpu.c): warm-up, samples to a minimum time, median and
 * minimum, the float64 check on sampled entries. Does not model the product
 * (model/mb_gemm.h) or choose its shape (the CLI does). */
#ifndef MB_MEAS_GEMM_H
#define MB_MEAS_GEMM_H

#include "meas_config.h"
#include "mb_gemm.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a GEMM is timed. threads: the BLAS's threads (<= 0: every core);
 * min_s: seconds of timed samples at least; min_samples: samples at least
 * (each sample is the whole product, batch included); check_samples: the
 * entries of each checked product compared with float64. */
typedef struct mb_meas_gemm_config {
    int threads;
    double min_s;
    int min_samples;
    int check_samples;
} mb_meas_gemm_config;

/* What a timed GEMM gave. Seconds are per whole product (batch included). */
typedef struct mb_meas_gemm_result {
    int samples;          /* timed samples taken */
    int contended;        /* of them, how many lost their cores (meas_timing.h) */
    double median_s, min_s;
    double gflops_median; /* 2 m n k batch / median_s / 1e9 */
    double max_rel_err;   /* worst sampled entry: |c - ref| / sum |a b| (kernels.h) */
    double tol;           /* the f32 bound it is held to: mb_kern_gemm_tol(k) */
    int verified;         /* max_rel_err <= tol */
    int threads;          /* the BLAS threads it ran on */
    char blas[256];       /* the BLAS's configuration line (on a GPU: cuBLASLt's version,
                           * compute type, epilogue and the GELU form it matched) */
} mb_meas_gemm_result;

/* 1 when a BLAS is there to run GEMMs; else 0 and why (whysz bytes) says
 * what is missing. */
int mb_meas_gemm_available(char *why, size_t whysz);

/* Times g (f32 only) on the CPU: A[m,k], B[k,n] filled with values in
 * [-1, 1), C = A @ B (beta = 0) by mb_kern_sgemm, a batched product as a loop
 * of batch products over strided operands (as PyTorch's CPU bmm without a
 * batched BLAS). One warm-up product, then samples until c->min_s and
 * c->min_samples are both reached; the first and last products of the batch
 * checked against float64 on c->check_samples entries. MB_EINPUT for a dtype
 * other than f32 or operands beyond memory's reach, MB_ERUN without a BLAS or
 * without memory. A failed check is a result (verified = 0), not an error. */
int mb_meas_gemm_cpu(const mb_gemm *g, const mb_meas_gemm_config *c, mb_meas_gemm_result *out, mb_err *err);

/* ---- one GEMM on the GPU through cuBLASLt (cuda_gemm.cu) ----
 * C[m,n] = A[m,k] @ B[k,n] (+ bias[n], then ReLU or GELU as cuBLASLt's
 * epilogues), batch strided products, row-major, operands and result in
 * g->dtype, f32 accumulation (no TF32). */
typedef enum mb_meas_gemm_epilogue {
    MB_MEAS_GEMM_NONE = 0, MB_MEAS_GEMM_BIAS, MB_MEAS_GEMM_BIAS_RELU, MB_MEAS_GEMM_BIAS_GELU, MB_MEAS_GEMM_N_EPILOGUES
} mb_meas_gemm_epilogue;
/* "none", "bias", "bias_relu", "bias_gelu" */
const char *mb_meas_gemm_epilogue_name(mb_meas_gemm_epilogue e);
/* MB_OK with *out set, MB_EINPUT for an unknown name */
int mb_meas_gemm_epilogue_parse(const char *s, mb_meas_gemm_epilogue *out);

/* Times (samples event-timed calls, L2 cleaned before each; <= 64, 0: 20)
 * and checks g with epi on the GPU c->cuda_device: out's median_s, samples,
 * gflops_median, max_rel_err against float64 on 64 sampled entries
 * (|c - ref| / the magnitude summed in), tol, verified and blas (the
 * description); min_s 0 (not kept), threads 0. MB_ERUN without a GPU, a
 * CUDA build or cuBLASLt (loaded with dlopen), or when a call fails;
 * MB_EINPUT for a size below 1. */
int mb_meas_cuda_gemm(const mb_meas_config *c, const mb_gemm *g, mb_meas_gemm_epilogue epi, int samples,
                      mb_meas_gemm_result *out, mb_err *err);

/* ---- the transformer MLP (kernels/mlp_cpu.c; kernels.h says what each
 * plan runs) ---- */
typedef enum { MB_MEAS_MLP_GPT2, MB_MEAS_MLP_LLAMA } mb_meas_mlp_kind;
typedef enum { MB_MEAS_MLP_EAGER, MB_MEAS_MLP_FUSED } mb_meas_mlp_plan;

/* One MLP: GPT-2's gelu(x @ w1 + b1) @ w2 + b2 or Llama's
 * (silu(x @ wg) * (x @ wu)) @ wd, tokens x d_model in, d_ff hidden, f32.
 * cache_bytes: the cache the fused plan's token panel fills half of (0: the
 * LLC as the system reports it; a spec's mb_device_cache_bytes is the
 * model's figure); panel_rows > 0 fixes the panel instead. backward: 1 to
 * time the plan's backward instead of its forward. flush_bytes > 0: a cache
 * of that many bytes evicted before each sample, untimed (meas_timing.h's
 * flusher: 2x its size held and read); 0: samples back to back, warm.
 * fault: 0 in use; tests set kernels.h's mb_kern_mlp fault (1, 2: the fused
 * epilogue wrong on the last panel) to see a failed check reported. */
typedef struct mb_meas_mlp {
    mb_meas_mlp_kind kind;
    mb_meas_mlp_plan plan;
    int64_t tokens, d_model, d_ff;
    int64_t cache_bytes, panel_rows;
    int backward;
    int64_t flush_bytes;
    int fault;
} mb_meas_mlp;

/* Times m's forward on the CPU under c as mb_meas_gemm_cpu times a GEMM
 * (one warm-up, then samples to c->min_s and c->min_samples), checked first
 * against float64 on sampled entries: out->max_rel_err is the check's figure
 * (the worst sampled entry over its f32 bound) and out->tol 1. With
 * m->backward it times the plan's backward (mb_kern_mlp_backward) after one
 * EAGER forward, whose saved tensors every sample reads (the backward writes
 * only gradients), checked by mb_kern_mlp_check_backward; gflops_median
 * counts the backward's GEMMs. *panel_rows (may be NULL) gets the fused
 * plan's panel. MB_EINPUT for sizes below 1 or beyond 2^40 elements, or
 * tensors (and the flush buffer) beyond the host's MemAvailable, named in
 * GB; MB_ERUN without a BLAS or memory. A failed check is a result
 * (verified = 0). */
int mb_meas_mlp_cpu(const mb_meas_mlp *m, const mb_meas_gemm_config *c, mb_meas_gemm_result *out,
                    int64_t *panel_rows, mb_err *err);

/* MB_OK when m's tensors (its backward's with m->backward) and its flush
 * buffer fit the host's MemAvailable (or it is unknown); else MB_EINPUT
 * naming the GB. mb_meas_mlp_cpu asks it first; a caller may ask before
 * running anything. */
int mb_meas_mlp_admit(const mb_meas_mlp *m, mb_err *err);

/* ---- a layer written with '@' (mmvar_run.c) ---------------------------- */

struct mb_mmvar;
#define MB_MEAS_MMVAR_MAX_KERNELS 96
/* One kernel of the eager forward: its name (the model's: "mm x@wg",
 * "silu", "addmm bias copy"), the step it belongs to, its seconds within
 * the samples. */
typedef struct mb_meas_mmvar_kernel {
    char name[48];
    int step, backward;
    double median_s, min_s;
} mb_meas_mmvar_kernel;
/* whole: the run's samples (the forward, and the backward after it when the
 * layer has one), median, min, contention, threads and BLAS; its check:
 * max_rel_err the worst product's sampled error over its f32 bound,
 * verified 1 when every product and every step passed (check: the first
 * that did not). fwd_median_s, bwd_median_s (and the minima): the medians
 * of each sample's forward and backward kernels summed. */
typedef struct mb_meas_mmvar_result {
    mb_meas_gemm_result whole;
    double fwd_median_s, bwd_median_s, fwd_min_s, bwd_min_s;
    int n_kernels;
    mb_meas_mmvar_kernel k[MB_MEAS_MMVAR_MAX_KERNELS];
    char check[256];
} mb_meas_mmvar_result;

/* Runs v's eager forward, and its backward when v has one (f32, bound to its
 * sizes), on the CPU under c, the
 * steps between products planned for d (the CPU's spec), flush_bytes of
 * cache evicted before each sample (<= 0: none): kernels and whole into
 * *out. MB_EINPUT for a layer this executor does not run (not f32), MB_ERUN
 * without a BLAS or memory. */
/* MB_OK when v runs here (f32) and its tensors and flush buffer fit the
 * host's MemAvailable (or it is unknown); else MB_EINPUT saying why.
 * mb_meas_mmvar_cpu asks it first; a caller may ask before anything runs. */
int mb_meas_mmvar_admit(const struct mb_mmvar *v, int64_t flush_bytes, mb_err *err);
int mb_meas_mmvar_cpu(const struct mb_mmvar *v, const mb_device *d, const mb_meas_gemm_config *c, int64_t flush_bytes,
                      mb_meas_mmvar_result *out, mb_err *err);

#ifdef __cplusplus
}
#endif
#endif
