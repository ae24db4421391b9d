/* checked.c — what import/ reads from a profiler's file, checked once: one
 * number reader for every value (ncu's metric values and dimensions, a
 * trace's quoted numbers) and the bounds no plan can pass (names from the
 * data are escaped with mb_text_escape before anything prints them).
 * Does not know which field a value is (the readers say so in the message). */
#include "import_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The digits of s in the plain decimal form: [-]DIGITS[.DIGITS][e[+-]DIGITS],
 * with thousands separators (',' before each group of three integer
 * digits) when grouped. Returns the length of that form (all of s or it
 * fails) or 0. Rejects what strtod would also take: hex ("0x10"), "inf",
 * "nan", leading spaces, a trailing unit ("3.4ms"). */
static size_t decimal_form(const char *s, int grouped, int negative_ok)
{
    const char *p = s;
    if (*p == '-' && negative_ok) p++;
    size_t lead = strspn(p, "0123456789");
    if (grouped && lead >= 1 && lead <= 3 && p[lead] == ',') {
        p += lead;
        while (*p == ',') {
            if (strspn(p + 1, "0123456789") != 3) return 0; /* '2,5': a decimal comma, not thousands */
            p += 4;
        }
    } else {
        p += lead;
    }
    int digits = lead > 0;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        digits |= frac > 0;
        p += 1 + frac;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1;
        if (*q == '+' || *q == '-') q++;
        size_t exp = strspn(q, "0123456789");
        if (!exp) return 0;
        p = q + exp;
    }
    return *p ? 0 : (size_t)(p - s);
}

int imp_number(const char *s, int grouped, double lo, double hi, double *out)
{
    if (!decimal_form(s, grouped, lo < 0)) return MB_EINPUT;
    size_t len = strlen(s);
    char small[64], *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf) return MB_ERUN;
    size_t k = 0;
    for (const char *p = s; *p; p++)
        if (*p != ',') buf[k++] = *p;
    buf[k] = '\0';
    errno = 0;
    double v = strtod(buf, NULL);
    int range_err = errno == ERANGE && !(v == 0); /* underflow to 0 is a 0 */
    if (buf != small) free(buf);
    if (range_err || !isfinite(v) || v < lo || v > hi) return MB_EINPUT;
    *out = v;
    return MB_OK;
}
