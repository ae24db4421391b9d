/* cpu_fused.c — membound's fused CPU executor against hand-written C loops over
 * the same SLEEF vector functions, for the lecture's fused kernels.
 *
 * For each of sin2_plus_cos2, gelu_tanh and sigmoid3 (forward) at n elements
 * of f32: the fused plan through mb_kern_run_plan, compiled (the default) and
 * interpreted (mb_kern_jit_configure OFF), and two loops a person would write
 * with SLEEF (sincos once, the tanh form, three sigmoids): "plain", one vector
 * per iteration, and "group4"/"group8", each step over 4 or 8 vectors before
 * the next (long dependent SLEEF chains need independent work beside them). All run
 * on the same threads, with non-temporal stores above the last-level cache,
 * in alternating order (interpreted, compiled, plain, group4, group8, ...) so the
 * drift of a shared machine falls on all. Prints medians, the ratio of the
 * compiled executor's median to the fastest loop's, the median of per-round
 * ratios, and the interpreter's ratio. Every loop's output is checked against
 * the executor's first (max relative difference printed).
 *
 * usage: cpu_fused_bench [--n N] [--reps R] [--threads T] [--clock wall|cpu] [--raw]
 * --raw prints one line per sample: variant,impl,seconds (bench/cpu_fused.py).
 * Does not run numexpr (bench/cpu_fused.py does). */
#include "kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#include <sleef.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__AVX512F__)
#define VW 16
typedef __m512 vf;
#define LD _mm512_loadu_ps
#define ST _mm512_storeu_ps
#define STNT _mm512_stream_ps
#define SET _mm512_set1_ps
#define ADD _mm512_add_ps
#define SUB _mm512_sub_ps
#define MUL _mm512_mul_ps
#define DIV _mm512_div_ps
#define FSINCOS Sleef_sincosf16_u35 /* kernels/vec_ops.h's forms */
#define FTANH Sleef_tanhf16_u35
#define FEXP Sleef_expf16_u10
typedef Sleef___m512_2 vf2;
#elif defined(__AVX2__)
#define VW 8
typedef __m256 vf;
#define LD _mm256_loadu_ps
#define ST _mm256_storeu_ps
#define STNT _mm256_stream_ps
#define SET _mm256_set1_ps
#define ADD _mm256_add_ps
#define SUB _mm256_sub_ps
#define MUL _mm256_mul_ps
#define DIV _mm256_div_ps
#define FSINCOS Sleef_sincosf8_u35 /* kernels/vec_ops.h's forms */
#define FTANH Sleef_tanhf8_u35
#define FEXP Sleef_expf8_u10
typedef Sleef___m256_2 vf2;
#endif

#if defined(VW)

/* CLOCK_MONOTONIC (wall), or with --clock cpu the process's CPU time: on a
 * shared machine that leaves out the time other processes held the cores
 * (not their memory traffic; OpenMP's spin-waits count). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Each function on G vectors at once, stage by stage (G = 1: the plain loop;
 * G > 1: G independent calls in flight between the dependent steps). */
#define G_MAX 8
#define FOR_G for (int u = 0; u < G; u++)

static inline void v_sin2cos2(vf *x, const int G)
{
    FOR_G {
        vf2 sc = FSINCOS(x[u]);
        x[u] = ADD(MUL(sc.x, sc.x), MUL(sc.y, sc.y));
    }
}

static inline void v_gelu_tanh(vf *x, const int G)
{
    vf t[G_MAX];
    FOR_G t[u] = MUL(SET(0.7978845608f), ADD(x[u], MUL(SET(0.044715f), MUL(MUL(x[u], x[u]), x[u]))));
    FOR_G t[u] = FTANH(t[u]);
    FOR_G x[u] = MUL(MUL(SET(0.5f), x[u]), ADD(SET(1.0f), t[u]));
}

static inline void v_sigmoid3(vf *x, const int G)
{
    for (int k = 0; k < 3; k++) {
        vf t[G_MAX];
        FOR_G t[u] = FEXP(SUB(SET(0.0f), x[u]));
        FOR_G x[u] = DIV(SET(1.0f), ADD(SET(1.0f), t[u]));
    }
}

/* The hand-written loop over groups of G vectors: one pass, static
 * partition, streaming stores when nt (y is 64-byte aligned: checked by the
 * caller), a padded vector for the tail. */
#define HAND_LOOP(FN, GN)                                                              \
    static void hand##GN##_##FN(const float *x, float *y, int64_t n, int nt)           \
    {                                                                                  \
        const int G = GN;                                                              \
        const int64_t step = (int64_t)G * VW;                                          \
        int64_t nv = n / step * step;                                                  \
        _Pragma("omp parallel")                                                        \
        {                                                                              \
            _Pragma("omp for schedule(static)")                                        \
            for (int64_t i = 0; i < nv; i += step) {                                   \
                vf r[G_MAX];                                                           \
                FOR_G r[u] = LD(x + i + u * VW);                                       \
                v_##FN(r, G);                                                          \
                if (nt)                                                                \
                    FOR_G STNT(y + i + u * VW, r[u]);                                  \
                else                                                                   \
                    FOR_G ST(y + i + u * VW, r[u]);                                    \
            }                                                                          \
            _mm_sfence();                                                              \
        }                                                                              \
        for (int64_t i = nv; i < n; i += VW) {                                         \
            float tx[VW] = {0}, ty[VW];                                                \
            int64_t m = n - i < VW ? n - i : VW;                                       \
            memcpy(tx, x + i, (size_t)m * sizeof(float));                              \
            vf r = LD(tx);                                                             \
            v_##FN(&r, 1);                                                             \
            ST(ty, r);                                                                 \
            memcpy(y + i, ty, (size_t)m * sizeof(float));                              \
        }                                                                              \
    }
HAND_LOOP(sin2cos2, 1)
HAND_LOOP(gelu_tanh, 1)
HAND_LOOP(sigmoid3, 1)
HAND_LOOP(sin2cos2, 4)
HAND_LOOP(gelu_tanh, 4)
HAND_LOOP(sigmoid3, 4)
HAND_LOOP(sin2cos2, 8)
HAND_LOOP(gelu_tanh, 8)
HAND_LOOP(sigmoid3, 8)

#define N_HAND 3
typedef void (*hand_fn)(const float *x, float *y, int64_t n, int nt);
static const char *const hand_names[N_HAND] = {"plain", "group4", "group8"};

typedef struct bench_case {
    const char *name;
    const char *expr;
    hand_fn hand[N_HAND]; /* plain loop (one vector at a time), grouped by 4 and 8 */
} bench_case;

static const bench_case cases[] = {
    {"sin2_plus_cos2", "y = sin(x)**2 + cos(x)**2", {hand1_sin2cos2, hand4_sin2cos2, hand8_sin2cos2}},
    {"gelu_tanh", "y = 0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))",
     {hand1_gelu_tanh, hand4_gelu_tanh, hand8_gelu_tanh}},
    {"sigmoid3_fwd", "y = sigmoid(sigmoid(sigmoid(x)))", {hand1_sigmoid3, hand4_sigmoid3, hand8_sigmoid3}},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *s, int k)
{
    qsort(s, (size_t)k, sizeof s[0], cmp_double);
    return k % 2 ? s[k / 2] : 0.5 * (s[k / 2 - 1] + s[k / 2]);
}

/* Largest relative difference between the executor's and a loop's output. */
static double max_rel_diff(const float *a, const float *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]) / fmax(fabs((double)b[i]), 1e-3);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

static int run_case(const bench_case *bc, int64_t n, int reps, int raw)
{
    mb_err err;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_tensors t;
    if (mb_parse_expr(bc->expr, MB_F32, &g, &err) || mb_plan_build(g, MB_PLAN_FUSED, &p, &err) ||
        mb_kern_tensors_alloc(p, n, 0, &t, &err)) {
        fprintf(stderr, "cpu_fused_bench: %s: %s\n", bc->name, err.msg);
        mb_plan_free(p);
        mb_graph_free(g);
        return 1;
    }
    const float *x = t.data[p->kernels[0].reads[0]];
    const float *y_exec = t.data[p->results[0]];
    float *y_hand = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) & ~(size_t)63);
    /* fused (compiled), hands, ratio, interpreted */
    double *s = malloc((size_t)reps * (N_HAND + 3) * sizeof(double));
    int rc = 1;
    if (!y_hand || !s) {
        fprintf(stderr, "cpu_fused_bench: out of memory\n");
        goto out;
    }
    int nt = (int64_t)n * 4 > t.nt_min_bytes;
    /* warm-up (first touch, page faults) and the check: every loop agrees
     * with the executor to 1e-5 */
    if (mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err)) {
        fprintf(stderr, "cpu_fused_bench: %s: %s\n", bc->name, err.msg);
        goto out;
    }
    double max_rel = 0;
    for (int h = 0; h < N_HAND; h++) {
        bc->hand[h](x, y_hand, n, nt);
        double d = max_rel_diff(y_exec, y_hand, n);
        if (!(d <= 1e-5)) {
            fprintf(stderr, "cpu_fused_bench: %s: executor and %s loop disagree (max rel %.3g)\n",
                    bc->name, hand_names[h], d);
            goto out;
        }
        max_rel = fmax(max_rel, d);
    }
    double *s_ratio = s + (size_t)reps * (N_HAND + 1), *s_interp = s_ratio + reps;
    for (int r = 0; r < reps; r++) {
        mb_kern_jit_configure(MB_KERN_JIT_OFF, NULL, NULL);
        double t0 = now_s();
        (void)mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err);
        s_interp[r] = now_s() - t0;
        mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, NULL);
        t0 = now_s();
        (void)mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err);
        s[r] = now_s() - t0;
        double best = INFINITY;
        for (int h = 0; h < N_HAND; h++) {
            t0 = now_s();
            bc->hand[h](x, y_hand, n, nt);
            s[(size_t)(h + 1) * reps + r] = now_s() - t0;
            best = fmin(best, s[(size_t)(h + 1) * reps + r]);
        }
        s_ratio[r] = s[r] / best;
        if (raw) {
            printf("%s,fused,%.9g\n%s,interpreted,%.9g\n", bc->name, s[r], bc->name, s_interp[r]);
            for (int h = 0; h < N_HAND; h++)
                printf("%s,%s,%.9g\n", bc->name, hand_names[h], s[(size_t)(h + 1) * reps + r]);
        }
    }
    double med[N_HAND + 1];
    for (int k = 0; k <= N_HAND; k++) med[k] = median_of(s + (size_t)k * reps, reps);
    double best_hand = fmin(fmin(med[1], med[2]), med[3]), interp = median_of(s_interp, reps);
    if (!raw)
        printf("%-15s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.3f %9.3f %9.3f %8.2g\n", bc->name,
               med[0] * 1e3, s[0] * 1e3, interp * 1e3, med[1] * 1e3, med[2] * 1e3, med[3] * 1e3,
               med[0] / best_hand, median_of(s_ratio, reps), interp / best_hand, max_rel);
    rc = 0;
out:
    free(s);
    free(y_hand);
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
    return rc;
}

static int usage(const char *msg)
{
    fprintf(stderr, "cpu_fused_bench: error: %s\n"
                    "usage: cpu_fused_bench [--n N] [--reps R] [--threads T] [--clock wall|cpu] [--raw]\n", msg);
    return 2;
}

int main(int argc, char **argv)
{
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME")); /* as the CLI does */
    int64_t n = (int64_t)1 << 24;
    int reps = 21, threads = 0, raw = 0;
    for (int i = 1; i < argc; i++) {
        mb_err err;
        if (!strcmp(argv[i], "--raw")) {
            raw = 1;
        } else if (i + 1 < argc && !strcmp(argv[i], "--n")) {
            if (mb_size_parse(argv[++i], &n, &err)) return usage(err.msg);
        } else if (i + 1 < argc && !strcmp(argv[i], "--clock")) {
            const char *c = argv[++i];
            if (!strcmp(c, "wall")) bench_clock = CLOCK_MONOTONIC;
            else if (!strcmp(c, "cpu")) bench_clock = CLOCK_PROCESS_CPUTIME_ID;
            else return usage("--clock takes wall or cpu");
        } else if (i + 1 < argc && !strcmp(argv[i], "--reps")) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 10000) return usage("--reps takes 1..10000");
            reps = (int)v;
        } else if (i + 1 < argc && !strcmp(argv[i], "--threads")) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 4096) return usage("--threads takes 0..4096 (0: all cores)");
            threads = (int)v;
        } else {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown or incomplete argument '%.200s'", argv[i]);
            return usage(msg);
        }
    }
    mb_kern_set_threads(threads);
    if (!raw) {
        printf("n = %lld f32, %d threads, %s, %d alternating samples each (warm: no flush), "
               "%s time\n", (long long)n, mb_kern_threads(), mb_kern_vector_isa(), reps,
               bench_clock == CLOCK_MONOTONIC ? "wall" : "process CPU");
        printf("%-15s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s\n", "variant", "fused ms", "fused min",
               "interp ms", "plain ms", "group4 ms", "group8 ms", "fus/hand", "med.ratio", "int/hand",
               "max.rel");
    }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        if (run_case(&cases[c], n, reps, raw)) return 1;
    return 0;
}
#else
int main(void)
{
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME")); /* as the CLI does */
    fprintf(stderr, "cpu_fused_bench: built without AVX2 or AVX-512: no vector loop to compare\n");
    return 1;
}
#endif
