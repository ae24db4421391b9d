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
 * blocks and a grid of SMs x 8 blocks is resident at once. */
#define MB_CUDA_THREADS 256

/* ---- storage types -------------------------------------------------------- */

/* Elements per 16-byte vector: 4 f32, 8 bf16 or f16. */
template <int DT> struct mb_cuda_st { enum { V = 8 }; };
template <> struct mb_cuda_st<MB_F32> { enum { V = 4 }; };

/* One 16-byte vector of storage type DT at vector index vi, widened to f32.
 * p is 16-byte aligned (cudaMalloc gives 256). */
template <int DT>
__device__ __forceinline__ void mb_cuda_ld16(const void *__restrict__ p, int64_t vi,
                                             float (&v)[mb_cuda_st<DT>::V])
{
    const uint4 u = __ldg(reinterpret_cast<const uint4 *>(p) + vi);
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
