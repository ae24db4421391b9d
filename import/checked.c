/* checked.c — what import/ reads from a profiler's file, checked once: one
 * number reader for every value (ncu's metric values and dimensions, a
 * trace's quoted numbers), the bounds no plan can pass, and names from the
 * data with their control characters escaped before anything prints them.
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

/* The byte of a control character (C0, DEL, or the second byte of a C1
 * character in UTF-8, 0xC2 0x80..0x9F) at s, 0 when s starts none. */
static size_t control_len(const unsigned char *s)
{
    if (*s < 0x20 || *s == 0x7f) return 1;
    if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) return 2;
    return 0;
}

size_t imp_escape(const char *s, char *buf, size_t size)
{
    size_t k = 0, written = 0;
    int cut = 0; /* whole characters only: no escape left half-written */
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t c = control_len(p);
        char one[9];
        size_t n;
        if (c == 2) n = (size_t)snprintf(one, sizeof one, "\\xc2\\x%02x", p[1]);
        else if (c == 1) n = (size_t)snprintf(one, sizeof one, "\\x%02x", p[0]);
        else one[0] = (char)*p, n = 1;
        if (buf && !cut && k + n < size) memcpy(buf + k, one, n), written = k + n;
        else cut = 1;
        k += n;
        p += c ? c : 1;
    }
    if (buf && size) buf[written] = '\0';
    return k;
}

char *imp_escape_dup(const char *s)
{
    size_t n = imp_escape(s, NULL, 0);
    char *d = malloc(n + 1);
    if (d) imp_escape(s, d, n + 1);
    return d;
}
