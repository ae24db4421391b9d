/* size.c — element counts written as 16777216, 2^24 or 16M (binary K/M/G/T). */
#include "membound_model.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

int mb_size_parse(const char *s, int64_t *out, mb_err *err)
{
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '-')
        return mb_err_set(err, MB_EINPUT, "size '%s': must be at least 1", s);
    if (!isdigit((unsigned char)*p))
        return mb_err_set(err, MB_EINPUT, "size '%s': expected a count like 16777216, 2^24 or 16M", s);
    errno = 0;
    char *end;
    unsigned long long base = strtoull(p, &end, 10);
    if (errno == ERANGE)
        return mb_err_set(err, MB_EINPUT, "size '%s': too large (at most 2^44)", s);
    long double v = (long double)base;
    if (*end == '^') {
        const char *q = end + 1;
        if (!isdigit((unsigned char)*q))
            return mb_err_set(err, MB_EINPUT, "size '%s': expected an exponent after '^'", s);
        unsigned long e = strtoul(q, &end, 10);
        if (e > 100)
            return mb_err_set(err, MB_EINPUT, "size '%s': too large (at most 2^44)", s);
        v = 1;
        for (unsigned long i = 0; i < e; i++) v *= (long double)base;
    } else if (*end) {
        int shift = 0;
        switch (toupper((unsigned char)*end)) {
        case 'K': shift = 10; break;
        case 'M': shift = 20; break;
        case 'G': shift = 30; break;
        case 'T': shift = 40; break;
        default: break;
        }
        if (shift) {
            end++;
            if (*end == 'i') end++; /* "16Mi" */
            v *= (long double)((int64_t)1 << shift);
        }
    }
    while (isspace((unsigned char)*end)) end++;
    if (*end)
        return mb_err_set(err, MB_EINPUT, "size '%s': unexpected '%s' (write 16777216, 2^24 or 16M)", s, end);
    if (v < 1)
        return mb_err_set(err, MB_EINPUT, "size '%s': must be at least 1", s);
    if (v > (long double)MB_N_MAX)
        return mb_err_set(err, MB_EINPUT, "size '%s': too large to count (at most 2^44 elements)", s);
    *out = (int64_t)v;
    return MB_OK;
}
