/* mb_test.h — a tiny assertion kit for the ctest executables.
 * Each CHECK prints file:line and the failing expression and counts a
 * failure; mb_test_done() prints "N passed, N failed" and returns the exit code:
 * 1 when a check failed or when none ran (a test that checks nothing cannot
 * fail); mb_test_skip() is the exit of a test that skips (77) honestly. */
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
    if (mb_t_pass + mb_t_fail == 0) {
        fprintf(stderr, "no check ran: a test that makes no check fails\n");
        return 1;
    }
    return mb_t_fail ? 1 : 0;
}

/* The exit code of a test that skips after the checks it could make: 77
 * (ctest's skip) unless one of them failed, then 1. */
static inline int mb_test_skip(void)
{
    printf("%d passed, %d failed; skipped\n", mb_t_pass, mb_t_fail);
    return mb_t_fail ? 1 : 77;
}
#endif
