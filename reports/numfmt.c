/* numfmt.c — numbers as text for the report's big writers (summary.json,
 * summary.csv), byte for byte what snprintf's "%.Pg" and "%lld" give, at a
 * fraction of the cost: glibc's exact "%.17g" takes ~0.8 us (multi-precision
 * digits), and a million rows hold ~20 million numbers. A double is scaled
 * to a P-digit integer by one exactly rounded long double operation with an
 * exact power of ten (10^0..10^27); when the scaled value lies too near a
 * rounding boundary to be sure, or the power is out of that range,
 * snprintf decides. Does not choose what is written. */
#include "write_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* 10^k, k = 0..27: exact in a long double's 64-bit mantissa (5^27 < 2^64). */
static long double pow10_exact(int k)
{
    static long double t[28];
    static int ready;
    if (!ready) {
        long double p = 1.0L;
        for (int i = 0; i < 28; i++, p *= 10.0L) t[i] = p;
        ready = 1;
    }
    return t[k];
}

/* Digits of u (u > 0 or not) into end-backwards; returns the start. */
static char *digits_back(char *end, unsigned long long u)
{
    do {
        *--end = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return end;
}

int rpt_fmt_int(char *buf, long long v)
{
    char t[24], *end = t + sizeof t;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    char *p = digits_back(end, u);
    if (v < 0) *--p = '-';
    int len = (int)(end - p);
    memcpy(buf, p, (size_t)len);
    buf[len] = '\0';
    return len;
}

/* The P significant digits of |v| (v finite, nonzero) as an integer in
 * [10^(P-1), 10^P) and the decimal exponent of the first, or 0 when one
 * long double rounding cannot decide them. */
static int scaled_digits(double v, int prec, unsigned long long *digits, int *exp10)
{
    long double a = fabsl((long double)v);
    int e2;
    (void)frexp(v, &e2);
    int x = (int)floor((e2 - 1) * 0.30102999566398120); /* log10 estimate, maybe one low */
    long double lo = pow10_exact(prec - 1), hi = pow10_exact(prec);
    for (int tries = 0; tries < 3; tries++) {
        int k = prec - 1 - x;
        if (k > 27 || k < -27) return 0;
        long double y = k >= 0 ? a * pow10_exact(k) : a / pow10_exact(-k);
        if (y >= hi) { x++; continue; }
        if (y < lo) { x--; continue; }
        long double fl = floorl(y), frac = y - fl;
        /* y is within half an ulp (2^-11 relative to 2^53 digits and more)
         * of the exact value; a margin of 2^-6 of a unit keeps far from .5 */
        if (fabsl(frac - 0.5L) < 0.015625L) return 0;
        unsigned long long d = (unsigned long long)fl + (frac > 0.5L);
        if ((long double)d >= hi) { d /= 10; x++; } /* 9.99..95 rounds up to 10 */
        *digits = d;
        *exp10 = x;
        return 1;
    }
    return 0;
}

int rpt_fmt_g(char *buf, size_t size, double v, int prec)
{
    unsigned long long d;
    int x;
    if (!isfinite(v) || v == 0 || prec < 1 || prec > 17 || size < 32 || !scaled_digits(v, prec, &d, &x))
        return snprintf(buf, size, "%.*g", prec, v);
    char dig[24];
    char *end = dig + sizeof dig, *s = digits_back(end, d);
    int nd = (int)(end - s); /* == prec */
    while (nd > 1 && s[nd - 1] == '0') nd--; /* %g drops trailing zeros */
    char *p = buf;
    if (v < 0) *p++ = '-';
    if (x < -4 || x >= prec) { /* %e style: d.ddde[+-]XX */
        *p++ = s[0];
        if (nd > 1) {
            *p++ = '.';
            memcpy(p, s + 1, (size_t)(nd - 1));
            p += nd - 1;
        }
        *p++ = 'e';
        *p++ = x < 0 ? '-' : '+';
        int ax = x < 0 ? -x : x;
        if (ax < 10) *p++ = '0';
        char et[8], *ee = et + sizeof et, *es = digits_back(ee, (unsigned long long)ax);
        memcpy(p, es, (size_t)(ee - es));
        p += ee - es;
    } else if (x >= 0) { /* integer part of x + 1 digits, padded with zeros */
        int ip = x + 1;
        for (int i = 0; i < ip; i++) *p++ = i < nd ? s[i] : '0';
        if (nd > ip) {
            *p++ = '.';
            memcpy(p, s + ip, (size_t)(nd - ip));
            p += nd - ip;
        }
    } else { /* 0.000ddd */
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -x - 1; i++) *p++ = '0';
        memcpy(p, s, (size_t)nd);
        p += nd;
    }
    *p = '\0';
    return (int)(p - buf);
}
