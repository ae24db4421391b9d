/* mb_traffic.h — the model's numbers for a plan on a device: bytes by the
 * traffic rule, cache-aware DRAM bytes, roofline time per kernel, and the
 * rules the executors share with it (lowering, compiled kernels, a row
 * kernel's passes). Does not build plans (mb_plan.h). */
#ifndef MB_TRAFFIC_H
#define MB_TRAFFIC_H

#include "mb_device.h"
#include "mb_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- traffic and time ------------------------------------------------- */

typedef enum mb_bound { MB_BOUND_MEMORY = 0, MB_BOUND_COMPUTE, MB_BOUND_LAUNCH } mb_bound;
const char *mb_bound_name(mb_bound b);  /* "memory", "compute", "launch" */

typedef struct mb_cost {
    int64_t read_bytes, write_bytes;            /* the lecture's count */
    int64_t dram_read_bytes, dram_write_bytes;  /* cache-aware, cold start */
    double flops, sfu_ops;
    double mem_s, compute_s, launch_s, time_s;  /* time_s = launch + max(mem, compute)
                                                   + serial_fraction x min(mem, compute)
                                                   + alloc_s */
    double alloc_s;          /* first touch of freshly allocated outputs
                                (mb_estimate_plan_fw); 0 without a framework */
    mb_bound bound;
    int passes;      /* passes over each row the kernel makes on this device
                        (1: one pass; row kernels whose row does not fit on
                        chip: mb_kernel.passes); 0 in a plan's total */
    int64_t rows_in_flight; /* passes > 1: rows the device works on at once
                        (mb_device_rows_in_flight); 0 otherwise */
    int rereads_cached; /* passes > 1: 1 when those rows fit the cache, so
                        the passes after the first read it, not DRAM */
    double cast_loop; /* > 0: mem_s is the vectorized loop's times this, a
                        PyTorch eager kernel's unrolled casting loop on a GPU
                        (mb_cast_loop_ratio); 0 otherwise */
    /* The host's side (MB_FW_PYTORCH on a GPU: mb_estimate_plan_timed):
     * host_s, what the framework spends issuing the kernel (a plan's total:
     * the sum); start_s, when the device starts it, from the start of the
     * timed region; waits_on_host, 1 when the device was idle until the
     * host issued it (a plan's total: when the host's issue of every
     * kernel, less a flush's head start, outlasts the device's sum). timed:
     * 0 for a kernel outside --phase. */
    double host_s, start_s;
    int waits_on_host;
    int timed;
} mb_cost;

typedef struct mb_estimate {
    mb_cost total;
    mb_cost *per_kernel;     /* plan->n_kernels entries, owned */
    int n_kernels;
    int64_t saved_bytes;
    double bandwidth_gbs;
    const char *bandwidth_source;  /* "measured" or "datasheet" */
} mb_estimate;

/* Traffic and roofline time of plan p at n elements per tensor on device d.
 * out->per_kernel is allocated; free with mb_estimate_free. */
int mb_estimate_plan(const mb_plan *p, int64_t n, const mb_device *d,
                     mb_estimate *out, mb_err *err);
void mb_estimate_free(mb_estimate *e);

/* The same at a shape (rank 2: rows x cols; mb_estimate_plan is rank 1).
 * A kernel with row operations is one pass when a row of what it keeps live
 * fits the device's on-chip storage (mb_device_onchip_bytes), else it reads
 * its row once per pass (the lecture's count counts each); a re-read hits
 * the cache when the rows in flight (mb_device_rows_in_flight) x the row
 * bytes it streams fit. */
int mb_estimate_plan_shape(const mb_plan *p, mb_shape s, const mb_device *d, mb_estimate *out, mb_err *err);

/* Threads of the block that takes one row in the CUDA row kernels a
 * multi-pass row kernel runs as (the row evaluator, kernels/rows_eval.cu,
 * and the per-op row kernels, kernels/rows_op.cu: MB_CUDA_THREADS, which
 * kernels/kernels_cuda_int.cuh holds equal to this). */
#define MB_ROW_BLOCK_THREADS 256

/* Rows a multi-pass row kernel works on at once on d, at most rows (and at
 * least 1): with max_threads_per_sm, sm_count x the row blocks an SM holds
 * by its threads (max_threads_per_sm / MB_ROW_BLOCK_THREADS, at least 1:
 * H100 132 x 8 = 1056), as the CUDA launchers size their grids (their
 * occupancy query also counts registers: docs/limitations.md); without it
 * one row per SM or core (sm_count; a CPU's executor threads each take a
 * row); 1 when d gives neither. */
int64_t mb_device_rows_in_flight(const mb_device *d, int64_t rows);

/* Blocks a fused backward kernel sums a [cols] gradient's rows in (a PART
 * tensor's rows, mb_graph_split_colsums): one per SM, as Liger's RMSNorm
 * and LayerNorm backward launch sm_count programs, each summing its rows
 * into a row of an f32 [sm_count, cols] workspace; a CPU's executor threads
 * (sm_count); at most rows, at least 1. */
int64_t mb_device_partial_blocks(const mb_device *d, int64_t rows);

/* The share of a re-read's bytes the last-level cache serves, the re-read
 * reuse_bytes back (the distinct bytes touched since its last use, its
 * own included): 1 within cache_bytes; beyond it min(1, retained_bytes /
 * reuse_bytes), the share calibrate fits to its warm copy sweep
 * (cache_retained_mb; 0: a step, nothing beyond the cache). */
double mb_cache_share(double reuse_bytes, double cache_bytes, double retained_bytes);

/* Sets K->passes, read_passes, live_bytes_per_col, eval_mask, stat_pass
 * and online from K's nodes, reads and writes (model/passes.c; online:
 * softmax's max and sum in one pass); plans call it, and the row executor
 * for a node run alone. -1 when out of memory (K's arrays owned by K). */
int mb_kernel_derive_passes(const mb_graph *g, mb_kernel *K, int online);

/* Longest row (columns) kernel K keeps on chip in one pass on d: on-chip
 * bytes / live bytes per column; INT64_MAX when K has one pass anyway, 0
 * when d gives no on-chip size. */
int64_t mb_kernel_onepass_max_cols(const mb_kernel *K, const mb_device *d);

/* Register bytes a column of K's row takes in a kernel that keeps the row in
 * registers alone, as a Triton program a row does (Liger's norms:
 * BLOCK_SIZE = the row, every value f32): 4 B for each full-row read a
 * later pass uses again, each [cols] operand (held beside the rows, as
 * Liger's W_row) and each per-block partial sum (accumulated across the
 * block's rows); 0 when K has one pass anyway. Beyond a device's
 * register_kib such a kernel spills, which the model's time does not
 * count (mb_kernel_register_max_cols). */
double mb_kernel_register_bytes_per_col(const mb_graph *g, const mb_kernel *K);
/* Longest row held that way on d: register_kib x 1024 / the bytes above;
 * INT64_MAX when none are needed, 0 when d gives no register_kib. */
int64_t mb_kernel_register_max_cols(const mb_graph *g, const mb_kernel *K, const mb_device *d);

/* What a row kernel's passes use (the one rule kernels/jit_rows.c runs and
 * the model counts). mb_kernel_row_stats_in: 1 when K's node j accumulates
 * statistics in pass p (a reduction in its stat_pass; softmax and
 * log_softmax their max, then their sum, one pass when online; the norms
 * one). mb_kernel_row_stat_operand: the node they read (an online sum of
 * exp(a - amax(a)): a). mb_kernel_row_needs: need[p x n_nodes + j] = 1 when
 * node j's per-element value is used in pass p (written there, read by a
 * statistic or by a value computed there); with keep (one pass: a value
 * computed once, in the first pass of its eval_mask, kept for the later
 * ones, and softmax's exp(x - max) kept from its sum pass), kept[j] = 1 when
 * it is used in a later pass. -1 when a needed value would be neither
 * computed nor kept (keep 0), or out of memory. need: K->passes x
 * K->n_nodes entries, kept: K->n_nodes, the caller's. */
int mb_kernel_row_stats_in(const mb_graph *g, const mb_kernel *K, int j, int p);
int mb_kernel_row_stat_operand(const mb_graph *g, const mb_kernel *K, int j);
int mb_kernel_row_needs(const mb_graph *g, const mb_kernel *K, int keep, char *need, char *kept);

/* Element accesses to the core's cache, per element of a row, that kernel K
 * makes beyond its first pass when run in one pass by the compiled row
 * executor (kernels/jit_rows.c): the reads a later pass loads again, the
 * kept values' stores and loads, [cols] operands' loads in every pass; 0
 * for a kernel of one pass. Passes without the online fold, as that
 * executor runs one pass. -1 when out of memory. */
double mb_kernel_onepass_cache_accesses(const mb_graph *g, const mb_kernel *K);

/* Whose allocation behaviour the time model adds: none (the executors'
 * preallocated buffers, the default) or PyTorch's (every op's output a new
 * tensor from the CPU allocator, malloc; torch.compile's too). */
typedef enum mb_framework { MB_FW_NONE = 0, MB_FW_PYTORCH, MB_FW_COUNT } mb_framework;
const char *mb_framework_name(mb_framework f);          /* "none", "pytorch" */
int mb_framework_parse(const char *s, mb_framework *out); /* MB_OK or MB_EINPUT */

/* PyTorch's native layer_norm kernels (an eager plan's layer_norm and
 * native_layer_norm_backward; layer_norm_kernel.cu) keep no row on chip: a
 * block of MB_TORCH_NORM_THREADS threads takes a row, reads it in a
 * statistics loop (Welford's mean and variance forward; the two dot
 * products backward, mean and rstd saved by the forward) and reads it again
 * in the loop that writes the output, whatever the row's length.
 * mb_kernel_is_torch_layer_norm says whether K is one (plans set
 * K->torch_layer_norm by it); mb_kernel_reread_rows, whether K reads each
 * of its full [rows, cols] operands twice in that way: a torch layer norm
 * kernel on a GPU under framework pytorch (what PyTorch runs; membound's own
 * CUDA executor holds the row on chip, as the one-pass rule says, and on a
 * CPU a thread's row stays in its own cache, PyTorch's or membound's). */
#define MB_TORCH_NORM_THREADS 128 /* num_threads(): 4 warps (thread_constants.h) */
int mb_kernel_is_torch_layer_norm(const mb_graph *g, const mb_kernel *K);
int mb_kernel_reread_rows(const mb_kernel *K, const mb_device *d, mb_framework fw);
/* The passes K's read r takes where K makes several passes on d: 2 for a
 * full operand of a kernel above (1 for its [cols] ones), else
 * K->read_passes[r]. */
int mb_kernel_read_passes_on(const mb_graph *g, const mb_kernel *K, int r, const mb_device *d, mb_framework fw);
/* mb_device_rows_in_flight for row blocks of threads threads. */
int64_t mb_device_rows_in_flight_at(const mb_device *d, int64_t rows, int threads);


/* glibc's ceiling for its dynamic mmap threshold on 64-bit (malloc.c,
 * DEFAULT_MMAP_THRESHOLD_MAX = 4 x 1 MiB x sizeof(long)). */
#define MB_ALLOC_MMAP_MAX_MB 32.0

/* mb_estimate_plan with framework fw's allocations: with MB_FW_PYTORCH each
 * tensor a kernel writes is a fresh allocation, and one of d's
 * alloc_mmap_threshold_mb or more is a fresh mapping whose first touch costs
 * bytes / first_touch_gbs (alloc_s, added to the kernel's time_s). A device
 * without first_touch_gbs is an error (MB_EINPUT: calibrate measures it);
 * MB_FW_NONE is mb_estimate_plan. */
int mb_estimate_plan_fw(const mb_plan *p, int64_t n, const mb_device *d, mb_framework fw,
                        mb_estimate *out, mb_err *err);

/* What a timed region holds and how it is timed, beyond the device's
 * kernels (mb_estimate_plan_timed):
 *   fw        MB_FW_PYTORCH: on a CPU, the first touch of fresh outputs
 *             (above); on a GPU, the host issues every kernel (host_*_us
 *             of the device, else the MB_HOST_* defaults) and a kernel
 *             starts no earlier than its issue: the timeline
 *   phase     the kernels the region times: all, the forward ones or the
 *             backward ones of a backward plan (what `y = f(x)` or
 *             `y.backward(dy)` alone runs); the others are still costed
 *             (their bytes set the cache's state) but not summed
 *   flush_mb  device work queued ahead of the region when the host starts
 *             it: a benchmark's cache flush writing this many MB (Triton's
 *             do_bench: 256), which the device runs at its bandwidth while
 *             the host issues the region's first kernels */
typedef enum mb_phase { MB_PHASE_ALL = 0, MB_PHASE_FORWARD, MB_PHASE_BACKWARD, MB_PHASE_COUNT } mb_phase;
const char *mb_phase_name(mb_phase ph);             /* "all", "forward", "backward" */
int mb_phase_parse(const char *s, mb_phase *out);   /* MB_OK or MB_EINPUT */
/* Under --framework pytorch on a GPU, an eager kernel that reads a tensor
 * of another dtype than it computes in (x.to(f32), a bf16 tensor times an
 * f32 weight) runs PyTorch's unrolled casting loop: its memory time over
 * the vectorized loop's for n elements, from pytorch/pytorch#195542's A100
 * figures (log-linear between them, held beyond; docs/model.md, "A
 * casting eager kernel"). */
double mb_cast_loop_ratio(double n);

typedef struct mb_timing {
    mb_framework fw;
    mb_phase phase;
    double flush_mb;
} mb_timing;

/* The host's costs when a device spec gives none (--framework pytorch on a
 * GPU; docs/model.md, "The host"): measured on this project's 2-vCPU guest
 * by bench/torch_host.py (torch 2.15, one thread, tensors of one element:
 * the host's code up to the launch), 2026-12-07, the minimum over five runs
 * of 15 rounds each (contention only adds; the runs, their spread and
 * torch 1.13's: reports/data/host-torch-2vcpu/); the generated kernel's
 * launch cited: Triton's Python launcher after triton-lang/triton PR #3648
 * ("from 49us to 18us", the launch benchmark of issue #3619). */
#define MB_HOST_OP_US 1.82
#define MB_HOST_NODE_US 3.91
#define MB_HOST_FUNCTION_US 1.65
#define MB_HOST_GENERATED_LAUNCH_US 18.0
/* One y.backward(dy) call beyond its nodes (the engine's graph task, its
 * dependencies, its exit): bench/torch_host.py on the 2-vCPU Xeon guest,
 * torch 2.15, 2026-12-08, the minimum of five runs (11.96-13.06 us;
 * torch 1.13: 5.78-5.92): reports/data/host-torch-2vcpu-1208/. */
#define MB_HOST_BACKWARD_CALL_US 11.96

/* The estimate of plan p at shape s on d as timing t times it (NULL: all
 * kernels, no framework: mb_estimate_plan_shape). With MB_FW_PYTORCH on a
 * GPU, total.time_s is the end of the timeline (kernel k starts at
 * max(its issue, the end of k - 1): I_k = I_{k-1} + host_k, S_k = max(I_k,
 * E_{k-1}), E_k = S_k + time_k), each kernel's time_s its device time. */
int mb_estimate_plan_timed(const mb_plan *p, mb_shape s, const mb_device *d, const mb_timing *t,
                           mb_estimate *out, mb_err *err);

/* Bytes of tensor node i at n elements. */
int64_t mb_tensor_bytes(const mb_graph *g, int i, int64_t n);

/* Reads and writes a compiled CPU kernel may have. */
#define MB_COMPILED_IO_MAX 32

/* 1 when a CPU executor with a C compiler runs kernel K of g as compiled
 * code (kernels/jit_cpu.c), the rule kernels/exec_cpu.c applies: two or more
 * ops evaluated (after common subexpressions and sin/cos pairs), every
 * tensor read and written f32, at most MB_COMPILED_IO_MAX of each, and every
 * op with a compiled form (not relu, abs, step, sign; pow only as x**2 and
 * x**3; finite scalars). A kernel of a graph with row operations
 * (kernels/jit_rows.c, as kernels/rows_run_cpu.c chooses): a row op or two
 * nodes or more, the same for its tensors and elementwise ops, each row op
 * over a full operand, no column sum. A spec with op_compiled_geps costs
 * such kernels at those rates. */
/* How an executor lowers nodes[0..n) of g (a kernel's nodes, in order), the
 * one rule the model counts and kernels/exec_cpu.c runs: evaluated[j] = 0 for
 * an input, or for a node equal to an earlier one (same op, operands and
 * scalars: evaluated once; common[j] gets that one's index), 2 for the first
 * of a sin and a cos of one operand (one sincos gives both), 3 for its partner
 * (pair[] names each other), else 1. common and pair may be NULL, else -1
 * where none. Returns -1 when out of memory. */
int mb_lower_nodes(const mb_graph *g, const int *nodes, int n, int *common, int *pair,
                   unsigned char *evaluated);
int mb_kernel_compiled(const mb_graph *g, const mb_kernel *K);
/* 1 when elementwise node a has a form in compiled kernels (kernels/jit_cpu.c,
 * jit_rows.c): op_table.h's MB_OPF_JIT, pow by a constant 1, 2 or 3
 * (mb_op_powf's x and products), finite scalars. */
int mb_node_compiles(const mb_node *a);
/* 1 when node v of g is exp(a - amax(a)), softmax written out: its argument
 * is never positive, and compiled row kernels (kernels/jit_rows.c) evaluate
 * it with softmax's exp, which the model costs at the spec's
 * exp_nonpos_gain; library softmax's and online sums' exps are such too. */
int mb_node_exp_nonpos(const mb_graph *g, int v);

#ifdef __cplusplus
}
#endif
#endif
