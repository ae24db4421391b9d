/* mb_attention.h — the model of scaled dot-product attention on a device,
 * two plans side by side: standard attention as PyTorch eager writes it
 * (bmm, mul by the scale, the mask add when causal, softmax, bmm) and
 * FlashAttention (one tiled kernel with online softmax; its backward
 * recomputes S and P from Q, K and the saved log-sum-exp). FLOPs, DRAM
 * bytes and time per kernel, the bound, the memory saved for backward and
 * the longest sequence that fits. Built on the GEMM model (mb_gemm.h).
 * Does not parse attention in the variant language or run it. */
#ifndef MB_ATTENTION_H
#define MB_ATTENTION_H

#include "mb_base.h"
#include "mb_device.h"
#include "mb_gemm.h"
#include "mb_traffic.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One attention: q, k, v and o of shape [batch, heads, seq, head_dim], all in
 * dtype; causal adds the mask; backward models the backward pass too (the
 * gradients of q, k and v from that of o). */
typedef struct mb_attn {
    int64_t batch, heads, seq, head_dim;
    mb_dtype dtype;
    int causal, backward;
} mb_attn;

typedef enum mb_attn_plan_id { MB_ATTN_STANDARD = 0, MB_ATTN_FLASH, MB_ATTN_N_PLANS } mb_attn_plan_id;

/* FLOPs as attention papers count them: 4 BH N^2 d forward, x 3.5 with the
 * backward (FlashAttention-2, arXiv:2307.08691, sec. 4.1, counts it 2.5x
 * the forward), halved when causal. */
double mb_attn_model_flops(const mb_attn *a);

/* "standard", "flash" */
const char *mb_attn_plan_name(mb_attn_plan_id p);

/* One kernel of a plan. Bytes in B, times in s. */
#define MB_ATTN_MAX_KERNELS 12
typedef struct mb_attn_kernel {
    const char *name;       /* static: "bmm q@k^T", "softmax", "flash fwd", ... */
    int backward;           /* 1: a kernel of the backward pass */
    int gemm;               /* 1: timed through mb_gemm_estimate */
    double flops;           /* executed matmul FLOPs (FMA = 2) */
    double exps;            /* exponentials evaluated */
    double dram_read_bytes, dram_write_bytes;
    double nn_write_bytes;  /* of those written, bytes of seq x seq tensors (S, P, dP, dS) */
    double compute_s, mem_s, launch_s, time_s;
    mb_bound bound;
} mb_attn_kernel;

/* One plan on one device. */
typedef struct mb_attn_plan {
    mb_attn_plan_id id;
    int n_kernels;
    mb_attn_kernel k[MB_ATTN_MAX_KERNELS];
    double flops;             /* executed matmul FLOPs, all kernels */
    double dram_read_bytes, dram_write_bytes;
    double nn_write_bytes;    /* seq x seq bytes written to DRAM: 0 for flash */
    double fwd_time_s, bwd_time_s, time_s;
    mb_bound bound;           /* the bound of the kernels taking most of the time */
    double saved_bytes;       /* kept for backward beyond q, k and v: P (standard), O and the LSE (flash) */
    double peak_bytes;        /* the most device memory live at once (mb_attn_peak_bytes) */
    int64_t max_seq;          /* the longest seq whose peak fits mem_gb; 0 when mem_gb is unknown */
} mb_attn_plan;

/* What the model says of one attention on one device. */
typedef struct mb_attn_est {
    double model_flops;       /* mb_attn_model_flops */
    double peak_flops_s;      /* the dtype's GEMM rate (mb_gemm_peak_flops) */
    const char *peak_key;     /* static */
    double exp_per_s;         /* exponentials per second */
    const char *exp_key;      /* static: "op_exp_geps", "sfu_tops" or "fp32_tflops/16" */
    double bandwidth_gbs;
    const char *bandwidth_source;
    double cache_bytes;       /* mb_device_cache_bytes */
    double onchip_bytes;      /* onchip_kib x 1024: the M of FlashAttention's tiling */
    int64_t block_r, block_c; /* FlashAttention's tiles: Br query rows, Bc key columns */
    int64_t tiles_r, tiles_c; /* ceil(seq / Br), ceil(seq / Bc) */
    int64_t tile_pairs;       /* (query tile, key tile) pairs computed a head: tiles_r x tiles_c, fewer when causal */
    int64_t heads_in_flight;  /* (batch, head) pairs whose tiles run at once, forward */
    double kv_reads;          /* times K and V come from DRAM a head, forward */
    double io_nocache_bytes;  /* forward DRAM bytes with no cache: Theorem 2's count */
    mb_attn_plan plan[MB_ATTN_N_PLANS];
} mb_attn_est;

/* Estimates a on d into *out. MB_EINPUT (with the reason) for a size below 1,
 * seq x seq x batch x heads beyond 2^62, a device without the dtype's GEMM
 * rate or without onchip_kib, or a head_dim beyond the on-chip elements (the
 * tiling needs d <= M); *out is written only on success. */
int mb_attn_estimate(const mb_attn *a, const mb_device *d, mb_attn_est *out, mb_err *err);

/* Bytes of device memory plan p holds at once at a's shape: standard
 * forward, q, k, v and o plus two seq x seq tensors (the softmax's input and
 * P); with backward, q, k, v, o and do plus at least three (P saved, dP and
 * the softmax's gradient). Flash forward, q, k, v, o and the f32 LSE; with
 * backward, those, do, dq, dk, dv, D (f32) and the f32 dq accumulator. */
double mb_attn_peak_bytes(const mb_attn *a, mb_attn_plan_id p);

/* The longest seq (the other sizes of a as they are, at most 2^50 - 1) whose
 * mb_attn_peak_bytes fits mem_bytes; 0 when not even seq 1 does. */
int64_t mb_attn_max_seq(const mb_attn *a, mb_attn_plan_id p, double mem_bytes);

#ifdef __cplusplus
}
#endif

#endif
