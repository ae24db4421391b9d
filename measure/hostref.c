/* hostref.c — the host reference: the copy `calibrate` times for the spec's
 * copy bandwidth (a non-temporal copy of its stream arrays), kept allocated
 * so that `measure` can time it again before and after its rows and beside
 * the samples of every row, and calibrate's op-rate probe of two ops (sin
 * and sigmoid, L1-resident tiles). A shared host's memory bandwidth and op rates drift
 * (10-60% over minutes on a 2-vCPU guest here, not always together) while
 * the model columns assume the calibrated figures: the reference says, row
 * by row, how far the host was from them. Compiled with the calibration's
 * flags (vectorised for this CPU). */
#include "kernels.h"
#include "measure.h"

#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif

const mb_op mb_meas_hostref_ops[MB_MEAS_HOSTREF_N_OPS] = {MB_OP_SIN, MB_OP_SIGMOID};

/* A contended reference copy is taken again up to this often, then kept. */
#define HOSTREF_RETRIES 2

int64_t mb_meas_stream_elements(int64_t llc_bytes, int quick)
{
    /* STREAM rule: each array >= 4x the LLC (and >= 2^25 f32 = 128 MiB) */
    int64_t n = 4 * llc_bytes / (int64_t)sizeof(float);
    if (n < ((int64_t)1 << 25)) n = (int64_t)1 << 25;
    /* at most 2^27 f32 (512 MiB) an array: a guest that reports a 508 MiB
     * cache and shows no knee (one thread streams no faster from cache than
     * from DRAM here) would otherwise stream 2 GiB arrays, 4 minutes */
    if (n > ((int64_t)1 << 27)) n = (int64_t)1 << 27;
    if (quick) n = llc_bytes / (int64_t)sizeof(float) / 4;
    if (quick && n > ((int64_t)1 << 22)) n = (int64_t)1 << 22; /* a smoke test: 16 MiB arrays */
    return (n + 63) & ~(int64_t)63;
}

void mb_meas_copy_nt(float *dst, const float *src, int64_t n)
{
#if defined(__AVX512F__)
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(dst + i, _mm512_load_ps(src + i));
        _mm_sfence();
    }
#elif defined(__AVX__)
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += 8) _mm256_stream_ps(dst + i, _mm256_load_ps(src + i));
        _mm_sfence();
    }
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
#endif
}

double mb_meas_op_rate_run(mb_op op, int64_t rounds)
{
    double elements = 0.0;
    float s = 0.0f;
#pragma omp parallel reduction(+ : elements, s)
    {
        float a[MB_KERN_TILE] __attribute__((aligned(64)));
        float b[MB_KERN_TILE] __attribute__((aligned(64)));
        float o[MB_KERN_TILE] __attribute__((aligned(64)));
        for (int i = 0; i < MB_KERN_TILE; i++) {
            a[i] = 0.5f + 1.5f * (float)((i * 7919) % 1000) / 1000.0f; /* [0.5, 2): every op's domain */
            b[i] = 0.75f + 0.5f * (float)((i * 104729) % 1000) / 1000.0f;
        }
        int binary = mb_op_arity(op) == 2;
        for (int64_t r = 0; r < rounds; r++) {
            if (op == MB_OP_POW) mb_kern_op_apply(op, a, 0, NULL, 2.5f, o, MB_KERN_TILE);
            else mb_kern_op_apply(op, a, 0, binary ? b : NULL, 0.0f, o, MB_KERN_TILE);
            s += o[r & (MB_KERN_TILE - 1)];
        }
        elements += (double)rounds * MB_KERN_TILE;
    }
    return s == s ? elements : 0.0; /* the sum keeps the loop; NaN never comes */
}

int mb_meas_hostref_init(mb_meas_hostref *h, int64_t n, double calibrated_gbs, mb_err *err)
{
    memset(h, 0, sizeof *h);
    n = (n + 63) & ~(int64_t)63;
    if (n < 64) n = 64;
    h->src = aligned_alloc(64, (size_t)n * sizeof(float));
    h->dst = aligned_alloc(64, (size_t)n * sizeof(float));
    if (!h->src || !h->dst) {
        mb_meas_hostref_free(h);
        return mb_err_set(err, MB_ERUN, "cannot allocate 2 x %.3g GB for the host reference copy",
                          (double)n * sizeof(float) / 1e9);
    }
    h->n = n;
    h->calibrated_gbs = calibrated_gbs;
    h->interval_s = MB_MEAS_HOSTREF_INTERVAL_S;
    float *a = h->src, *b = h->dst;
    /* first touch in parallel, as the copy partitions the arrays */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 1.0f + (float)(i & 255) * 0.01f;
        b[i] = 2.0f;
    }
    mb_meas_copy_nt(h->dst, h->src, h->n); /* warm: page tables, threads */
    return MB_OK;
}

static void hostref_copy(void *p)
{
    mb_meas_hostref *h = p;
    mb_meas_copy_nt(h->dst, h->src, h->n);
}

double mb_meas_hostref_copy_gbs(mb_meas_hostref *h)
{
    /* untimed: it takes the write-backs of what ran before, and the timed
     * copy follows a copy, as the host check's and calibrate's samples follow
     * their own kind (after a read sweep instead: 10-25% slower here) */
    mb_meas_copy_nt(h->dst, h->src, h->n);
    mb_meas_sampler sm = {hostref_copy, h, NULL, NULL, 1, mb_kern_threads(), HOSTREF_RETRIES};
    double w = mb_meas_sample_s(&sm, NULL, NULL);
    return w > 0 ? 2.0 * (double)h->n * sizeof(float) / w / 1e9 : 0;
}

typedef struct hostref_op {
    int i;
    double elements;
} hostref_op;

static void hostref_op_once(void *p)
{
    hostref_op *o = p;
    o->elements = mb_meas_op_rate_run(mb_meas_hostref_ops[o->i], MB_MEAS_HOSTREF_OP_ROUNDS);
}

double mb_meas_hostref_op_geps(int i)
{
    hostref_op o = {i, 0};
    mb_meas_sampler sm = {hostref_op_once, &o, NULL, NULL, 1, mb_kern_threads(), HOSTREF_RETRIES};
    double w = mb_meas_sample_s(&sm, NULL, NULL);
    return w > 0 ? o.elements / w / 1e9 : 0;
}

double mb_meas_median_rate(const double *rates, int n)
{
    double t[MB_MEAS_HOSTREF_MAX];
    int m = 0;
    for (int i = 0; i < n && m < MB_MEAS_HOSTREF_MAX; i++)
        if (rates[i] > 0) t[m++] = 1.0 / rates[i];
    if (!m) return 0;
    mb_meas_stats st;
    mb_meas_stats_compute(t, m, &st);
    return 1.0 / st.median_s;
}

double mb_meas_hostref_median_gbs(mb_meas_hostref *h, int reps)
{
    double r[16];
    if (reps < 1) reps = 1;
    if (reps > 16) reps = 16;
    for (int i = 0; i < reps; i++) r[i] = mb_meas_hostref_copy_gbs(h);
    return mb_meas_median_rate(r, reps);
}

void mb_meas_hostref_free(mb_meas_hostref *h)
{
    free(h->src);
    free(h->dst);
    memset(h, 0, sizeof *h);
}

int mb_meas_hostref_due(int ns, int last, double seconds_since, double interval_s)
{
    return ns == 0 || last || ns == MB_MEAS_HOSTREF_SAMPLE_A || ns % MB_MEAS_HOSTREF_EVERY == 0 ||
           seconds_since >= interval_s;
}
