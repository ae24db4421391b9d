/* calibrate_cpu.c — this CPU's roofs: STREAM-style copy/read/write bandwidth
 * on all cores, the FMA peak, each op's throughput through the executors' tile
 * primitive, and the cost of one executor pass. Writes no file (the CLI does). */
#define _GNU_SOURCE /* gethostname, sysconf(_SC_PHYS_PAGES) */
#include "kernels.h"
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

typedef void (*bench_fn)(void *ctx);

/* One figure of the calibration: one sample of fn per round, the rounds of
 * all figures interleaved so that a shared host's drift (memory bandwidth
 * swings by tens of percent over minutes here) spreads over every figure
 * alike; the figure is the median over rounds, its spread the CV. */
#define CAL_ROUNDS 7
#define CAL_ROUNDS_QUICK 3
/* a sample repeats fn for at least 2 ms: timer and fork/join noise below 1% */
#define CAL_SAMPLE_S 2e-3
/* a contended sample is taken again up to this often, then kept and counted */
#define CAL_RETRIES 4

typedef struct figure {
    const char *name;
    bench_fn fn;
    void *ctx;
    double work;             /* bytes, elements or flops per call of fn */
    int inner;               /* calls per sample */
    double s[CAL_ROUNDS];    /* seconds per call */
    int ns, contended, retaken;
} figure;

/* Warm-up (page faults) and the calls a sample needs. */
static void figure_warm(figure *f)
{
    f->fn(f->ctx);
    double t0 = mb_meas_now_s();
    f->fn(f->ctx);
    double one = mb_meas_now_s() - t0;
    f->inner = one >= CAL_SAMPLE_S ? 1 : (int)(CAL_SAMPLE_S / (one > 1e-8 ? one : 1e-8)) + 1;
    if (f->inner > 1000000) f->inner = 1000000;
    f->ns = f->contended = f->retaken = 0;
}

/* One sample, taken again while the process did not get its cores. */
static void figure_sample(figure *f, int threads)
{
    for (int a = 0;; a++) {
        mb_meas_contention cs;
        mb_meas_contention_begin(&cs);
        double t0 = mb_meas_now_s();
        for (int i = 0; i < f->inner; i++) f->fn(f->ctx);
        double w = mb_meas_now_s() - t0;
        int bad = mb_meas_contention_end(&cs, w, threads, 0);
        if (!bad || a == CAL_RETRIES) {
            f->s[f->ns++] = w / f->inner;
            f->contended += bad;
            return;
        }
        f->retaken++;
    }
}

/* work per second over the median sample (1e9/s), and the CV into *spread. */
static double figure_rate(const figure *f, double *spread)
{
    mb_meas_stats st;
    mb_meas_stats_compute(f->s, f->ns, &st);
    if (spread && st.cv > *spread) *spread = st.cv;
    return f->work / st.median_s / 1e9;
}

typedef struct stream_ctx {
    float *a, *b;
    int64_t n;
    volatile float sink;
} stream_ctx;

static void copy_nt(void *p)
{
    stream_ctx *c = p;
    mb_meas_copy_nt(c->b, c->a, c->n);
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

/* One op over an L1-resident tile, repeated, on every thread
 * (mb_meas_op_rate_run). */
typedef struct op_ctx {
    mb_op op;
    int64_t rounds;
    double elements;
} op_ctx;

static void op_rate(void *p)
{
    op_ctx *c = p;
    c->elements = mb_meas_op_rate_run(c->op, c->rounds);
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

/* One executor pass of a copy plan over one tile per thread: fork/join and
 * per-pass setup (the copy itself, a few ns per KiB in L1/L2, is in it). */
typedef struct pass_ctx {
    mb_graph *g;
    mb_plan *p;
    mb_kern_tensors t;
    int have_t;
} pass_ctx;

static void one_pass(void *p)
{
    pass_ctx *c = p;
    mb_err e;
    (void)mb_kern_run_plan(&c->t, MB_KERN_EXEC_AUTO, &e);
}

static void pass_free(pass_ctx *c)
{
    if (c->have_t) mb_kern_tensors_free(&c->t);
    mb_plan_free(c->p);
    mb_graph_free(c->g);
    memset(c, 0, sizeof *c);
}

/* The plan of expr (kind k) at n elements, ready to run (warm: page faults
 * taken, a compiled form built). */
static int pass_init(pass_ctx *c, const char *expr, mb_plan_kind k, int64_t n, mb_err *err)
{
    memset(c, 0, sizeof *c);
    int rc = mb_parse_expr(expr, MB_F32, &c->g, err);
    if (!rc) rc = mb_plan_build(c->g, k, &c->p, err);
    if (!rc && (rc = mb_kern_tensors_alloc(c->p, n, 0, &c->t, err)) == MB_OK) c->have_t = 1;
    if (!rc) rc = mb_kern_run_plan(&c->t, MB_KERN_EXEC_AUTO, err);
    if (rc) pass_free(c);
    return rc;
}

/* ---- op rates inside compiled kernels ----------------------------------------- */

/* A compiled kernel keeps every value in a register: an op costs less than
 * through the interpreter's tile primitive, which loads and stores a tile
 * per op. Each op is timed as a chain of CHAIN_DEEP of it in one fused kernel
 * (every result the next one's operand: nothing in common), against a chain
 * of CHAIN_SHALLOW adds, which pays the same pass, load and store; L2-resident
 * (CHAIN_N elements a thread). Chains the executor would not compile (no
 * compiler, no vector ISA) are left out, and the model keeps op_geps. */
#define CHAIN_DEEP 12
#define CHAIN_SHALLOW 2
#define CHAIN_N 32768

typedef struct chain_op {
    mb_op op;
    const char *pre, *post; /* one link: pre <previous> post */
} chain_op;

static const chain_op chain_ops[] = {
    {MB_OP_ADD, "(", " + x)"}, {MB_OP_SUB, "(", " - x)"}, {MB_OP_MUL, "(", " * x)"},
    {MB_OP_DIV, "(", " / x)"}, {MB_OP_NEG, "(-", ")"}, {MB_OP_SIN, "sin(", ")"},
    {MB_OP_COS, "cos(", ")"}, {MB_OP_TAN, "tan(", ")"}, {MB_OP_TANH, "tanh(", ")"},
    {MB_OP_EXP, "exp(", ")"}, {MB_OP_LOG, "log(", ")"}, {MB_OP_SQRT, "sqrt(", ")"},
    {MB_OP_RSQRT, "rsqrt(", ")"}, {MB_OP_SIGMOID, "sigmoid(", ")"}, {MB_OP_GELU, "gelu(", ")"},
};
#define N_CHAIN_OPS ((int)(sizeof chain_ops / sizeof chain_ops[0]))

/* "y = " and depth links of op around x, into buf; the sincos chain
 * (op < 0) is depth statements a_k = sin(a_{k-1}) + cos(a_{k-1}). */
static void chain_expr(int op_index, int depth, char *buf, size_t size)
{
    size_t len = 0;
    if (op_index < 0) {
        char prev[16] = "x", cur[16];
        for (int k = 1; k <= depth; k++) {
            if (k == depth) snprintf(cur, sizeof cur, "y");
            else snprintf(cur, sizeof cur, "a%d", k);
            len += (size_t)snprintf(buf + len, size - len, "%s = sin(%s) + cos(%s)\n", cur, prev, prev);
            memcpy(prev, cur, sizeof prev);
        }
        return;
    }
    const chain_op *c = &chain_ops[op_index];
    len = (size_t)snprintf(buf, size, "y = ");
    for (int k = 0; k < depth; k++) len += (size_t)snprintf(buf + len, size - len, "%s", c->pre);
    len += (size_t)snprintf(buf + len, size - len, "x");
    for (int k = 0; k < depth; k++) len += (size_t)snprintf(buf + len, size - len, "%s", c->post);
}

/* Builds the chains (see CHAIN_DEEP) at n elements into chains[0..N_CHAIN_OPS+1];
 * one the executor would not run compiled, or whose ops are not the chain
 * (the parser folded something), is left empty (have_t = 0). Returns how many
 * are ready; without chains[0] none is. */
static int chains_init(pass_ctx *chains, int64_t n)
{
    int ready = 0;
    for (int i = 0; i < N_CHAIN_OPS + 2; i++) {
        char expr[1024];
        int op_index = i == 0 ? 0 : i <= N_CHAIN_OPS ? i - 1 : -1;
        int depth = i == 0 ? CHAIN_SHALLOW : CHAIN_DEEP;
        chain_expr(op_index, depth, expr, sizeof expr);
        mb_err e;
        memset(&chains[i], 0, sizeof chains[i]);
        if (i > 0 && !chains[0].have_t) continue;
        if (pass_init(&chains[i], expr, MB_PLAN_FUSED, n, &e)) continue;
        mb_kern_eval_info info;
        int want_ops = op_index < 0 ? 2 * depth : depth; /* sincos chains add too */
        if (chains[i].p->n_kernels != 1 || mb_kern_kernel_info(&chains[i].t, 0, &info, &e) ||
            !info.compiled || info.evaluated != want_ops || info.sincos != (op_index < 0 ? depth : 0)) {
            pass_free(&chains[i]);
            continue;
        }
        ready++;
    }
    return ready;
}

/* Median seconds per call of figure f. */
static double figure_median_s(const figure *f)
{
    mb_meas_stats st;
    mb_meas_stats_compute(f->s, f->ns, &st);
    return st.median_s;
}

/* Each op's compiled rate from the chains' medians (figs: one per ready chain,
 * in order): the add chain less the shallow one gives the add; what every
 * chain pays besides its ops is the shallow time less its adds; the rest
 * follow. A rate that does not come out positive and finite stays 0: when
 * the deep add chain is no slower than the shallow one (timing noise), all
 * do, and implausible() says so. */
static void compiled_rates(const pass_ctx *chains, int n_chains, const figure *figs, int64_t n,
                           mb_meas_calib *out)
{
    memset(out->op_compiled_geps, 0, sizeof out->op_compiled_geps);
    out->sincos_compiled_geps = 0;
    out->compiled_ops = 0;
    if (n_chains < 2 || !chains[0].have_t || !chains[1].have_t) return;
    double t[N_CHAIN_OPS + 2] = {0};
    for (int i = 0, f = 0; i < N_CHAIN_OPS + 2; i++)
        if (chains[i].have_t) t[i] = figure_median_s(&figs[f++]);
    double add_s = (t[1] - t[0]) / (CHAIN_DEEP - CHAIN_SHALLOW) / (double)n; /* per element */
    if (!(add_s > 0)) return;
    double base_s = t[0] - CHAIN_SHALLOW * add_s * (double)n;
    if (base_s < 0) base_s = 0;
    for (int i = 1; i <= N_CHAIN_OPS + 1; i++) {
        if (!chains[i].have_t) continue;
        double op_s = (t[i] - base_s) / (double)n / CHAIN_DEEP; /* per element and link */
        if (i == N_CHAIN_OPS + 1) op_s -= add_s;                /* the sincos links add */
        if (!(op_s > 0) || !isfinite(op_s)) continue;
        if (i == N_CHAIN_OPS + 1) out->sincos_compiled_geps = 1e-9 / op_s;
        else out->op_compiled_geps[chain_ops[i - 1].op] = 1e-9 / op_s, out->compiled_ops++;
    }
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
        for (int a = 0;; a++) { /* a contended sample is taken again */
            mb_meas_flush_cpu(fl);
            mb_meas_contention cs;
            mb_meas_contention_begin(&cs);
            double t0 = mb_meas_now_s();
            int rc = mb_kern_run_plan(&pb->t, MB_KERN_EXEC_AUTO, err);
            if (rc) return rc;
            s[r] = mb_meas_now_s() - t0;
            /* quick runs (one rep) keep what they get: a retry costs a flush */
            if (!mb_meas_contention_end(&cs, s[r], mb_kern_threads(), 0) || a == CAL_RETRIES ||
                reps == 1)
                break;
        }
    }
    mb_meas_stats st;
    mb_meas_stats_compute(s, reps, &st);
    *time_s = st.median_s;
    return MB_OK;
}

static double clamp01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

double mb_meas_overlap_beta(double t_s, double launch_s, double mem_s, double compute_s,
                            double ref_geps, double now_geps)
{
    if (ref_geps > 0 && now_geps > 0) compute_s *= ref_geps / now_geps;
    double lo = fmin(mem_s, compute_s), hi = fmax(mem_s, compute_s);
    return lo > 0 ? clamp01((t_s - launch_s - hi) / lo) : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rounds of the probes, interleaved so that the machine's drift (shared
 * hosts swing memory bandwidth by tens of percent over minutes) cancels in
 * each round's ratios; the figures are the medians over rounds. */
#define OVERLAP_ROUNDS 9
/* sin probes (~1 ms each, 4-7% apart from one to the next here) before and
 * after each round's sin kernel */
#define OVERLAP_SIN_PROBES 3

int mb_meas_calibrate_overlap(mb_meas_calib *c, int64_t n, int reps, mb_err *err)
{
    mb_device d;
    c->serial_fraction = c->serial_fraction_q1 = c->serial_fraction_q3 = 0;
    c->serial_fraction_compiled = c->serial_fraction_compiled_q1 = c->serial_fraction_compiled_q3 = 0;
    c->has_serial_fraction_compiled = 0;
    c->read_stream_penalty = c->read_stream_gain = 0;
    mb_meas_calib_to_device(c, NULL, &d);
    probe copy = {0}, sine = {0}, xsin = {0}, sum4 = {0};
    mb_meas_flusher fl;
    /* twice the cache, or twice a probe array when that is smaller (it is
     * evicted either way; a reported 508 MiB cache would read 1 GiB a sample) */
    int64_t flush_llc = n * (int64_t)sizeof(float);
    if (reps > 1 && c->llc_bytes < flush_llc) flush_llc = c->llc_bytes;
    int rc = mb_meas_flusher_init(&fl, flush_llc, err);
    if (rc) return rc;
    /* copy: memory only; sin: one read, one write, compute about as long as
     * the memory time (interpreted: one op); x * sin(x): the same compiled;
     * a+b+c+d: four read streams, next to no compute */
    if (!(rc = probe_init(&copy, "y = copy(x)", MB_PLAN_EAGER, n, &d, err)) &&
        !(rc = probe_init(&sine, "y = sin(x)", MB_PLAN_EAGER, n, &d, err)) &&
        !(rc = probe_init(&xsin, "y = x * sin(x)", MB_PLAN_FUSED, n, &d, err)))
        rc = probe_init(&sum4, "y = a + b + c + d", MB_PLAN_FUSED, n, &d, err);
    /* the compiled probe counts only when it runs compiled */
    mb_kern_eval_info info;
    mb_err e_info;
    int compiled = !rc && xsin.p->n_kernels == 1 &&
                   !mb_kern_kernel_info(&xsin.t, 0, &info, &e_info) && info.compiled;
    double beta[OVERLAP_ROUNDS], beta_c[OVERLAP_ROUNDS], gamma[OVERLAP_ROUNDS], gain[OVERLAP_ROUNDS];
    int rounds = 0;
    int n_rounds = reps == 1 ? 3 : OVERLAP_ROUNDS;
    for (int r = 0; r < n_rounds && !rc; r++) {
        double t_copy, t_sin, t_xsin = 0, t_sum4, sin_geps[2 * OVERLAP_SIN_PROBES] = {0};
        if ((rc = probe_time(&copy, &fl, reps, &t_copy, err))) break;
        for (int i = 0; i < OVERLAP_SIN_PROBES && c->ref_op_geps[0] > 0; i++)
            sin_geps[i] = mb_meas_hostref_op_geps(0);
        if ((rc = probe_time(&sine, &fl, reps, &t_sin, err))) break;
        if (compiled && (rc = probe_time(&xsin, &fl, reps, &t_xsin, err))) break;
        for (int i = 0; i < OVERLAP_SIN_PROBES && c->ref_op_geps[0] > 0; i++)
            sin_geps[OVERLAP_SIN_PROBES + i] = mb_meas_hostref_op_geps(0);
        if ((rc = probe_time(&sum4, &fl, reps, &t_sum4, err))) break;
        /* this round's streaming rate, from the copy: 8n bytes */
        double copy_gbs = (double)(copy.est.total.read_bytes + copy.est.total.write_bytes) / t_copy / 1e9;
        const double now_sin_geps = mb_meas_median_rate(sin_geps, 2 * OVERLAP_SIN_PROBES);
        const mb_cost *k = &xsin.est.per_kernel[0];
        double mem_s = (double)(k->read_bytes + k->write_bytes) / (copy_gbs * 1e9);
        if (compiled)
            beta_c[rounds] = mb_meas_overlap_beta(t_xsin, k->launch_s, mem_s, k->compute_s,
                                                  c->ref_op_geps[0], now_sin_geps);
        k = &sine.est.per_kernel[0];
        mem_s = (double)(k->read_bytes + k->write_bytes) / (copy_gbs * 1e9);
        beta[rounds] = mb_meas_overlap_beta(t_sin, k->launch_s, mem_s, k->compute_s, c->ref_op_geps[0],
                                            now_sin_geps);
        /* the four-stream kernel's reads against a single read stream, which
         * calibration found to run at read_gbs / copy_gbs of the copy rate */
        k = &sum4.est.per_kernel[0];
        double read1_gbs = copy_gbs * c->read_gbs / c->copy_gbs;
        double read4_s = t_sum4 - k->launch_s - beta[rounds] * k->compute_s;
        double read4_gbs = read4_s > 0 ? (double)k->read_bytes / read4_s / 1e9 : read1_gbs;
        gamma[rounds] = fmax(0, (read1_gbs / read4_gbs - 1) / 3);
        gain[rounds] = fmax(0, (read4_gbs / read1_gbs - 1) / 3);
        rounds++;
    }
    if (!rc && rounds) {
        qsort(beta, (size_t)rounds, sizeof beta[0], cmp_double);
        qsort(gamma, (size_t)rounds, sizeof gamma[0], cmp_double);
        qsort(gain, (size_t)rounds, sizeof gain[0], cmp_double);
        c->serial_fraction = beta[rounds / 2];
        c->serial_fraction_q1 = beta[rounds / 4];
        c->serial_fraction_q3 = beta[(3 * rounds) / 4];
        if (compiled) {
            c->has_serial_fraction_compiled = 1;
            qsort(beta_c, (size_t)rounds, sizeof beta_c[0], cmp_double);
            c->serial_fraction_compiled = beta_c[rounds / 2];
            c->serial_fraction_compiled_q1 = beta_c[rounds / 4];
            c->serial_fraction_compiled_q3 = beta_c[(3 * rounds) / 4];
        }
        c->read_stream_penalty = gamma[rounds / 2];
        /* one of the two: the median round's direction */
        c->read_stream_gain = c->read_stream_penalty > 0 ? 0 : gain[rounds / 2];
    }
    probe_free(&copy);
    probe_free(&sine);
    probe_free(&xsin);
    probe_free(&sum4);
    mb_meas_flusher_free(&fl);
    return rc;
}

/* Why the probes cannot be trusted, into why; 0 when they can: a probe
 * with half its samples contended, then mb_meas_calib_implausible. */
static int implausible(const mb_meas_calib *c, const figure *figs, int nf, int quick, char *why,
                       size_t whysz)
{
    for (int i = 0; i < nf; i++)
        if (figs[i].contended > 0 && 2 * figs[i].contended >= figs[i].ns) {
            snprintf(why, whysz, "the process did not get its cores during the %s probe (%d of %d "
                     "samples contended after %d retries each: other processes or steal)",
                     figs[i].name, figs[i].contended, figs[i].ns, CAL_RETRIES);
            return 1;
        }
    return mb_meas_calib_implausible(c, quick, why, whysz);
}

int mb_meas_calib_implausible(const mb_meas_calib *c, int quick, char *why, size_t whysz)
{
    const double bw[] = {c->copy_gbs, c->copy_plain_gbs, c->read_gbs, c->write_gbs, c->write_plain_gbs};
    double bmin = bw[0], bmax = bw[0];
    for (int i = 1; i < 5; i++) bmin = fmin(bmin, bw[i]), bmax = fmax(bmax, bw[i]);
    if (!(bmin > 0) || bmax > 10 * bmin) {
        snprintf(why, whysz, "bandwidths disagree by more than 10x (copy %.3g, plain copy %.3g, read "
                 "%.3g, write %.3g, plain write %.3g GB/s)", bw[0], bw[1], bw[2], bw[3], bw[4]);
        return 1;
    }
    double omin = INFINITY, omax = 0;
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++)
        omin = fmin(omin, c->op_geps[op]), omax = fmax(omax, c->op_geps[op]);
    if (!(omin > 0) || omax < 1.5 * omin) {
        snprintf(why, whysz, "every op rate within 1.5x of the others (%.3g..%.3g Gelem/s, from add "
                 "to gelu): that is the timing, not the ops", omin, omax);
        return 1;
    }
    /* a cheap op on L1-resident tiles cannot be slower than a copy from DRAM */
    static const mb_op cheap[] = {MB_OP_COPY, MB_OP_ADD, MB_OP_MUL};
    double copy_geps = c->copy_gbs / (2.0 * sizeof(float));
    for (int i = 0; i < 3 && !quick; i++)
        if (c->op_geps[cheap[i]] < copy_geps) {
            snprintf(why, whysz, "op %s at %.3g Gelem/s in L1 is slower than a copy from memory "
                     "(%.3g Gelem/s)", mb_op_name(cheap[i]), c->op_geps[cheap[i]], copy_geps);
            return 1;
        }
    /* the chains built but gave no rate: their medians did not separate
     * (the deep add chain no slower than the shallow), and compiled kernels
     * would be modelled at the interpreter's rates */
    if (c->compiled_chains >= 2 && c->compiled_ops == 0) {
        snprintf(why, whysz, "%d compiled probe chains ran, but none gave an op rate (the chain of "
                 "%d adds no slower than the one of %d: timing noise)", c->compiled_chains,
                 CHAIN_DEEP, CHAIN_SHALLOW);
        return 1;
    }
    if (!(c->fp32_tflops > 0) || !isfinite(c->copy_gbs)) {
        snprintf(why, whysz, "a non-positive FMA rate or bandwidth");
        return 1;
    }
    return 0;
}

int mb_meas_calibrate_cpu(int threads, int quick, void (*progress)(const char *label),
                          mb_meas_calib *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    mb_kern_set_threads(threads);
    out->threads = mb_kern_threads();
    out->llc_reported_bytes = mb_kern_llc_bytes();
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    out->mem_gb = pages > 0 && psz > 0 ? (double)pages * (double)psz / 1e9 : 0.0;
    char label[320];
    double t_start = mb_meas_now_s();
#define STEP(...) do { if (progress) { int k_ = snprintf(label, sizeof label, "[%4.1f s] ", \
        mb_meas_now_s() - t_start); snprintf(label + k_, sizeof label - (size_t)k_, __VA_ARGS__); \
        progress(label); } } while (0)

    /* the effective last-level cache sizes everything after it */
    STEP("last-level cache: warm copy bandwidth from 1 MiB up");
    int rc = mb_meas_cache_knee(out->llc_reported_bytes, quick, &out->llc_bytes,
                                &out->llc_from_knee, out->llc_desc, sizeof out->llc_desc, err);
    if (rc && quick && out->llc_reported_bytes > 0) { /* a smoke test goes on */
        STEP("last-level cache knee not measured: %s", err->msg);
        out->llc_bytes = out->llc_reported_bytes;
        snprintf(out->llc_desc, sizeof out->llc_desc, "reported %.0f MiB (knee not measured: "
                 "contended)", (double)out->llc_reported_bytes / 1048576.0);
        rc = MB_OK;
    }
    if (rc) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return mb_err_set(err, rc, "calibration refused, nothing written: %.400s", msg);
    }
    STEP("last-level cache: %s", out->llc_desc);
    int64_t n = mb_meas_stream_elements(out->llc_bytes, quick);
    out->stream_n = n;

    stream_ctx sc = {0};
    sc.n = n;
    sc.a = aligned_alloc(64, (size_t)n * sizeof(float));
    sc.b = aligned_alloc(64, (size_t)n * sizeof(float));
    pass_ctx pc;
    if (!sc.a || !sc.b) {
        free(sc.a);
        free(sc.b);
        return mb_err_set(err, MB_ERUN, "cannot allocate 2 x %.3g GB for the bandwidth test",
                          (double)n * 4 / 1e9);
    }
    if ((rc = pass_init(&pc, "y = copy(x)", MB_PLAN_EAGER,
                        (int64_t)mb_kern_threads() * MB_KERN_TILE, err))) {
        free(sc.a);
        free(sc.b);
        return rc;
    }
    /* chains[0]: the shallow adds; 1..N_CHAIN_OPS: each op; then sincos */
    pass_ctx chains[N_CHAIN_OPS + 2];
    STEP("compiled kernels: %d probe chains (compiled once, then loaded from the kernel cache)",
         N_CHAIN_OPS + 2);
    int n_chains = chains_init(chains, (int64_t)mb_kern_threads() * CHAIN_N);
    out->compiled_chains = n_chains;
    float *a = sc.a, *b = sc.b;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 1.0f + (float)(i & 255) * 0.01f; /* non-zero, varied */
        b[i] = 2.0f;
    }
    double bytes1 = (double)n * sizeof(float);
    /* the same copy with both arrays an eighth of the LLC each: warm, from
     * and to the last-level cache */
    stream_ctx cc = sc;
    cc.n = (out->llc_bytes / 8 / (int64_t)sizeof(float)) & ~(int64_t)63;
    if (cc.n > n) cc.n = n; /* quick: the arrays are smaller */
    fma_ctx fc = {quick ? 20000 : 200000, 0, 0};
    op_ctx oc[MB_OP_COUNT];
    enum { F_COPY, F_COPY_PLAIN, F_CACHE, F_READ, F_WRITE, F_WRITE_PLAIN, F_FMA, F_PASS, F_OPS };
    figure figs[F_OPS + MB_OP_COUNT + N_CHAIN_OPS + 2];
    memset(figs, 0, sizeof figs);
    figs[F_COPY] = (figure){.name = "copy", .fn = copy_nt, .ctx = &sc, .work = 2 * bytes1};
    figs[F_COPY_PLAIN] = (figure){.name = "plain copy", .fn = copy_plain, .ctx = &sc, .work = 2 * bytes1};
    figs[F_CACHE] = (figure){.name = "cache copy", .fn = copy_plain, .ctx = &cc, .work = 2.0 * (double)cc.n * sizeof(float)};
    figs[F_READ] = (figure){.name = "read", .fn = read_sum, .ctx = &sc, .work = bytes1};
    figs[F_WRITE] = (figure){.name = "write", .fn = write_nt, .ctx = &sc, .work = bytes1};
    figs[F_WRITE_PLAIN] = (figure){.name = "plain write", .fn = write_plain, .ctx = &sc, .work = bytes1};
    figs[F_FMA] = (figure){.name = "fp32 FMA", .fn = fma_peak, .ctx = &fc, .work = 0};
    figs[F_PASS] = (figure){.name = "executor pass", .fn = one_pass, .ctx = &pc, .work = 1e3}; /* 1 / rate: us per pass */
    int nf = F_OPS;
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) {
        oc[op] = (op_ctx){(mb_op)op, quick ? 100 : 2000, 0};
        figs[nf++] = (figure){.name = mb_op_name((mb_op)op), .fn = op_rate, .ctx = &oc[op], .work = 0};
    }
    const int f_chains = nf;
    char chain_names[N_CHAIN_OPS + 2][48];
    for (int i = 0; i < N_CHAIN_OPS + 2; i++) {
        if (!chains[i].have_t) continue;
        snprintf(chain_names[i], sizeof chain_names[i], "compiled %s chain", i == 0 ? "short add"
                 : i <= N_CHAIN_OPS ? mb_op_name(chain_ops[i - 1].op) : "sincos");
        figs[nf++] = (figure){.name = chain_names[i], .fn = one_pass, .ctx = &chains[i], .work = 1};
    }
    int rounds = quick ? CAL_ROUNDS_QUICK : CAL_ROUNDS;
    char why[512] = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        STEP("%sprobes: bandwidth, FMA peak, %d op rates, executor pass; %d interleaved rounds",
             attempt ? "again: " : "", MB_OP_COUNT - MB_OP_ADD, rounds);
        for (int i = 0; i < nf; i++) figure_warm(&figs[i]);
        figs[F_FMA].work = fc.flops; /* set by the warm-up call */
        for (int i = F_OPS; i < f_chains; i++) figs[i].work = oc[MB_OP_ADD + i - F_OPS].elements;
        /* a figure with more than half its rounds contended cannot have a
         * clean median: the attempt stops there */
        int hopeless = 0, n_ref = 0;
        /* the host reference on the copy's arrays, once a round: measure
         * times the same beside its rows and compares */
        mb_meas_hostref href = {.src = sc.a, .dst = sc.b, .n = sc.n};
        double ref_copy[CAL_ROUNDS], ref_op[MB_MEAS_HOSTREF_N_OPS][CAL_ROUNDS];
        for (int r = 0; r < rounds && !hopeless; r++) {
            for (int i = 0; i < nf && !hopeless; i++) {
                figure_sample(&figs[i], out->threads);
                hopeless = !quick && 2 * figs[i].contended > rounds;
            }
            if (quick) continue; /* a smoke test's arrays are not measure's: no reference */
            for (int o = 0; o < MB_MEAS_HOSTREF_N_OPS; o++) ref_op[o][n_ref] = mb_meas_hostref_op_geps(o);
            ref_copy[n_ref++] = mb_meas_hostref_copy_gbs(&href);
        }
        out->ref_copy_gbs = mb_meas_median_rate(ref_copy, n_ref);
        for (int o = 0; o < MB_MEAS_HOSTREF_N_OPS; o++)
            out->ref_op_geps[o] = mb_meas_median_rate(ref_op[o], n_ref);
        double bw_spread = 0, op_spread = 0;
        out->copy_gbs = figure_rate(&figs[F_COPY], &bw_spread);
        out->copy_plain_gbs = figure_rate(&figs[F_COPY_PLAIN], &bw_spread);
        out->cache_gbs = cc.n > 0 ? figure_rate(&figs[F_CACHE], &bw_spread) : 0.0;
        out->read_gbs = figure_rate(&figs[F_READ], &bw_spread);
        out->write_gbs = figure_rate(&figs[F_WRITE], &bw_spread);
        out->write_plain_gbs = figure_rate(&figs[F_WRITE_PLAIN], &bw_spread);
        out->fp32_tflops = figure_rate(&figs[F_FMA], &op_spread) / 1e3;
        out->pass_overhead_us = 1.0 / figure_rate(&figs[F_PASS], &op_spread);
        for (int i = F_OPS; i < f_chains; i++)
            out->op_geps[MB_OP_ADD + i - F_OPS] = figure_rate(&figs[i], &op_spread);
        compiled_rates(chains, n_chains, figs + f_chains, (int64_t)mb_kern_threads() * CHAIN_N, out);
        out->bw_spread = bw_spread;
        out->op_spread = op_spread;
        out->samples = out->retaken = 0;
        for (int i = 0; i < nf; i++) out->samples += figs[i].ns, out->retaken += figs[i].retaken;
        if (!implausible(out, figs, nf, quick, why, sizeof why)) {
            why[0] = '\0';
            break;
        }
        STEP("implausible: %s", why);
        if (quick) { /* a smoke test: said, not refused (its figures are not for the model) */
            why[0] = '\0';
            break;
        }
    }
    free(sc.a);
    free(sc.b);
    pass_free(&pc);
    for (int i = 0; i < N_CHAIN_OPS + 2; i++) pass_free(&chains[i]);
    if (why[0]) return mb_err_set(err, MB_ERUN, "calibration refused, nothing written: %s", why);
    out->sincos_geps = sincos_rate_geps(quick);
    STEP("overlap of memory and compute, read streams");
    /* the probes need arrays beyond the cache, not the STREAM rule's 4x: the
     * four-stream probe holds five of them */
    int64_t n_probe = n < ((int64_t)1 << 25) ? n : (int64_t)1 << 25;
    if ((rc = mb_meas_calibrate_overlap(out, n_probe, quick ? 1 : 3, err))) return rc;
    STEP("done");
#undef STEP
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
    d->read_stream_gain = c->read_stream_gain;
    d->serial_fraction = c->serial_fraction;
    d->has_serial_fraction_compiled = c->has_serial_fraction_compiled;
    d->serial_fraction_compiled = c->has_serial_fraction_compiled ? c->serial_fraction_compiled : 0;
    /* x86 caches allocate on ordinary stores: a store to a line not held
     * reads it first (2-vCPU EPYC guest, one thread, after a 64 MiB flush:
     * writing 1 MiB took 25.8 us, reading it 25.4 us, writing it again
     * warm 10.9 us); the executors stream tensors above the cache instead */
    d->write_allocate = 1;
    d->cache_bandwidth_gbs = c->cache_gbs;
    d->cache_mb = (double)c->llc_bytes / 1048576.0;
    d->fp32_tflops = c->fp32_tflops;
    d->bf16_tflops = c->fp32_tflops;
    d->launch_overhead_us = c->pass_overhead_us;
    d->mem_gb = c->mem_gb;
    for (int op = 0; op < MB_OP_COUNT; op++) d->op_geps[op] = c->op_geps[op];
    d->sincos_geps = c->sincos_geps;
    for (int op = 0; op < MB_OP_COUNT; op++) d->op_compiled_geps[op] = c->op_compiled_geps[op];
    d->sincos_compiled_geps = c->sincos_compiled_geps;
    d->host_ref_copy_gbs = c->ref_copy_gbs;
    d->host_ref_sin_geps = c->ref_op_geps[0];
    d->host_ref_sigmoid_geps = c->ref_op_geps[1];
    char llc[96], compiled[96] = "";
    if (c->has_serial_fraction_compiled)
        snprintf(compiled, sizeof compiled, ", compiled y = x * sin(x) (%.2f-%.2f)",
                 c->serial_fraction_compiled_q1, c->serial_fraction_compiled_q3);
    if (c->llc_from_knee)
        snprintf(llc, sizeof llc, "LLC %.0f MiB from a measured knee (system reports %.0f MiB)",
                 (double)c->llc_bytes / 1048576.0, (double)c->llc_reported_bytes / 1048576.0);
    else
        snprintf(llc, sizeof llc, "LLC %.0f MiB as the system reports (no knee measured)",
                 (double)c->llc_bytes / 1048576.0);
    snprintf(d->source, sizeof d->source,
             "%.60s; %d threads, %lld-element f32 arrays; %s; bandwidth = medians over "
             "interleaved rounds (requested bytes, CV <= %.0f%%): copy %.2f GB/s non-temporal "
             "(%.2f plain), read %.2f, write %.2f non-temporal (%.2f plain); op rates: "
             "executor tiles in L1 (%s, CV <= %.0f%%), %d in compiled chains (%d chains built); "
             "overlap from y = sin(x) (rounds' quartiles %.2f-%.2f)%s, stream penalty from "
             "y = a+b+c+d",
             command_line ? command_line : "membound calibrate", c->threads,
             (long long)c->stream_n, llc, 100 * c->bw_spread, c->copy_gbs, c->copy_plain_gbs,
             c->read_gbs, c->write_gbs, c->write_plain_gbs, mb_kern_vector_isa(),
             100 * c->op_spread, c->compiled_ops, c->compiled_chains, c->serial_fraction_q1,
             c->serial_fraction_q3, compiled);
    snprintf(d->measured_at, sizeof d->measured_at, "%s %s", pv.host, pv.date);
}
