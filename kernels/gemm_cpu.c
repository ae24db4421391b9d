/* gemm_cpu.c — GEMMs on the CPU through the system's OpenBLAS, and their
 * float64 check.
 *
 * OpenBLAS (Debian's libopenblas64-openmp-dev: 64-bit indices, OpenMP
 * threads) is found by pkg-config at build time and loaded here on first
 * use with dlopen, RTLD_LOCAL, never closed. It is not linked: linked, its
 * cblas_* would stand in for GSL's in every command, and its load (a 128 MiB
 * buffer, a thread pool) would happen at every start. The 64-bit build is
 * the one installed because it does not become the system's libblas.so.3,
 * which igraph loads into every command (docs/limitations.md). */
#include "kernels.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef MB_HAVE_OPENBLAS
#include <cblas.h>
#include <dlfcn.h>

static struct {
    int tried;
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(openblas_set_num_threads) *set_threads;
    __typeof__(openblas_get_config) *config;
    char why[256];
} blas;

int mb_kern_blas_load(void)
{
    if (blas.tried) return blas.sgemm != NULL;
    blas.tried = 1;
    void *h = dlopen(MB_OPENBLAS_SO, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(blas.why, sizeof blas.why, "cannot load %s: %s", MB_OPENBLAS_SO, dlerror());
        return 0;
    }
    *(void **)&blas.set_threads = dlsym(h, "openblas_set_num_threads");
    *(void **)&blas.config = dlsym(h, "openblas_get_config");
    *(void **)&blas.sgemm = dlsym(h, "cblas_sgemm");
    if (!blas.sgemm || !blas.set_threads || !blas.config) {
        blas.sgemm = NULL;
        snprintf(blas.why, sizeof blas.why, "%s lacks cblas_sgemm or openblas_set_num_threads", MB_OPENBLAS_SO);
        return 0;
    }
    snprintf(blas.why, sizeof blas.why, "%s (%s)", blas.config(), MB_OPENBLAS_SO);
    return 1;
}

const char *mb_kern_blas_desc(void)
{
    mb_kern_blas_load();
    return blas.why;
}

void mb_kern_blas_set_threads(int n)
{
    if (mb_kern_blas_load()) blas.set_threads(n > 0 ? n : mb_kern_threads());
}

int mb_kern_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc, mb_err *err)
{
    if (!mb_kern_blas_load()) return mb_err_set(err, MB_ERUN, "no BLAS for the GEMM: %s", blas.why);
    if (m < 1 || n < 1 || k < 1) return mb_err_set(err, MB_EINPUT, "GEMM sizes %lldx%lldx%lld: each must be >= 1",
                                                   (long long)m, (long long)n, (long long)k);
    /* blasint is 32 bits in a non-64-bit OpenBLAS */
    if ((int64_t)(blasint)m != m || (int64_t)(blasint)n != n || (int64_t)(blasint)k != k ||
        (int64_t)(blasint)lda != lda || (int64_t)(blasint)ldb != ldb || (int64_t)(blasint)ldc != ldc)
        return mb_err_set(err, MB_EINPUT, "GEMM sizes beyond this BLAS's %zu-byte indices", sizeof(blasint));
    blas.sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, (blasint)m,
               (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
    return MB_OK;
}
#else
int mb_kern_blas_load(void) { return 0; }
const char *mb_kern_blas_desc(void) { return "built without OpenBLAS (apt-get install libopenblas64-openmp-dev)"; }
void mb_kern_blas_set_threads(int n) { (void)n; }
int mb_kern_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc, mb_err *err)
{
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb;
    (void)beta, (void)c, (void)ldc;
    return mb_err_set(err, MB_ERUN, "no BLAS for the GEMM: %s", mb_kern_blas_desc());
}
#endif

/* splitmix64: the sampled entries */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double mb_kern_gemm_check(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha, const float *a,
                          int64_t lda, const float *b, int64_t ldb, const float *c, int64_t ldc, int samples,
                          uint64_t seed)
{
    double worst = 0;
    uint64_t s = seed;
    for (int t = 0; t < samples; t++) {
        /* the corners first: a wrong stride or offset shows there */
        int64_t i = t == 0 ? 0 : t == 1 ? m - 1 : (int64_t)(next_u64(&s) % (uint64_t)m);
        int64_t j = t == 0 ? 0 : t == 1 ? n - 1 : (int64_t)(next_u64(&s) % (uint64_t)n);
        double ref = 0, mag = 0;
        for (int64_t p = 0; p < k; p++) {
            double x = trans_a ? a[p * lda + i] : a[i * lda + p];
            double y = trans_b ? b[j * ldb + p] : b[p * ldb + j];
            ref += x * y;
            mag += fabs(x * y);
        }
        ref *= alpha;
        mag *= fabs(alpha);
        double got = c[i * ldc + j];
        double e = fabs(got - ref) / (mag > 0 ? mag : 1);
        if (!(e == e) || !isfinite(got)) return INFINITY;
        if (e > worst) worst = e;
    }
    return worst;
}

double mb_kern_gemm_tol(int64_t k)
{
    /* a dot product of k f32 terms, each rounded once, accumulated with
     * k roundings: |error| <= gamma_k sum |a b| (Higham, "Accuracy and
     * Stability of Numerical Algorithms", 2nd ed., sec. 3.1), u = 2^-24,
     * plus the result's own rounding */
    return (double)(k + 2) * ldexp(1.0, -24);
}
