/* mb_attention.h — the model of scaled dot-product attention on a device,
 * two plans side by side: standard attention as PyTorch eager writes it
 * (bmm, mul by the scale, the mask add when causal, softmax, bmm) and
 * FlashAttention (one tiled kernel with online softmax; its backward
 * recomputes S and P from Q, K and the saved log-sum-exp). FLOPs, DRAM
 * bytes and time per kernel, the bound, the memory saved for backward and
 * the longest sequence that fits; a third plan, recompute (the standard
 * kernels saving the log-sum-exp instead of P), and the planner choosing
 * among them by time under a memory budget. Built on the GEMM model
 * (mb_gemm.h).
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

/* The plans: standard (P saved for backward, autograd's), flash and
 * recompute (standard's kernels, the f32 log-sum-exp saved instead of P, the
 * backward making S and P again from q, k and it, unfused). The values of
 * the first two stay as they were. */
typedef enum mb_attn_plan_id { MB_ATTN_STANDARD = 0, MB_ATTN_FLASH, MB_ATTN_RECOMPUTE, MB_ATTN_N_PLANS } mb_attn_plan_id;

/* FLOPs as attention papers count them: 4 BH N^2 d forward, x 3.5 with the
 * backward (FlashAttention-2, arXiv:2307.08691, sec. 4.1, counts it 2.5x
 * the forward), halved when causal. */
double mb_attn_model_flops(const mb_attn *a);

/* "standard", "flash", "recompute" */
const char *mb_attn_plan_name(mb_attn_plan_id p);

/* One kernel of a plan. Bytes in B, times in s. */
#define MB_ATTN_MAX_KERNELS 20 /* recompute, causal, backward: 16 */
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
    double saved_bytes;       /* kept for backward beyond q, k and v: P (standard), O and the LSE (flash),
                                 the LSE (recompute) */
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
 * the softmax's gradient). Recompute: the standard's and the f32 LSE (its
 * backward holds the same three seq x seq tensors once it has made P again).
 * Flash forward, q, k, v, o and the f32 LSE; with backward, those, do, dq,
 * dk, dv, D (f32) and the f32 dq accumulator. */
double mb_attn_peak_bytes(const mb_attn *a, mb_attn_plan_id p);

/* The longest seq (the other sizes of a as they are, at most 2^50 - 1) whose
 * mb_attn_peak_bytes fits mem_bytes; 0 when not even seq 1 does. */
int64_t mb_attn_max_seq(const mb_attn *a, mb_attn_plan_id p, double mem_bytes);

/* ---- the planner: store P against recompute (attn_plan.c) --------------- */

/* A tensor a plan keeps from forward to backward. name, shape and dtype are
 * static strings ("P", "[batch, heads, seq, seq]", "bf16"). */
#define MB_ATTN_MAX_KEPT 4
typedef struct mb_attn_tensor {
    const char *name, *shape, *dtype;
    double bytes;
} mb_attn_tensor;

/* The tensors plan p keeps for backward beyond q, k and v (which every plan
 * keeps), into out[MB_ATTN_MAX_KEPT]; returns their count. Their bytes add
 * up to the plan's saved_bytes. */
int mb_attn_kept(const mb_attn *a, mb_attn_plan_id p, mb_attn_tensor *out);

/* Why a plan is out of the choice. */
typedef enum mb_attn_fit {
    MB_ATTN_FITS = 0,
    MB_ATTN_OVER_BUDGET,  /* its saved_bytes exceed the budget */
    MB_ATTN_OVER_MEMORY   /* its peak_bytes exceed the device's mem_gb */
} mb_attn_fit;

/* A plan chosen by the time objective: of the candidate plans (bit 1 << id
 * in a mask) that fit, the one of least time_s (forward and backward when
 * the estimate models the backward), ties to the least saved_bytes. */
typedef struct mb_attn_choice {
    int plan;                         /* the chosen mb_attn_plan_id; -1 when no candidate fits */
    int fastest;                      /* the candidate of least time, fitting or not */
    mb_attn_fit fit[MB_ATTN_N_PLANS]; /* each plan against the budget and the device */
} mb_attn_choice;

#define MB_ATTN_ALL_PLANS ((1u << MB_ATTN_N_PLANS) - 1)
#define MB_ATTN_UNFUSED_PLANS ((1u << MB_ATTN_STANDARD) | (1u << MB_ATTN_RECOMPUTE))

/* Chooses among the plans of mask in e (an estimate of a on d): a plan fits
 * when its saved_bytes are within budget_bytes (<= 0: no budget) and its
 * peak_bytes within d's mem_gb (where the spec has one). */
void mb_attn_choose(const mb_attn_est *e, const mb_device *d, double budget_bytes, unsigned mask,
                    mb_attn_choice *out);

/* The frontier of saved memory against time among the plans of mask: the
 * plans of which none of mask saves no more and takes less time (ties: the
 * first id), by saved_bytes ascending, into order[MB_ATTN_N_PLANS]; returns
 * their count. For a budget B of saved bytes the least time is that of the
 * last listed plan with saved_bytes <= B. */
int mb_attn_frontier(const mb_attn_est *e, unsigned mask, int *order);

/* Where a plan's time per token doubles: t(seq) / seq (forward and
 * backward, the other sizes of a) is least at best_seq over a geometric grid
 * of seq (2^(1/8) steps from lo to hi); double_seq is the shortest seq
 * above it where t / seq reaches twice that least value (bisected between
 * grid points), 0 when it does not by hi. At short seq the launches are
 * spread over more tokens as seq grows; past best_seq the seq^2 work makes
 * each token dearer, and at double_seq it is twice the best. */
typedef struct mb_attn_doubling {
    int64_t best_seq, double_seq;
    double best_s_per_token;   /* t / seq at best_seq */
} mb_attn_doubling;

/* mb_attn_doubling of plan p on d, seq in [lo, hi] (16 <= lo < hi); a's seq
 * is not read and its backward is taken as set. MB_EINPUT as
 * mb_attn_estimate's, at the first seq that fails. */
int mb_attn_doubling_seq(const mb_attn *a, const mb_device *d, mb_attn_plan_id p, int64_t lo, int64_t hi,
                         mb_attn_doubling *out, mb_err *err);

#ifdef __cplusplus
}
#endif

#endif
