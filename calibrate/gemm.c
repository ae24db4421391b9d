/* gemm.c — a CPU's f32 GEMM rate through the BLAS kernels/ loads
 * (OpenBLAS's cblas_sgemm, kernels/gemm_cpu.c): one product at the declared
 * shape, a figure of calibrate's interleaved rounds (warm-up, the median of
 * the rounds). Does not model a GEMM (model/gemm.c) or judge the model on
 * other shapes (bench/cpu_gemm.py). Without OpenBLAS nothing is measured
 * here: the spec then has no gemm_gflops and the model takes the FMA peak. */
#include "cal_int.h"
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>

int mb_cal_gemm_init(mb_cal_gemm_ctx *g, int threads)
{
    g->a = g->b = g->c = NULL;
    g->n = 0;
    if (!mb_kern_blas_load()) return 0;
    g->n = MB_CAL_GEMM_N;
    size_t bytes = (size_t)g->n * (size_t)g->n * sizeof(float);
    g->a = aligned_alloc(64, bytes);
    g->b = aligned_alloc(64, bytes);
    g->c = aligned_alloc(64, bytes);
    if (!g->a || !g->b || !g->c) {
        mb_cal_gemm_free(g);
        return 0;
    }
    /* varied, exact in f32, no denormals: the rate does not depend on them */
    for (int64_t i = 0; i < (int64_t)g->n * g->n; i++) {
        g->a[i] = 1.0f + (float)(i % 97) * 0.01f;
        g->b[i] = 0.5f - (float)(i % 89) * 0.005f;
        g->c[i] = 0.0f;
    }
    /* the threads calibrate runs every probe on; OpenBLAS's own pool */
    mb_kern_blas_set_threads(threads);
    return 1;
}

void mb_cal_gemm(void *ctx)
{
    mb_cal_gemm_ctx *g = ctx;
    /* sizes checked at init: cannot fail */
    mb_kern_sgemm(0, 0, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b, g->n, 0.0f, g->c, g->n, NULL);
}

const char *mb_cal_gemm_blas(void) { return mb_kern_blas_load() ? mb_kern_blas_desc() : ""; }

void mb_cal_gemm_free(mb_cal_gemm_ctx *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
    g->a = g->b = g->c = NULL;
}
