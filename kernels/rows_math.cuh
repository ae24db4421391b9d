/* rows_math.cuh — the row kernels' statistics, shared by the row evaluator
 * (rows_eval.cu) and the hand-written row-op kernels (rows_op.cu): partial
 * sums, max, online softmax's (max, sum of exp) pairs and Welford's (count,
 * mean, M2), each accumulated a value at a time and merged pairwise, and
 * their warp shuffles. Host and device (the evaluator's host emulation runs
 * the same code). CUDA C++ only; no kernels here. */
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


#endif
