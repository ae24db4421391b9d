/* kernels_ops.c — mb_ops.h: 16-bit conversions (exhaustive round trips, ties,
 * nearest-value oracle, specials), every op against libm in float64, and the
 * tile primitive's 3.5-ulp SLEEF forms (tanh, sin, cos) in ulps. */
#include "kernels.h"
#include "mb_ops.h"
#include "mb_test.h"

#include <stdint.h>
#include <string.h>

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Every 16-bit pattern widens and narrows back to itself (NaN stays NaN). */
static void exhaustive_round_trip(void)
{
    int bad_bf = 0, bad_h = 0;
    for (uint32_t h = 0; h < 65536u; h++) {
        float fb = mb_bf16_to_f32((uint16_t)h);
        uint16_t back = mb_f32_to_bf16(fb);
        if (isnan(fb) ? !isnan(mb_bf16_to_f32(back)) : back != h) bad_bf++;
        /* bf16 widening is exact: the top half of the float */
        if (f_bits(fb) != h << 16) bad_bf++;
        float fh = mb_f16_to_f32((uint16_t)h);
        uint16_t hb = mb_f32_to_f16(fh);
        if (isnan(fh) ? !isnan(mb_f16_to_f32(hb)) : hb != h) bad_h++;
    }
    CHECK_EQ_I64(bad_bf, 0);
    CHECK_EQ_I64(bad_h, 0);
}

/* f16 widening agrees with the arithmetic definition of binary16. */
static void f16_values(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 0x7c00u; h++) {
        uint32_t e = h >> 10, m = h & 0x3ffu;
        double v = e ? ldexp(1.0 + m / 1024.0, (int)e - 15) : ldexp((double)m, -24);
        if ((double)mb_f16_to_f32((uint16_t)h) != v) bad++;
        if ((double)mb_f16_to_f32((uint16_t)(h | 0x8000u)) != -v) bad++;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK(isinf(mb_f16_to_f32(0x7c00u)) && mb_f16_to_f32(0x7c00u) > 0);
    CHECK(isinf(mb_f16_to_f32(0xfc00u)) && mb_f16_to_f32(0xfc00u) < 0);
    CHECK(isnan(mb_f16_to_f32(0x7e00u)));
}

static void ties_and_specials(void)
{
    /* bf16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1 */
    CHECK_EQ_I64(mb_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    /* (1 + 2^-7) + 2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: up */
    CHECK_EQ_I64(mb_f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);
    CHECK_EQ_I64(mb_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); /* above the tie */
    CHECK_EQ_I64(mb_f32_to_bf16(-2.0f), 0xc000);
    CHECK(isnan(mb_bf16_to_f32(mb_f32_to_bf16(NAN))));
    CHECK(isnan(mb_bf16_to_f32(mb_f32_to_bf16(bits_f(0x7f800001u))))); /* NaN with low payload */
    CHECK_EQ_I64(mb_f32_to_bf16(INFINITY), 0x7f80);
    CHECK_EQ_I64(mb_f32_to_bf16(3.4e38f), 0x7f80); /* rounds past the largest bf16 */
    CHECK_EQ_I64(mb_f32_to_bf16(bits_f(0x00000001u)), 0x0000); /* tiny subnormal */
    /* f16 ties */
    CHECK_EQ_I64(mb_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    CHECK_EQ_I64(mb_f32_to_f16(1.0f + 0x1p-10f + 0x1p-11f), 0x3c02);
    CHECK_EQ_I64(mb_f32_to_f16(65504.0f), 0x7bff);
    CHECK_EQ_I64(mb_f32_to_f16(65519.0f), 0x7bff);
    CHECK_EQ_I64(mb_f32_to_f16(65520.0f), 0x7c00); /* tie to even: infinity */
    CHECK_EQ_I64(mb_f32_to_f16(-1e6f), 0xfc00);
    CHECK_EQ_I64(mb_f32_to_f16(0x1p-24f), 0x0001);    /* smallest subnormal */
    CHECK_EQ_I64(mb_f32_to_f16(0x1p-25f), 0x0000);    /* tie with 0: even */
    CHECK_EQ_I64(mb_f32_to_f16(0x1.8p-24f), 0x0002);  /* 1.5 ulp: tie to even 2 */
    CHECK_EQ_I64(mb_f32_to_f16(0x1.8p-25f), 0x0001);  /* 0.75 ulp: up */
    CHECK_EQ_I64(mb_f32_to_f16(0x1.ff8p-15f), 0x03ff); /* largest subnormal */
    CHECK_EQ_I64(mb_f32_to_f16(0x1.ffcp-15f), 0x0400); /* tie: up into the normals */
    CHECK_EQ_I64(mb_f32_to_f16(-0.0f), 0x8000);
    CHECK(isnan(mb_f16_to_f32(mb_f32_to_f16(NAN))));
    CHECK(isnan(mb_f16_to_f32(mb_f32_to_f16(bits_f(0x7f800001u)))));
}

/* Nearest-value oracle: the chosen 16-bit value is at least as close as its
 * neighbours, and on a tie it is the even one. */
static int nearest_ok(float x, uint16_t h, float (*widen)(uint16_t))
{
    double v = widen(h), d = fabs((double)x - v);
    for (int s = -1; s <= 1; s += 2) {
        uint16_t nb = (uint16_t)(h + s);
        if ((h & 0x7fffu) == 0 && s < 0) nb = (uint16_t)(h ^ 0x8000u) + 1; /* across zero */
        float w = widen(nb);
        if (isnan(w)) continue;
        double dn = isinf(w) ? INFINITY : fabs((double)x - (double)w);
        if (isinf(v)) continue; /* overflow threshold checked separately */
        if (dn < d) return 0;
        if (dn == d && (h & 1u)) return 0;
    }
    return 1;
}

static void nearest_oracle(void)
{
    uint64_t s = 12345;
    int bad_bf = 0, bad_h = 0;
    for (int i = 0; i < 400000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(s >> 32);
        float x = bits_f(u);
        if (isnan(x) || isinf(x)) continue;
        if (!nearest_ok(x, mb_f32_to_bf16(x), mb_bf16_to_f32)) bad_bf++;
        /* f16: restrict to its range (|x| < 65520) */
        float xh = bits_f((u & 0x807fffffu) | ((uint32_t)(100 + (u >> 23) % 46) << 23));
        if (!nearest_ok(xh, mb_f32_to_f16(xh), mb_f16_to_f32)) bad_h++;
    }
    CHECK_EQ_I64(bad_bf, 0);
    CHECK_EQ_I64(bad_h, 0);
}

/* Each op: f64 definition against libm, f32 within a few ulp of it. */
typedef struct { mb_op op; double lo, hi, b; double (*ref)(double, double); double tol; } op_case;

static double r_add(double a, double b) { return a + b; }
static double r_sub(double a, double b) { return a - b; }
static double r_mul(double a, double b) { return a * b; }
static double r_div(double a, double b) { return a / b; }
static double r_pow(double a, double b) { return pow(a, b); }
static double r_neg(double a, double b) { (void)b; return -a; }
static double r_sin(double a, double b) { (void)b; return sin(a); }
static double r_cos(double a, double b) { (void)b; return cos(a); }
static double r_tan(double a, double b) { (void)b; return tan(a); }
static double r_tanh(double a, double b) { (void)b; return tanh(a); }
static double r_exp(double a, double b) { (void)b; return exp(a); }
static double r_log(double a, double b) { (void)b; return log(a); }
static double r_sqrt(double a, double b) { (void)b; return sqrt(a); }
static double r_rsqrt(double a, double b) { (void)b; return 1.0 / sqrt(a); }
static double r_sigmoid(double a, double b) { (void)b; return 1.0 / (1.0 + exp(-a)); }
static double r_relu(double a, double b) { (void)b; return a > 0 ? a : 0.0; }
static double r_abs(double a, double b) { (void)b; return fabs(a); }
static double r_gelu(double a, double b) { (void)b; return 0.5 * a * (1.0 + erf(a / sqrt(2.0))); }
static double r_copy(double a, double b) { (void)b; return a; }
static double r_reciprocal(double a, double b) { (void)b; return 1.0 / a; }
static double r_step(double a, double b) { (void)b; return a > 0 ? 1.0 : 0.0; }
static double r_sign(double a, double b) { (void)b; return a > 0 ? 1.0 : (a < 0 ? -1.0 : 0.0); }
/* d/dx x Phi(x) = Phi(x) + x phi(x), written from erf rather than erfc */
static double r_gelu_grad(double a, double b)
{
    (void)b;
    return 0.5 * (1.0 + erf(a / sqrt(2.0))) + a * exp(-0.5 * a * a) / sqrt(2.0 * 3.14159265358979323846);
}

static double r_erf(double a, double b) { (void)b; return erf(a); }

static double r_softplus(double a, double b) { (void)b; return a > 20 ? a : log(1.0 + exp(a)); }

static double r_silu(double a, double b) { (void)b; return a * (1.0 / (1.0 + exp(-a))); }
/* d/dx x s(x) = s + x s (1 - s), written from the product rule */
static double r_silu_grad(double a, double b)
{
    (void)b;
    double s = 1.0 / (1.0 + exp(-a));
    return s + a * s * (1.0 - s);
}

/* amax's mask: 1 where x equals the row's max (b); b = 0.75 is one point of
 * the case's grid, so both values occur */
static double r_eq(double a, double b) { return a == b ? 1.0 : 0.0; }

static void ops_vs_libm(void)
{
    const op_case cases[] = {
        {MB_OP_ADD, -3, 3, 0.75, r_add, 1e-6}, {MB_OP_SUB, -3, 3, 0.75, r_sub, 1e-6},
        {MB_OP_MUL, -3, 3, 0.75, r_mul, 1e-6}, {MB_OP_DIV, -3, 3, 0.75, r_div, 1e-6},
        {MB_OP_POW, 0.1, 3, 2.0, r_pow, 1e-6}, {MB_OP_POW, 0.1, 3, 3.0, r_pow, 1e-6},
        {MB_OP_POW, 0.1, 3, 2.5, r_pow, 1e-6}, {MB_OP_POW, 0.1, 3, -1.0, r_pow, 1e-6},
        {MB_OP_NEG, -3, 3, 0, r_neg, 0}, {MB_OP_SIN, -6, 6, 0, r_sin, 1e-6},
        {MB_OP_COS, -6, 6, 0, r_cos, 1e-6}, {MB_OP_TAN, -1.2, 1.2, 0, r_tan, 1e-6},
        {MB_OP_TANH, -5, 5, 0, r_tanh, 1e-6}, {MB_OP_EXP, -10, 10, 0, r_exp, 1e-6},
        {MB_OP_LOG, 0.01, 100, 0, r_log, 1e-6}, {MB_OP_SQRT, 0, 100, 0, r_sqrt, 1e-6},
        {MB_OP_RSQRT, 0.01, 100, 0, r_rsqrt, 1e-6}, {MB_OP_SIGMOID, -10, 10, 0, r_sigmoid, 1e-6},
        {MB_OP_RELU, -3, 3, 0, r_relu, 0}, {MB_OP_ABS, -3, 3, 0, r_abs, 0},
        {MB_OP_GELU, -5, 5, 0, r_gelu, 1e-6}, {MB_OP_COPY, -3, 3, 0, r_copy, 0},
        {MB_OP_RECIPROCAL, 0.1, 3, 0, r_reciprocal, 1e-6},
        {MB_OP_STEP, -3, 3, 0, r_step, 0}, {MB_OP_SIGN, -3, 3, 0, r_sign, 0},
        /* gelu_grad crosses zero at -0.75 as the difference of two values near 0.23:
         * an f32 ulp of 0.23 against the 1e-3 floor is 1.5e-5 */
        {MB_OP_GELU_GRAD, -5, 5, 0, r_gelu_grad, 3e-5},
        {MB_OP_ERF, -4, 4, 0, r_erf, 1e-6},
        {MB_OP_SOFTPLUS, -30, 30, 0, r_softplus, 1e-6},
        {MB_OP_SILU, -10, 10, 0, r_silu, 1e-6}, {MB_OP_SILU_GRAD, -10, 10, 0, r_silu_grad, 3e-5},
        {MB_OP_EQ, -3, 3, 0.75, r_eq, 0},
    };
    int seen[MB_OP_COUNT] = {0};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const op_case *k = &cases[c];
        seen[k->op] = 1;
        double worst64 = 0, worst32 = 0;
        for (int i = 0; i <= 2000; i++) {
            double x = k->lo + (k->hi - k->lo) * i / 2000.0;
            float xf = (float)x, bf = (float)k->b;
            /* the f32 result is judged against the reference at the f32 inputs */
            double want = k->ref((double)xf, (double)bf);
            double got64 = mb_op_apply_f64(k->op, (double)xf, (double)bf);
            double got32 = mb_op_apply_f32(k->op, xf, bf);
            /* absolute floor: ops near a zero of their result (sin near pi) */
            double den = fabs(want) > 1e-3 ? fabs(want) : 1e-3;
            double e64 = fabs(got64 - want) / den, e32 = fabs(got32 - want) / den;
            if (e64 > worst64) worst64 = e64;
            if (e32 > worst32) worst32 = e32;
        }
        if (!(worst64 <= 1e-12 + k->tol * 1e-6) || !(worst32 <= k->tol + 1e-7))
            fprintf(stderr, "op %s: f64 err %.3g, f32 err %.3g\n", mb_op_name(k->op), worst64,
                    worst32);
        CHECK(worst64 <= 1e-12 + k->tol * 1e-6);
        CHECK(worst32 <= k->tol + 1e-7);
    }
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) {
        /* row and column ops: no per-element form (tests/kernels_rows.c, tests/op_table.c) */
        if (MB_OP_IS_ROW((mb_op)op) || MB_OP_IS_COLUMN((mb_op)op)) continue;
        if (!seen[op]) fprintf(stderr, "op %d not covered\n", op);
        CHECK(seen[op]);
    }
    /* NaN propagates through relu, step and sign */
    CHECK(isnan(mb_op_apply_f32(MB_OP_RELU, NAN, 0)));
    CHECK(isnan(mb_op_apply_f32(MB_OP_STEP, NAN, 0)));
    CHECK(isnan(mb_op_apply_f32(MB_OP_SIGN, NAN, 0)));
    CHECK(mb_op_apply_f32(MB_OP_SIGMOID, -200.0f, 0) == 0.0f);
    CHECK(mb_op_apply_f32(MB_OP_SIGMOID, 200.0f, 0) == 1.0f);
}

/* The tile primitive's tanh, sin and cos (SLEEF's 3.5-ulp forms, vec_ops.h)
 * within 4 ulps of float64 at every 61st f32 of [2^-30, 12] and its
 * negation, near zero too (relative: a tanh from exp(2x) cancels there);
 * ref_f32.c allows library functions 8. */
static double ulps_off(float got, double want)
{
    float w = (float)want;
    double u = fabs((double)nextafterf(fabsf(w), INFINITY) - (double)fabsf(w));
    return fabs((double)got - want) / u;
}

static void tile_ulps(void)
{
    enum { N = 4096 + 13 }; /* a tail past the vectors */
    static float a[N], out[N];
    const struct { mb_op op; double (*ref)(double, double); float hi; } fns[] = {
        {MB_OP_TANH, r_tanh, 12.0f}, {MB_OP_SIN, r_sin, 12.0f}, {MB_OP_COS, r_cos, 12.0f},
    };
    uint32_t lo_bits, hi_bits;
    float lo = 0x1p-30f;
    memcpy(&lo_bits, &lo, sizeof lo);
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        memcpy(&hi_bits, &fns[f].hi, sizeof hi_bits);
        double worst = 0;
        float worst_x = 0;
        uint32_t b = lo_bits;
        while (b <= hi_bits) {
            int m = 0;
            for (; m < N && b <= hi_bits; m++, b += 61) {
                float x;
                memcpy(&x, &b, sizeof x);
                a[m] = (m & 1) ? -x : x;
            }
            mb_kern_op_apply(fns[f].op, a, 0, NULL, 0, out, m);
            for (int i = 0; i < m; i++) {
                double e = ulps_off(out[i], fns[f].ref((double)a[i], 0));
                if (!(e <= worst)) { worst = e; worst_x = a[i]; }
            }
        }
        if (!(worst <= 4.0))
            fprintf(stderr, "op %s: tile primitive %.2f ulps at %a\n", mb_op_name(fns[f].op), worst, (double)worst_x);
        CHECK(worst <= 4.0);
    }
}

/* Softmax's exp (mb_kern_exp_nonpos_apply: compiled row kernels' exp(x -
 * max)) within 2 ulps of float64 at every 61st f32 of [-104, -2^-30], into
 * the subnormals, and exact at the edges: 1 at 0 and -0, 0 at -inf and below
 * -104, NaN at NaN. With the polynomial only to r^6 it came out 2.69 ulps. */
static void exp_nonpos_ulps(void)
{
    enum { N = 4096 + 13 };
    static float a[N], out[N];
    uint32_t b, lo_bits, hi_bits;
    float lo = 0x1p-30f, hi = 104.0f;
    memcpy(&lo_bits, &lo, sizeof lo);
    memcpy(&hi_bits, &hi, sizeof hi);
    double worst = 0;
    float worst_x = 0;
    b = lo_bits;
    while (b <= hi_bits) {
        int m = 0;
        for (; m < N && b <= hi_bits; m++, b += 61) {
            float x;
            memcpy(&x, &b, sizeof x);
            a[m] = -x;
        }
        mb_kern_exp_nonpos_apply(a, out, m);
        for (int i = 0; i < m; i++) {
            double e = ulps_off(out[i], exp((double)a[i]));
            if (!(e <= worst)) worst = e, worst_x = a[i];
        }
    }
    if (!(worst <= 2.0)) fprintf(stderr, "softmax's exp: %.2f ulps at %a\n", worst, (double)worst_x);
    CHECK(worst <= 2.0);
    const float edge[16] = {0.0f, -0.0f, -INFINITY, NAN, -104.5f, -200.0f, -1e30f, -87.0f,
                            -88.0f, -103.9f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    float got[16];
    mb_kern_exp_nonpos_apply(edge, got, 16);
    CHECK(got[0] == 1.0f && got[1] == 1.0f && got[2] == 0.0f && isnan(got[3]) && got[4] == 0.0f &&
          got[5] == 0.0f && got[6] == 0.0f);
    for (int i = 7; i < 10; i++) CHECK(ulps_off(got[i], exp((double)edge[i])) <= 2.0);
}

/* The tile primitive's GELU and its gradient (vec_ops.h's own erfc form):
 * GELU within 7 units of 2^-24 relative to float64 at every 61st f32 of
 * [2^-30, 15] and its negation, float64's own through erfc (1 + erf
 * cancels below x = -8) (ref_f32.c allows 8; SLEEF's erfc of the
 * rounded x / sqrt 2 was 203 units off at x = -13.1); the gradient within
 * 6 units of its terms' size, Phi(x) + |x| phi(x);
 * x's infinities and NaN as float64 gives them. */
static double gelu64(double x) { return 0.5 * x * erfc(-x * 0.70710678118654752440); }
static double gelu_grad64(double x)
{
    return 0.5 * erfc(-x * 0.70710678118654752440) + x * exp(-0.5 * x * x) * 0.39894228040143267794;
}

static void gelu_ulps(void)
{
    enum { N = 4096 + 13 };
    static float a[N], out[N], grad[N];
    uint32_t b, lo_bits, hi_bits;
    float lo = 0x1p-30f, hi = 15.0f;
    memcpy(&lo_bits, &lo, sizeof lo);
    memcpy(&hi_bits, &hi, sizeof hi);
    double worst = 0, worst_g = 0;
    float worst_x = 0, worst_gx = 0;
    for (b = lo_bits; b <= hi_bits;) {
        int m = 0;
        for (; m < N && b <= hi_bits; m++, b += 61) {
            float x;
            memcpy(&x, &b, sizeof x);
            a[m] = (m & 1) ? -x : x;
        }
        mb_kern_op_apply(MB_OP_GELU, a, 0, NULL, 0, out, m);
        mb_kern_op_apply(MB_OP_GELU_GRAD, a, 0, NULL, 0, grad, m);
        for (int i = 0; i < m; i++) {
            double want = gelu64((double)a[i]), want_g = gelu_grad64((double)a[i]);
            if (fabs(want) >= 0x1p-126) {
                double e = fabs((double)out[i] - want) / fabs(want) / 0x1p-24;
                if (!(e <= worst)) worst = e, worst_x = a[i];
            }
            /* the gradient against its terms' size: it crosses zero at x = -0.75 as
             * Phi - |x| phi, two values near 0.23 */
            double scale = 0.5 * erfc(-(double)a[i] * 0.70710678118654752440) +
                           fabs((double)a[i]) * exp(-0.5 * (double)a[i] * a[i]) * 0.39894228040143267794;
            double eg = fabs((double)grad[i] - want_g) / scale / 0x1p-24;
            /* where phi itself is normal: |x| <= 13.2 (beyond, both terms are
             * subnormal products and carry a subnormal's absolute rounding) */
            if (scale >= 0x1p-120 && !(eg <= worst_g)) worst_g = eg, worst_gx = a[i];
        }
    }
    if (!(worst <= 7.0)) fprintf(stderr, "gelu: %.2f units of 2^-24 at %a\n", worst, (double)worst_x);
    if (!(worst_g <= 6.0)) fprintf(stderr, "gelu_grad: %.2f units at %a\n", worst_g, (double)worst_gx);
    CHECK(worst <= 7.0);
    CHECK(worst_g <= 6.0);
    const float edge[16] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 15.5f, -15.5f, 100.0f,
                            -100.0f, 1.0f, -1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    float g[16], gg[16];
    mb_kern_op_apply(MB_OP_GELU, edge, 0, NULL, 0, g, 16);
    mb_kern_op_apply(MB_OP_GELU_GRAD, edge, 0, NULL, 0, gg, 16);
    CHECK(g[0] == INFINITY && isnan(g[1]) && isnan(g[2]) && g[3] == 0.0f && signbit(g[3]) && g[4] == 0.0f);
    CHECK(g[5] == 15.5f && g[6] == -0.0f && g[7] == 100.0f && g[8] == -0.0f);
    CHECK(isnan(gg[0]) && isnan(gg[1]) && isnan(gg[2]) && gg[3] == 0.5f && gg[5] == 1.0f && gg[6] == 0.0f);
    for (int i = 9; i < 11; i++) {
        CHECK(fabs(g[i] - gelu64((double)edge[i])) <= 7 * 0x1p-24 * fabs(gelu64((double)edge[i])));
        CHECK(fabs(gg[i] - gelu_grad64((double)edge[i])) <= 12 * 0x1p-24 * fabs(gelu_grad64((double)edge[i])));
    }
}

/* PyTorch's semantics at points with known values (torch.erf, F.softplus,
 * F.silu, in float64 from their definitions). */
static void torch_values(void)
{
    static const struct { mb_op op; double x, want; } pts[] = {
        {MB_OP_ERF, 0.5, 0.52049987781304654}, {MB_OP_ERF, -1.5, -0.96610514647531073},
        {MB_OP_ERF, 0.0, 0.0}, {MB_OP_ERF, 6.0, 1.0},
        /* softplus: log(1 + e), ln 2 at 0, x itself above the threshold 20 */
        {MB_OP_SOFTPLUS, 1.0, 1.3132616875182228}, {MB_OP_SOFTPLUS, 0.0, 0.69314718055994531},
        {MB_OP_SOFTPLUS, 25.0, 25.0}, {MB_OP_SOFTPLUS, -5.0, 0.006715348489118068},
        /* silu: x sigmoid(x) */
        {MB_OP_SILU, 1.0, 0.7310585786300049}, {MB_OP_SILU, -2.0, -0.2384058440442351},
        {MB_OP_SILU, 3.0, 2.8577223804673}, {MB_OP_SILU, 0.0, 0.0},
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        CHECK_NEAR(mb_op_apply_f64(pts[i].op, pts[i].x, 0), pts[i].want, 1e-15);
        CHECK_NEAR(mb_op_apply_f32(pts[i].op, (float)pts[i].x, 0), pts[i].want, 1e-6);
    }
}

int main(void)
{
    exhaustive_round_trip();
    f16_values();
    ties_and_specials();
    nearest_oracle();
    ops_vs_libm();
    torch_values();
    tile_ulps();
    exp_nonpos_ulps();
    gelu_ulps();
    return mb_test_done();
}
