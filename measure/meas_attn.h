/* meas_attn.h — attention's plans timed on the CPU (kernels/attn_cpu.c):
 * standard and flash at one shape, warm-up, the float64 check (and finite
 * differences with backward), then samples until a minimum time, each
 * sample the plan's kernels in order with the cache evicted before it,
 * per kernel and whole. Does not model (model/attention.c) or print (cli/). */
#ifndef MB_MEAS_ATTN_H
#define MB_MEAS_ATTN_H

#include "mb_attention.h"
#include "meas_record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to run: a's sizes (f32 only), plan p, on threads threads (<= 0: all
 * cores); samples until min_time_s and min_reps, at most max_reps; the
 * cache of llc_bytes evicted before each (<= 0: detected; no eviction when
 * cold is 0), also the size from which N x N outputs are streamed past
 * the cache (the spec's cache_mb, as measure takes it). check_rows: rows the check samples at shapes beyond every
 * element (BH N^2 d > 2^27). */
typedef struct mb_meas_attn_req {
    mb_attn a;
    mb_attn_plan_id plan;
    int threads;
    double min_time_s;
    int min_reps, max_reps;
    int cold;
    int64_t llc_bytes;
    int check_rows;
    int fd_points;
} mb_meas_attn_req;

void mb_meas_attn_req_default(mb_meas_attn_req *r); /* 1 s, 3..50 samples, cold, 64 rows, 12 points */

#define MB_MEAS_ATTN_MAX_KERNELS 16

/* What one plan gave. */
typedef struct mb_meas_attn_result {
    int n_kernels;
    const char *kernel[MB_MEAS_ATTN_MAX_KERNELS];   /* static: the model's names */
    int backward[MB_MEAS_ATTN_MAX_KERNELS];        /* 1: a backward kernel */
    double kernel_median_s[MB_MEAS_ATTN_MAX_KERNELS], kernel_min_s[MB_MEAS_ATTN_MAX_KERNELS];
    double median_s, min_s, p90_s, cv;             /* the whole plan a sample */
    double fwd_median_s, bwd_median_s;             /* its forward and backward kernels' medians, summed */
    int reps, contended;                           /* samples; of them, contended */
    int threads;
    int64_t bytes;                                 /* host memory the run held */
    int64_t tile_r, tile_c, bwd_tile_r, bwd_tile_c, core_cache_bytes; /* flash's tiles */
    /* the float64 check of the warm-up run's results */
    int verified;
    int full;                                      /* 1: every element */
    int64_t rows_checked;
    double err, tol_fwd, tol_bwd;                  /* largest error over its bound (<= 1 passes) */
    double fd_err;                                 /* finite differences, over their bound; -1 none */
    int fd_points;
    char blas[320];
    /* the host's GEMM rate beside the run: a 1024^3 cblas_sgemm (calibrate's
     * gemm_gflops probe) on the run's threads, the best of 3 before the
     * samples and of 3 after, GFLOP/s; 0 when not timed */
    double host_gemm_gflops_before, host_gemm_gflops_after;
} mb_meas_attn_result;

/* Host bytes plan p at a takes (its tensors and the flush buffer). */
int64_t mb_meas_attn_need_bytes(const mb_attn *a, mb_attn_plan_id p, int64_t llc_bytes);

/* Runs r. MB_EINPUT for a dtype other than f32 or a size that does not fit
 * (MemAvailable, named in the message); MB_ERUN without a BLAS, when memory
 * runs out or a kernel fails. A run whose check fails still returns MB_OK
 * with verified 0 (its times are reported as failed, never as passed). */
int mb_meas_attn_run(const mb_meas_attn_req *r, mb_meas_attn_result *out, mb_err *err);

#ifdef __cplusplus
}
#endif
#endif
