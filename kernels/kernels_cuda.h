/* kernels_cuda.h — C interface of the CUDA kernels: the device, a plan's tensors
 * in device memory, and launching each of the plan's kernels (generic per-op
 * kernels, the fused-kernel evaluator, hand-written kernels for the lecture's
 * variants). Plain C; includes no CUDA header (streams are passed as void *).
 * It does not time, flush caches or count bytes: measure/ does. */
#ifndef MB_KERNELS_CUDA_H
#define MB_KERNELS_CUDA_H

#include "kernels.h"
#include "membound_model.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the driver reports about one device. */
typedef struct mb_kern_cuda_device {
    int ordinal;
    char name[256];            /* "NVIDIA H200" */
    char pci_bus_id[32];
    int cc_major, cc_minor;
    int sm_count;
    int max_threads_per_sm;    /* cudaDevAttrMaxThreadsPerMultiProcessor: resident threads */
    int64_t l2_bytes;          /* cudaDevAttrL2CacheSize */
    int64_t persisting_l2_max_bytes;
    int64_t smem_per_sm_bytes;     /* cudaDevAttrMaxSharedMemoryPerMultiprocessor */
    int64_t smem_optin_bytes;      /* cudaDevAttrMaxSharedMemoryPerBlockOptin: what one block may take */
    int64_t regs_per_sm;           /* cudaDevAttrMaxRegistersPerMultiprocessor (32-bit) */
    int64_t mem_bytes;         /* total global memory */
    int mem_clock_khz;         /* peak memory clock (cudaDevAttrMemoryClockRate) */
    int bus_width_bits;        /* cudaDevAttrGlobalMemoryBusWidth */
    int sm_clock_khz;          /* peak SM clock (cudaDevAttrClockRate) */
    double peak_bandwidth_gbs; /* 2 x mem clock x bus width / 8, 1e9 B/s */
    int driver_version;        /* 13000 = CUDA 13.0 */
    int runtime_version;
} mb_kern_cuda_device;

/* Number of CUDA devices usable now (cudaGetDeviceCount), or 0 with one line
 * in why saying what is missing (no driver, no device, driver too old).
 * Never crashes without a driver. why may be NULL. */
int mb_kern_cuda_device_count(char *why, size_t whysz);

/* Selects device ordinal for the calling thread, creates its context and
 * fills *dev from the driver's attributes. MB_ERUN with the CUDA error. */
int mb_kern_cuda_open(int ordinal, mb_kern_cuda_device *dev, mb_err *err);

/* Implementation chosen for one kernel of a plan. */
typedef enum mb_kern_cuda_impl {
    MB_KERN_CUDA_OP = 0, /* one node, generic per-op kernel (16-byte vectors) */
    MB_KERN_CUDA_HAND,   /* hand-written fused kernel of a lecture variant */
    MB_KERN_CUDA_EVAL,   /* the fused-kernel evaluator over the node list */
    MB_KERN_CUDA_ROW,    /* the row evaluator (plans with row operations) */
    MB_KERN_CUDA_ROW_OP, /* a hand-written per-op row kernel (rows_op.cu) */
    MB_KERN_CUDA_COL,    /* the column evaluator (a sum over the rows: cols_eval.cu) */
    MB_KERN_CUDA_IMPL_COUNT
} mb_kern_cuda_impl;

const char *mb_kern_cuda_impl_name(mb_kern_cuda_impl i); /* "op", "hand", "eval", "row", "rowop", "col" */

/* What one SM holds a row in, as the model's onchip_kib counts it (device
 * table, model/device_table.c): shared memory + registers per SM, KiB. */
double mb_kern_cuda_onchip_kib(const mb_kern_cuda_device *dev);

/* Flags of mb_kern_cuda_plan_new. */
enum {
    MB_KERN_CUDA_NO_HAND = 1, /* never pick hand-written kernels */
    MB_KERN_CUDA_ALL_EVAL = 2 /* run every kernel with the evaluator */
};

/* Which implementation runs one kernel of a plan: decided from the plan
 * alone (mb_kern_cuda_plan_new lowers each kernel by this choice), so it
 * needs no GPU or driver. */
typedef struct mb_kern_cuda_choice {
    mb_kern_cuda_impl impl;
    mb_dtype dt;          /* storage type of the kernel's tensors */
    int hand;             /* MB_KERN_CUDA_HAND: index of the hand-written kernel */
    char hand_name[64];   /* MB_KERN_CUDA_HAND: "sigmoid3_store_bwd", else "" */
    mb_op op;             /* MB_KERN_CUDA_OP: the node's op */
    /* The __global__ function launched, as the demangler writes it without
     * "void" and the parameter list: "op_kernel<0, 7, 0>",
     * "hand_kernel<1, sigmoid3_store_fwd_f>", "copy_kernel<0>", "eval_kernel".
     * For checks of the compiled code (tests/ptx_traffic.c). */
    char symbol[128];
    /* bit i: the kernel's parameter i is passed NULL at every launch (an
     * op_kernel operand that is a scalar), so accesses through it never run */
    unsigned null_params;
    /* MB_KERN_CUDA_ROW, MB_KERN_CUDA_ROW_OP: 1 when the row is kept on chip (the model's one pass
     * on the device: mb_kernel_onepass_max_cols >= cols), the passes the
     * kernel makes over a row, a row per warp (1) or per block (0), and the
     * dynamic shared memory a block takes */
    int onepass, passes, warp;
    int64_t smem_bytes;
} mb_kern_cuda_choice;

/* The evaluator's __global__ function (fused_eval.cu), as symbol names it. */
#define MB_KERN_CUDA_EVAL_SYMBOL "eval_kernel"

/* Fills *c with the implementation kernel k of plan p runs with under flags
 * (MB_KERN_CUDA_NO_HAND, MB_KERN_CUDA_ALL_EVAL). MB_EINPUT when kernel k
 * does not exist or computes or writes nothing. */
int mb_kern_cuda_choose(const mb_plan *p, int k, int flags, mb_kern_cuda_choice *c, mb_err *err);
/* The same at shape s on device dev (a plan with row operations: one pass
 * exactly where the model makes one on dev; dev NULL: multi-pass). */
int mb_kern_cuda_choose_shape(const mb_plan *p, int k, mb_shape s, const mb_device *dev, int flags,
                              mb_kern_cuda_choice *c, mb_err *err);

/* Global memory traffic of the row kernel kernel k of plan p runs at shape s
 * on dev on the row evaluator (the passes and one-pass choice of
 * mb_kern_cuda_choose_shape; a hand-written row-op kernel makes the same
 * passes, which tests/ptx_traffic.c reads from its PTX), per element of a full
 * [rows, cols] tensor, from its lowered program (host only, no GPU):
 * read_pe, full-row reads x the passes that load them from memory (a row
 * kept on chip: once); write_pe, full-row writes; col_pe, [cols] operands,
 * which every row loads again (from L1 or L2: the model counts them once).
 * MB_EINPUT when kernel k is not a row kernel or cannot be lowered. */
typedef struct mb_kern_cuda_row_bytes {
    double read_pe, write_pe, col_pe;
    double grp_pe;    /* GCOL reads: bytes loaded per element of the full shape */
    int full_loads;   /* loads of full-row tensors per element */
    int passes, onepass;
} mb_kern_cuda_row_bytes;
int mb_kern_cuda_row_traffic(const mb_plan *p, int k, mb_shape s, const mb_device *dev,
                             mb_kern_cuda_row_bytes *out, mb_err *err);

/* Runs every kernel of t's plan (a plan with row operations) on the host
 * with the row evaluator's programs at t->shape on dev (the GPU runs them
 * where no hand-written row-op kernel is chosen): the same
 * lowering, the same per-lane code of rows_eval.cu over host memory, lanes
 * taken in turn and statistics merged in the kernel's shuffle order. For
 * checking the CUDA row kernels' logic without a GPU (against
 * mb_kern_verify); not a CPU backend (it is slow and single-threaded). */
int mb_kern_cuda_row_emulate(mb_kern_tensors *t, const mb_device *dev, mb_err *err);

/* A plan's tensors in device memory and one launch recipe per kernel.
 * cudaMalloc'd buffers (256-byte aligned) for every tensor some kernel reads
 * or writes; values that stay inside a kernel have none. */
typedef struct mb_kern_cuda_plan mb_kern_cuda_plan;

/* Device bytes mb_kern_cuda_plan_new would allocate for p at n elements. */
int64_t mb_kern_cuda_plan_bytes(const mb_plan *p, int64_t n);
/* The same at a shape (each tensor sized by its shape class). */
int64_t mb_kern_cuda_plan_bytes_shape(const mb_plan *p, mb_shape s);

/* Prepares plan p (borrowed: must outlive the result) at n elements on the
 * current device: allocates its tensors and lowers every kernel. sm_count
 * sizes the grids (blocks = SMs x resident blocks per SM). MB_ERUN when
 * device memory runs out (nothing is left allocated), MB_EINPUT when a kernel
 * cannot be lowered (the message names it). */
int mb_kern_cuda_plan_new(const mb_plan *p, int64_t n, int sm_count, int flags,
                          mb_kern_cuda_plan **out, mb_err *err);
/* The same at shape s: tensors sized by their shape class; kernels of a plan
 * with row operations run on the row evaluator, one pass where the model
 * makes one on dev (NULL: multi-pass), except where one block's shared
 * memory (opt-in) cannot hold the row the model keeps on chip (an SM's
 * shared memory and registers): that kernel runs multi-pass
 * (mb_kern_cuda_plan_short_of_chip says so, its description why). */
int mb_kern_cuda_plan_new_shape(const mb_plan *p, mb_shape s, const mb_device *dev, int sm_count, int flags,
                                mb_kern_cuda_plan **out, mb_err *err);
void mb_kern_cuda_plan_free(mb_kern_cuda_plan *cp);

int mb_kern_cuda_plan_kernels(const mb_kern_cuda_plan *cp);
/* 1 when kernel k runs multi-pass where the model keeps its row on chip. */
int mb_kern_cuda_plan_short_of_chip(const mb_kern_cuda_plan *cp, int k);
mb_kern_cuda_impl mb_kern_cuda_plan_impl(const mb_kern_cuda_plan *cp, int k);
/* One-line description of kernel k's implementation, e.g.
 * "hand:sigmoid3_store_bwd bf16 v8", "op:sin f32 v4" or "eval 9 ins 4 slots f32". */
const char *mb_kern_cuda_plan_desc(const mb_kern_cuda_plan *cp, int k);

/* Copies every graph input (forward inputs, incoming gradients) from host
 * tensors t (same plan and n) to the device. Synchronous: returns after a
 * cudaDeviceSynchronize, so work on any stream (non-blocking ones included)
 * sees the data. */
int mb_kern_cuda_upload_inputs(mb_kern_cuda_plan *cp, const mb_kern_tensors *t, mb_err *err);

/* Fills every non-input tensor on the device with the sentinel
 * mb_kern_poison_value(rep), rounded to its dtype; enqueued on stream. */
int mb_kern_cuda_poison(mb_kern_cuda_plan *cp, unsigned rep, void *stream, mb_err *err);

/* Copies every result tensor (plan->results) and every saved tensor from the
 * device into t. Synchronous (waits for the device). */
int mb_kern_cuda_download_results(const mb_kern_cuda_plan *cp, mb_kern_tensors *t, mb_err *err);

/* Enqueues kernel k (or every kernel, in order) on stream (NULL: the legacy
 * default stream). Checks the launch (cudaGetLastError); does not wait. */
int mb_kern_cuda_launch(mb_kern_cuda_plan *cp, int k, void *stream, mb_err *err);
int mb_kern_cuda_launch_plan(mb_kern_cuda_plan *cp, void *stream, mb_err *err);

/* ---- attention on a GPU (attn_cuda.cu) --------------------------------------
 * The plans of kernels.h's attention section with a GPU's kernels
 * (mb_kern_attn_plan_kernels_gpu), f32, on the current device. */

typedef struct mb_kern_attn_cuda mb_kern_attn_cuda;

/* The flash tiles (query rows = key columns) for head_dim: the largest of
 * 64, 32, 16, 8 whose forward (Q, K, V, O tiles and S) and backward (K, V,
 * dK, dV, Q, dO tiles, P and dS) shared memory stays within 48 KiB. 0 when
 * none fits (head_dim beyond 252 backward, 380
 * forward); returns 1 when both fit. Host only. */
int mb_kern_attn_cuda_tiles(int64_t head_dim, int *fwd_tile, int *bwd_tile);

/* Allocates a's tensors on the current device (owned by *out) and copies
 * a's inputs there (q, k, v, do, the causal mask of the standard plan); the
 * outputs are NaN until a kernel writes them. a: from mb_kern_attn_alloc,
 * borrowed for the call only. MB_ERUN without a GPU (the reason) or when
 * device memory runs out, MB_EINPUT for sizes the kernels do not take. */
int mb_kern_attn_cuda_new(const mb_kern_attn *a, mb_kern_attn_cuda **out, mb_err *err);
void mb_kern_attn_cuda_free(mb_kern_attn_cuda *g);
int64_t mb_kern_attn_cuda_bytes(const mb_kern_attn_cuda *g); /* device bytes held */

/* Enqueues kernel id of g's plan (in plan order: each reads what the ones
 * before wrote), or every kernel of the plan, on stream (NULL: the legacy
 * default stream). Checks the launch; does not wait. MB_EINPUT for a kernel
 * not of the plan, MB_ERUN with the CUDA error. */
int mb_kern_attn_cuda_launch(mb_kern_attn_cuda *g, mb_kern_attn_kernel id, void *stream, mb_err *err);
int mb_kern_attn_cuda_run(mb_kern_attn_cuda *g, void *stream, mb_err *err);

/* Runs the plan once on the legacy default stream, a cudaEvent between each
 * kernel and the next, and waits: kernel_s[i] the seconds of the plan's i-th
 * kernel (MB_KERN_ATTN_N_KERNELS entries). Caches are not flushed. */
int mb_kern_attn_cuda_time(mb_kern_attn_cuda *g, double *kernel_s, mb_err *err);

/* Waits for the device and copies the outputs (o, the flash plan's lse and
 * D, dq, dk, dv) into a, the run g was made from (mb_kern_attn_verify then
 * checks them). MB_EINPUT when a's sizes or plan are not g's. */
int mb_kern_attn_cuda_download(const mb_kern_attn_cuda *g, mb_kern_attn *a, mb_err *err);

/* ---- probes for the harness (probes.cu) ------------------------------------
 * All enqueue on stream (a cudaStream_t, NULL: legacy default) and return
 * MB_ERUN with the CUDA error; none waits unless it says so. */

/* Reads bytes (a multiple of 16) of buf in 16-byte vectors, through L2:
 * evicts what L2 held and leaves it holding clean lines of buf. sink: a device
 * float that is practically never written (keeps the loads alive). */
int mb_kern_cuda_read_sweep(const void *buf, int64_t bytes, float *sink, int sm_count, void *stream,
                            mb_err *err);

/* Sets n elements of storage type dt at buf to v (rounded to dt). */
int mb_kern_cuda_fill(void *buf, mb_dtype dt, float v, int64_t n, int sm_count, void *stream, mb_err *err);

/* dst = src, n elements of dt, with the hand-written copy kernel. */
int mb_kern_cuda_copy(const void *src, void *dst, mb_dtype dt, int64_t n, int sm_count, void *stream,
                      mb_err *err);

/* A one-thread kernel that spins until *flag (host-mapped memory) becomes
 * non-zero, or timeout_s passes (then sets *timed_out, device memory). */
int mb_kern_cuda_block(volatile int *flag, double timeout_s, int *timed_out, void *stream, mb_err *err);

/* Current SM clock in MHz: clock64 ticks over 200 us of %globaltimer.
 * Synchronous. */
int mb_kern_cuda_sm_clock_mhz(void *stream, double *mhz, mb_err *err);

/* FMA peak probe: *flops gets the fp32 flops the launch performs. */
int mb_kern_cuda_fma(int iters, float *sink, int sm_count, void *stream, double *flops, mb_err *err);

/* Throughput probe of op (register-resident, 4 streams per thread, plus one
 * add each): *elems gets the elements the launch evaluates. */
int mb_kern_cuda_op_rate(mb_op op, int iters, float *sink, int sm_count, void *stream, double *elems,
                         mb_err *err);

/* 1 when op has a per-op kernel in every storage type (elementwise.cu), or a
 * case in the fused evaluator (fused_eval.cu): both walk op_table.h. Host
 * only, no device needed. */
int mb_kern_cuda_has_op(mb_op op);
int mb_kern_cuda_eval_has_op(mb_op op);

/* An empty kernel (launch overhead). */
int mb_kern_cuda_empty(void *stream, mb_err *err);

#ifdef __cplusplus
}
#endif
#endif
