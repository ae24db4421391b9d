/* vec_ops.h — the vector forms of mb_ops.h's per-element math: the ISA's
 * vector type and SLEEF's functions (V_*), and the composite ops built from
 * them (MB_V_*), for vecmath.c's tile primitives and, as text, for the kernels
 * kernels/jit_cpu.c generates. Header only, no state; the scalar definitions
 * (and every op without a vector form here) stay in op_math.h. Self-contained
 * (the generated code includes nothing else of membound): keep it so. */
#ifndef MB_VEC_OPS_H
#define MB_VEC_OPS_H

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif
#if defined(MB_HAVE_SLEEF)
#include <sleef.h>
#endif

/* sin, cos and the sincos pair in SLEEF's 3.5-ulp forms, as PyTorch's at::vec
 * (and so Inductor's vector code) calls them; tanh in its 3.5-ulp form too
 * (at::vec calls u10 there); the rest 1 ulp (u10) as at::vec's.
 * ref_f32.c allows library functions 8 ulps. Xeon 2-vCPU guest, one thread,
 * L1-resident (bench/sleef_rates.c): sincos + squares 0.46-0.70 ns/element in
 * u35 against 1.08-1.39 in u10; Inductor's sin + cos (u35) 0.76-0.99: with u10,
 * sin^2+cos^2 fused at 2^24 took 1.27-1.29x Inductor's time on one thread.
 * tanh 0.62-1.23 ns/element in u35 against 1.96-3.19 in u10 (PyTorch's u10
 * 1.91-3.41), 2.7 ulps at most (every 97th f32 in [0, 12], both signs): the
 * tanh-GELU is one tanh and seven arithmetic ops, and u10's tanh was ~85% of
 * its time (as Inductor's kernel orders it: 0.78-1.69 ns/element with u35,
 * 2.08-3.62 in Inductor's with PyTorch's u10; four passes, load 8). */
#if defined(MB_HAVE_SLEEF) && defined(__AVX512F__)
#define MB_VW 16
typedef __m512 vf;
typedef Sleef___m512_2 vf2;
#define V_LD(p) _mm512_loadu_ps(p)
#define V_ST(p, v) _mm512_storeu_ps(p, v)
#define V_STREAM(p, v) _mm512_stream_ps(p, v) /* p 64-byte aligned */
#define V_SET(x) _mm512_set1_ps(x)
#define V_ADD _mm512_add_ps
#define V_SUB _mm512_sub_ps
#define V_MUL _mm512_mul_ps
#define V_DIV _mm512_div_ps
#define V_SQRT _mm512_sqrt_ps
#define V_MAX _mm512_max_ps /* the second operand where either is NaN */
#define V_GT_SELECTV(a, b, yes, no) _mm512_mask_blend_ps(_mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ), (no), (yes))
#define V_SIN Sleef_sinf16_u35
#define V_COS Sleef_cosf16_u35
#define V_SINCOS Sleef_sincosf16_u35 /* .x sin, .y cos */
#define V_TAN Sleef_tanf16_u10
#define V_TANH Sleef_tanhf16_u35
#define V_EXP Sleef_expf16_u10
#define V_LOG Sleef_logf16_u10
#define V_ERFC Sleef_erfcf16_u15
#define V_ERF Sleef_erff16_u10
#define V_LOG1P Sleef_log1pf16_u10
/* x > c ? yes : no, lane by lane (NaN: no) */
#define V_GT_SELECT(x, c, yes, no) _mm512_mask_blend_ps(_mm512_cmp_ps_mask((x), V_SET(c), _CMP_GT_OQ), (no), (yes))
#define V_POW Sleef_powf16_u10
#define V_FMA _mm512_fmadd_ps  /* a b + c, rounded once */
#define V_FMS _mm512_fmsub_ps  /* a b - c */
#define V_FNMA _mm512_fnmadd_ps /* c - a b */
#define V_ABS _mm512_abs_ps
#define V_MIN _mm512_min_ps /* the second operand where either is NaN */
#define MB_ISA "sleef-avx512f"
#elif defined(MB_HAVE_SLEEF) && defined(__AVX2__)
#define MB_VW 8
typedef __m256 vf;
typedef Sleef___m256_2 vf2;
#define V_LD(p) _mm256_loadu_ps(p)
#define V_ST(p, v) _mm256_storeu_ps(p, v)
#define V_STREAM(p, v) _mm256_stream_ps(p, v) /* p 32-byte aligned */
#define V_SET(x) _mm256_set1_ps(x)
#define V_ADD _mm256_add_ps
#define V_SUB _mm256_sub_ps
#define V_MUL _mm256_mul_ps
#define V_DIV _mm256_div_ps
#define V_SQRT _mm256_sqrt_ps
#define V_MAX _mm256_max_ps
#define V_GT_SELECTV(a, b, yes, no) _mm256_blendv_ps((no), (yes), _mm256_cmp_ps((a), (b), _CMP_GT_OQ))
#define V_SIN Sleef_sinf8_u35
#define V_COS Sleef_cosf8_u35
#define V_SINCOS Sleef_sincosf8_u35
#define V_TAN Sleef_tanf8_u10
#define V_TANH Sleef_tanhf8_u35
#define V_EXP Sleef_expf8_u10
#define V_LOG Sleef_logf8_u10
#define V_ERFC Sleef_erfcf8_u15
#define V_ERF Sleef_erff8_u10
#define V_LOG1P Sleef_log1pf8_u10
#define V_GT_SELECT(x, c, yes, no) _mm256_blendv_ps((no), (yes), _mm256_cmp_ps((x), V_SET(c), _CMP_GT_OQ))
#define V_POW Sleef_powf8_u10
#if defined(__FMA__)
#define V_FMA _mm256_fmadd_ps
#define V_FMS _mm256_fmsub_ps
#define V_FNMA _mm256_fnmadd_ps
#endif
#define V_ABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (x))
#define V_MIN _mm256_min_ps
#define MB_ISA "sleef-avx2"
#else
#define MB_ISA "scalar-libm"
#endif

#if defined(MB_VW)
/* The vector forms op_table.h's vform column names, one per row that has
 * one (V_ADD ... above for the rest): -x (signed zero and NaN included), x,
 * 1/x, 1/sqrt(x), 1/(1+exp(-x)), x Phi(x) and Phi(x) + x phi(x): op_math.h's
 * neg, copy, reciprocal, rsqrt, sigmoid, gelu and gelu_grad (Phi through
 * erfc, see there) */
#define MB_V_NEG(x) V_MUL(V_SET(-1.0f), (x))
#define MB_V_COPY(x) (x)
#define MB_V_RECIPROCAL(x) V_DIV(V_SET(1.0f), (x))
/* erf(x): op_math.h's erf */
#define MB_V_ERF(x) V_ERF(x)
/* x > 20 ? x : log1p(exp(x)): op_math.h's softplus */
#define MB_V_SOFTPLUS(x) V_GT_SELECT((x), 20.0f, (x), V_LOG1P(V_EXP(x)))
#define MB_V_RSQRT(x) V_DIV(V_SET(1.0f), V_SQRT(x))
#define MB_V_SIGMOID(x) V_DIV(V_SET(1.0f), V_ADD(V_SET(1.0f), V_EXP(V_SUB(V_SET(0.0f), (x)))))
/* gelu and gelu_grad: below, after the exp they use */
/* x / (1 + exp(-x)) and s (1 + x (1 - s)), s = sigmoid(x): op_math.h's silu
 * and silu_grad */
#define MB_V_SILU(x) V_DIV((x), V_ADD(V_SET(1.0f), V_EXP(V_SUB(V_SET(0.0f), (x)))))
static inline vf mb_v_silu_grad(vf x)
{
    vf s = MB_V_SIGMOID(x);
    return V_MUL(s, V_ADD(V_SET(1.0f), V_MUL(x, V_SUB(V_SET(1.0f), s))));
}
#define MB_V_SILU_GRAD(x) mb_v_silu_grad(x)
#endif

/* exp(x) for x <= 0 (softmax's exp(x - max), whose argument is never
 * positive): SLEEF has one exp form, u10, for every argument, and it took
 * 0.80-1.04 ns an element against 0.30-0.49 for this one (Xeon 2-vCPU
 * guest under load, one thread, L1-resident, AVX-512; calibrate's
 * exp_nonpos_gain through the tile loops, loads and stores included: 1.62). PyTorch's CPU softmax uses a 20-ulp exp of
 * its own for the same reason (F.softmax's largest error against float64 is
 * 2.4e-6 relative, torch.exp's 6e-8: torch 2.15). This one: x = n ln2 + r
 * (ln2 in two parts, Cody and Waite), |r| <= ln2 / 2, exp(r) by its Taylor
 * polynomial to r^7 (truncation below 1e-8 relative), times 2^n by
 * vscalefps (gradual underflow: exp(-104) rounds to 0 as in float64);
 * x below -104 is taken as -104, so -inf gives 0; NaN stays NaN (max takes
 * x when it is NaN). tests/kernels_vec.c holds it within 2 ulps of exp in
 * double from 0 down to -104. Other ISAs: SLEEF's. */
#if defined(MB_VW) && defined(__AVX512F__)
static inline vf mb_v_exp_nonpos(vf x)
{
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    const vf n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    vf r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
    vf p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}
#define MB_V_EXP_NONPOS(x) mb_v_exp_nonpos(x)
#elif defined(MB_VW)
#define MB_V_EXP_NONPOS(x) V_EXP(x)
#endif

/* The exact GELU, x Phi(x), and its derivative Phi(x) + x phi(x), with
 * phi(x) = exp(-x^2/2) / sqrt(2 pi) and 2 Phi(x) = erfc(-x / sqrt 2). Not
 * through SLEEF's erfc: its u15 form took 3.1 ns an element (one thread,
 * L1-resident, a 2-vCPU EPYC guest, Zen 4) against 0.3 for its exp, and the
 * argument -x / sqrt 2, rounded to f32, is off by half an ulp, which erfc
 * multiplies by 2 z^2 in relative terms (z = |x| / sqrt 2): 203 units of
 * 2^-24 at x = -13.1. Here, 0.84-0.9 ns, and within 5.7 units of float64 at
 * every 61st f32 of [2^-30, 15] and its negation (ref_f32.c allows 8; the
 * gradient within 4.2 units of its terms' size, Phi + |x| phi: it crosses
 * zero at x = -0.75; tests/kernels_ops.c):
 *   g = exp(-x^2/2), x^2 split exactly by an FMA (x^2 = s + s_lo) and
 *     exp(-s/2) (1 - s_lo/2): no rounding of x^2 enters the exponent;
 *   |x| < 1: Phi(x) = 1/2 + erf(z)/2, erf(z) = z 2/sqrt(pi) + z^3 Q(z^2),
 *     Q of degree 4 fitted for erf's relative error over [0, 1/sqrt 2]
 *     (8e-10; bench/gelu_fit.py: Lawson's iterated least squares on
 *     Chebyshev nodes against mpmath at 40 digits, and it prints these
 *     coefficients);
 *   |x| >= 1: erfc(z) = q(z) g, q = erfc(z) exp(z^2) = t R(t), t = 2 / (2
 *     + z) in [0.16, 0.74] (z up to 10.5, where erfc leaves f32's range;
 *     the substitution of Numerical Recipes' erfcc), R a polynomial of
 *     degree 8 in t mapped onto [-1, 1] (fitted alike: 6e-9); t is
 *     corrected for the rounding of 2 + z and of the division (its error
 *     reaches q doubled: d ln q / d ln t is 2 at t = 0.74); for x > 0,
 *     x Phi(x) = x - x erfc(z) g / 2 and Phi = 1 - erfc(z) g / 2.
 * |x| is clamped to 15 inside (Phi(-15) = 4e-51 is 0 in f32); the result
 * keeps x's infinities and NaN as float64 does (-inf: NaN; +inf: inf for
 * gelu, NaN for gelu_grad). Where FMA is missing (an SSE2 or AVX2-only
 * build), SLEEF's erfc as before. */
#if defined(MB_VW) && defined(V_FMA)
static inline vf mb_v_gauss(vf xc)
{
    vf s = V_MUL(xc, xc);
    vf s_lo = V_FMS(xc, xc, s);
    return V_MUL(MB_V_EXP_NONPOS(V_MUL(V_SET(-0.5f), s)), V_FNMA(V_SET(0.5f), s_lo, V_SET(1.0f)));
}
/* erfc(z) exp(z^2), z >= 1/sqrt 2 */
static inline vf mb_v_erfcx_big(vf z)
{
    vf d = V_ADD(V_SET(2.0f), z), bb = V_SUB(d, z);
    vf d_lo = V_ADD(V_SUB(z, V_SUB(d, bb)), V_SUB(V_SET(2.0f), bb)); /* 2 + z = d + d_lo */
    vf t0 = V_DIV(V_SET(2.0f), d);
    vf r = V_FNMA(t0, d_lo, V_FNMA(t0, d, V_SET(2.0f))); /* 2 - t0 (d + d_lo) */
    vf t = V_FMA(r, V_MUL(t0, V_SET(0.5f)), t0);
    vf u = V_FMA(t, V_SET(3.45544815f), V_SET(-1.5528717f));
    vf p = V_SET(-2.59131434e-06f);
    p = V_FMA(p, u, V_SET(1.30916051e-05f));
    p = V_FMA(p, u, V_SET(4.24891041e-05f));
    p = V_FMA(p, u, V_SET(-0.000263223948f));
    p = V_FMA(p, u, V_SET(-0.000997954747f));
    p = V_FMA(p, u, V_SET(0.00430678856f));
    p = V_FMA(p, u, V_SET(0.0447495058f));
    p = V_FMA(p, u, V_SET(0.182841346f));
    p = V_FMA(p, u, V_SET(0.47743091f));
    return V_MUL(t, p);
}
/* erf(z) = z c0 + z^3 Q(z^2), |z| <= 1/sqrt 2, c0 = 2/sqrt(pi) in two
 * parts (one f32 holds it to 5e-8, the whole error budget): the last FMA
 * rounds erf itself */
static inline vf mb_v_erf_small(vf z)
{
    vf z2 = V_MUL(z, z);
    vf q = V_SET(-0.000695373223f);
    q = V_FMA(q, z2, V_SET(0.00513936765f));
    q = V_FMA(q, z2, V_SET(-0.0268453564f));
    q = V_FMA(q, z2, V_SET(0.112835661f));
    q = V_FMA(q, z2, V_SET(-0.376126319f));
    return V_FMA(z, V_SET(1.12837923f), V_FMA(z, V_SET(-5.86353828e-08f), V_MUL(V_MUL(z, z2), q)));
}
static inline vf mb_v_gelu(vf x)
{
    vf xc = V_MIN(V_MAX(x, V_SET(-15.0f)), V_SET(15.0f));
    vf z = V_MUL(xc, V_SET(0.70710678118654752440f)), hx = V_MUL(V_SET(0.5f), x);
    vf small = V_MUL(hx, V_ADD(V_SET(1.0f), mb_v_erf_small(z))); /* -0 stays -0 */
    /* x above 15 (+inf) enters w clamped: x - 0, not inf - inf x 0 */
    vf hxc = V_MUL(V_SET(0.5f), V_MIN(V_SET(15.0f), x));
    vf w = V_MUL(V_MUL(hxc, mb_v_erfcx_big(V_ABS(z))), mb_v_gauss(xc));
    vf big = V_GT_SELECT(x, 0.0f, V_SUB(x, w), w);
    return V_GT_SELECTV(V_SET(1.0f), V_ABS(x), small, big);
}
static inline vf mb_v_gelu_grad(vf x)
{
    const vf c = V_SET(0.39894228040143267794f); /* 1 / sqrt(2 pi) */
    vf xc = V_MIN(V_MAX(x, V_SET(-15.0f)), V_SET(15.0f));
    vf z = V_MUL(xc, V_SET(0.70710678118654752440f)), g = mb_v_gauss(xc);
    /* |x| < 1: 1/2 + x phi + erf(z)/2, x phi's product rounded once (it and
     * erf(z)/2 cancel at x = -0.75) */
    vf cx = V_MUL(c, x), cx_lo = V_FMS(c, x, cx);
    vf small = V_FMA(V_SET(0.5f), mb_v_erf_small(z), V_FMA(g, cx_lo, V_FMA(cx, g, V_SET(0.5f))));
    vf hq = V_MUL(V_SET(0.5f), mb_v_erfcx_big(V_ABS(z)));
    vf neg = V_MUL(g, V_FMA(c, x, hq));
    vf pos = V_FMA(g, V_FMS(c, x, hq), V_SET(1.0f));
    vf big = V_GT_SELECT(x, 0.0f, pos, neg);
    return V_GT_SELECTV(V_SET(1.0f), V_ABS(x), small, big);
}
#define MB_V_GELU(x) mb_v_gelu(x)
#define MB_V_GELU_GRAD(x) mb_v_gelu_grad(x)
#elif defined(MB_VW)
#define MB_V_GELU(x) V_MUL(V_MUL(V_SET(0.5f), (x)), V_ERFC(V_MUL((x), V_SET(-0.70710678118654752440f))))
#define MB_V_GELU_GRAD(x)                                                                 \
    V_ADD(V_MUL(V_SET(0.5f), V_ERFC(V_MUL((x), V_SET(-0.70710678118654752440f)))),        \
          V_MUL(V_MUL((x), V_SET(0.39894228040143267794f)),                               \
                V_EXP(V_MUL(V_MUL(V_SET(-0.5f), (x)), (x)))))
#endif

/* Rows without a vector form (relu, abs, step, sign: NaN rules in scalar code). */
#define MB_V_NONE(x) (x)
/* Binary row operations (layer_norm, rms_norm): none either. */
#define MB_V_NONE2(x, y) (x)

#endif
