/* kernels_cuda_int.cuh — shared by the .cu files of kernels/ only: storage
 * types, 16-byte vector loads and stores, grid sizing, the launchers each
 * kernel family exports to the plan runner (cuda_plan.cu).
 * Not a public header; CUDA C++ only. No kernels here. */
#ifndef MB_KERNELS_CUDA_INT_CUH
#define MB_KERNELS_CUDA_INT_CUH

#include "kernels_cuda.h"
#include "mb_cuda_check.cuh" /* CUDA_TRY */
#include "mb_ops.h"

#include <cuda_runtime.h>
#include <stdint.h>

/* Threads per block of every kernel: 8 warps, so a 2048-thread SM holds 8
 * blocks and a grid of SMs x 8 blocks is resident at once. The model counts
 * a multi-pass row kernel's rows in flight by the same block
 * (MB_ROW_BLOCK_THREADS, membound_model.h). */
#define MB_CUDA_THREADS 256
static_assert(MB_CUDA_THREADS == MB_ROW_BLOCK_THREADS,
              "the model's row block (MB_ROW_BLOCK_THREADS) is the row kernels' block");

/* ---- storage types -------------------------------------------------------- */

/* Elements per 16-byte vector: 4 f32, 8 bf16 or f16. */
template <int DT> struct mb_cuda_st { enum { V = 8 }; };
template <> struct mb_cuda_st<MB_F32> { enum { V = 4 }; };

/* One 16-byte vector of storage type DT, widened to f32. */
template <int DT>
__device__ __forceinline__ void mb_cuda_unpack16(uint4 u, float (&v)[mb_cuda_st<DT>::V])
{
    if constexpr (DT == MB_F32) {
        v[0] = __uint_as_float(u.x);
        v[1] = __uint_as_float(u.y);
        v[2] = __uint_as_float(u.z);
        v[3] = __uint_as_float(u.w);
    } else {
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint16_t lo = (uint16_t)(w[j] & 0xffffu), hi = (uint16_t)(w[j] >> 16);
            v[2 * j] = DT == MB_BF16 ? mb_bf16_to_f32(lo) : mb_f16_to_f32(lo);
            v[2 * j + 1] = DT == MB_BF16 ? mb_bf16_to_f32(hi) : mb_f16_to_f32(hi);
        }
    }
}

/* One 16-byte vector of storage type DT at vector index vi, widened to f32.
 * p is 16-byte aligned (cudaMalloc gives 256). */
template <int DT>
__device__ __forceinline__ void mb_cuda_ld16(const void *__restrict__ p, int64_t vi,
                                             float (&v)[mb_cuda_st<DT>::V])
{
    mb_cuda_unpack16<DT>(__ldg(reinterpret_cast<const uint4 *>(p) + vi), v);
}

/* Rounds v to DT (nearest even) and stores it as one 16-byte vector. */
template <int DT>
__device__ __forceinline__ void mb_cuda_st16(void *__restrict__ p, int64_t vi,
                                             const float (&v)[mb_cuda_st<DT>::V])
{
    uint4 u;
    if constexpr (DT == MB_F32) {
        u.x = __float_as_uint(v[0]);
        u.y = __float_as_uint(v[1]);
        u.z = __float_as_uint(v[2]);
        u.w = __float_as_uint(v[3]);
    } else {
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t lo = DT == MB_BF16 ? mb_f32_to_bf16(v[2 * j]) : mb_f32_to_f16(v[2 * j]);
            const uint32_t hi = DT == MB_BF16 ? mb_f32_to_bf16(v[2 * j + 1]) : mb_f32_to_f16(v[2 * j + 1]);
            w[j] = lo | (hi << 16);
        }
        u = make_uint4(w[0], w[1], w[2], w[3]);
    }
    reinterpret_cast<uint4 *>(p)[vi] = u;
}

/* Scalar element access for the tail (n not a multiple of V). */
template <int DT>
__device__ __forceinline__ float mb_cuda_ld1(const void *__restrict__ p, int64_t i)
{
    return mb_load_f32(p, i, (mb_dtype)DT);
}
template <int DT>
__device__ __forceinline__ void mb_cuda_st1(void *__restrict__ p, int64_t i, float v)
{
    mb_store_f32(p, i, (mb_dtype)DT, v);
}

/* Global thread index and stride of a grid-stride loop. */
__device__ __forceinline__ int64_t mb_cuda_tid(void)
{
    return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t mb_cuda_stride(void)
{
    return (int64_t)gridDim.x * blockDim.x;
}

/* ---- grid sizing ---------------------------------------------------------- */

/* Blocks for a grid-stride kernel over `work` items (one per thread per
 * iteration): enough to fill the device (sm_count x blocks_per_sm resident
 * blocks, from the occupancy calculator), never more than the work needs. */
static inline int mb_cuda_grid(int blocks_per_sm, int64_t work, int sm_count)
{
    int64_t want = (work + MB_CUDA_THREADS - 1) / MB_CUDA_THREADS;
    int64_t full = (int64_t)(sm_count > 0 ? sm_count : 1) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    int64_t g = want < full ? want : full;
    return g < 1 ? 1 : (int)g;
}

/* Resident blocks per SM of kernel fn at MB_CUDA_THREADS threads, asked once
 * per call site (*cache holds it; 0 = not asked yet). */
template <typename F>
static inline cudaError_t mb_cuda_occupancy(F fn, int *cache)
{
    if (*cache) return cudaSuccess;
    int b = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, fn, MB_CUDA_THREADS, 0);
    if (e != cudaSuccess) return e;
    *cache = b > 0 ? b : 1;
    return cudaSuccess;
}

/* ---- launchers exported by each kernel family ----------------------------- */

/* elementwise.cu: y = op(a, b) over n elements, all of storage type dt.
 * a == NULL means the scalar sa, b == NULL the scalar sb (unary ops ignore b).
 * Returns cudaErrorNotSupported when dt/op has no per-op kernel. */
cudaError_t mb_cuda_op_launch(mb_op op, mb_dtype dt, const void *a, float sa, const void *b, float sb,
                              void *y, int64_t n, int sm_count, cudaStream_t s, int *grid_out);

/* elementwise.cu: the demangled name (mb_kern_cuda_choice's symbol) of the
 * kernel mb_cuda_op_launch runs for op and dt, and in *null_params the bits of
 * its parameters passed NULL when operand a (a_null) or b (b_null) is a
 * scalar. 0, or -1 when there is no such kernel or buf is too small. */
int mb_cuda_op_symbol(mb_op op, mb_dtype dt, int a_null, int b_null, char *buf, size_t size,
                      unsigned *null_params);

/* fused_eval.cu: the evaluator's program. Values live in slots; reads are
 * loaded into their slots first, instructions run in order, writes are stored
 * from their slots last. An operand index MB_EVAL_IMM means the instruction's
 * immediate. Passed by value as a __grid_constant__ kernel parameter. */
#define MB_EVAL_MAX_INS 192
#define MB_EVAL_MAX_IO 16
#define MB_EVAL_MAX_SLOTS 32
#define MB_EVAL_IMM 255

typedef struct mb_eval_ins {
    uint8_t op, dst, a, b;
    float imm;
} mb_eval_ins;

typedef struct mb_eval_prog {
    int n_ins, n_reads, n_writes, n_slots;
    const void *reads[MB_EVAL_MAX_IO];
    void *writes[MB_EVAL_MAX_IO];
    uint8_t read_dt[MB_EVAL_MAX_IO], write_dt[MB_EVAL_MAX_IO];
    uint8_t read_slot[MB_EVAL_MAX_IO], write_slot[MB_EVAL_MAX_IO];
    mb_eval_ins ins[MB_EVAL_MAX_INS];
} mb_eval_prog;

cudaError_t mb_cuda_eval_launch(const mb_eval_prog *prog, int64_t n, int sm_count, cudaStream_t s,
                                int *grid_out);

/* rows_eval.cu: the row evaluator's program, for every kernel of a plan with
 * row operations (cuda_rows.cu lowers one from the model's kernel). A group
 * of threads (a warp for rows up to MB_ROW_WARP_MAX_COLS columns, the whole
 * block above) takes a row and makes the kernel's passes over it; in each
 * pass the instructions run in order over the row, 4 columns per thread per
 * iteration. Operands: a per-element slot (< MB_ROW_MAX_SLOTS), a row value
 * (MB_ROW_RV | k: per row, e.g. a reduction's result), or the immediate. */
#define MB_ROW_MAX_INS 64
#define MB_ROW_MAX_IO 8
#define MB_ROW_MAX_SLOTS 16
#define MB_ROW_MAX_STATS 8
#define MB_ROW_MAX_RV 32
#define MB_ROW_RV 0x80
#define MB_ROW_IMM 255
#define MB_ROW_WARP_MAX_COLS 1024

typedef enum mb_row_ins_kind {
    MB_ROWI_ELEM = 0, /* slot[dst] = op(a, b) per element */
    MB_ROWI_RV,       /* rv[dst] = op(a, b) once per row (first thread), at the pass start */
    MB_ROWI_STAT,     /* statistic `stat` accumulates operand a */
    MB_ROWI_LIB       /* slot[dst] = library op's output from its finished statistics */
} mb_row_ins_kind;

typedef enum mb_row_stat_kind {
    MB_ROWS_SUM = 0, /* res0 = sum x (mean: / cols) */
    MB_ROWS_MAX,     /* res0 = max x */
    MB_ROWS_SUMEXP,  /* res0 = sum exp(x - res0 of statistic dep) */
    MB_ROWS_ONLINE,  /* res0 = max x, res1 = sum exp(x - res0), one pass */
    MB_ROWS_WELFORD, /* res0 = mean, res1 = variance (biased), Welford / Chan */
    MB_ROWS_SUMSQ    /* res0 = sum x*x */
} mb_row_stat_kind;

typedef struct mb_row_ins {
    uint8_t kind, op, dst, a, b;
    uint8_t stat, stat2;  /* MB_ROWI_STAT: its statistic; MB_ROWI_LIB: the first (and second) */
    uint8_t pad;
    uint32_t mask;        /* bit p: runs in pass p */
    float imm_a, imm_b, eps;
} mb_row_ins;

typedef struct mb_row_stat {
    uint8_t kind, pass, dep;
    uint8_t rv;           /* row value set from it when it finishes, MB_ROW_IMM: none */
    uint8_t which;        /* the result that goes to rv: 0 res0, 1 res1 */
    uint8_t mean;         /* MB_ROWS_SUM: divide by cols */
} mb_row_stat;

/* Shapes of reads and writes: those with columns (full, [cols], GCOL: a
 * group row's [cols], at row (r / grp_inner) % grp_outer; PART, writes
 * only: a colsum's partial sums, row r added into row r % blocks), then row
 * values. */
enum { MB_ROWT_FULL = 0, MB_ROWT_COL, MB_ROWT_GCOL, MB_ROWT_PART, MB_ROWT_ROW, MB_ROWT_SCALAR };
#define MB_ROWT_HAS_COLS(s) ((s) <= MB_ROWT_PART)

/* Where row r of a read or write io (with columns) starts, cols a row. */
#define MB_ROWT_BASE(io, r, cols) \
    ((io).shape == MB_ROWT_FULL ? (r) * (cols) \
     : (io).shape == MB_ROWT_GCOL ? ((r) / (int64_t)(io).grp_inner % (int64_t)(io).grp_outer) * (cols) : 0)

/* Node nd's shape class as a row or column program reads or writes it. */
static inline int mb_cuda_rowt_of(const mb_node *nd)
{
    switch (nd->shape) {
    case MB_SHC_COL: return MB_ROWT_COL;
    case MB_SHC_GCOL: return MB_ROWT_GCOL;
    case MB_SHC_PART: return MB_ROWT_PART;
    case MB_SHC_ROW:
    case MB_SHC_ROWV: return MB_ROWT_ROW;
    case MB_SHC_SCALAR: return MB_ROWT_SCALAR;
    default: return MB_ROWT_FULL;
    }
}

/* GCOL node v's grp_inner and grp_outer for a program (mb_graph_group);
 * MB_EINPUT when either passes 2^32 - 1. */
static inline int mb_cuda_group_of(const mb_graph *g, int v, uint32_t *inner, uint32_t *outer, mb_err *err)
{
    *inner = *outer = 1;
    if (g->nodes[v].shape != MB_SHC_GCOL) return MB_OK;
    int64_t in, out;
    mb_graph_group(g, v, &in, &out);
    if (in > (int64_t)UINT32_MAX || out > (int64_t)UINT32_MAX)
        return mb_err_set(err, MB_EINPUT, "tensor '%s': its broadcast within the leading dimensions spans more "
                          "than 2^32 rows, which the CUDA evaluators do not index", g->nodes[v].name);
    *inner = (uint32_t)in, *outer = (uint32_t)out;
    return MB_OK;
}

/* The index of v in a[0..n), or -1. */
static inline int mb_cuda_index_of(const int *a, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (a[i] == v) return i;
    return -1;
}

typedef struct mb_row_io {
    const void *p;
    uint8_t dt, shape;
    uint8_t at;           /* slot (FULL, COL) or row value (ROW, SCALAR) */
    uint8_t staged;       /* one pass: 1 when kept in shared memory after its first pass */
    uint32_t mask;        /* reads: passes it is loaded in; writes: the pass it is stored in */
    uint32_t stage_off;   /* staged: its bytes' offset in the group's staged row */
    uint32_t grp_inner, grp_outer; /* MB_ROWT_GCOL: mb_graph_group's */
} mb_row_io;

typedef struct mb_row_prog {
    int n_ins, n_stats, n_reads, n_writes, n_slots, n_rv, passes;
    int onepass;          /* 1: staged reads are loaded from memory in their first pass only */
    int64_t stage_bytes;  /* one pass: a group's staged row, every staged read's
                             cols (rounded up to 4) x its element size */
    int has_cols;         /* 0: every value is a row value (no column loop) */
    int64_t rows, cols;
    int64_t blocks;       /* > 0 with PART writes: row groups, each owning the
                             partial sums' row r % blocks of the rows r it
                             runs (a stride of blocks; the first stores) */
    mb_row_io reads[MB_ROW_MAX_IO], writes[MB_ROW_MAX_IO];
    mb_row_stat stats[MB_ROW_MAX_STATS];
    mb_row_ins ins[MB_ROW_MAX_INS];
} mb_row_prog;

/* cuda_rows.cu: kernel k of plan p (a plan with row operations) at shape s
 * as a row program over the device buffers dev (per node; NULL: none, for
 * host-only checks). onepass: keep the reads of several passes on chip.
 * MB_EINPUT (one line) when the kernel exceeds the program's limits. */
int mb_cuda_row_lower(const mb_plan *p, int k, mb_shape s, int onepass, void *const *dev, mb_row_prog *P,
                      mb_err *err);

/* Runs prog over every row on the host, one group of G lanes (the kernel's
 * 32 or 256) taking each row: every lane's columns in turn, then the
 * statistics merged lane by lane in the kernel's tree order (xor shuffles
 * within each warp, then the warps in order). The buffers in prog are host
 * memory. 0, or -1 when out of memory (rows_eval.cu). */
int mb_cuda_row_emulate(const mb_row_prog *prog, int G);

/* Dynamic shared memory a launch of prog takes (slots, partial statistics,
 * row values, the staged row) with `warp` groups (1) or one row a block (0). */
size_t mb_cuda_row_smem(const mb_row_prog *prog, int warp);
cudaError_t mb_cuda_row_launch(const mb_row_prog *prog, int sm_count, cudaStream_t s, int *grid_out);

/* cols_eval.cu: the column evaluator's program, for a kernel of a plan with
 * a sum over the rows (colsum: a [cols] weight's or bias's gradient) or with
 * [cols] values only (cuda_cols.cu lowers it, as kernels/rows_cols_cpu.c's
 * column kernels run it). A block holds MB_COL_LANES column lanes of 4
 * columns (one warp spans 128 contiguous columns of a row) and
 * MB_CUDA_THREADS / MB_COL_LANES row lanes (its warps); blockIdx.x is the
 * column tile, blockIdx.y the split of the rows. Rows phase: each warp takes
 * its split's rows in turn, loads the reads, runs row_ins and adds each
 * colsum's operand to its lane's sums (f32 over MB_COL_BLOCK_ROWS rows, then
 * into double, as the CPU's column kernels); the warps' sums go, in order, to
 * the split's slice of work. The last block of a column tile to finish
 * (arrival counter) adds the splits in order and runs post_ins once over its
 * columns ([cols] values: the sums and the nodes after them), storing the
 * post writes. Every value is a 4-column slot (a [rows, 1] or scalar value
 * broadcast); operands index slots, or MB_COL_IMM for the immediate. */
#define MB_COL_MAX_INS 48
#define MB_COL_MAX_IO 8
#define MB_COL_MAX_SLOTS 16
#define MB_COL_MAX_SUMS 4
#define MB_COL_IMM 255
#define MB_COL_LANES 32
#define MB_COL_ROW_LANES (MB_CUDA_THREADS / MB_COL_LANES)
#define MB_COL_TILE_COLS (4 * MB_COL_LANES)
/* rows a lane's f32 partial sums span before they are added into double:
 * the CPU column kernels' block (rows_cols_cpu.c COL_BLOCK_ROWS) */
#define MB_COL_BLOCK_ROWS 256

typedef enum mb_col_ins_kind {
    MB_COLI_ELEM = 0, /* slot[dst] = op(a, b) */
    MB_COLI_SUM,      /* rows phase: sum `sum` += slot[a] */
    MB_COLI_TOTAL     /* post phase: slot[dst] = sum `sum` over every row, in f32 */
} mb_col_ins_kind;

typedef struct mb_col_ins {
    uint8_t kind, op, dst, a, b, sum;
    float imm_a, imm_b;
} mb_col_ins;

typedef struct mb_col_io {
    const void *p;
    uint8_t dt, shape;    /* MB_ROWT_FULL, _COL, _GCOL (reads only), _ROW, _SCALAR; PART reads as FULL */
    uint8_t slot;
    uint8_t phase;        /* reads: bit 0 rows phase, bit 1 post phase; writes: 0 rows, 1 post */
    uint32_t grp_inner, grp_outer; /* MB_ROWT_GCOL reads: mb_graph_group's */
} mb_col_io;

typedef struct mb_col_prog {
    int n_row_ins, n_post_ins, n_reads, n_writes, n_slots, n_sums;
    int64_t rows, cols;
    int tiles, splits;    /* grid: column tiles x splits of the rows */
    int64_t split_rows;   /* rows of a split (the last may have fewer) */
    double *work;         /* device: [splits][n_sums][cols] each split's sums */
    unsigned *arrived;    /* device: [tiles] blocks of the tile finished, 0 between launches */
    mb_col_io reads[MB_COL_MAX_IO], writes[MB_COL_MAX_IO];
    mb_col_ins row_ins[MB_COL_MAX_INS], post_ins[MB_COL_MAX_INS];
} mb_col_prog;

/* cuda_cols.cu: 1 when kernel k of plan p runs on the column evaluator (it
 * has a colsum, or computes [cols] values only: mb_kern_col_phase's rule). */
int mb_cuda_col_kernel(const mb_plan *p, int k);
/* cuda_cols.cu: kernel k of plan p at shape s as a column program over the
 * device buffers dev (NULL: none, host checks), its rows split for sm_count
 * SMs. work and arrived are left NULL (the plan allocates them: sizes from
 * mb_cuda_col_work_bytes). MB_EINPUT, one line, past the program's limits. */
int mb_cuda_col_lower(const mb_plan *p, int k, mb_shape s, int sm_count, void *const *dev, mb_col_prog *P,
                      mb_err *err);
size_t mb_cuda_col_work_bytes(const mb_col_prog *P);
/* cols_eval.cu: dynamic shared memory of a launch; the launch; the same on
 * the host (P's buffers host memory, work and arrived included). */
size_t mb_cuda_col_smem(const mb_col_prog *P);
cudaError_t mb_cuda_col_launch(const mb_col_prog *P, cudaStream_t s, int *grid_out);
int mb_cuda_col_emulate(const mb_col_prog *P);

/* rows_op.cu: the hand-written per-op row kernels (one row op over rows of
 * whole 16-byte vectors). x [rows, cols]; w: the norms' [cols] weight, or
 * NULL for the scalar ws; y: [rows, cols], or [rows, 1] for the reductions. */
typedef struct mb_rowop_args {
    mb_op op;
    mb_dtype dt;
    int warp, onepass, online;
    const void *x, *w;
    void *y;
    int64_t rows, cols;
    float eps, ws;
} mb_rowop_args;

/* 1 when op has a hand-written row kernel. */
int mb_cuda_rowop_has(mb_op op);
/* The demangled name of the instantiated form, or -1 when there is none
 * (a warp row of a multi-pass op is instantiated on chip only, online for
 * the softmaxes only). */
int mb_cuda_rowop_symbol(mb_op op, mb_dtype dt, int warp, int onepass, int online, char *buf, size_t size);
/* Dynamic shared memory of a launch: the staged rows of a one-pass form. */
size_t mb_cuda_rowop_smem(mb_op op, mb_dtype dt, int warp, int onepass, int64_t cols);
cudaError_t mb_cuda_rowop_launch(const mb_rowop_args *a, int sm_count, cudaStream_t s, int *grid_out);

/* fused_lecture.cu: hand-written kernels. Pointers in the order of each
 * kernel's roles (see mb_cuda_hand_roles in cuda_plan.cu). */
typedef enum mb_hand_id {
    MB_HAND_COPY = 0,
    MB_HAND_SIN2_PLUS_COS2,
    MB_HAND_GELU_TANH,
    MB_HAND_SIGMOID3_STORE_FWD,
    MB_HAND_SIGMOID3_STORE_BWD,
    MB_HAND_SIGMOID3_RECOMPUTE_FWD,
    MB_HAND_SIGMOID3_RECOMPUTE_BWD,
    MB_HAND_COUNT
} mb_hand_id;

cudaError_t mb_cuda_hand_launch(mb_hand_id id, mb_dtype dt, const void *const *in, void *const *out,
                                int64_t n, int sm_count, cudaStream_t s, int *grid_out);

/* fused_lecture.cu: the demangled name of the kernel mb_cuda_hand_launch runs
 * for id and dt ("hand_kernel<1, gelu_tanh_f>"). 0, or -1 as mb_cuda_op_symbol. */
int mb_cuda_hand_symbol(mb_hand_id id, mb_dtype dt, char *buf, size_t size);

/* cuda_plan.cu: fill n elements of storage type dt with v. */
cudaError_t mb_cuda_fill_launch(void *p, mb_dtype dt, float v, int64_t n, int sm_count, cudaStream_t s);

#endif
