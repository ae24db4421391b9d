/* measure_calib_check.c — the rules that refuse a CPU calibration whose
 * figures cannot be true (mb_cal_implausible). The sane calibration is
 * a 2-vCPU EPYC guest's, rounded from reports/data/cpu-amd-epyc-2vcpu/
 * local-cpu.ini; each case breaks one figure the way a loaded or broken run
 * did: every op rate alike (0.0512 Gelem/s, add, sin and copy, the run
 * issue 10 reports), bandwidths 10x apart, an add slower than a copy from
 * memory, compiled chains that ran without one rate from them. And the one
 * sample timer every probe uses (calibrate/cal_int.h's mb_meas_sample_s),
 * with a figure's untimed step before each sample. */
#include "cal_int.h"
#include "mb_test.h"
#include "kernels.h"
#include "calibrate.h"

#include <string.h>
#include <time.h>

typedef struct counts {
    int fn, before;
} counts;

static void count_fn(void *p)
{
    counts *c = p;
    c->fn++;
    struct timespec ts = {0, 200000}; /* 0.2 ms a call */
    nanosleep(&ts, NULL);
}

static void count_before(void *p) { ((counts *)p)->before++; }

/* cache_bandwidth_gbs times a copy of arrays the round's DRAM streams have
 * just evicted: each sample must follow an untimed copy of the same arrays
 * (without it the 2-vCPU Xeon guest's "cache" copy ran at its DRAM rate) */
static void cache_copy_warm(void)
{
    enum { N = 1 << 16 };
    static float a[N] __attribute__((aligned(64))), b[N] __attribute__((aligned(64)));
    for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = -1.0f;
    mb_cal_stream_ctx cc = {a, b, N, 0};
    mb_cal_figure f = mb_cal_cache_copy_figure(&cc);
    CHECK(f.fn == mb_cal_copy_plain);
    CHECK(f.before == mb_cal_copy_plain);
    CHECK(f.ctx == &cc);
    CHECK(f.work == 2.0 * N * sizeof(float));
    mb_cal_figure_warm(&f);
    mb_cal_figure_sample(&f, 1);
    CHECK_EQ_I64(f.ns, 1);
    CHECK(f.s[0] > 0);
    CHECK(b[0] == 0.0f && b[N - 1] == (float)(N - 1));
}

/* calls per attempt, the untimed step once before each attempt, attempts
 * taken again counted, seconds per call (not per sample). */
static void sample_timer(void)
{
    counts c = {0, 0};
    int contended = -1, retaken = 0;
    mb_meas_sampler s = {count_fn, &c, count_before, &c, 5, 1, 2};
    double per_call = mb_meas_sample_s(&s, &contended, &retaken);
    CHECK(contended == 0 || contended == 1);
    CHECK(retaken >= 0 && retaken <= 2);
    CHECK_EQ_I64(c.before, retaken + 1);
    CHECK_EQ_I64(c.fn, 5 * (retaken + 1));
    CHECK(per_call >= 1.9e-4 && per_call < 0.1);
    /* no retries: one attempt, whatever the contention */
    c = (counts){0, 0};
    retaken = 0;
    s.retries = 0;
    s.before = NULL;
    (void)mb_meas_sample_s(&s, NULL, &retaken);
    CHECK(retaken == 0 && c.fn == 5 && c.before == 0);
    /* a figure's before (the GEMM's untimed product) runs once before each
     * of its samples, on its ctx; a figure without one runs none */
    c = (counts){0, 0};
    mb_cal_figure f = {.name = "counted", .fn = count_fn, .ctx = &c, .work = 1, .before = count_before};
    mb_cal_figure_warm(&f);
    CHECK_EQ_I64(c.fn, 2);
    CHECK_EQ_I64(c.before, 0);
    mb_cal_figure_sample(&f, 1);
    mb_cal_figure_sample(&f, 1);
    CHECK_EQ_I64(c.before, 2 + f.retaken);
    CHECK_EQ_I64(c.fn, 2 + f.inner * (2 + f.retaken));
    f.before = NULL;
    int before = c.before;
    mb_cal_figure_sample(&f, 1);
    CHECK_EQ_I64(c.before, before);
}

/* The compiled rates round by round: chains of 2 and 12 adds and of 12
 * subs over n = 1000 elements, an add link 0.1 ns, a sub link 0.2 ns and
 * 1 us besides: add 10, sub 5 G/s; a round whose shallow chain ran 40%
 * slow (its add comes out negative) and one whose sub chain ran 3x slow
 * leave the median of the rounds where it was. */
static void compiled_rates(void)
{
    mb_cal_chains ch;
    memset(&ch, 0, sizeof ch);
    ch.n = 3, ch.ready = 3;
    ch.op[0] = MB_OP_ADD, ch.op[1] = MB_OP_ADD, ch.op[2] = MB_OP_SUB;
    for (int i = 0; i < 3; i++) ch.c[i].have_t = 1;
    mb_cal_figure f[3];
    memset(f, 0, sizeof f);
    const double n = 1000, base = 1e-6, add = 1e-10, sub = 2e-10;
    for (int r = 0; r < CAL_ROUNDS; r++) {
        f[0].s[r] = base + CHAIN_SHALLOW * add * n;
        f[1].s[r] = base + CHAIN_DEEP * add * n;
        f[2].s[r] = base + CHAIN_DEEP * sub * n;
    }
    for (int i = 0; i < 3; i++) f[i].ns = CAL_ROUNDS;
    f[0].s[1] *= 1.4;
    f[2].s[4] *= 3;
    mb_cal_result out;
    memset(&out, 0, sizeof out);
    mb_cal_compiled_rates(&ch, f, 1000, &out);
    CHECK_NEAR(out.op_compiled_geps[MB_OP_ADD], 10.0, 1e-6);
    CHECK_NEAR(out.op_compiled_geps[MB_OP_SUB], 5.0, 1e-6);
    CHECK_EQ_I64(out.compiled_ops, 2);
    /* neg has no chain (-(-x) folds to x): the add's rate, not a chain's */
    CHECK_NEAR(out.op_compiled_geps[MB_OP_NEG], 10.0, 1e-6);
    CHECK(mb_op_info_of(MB_OP_NEG)->probe_pre == NULL);
    /* the deep add chain no faster than the shallow in most rounds: no rate */
    for (int r = 0; r < CAL_ROUNDS; r++) f[1].s[r] = f[0].s[r] * (r < 4 ? 0.99 : 1.5);
    mb_cal_compiled_rates(&ch, f, 1000, &out);
    CHECK_EQ_I64(out.compiled_ops, 0);
    CHECK(out.op_compiled_geps[MB_OP_NEG] == 0);
}

static mb_cal_result sane(void)
{
    mb_cal_result c;
    memset(&c, 0, sizeof c);
    c.copy_gbs = 75.4, c.copy_plain_gbs = 60.0, c.read_gbs = 63.8;
    c.write_gbs = 40.0, c.write_plain_gbs = 30.0;
    c.fp32_tflops = 0.41;
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) c.op_geps[op] = 40.0;
    c.op_geps[MB_OP_SIN] = 5.46, c.op_geps[MB_OP_SIGMOID] = 8.49, c.op_geps[MB_OP_GELU] = 0.80;
    c.op_geps[MB_OP_COPY] = 74.9, c.op_geps[MB_OP_ADD] = 57.1, c.op_geps[MB_OP_MUL] = 57.7;
    c.compiled_chains = 17, c.compiled_ops = 15;
    return c;
}

/* Checks that c is refused (want != NULL: why holds want) or accepted. */
static void expect(const mb_cal_result *c, int quick, const char *want)
{
    char why[512] = "";
    int bad = mb_cal_implausible(c, quick, why, sizeof why);
    CHECK_EQ_I64(bad, want != NULL);
    if (want && !strstr(why, want)) fprintf(stderr, "  why: %s\n  wanted: %s\n", why, want);
    CHECK(want ? strstr(why, want) != NULL : why[0] == '\0');
}

int main(void)
{
    mb_cal_result c = sane();
    expect(&c, 0, NULL);

    /* every op at the same rate: the timing, not the ops */
    c = sane();
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) c.op_geps[op] = 0.0512;
    expect(&c, 0, "every op rate within 1.5x of the others (0.0512..0.0512 Gelem/s");
    expect(&c, 1, "every op rate within 1.5x"); /* quick too */

    /* bandwidths that disagree by more than 10x, or one not measured */
    c = sane();
    c.read_gbs = 6.0;
    expect(&c, 0, "bandwidths disagree by more than 10x");
    c.read_gbs = 0;
    expect(&c, 0, "bandwidths disagree by more than 10x");
    c.read_gbs = 7.6; /* within 10x of the copy's 75.4, but under half the copy's own reads */
    expect(&c, 0, "the read probe's 7.6 GB/s is under half the 37.7 GB/s a copy reads while it writes");
    expect(&c, 1, "the read probe's 7.6 GB/s");
    c.read_gbs = 18.9; /* just over half of them */
    expect(&c, 0, NULL);

    /* a cheap op in L1 slower than a copy from memory (9.43 Gelem/s here);
     * a quick run's small arrays make no such copy: not checked */
    c = sane();
    c.op_geps[MB_OP_ADD] = 9.0;
    expect(&c, 0, "op add at 9 Gelem/s in L1 is slower than a copy from memory (9.43 Gelem/s)");
    expect(&c, 1, NULL);

    /* compiled chains built, no rate from them: refused; none built (no
     * compiler): compiled kernels take op_geps, nothing wrong; some rates
     * dropped: the model keeps op_geps for those */
    c = sane();
    c.compiled_ops = 0;
    expect(&c, 0, "17 compiled probe chains ran, but none gave an op rate");
    expect(&c, 1, "17 compiled probe chains ran");
    c.compiled_chains = 0;
    expect(&c, 0, NULL);
    c.compiled_chains = 17, c.compiled_ops = 3;
    expect(&c, 0, NULL);

    /* a compiled op beyond twice the FMA peak's lanes (0.41 TFLOP/s: 205 G
     * lanes/s, 410 G elements/s at most): the chains' difference was noise
     * (a 2-vCPU EPYC guest's sub at 937 where its peak issues 113) */
    c = sane();
    c.op_compiled_geps[MB_OP_SUB] = 937;
    expect(&c, 0, "compiled sub at 937 Gelem/s, beyond twice the FMA peak's 205 G lanes/s");
    c.op_compiled_geps[MB_OP_SUB] = 400;
    expect(&c, 0, NULL);

    /* no FMA rate */
    c = sane();
    c.fp32_tflops = 0;
    expect(&c, 0, "a non-positive FMA rate");
    compiled_rates();
    sample_timer();
    cache_copy_warm();

    /* the bandwidth and FMA probes are built for the executors' vector ISA
     * (a scalar read loop is a chain of dependent adds: 7 GB/s a thread on
     * the EPYC guest against 37 vectorised, and an FMA peak 20x low) */
    const char *kisa = mb_kern_vector_isa(), *pisa = mb_cal_streams_isa();
    int match = strstr(kisa, "avx512f") ? !strcmp(pisa, "avx512f")
              : strstr(kisa, "avx2") ? !strcmp(pisa, "avx2") : 1;
    if (!match) fprintf(stderr, "executors %s, calibration's stream probes %s\n", kisa, pisa);
    CHECK(match);
    return mb_test_done();
}
