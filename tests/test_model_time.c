/* test_model_time.c — the time model's terms around a kernel's work: the
 * kernel floor event timing sees (kernel_floor_us), against hand-derived
 * times on the lecture's variants. Does not test bytes (test_model_plans)
 * or measure the floor (calibrate --backend cuda). */
#define _POSIX_C_SOURCE 200809L
#include "membound_model.h"
#include "mb_test.h"

#include <stdlib.h>

/* The estimate of variant's plan k at n on d. */
static mb_estimate est(const char *variant, mb_plan_kind k, int64_t n, const mb_device *d)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err = {{0}};
    mb_estimate e;
    memset(&e, 0, sizeof e);
    int rc = mb_variant_load(variant, MB_F32, &g, &err);
    rc = rc ? rc : mb_plan_build(g, k, &p, &err);
    rc = rc ? rc : mb_estimate_plan(p, n, d, &e, &err);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) { fprintf(stderr, "  %s: %s\n", variant, err.msg); exit(1); }
    mb_plan_free(p);
    mb_graph_free(g);
    return e;
}

/* The floor: a plan's first kernel costs the spec's kernel_floor_us in
 * place of the launch interval, the kernels after it the interval; a floor
 * below the interval, or none, changes nothing. */
static void test_floor(void)
{
    const mb_device *h100 = mb_device_at(0);
    CHECK(h100->kernel_floor_us == 0); /* no table row cites one yet */
    mb_device d = *h100;
    const int64_t n = 1 << 10; /* 4 KiB tensors: launch-bound */
    mb_estimate none = est("sin2_plus_cos2", MB_PLAN_EAGER, n, &d);
    CHECK_EQ_I64(none.n_kernels, 5);
    for (int k = 0; k < none.n_kernels; k++) CHECK_NEAR(none.per_kernel[k].launch_s, 3e-6, 1e-12);

    mb_device_set(&d, MB_DK_kernel_floor_us, 5.5);
    mb_estimate fl = est("sin2_plus_cos2", MB_PLAN_EAGER, n, &d);
    CHECK_NEAR(fl.per_kernel[0].launch_s, 5.5e-6, 1e-12);
    for (int k = 1; k < fl.n_kernels; k++) CHECK_NEAR(fl.per_kernel[k].launch_s, 3e-6, 1e-12);
    /* the plan: 2.5 us more than without, once */
    CHECK_NEAR(fl.total.time_s - none.total.time_s, 2.5e-6, 1e-9);
    CHECK_NEAR(fl.total.launch_s, 5.5e-6 + 4 * 3e-6, 1e-9);
    /* the bytes do not move */
    CHECK_EQ_I64(fl.total.dram_read_bytes, none.total.dram_read_bytes);

    /* fused: one kernel, floor + its work; at 2^26 elements still floor +
     * memory, the floor a small share */
    mb_estimate f1 = est("sin2_plus_cos2", MB_PLAN_FUSED, n, &d);
    CHECK_EQ_I64(f1.n_kernels, 1);
    CHECK_NEAR(f1.total.launch_s, 5.5e-6, 1e-12);
    mb_estimate big = est("copy", MB_PLAN_FUSED, (int64_t)1 << 26, &d);
    const mb_cost *c = &big.per_kernel[0];
    CHECK_NEAR(c->time_s, 5.5e-6 + c->mem_s, 1e-9);
    CHECK(c->bound == MB_BOUND_MEMORY);

    /* a floor below the launch interval is the interval */
    mb_device_set(&d, MB_DK_kernel_floor_us, 1.0);
    mb_estimate low = est("sin2_plus_cos2", MB_PLAN_EAGER, n, &d);
    CHECK_NEAR(low.total.time_s, none.total.time_s, 1e-12);

    /* a shared host's drift scales the floor as it scales launches */
    mb_device_set(&d, MB_DK_kernel_floor_us, 6.0);
    mb_device slow;
    mb_device_at_rates(&d, 1.0, 0.5, &slow);
    CHECK_NEAR(slow.kernel_floor_us, 12.0, 1e-12);

    mb_estimate_free(&none);
    mb_estimate_free(&fl);
    mb_estimate_free(&f1);
    mb_estimate_free(&big);
    mb_estimate_free(&low);
}

/* The key reads and writes as a spec file's, only where measured. */
static void test_floor_key(void)
{
    mb_device d = *mb_device_at(0);
    mb_err err;
    char *text = mb_device_ini_text(&d, &err);
    CHECK(text && !strstr(text, "kernel_floor_us"));
    free(text);
    mb_device_set(&d, MB_DK_kernel_floor_us, 4.25);
    text = mb_device_ini_text(&d, &err);
    CHECK(text && strstr(text, "\nkernel_floor_us = 4.25\n"));
    mb_device back;
    CHECK(text && mb_device_load_ini_text(text, "floor.ini", &back, &err) == MB_OK && back.kernel_floor_us == 4.25);
    free(text);
}

int main(void)
{
    test_floor();
    test_floor_key();
    return mb_test_done();
}
