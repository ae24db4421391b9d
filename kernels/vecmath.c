/* vecmath.c — vectorised tile primitives of the CPU executors: one op over a
 * tile, dtype widening/narrowing, streaming copies.
 * Transcendentals come from SLEEF's vector functions (vec_ops.h: u10, <= 1 ulp;
 * sin, cos, sincos and tanh u35, <= 3.5 ulps) when built
 * with it; the arithmetic ops are mb_ops.h's scalar definitions in loops the
 * compiler vectorises (op_table.h's MB_OPF_VEC says which). Tails and builds
 * without SLEEF use op_math.h's scalar definitions directly.
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

/* One case per row of op_table.h: the vector form where the row says
 * MB_OPF_VEC, pow's own rules, else the scalar definition in a loop. */
#if defined(MB_VW)
#define MB_VCALL_1(F) F(x)
#define MB_VCALL_2(F) F(x, x)
#define MB_VEC_CASE(E, name, arity, kind, spell, flops, sfu, cls, der, dop, saves, vform, flags,  \
                    ...)                                                                          \
    case MB_OP_##E:                                                                               \
        if ((flags) & MB_OPF_POW) vec_pow(a, as, b, bs, out, len);                                \
        else if (((flags) & MB_OPF_VEC) && (arity) == 1) MB_VEC_UNARY(MB_OP_##E, MB_VCALL_##arity(vform)); \
        else MB_SCALAR_LOOP(MB_OP_##E);                                                           \
        return;
#else
#define MB_VEC_CASE(E, ...) case MB_OP_##E: MB_SCALAR_LOOP(MB_OP_##E); return;
#endif

/* flatten: every case's scalar definition inlined into its loop. Without it
 * the compiler kept mb_op_apply_f32 out of line in 74 of the loops (the
 * switch is too large for its inlining budget), among them every binary op
 * against a scalar or a row value (x - m, e / s): a call per element,
 * 4-5 ns/element against 0.04-0.07 inlined and vectorised. */
#if defined(__GNUC__)
__attribute__((flatten))
#endif
void mb_kern_vec_apply(mb_op op, const float *a, float as, const float *b, float bs,
                       float *out, int64_t len)
{
    switch (op) {
        MB_OP_TABLE(MB_VEC_CASE)
    case MB_OP_INPUT:
    case MB_OP_COUNT:
        break;
    }
    MB_SCALAR_LOOP(MB_OP_COPY);
}
#undef MB_VEC_CASE

void mb_kern_vec_sincos(const float *a, float as, float *sin_out, float *cos_out, int64_t len)
{
    int64_t i = 0;
#if defined(MB_VW)
    if (a)
        for (; i + MB_VW <= len; i += MB_VW) {
            /* one range reduction for both: SLEEF's sincos (u35, <= 3.5 ulps each) */
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

void mb_kern_exp_nonpos_apply(const float *a, float *out, int64_t len)
{
    int64_t i = 0;
#if defined(MB_VW)
    for (; i + MB_VW <= len; i += MB_VW) V_ST(out + i, MB_V_EXP_NONPOS(V_LD(a + i)));
#endif
    for (; i < len; i++) out[i] = mb_op_apply_f32(MB_OP_EXP, a[i], 0.0f);
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
