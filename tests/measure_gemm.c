/* measure_gemm.c — measure/gemm_run.c: a batched GEMM and both MLPs under
 * both plans timed and verified on the CPU (samples, median >= min, the
 * check's figure within its bound), the backward with the cache evicted, a
 * wrong fused epilogue reported as a failed check, f16 refused, bad MLP
 * sizes and sizes beyond the host's memory refused. */
#include "measure.h"
#include "mb_test.h"

#include <string.h>

int main(void)
{
    char why[512];
    if (!mb_meas_gemm_available(why, sizeof why)) {
        printf("no BLAS: %s\n", why);
        return mb_test_skip();
    }
    mb_meas_gemm_config c = {.threads = 1, .min_s = 0, .min_samples = 3, .check_samples = 16};
    mb_meas_gemm_result r;
    mb_err e;
    mb_gemm g = {.m = 70, .n = 33, .k = 129, .batch = 3, .dtype = MB_F32};
    CHECK(mb_meas_gemm_cpu(&g, &c, &r, &e) == MB_OK);
    CHECK(r.verified && r.max_rel_err <= r.tol && r.tol > 0);
    CHECK(r.samples >= 3 && r.min_s > 0 && r.min_s <= r.median_s && r.threads == 1);
    CHECK_NEAR(r.gflops_median, 2.0 * 70 * 33 * 129 * 3 / r.median_s / 1e9, 1e-12);
    g.dtype = MB_F16;
    CHECK(mb_meas_gemm_cpu(&g, &c, &r, &e) == MB_EINPUT && strstr(e.msg, "f32 GEMMs only"));
    for (int kind = 0; kind < 2; kind++)
        for (int plan = 0; plan < 2; plan++) {
            mb_meas_mlp m = {.kind = kind ? MB_MEAS_MLP_LLAMA : MB_MEAS_MLP_GPT2,
                             .plan = plan ? MB_MEAS_MLP_FUSED : MB_MEAS_MLP_EAGER,
                             .tokens = 40, .d_model = 32, .d_ff = 96, .panel_rows = 16};
            int64_t panel = 0;
            CHECK(mb_meas_mlp_cpu(&m, &c, &r, &panel, &e) == MB_OK);
            CHECK(r.verified && r.max_rel_err <= 1 && r.tol == 1);
            CHECK(r.samples >= 3 && r.min_s <= r.median_s && panel == 16);
        }
    /* the backward after an eager forward, the cache evicted before each
     * sample; a wrong fused epilogue is a failed check, not an error */
    for (int plan = 0; plan < 2; plan++) {
        mb_meas_mlp m = {.kind = MB_MEAS_MLP_LLAMA, .plan = plan ? MB_MEAS_MLP_FUSED : MB_MEAS_MLP_EAGER,
                         .tokens = 40, .d_model = 32, .d_ff = 96, .panel_rows = 16, .backward = 1,
                         .flush_bytes = 1 << 20};
        CHECK(mb_meas_mlp_cpu(&m, &c, &r, NULL, &e) == MB_OK);
        CHECK(r.verified && r.max_rel_err <= 1 && r.samples >= 3 && r.min_s <= r.median_s);
        CHECK_NEAR(r.gflops_median, 2 * 2.0 * 40 * 32 * 96 * 3 / r.median_s / 1e9, 1e-9);
        m.fault = 1;
        CHECK(mb_meas_mlp_cpu(&m, &c, &r, NULL, &e) == MB_OK);
        CHECK(plan ? !r.verified && r.max_rel_err > 1 : r.verified);
    }
    /* beyond the host's memory: refused before allocating */
    mb_meas_mlp big = {.kind = MB_MEAS_MLP_GPT2, .tokens = 1 << 20, .d_model = 4096, .d_ff = 1 << 16};
    if (mb_meas_host_memory_bytes("MemAvailable") > 0) {
        CHECK(mb_meas_mlp_admit(&big, &e) == MB_EINPUT && strstr(e.msg, "GB of memory"));
        CHECK(mb_meas_mlp_cpu(&big, &c, &r, NULL, &e) == MB_EINPUT);
    }
    mb_meas_mlp bad = {.kind = MB_MEAS_MLP_GPT2, .tokens = 0, .d_model = 8, .d_ff = 8};
    CHECK(mb_meas_mlp_cpu(&bad, &c, &r, NULL, &e) == MB_EINPUT);
    return mb_test_done();
}
