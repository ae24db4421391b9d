/* report_fit.c — the reporter's fits against oracles: NIST StRD Norris
 * (certified values), synthetic measurements with known t0 and bandwidth
 * plus Gaussian noise (the 95% intervals cover the truth about 95% of the
 * time), outlier rejection, and the multilinear per-op fit (recovers known
 * costs; says when it is underdetermined). */
#include "mb_test.h"
#include "report.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include <math.h>
#include <string.h>

/* NIST StRD, Norris (Norris.dat): 36 observations, y then x. */
static const double norris_y[36] = {
    0.1,   338.8, 118.1, 888.0, 9.2,   228.1, 668.5, 998.5, 449.1, 778.9, 559.2, 0.3,
    0.1,   778.1, 668.8, 339.3, 448.9, 10.8,  557.7, 228.3, 998.0, 888.8, 119.6, 0.3,
    0.6,   557.6, 339.3, 888.0, 998.5, 778.9, 10.2,  117.6, 228.9, 668.4, 449.2, 0.2};
static const double norris_x[36] = {
    0.2,   337.4, 118.2, 884.6, 10.1,  226.5, 666.3, 996.3, 448.6, 777.0, 558.2, 0.4,
    0.6,   775.5, 666.9, 338.0, 447.5, 11.6,  556.0, 228.1, 995.8, 887.6, 120.2, 0.3,
    0.3,   556.8, 339.1, 887.2, 999.0, 779.0, 11.1,  118.3, 229.2, 669.1, 448.9, 0.5};

static void test_norris(void)
{
    mb_rpt_line f;
    mb_err e;
    double w[36];
    for (int i = 0; i < 36; i++) w[i] = 1.0;
    CHECK(mb_rpt_fit_line(norris_x, norris_y, w, 36, 0, NULL, NULL, &f, &e) == MB_OK);
    /* certified values */
    CHECK_NEAR(f.c0, -0.262323073774029, 1e-9);
    CHECK_NEAR(f.c1, 1.00211681802045, 1e-9);
    CHECK_NEAR(f.sd0, 0.232818234301152, 1e-9);
    CHECK_NEAR(f.sd1, 0.429796848199937e-3, 1e-9);
    CHECK_NEAR(f.resid_sd, 0.884796396144373, 1e-9);
    CHECK_NEAR(f.r2, 0.999993745883712, 1e-12);
    CHECK_NEAR(f.chi2, 26.6173985294224, 1e-9);
    CHECK_EQ_I64(f.dof, 34);
    /* the same with NULL weights */
    mb_rpt_line g;
    CHECK(mb_rpt_fit_line(norris_x, norris_y, NULL, 36, 0, NULL, NULL, &g, &e) == MB_OK);
    CHECK_NEAR(g.c1, 1.00211681802045, 1e-9);
    /* through the multilinear path: columns 1 and x */
    double X[72];
    for (int i = 0; i < 36; i++) { X[2 * i] = 1.0; X[2 * i + 1] = norris_x[i]; }
    mb_rpt_multi m;
    const char *names[] = {"B0", "B1"};
    CHECK(mb_rpt_fit_multi(X, norris_y, NULL, 36, 2, names, &m, &e) == MB_OK);
    CHECK(m.determined);
    CHECK_NEAR(m.c[0], -0.262323073774029, 1e-8);
    CHECK_NEAR(m.c[1], 1.00211681802045, 1e-9);
    CHECK_NEAR(m.sd[0], 0.232818234301152, 1e-8);
    CHECK_NEAR(m.sd[1], 0.429796848199937e-3, 1e-8);
    CHECK_NEAR(m.r2, 0.999993745883712, 1e-12);
}

/* Measurements of a device with t0 = 5 us and 900 GB/s: times at 12 sizes
 * 2^16..2^27 f32 copies (8 B/elem), each with 2% Gaussian noise, weights
 * 1/sigma². */
#define T0 5e-6
#define BW 900e9
static void synth(gsl_rng *r, double *x, double *y, double *w, int n, double rel)
{
    for (int i = 0; i < n; i++) {
        x[i] = 8.0 * (double)((int64_t)1 << (16 + i % 12));
        double t = T0 + x[i] / BW;
        double sigma = rel * t;
        y[i] = t + gsl_ran_gaussian(r, sigma);
        w[i] = 1.0 / (sigma * sigma);
    }
}

static void test_synthetic(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 20240611);
    double x[24], y[24], w[24];
    mb_err e;
    mb_rpt_line f;
    /* one data set: the truth inside the 95% intervals, bandwidth close */
    synth(r, x, y, w, 24, 0.02);
    CHECK(mb_rpt_fit_line(x, y, w, 24, 1, NULL, NULL, &f, &e) == MB_OK);
    CHECK(fabs(f.c0 - T0) <= f.ci0);
    CHECK(fabs(f.c1 - 1.0 / BW) <= f.ci1);
    CHECK_NEAR(1.0 / f.c1, BW, 0.02);
    CHECK(f.r2 > 0.99);
    /* coverage: over 400 data sets each interval holds the truth ~95% of
     * the time; a binomial(400, 0.95) lies in [0.92, 0.98] with prob > 0.99 */
    int cover0 = 0, cover1 = 0, trials = 400;
    for (int k = 0; k < trials; k++) {
        synth(r, x, y, w, 24, 0.02);
        if (mb_rpt_fit_line(x, y, w, 24, 0, NULL, NULL, &f, &e) != MB_OK) continue;
        cover0 += fabs(f.c0 - T0) <= f.ci0;
        cover1 += fabs(f.c1 - 1.0 / BW) <= f.ci1;
    }
    printf("coverage of the 95%% intervals: t0 %.3f, 1/bandwidth %.3f\n", cover0 / (double)trials,
           cover1 / (double)trials);
    CHECK(cover0 >= 0.92 * trials && cover0 <= 0.98 * trials);
    CHECK(cover1 >= 0.92 * trials && cover1 <= 0.98 * trials);

    /* an outlier (one time 3x too long) is rejected and the fit still recovers */
    synth(r, x, y, w, 24, 0.02);
    y[20] *= 3.0;
    unsigned char used[24];
    double stud[24];
    CHECK(mb_rpt_fit_line(x, y, w, 24, 1, used, stud, &f, &e) == MB_OK);
    CHECK(used[20] == 0);
    CHECK(f.n_rejected >= 1 && f.n_rejected <= 2);
    CHECK(fabs(stud[20]) > 3);
    CHECK(fabs(f.c1 - 1.0 / BW) <= f.ci1);
    /* without rejection the outlier drags the line away */
    mb_rpt_line bad;
    CHECK(mb_rpt_fit_line(x, y, w, 24, 0, NULL, NULL, &bad, &e) == MB_OK);
    CHECK(fabs(bad.c1 - 1.0 / BW) > fabs(f.c1 - 1.0 / BW));

    /* too few points, and a degenerate x, are input errors */
    CHECK(mb_rpt_fit_line(x, y, w, 2, 1, NULL, NULL, &f, &e) == MB_EINPUT);
    double same[4] = {1, 1, 1, 1};
    CHECK(mb_rpt_fit_line(same, y, NULL, 4, 1, NULL, NULL, &f, &e) == MB_EINPUT);
    gsl_rng_free(r);
}

/* time = t0 + bytes/bw + sin_evals * 4 ns + tanh_evals * 7 ns */
static void test_multi(void)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 7);
    enum { N = 30, P = 4 };
    double X[N * P], y[N], w[N];
    for (int i = 0; i < N; i++) {
        double n = (double)((int64_t)1 << (18 + i % 6));
        int kind = i / 6; /* five kinds of rows with different op mixes */
        double bytes = n * 4.0 * (2 + kind), sinv = n * (kind % 3), tanhv = n * (kind % 2 ? 2 : 0);
        X[i * P + 0] = 1;
        X[i * P + 1] = bytes;
        X[i * P + 2] = sinv;
        X[i * P + 3] = tanhv;
        double t = 2e-6 + bytes / 20e9 + sinv * 4e-9 + tanhv * 7e-9;
        double s = 0.01 * t;
        y[i] = t + gsl_ran_gaussian(r, s);
        w[i] = 1.0 / (s * s);
    }
    const char *names[] = {"t0", "bytes", "sin", "tanh"};
    mb_rpt_multi m;
    mb_err e;
    CHECK(mb_rpt_fit_multi(X, y, w, N, P, names, &m, &e) == MB_OK);
    CHECK(m.determined);
    CHECK_EQ_I64(m.rank, 4);
    CHECK(fabs(m.c[2] - 4e-9) <= m.ci[2]);
    CHECK(fabs(m.c[3] - 7e-9) <= m.ci[3]);
    CHECK(fabs(m.c[1] - 1.0 / 20e9) <= m.ci[1]);
    /* tanh always twice sin: the two costs cannot be told apart */
    for (int i = 0; i < N; i++) X[i * P + 3] = 2 * X[i * P + 2];
    CHECK(mb_rpt_fit_multi(X, y, w, N, P, names, &m, &e) == MB_OK);
    CHECK(!m.determined);
    CHECK(m.rank == 3);
    CHECK(strstr(m.note, "underdetermined") != NULL);
    /* more parameters than rows */
    CHECK(mb_rpt_fit_multi(X, y, w, 3, P, names, &m, &e) == MB_OK);
    CHECK(!m.determined);
    gsl_rng_free(r);
}

int main(void)
{
    test_norris();
    test_synthetic();
    test_multi();
    return mb_test_done();
}
