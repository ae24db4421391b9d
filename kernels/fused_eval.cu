/* fused_eval.cu — the fused-kernel evaluator: runs any kernel of any plan (its
 * node list lowered to a small program by cuda_plan.cu) in one launch.
 *   eval_kernel  per thread 4 consecutive elements per iteration: reads loaded
 *                into slots (16-byte f32 / 8-byte bf16, f16 vectors), the
 *                program run on float4 slots, writes stored from slots;
 *                mixed dtypes allowed (each read and write has its own).
 * CPU reference: mb_kern_reference_elem (reference.c), same math (mb_ops.h).
 * The program is a __grid_constant__ parameter: read from the constant bank,
 * uniform across the warp, so the op switch never diverges. Slots are indexed
 * at run time and so live in local memory (L1-resident: a few slots x 16 B
 * per thread). It does not pick which kernels it runs (cuda_plan.cu does). */
#include "kernels_cuda_int.cuh"

#define MB_ALL_OPS(X)                                                                           \
    X(MB_OP_ADD) X(MB_OP_SUB) X(MB_OP_MUL) X(MB_OP_DIV) X(MB_OP_POW) X(MB_OP_NEG) X(MB_OP_SIN)    \
    X(MB_OP_COS) X(MB_OP_TAN) X(MB_OP_TANH) X(MB_OP_EXP) X(MB_OP_LOG) X(MB_OP_SQRT) X(MB_OP_RSQRT) \
    X(MB_OP_SIGMOID) X(MB_OP_RELU) X(MB_OP_ABS) X(MB_OP_GELU) X(MB_OP_COPY) X(MB_OP_STEP)         \
    X(MB_OP_SIGN) X(MB_OP_GELU_GRAD)

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
    for (int j = 0; j < 4 && i0 + j < n; j++) v[j] = mb_load_f32(p, i0 + j, (mb_dtype)dt);
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
    for (int j = 0; j < 4 && i0 + j < n; j++) mb_store_f32(p, i0 + j, (mb_dtype)dt, w[j]);
}

/* op applied lane-wise. op is warp-uniform: one indirect branch per
 * instruction, then straight-line math with the op constant-folded. */
__device__ __forceinline__ float4 eval_apply4(int op, float4 a, float4 b)
{
    switch (op) {
#define MB_CASE(OP)                                                                  \
    case OP:                                                                         \
        return make_float4(mb_op_apply_f32(OP, a.x, b.x), mb_op_apply_f32(OP, a.y, b.y), \
                           mb_op_apply_f32(OP, a.z, b.z), mb_op_apply_f32(OP, a.w, b.w));
        MB_ALL_OPS(MB_CASE)
#undef MB_CASE
    default:
        return a;
    }
}

/* ---- kernel --------------------------------------------------------------- */

__global__ void __launch_bounds__(MB_CUDA_THREADS) eval_kernel(const __grid_constant__ mb_eval_prog P, int64_t n)
{
    float4 slot[MB_EVAL_MAX_SLOTS];
    const int64_t groups = (n + 3) >> 2;
    const int64_t stride = mb_cuda_stride();
    for (int64_t g = mb_cuda_tid(); g < groups; g += stride) {
        const int64_t i0 = g << 2;
        for (int r = 0; r < P.n_reads; r++) slot[P.read_slot[r]] = eval_load4(P.reads[r], P.read_dt[r], i0, n);
        for (int k = 0; k < P.n_ins; k++) {
            const mb_eval_ins in = P.ins[k];
            const float4 imm = make_float4(in.imm, in.imm, in.imm, in.imm);
            const float4 a = in.a == MB_EVAL_IMM ? imm : slot[in.a];
            const float4 b = in.b == MB_EVAL_IMM ? imm : slot[in.b];
            slot[in.dst] = eval_apply4(in.op, a, b);
        }
        for (int w = 0; w < P.n_writes; w++) eval_store4(P.writes[w], P.write_dt[w], i0, n, slot[P.write_slot[w]]);
    }
}

/* ---- launcher ------------------------------------------------------------- */

cudaError_t mb_cuda_eval_launch(const mb_eval_prog *prog, int64_t n, int sm_count, cudaStream_t s, int *grid_out)
{
    static int blocks_per_sm = 0;
    cudaError_t e = mb_cuda_occupancy(eval_kernel, &blocks_per_sm);
    if (e != cudaSuccess) return e;
    const int grid = mb_cuda_grid(blocks_per_sm, (n + 3) / 4, sm_count);
    eval_kernel<<<grid, MB_CUDA_THREADS, 0, s>>>(*prog, n);
    if (grid_out) *grid_out = grid;
    return cudaGetLastError();
}
