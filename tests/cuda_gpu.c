/* cuda_gpu.c — the CUDA kernels on a real GPU: every plan of every built-in
 * variant, --expr plans, a backward variant and a mixed-dtype plan, in f32,
 * bf16 and f16 at sizes with and without a vector tail, against the float64
 * reference (outputs poisoned first); hand-written kernels against the
 * evaluator bit for bit; which implementation each lecture kernel gets; one
 * full mb_meas_cuda_run (timing, check, counters when permitted) and one
 * in cuda_once mode (one checked sample, no counters).
 * Exits 77 (skipped) without a GPU. */
#include "kernels_cuda.h"
#include "mb_cupti.h"
#include "mb_test.h"
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sm_count;

/* The backend's notes and warnings, for the log. */
static void print_note(void *ctx, const char *level, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "membound: %s: %s\n", level, msg);
}

/* Runs plan p at n with flags; checks it against the reference; copies the
 * results' bytes into *res (malloc'd) when res is non-NULL. */
static void run_plan(const mb_plan *p, int64_t n, int flags, const char *what, void **res, size_t *res_bytes)
{
    mb_err e;
    mb_kern_cuda_plan *cp = NULL;
    mb_kern_tensors t;
    int rc = mb_kern_cuda_plan_new(p, n, sm_count, flags, &cp, &e);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) {
        fprintf(stderr, "%s: %s\n", what, e.msg);
        return;
    }
    rc = mb_kern_tensors_alloc(p, n, 0, &t, &e);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) {
        mb_kern_cuda_plan_free(cp);
        return;
    }
    CHECK_EQ_I64(mb_kern_cuda_upload_inputs(cp, &t, &e), MB_OK);
    CHECK_EQ_I64(mb_kern_cuda_poison(cp, 7, NULL, &e), MB_OK);
    CHECK_EQ_I64(mb_kern_cuda_launch_plan(cp, NULL, &e), MB_OK);
    CHECK_EQ_I64(mb_kern_cuda_download_results(cp, &t, &e), MB_OK);
    mb_kern_check ck;
    CHECK_EQ_I64(mb_kern_verify(&t, 7, 0, &ck, &e), MB_OK);
    CHECK(ck.passed);
    if (!ck.passed)
        fprintf(stderr, "%s n=%lld: %lld bad, %lld poisoned, max rel err %g (tol %g), first [%lld] got %g want %g\n",
                what, (long long)n, (long long)ck.bad, (long long)ck.poisoned, ck.max_rel_err, ck.tol,
                (long long)ck.first_bad, ck.first_got, ck.first_want);
    if (res) {
        size_t total = 0;
        for (int r = 0; r < p->n_results; r++)
            total += (size_t)n * mb_dtype_bytes(p->g->nodes[p->results[r]].dtype);
        char *buf = malloc(total);
        size_t off = 0;
        for (int r = 0; buf && r < p->n_results; r++) {
            size_t b = (size_t)n * mb_dtype_bytes(p->g->nodes[p->results[r]].dtype);
            memcpy(buf + off, t.data[p->results[r]], b);
            off += b;
        }
        *res = buf;
        *res_bytes = total;
    }
    mb_kern_tensors_free(&t);
    mb_kern_cuda_plan_free(cp);
}

/* Every supported plan of g: checked, and (when any kernel is hand-written)
 * identical to the evaluator's results. */
static void check_graph(const mb_graph *g, const char *name)
{
    const int64_t sizes[] = {1000003, 4096}; /* with and without a tail */
    for (int k = 0; k < MB_PLAN_COUNT; k++) {
        if (!mb_plan_supported(g, (mb_plan_kind)k)) continue;
        mb_plan *p = NULL;
        mb_err e;
        if (mb_plan_build(g, (mb_plan_kind)k, &p, &e) != MB_OK) {
            CHECK(0);
            continue;
        }
        for (int s = 0; s < 2; s++) {
            char what[160];
            snprintf(what, sizeof what, "%s %s %s", name, mb_plan_name((mb_plan_kind)k),
                     mb_dtype_name(g->nodes[g->inputs[0]].dtype));
            void *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            run_plan(p, sizes[s], 0, what, &a, &na);
            run_plan(p, sizes[s], MB_KERN_CUDA_ALL_EVAL, what, &b, &nb);
            CHECK(a && b && na == nb && memcmp(a, b, na) == 0);
            free(a);
            free(b);
        }
        mb_plan_free(p);
    }
}

static void check_variant(const char *v, mb_dtype dt)
{
    mb_graph *g = NULL;
    mb_err e;
    int rc = mb_variant_load(v, dt, &g, &e);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) {
        fprintf(stderr, "%s: %s\n", v, e.msg);
        return;
    }
    check_graph(g, v);
    mb_graph_free(g);
}

/* The implementation kernel k of variant v's plan gets. */
static mb_kern_cuda_impl impl_of(const char *v, mb_plan_kind kind, int k)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_cuda_plan *cp = NULL;
    mb_err e;
    mb_kern_cuda_impl r = MB_KERN_CUDA_IMPL_COUNT;
    if (mb_variant_load(v, MB_F32, &g, &e) == MB_OK && mb_plan_build(g, kind, &p, &e) == MB_OK &&
        mb_kern_cuda_plan_new(p, 1024, sm_count, 0, &cp, &e) == MB_OK) {
        r = mb_kern_cuda_plan_impl(cp, k);
        printf("%s %s kernel %d: %s\n", v, mb_plan_name(kind), k, mb_kern_cuda_plan_desc(cp, k));
    }
    mb_kern_cuda_plan_free(cp);
    mb_plan_free(p);
    mb_graph_free(g);
    return r;
}

int main(void)
{
    char why[512];
    if (mb_kern_cuda_device_count(why, sizeof why) < 1) {
        printf("skipped: %s\n", why);
        return 77;
    }
    mb_err e;
    mb_kern_cuda_device dev;
    if (mb_kern_cuda_open(0, &dev, &e) != MB_OK) {
        printf("skipped: %s\n", e.msg);
        return 77;
    }
    sm_count = dev.sm_count;
    printf("%s: %d SMs, L2 %lld B, peak %.0f GB/s\n", dev.name, dev.sm_count, (long long)dev.l2_bytes,
           dev.peak_bandwidth_gbs);
    CHECK(dev.sm_count > 0 && dev.l2_bytes > 0 && dev.peak_bandwidth_gbs > 0);

    const char *variants[] = {"copy", "sin2_plus_cos2", "gelu_tanh", "sigmoid3"};
    const mb_dtype dts[] = {MB_F32, MB_BF16, MB_F16};
    for (int v = 0; v < 4; v++)
        for (int d = 0; d < 3; d++) check_variant(variants[v], dts[d]);

    /* which kernels are hand-written, per-op or evaluated */
    CHECK_EQ_I64(impl_of("copy", MB_PLAN_EAGER, 0), MB_KERN_CUDA_HAND);
    CHECK_EQ_I64(impl_of("sin2_plus_cos2", MB_PLAN_FUSED, 0), MB_KERN_CUDA_HAND);
    CHECK_EQ_I64(impl_of("sin2_plus_cos2", MB_PLAN_EAGER, 0), MB_KERN_CUDA_OP);
    CHECK_EQ_I64(impl_of("gelu_tanh", MB_PLAN_FUSED, 0), MB_KERN_CUDA_HAND);
    for (int k = 0; k < 2; k++) {
        CHECK_EQ_I64(impl_of("sigmoid3", MB_PLAN_STORE, k), MB_KERN_CUDA_HAND);
        CHECK_EQ_I64(impl_of("sigmoid3", MB_PLAN_RECOMPUTE, k), MB_KERN_CUDA_HAND);
    }
    CHECK_EQ_I64(impl_of("sigmoid3", MB_PLAN_EAGER, 3), MB_KERN_CUDA_EVAL); /* sigmoid backward: 3 nodes */

    /* --expr plans, a backward variant with a reused input, mixed dtypes */
    const char *exprs[] = {"y = x*x + log(x)/2 - rsqrt(x)", "y = gelu(x) * tanh(x) + abs(x)**1.5",
                           "y = relu(x - 0.25) * exp(-x**2)"};
    for (int i = 0; i < 3; i++) {
        mb_graph *g = NULL;
        if (mb_parse_expr(exprs[i], MB_F32, &g, &e) == MB_OK) check_graph(g, exprs[i]);
        else {
            CHECK(0);
            fprintf(stderr, "%s: %s\n", exprs[i], e.msg);
        }
        mb_graph_free(g);
    }
    const char *texts[] = {"name bwd\ninput x\ny = tanh(x) * sin(x) + x\noutput y\nbackward\n",
                           "name mixed\ninput x bf16\ninput w f32\ny = x * w + sin(x)\noutput y\n"};
    for (int i = 0; i < 2; i++) {
        mb_graph *g = NULL;
        if (mb_parse_variant(texts[i], "<test>", MB_F32, &g, &e) == MB_OK) check_graph(g, texts[i]);
        else {
            CHECK(0);
            fprintf(stderr, "%s\n", e.msg);
        }
        mb_graph_free(g);
    }

    /* one full measurement through the backend */
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    const mb_device *model = mb_device_at(0);
    if (mb_variant_load("sin2_plus_cos2", MB_F32, &g, &e) == MB_OK && mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_OK) {
        mb_meas_config c;
        mb_meas_config_default(&c);
        c.counters = 1;
        c.note = print_note;
        mb_meas_record row, pk[1];
        int64_t n = (int64_t)1 << 22;
        CHECK_EQ_I64(mb_meas_record_init(&row, pk, "sin2_plus_cos2", p, n, model, &e), MB_OK);
        char w2[512] = "";
        int rc = mb_meas_cuda_run(p, n, &c, &row, pk, w2, sizeof w2, &e);
        CHECK_EQ_I64(rc, MB_OK);
        if (rc) fprintf(stderr, "run: %s\n", e.msg);
        CHECK(row.verified);
        CHECK(row.reps >= 10);
        CHECK(row.time_s_min > 0 && row.time_s_min <= row.time_s_median && row.time_s_median <= row.time_s_p90);
        CHECK(!strcmp(row.backend, "cuda"));
        printf("run: %s %s: median %.3g s, counters %s, dram %lld / %lld B (model %lld / %lld)\n", row.device,
               row.plan, row.time_s_median, row.counters, (long long)row.dram_read_bytes,
               (long long)row.dram_write_bytes, (long long)row.model_dram_read_bytes,
               (long long)row.model_dram_write_bytes);
        if (!strncmp(row.counters, "cupti", 5)) {
            CHECK(row.dram_read_bytes > 0 && row.dram_write_bytes > 0);
            /* 16 MiB tensors: under 4x any data-centre GPU's L2, reported, not judged */
            CHECK(!strcmp(row.count_check, "below 4x L2") || !strcmp(row.count_check, "ok"));
            CHECK(isfinite(row.count_err));
        } else {
            CHECK(!strncmp(row.counters, "unavailable: ", 13) || !strncmp(row.counters, "untrusted: ", 11));
            printf("counters not trusted here: %s\n", row.counters);
        }
        /* at 2^26 (256 MiB tensors, >= 4x the L2 of every GPU of the table)
         * the counted bytes must be the model's within 3%, plan and kernel */
        const int64_t big = (int64_t)1 << 26;
        CHECK_EQ_I64(mb_meas_record_init(&row, pk, "sin2_plus_cos2", p, big, model, &e), MB_OK);
        rc = mb_meas_cuda_run(p, big, &c, &row, pk, w2, sizeof w2, &e);
        CHECK_EQ_I64(rc, MB_OK);
        printf("run 2^26: counters %s, dram %lld / %lld B (model %lld / %lld): %s %+.2f%%; kernel: %s\n",
               row.counters, (long long)row.dram_read_bytes, (long long)row.dram_write_bytes,
               (long long)row.model_dram_read_bytes, (long long)row.model_dram_write_bytes, row.count_check,
               100 * row.count_err, pk[0].count_check);
        if (!strcmp(row.counters, "cupti")) {
            CHECK(!strcmp(row.count_check, "ok"));
            CHECK(!strcmp(pk[0].count_check, "ok"));
        }
        char prov[1024];
        mb_meas_cuda_provenance(prov, sizeof prov);
        printf("%s", prov);
        CHECK(strstr(prov, "gpu:") != NULL);

        /* once (for external profilers): one checked sample, no counters;
         * last, since it turns the blocking kernel off for the process */
        c.cuda_once = 1;
        CHECK_EQ_I64(mb_meas_record_init(&row, pk, "sin2_plus_cos2", p, n, model, &e), MB_OK);
        rc = mb_meas_cuda_run(p, n, &c, &row, pk, w2, sizeof w2, &e);
        CHECK_EQ_I64(rc, MB_OK);
        CHECK_EQ_I64(row.reps, 1);
        CHECK(row.verified);
        CHECK(!strncmp(row.counters, "unavailable: MB_CUDA_ONCE", 25));
        CHECK_EQ_I64(row.dram_read_bytes, -1);
        CHECK_EQ_I64(pk[0].reps, 1);
    } else {
        CHECK(0);
    }
    mb_plan_free(p);
    mb_graph_free(g);
    return mb_test_done();
}
