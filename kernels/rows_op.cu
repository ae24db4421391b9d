/* rows_op.cu — hand-written per-op row kernels: one row operation over the
 * last dimension of a [rows, cols] tensor whose rows are whole 16-byte
 * vectors (cols a multiple of 4 f32 or 8 bf16/f16 elements), as PyTorch's
 * reduction and normalization kernels run them.
 *   row_op_kernel<dtype, op, warp, onepass, online>
 *     op: sum, mean, amax (y [rows, 1]); softmax, log_softmax (3 passes:
 *     max, sum of exp, write; online: (max, sum) in one pass, then write);
 *     layer_norm (Welford, then (x - mean) * rstd * w); rms_norm (sum of
 *     squares, then x * rstd * w). warp: a warp takes a row (up to 1024
 *     columns, 8 rows a block), else the block (256 threads). onepass: the
 *     first pass keeps the row in shared memory (16-byte vectors as loaded)
 *     and the later passes read it there; else each pass re-reads memory.
 * Statistics in f32 (bf16 and f16 widen), merged by warp shuffles and one
 * partial per warp (rows_math.cuh, as the row evaluator). Each column loop
 * moves one 16-byte vector per thread per iteration (`#pragma unroll 1`), so
 * tests/ptx_traffic.c reads its bytes per element from the PTX. The choice
 * of these kernels (and of one pass) is cuda_plan.cu's. */
#include "kernels_cuda_int.cuh"
#include "rows_math.cuh"

#include <stdio.h>

#define ROWOP_WARPS (MB_CUDA_THREADS / 32)

/* The group's total of q (every lane gets it). */
template <int WARP>
__device__ __forceinline__ row_part rowop_reduce(int kind, row_part q, row_part *scratch, int lane)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) q = part_merge(kind, q, part_shfl(q, off));
    if (!WARP) {
        __syncthreads(); /* the last reduction's readers are done */
        if (lane % 32 == 0) scratch[lane / 32] = q;
        __syncthreads();
        q = scratch[0];
        for (int w = 1; w < ROWOP_WARPS; w++) q = part_merge(kind, q, scratch[w]);
    }
    return q;
}

/* Vector j of the row: from memory (and into the stage), or from the stage. */
template <int DT, int ONEPASS>
__device__ __forceinline__ void rowop_get(const void *__restrict__ x, uint4 *stage, int64_t rv, int64_t j, int first,
                                          float (&v)[mb_cuda_st<DT>::V])
{
    uint4 u;
    if (ONEPASS && !first) {
        u = stage[j];
    } else {
        u = __ldg(reinterpret_cast<const uint4 *>(x) + rv + j);
        if (ONEPASS) stage[j] = u;
    }
    mb_cuda_unpack16<DT>(u, v);
}

template <int DT, int OP, int WARP, int ONEPASS, int ONLINE>
__global__ void __launch_bounds__(MB_CUDA_THREADS)
    row_op_kernel(const void *__restrict__ x, const void *__restrict__ w, void *__restrict__ y, int64_t rows,
                  int64_t cols, float eps, float ws)
{
    constexpr int V = mb_cuda_st<DT>::V;
    extern __shared__ uint4 rowop_stage[];
    __shared__ row_part scratch[ROWOP_WARPS];
    const int G = WARP ? 32 : MB_CUDA_THREADS;
    const int groups = WARP ? ROWOP_WARPS : 1;
    const int g = WARP ? (int)threadIdx.x / 32 : 0;
    const int lane = WARP ? (int)threadIdx.x % 32 : (int)threadIdx.x;
    const int64_t nv = cols / V;
    uint4 *stage = rowop_stage + (ONEPASS ? (size_t)g * (size_t)nv : 0);
    const float fcols = (float)cols;
    float v[V];
    for (int64_t row = (int64_t)blockIdx.x * groups + g; row < rows; row += (int64_t)gridDim.x * groups) {
        const int64_t rv = row * nv;
        if constexpr (OP == MB_OP_SUM || OP == MB_OP_MEAN || OP == MB_OP_AMAX) {
            const int kind = OP == MB_OP_AMAX ? MB_ROWS_MAX : MB_ROWS_SUM;
            row_part q = part_init(kind);
#pragma unroll 1
            for (int64_t j = lane; j < nv; j += G) {
                rowop_get<DT, 0>(x, stage, rv, j, 1, v);
#pragma unroll
                for (int e = 0; e < V; e++) part_add(kind, q, v[e], 0.0f);
            }
            q = rowop_reduce<WARP>(kind, q, scratch, lane);
            if (lane == 0) mb_cuda_st1<DT>(y, row, OP == MB_OP_MEAN ? q.a / fcols : q.a);
        } else {
            /* the statistics: softmax's max then sum of exp (or the online
             * pair), layer_norm's Welford, rms_norm's sum of squares */
            const int kind = OP == MB_OP_LAYER_NORM ? MB_ROWS_WELFORD
                             : OP == MB_OP_RMS_NORM ? MB_ROWS_SUMSQ
                             : ONLINE               ? MB_ROWS_ONLINE
                                                    : MB_ROWS_MAX;
            row_part q = part_init(kind);
#pragma unroll 1
            for (int64_t j = lane; j < nv; j += G) {
                rowop_get<DT, ONEPASS>(x, stage, rv, j, 1, v);
#pragma unroll
                for (int e = 0; e < V; e++) part_add(kind, q, v[e], 0.0f);
            }
            q = rowop_reduce<WARP>(kind, q, scratch, lane);
            float m = q.a, s = q.b;
            if constexpr ((OP == MB_OP_SOFTMAX || OP == MB_OP_LOG_SOFTMAX) && !ONLINE) {
                row_part t = part_init(MB_ROWS_SUMEXP);
#pragma unroll 1
                for (int64_t j = lane; j < nv; j += G) {
                    rowop_get<DT, ONEPASS>(x, stage, rv, j, 0, v);
#pragma unroll
                    for (int e = 0; e < V; e++) part_add(MB_ROWS_SUMEXP, t, v[e], m);
                }
                s = rowop_reduce<WARP>(MB_ROWS_SUMEXP, t, scratch, lane).a;
            }
            /* the output pass */
            float mu = 0.0f, rstd = 1.0f;
            if constexpr (OP == MB_OP_LAYER_NORM) {
                mu = q.b;
                const float var = q.a > 0.0f ? q.c / q.a : 0.0f;
                rstd = 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
            }
            if constexpr (OP == MB_OP_RMS_NORM) rstd = 1.0f / sqrtf(q.a / fcols + eps);
            const float inv = 1.0f / s, ls = logf(s);
#pragma unroll 1
            for (int64_t j = lane; j < nv; j += G) {
                rowop_get<DT, ONEPASS>(x, stage, rv, j, 0, v);
                float o[V], wv[V];
                if constexpr (OP == MB_OP_LAYER_NORM || OP == MB_OP_RMS_NORM) {
                    if (w) {
                        mb_cuda_ld16<DT>(w, j, wv);
                    } else {
#pragma unroll
                        for (int e = 0; e < V; e++) wv[e] = ws;
                    }
                }
#pragma unroll
                for (int e = 0; e < V; e++) {
                    if constexpr (OP == MB_OP_SOFTMAX) o[e] = row_exp(v[e] - m) * inv;
                    else if constexpr (OP == MB_OP_LOG_SOFTMAX) o[e] = v[e] - m - ls;
                    else if constexpr (OP == MB_OP_LAYER_NORM) o[e] = (v[e] - mu) * rstd * wv[e];
                    else o[e] = v[e] * rstd * wv[e];
                }
                mb_cuda_st16<DT>(y, rv + j, o);
            }
        }
        if (!WARP) __syncthreads(); /* the next row reuses the stage */
        else __syncwarp();
    }
}

/* ---- launchers and names ------------------------------------------------------- */

#define ROWOP_N_OPS 7
static const int rowop_ops[ROWOP_N_OPS] = {MB_OP_SUM, MB_OP_MEAN, MB_OP_AMAX, MB_OP_SOFTMAX, MB_OP_LOG_SOFTMAX,
                                           MB_OP_LAYER_NORM, MB_OP_RMS_NORM};

int mb_cuda_rowop_has(mb_op op)
{
    for (int i = 0; i < ROWOP_N_OPS; i++)
        if (rowop_ops[i] == (int)op) return 1;
    return 0;
}

/* Whether op makes several passes (and so has one-pass and online forms). */
static int multi(int op) { return op != MB_OP_SUM && op != MB_OP_MEAN && op != MB_OP_AMAX; }
static int softmaxish(int op) { return op == MB_OP_SOFTMAX || op == MB_OP_LOG_SOFTMAX; }

int mb_cuda_rowop_symbol(mb_op op, mb_dtype dt, int warp, int onepass, int online, char *buf, size_t size)
{
    if (!mb_cuda_rowop_has(op) || dt >= MB_DTYPE_COUNT) return -1;
    /* instantiated forms: reductions one pass; warp rows on chip only;
     * online for the softmaxes only */
    if (!multi(op)) onepass = 0, online = 0;
    if (multi(op) && warp && !onepass) return -1;
    if (online && !softmaxish(op)) return -1;
    int w = snprintf(buf, size, "row_op_kernel<%d, %d, %d, %d, %d>", (int)dt, (int)op, warp ? 1 : 0, onepass ? 1 : 0,
                     online ? 1 : 0);
    return w > 0 && (size_t)w < size ? 0 : -1;
}

size_t mb_cuda_rowop_smem(mb_op op, mb_dtype dt, int warp, int onepass, int64_t cols)
{
    if (!multi(op) || !onepass) return 0;
    return (size_t)(warp ? ROWOP_WARPS : 1) * (size_t)cols * (size_t)mb_dtype_bytes(dt);
}

template <int DT, int OP, int WARP, int ONEPASS, int ONLINE>
static cudaError_t rowop_go(const mb_rowop_args *a, int sm_count, cudaStream_t s, int *grid_out)
{
    auto fn = row_op_kernel<DT, OP, WARP, ONEPASS, ONLINE>;
    const size_t smem = mb_cuda_rowop_smem((mb_op)OP, (mb_dtype)DT, WARP, ONEPASS, a->cols);
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    int b = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, fn, MB_CUDA_THREADS, smem);
    if (e != cudaSuccess) return e;
    const int64_t per_block = WARP ? ROWOP_WARPS : 1;
    const int64_t want = (a->rows + per_block - 1) / per_block;
    const int64_t full = (int64_t)(sm_count > 0 ? sm_count : 1) * (b > 0 ? b : 1);
    const int grid = (int)(want < full ? (want < 1 ? 1 : want) : full);
    fn<<<grid, MB_CUDA_THREADS, smem, s>>>(a->x, a->w, a->y, a->rows, a->cols, a->eps, a->ws);
    if (grid_out) *grid_out = grid;
    return cudaGetLastError();
}

template <int DT, int OP>
static cudaError_t rowop_forms(const mb_rowop_args *a, int sm_count, cudaStream_t s, int *grid_out)
{
    if constexpr (OP == MB_OP_SUM || OP == MB_OP_MEAN || OP == MB_OP_AMAX) {
        return a->warp ? rowop_go<DT, OP, 1, 0, 0>(a, sm_count, s, grid_out)
                       : rowop_go<DT, OP, 0, 0, 0>(a, sm_count, s, grid_out);
    } else if constexpr (OP == MB_OP_SOFTMAX || OP == MB_OP_LOG_SOFTMAX) {
        if (a->warp) return a->online ? rowop_go<DT, OP, 1, 1, 1>(a, sm_count, s, grid_out)
                                      : rowop_go<DT, OP, 1, 1, 0>(a, sm_count, s, grid_out);
        if (a->onepass) return a->online ? rowop_go<DT, OP, 0, 1, 1>(a, sm_count, s, grid_out)
                                         : rowop_go<DT, OP, 0, 1, 0>(a, sm_count, s, grid_out);
        return a->online ? rowop_go<DT, OP, 0, 0, 1>(a, sm_count, s, grid_out)
                         : rowop_go<DT, OP, 0, 0, 0>(a, sm_count, s, grid_out);
    } else {
        if (a->warp) return rowop_go<DT, OP, 1, 1, 0>(a, sm_count, s, grid_out);
        return a->onepass ? rowop_go<DT, OP, 0, 1, 0>(a, sm_count, s, grid_out)
                          : rowop_go<DT, OP, 0, 0, 0>(a, sm_count, s, grid_out);
    }
}

template <int DT>
static cudaError_t rowop_dt(const mb_rowop_args *a, int sm_count, cudaStream_t s, int *grid_out)
{
    switch (a->op) {
    case MB_OP_SUM: return rowop_forms<DT, MB_OP_SUM>(a, sm_count, s, grid_out);
    case MB_OP_MEAN: return rowop_forms<DT, MB_OP_MEAN>(a, sm_count, s, grid_out);
    case MB_OP_AMAX: return rowop_forms<DT, MB_OP_AMAX>(a, sm_count, s, grid_out);
    case MB_OP_SOFTMAX: return rowop_forms<DT, MB_OP_SOFTMAX>(a, sm_count, s, grid_out);
    case MB_OP_LOG_SOFTMAX: return rowop_forms<DT, MB_OP_LOG_SOFTMAX>(a, sm_count, s, grid_out);
    case MB_OP_LAYER_NORM: return rowop_forms<DT, MB_OP_LAYER_NORM>(a, sm_count, s, grid_out);
    case MB_OP_RMS_NORM: return rowop_forms<DT, MB_OP_RMS_NORM>(a, sm_count, s, grid_out);
    default: return cudaErrorNotSupported;
    }
}

cudaError_t mb_cuda_rowop_launch(const mb_rowop_args *a, int sm_count, cudaStream_t s, int *grid_out)
{
    switch (a->dt) {
    case MB_F32: return rowop_dt<MB_F32>(a, sm_count, s, grid_out);
    case MB_BF16: return rowop_dt<MB_BF16>(a, sm_count, s, grid_out);
    case MB_F16: return rowop_dt<MB_F16>(a, sm_count, s, grid_out);
    default: return cudaErrorNotSupported;
    }
}
