/* mb_ops.h — per-element math of every mb_op, and bf16/f16 storage conversion,
 * written once for the CPU executors, the float64 reference and the CUDA kernels.
 * Header only (static inline, MB_HD = __host__ __device__ under nvcc); compiles as
 * C11 and as CUDA C++. It does not loop over arrays or vectorise: executors do that.
 *
 * Conventions (one definition, all backends):
 *   gelu(x)      = x Phi(x), Phi(x) = 0.5 (1 + erf(x / sqrt 2)) = 0.5 erfc(-x / sqrt 2):
 *                  the exact (erf) GELU, evaluated through erfc so that the
 *                  negative tail has no cancellation (f32 1 + erff(-3.5) loses
 *                  5 of its 24 bits)
 *   gelu_grad(x) = Phi(x) + x phi(x), phi = exp(-x^2/2) / sqrt(2 pi)
 *   sigmoid(x)   = 1 / (1 + exp(-x))
 *   rsqrt(x)     = 1 / sqrt(x)
 *   relu(x)      = x > 0 ? x : 0, NaN stays NaN (as torch.relu)
 *   step(x)      = x > 0 ? 1 : 0 (relu'), NaN stays NaN
 *   sign(x)      = -1 or 1, x itself for 0, -0 and NaN (abs')
 *   pow(x, c)    = x * x ... for integer c in [-4, 4], else powf / pow
 * Binary ops take (a, b); unary ops ignore b. MB_OP_INPUT is not an operation:
 * applying it returns a (callers never do). */
#ifndef MB_OPS_H
#define MB_OPS_H

#include "membound_model.h"

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define MB_HD __host__ __device__
#else
#define MB_HD
#endif

#define MB_OPS_SQRT1_2 0.70710678118654752440   /* 1 / sqrt(2) */
#define MB_OPS_INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */

/* ---- float32 ------------------------------------------------------------- */

/* x**c with exact multiplication for small integer exponents (|c| <= 4), the
 * common case of the language (x**2, x**3), else powf. */
MB_HD static inline float mb_op_powf(float x, float c)
{
    if (c == 2.0f) return x * x;
    if (c == 3.0f) return x * x * x;
    if (c == 1.0f) return x;
    if (c == 0.0f) return 1.0f;
    if (c == 4.0f) { float x2 = x * x; return x2 * x2; }
    if (c == -1.0f) return 1.0f / x;
    if (c == -2.0f) return 1.0f / (x * x);
    if (c == 0.5f) return sqrtf(x);
    return powf(x, c);
}

/* Value of op applied to a (and b for binary ops), in float32 arithmetic. */
MB_HD static inline float mb_op_apply_f32(mb_op op, float a, float b)
{
    switch (op) {
    case MB_OP_ADD: return a + b;
    case MB_OP_SUB: return a - b;
    case MB_OP_MUL: return a * b;
    case MB_OP_DIV: return a / b;
    case MB_OP_POW: return mb_op_powf(a, b);
    case MB_OP_NEG: return -a;
    case MB_OP_SIN: return sinf(a);
    case MB_OP_COS: return cosf(a);
    case MB_OP_TAN: return tanf(a);
    case MB_OP_TANH: return tanhf(a);
    case MB_OP_EXP: return expf(a);
    case MB_OP_LOG: return logf(a);
    case MB_OP_SQRT: return sqrtf(a);
    case MB_OP_RSQRT: return 1.0f / sqrtf(a);
    case MB_OP_SIGMOID: return 1.0f / (1.0f + expf(-a));
    case MB_OP_RELU: return (a > 0.0f || a != a) ? a : 0.0f;
    case MB_OP_ABS: return fabsf(a);
    case MB_OP_GELU: return 0.5f * a * erfcf(-a * (float)MB_OPS_SQRT1_2);
    case MB_OP_COPY: return a;
    case MB_OP_RECIPROCAL: return 1.0f / a;
    case MB_OP_STEP: return a != a ? a : (a > 0.0f ? 1.0f : 0.0f);
    case MB_OP_SIGN: return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : a); /* 0, -0, NaN: a */
    case MB_OP_GELU_GRAD:
        return 0.5f * erfcf(-a * (float)MB_OPS_SQRT1_2) +
               a * (float)MB_OPS_INV_SQRT_2PI * expf(-0.5f * a * a);
    case MB_OP_INPUT:
    case MB_OP_COUNT:
        break;
    }
    return a;
}

/* ---- float64 (the reference) --------------------------------------------- */

MB_HD static inline double mb_op_pow(double x, double c)
{
    if (c == 2.0) return x * x;
    if (c == 3.0) return x * x * x;
    if (c == 1.0) return x;
    if (c == 0.0) return 1.0;
    if (c == 4.0) { double x2 = x * x; return x2 * x2; }
    if (c == -1.0) return 1.0 / x;
    if (c == -2.0) return 1.0 / (x * x);
    if (c == 0.5) return sqrt(x);
    return pow(x, c);
}

/* Value of op applied to a (and b for binary ops), in float64 arithmetic. */
MB_HD static inline double mb_op_apply_f64(mb_op op, double a, double b)
{
    switch (op) {
    case MB_OP_ADD: return a + b;
    case MB_OP_SUB: return a - b;
    case MB_OP_MUL: return a * b;
    case MB_OP_DIV: return a / b;
    case MB_OP_POW: return mb_op_pow(a, b);
    case MB_OP_NEG: return -a;
    case MB_OP_SIN: return sin(a);
    case MB_OP_COS: return cos(a);
    case MB_OP_TAN: return tan(a);
    case MB_OP_TANH: return tanh(a);
    case MB_OP_EXP: return exp(a);
    case MB_OP_LOG: return log(a);
    case MB_OP_SQRT: return sqrt(a);
    case MB_OP_RSQRT: return 1.0 / sqrt(a);
    case MB_OP_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case MB_OP_RELU: return (a > 0.0 || a != a) ? a : 0.0;
    case MB_OP_ABS: return fabs(a);
    case MB_OP_GELU: return 0.5 * a * erfc(-a * MB_OPS_SQRT1_2);
    case MB_OP_COPY: return a;
    case MB_OP_RECIPROCAL: return 1.0 / a;
    case MB_OP_STEP: return a != a ? a : (a > 0.0 ? 1.0 : 0.0);
    case MB_OP_SIGN: return a > 0.0 ? 1.0 : (a < 0.0 ? -1.0 : a);
    case MB_OP_GELU_GRAD:
        return 0.5 * erfc(-a * MB_OPS_SQRT1_2) +
               a * MB_OPS_INV_SQRT_2PI * exp(-0.5 * a * a);
    case MB_OP_INPUT:
    case MB_OP_COUNT:
        break;
    }
    return a;
}

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
