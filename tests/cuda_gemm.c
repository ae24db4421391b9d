/* cuda_gemm.c — GEMMs on a real GPU through cuBLASLt (measure/cuda_gemm.cu):
 * f32, bf16 and f16, square, skinny and batched, each epilogue (bias, bias
 * and ReLU, bias and GELU), timed and within the float64 check's bound; the
 * time of a compute-bound product no faster than the GPU's dense peak allows.
 * Without a GPU: the epilogue names, and the run refused with the reason;
 * then exits 77 (skipped). */
#include "kernels_cuda.h"
#include "mb_test.h"
#include "measure.h"

#include <stdio.h>
#include <string.h>

static void one(const char *what, int64_t m, int64_t n, int64_t k, int64_t batch, mb_dtype t,
                mb_meas_gemm_epilogue epi)
{
    mb_meas_config c;
    mb_meas_config_default(&c);
    mb_gemm g = {.m = m, .n = n, .k = k, .batch = batch, .dtype = t};
    mb_meas_gemm_result r;
    mb_err e;
    int rc = mb_meas_cuda_gemm(&c, &g, epi, 10, &r, &e);
    printf("%-10s %5lldx%5lldx%5lld x%lld %-4s %-9s: %s %.3f ms, %.1f TFLOP/s, max err %.2g (tol %.2g) %s\n", what,
           (long long)m, (long long)n, (long long)k, (long long)batch, mb_dtype_name(t),
           mb_meas_gemm_epilogue_name(epi), rc ? e.msg : "", r.median_s * 1e3,
           2.0 * (double)(m * n * k * batch) / r.median_s / 1e12, r.max_rel_err, r.tol, r.blas);
    CHECK(rc == MB_OK);
    CHECK(r.verified);
    CHECK(r.median_s > 0);
    /* below 2 PFLOP/s: no GPU in the table runs these dtypes faster dense */
    CHECK(2.0 * (double)(m * n * k * batch) / r.median_s < 2.5e15);
}

int main(void)
{
    /* names round-trip; an unknown one refused */
    for (int i = 0; i < MB_MEAS_GEMM_N_EPILOGUES; i++) {
        mb_meas_gemm_epilogue e;
        CHECK(mb_meas_gemm_epilogue_parse(mb_meas_gemm_epilogue_name((mb_meas_gemm_epilogue)i), &e) == MB_OK &&
              (int)e == i);
    }
    mb_meas_gemm_epilogue bad;
    CHECK(mb_meas_gemm_epilogue_parse("swiglu", &bad) == MB_EINPUT);

    char why[512];
    if (mb_kern_cuda_device_count(why, sizeof why) < 1) {
        mb_meas_config c;
        mb_meas_config_default(&c);
        mb_gemm g = {.m = 64, .n = 64, .k = 64, .batch = 1, .dtype = MB_F32};
        mb_meas_gemm_result r;
        mb_err e;
        CHECK(mb_meas_cuda_gemm(&c, &g, MB_MEAS_GEMM_NONE, 10, &r, &e) == MB_ERUN);
        printf("no GPU: %s (the GEMM says: %s)\n", why, e.msg);
        return mb_test_skip();
    }
    one("square", 1024, 1024, 1024, 1, MB_F32, MB_MEAS_GEMM_NONE);
    one("square", 4096, 4096, 4096, 1, MB_BF16, MB_MEAS_GEMM_NONE);
    one("linear", 4096, 4096, 1024, 1, MB_BF16, MB_MEAS_GEMM_BIAS);
    one("mlp up", 4096, 3072, 768, 1, MB_F16, MB_MEAS_GEMM_BIAS_GELU);
    one("mlp up", 4096, 3072, 768, 1, MB_F32, MB_MEAS_GEMM_BIAS_RELU);
    one("skinny", 8192, 64, 8192, 1, MB_BF16, MB_MEAS_GEMM_NONE);
    one("batched", 512, 512, 64, 32, MB_BF16, MB_MEAS_GEMM_NONE);
    one("odd", 1000, 777, 333, 3, MB_F32, MB_MEAS_GEMM_BIAS);
    return mb_test_done();
}
