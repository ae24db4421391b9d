/* op_math.h — per-element math of every mb_op (op_table.h's rows), written once
 * for the parser's constant folding, the CPU executors, the float64 reference
 * and the CUDA kernels (kernels/mb_ops.h adds bf16/f16 storage).
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
 *   erf(x)       = torch.erf (its derivative is PyTorch's composite formula, autodiff.c)
 *   softplus(x)  = x > 20 ? x : log1p(exp(x)) (F.softplus, beta 1, threshold 20;
 *                  its derivative is sigmoid(x), 1 in float32 above 20 as torch's)
 *   silu(x)      = x / (1 + exp(-x)) = x sigmoid(x) (F.silu);
 *   silu_grad(x) = s (1 + x (1 - s)), s = sigmoid(x) (torch's silu_backward)
 * Binary ops take (a, b); unary ops ignore b. MB_OP_INPUT is not an operation:
 * applying it returns a (callers never do). */
#ifndef MB_OP_MATH_H
#define MB_OP_MATH_H

#include "membound_model.h"

#include <math.h>

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
#if !defined(__CUDA_ARCH__)
    /* in float64 on the host: erfcf of the f32-rounded -a / sqrt 2 is off by
     * 2 z^2 x half an ulp (hundreds of ulps in the tail); the CPU's vector
     * form (vec_ops.h) is exact to 7 units of 2^-24, and this, its loops'
     * tails, to rounding */
    case MB_OP_GELU: return (float)(0.5 * (double)a * erfc(-(double)a * MB_OPS_SQRT1_2));
    case MB_OP_GELU_GRAD:
        return (float)(0.5 * erfc(-(double)a * MB_OPS_SQRT1_2) +
                       (double)a * MB_OPS_INV_SQRT_2PI * exp(-0.5 * (double)a * (double)a));
#else
    case MB_OP_GELU: return 0.5f * a * erfcf(-a * (float)MB_OPS_SQRT1_2);
    case MB_OP_GELU_GRAD:
        return 0.5f * erfcf(-a * (float)MB_OPS_SQRT1_2) +
               a * (float)MB_OPS_INV_SQRT_2PI * expf(-0.5f * a * a);
#endif
    case MB_OP_COPY: return a;
    case MB_OP_RECIPROCAL: return 1.0f / a;
    case MB_OP_STEP: return a != a ? a : (a > 0.0f ? 1.0f : 0.0f);
    case MB_OP_SIGN: return a > 0.0f ? 1.0f : (a < 0.0f ? -1.0f : a); /* 0, -0, NaN: a */
    case MB_OP_EQ: return a == b ? 1.0f : 0.0f;
    case MB_OP_ERF: return erff(a);
    case MB_OP_SOFTPLUS: return a > 20.0f ? a : log1pf(expf(a));
    case MB_OP_SILU: return a / (1.0f + expf(-a));
    case MB_OP_SILU_GRAD: {
        float s = 1.0f / (1.0f + expf(-a));
        return s * (1.0f + a * (1.0f - s));
    }
    case MB_OP_SUM: case MB_OP_MEAN: case MB_OP_AMAX: case MB_OP_SOFTMAX:
    case MB_OP_LOG_SOFTMAX: case MB_OP_LAYER_NORM: case MB_OP_RMS_NORM: case MB_OP_COLSUM:
        /* row and column operations: no per-element form (kernels/rows_cpu.c) */
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
    case MB_OP_EQ: return a == b ? 1.0 : 0.0;
    case MB_OP_ERF: return erf(a);
    case MB_OP_SOFTPLUS: return a > 20.0 ? a : log1p(exp(a));
    case MB_OP_SILU: return a / (1.0 + exp(-a));
    case MB_OP_SILU_GRAD: {
        double s = 1.0 / (1.0 + exp(-a));
        return s * (1.0 + a * (1.0 - s));
    }
    case MB_OP_SUM: case MB_OP_MEAN: case MB_OP_AMAX: case MB_OP_SOFTMAX:
    case MB_OP_LOG_SOFTMAX: case MB_OP_LAYER_NORM: case MB_OP_RMS_NORM: case MB_OP_COLSUM:
        /* row and column operations: no per-element form (kernels/rows_cpu.c) */
    case MB_OP_INPUT:
    case MB_OP_COUNT:
        break;
    }
    return a;
}

#endif
