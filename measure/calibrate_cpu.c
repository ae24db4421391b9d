/* calibrate_cpu.c — this CPU's roofs: STREAM-style copy/read/write bandwidth
 * on all cores, the FMA peak, each op's throughput through the executors' tile
 * primitive, and the cost of one executor pass. Writes no file (the CLI does). */
#define _GNU_SOURCE /* gethostname, sysconf(_SC_PHYS_PAGES) */
#include "measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* Median of reps timings of fn(ctx). */
typedef void (*bench_fn)(void *ctx);

static double median_time(bench_fn fn, void *ctx, int reps)
{
    double *s = malloc((size_t)reps * sizeof(double));
    if (!s) return NAN;
    fn(ctx); /* warm-up, page faults */
    for (int r = 0; r < reps; r++) {
        double t0 = mb_meas_now_s();
        fn(ctx);
        s[r] = mb_meas_now_s() - t0;
    }
    mb_meas_stats st;
    mb_meas_stats_compute(s, reps, &st);
    free(s);
    return st.median_s;
}

typedef struct stream_ctx {
    float *a, *b;
    int64_t n;
    volatile float sink;
} stream_ctx;

static void copy_nt(void *p)
{
    stream_ctx *c = p;
    const float *a = c->a;
    float *b = c->b;
    int64_t n = c->n;
#if defined(__AVX512F__)
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(b + i, _mm512_load_ps(a + i));
        _mm_sfence();
    }
#elif defined(__AVX__)
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += 8) _mm256_stream_ps(b + i, _mm256_load_ps(a + i));
        _mm_sfence();
    }
#else
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) b[i] = a[i];
#endif
}

static void copy_plain(void *p)
{
    stream_ctx *c = p;
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

static void read_sum(void *p)
{
    stream_ctx *c = p;
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

static void write_nt(void *p)
{
    stream_ctx *c = p;
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

static void write_plain(void *p)
{
    stream_ctx *c = p;
    float *b = c->b;
    int64_t n = c->n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) b[i] = 1.5f + (float)(i & 7);
}

/* FMA peak: 8 independent vector chains per thread, register resident. */
typedef struct fma_ctx {
    int64_t iters;
    volatile float sink;
    double flops;
} fma_ctx;

static void fma_peak(void *p)
{
    fma_ctx *c = p;
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

/* One op over an L1-resident tile, repeated, on every thread. */
typedef struct op_ctx {
    mb_op op;
    int64_t rounds;
    double elements;
    volatile float sink;
} op_ctx;

static void op_rate(void *p)
{
    op_ctx *c = p;
    mb_op op = c->op;
    int64_t rounds = c->rounds;
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
    c->sink = s;
    c->elements = elements;
}

/* Elements/s (1e9/s) of a sin and a cos of one operand evaluated together by
 * the executors' sincos primitive, L1-resident, on every thread: median of
 * reps timings (the model costs a kernel's sin/cos pair at this rate). */
static double sincos_rate_geps(int quick)
{
    enum { REPS = 7 };
    double s_geps[REPS];
    int reps = quick ? 3 : REPS;
    int64_t rounds = quick ? 20 : 200;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        double elements = 0.0, t0 = mb_meas_now_s();
        float sum = 0.0f;
#pragma omp parallel reduction(+ : elements, sum)
        {
            float a[MB_KERN_TILE] __attribute__((aligned(64)));
            float so[MB_KERN_TILE] __attribute__((aligned(64)));
            float co[MB_KERN_TILE] __attribute__((aligned(64)));
            for (int i = 0; i < MB_KERN_TILE; i++) a[i] = 0.5f + 1.5f * (float)((i * 7919) % 1000) / 1000.0f;
            for (int64_t k = 0; k < rounds; k++) {
                mb_kern_sincos_apply(a, so, co, MB_KERN_TILE);
                sum += so[k & (MB_KERN_TILE - 1)] + co[k & (MB_KERN_TILE - 1)];
            }
            elements += (double)rounds * MB_KERN_TILE;
        }
        double dt = mb_meas_now_s() - t0;
        if (r >= 0) s_geps[r] = sum == sum && dt > 0 ? elements / dt / 1e9 : 0.0;
    }
    mb_meas_stats st;
    mb_meas_stats_compute(s_geps, reps, &st);
    return st.median_s;
}

/* One executor pass of a copy plan over one tile per thread. */
typedef struct pass_ctx {
    mb_kern_tensors *t;
    int passes;
} pass_ctx;

static void passes(void *p)
{
    pass_ctx *c = p;
    mb_err e;
    for (int i = 0; i < c->passes; i++) (void)mb_kern_run_plan(c->t, MB_KERN_EXEC_AUTO, &e);
}

static int pass_overhead(int quick, double *us, mb_err *err)
{
    mb_graph *g = NULL;
    int rc = mb_parse_expr("y = copy(x)", MB_F32, &g, err);
    if (rc) return rc;
    mb_plan *p = NULL;
    if ((rc = mb_plan_build(g, MB_PLAN_EAGER, &p, err))) {
        mb_graph_free(g);
        return rc;
    }
    mb_kern_tensors t;
    int64_t n = (int64_t)mb_kern_threads() * MB_KERN_TILE;
    if ((rc = mb_kern_tensors_alloc(p, n, 0, &t, err)) == MB_OK) {
        pass_ctx c = {&t, quick ? 100 : 1000};
        double s = median_time(passes, &c, quick ? 3 : 11);
        /* minus the copy itself: n f32 elements in and out of L1/L2 (a few
         * ns per KiB); what is left is fork/join and per-pass setup */
        *us = s / c.passes * 1e6;
        mb_kern_tensors_free(&t);
    }
    mb_plan_free(p);
    mb_graph_free(g);
    return rc;
}

/* A probe kernel: one plan through the executor, cold, with the model's
 * estimate of it on the calibration so far. */
typedef struct probe {
    mb_graph *g;
    mb_plan *p;
    mb_kern_tensors t;
    int have_t;
    mb_estimate est;
} probe;

static void probe_free(probe *pb)
{
    if (pb->have_t) mb_kern_tensors_free(&pb->t);
    mb_estimate_free(&pb->est);
    mb_plan_free(pb->p);
    mb_graph_free(pb->g);
    memset(pb, 0, sizeof *pb);
}

static int probe_init(probe *pb, const char *expr, mb_plan_kind k, int64_t n, const mb_device *d,
                      mb_err *err)
{
    memset(pb, 0, sizeof *pb);
    int rc = mb_parse_expr(expr, MB_F32, &pb->g, err);
    if (!rc) rc = mb_plan_build(pb->g, k, &pb->p, err);
    if (!rc) rc = mb_estimate_plan(pb->p, n, d, &pb->est, err);
    if (!rc && (rc = mb_kern_tensors_alloc(pb->p, n, 0, &pb->t, err)) == MB_OK) pb->have_t = 1;
    if (!rc) rc = mb_kern_run_plan(&pb->t, MB_KERN_EXEC_AUTO, err); /* warm-up, page faults */
    if (rc) probe_free(pb);
    return rc;
}

/* Median of reps cold runs of the probe. */
static int probe_time(probe *pb, mb_meas_flusher *fl, int reps, double *time_s, mb_err *err)
{
    double s[16];
    if (reps > 16) reps = 16;
    for (int r = 0; r < reps; r++) {
        mb_meas_flush_cpu(fl);
        double t0 = mb_meas_now_s();
        int rc = mb_kern_run_plan(&pb->t, MB_KERN_EXEC_AUTO, err);
        if (rc) return rc;
        s[r] = mb_meas_now_s() - t0;
    }
    mb_meas_stats st;
    mb_meas_stats_compute(s, reps, &st);
    *time_s = st.median_s;
    return MB_OK;
}

static double clamp01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rounds of the probes, interleaved so that the machine's drift (shared
 * hosts swing memory bandwidth by tens of percent over minutes) cancels in
 * each round's ratios; the figures are the medians over rounds. */
#define OVERLAP_ROUNDS 9

int mb_meas_calibrate_overlap(mb_meas_calib *c, int64_t n, int reps, mb_err *err)
{
    mb_device d;
    c->serial_fraction = 0;
    c->read_stream_penalty = 0;
    mb_meas_calib_to_device(c, NULL, &d);
    probe copy = {0}, sine = {0}, sum4 = {0};
    mb_meas_flusher fl;
    int rc = mb_meas_flusher_init(&fl, mb_kern_llc_bytes(), err);
    if (rc) return rc;
    /* copy: memory only; sin: one read, one write, compute about as long as
     * the memory time; a+b+c+d: four read streams, next to no compute */
    if (!(rc = probe_init(&copy, "y = copy(x)", MB_PLAN_EAGER, n, &d, err)) &&
        !(rc = probe_init(&sine, "y = sin(x)", MB_PLAN_EAGER, n, &d, err)))
        rc = probe_init(&sum4, "y = a + b + c + d", MB_PLAN_FUSED, n, &d, err);
    double beta[OVERLAP_ROUNDS], gamma[OVERLAP_ROUNDS];
    int rounds = 0;
    for (int r = 0; r < OVERLAP_ROUNDS && !rc; r++) {
        double t_copy, t_sin, t_sum4;
        if ((rc = probe_time(&copy, &fl, reps, &t_copy, err)) ||
            (rc = probe_time(&sine, &fl, reps, &t_sin, err)) ||
            (rc = probe_time(&sum4, &fl, reps, &t_sum4, err)))
            break;
        /* this round's streaming rate, from the copy: 8n bytes */
        double copy_gbs = (double)(copy.est.total.read_bytes + copy.est.total.write_bytes) / t_copy / 1e9;
        const mb_cost *k = &sine.est.per_kernel[0];
        double mem_s = (double)(k->read_bytes + k->write_bytes) / (copy_gbs * 1e9);
        double lo = fmin(mem_s, k->compute_s), hi = fmax(mem_s, k->compute_s);
        beta[rounds] = clamp01((t_sin - k->launch_s - hi) / lo);
        /* the four-stream kernel's reads against a single read stream, which
         * calibration found to run at read_gbs / copy_gbs of the copy rate */
        k = &sum4.est.per_kernel[0];
        double read1_gbs = copy_gbs * c->read_gbs / c->copy_gbs;
        double read4_s = t_sum4 - k->launch_s - beta[rounds] * k->compute_s;
        double read4_gbs = read4_s > 0 ? (double)k->read_bytes / read4_s / 1e9 : read1_gbs;
        gamma[rounds] = fmax(0, (read1_gbs / read4_gbs - 1) / 3);
        rounds++;
    }
    if (!rc && rounds) {
        qsort(beta, (size_t)rounds, sizeof beta[0], cmp_double);
        qsort(gamma, (size_t)rounds, sizeof gamma[0], cmp_double);
        c->serial_fraction = beta[rounds / 2];
        c->read_stream_penalty = gamma[rounds / 2];
    }
    probe_free(&copy);
    probe_free(&sine);
    probe_free(&sum4);
    mb_meas_flusher_free(&fl);
    return rc;
}

int mb_meas_calibrate_cpu(int threads, int quick, void (*progress)(const char *label),
                          mb_meas_calib *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    mb_kern_set_threads(threads);
    out->threads = mb_kern_threads();
    out->llc_bytes = mb_kern_llc_bytes();
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    out->mem_gb = pages > 0 && psz > 0 ? (double)pages * (double)psz / 1e9 : 0.0;
    /* STREAM rule: each array >= 4x the LLC (and >= 2^25 f32 = 128 MiB) */
    int64_t n = 4 * out->llc_bytes / (int64_t)sizeof(float);
    if (n < ((int64_t)1 << 25)) n = (int64_t)1 << 25;
    if (quick) n = out->llc_bytes / (int64_t)sizeof(float) / 4;
    n = (n + 63) & ~(int64_t)63;
    out->stream_n = n;
    int reps = quick ? 3 : 15;

    stream_ctx sc = {0};
    sc.n = n;
    sc.a = aligned_alloc(64, (size_t)n * sizeof(float));
    sc.b = aligned_alloc(64, (size_t)n * sizeof(float));
    if (!sc.a || !sc.b) {
        free(sc.a);
        free(sc.b);
        return mb_err_set(err, MB_ERUN, "cannot allocate 2 x %.3g GB for the bandwidth test",
                          (double)n * 4 / 1e9);
    }
    float *a = sc.a, *b = sc.b;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 1.0f + (float)(i & 255) * 0.01f; /* non-zero, varied */
        b[i] = 2.0f;
    }
    double bytes1 = (double)n * sizeof(float);
    if (progress) progress("bandwidth: copy, read, write");
    out->copy_gbs = 2 * bytes1 / median_time(copy_nt, &sc, reps) / 1e9;
    out->copy_plain_gbs = 2 * bytes1 / median_time(copy_plain, &sc, reps) / 1e9;
    /* the same copy with both arrays an eighth of the LLC each: warm, from
     * and to the last-level cache (many repetitions: each is short) */
    stream_ctx cc = sc;
    cc.n = (out->llc_bytes / 8 / (int64_t)sizeof(float)) & ~(int64_t)63;
    if (cc.n > 0)
        out->cache_gbs = 2.0 * (double)cc.n * sizeof(float) / median_time(copy_plain, &cc, reps * 20) / 1e9;
    out->read_gbs = bytes1 / median_time(read_sum, &sc, reps) / 1e9;
    out->write_gbs = bytes1 / median_time(write_nt, &sc, reps) / 1e9;
    out->write_plain_gbs = bytes1 / median_time(write_plain, &sc, reps) / 1e9;
    free(sc.a);
    free(sc.b);

    if (progress) progress("fp32 FMA peak");
    fma_ctx fc = {quick ? 20000 : 2000000, 0, 0};
    double fs = median_time(fma_peak, &fc, quick ? 3 : 5);
    out->fp32_tflops = fc.flops / fs / 1e12;

    if (progress) progress("op throughput");
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) {
        op_ctx oc = {(mb_op)op, quick ? 20 : 400, 0, 0};
        double os = median_time(op_rate, &oc, quick ? 3 : 5);
        out->op_geps[op] = oc.elements / os / 1e9;
    }
    out->sincos_geps = sincos_rate_geps(quick);
    if (progress) progress("per-pass overhead");
    int rc = pass_overhead(quick, &out->pass_overhead_us, err);
    if (rc) return rc;
    if (progress) progress("overlap of memory and compute, read streams");
    if ((rc = mb_meas_calibrate_overlap(out, n, quick ? 1 : 5, err))) return rc;
    /* a number that cannot be true fails loudly */
    if (!(out->copy_gbs > 0 && out->read_gbs > 0 && out->write_gbs > 0 && out->fp32_tflops > 0 &&
          isfinite(out->copy_gbs)))
        return mb_err_set(err, MB_ERUN, "calibration produced a non-positive rate");
    return MB_OK;
}

void mb_meas_calib_to_device(const mb_meas_calib *c, const char *command_line, mb_device *d)
{
    memset(d, 0, sizeof *d);
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    snprintf(d->name, sizeof d->name, "local-cpu");
    snprintf(d->label, sizeof d->label, "%.100s (%d threads)",
             pv.cpu_model[0] ? pv.cpu_model : "CPU", c->threads);
    snprintf(d->kind, sizeof d->kind, "cpu");
    double best = c->copy_gbs;
    if (c->read_gbs > best) best = c->read_gbs;
    if (c->write_gbs > best) best = c->write_gbs;
    d->mem_bandwidth_gbs = best;
    d->measured_bandwidth_gbs = c->copy_gbs;
    d->read_bandwidth_gbs = c->read_gbs;
    d->read_stream_penalty = c->read_stream_penalty;
    d->serial_fraction = c->serial_fraction;
    d->cache_bandwidth_gbs = c->cache_gbs;
    d->cache_mb = (double)c->llc_bytes / 1048576.0;
    d->fp32_tflops = c->fp32_tflops;
    d->bf16_tflops = c->fp32_tflops;
    d->launch_overhead_us = c->pass_overhead_us;
    d->mem_gb = c->mem_gb;
    for (int op = 0; op < MB_OP_COUNT; op++) d->op_geps[op] = c->op_geps[op];
    d->sincos_geps = c->sincos_geps;
    snprintf(d->source, sizeof d->source,
             "%s; %d threads, %lld-element f32 arrays; bandwidth = median of STREAM-style runs "
             "(requested bytes): copy %.2f GB/s non-temporal (%.2f plain), read %.2f, write %.2f "
             "non-temporal (%.2f plain); op rates L1-resident through the executor (%s); "
             "serial_fraction from y = sin(x) eager, read_stream_penalty from y = a+b+c+d fused",
             command_line ? command_line : "membound calibrate", c->threads,
             (long long)c->stream_n, c->copy_gbs, c->copy_plain_gbs, c->read_gbs, c->write_gbs,
             c->write_plain_gbs, mb_kern_vector_isa());
    snprintf(d->measured_at, sizeof d->measured_at, "%s %s", pv.host, pv.date);
}
