/* mb_test.h — a tiny assertion kit for the ctest executables.
 * Each CHECK prints file:line and the failing expression and counts a
 * failure; mb_test_done() prints "N passed, N failed" and returns the exit code. */
#ifndef MB_TEST_H
#define MB_TEST_H
#include <math.h>
#include <stdio.h>
#include <string.h>

static int mb_t_pass, mb_t_fail;

#define CHECK(cond) do { if (cond) mb_t_pass++; else { mb_t_fail++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ_I64(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ == b_) mb_t_pass++; else { mb_t_fail++; fprintf(stderr, \
    "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, a_, #b, b_); } } while (0)
#define CHECK_NEAR(a, b, rel) do { double a_ = (a), b_ = (b); \
    if (fabs(a_ - b_) <= (rel) * fabs(b_) + 1e-300) mb_t_pass++; else { mb_t_fail++; \
    fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g (rel %g)\n", __FILE__, __LINE__, \
    #a, a_, b_, (double)(rel)); } } while (0)

static inline int mb_test_done(void)
{
    printf("%d passed, %d failed\n", mb_t_pass, mb_t_fail);
    return mb_t_fail ? 1 : 0;
}
#endif
