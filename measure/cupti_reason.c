/* cupti_reason.c — mb_cupti_reason, the CSV-safe short reason of a CUPTI
 * failure line, shared by the wrapper (cupti_ranges.cpp) and its stand-in
 * for builds without CUPTI (cupti_absent.c). Calls no CUPTI function. */
#include "mb_cupti.h"

const char *mb_cupti_reason(const mb_err *err, char *buf, size_t bufsize)
{
    if (!buf || bufsize == 0) return buf;
    const char *src = err ? err->msg : "";
    size_t i = 0;
    for (; src[i] && src[i] != ':' && i + 1 < bufsize; i++) buf[i] = src[i] == ',' ? ';' : src[i];
    buf[i] = '\0';
    return buf;
}
