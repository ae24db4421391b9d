/* report_numfmt.c — the report writers' number forms (reports/numfmt.c)
 * against snprintf byte for byte: "%.17g" (summary.json) and "%.9g"
 * (summary.csv) on values near rounding boundaries, powers of ten, the
 * ends of the fast path's range and millions of random doubles of the sizes
 * a report holds; "%lld" at its ends. */
#include "mb_test.h"
#include "write_int.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static long n_bad;

static void same_g(double v, int prec)
{
    char want[64], got[64];
    snprintf(want, sizeof want, "%.*g", prec, v);
    int len = rpt_fmt_g(got, sizeof got, v, prec);
    if (strcmp(want, got) != 0 || len != (int)strlen(want)) {
        if (n_bad++ < 10) fprintf(stderr, "%%.%dg of %a: '%s', expected '%s'\n", prec, v, got, want);
    }
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    static const int precs[] = {17, 9};
    static const double fixed[] = {1, -1, 0.5, 0.1, 1e-5, 9.5, 2.5, 0.15, 1e16, 1e17, 1e-4, 9.99999999e-5,
                                   123456789, 999999999.5, 1e21, 1e22, 1e23, 1e-300, DBL_MAX, DBL_MIN,
                                   DBL_TRUE_MIN, 5e-324, 0.3, 2.0 / 3, 1.0 / 3e12, 123.456, -0.0, 0.0};
    for (int pi = 0; pi < 2; pi++) {
        int p = precs[pi];
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) same_g(fixed[i], p);
        /* every power of ten and its neighbours */
        for (int e = -320; e <= 308; e++) {
            char t[16];
            snprintf(t, sizeof t, "1e%d", e);
            double v = strtod(t, NULL);
            same_g(v, p), same_g(nextafter(v, 0), p), same_g(nextafter(v, INFINITY), p);
        }
        /* halfway cases of the P-th digit: d.ddd5 x 10^e */
        for (int i = 0; i < 100000; i++) {
            char t[48];
            snprintf(t, sizeof t, "%llu5e%d", (unsigned long long)(next() % 100000000000000000ull),
                     (int)(next() % 40) - 30);
            double v = strtod(t, NULL);
            same_g(v, p), same_g(nextafter(v, 0), p), same_g(nextafter(v, INFINITY), p);
        }
        /* random bit patterns, and times/ratios of a report's sizes */
        for (int i = 0; i < 300000; i++) {
            uint64_t b = next();
            double v;
            memcpy(&v, &b, sizeof v);
            if (isfinite(v)) same_g(v, p);
            same_g((double)(next() >> 11) * 0x1p-53 * pow(10, (int)(next() % 24) - 12), p);
            same_g(((double)(next() >> 11) * 0x1p-53 - 0.5) * 4, p);
        }
    }
    CHECK(n_bad == 0);
    static const long long ints[] = {0, 1, -1, 9, 10, 99, 100, 1234567890123LL, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        char want[32], got[32];
        snprintf(want, sizeof want, "%lld", ints[i]);
        int len = rpt_fmt_int(got, ints[i]);
        CHECK(!strcmp(want, got) && len == (int)strlen(want));
    }
    return mb_test_done();
}
