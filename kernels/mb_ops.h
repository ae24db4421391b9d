/* mb_ops.h — the kernels' per-element header: every op's math (op_math.h,
 * owned by the model, which folds constants with it) and bf16/f16 storage
 * conversion, for the CPU executors, the float64 reference and the CUDA
 * kernels. Header only (static inline, MB_HD = __host__ __device__ under
 * nvcc); compiles as C11 and as CUDA C++. It does not loop over arrays. */
#ifndef MB_OPS_H
#define MB_OPS_H

#include "op_math.h"

#include <stdint.h>

/* ---- bit casts ------------------------------------------------------------ */

MB_HD static inline uint32_t mb_f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return (uint32_t)__float_as_uint(f);
#else
    union { float f; uint32_t u; } v;
    v.f = f;
    return v.u;
#endif
}

MB_HD static inline float mb_f32_from_bits(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    union { float f; uint32_t u; } v;
    v.u = u;
    return v.f;
#endif
}

/* ---- bfloat16 storage ----------------------------------------------------- */

/* float32 -> bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN,
 * overflow rounds to infinity as IEEE rounding does. */
MB_HD static inline uint16_t mb_f32_to_bf16(float f)
{
    uint32_t u = mb_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* bfloat16 bits -> float32 (exact). */
MB_HD static inline float mb_bf16_to_f32(uint16_t h)
{
    return mb_f32_from_bits((uint32_t)h << 16);
}

/* ---- IEEE binary16 storage ------------------------------------------------ */

/* float32 -> binary16 bits, round to nearest even, with subnormals; values at or
 * above 65520 become infinity; NaN stays a quiet NaN (top payload bits kept). */
MB_HD static inline uint16_t mb_f32_to_f16(float f)
{
    uint32_t x = mb_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or NaN */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? (0x200u | ((ax >> 13) & 0x3ffu)) : 0u));
    if (ax >= 0x477ff000u) /* >= 65520: the tie above 65504 rounds to even = inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: subnormal half or zero */
        if (ax <= 0x33000000u) return (uint16_t)sign; /* <= 2^-25: ties to 0 */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14 .. 24 */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = (ax - 0x38000000u) >> 13; /* rebias 127 -> 15 */
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

/* binary16 bits -> float32 (exact, subnormals included). */
MB_HD static inline float mb_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
    uint32_t m = (uint32_t)h & 0x3ffu;
    if (e == 0) {
        if (m == 0) return mb_f32_from_bits(sign);
        e = 113u; /* 2^-14 in float32's bias */
        while (!(m & 0x400u)) { m <<= 1; e--; }
        m &= 0x3ffu;
        return mb_f32_from_bits(sign | (e << 23) | (m << 13));
    }
    if (e == 31u) return mb_f32_from_bits(sign | 0x7f800000u | (m << 13));
    return mb_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* ---- storage by dtype ----------------------------------------------------- */

/* Element i of an array stored as t, as float32. */
MB_HD static inline float mb_load_f32(const void *p, int64_t i, mb_dtype t)
{
    if (t == MB_BF16) return mb_bf16_to_f32(((const uint16_t *)p)[i]);
    if (t == MB_F16) return mb_f16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

/* Stores v as element i of an array stored as t (rounded to nearest even). */
MB_HD static inline void mb_store_f32(void *p, int64_t i, mb_dtype t, float v)
{
    if (t == MB_BF16) ((uint16_t *)p)[i] = mb_f32_to_bf16(v);
    else if (t == MB_F16) ((uint16_t *)p)[i] = mb_f32_to_f16(v);
    else ((float *)p)[i] = v;
}

#endif
