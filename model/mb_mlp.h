/* mb_mlp.h — the model of a transformer MLP (and a linear layer followed by
 * a norm) on a device: PyTorch eager's kernels against plans that fuse the
 * elementwise work into the GEMMs' epilogues (and Liger's gated plan), the
 * backward as autograd runs it, the tensors each plan saves, and activation
 * checkpointing (store the hidden activations or recompute them in the
 * backward) as a choice the time decides under an optional memory budget.
 * The GEMMs are mb_gemm.h's; the elementwise and norm kernels are the
 * variant language's (mb_graph.h, mb_traffic.h). Does not run an MLP. */
#ifndef MB_MLP_H
#define MB_MLP_H

#include "mb_base.h"
#include "mb_device.h"
#include "mb_traffic.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The layers, x [tokens, d_model]:
 *   gpt2              gelu_tanh(x @ w1 + b1) @ w2 + b2, w1 [d_model, d_ff]
 *   llama             (silu(x @ wg) * (x @ wu)) @ wd, no biases
 *   geglu             (gelu_tanh(x @ wg) * (x @ wu)) @ wd (Liger's GEGLU MLP)
 *   linear-layernorm  layer_norm(x @ w + b), w [d_model, d_ff], over d_ff
 *   linear-rmsnorm    rms_norm(x @ w + b) */
typedef enum mb_mlp_layer {
    MB_MLP_GPT2 = 0, MB_MLP_LLAMA, MB_MLP_GEGLU, MB_MLP_LINEAR_LN, MB_MLP_LINEAR_RMS, MB_MLP_N_LAYERS
} mb_mlp_layer;

const char *mb_mlp_layer_name(mb_mlp_layer l);   /* "gpt2", "llama", ... */
/* MB_OK, or MB_EINPUT naming the layers. */
int mb_mlp_layer_parse(const char *s, mb_mlp_layer *out, mb_err *err);
/* 1 for llama and geglu: a gate and an up projection */
int mb_mlp_layer_gated(mb_mlp_layer l);

/* eager: PyTorch eager's kernels; fused: the elementwise work in the GEMMs'
 * epilogues; liger: gated layers only, the GEMMs as eager and the gate's
 * activation times up as one kernel each way (Liger's SwiGLU / GEGLU). */
typedef enum mb_mlp_plan_id { MB_MLP_EAGER = 0, MB_MLP_FUSED, MB_MLP_LIGER, MB_MLP_N_PLANS } mb_mlp_plan_id;
const char *mb_mlp_plan_name(mb_mlp_plan_id p);
int mb_mlp_plan_supported(mb_mlp_layer l, mb_mlp_plan_id p);

/* store: keep what autograd saves; act: keep x and the first GEMMs'
 * outputs (the activation's input) and run the activation again in the
 * backward (a checkpoint around the activation alone; not for the
 * linear-norm layers, whose GEMM output is what store keeps); recompute:
 * keep the layer's input only and run the first GEMM(s) and the activation
 * again (torch.utils.checkpoint, non-reentrant, early stop). auto (a
 * request, not an option): the least time within the memory budget. */
typedef enum mb_mlp_ckpt {
    MB_MLP_STORE = 0, MB_MLP_ACT, MB_MLP_RECOMPUTE, MB_MLP_N_CKPT, MB_MLP_AUTO = MB_MLP_N_CKPT
} mb_mlp_ckpt;
const char *mb_mlp_ckpt_name(mb_mlp_ckpt c);     /* "store", "act", "recompute", "auto" */
int mb_mlp_ckpt_parse(const char *s, mb_mlp_ckpt *out, mb_err *err);

/* One layer's shape and dtype (every tensor in dtype); backward: the
 * backward pass too (the gradients of x, the weights and the biases). */
typedef struct mb_mlp {
    mb_mlp_layer layer;
    int64_t tokens, d_model, d_ff;
    mb_dtype dtype;
    int backward;
} mb_mlp;

#define MB_MLP_NAME_MAX 48
#define MB_MLP_MAX_KERNELS 96
#define MB_MLP_MAX_SAVED 16

/* One kernel of a plan. Bytes in B, times in s. */
typedef struct mb_mlp_kernel {
    char name[MB_MLP_NAME_MAX];
    int backward;           /* 1: a kernel of the backward pass */
    int gemm;               /* 1: timed through mb_gemm_estimate */
    int recompute;          /* 1: the checkpoint's forward again, in the backward */
    double flops;
    double dram_read_bytes, dram_write_bytes;
    double hidden_write_bytes; /* of those written, bytes of [tokens, d_ff]-sized tensors */
    double compute_s, mem_s, launch_s, time_s;
    mb_bound bound;
} mb_mlp_kernel;

/* A tensor kept from the forward to the backward (weights are not: they
 * live anyway). */
typedef struct mb_mlp_saved {
    char name[MB_MLP_NAME_MAX];
    double bytes;
} mb_mlp_saved;

typedef struct mb_mlp_plan {
    mb_mlp_plan_id id;
    mb_mlp_ckpt ckpt;
    int valid;                 /* 0: the option does not apply (act on a linear-norm layer) */
    int n_kernels;
    mb_mlp_kernel k[MB_MLP_MAX_KERNELS];
    int n_saved;
    mb_mlp_saved saved[MB_MLP_MAX_SAVED];
    double saved_bytes;        /* their sum; 0 without backward */
    double flops, dram_read_bytes, dram_write_bytes, hidden_write_bytes;
    double fwd_time_s, bwd_time_s, time_s;
    mb_bound bound;            /* the bound of the kernels taking most of the time */
} mb_mlp_plan;

/* What the model says of one layer on one device. plan[p][c] is costed for
 * supported[p], c < n_ckpt (1 without backward: nothing is saved) and
 * plan[p][c].valid. */
typedef struct mb_mlp_est {
    double peak_flops_s;       /* the dtype's GEMM rate */
    const char *peak_key;      /* static */
    double bandwidth_gbs;
    const char *bandwidth_source;
    double gemm_flops;         /* the GEMMs' FLOPs, forward (and backward), no recompute */
    double hidden_bytes;       /* one [tokens, d_ff] tensor */
    double weight_bytes;       /* the weights and biases */
    int n_ckpt;
    int supported[MB_MLP_N_PLANS];
    mb_mlp_plan plan[MB_MLP_N_PLANS][MB_MLP_N_CKPT];
} mb_mlp_est;

/* Estimates m on d into *out. MB_EINPUT (with the reason) for a size below
 * 1, a tensor beyond the model's limits, or a device without the dtype's
 * GEMM rate; *out is written only on success. */
int mb_mlp_estimate(const mb_mlp *m, const mb_device *d, mb_mlp_est *out, mb_err *err);

/* The checkpoint option of plan p of least time whose saved_bytes fit
 * budget_bytes (<= 0: no budget); on a tie the one that saves less; -1 when
 * none fits or p is unsupported. */
int mb_mlp_choose(const mb_mlp_est *e, mb_mlp_plan_id p, double budget_bytes);

/* The fewest tokens, a power of two up to 2^24, at which plan p of m's
 * layer (its store option; m->tokens ignored) is compute-bound on d: where
 * the GEMMs' math outlasts the weights' reads; 0 when none is. MB_EINPUT as
 * mb_mlp_estimate, into *err, with -1 returned. */
int64_t mb_mlp_compute_bound_tokens(const mb_mlp *m, const mb_device *d, mb_mlp_plan_id p, mb_err *err);

/* 1 when no supported (plan, option) of e saves no more and takes no longer
 * with one of the two strictly less: (p, c) is on the frontier of saved
 * bytes against time. */
int mb_mlp_on_frontier(const mb_mlp_est *e, mb_mlp_plan_id p, int c);

#ifdef __cplusplus
}
#endif

#endif
