/* kernels_gemm.c — GEMMs through OpenBLAS (kernels/gemm_cpu.c) and the
 * float64 check that judges them: right products within the f32 bound at
 * square, skinny and transposed shapes; a wrong transpose, a wrong stride
 * and a NaN caught. */
#include "kernels.h"
#include "mb_test.h"

#include <stdlib.h>

static float *rand_mat(int64_t n, unsigned seed)
{
    float *x = malloc((size_t)n * sizeof *x);
    srand(seed);
    for (int64_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return x;
}

/* C = op(A) op(B) at m x n x k, checked on 64 entries */
static double run(int ta, int tb, int64_t m, int64_t n, int64_t k)
{
    float *a = rand_mat(m * k, 1), *b = rand_mat(k * n, 2), *c = calloc((size_t)(m * n), sizeof(float));
    mb_err e;
    int rc = mb_kern_sgemm(ta, tb, m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n, &e);
    CHECK(rc == MB_OK);
    double err = mb_kern_gemm_check(ta, tb, m, n, k, 1.0, a, ta ? m : k, b, tb ? k : n, c, n, 64, 7);
    /* the same product judged as if A were not transposed: a wrong transpose */
    double wrong = m == k ? mb_kern_gemm_check(!ta, tb, m, n, k, 1.0, a, ta ? m : k, b, tb ? k : n, c, n, 64, 7) : 1;
    CHECK(wrong > 100 * mb_kern_gemm_tol(k));
    free(a), free(b), free(c);
    return err;
}

int main(void)
{
    if (!mb_kern_blas_load()) {
#ifdef MB_TEST_HAVE_OPENBLAS
        fprintf(stderr, "the build found OpenBLAS but it does not load: %s\n", mb_kern_blas_desc());
        CHECK(0);
        return mb_test_done();
#else
        mb_err e;
        float x = 1;
        CHECK(mb_kern_sgemm(0, 0, 1, 1, 1, 1, &x, 1, &x, 1, 0, &x, 1, &e) == MB_ERUN);
        CHECK(strstr(e.msg, "no BLAS") != NULL);
        printf("no OpenBLAS: %s\n", mb_kern_blas_desc());
        return mb_test_skip();
#endif
    }
    printf("%s\n", mb_kern_blas_desc());
    mb_kern_blas_set_threads(0);
    CHECK(run(0, 0, 256, 256, 256) <= mb_kern_gemm_tol(256));
    CHECK(run(1, 0, 128, 128, 128) <= mb_kern_gemm_tol(128));
    CHECK(run(0, 1, 128, 128, 128) <= mb_kern_gemm_tol(128));
    CHECK(run(0, 0, 1000, 8, 3000) <= mb_kern_gemm_tol(3000)); /* skinny, a long K */
    CHECK(run(0, 0, 1, 777, 300) <= mb_kern_gemm_tol(300));    /* a GEMV */

    /* a wrong leading dimension: the second row read from the wrong place */
    int64_t m = 64, n = 64, k = 64;
    float *a = rand_mat(m * k, 3), *b = rand_mat(k * n, 4), *c = calloc((size_t)(m * n), sizeof(float));
    mb_err e;
    CHECK(mb_kern_sgemm(0, 0, m, n, k - 1, 1.0f, a, k, b, n, 0.0f, c, n, &e) == MB_OK); /* K one short */
    CHECK(mb_kern_gemm_check(0, 0, m, n, k, 1.0, a, k, b, n, c, n, 64, 9) > 100 * mb_kern_gemm_tol(k));
    c[0] = NAN;
    CHECK(isinf(mb_kern_gemm_check(0, 0, m, n, k - 1, 1.0, a, k, b, n, c, n, 4, 9)));
    /* sizes below 1 refused */
    CHECK(mb_kern_sgemm(0, 0, 0, n, k, 1.0f, a, k, b, n, 0.0f, c, n, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "0x64x64") != NULL);
    free(a), free(b), free(c);
    return mb_test_done();
}
