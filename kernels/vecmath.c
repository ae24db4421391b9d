/* vecmath.c — vectorised tile primitives of the CPU executors: one op over a
 * tile, dtype widening/narrowing, streaming copies.
 * Transcendentals come from SLEEF's vector functions (u10: <= 1 ulp) when built
 * with it; the arithmetic ops are mb_ops.h's scalar definitions in loops the
 * compiler vectorises. Tails and builds without SLEEF use mb_ops.h directly.
 * Does not thread or tile: exec_cpu.c does. */
#include "kernels_int.h"
#include "mb_ops.h"

#include <string.h>

#include "vec_ops.h"

const char *mb_kern_vector_isa(void)
{
    return MB_ISA;
}

/* The scalar definition of op in a loop; with op a constant after inlining,
 * the compiler vectorises the arithmetic ones. */
#define MB_SCALAR_LOOP(OP)                                                       \
    do {                                                                         \
        if (a && b)                                                              \
            for (int64_t i = 0; i < len; i++) out[i] = mb_op_apply_f32(OP, a[i], b[i]); \
        else if (a)                                                              \
            for (int64_t i = 0; i < len; i++) out[i] = mb_op_apply_f32(OP, a[i], bs); \
        else if (b)                                                              \
            for (int64_t i = 0; i < len; i++) out[i] = mb_op_apply_f32(OP, as, b[i]); \
        else                                                                     \
            for (int64_t i = 0; i < len; i++) out[i] = mb_op_apply_f32(OP, as, bs); \
    } while (0)

#if defined(MB_VW)
/* Unary transcendental: vector body EXPR (of vf x), scalar tail. */
#define MB_VEC_UNARY(OP, EXPR)                                                   \
    do {                                                                         \
        int64_t i = 0;                                                           \
        if (a) {                                                                 \
            for (; i + MB_VW <= len; i += MB_VW) {                               \
                vf x = V_LD(a + i);                                              \
                V_ST(out + i, (EXPR));                                           \
            }                                                                    \
            for (; i < len; i++) out[i] = mb_op_apply_f32(OP, a[i], 0.0f);       \
        } else {                                                                 \
            float v = mb_op_apply_f32(OP, as, 0.0f);                             \
            for (; i < len; i++) out[i] = v;                                     \
        }                                                                        \
    } while (0)

static void vec_pow(const float *a, float as, const float *b, float bs, float *out,
                    int64_t len)
{
    if (a && !b && (bs == 2.0f || bs == 3.0f || bs == 1.0f || bs == 0.0f || bs == 4.0f ||
                    bs == -1.0f || bs == -2.0f || bs == 0.5f)) {
        /* small integer exponent: exact products, vectorised by the compiler */
        if (bs == 2.0f)
            for (int64_t i = 0; i < len; i++) out[i] = a[i] * a[i];
        else if (bs == 3.0f)
            for (int64_t i = 0; i < len; i++) out[i] = a[i] * a[i] * a[i];
        else
            for (int64_t i = 0; i < len; i++) out[i] = mb_op_powf(a[i], bs);
        return;
    }
    int64_t i = 0;
    for (; i + MB_VW <= len; i += MB_VW) {
        vf x = a ? V_LD(a + i) : V_SET(as);
        vf y = b ? V_LD(b + i) : V_SET(bs);
        V_ST(out + i, V_POW(x, y));
    }
    for (; i < len; i++) out[i] = mb_op_powf(a ? a[i] : as, b ? b[i] : bs);
}
#endif

void mb_kern_vec_apply(mb_op op, const float *a, float as, const float *b, float bs,
                       float *out, int64_t len)
{
    switch (op) {
    case MB_OP_ADD: MB_SCALAR_LOOP(MB_OP_ADD); return;
    case MB_OP_SUB: MB_SCALAR_LOOP(MB_OP_SUB); return;
    case MB_OP_MUL: MB_SCALAR_LOOP(MB_OP_MUL); return;
    case MB_OP_DIV: MB_SCALAR_LOOP(MB_OP_DIV); return;
    case MB_OP_NEG: MB_SCALAR_LOOP(MB_OP_NEG); return;
    case MB_OP_RELU: MB_SCALAR_LOOP(MB_OP_RELU); return;
    case MB_OP_ABS: MB_SCALAR_LOOP(MB_OP_ABS); return;
    case MB_OP_COPY: MB_SCALAR_LOOP(MB_OP_COPY); return;
    case MB_OP_RECIPROCAL: MB_SCALAR_LOOP(MB_OP_RECIPROCAL); return;
    case MB_OP_STEP: MB_SCALAR_LOOP(MB_OP_STEP); return;
    case MB_OP_SIGN: MB_SCALAR_LOOP(MB_OP_SIGN); return;
#if defined(MB_VW)
    case MB_OP_SQRT: MB_VEC_UNARY(MB_OP_SQRT, V_SQRT(x)); return;
    case MB_OP_RSQRT: MB_VEC_UNARY(MB_OP_RSQRT, MB_V_RSQRT(x)); return;
    case MB_OP_SIN: MB_VEC_UNARY(MB_OP_SIN, V_SIN(x)); return;
    case MB_OP_COS: MB_VEC_UNARY(MB_OP_COS, V_COS(x)); return;
    case MB_OP_TAN: MB_VEC_UNARY(MB_OP_TAN, V_TAN(x)); return;
    case MB_OP_TANH: MB_VEC_UNARY(MB_OP_TANH, V_TANH(x)); return;
    case MB_OP_EXP: MB_VEC_UNARY(MB_OP_EXP, V_EXP(x)); return;
    case MB_OP_LOG: MB_VEC_UNARY(MB_OP_LOG, V_LOG(x)); return;
    case MB_OP_SIGMOID: MB_VEC_UNARY(MB_OP_SIGMOID, MB_V_SIGMOID(x)); return;
    case MB_OP_GELU: MB_VEC_UNARY(MB_OP_GELU, MB_V_GELU(x)); return;
    case MB_OP_GELU_GRAD: MB_VEC_UNARY(MB_OP_GELU_GRAD, MB_V_GELU_GRAD(x)); return;
    case MB_OP_POW: vec_pow(a, as, b, bs, out, len); return;
#else
    case MB_OP_SQRT: MB_SCALAR_LOOP(MB_OP_SQRT); return;
    case MB_OP_RSQRT: MB_SCALAR_LOOP(MB_OP_RSQRT); return;
    case MB_OP_SIN: MB_SCALAR_LOOP(MB_OP_SIN); return;
    case MB_OP_COS: MB_SCALAR_LOOP(MB_OP_COS); return;
    case MB_OP_TAN: MB_SCALAR_LOOP(MB_OP_TAN); return;
    case MB_OP_TANH: MB_SCALAR_LOOP(MB_OP_TANH); return;
    case MB_OP_EXP: MB_SCALAR_LOOP(MB_OP_EXP); return;
    case MB_OP_LOG: MB_SCALAR_LOOP(MB_OP_LOG); return;
    case MB_OP_SIGMOID: MB_SCALAR_LOOP(MB_OP_SIGMOID); return;
    case MB_OP_GELU: MB_SCALAR_LOOP(MB_OP_GELU); return;
    case MB_OP_GELU_GRAD: MB_SCALAR_LOOP(MB_OP_GELU_GRAD); return;
    case MB_OP_POW: MB_SCALAR_LOOP(MB_OP_POW); return;
#endif
    case MB_OP_INPUT:
    case MB_OP_COUNT:
        break;
    }
    MB_SCALAR_LOOP(MB_OP_COPY);
}

void mb_kern_vec_sincos(const float *a, float as, float *sin_out, float *cos_out, int64_t len)
{
    int64_t i = 0;
#if defined(MB_VW)
    if (a)
        for (; i + MB_VW <= len; i += MB_VW) {
            /* one range reduction for both: SLEEF's sincos (u10, <= 1 ulp each) */
            vf2 sc = V_SINCOS(V_LD(a + i));
            V_ST(sin_out + i, sc.x);
            V_ST(cos_out + i, sc.y);
        }
#endif
    for (; i < len; i++) {
        float x = a ? a[i] : as;
        sin_out[i] = mb_op_apply_f32(MB_OP_SIN, x, 0.0f);
        cos_out[i] = mb_op_apply_f32(MB_OP_COS, x, 0.0f);
    }
}

void mb_kern_sincos_apply(const float *a, float *sin_out, float *cos_out, int64_t len)
{
    mb_kern_vec_sincos(a, 0.0f, sin_out, cos_out, len);
}

void mb_kern_op_apply(mb_op op, const float *a, float as, const float *b, float bs, float *out,
                      int64_t len)
{
    mb_kern_vec_apply(op, a, as, b, bs, out, len);
}

void mb_kern_vec_load(const void *src, mb_dtype t, float *dst, int64_t len)
{
    if (t == MB_F32) {
        memcpy(dst, src, (size_t)len * sizeof(float));
        return;
    }
    const uint16_t *s = (const uint16_t *)src;
    int64_t i = 0;
#if defined(__AVX512F__)
    if (t == MB_BF16) {
        for (; i + 16 <= len; i += 16) {
            __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + i)));
            _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
        }
    } else {
        for (; i + 16 <= len; i += 16)
            _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
    }
#endif
    if (t == MB_BF16)
        for (; i < len; i++) dst[i] = mb_bf16_to_f32(s[i]);
    else
        for (; i < len; i++) dst[i] = mb_f16_to_f32(s[i]);
}

/* Narrows src to 16-bit t into d (no streaming). */
static void narrow16(const float *src, uint16_t *d, mb_dtype t, int64_t len)
{
    int64_t i = 0;
#if defined(__AVX512F__)
    if (t == MB_BF16) {
        const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
        const __m512i inf = _mm512_set1_epi32(0x7f800000);
        const __m512i bias = _mm512_set1_epi32(0x7fff);
        const __m512i one = _mm512_set1_epi32(1);
        const __m512i quiet = _mm512_set1_epi32(0x0040);
        for (; i + 16 <= len; i += 16) {
            __m512i u = _mm512_castps_si512(_mm512_loadu_ps(src + i));
            __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, absmask), inf);
            __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
            __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(bias, lsb)), 16);
            __m512i q = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet);
            r = _mm512_mask_blend_epi32(nan, r, q);
            _mm256_storeu_si256((__m256i *)(d + i), _mm512_cvtepi32_epi16(r));
        }
    } else {
        for (; i + 16 <= len; i += 16)
            _mm256_storeu_si256((__m256i *)(d + i),
                                _mm512_cvtps_ph(_mm512_loadu_ps(src + i),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
#endif
    if (t == MB_BF16)
        for (; i < len; i++) d[i] = mb_f32_to_bf16(src[i]);
    else
        for (; i < len; i++) d[i] = mb_f32_to_f16(src[i]);
}

void mb_kern_vec_copy(const void *src, void *dst, mb_dtype t, int64_t len, int nt)
{
    size_t bytes = (size_t)len * mb_dtype_bytes(t);
#if defined(__AVX512F__)
    if (nt && ((uintptr_t)dst & 63u) == 0) {
        const char *s = (const char *)src;
        char *d = (char *)dst;
        size_t k = 0;
        for (; k + 64 <= bytes; k += 64)
            _mm512_stream_si512((__m512i *)(d + k), _mm512_loadu_si512((const void *)(s + k)));
        if (k < bytes) memcpy(d + k, s + k, bytes - k);
        return;
    }
#elif defined(__AVX__)
    if (nt && ((uintptr_t)dst & 31u) == 0) {
        const char *s = (const char *)src;
        char *d = (char *)dst;
        size_t k = 0;
        for (; k + 32 <= bytes; k += 32)
            _mm256_stream_si256((__m256i *)(d + k), _mm256_loadu_si256((const __m256i *)(s + k)));
        if (k < bytes) memcpy(d + k, s + k, bytes - k);
        return;
    }
#endif
    (void)nt;
    memcpy(dst, src, bytes);
}

void mb_kern_vec_store(const float *src, void *dst, mb_dtype t, int64_t len, int nt)
{
    if (t == MB_F32) {
        mb_kern_vec_copy(src, dst, t, len, nt);
        return;
    }
    if (!nt) {
        narrow16(src, (uint16_t *)dst, t, len);
        return;
    }
    uint16_t tmp[MB_KERN_TILE] __attribute__((aligned(64)));
    for (int64_t off = 0; off < len; off += MB_KERN_TILE) {
        int64_t m = len - off < MB_KERN_TILE ? len - off : MB_KERN_TILE;
        narrow16(src + off, tmp, t, m);
        mb_kern_vec_copy(tmp, (uint16_t *)dst + off, t, m, nt);
    }
}

void mb_kern_vec_sfence(void)
{
#if defined(__SSE2__)
    _mm_sfence();
#endif
}
