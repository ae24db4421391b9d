/* mb_plan.h — plans: a graph's operations grouped into kernels (eager,
 * fused, store, recompute, online), each kernel's reads and writes by the
 * traffic rule. Does not count bytes or time on a device (mb_traffic.h) or
 * search saved sets (mb_planner.h). */
#ifndef MB_PLAN_H
#define MB_PLAN_H

#include "mb_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- plans ------------------------------------------------------------ */

typedef enum mb_plan_kind {
    MB_PLAN_EAGER = 0, /* one kernel per op, as PyTorch eager (and autograd) */
    MB_PLAN_FUSED,     /* the whole forward graph in one kernel */
    MB_PLAN_STORE,     /* backward: fused forward saving every saved tensor */
    MB_PLAN_RECOMPUTE, /* backward: fused forward saving inputs only */
    MB_PLAN_OPTIMAL,   /* backward: fused forward saving the set of least
                          traffic, found as a minimum cut (needs igraph) */
    MB_PLAN_ONLINE,    /* fused, with softmax's max and sum in one pass
                          (online softmax, Milakov & Gimelshein 2018) */
    MB_PLAN_COUNT
} mb_plan_kind;

const char *mb_plan_name(mb_plan_kind k);
int mb_plan_parse(const char *s, mb_plan_kind *out);
/* 1 if the graph supports plan k: eager and fused without backward;
 * eager, store, recompute and (in a build with igraph) optimal with backward. */
int mb_plan_supported(const mb_graph *g, mb_plan_kind k);

/* One kernel: the nodes it evaluates (in order), the tensors it reads from
 * memory and the tensors it writes, by the traffic rule of the design. */
typedef struct mb_kernel {
    char name[MB_NAME_MAX];
    int *nodes, n_nodes;
    int *reads, n_reads;    /* node ids, each distinct, in first-use order */
    int *writes, n_writes;  /* node ids, each distinct */
    int is_backward;
    double flops_per_elem, sfu_per_elem;
    /* Row operations (model/passes.c): a kernel whose row does not fit on
     * chip makes passes passes over each row (1 without row ops), and reads
     * reads[r] in read_passes[r] of them; one that fits keeps
     * live_bytes_per_col x cols bytes of each row on chip and reads once. */
    int passes;
    int *read_passes;          /* n_reads entries */
    double live_bytes_per_col;
    /* What the row executor runs in each pass (kernels/rows_cpu.c), per
     * node of nodes[]: eval_mask, the passes its per-element value is
     * evaluated in (bit p: pass p); stat_pass, the pass a reduction
     * accumulates in or a library row op's first statistics pass (-1: an
     * elementwise node); online, 1 for a sum folded beside its amax. */
    int *eval_mask, *stat_pass;
    unsigned char *online;
    /* 1: the eager plan's PyTorch native layer_norm kernel, forward
     * (vectorized_layer_norm_kernel) or native_layer_norm_backward: on a GPU
     * it holds no row on chip, whatever the row's length (passes.c,
     * mb_kernel_reread_rows). Costs only: the executors ignore it. */
    int torch_layer_norm;
    /* 1: autograd's engine casting an incoming gradient to its output's
     * dtype (MB_KERNEL_GRAD_CAST), an eager op before the backward in every
     * plan: its host cost is a library op's */
    int engine;
} mb_kernel;

/* The kernel of an incoming gradient's cast (aten::_to_copy, run by
 * autograd's engine before the backward: 'backward grad DTYPE'). */
#define MB_KERNEL_GRAD_CAST "to_copy_grad"

/* The eager kernel of a norm's weight and bias gradients (PyTorch's
 * GammaBetaBackwardCUDAKernel), after the op's fused backward kernel. */
#define MB_KERNEL_GAMMA_BETA "gamma_beta_backward"

/* A plan owns a copy of the graph: recompute appends clones of forward
 * nodes, which its backward kernel evaluates instead of reading them. */
typedef struct mb_plan {
    mb_plan_kind kind;
    mb_graph *g;
    mb_kernel *kernels;
    int n_kernels;
    int *saved, n_saved;  /* tensors kept from forward to backward */
    int *results, n_results; /* tensors the caller gets back: forward outputs,
                                then (backward) input gradients */
} mb_plan;

/* Builds plan k for graph g (g is copied; the caller keeps g). Returns
 * MB_EINPUT, naming the valid plans, when g does not support k. */
int mb_plan_build(const mb_graph *g, mb_plan_kind k, mb_plan **out, mb_err *err);
void mb_plan_free(mb_plan *p);

/* Builds plan k for g as it runs on device d (NULL: none named): the eager
 * plan on a CPU (d->kind "cpu") writes rms_norm out as torch 2.x's composite
 * there (pow, mean, add, rsqrt, mul, and a mul by the weight; bf16 and f16
 * cast to f32 first and back), where CUDA runs one fused kernel
 * (model/composite.c). Any other plan, device or graph: mb_plan_build. */
struct mb_device;
int mb_plan_build_on(const mb_graph *g, mb_plan_kind k, const struct mb_device *d, mb_plan **out, mb_err *err);

#ifdef __cplusplus
}
#endif
#endif
