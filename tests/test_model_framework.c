/* test_model_framework.c — a framework's allocations in the time model
 * (mb_estimate_plan_fw, --framework pytorch): the first touch of each fresh
 * output at or above the mmap threshold, hand-derived for the lecture's
 * variants on both sides of it; the spec keys that carry the figures. Does
 * not measure them (calibrate's probe: measure_cli's quick calibration). */
#define _POSIX_C_SOURCE 200809L
#include "membound_model.h"
#include "mb_test.h"

#include <stdlib.h>
#include <unistd.h>

/* A CPU spec with the first-touch figures; the rest from the first row. */
static mb_device spec(double first_touch_gbs, double threshold_mb)
{
    mb_device d = *mb_device_at(0);
    snprintf(d.name, sizeof d.name, "fw-test");
    snprintf(d.kind, sizeof d.kind, "cpu"); /* on a GPU the framework is the host's timeline */
    d.first_touch_gbs = first_touch_gbs;
    d.alloc_mmap_threshold_mb = threshold_mb;
    return d;
}

/* time and alloc of variant/plan at n with fw, and without */
static void estimate(const char *variant, mb_plan_kind k, int64_t n, const mb_device *d, mb_estimate *fw,
                     mb_estimate *none)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err = {{0}};
    int rc = mb_variant_load(variant, MB_F32, &g, &err);
    rc = rc ? rc : mb_plan_build(g, k, &p, &err);
    rc = rc ? rc : mb_estimate_plan_fw(p, n, d, MB_FW_PYTORCH, fw, &err);
    rc = rc ? rc : mb_estimate_plan_fw(p, n, d, MB_FW_NONE, none, &err);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) { fprintf(stderr, "  %s: %s\n", variant, err.msg); exit(1); }
    mb_plan_free(p);
    mb_graph_free(g);
}

/* One row: variant, plan, n, threshold; the fresh outputs' bytes expected
 * (hand-derived: the tensors each kernel writes at or above the threshold). */
typedef struct {
    const char *variant;
    mb_plan_kind plan;
    int64_t n;
    double threshold_mb;
    double fresh_bytes;
} fw_case;

static void test_cases(void)
{
    const int64_t M = 1 << 20;
    const fw_case cases[] = {
        /* 5 kernels, 5 outputs of 64 MiB, all mapped */
        {"sin2_plus_cos2", MB_PLAN_EAGER, 16 * M, 0, 5.0 * 64 * M},
        {"sin2_plus_cos2", MB_PLAN_FUSED, 16 * M, 0, 64.0 * M},
        /* 16 MiB tensors: below glibc's 32 MiB, from the heap */
        {"sin2_plus_cos2", MB_PLAN_EAGER, 4 * M, 0, 0},
        /* exactly the threshold is mapped (the chunk header puts it over) */
        {"sin2_plus_cos2", MB_PLAN_EAGER, 8 * M, 0, 5.0 * 32 * M},
        /* a spec's own threshold: 8 MiB, 16 MiB tensors mapped */
        {"sin2_plus_cos2", MB_PLAN_EAGER, 4 * M, 8, 5.0 * 16 * M},
        {"gelu_tanh", MB_PLAN_EAGER, 16 * M, 0, 8.0 * 64 * M},
        {"copy", MB_PLAN_EAGER, 32 * M, 0, 128.0 * M},
        /* the lecture's 2^20: 4 MiB tensors, nothing mapped */
        {"sigmoid3", MB_PLAN_EAGER, M, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const fw_case *c = &cases[i];
        mb_device d = spec(2.0, c->threshold_mb);
        mb_estimate fw, none;
        estimate(c->variant, c->plan, c->n, &d, &fw, &none);
        double want_s = c->fresh_bytes / 2e9;
        CHECK_NEAR(fw.total.alloc_s, want_s, 1e-12);
        CHECK_NEAR(fw.total.time_s, none.total.time_s + want_s, 1e-12);
        CHECK(none.total.alloc_s == 0);
        double sum = 0;
        for (int k = 0; k < fw.n_kernels; k++) sum += fw.per_kernel[k].alloc_s;
        CHECK_NEAR(sum, want_s, 1e-12);
        if (fabs(fw.total.alloc_s - want_s) > 1e-12 * want_s)
            fprintf(stderr, "  case %zu (%s n=%lld): alloc %.9g s, expected %.9g\n", i, c->variant,
                    (long long)c->n, fw.total.alloc_s, want_s);
        mb_estimate_free(&fw);
        mb_estimate_free(&none);
    }
}

/* sigmoid3 with its backward at 2^24: every kernel's output is fresh, the
 * sum of the written bytes (each tensor 64 MiB, all over the threshold) */
static void test_backward(void)
{
    mb_device d = spec(4.0, 0);
    mb_estimate fw, none;
    estimate("sigmoid3", MB_PLAN_EAGER, 16 << 20, &d, &fw, &none);
    CHECK(fw.total.write_bytes > 0);
    CHECK_NEAR(fw.total.alloc_s, (double)fw.total.write_bytes / 4e9, 1e-12);
    mb_estimate_free(&fw);
    mb_estimate_free(&none);
}

static void test_refusals(void)
{
    mb_device d = spec(0, 0);
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err = {{0}};
    CHECK_EQ_I64(mb_variant_load("copy", MB_F32, &g, &err), MB_OK);
    CHECK_EQ_I64(mb_plan_build(g, MB_PLAN_EAGER, &p, &err), MB_OK);
    mb_estimate e;
    CHECK_EQ_I64(mb_estimate_plan_fw(p, 1 << 20, &d, MB_FW_PYTORCH, &e, &err), MB_EINPUT);
    CHECK(strstr(err.msg, "first_touch_gbs") != NULL);
    /* no framework: the spec needs no first-touch figure */
    CHECK_EQ_I64(mb_estimate_plan_fw(p, 1 << 20, &d, MB_FW_NONE, &e, &err), MB_OK);
    mb_estimate_free(&e);
    mb_plan_free(p);
    mb_graph_free(g);
    mb_framework fw = MB_FW_COUNT;
    CHECK_EQ_I64(mb_framework_parse("pytorch", &fw), MB_OK);
    CHECK_EQ_I64(fw, MB_FW_PYTORCH);
    CHECK_EQ_I64(mb_framework_parse("none", &fw), MB_OK);
    CHECK_EQ_I64(fw, MB_FW_NONE);
    CHECK_EQ_I64(mb_framework_parse("jax", &fw), MB_EINPUT);
    CHECK(strcmp(mb_framework_name(MB_FW_PYTORCH), "pytorch") == 0);
}

/* The keys round-trip, and a spec without them writes neither. */
static void test_keys(void)
{
    char path[] = "/tmp/mb-fw-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    mb_err err = {{0}};
    mb_device d = spec(3.25, 16), back;
    CHECK_EQ_I64(mb_device_write_ini(&d, path, &err), MB_OK);
    CHECK_EQ_I64(mb_device_load_ini(path, &back, &err), MB_OK);
    CHECK(back.first_touch_gbs == 3.25);
    CHECK(back.alloc_mmap_threshold_mb == 16);
    char *text = mb_device_ini_text(mb_device_at(0), &err);
    CHECK(text && !strstr(text, "first_touch_gbs") && !strstr(text, "alloc_mmap_threshold_mb"));
    free(text);
    /* out of range: a first touch slower than 0.1 GB/s cannot be a page fault */
    d.first_touch_gbs = 0.01;
    CHECK_EQ_I64(mb_device_write_ini(&d, path, &err), MB_EINPUT);
    unlink(path);
}

int main(void)
{
    test_cases();
    test_backward();
    test_refusals();
    test_keys();
    return mb_test_done();
}
