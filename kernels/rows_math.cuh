/* rows_math.cuh — the row kernels' statistics, shared by the row evaluator
 * (rows_eval.cu) and the hand-written row-op kernels (rows_op.cu): partial
 * sums, max, online softmax's (max, sum of exp) pairs and Welford's (count,
 * mean, M2), each accumulated a value at a time and merged pairwise, and
 * their warp shuffles; and the 4-column loads, stores and ops of the fused,
 * row and column evaluators (fused_eval.cu, rows_eval.cu, cols_eval.cu). Host and device (the
 * evaluators' host emulations run the same code). CUDA C++ only; no kernels
 * here. */
#ifndef MB_ROWS_MATH_CUH
#define MB_ROWS_MATH_CUH

#include "kernels_cuda_int.cuh"

#include <math.h>

MB_HD static inline float row_exp(float x) { return mb_op_apply_f32(MB_OP_EXP, x, 0.0f); }

/* Partial statistics: three floats a thread (sum | max | (max, sum) |
 * (count, mean, M2)), merged pairwise. */
struct row_part {
    float a, b, c;
};

MB_HD static inline row_part part_init(int kind)
{
    row_part q = {0.0f, 0.0f, 0.0f};
    if (kind == MB_ROWS_MAX || kind == MB_ROWS_ONLINE) q.a = -INFINITY;
    return q;
}

MB_HD static inline void part_add(int kind, row_part &q, float x, float m)
{
    switch (kind) {
    case MB_ROWS_SUM: q.a += x; break;
    case MB_ROWS_SUMSQ: q.a += x * x; break;
    case MB_ROWS_MAX: q.a = x > q.a ? x : q.a; break;
    case MB_ROWS_SUMEXP: q.a += row_exp(x - m); break;
    case MB_ROWS_ONLINE:
        if (x > q.a) {
            q.b = q.b * row_exp(q.a - x) + 1.0f; /* exp(-inf) = 0 on the first */
            q.a = x;
        } else {
            q.b += row_exp(x - q.a);
        }
        break;
    case MB_ROWS_WELFORD: {
        q.a += 1.0f;
        const float d = x - q.b;
        q.b += d / q.a;
        q.c += d * (x - q.b);
        break;
    }
    default: break;
    }
}

MB_HD static inline row_part part_merge(int kind, row_part p, row_part q)
{
    switch (kind) {
    case MB_ROWS_SUM:
    case MB_ROWS_SUMSQ:
    case MB_ROWS_SUMEXP: p.a += q.a; return p;
    case MB_ROWS_MAX: p.a = q.a > p.a ? q.a : p.a; return p;
    case MB_ROWS_ONLINE: {
        const float m = q.a > p.a ? q.a : p.a;
        if (m == -INFINITY) return p;
        row_part r = {m, (p.a == -INFINITY ? 0.0f : p.b * row_exp(p.a - m)) +
                             (q.a == -INFINITY ? 0.0f : q.b * row_exp(q.a - m)), 0.0f};
        return r;
    }
    case MB_ROWS_WELFORD: {
        const float n = p.a + q.a;
        if (n == 0.0f) return p;
        const float d = q.b - p.b;
        row_part r = {n, p.b + d * (q.a / n), p.c + q.c + d * d * (p.a * q.a / n)};
        return r;
    }
    default: return p;
    }
}

__device__ __forceinline__ row_part part_shfl(row_part q, int off)
{
    row_part r = {__shfl_xor_sync(0xffffffffu, q.a, off), __shfl_xor_sync(0xffffffffu, q.b, off),
                  __shfl_xor_sync(0xffffffffu, q.c, off)};
    return r;
}


/* ---- loads and stores of 4 columns ----------------------------------------- */

/* Columns c..c+3 of a row at element base of p (dt); those at or past cols
 * read as 0. vec: 1 when base and cols are multiples of 4 (aligned vectors). */
#ifdef __CUDA_ARCH__
#define ROW_LDG(p) __ldg(p)
#define ROW_UNROLL _Pragma("unroll")
#else
#define ROW_LDG(p) (*(p))
#define ROW_UNROLL
#endif

MB_HD static inline float4 row_load4(const void *__restrict__ p, int dt, int64_t base, int64_t c,
                                            int64_t cols, int vec)
{
    if (vec && c + 4 <= cols) {
        const int64_t i = (base + c) >> 2;
        if (dt == MB_F32) return ROW_LDG(reinterpret_cast<const float4 *>(p) + i);
        const uint2 u = ROW_LDG(reinterpret_cast<const uint2 *>(p) + i);
        if (dt == MB_BF16)
            return make_float4(mb_bf16_to_f32((uint16_t)(u.x & 0xffffu)), mb_bf16_to_f32((uint16_t)(u.x >> 16)),
                               mb_bf16_to_f32((uint16_t)(u.y & 0xffffu)), mb_bf16_to_f32((uint16_t)(u.y >> 16)));
        return make_float4(mb_f16_to_f32((uint16_t)(u.x & 0xffffu)), mb_f16_to_f32((uint16_t)(u.x >> 16)),
                           mb_f16_to_f32((uint16_t)(u.y & 0xffffu)), mb_f16_to_f32((uint16_t)(u.y >> 16)));
    }
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
ROW_UNROLL
    for (int j = 0; j < 4; j++)
        if (c + j < cols) v[j] = mb_load_f32(p, base + c + j, (mb_dtype)dt);
    return make_float4(v[0], v[1], v[2], v[3]);
}

MB_HD static inline uint32_t row_pack2(int dt, float a, float b)
{
    const uint32_t lo = dt == MB_BF16 ? mb_f32_to_bf16(a) : mb_f32_to_f16(a);
    const uint32_t hi = dt == MB_BF16 ? mb_f32_to_bf16(b) : mb_f32_to_f16(b);
    return lo | (hi << 16);
}

MB_HD static inline void row_store4(void *__restrict__ p, int dt, int64_t base, int64_t c, int64_t cols,
                                           int vec, float4 v)
{
    if (vec && c + 4 <= cols) {
        const int64_t i = (base + c) >> 2;
        if (dt == MB_F32) reinterpret_cast<float4 *>(p)[i] = v;
        else reinterpret_cast<uint2 *>(p)[i] = make_uint2(row_pack2(dt, v.x, v.y), row_pack2(dt, v.z, v.w));
        return;
    }
    const float w[4] = {v.x, v.y, v.z, v.w};
ROW_UNROLL
    for (int j = 0; j < 4; j++)
        if (c + j < cols) mb_store_f32(p, base + c + j, (mb_dtype)dt, w[j]);
}

/* ---- math --------------------------------------------------------------------- */

MB_HD static inline float row_apply(int op, float a, float b)
{
    switch (op) {
#define MB_CASE(E, ...) \
    case MB_OP_##E: return mb_op_apply_f32(MB_OP_##E, a, b);
        MB_OP_TABLE(MB_CASE)
#undef MB_CASE
    default: return a;
    }
}

/* op applied lane-wise. op is warp-uniform: one indirect branch per
 * instruction, then straight-line math with the op constant-folded (the
 * fused, row and column evaluators). */
MB_HD static inline float4 row_apply4(int op, float4 a, float4 b)
{
    switch (op) {
#define MB_CASE(E, ...)                                                                                    \
    case MB_OP_##E:                                                                                        \
        return make_float4(mb_op_apply_f32(MB_OP_##E, a.x, b.x), mb_op_apply_f32(MB_OP_##E, a.y, b.y), \
                           mb_op_apply_f32(MB_OP_##E, a.z, b.z), mb_op_apply_f32(MB_OP_##E, a.w, b.w));
        MB_OP_TABLE(MB_CASE) /* every row of op_table.h */
#undef MB_CASE
    default: return a;
    }
}

#endif
