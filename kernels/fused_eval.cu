/* fused_eval.cu — the fused-kernel evaluator: runs any kernel of any plan (its
 * node list lowered to a small program by cuda_plan.cu) in one launch.
 *   eval_kernel  per thread 4 consecutive elements per iteration: reads loaded
 *                into slots (16-byte f32 / 8-byte bf16, f16 vectors), the
 *                program run on float4 slots, writes stored from slots;
 *                mixed dtypes allowed (each read and write has its own).
 * CPU reference: mb_kern_reference_elem (reference.c), same math (mb_ops.h).
 * The program is a __grid_constant__ parameter: read from the constant bank,
 * uniform across the warp, so the op switch never diverges. Slots are indexed
 * at run time, so they cannot live in registers; they live in dynamic shared
 * memory, n_slots x 16 B per thread, slot s of thread t at [s * blockDim + t]
 * (a warp's float4 accesses are contiguous: no bank conflict). A local-memory
 * array would cost a 512-byte stack frame per thread whose lines can leave
 * L1 and reach L2 (and DRAM, as dirty write-backs the counters would see).
 * The block size shrinks when the slots would not fit 48 KiB per block.
 * It does not pick which kernels it runs (cuda_plan.cu does). */
#include "kernels_cuda_int.cuh"

/* ---- device helpers ------------------------------------------------------- */

/* Four elements from i0 of an array of storage type dt; elements at or past
 * n (the last, partial group) read as 0. */
__device__ __forceinline__ float4 eval_load4(const void *__restrict__ p, int dt, int64_t i0, int64_t n)
{
    if (i0 + 4 <= n) {
        if (dt == MB_F32) return __ldg(reinterpret_cast<const float4 *>(p) + (i0 >> 2));
        const uint2 u = __ldg(reinterpret_cast<const uint2 *>(p) + (i0 >> 2));
        if (dt == MB_BF16)
            return make_float4(mb_bf16_to_f32((uint16_t)(u.x & 0xffffu)), mb_bf16_to_f32((uint16_t)(u.x >> 16)),
                               mb_bf16_to_f32((uint16_t)(u.y & 0xffffu)), mb_bf16_to_f32((uint16_t)(u.y >> 16)));
        return make_float4(mb_f16_to_f32((uint16_t)(u.x & 0xffffu)), mb_f16_to_f32((uint16_t)(u.x >> 16)),
                           mb_f16_to_f32((uint16_t)(u.y & 0xffffu)), mb_f16_to_f32((uint16_t)(u.y >> 16)));
    }
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < 4; j++) /* unrolled: constant indices keep v in registers */
        if (i0 + j < n) v[j] = mb_load_f32(p, i0 + j, (mb_dtype)dt);
    return make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ uint32_t eval_pack2(int dt, float a, float b)
{
    const uint32_t lo = dt == MB_BF16 ? mb_f32_to_bf16(a) : mb_f32_to_f16(a);
    const uint32_t hi = dt == MB_BF16 ? mb_f32_to_bf16(b) : mb_f32_to_f16(b);
    return lo | (hi << 16);
}

/* Stores the elements of v that lie below n, rounded to dt. */
__device__ __forceinline__ void eval_store4(void *__restrict__ p, int dt, int64_t i0, int64_t n, float4 v)
{
    if (i0 + 4 <= n) {
        if (dt == MB_F32) {
            reinterpret_cast<float4 *>(p)[i0 >> 2] = v;
        } else {
            reinterpret_cast<uint2 *>(p)[i0 >> 2] = make_uint2(eval_pack2(dt, v.x, v.y), eval_pack2(dt, v.z, v.w));
        }
        return;
    }
    const float w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (i0 + j < n) mb_store_f32(p, i0 + j, (mb_dtype)dt, w[j]);
}

/* op applied lane-wise. op is warp-uniform: one indirect branch per
 * instruction, then straight-line math with the op constant-folded. */
__device__ __forceinline__ float4 eval_apply4(int op, float4 a, float4 b)
{
    switch (op) {
#define MB_CASE(E, ...)                                                                        \
    case MB_OP_##E:                                                                                \
        return make_float4(mb_op_apply_f32(MB_OP_##E, a.x, b.x), mb_op_apply_f32(MB_OP_##E, a.y, b.y), \
                           mb_op_apply_f32(MB_OP_##E, a.z, b.z), mb_op_apply_f32(MB_OP_##E, a.w, b.w));
        MB_OP_TABLE(MB_CASE) /* every row of op_table.h */
#undef MB_CASE
    default:
        return a;
    }
}

/* 1 when eval_apply4 has a case for op (the same walk of op_table.h). */
extern "C" int mb_kern_cuda_eval_has_op(mb_op op)
{
    if (MB_OP_IS_ROW(op)) return 0; /* no row operations in the evaluator */
    switch (op) {
#define MB_CASE(E, ...) case MB_OP_##E: return 1;
        MB_OP_TABLE(MB_CASE)
#undef MB_CASE
    default:
        return 0;
    }
}

/* ---- kernel --------------------------------------------------------------- */

/* Dynamic shared memory: P.n_slots x blockDim.x float4, slot-major. */
__global__ void __launch_bounds__(MB_CUDA_THREADS) eval_kernel(const __grid_constant__ mb_eval_prog P, int64_t n)
{
    extern __shared__ float4 eval_slots[];
    float4 *const slot = eval_slots + threadIdx.x;
    const int sstride = (int)blockDim.x; /* slot s of this thread: slot[s * sstride] */
    const int64_t groups = (n + 3) >> 2;
    const int64_t stride = mb_cuda_stride();
    for (int64_t g = mb_cuda_tid(); g < groups; g += stride) {
        const int64_t i0 = g << 2;
        for (int r = 0; r < P.n_reads; r++)
            slot[P.read_slot[r] * sstride] = eval_load4(P.reads[r], P.read_dt[r], i0, n);
        for (int k = 0; k < P.n_ins; k++) {
            const mb_eval_ins in = P.ins[k];
            const float4 imm = make_float4(in.imm, in.imm, in.imm, in.imm);
            const float4 a = in.a == MB_EVAL_IMM ? imm : slot[in.a * sstride];
            const float4 b = in.b == MB_EVAL_IMM ? imm : slot[in.b * sstride];
            slot[in.dst * sstride] = eval_apply4(in.op, a, b);
        }
        for (int w = 0; w < P.n_writes; w++)
            eval_store4(P.writes[w], P.write_dt[w], i0, n, slot[P.write_slot[w] * sstride]);
    }
}

/* ---- launcher ------------------------------------------------------------- */

/* Shared memory per block the launch may use without an opt-in. */
#define MB_EVAL_SMEM_MAX (48 * 1024)

/* Threads per block for a program of n_slots slots: MB_CUDA_THREADS while
 * n_slots x 16 B x threads fits MB_EVAL_SMEM_MAX (up to 12 slots), else the
 * largest multiple of 32 that does (96 threads at 32 slots). */
static int eval_threads(int n_slots)
{
    const int per_thread = (n_slots > 0 ? n_slots : 1) * (int)sizeof(float4);
    int t = MB_EVAL_SMEM_MAX / per_thread / 32 * 32;
    if (t > MB_CUDA_THREADS) t = MB_CUDA_THREADS;
    return t < 32 ? 32 : t;
}

cudaError_t mb_cuda_eval_launch(const mb_eval_prog *prog, int64_t n, int sm_count, cudaStream_t s, int *grid_out)
{
    if (prog->n_slots < 0 || prog->n_slots > MB_EVAL_MAX_SLOTS) return cudaErrorInvalidValue;
    /* resident blocks per SM, per slot count (the shared memory differs) */
    static int blocks_per_sm[MB_EVAL_MAX_SLOTS + 1];
    const int slots = prog->n_slots > 0 ? prog->n_slots : 1;
    const int threads = eval_threads(slots);
    const size_t smem = (size_t)slots * sizeof(float4) * (size_t)threads;
    if (!blocks_per_sm[slots]) {
        int b = 0;
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, eval_kernel, threads, smem);
        if (e != cudaSuccess) return e;
        blocks_per_sm[slots] = b > 0 ? b : 1;
    }
    /* blocks: enough to fill the device, never more than the work needs */
    const int64_t groups = (n + 3) / 4;
    const int64_t want = (groups + threads - 1) / threads;
    const int64_t full = (int64_t)(sm_count > 0 ? sm_count : 1) * blocks_per_sm[slots];
    const int grid = (int)(want < full ? (want < 1 ? 1 : want) : full);
    eval_kernel<<<grid, threads, smem, s>>>(*prog, n);
    if (grid_out) *grid_out = grid;
    return cudaGetLastError();
}
