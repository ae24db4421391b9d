/* streams.c — calibrate's bandwidth probes, STREAM-style on all cores
 * (copy with non-temporal and with ordinary stores, read, write both ways), and
 * the FMA peak. Each is one call of a probe function; figure.c times it.
 * Does not time anything itself. */
#include "cal_int.h"

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

const char *mb_cal_streams_isa(void)
{
#if defined(__AVX512F__)
    return "avx512f";
#elif defined(__AVX2__) && defined(__FMA__)
    return "avx2";
#else
    return "scalar";
#endif
}

void mb_cal_copy_nt(void *p)
{
    mb_cal_stream_ctx *c = p;
    mb_meas_copy_nt(c->b, c->a, c->n);
}

void mb_cal_copy_plain(void *p)
{
    mb_cal_stream_ctx *c = p;
    const float *a = c->a;
    float *b = c->b;
    int64_t n = c->n;
#if defined(__AVX512F__)
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i += 16) _mm512_store_ps(b + i, _mm512_load_ps(a + i));
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) b[i] = a[i];
#endif
}

mb_cal_figure mb_cal_cache_copy_figure(mb_cal_stream_ctx *cc)
{
    /* each sample after an untimed copy of the same arrays: the round's
     * streams before it leave them cold, and a cold copy times DRAM (32-36
     * GB/s against a warm 44 on a 2-vCPU Xeon guest whose DRAM copy is 33) */
    return (mb_cal_figure){.name = "cache copy", .fn = mb_cal_copy_plain, .ctx = cc,
                           .work = 2.0 * (double)cc->n * sizeof(float), .before = mb_cal_copy_plain};
}

void mb_cal_read_sum(void *p)
{
    mb_cal_stream_ctx *c = p;
    const float *a = c->a;
    int64_t n = c->n;
    float s = 0.0f;
#if defined(__AVX512F__)
#pragma omp parallel reduction(+ : s)
    {
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += 32) {
            acc0 = _mm512_add_ps(acc0, _mm512_load_ps(a + i));
            acc1 = _mm512_add_ps(acc1, _mm512_load_ps(a + i + 16));
        }
        s += _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    }
#else
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i++) s += a[i];
#endif
    c->sink = s;
}

void mb_cal_write_nt(void *p)
{
    mb_cal_stream_ctx *c = p;
    float *b = c->b;
    int64_t n = c->n;
#if defined(__AVX512F__)
#pragma omp parallel
    {
        __m512 v = _mm512_set1_ps(1.5f);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(b + i, v);
        _mm_sfence();
    }
#elif defined(__AVX__)
#pragma omp parallel
    {
        __m256 v = _mm256_set1_ps(1.5f);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += 8) _mm256_stream_ps(b + i, v);
        _mm_sfence();
    }
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) b[i] = 1.5f;
#endif
}

void mb_cal_write_plain(void *p)
{
    mb_cal_stream_ctx *c = p;
    float *b = c->b;
    int64_t n = c->n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) b[i] = 1.5f + (float)(i & 7);
}

void mb_cal_fma_peak(void *p)
{
    mb_cal_fma_ctx *c = p;
    int64_t iters = c->iters;
    float s = 0.0f;
    double flops = 0.0;
#pragma omp parallel reduction(+ : s, flops)
    {
#if defined(__AVX512F__)
        __m512 x[8], m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
        for (int k = 0; k < 8; k++) x[k] = _mm512_set1_ps(1.0f + (float)k);
        for (int64_t i = 0; i < iters; i++)
            for (int k = 0; k < 8; k++) x[k] = _mm512_fmadd_ps(x[k], m, a);
        for (int k = 1; k < 8; k++) x[0] = _mm512_add_ps(x[0], x[k]);
        s += _mm512_reduce_add_ps(x[0]);
        flops += 2.0 * 16 * 8 * (double)iters;
#elif defined(__AVX2__) && defined(__FMA__)
        __m256 x[8], m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
        for (int k = 0; k < 8; k++) x[k] = _mm256_set1_ps(1.0f + (float)k);
        for (int64_t i = 0; i < iters; i++)
            for (int k = 0; k < 8; k++) x[k] = _mm256_fmadd_ps(x[k], m, a);
        float tmp[8];
        for (int k = 1; k < 8; k++) x[0] = _mm256_add_ps(x[0], x[k]);
        _mm256_storeu_ps(tmp, x[0]);
        for (int k = 0; k < 8; k++) s += tmp[k];
        flops += 2.0 * 8 * 8 * (double)iters;
#else
        float x[8];
        for (int k = 0; k < 8; k++) x[k] = 1.0f + (float)k;
        for (int64_t i = 0; i < iters; i++)
            for (int k = 0; k < 8; k++) x[k] = x[k] * 0.999999f + 1e-7f;
        for (int k = 0; k < 8; k++) s += x[k];
        flops += 2.0 * 8 * (double)iters;
#endif
    }
    c->sink = s;
    c->flops = flops;
}
