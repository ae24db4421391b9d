/* gemm.c — a CPU's f32 GEMM rate through the BLAS the build found
 * (OpenBLAS's cblas_sgemm, found by pkg-config and loaded here alone, with
 * dlopen: see calibrate/CMakeLists.txt): one product at the
 * declared shape, a figure of calibrate's interleaved rounds (warm-up, the
 * median of the rounds). Does not model a GEMM (model/gemm.c) or judge the
 * model on other shapes (bench/cpu_gemm.py). A build without OpenBLAS
 * measures nothing here: the spec then has no gemm_gflops and the model
 * takes the FMA peak. */
#include "cal_int.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef MB_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>

/* OpenBLAS's entry points, from MB_OPENBLAS_SO (loaded once, never closed) */
static struct {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(openblas_set_num_threads) *set_threads;
    __typeof__(openblas_get_config) *config;
} blas;

static int blas_load(void)
{
    if (blas.sgemm) return 1;
    void *h = dlopen(MB_OPENBLAS_SO, RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    *(void **)&blas.set_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&blas.config = dlsym(h, "openblas_get_config");
    *(void **)&blas.sgemm = dlsym(h, "cblas_sgemm");
    return blas.sgemm && blas.set_threads && blas.config;
}

int mb_cal_gemm_init(mb_cal_gemm_ctx *g, int threads)
{
    g->a = g->b = g->c = NULL;
    g->n = 0;
    if (!blas_load()) return 0;
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
    blas.set_threads(threads);
    return 1;
}

void mb_cal_gemm(void *ctx)
{
    mb_cal_gemm_ctx *g = ctx;
    blas.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->a, g->n, g->b, g->n, 0.0f,
                g->c, g->n);
}

const char *mb_cal_gemm_blas(void)
{
    static char desc[160];
    snprintf(desc, sizeof desc, "%s", blas_load() ? blas.config() : "");
    return desc;
}
#else
int mb_cal_gemm_init(mb_cal_gemm_ctx *g, int threads)
{
    (void)threads;
    g->a = g->b = g->c = NULL;
    g->n = 0;
    return 0;
}

void mb_cal_gemm(void *ctx) { (void)ctx; }

const char *mb_cal_gemm_blas(void) { return ""; }
#endif

void mb_cal_gemm_free(mb_cal_gemm_ctx *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
    g->a = g->b = g->c = NULL;
}
