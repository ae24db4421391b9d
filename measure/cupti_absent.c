/* cupti_absent.c — the CUPTI wrapper of a CUDA build without CUPTI
 * (measure/cuda.cmake: library or headers not found, or MB_ENABLE_CUPTI=OFF).
 * Every entry point fails with one reason, so the CUDA backend times kernels
 * and writes "unavailable: built without CUPTI" in the counters column.
 * It counts nothing and needs no library. */
#include "mb_cupti.h"


#define MB_NO_CUPTI "built without CUPTI at mb_cupti_open: the CUPTI library or headers were not found " \
                    "at build time; fix: install the CUDA toolkit's CUPTI and rebuild"

int mb_cupti_host_passes(const char *chip, int *passes, mb_err *err)
{
    (void)chip;
    if (passes) *passes = 0;
    return mb_err_set(err, MB_ERUN, "%s", MB_NO_CUPTI);
}

int mb_cupti_open(mb_cupti **out, mb_err *err)
{
    if (out) *out = NULL;
    return mb_err_set(err, MB_ERUN, "%s", MB_NO_CUPTI);
}

const char *mb_cupti_chip(const mb_cupti *s)
{
    (void)s;
    return "";
}

int mb_cupti_count_kernels(mb_cupti *s, const mb_cupti_work *w, mb_cupti_range *out, int max_out,
                           int *n_out, mb_err *err)
{
    (void)s, (void)w, (void)out, (void)max_out;
    if (n_out) *n_out = 0;
    return mb_err_set(err, MB_ERUN, "%s", MB_NO_CUPTI);
}

int mb_cupti_count_range(mb_cupti *s, const char *name, const mb_cupti_work *w, mb_cupti_range *out,
                         mb_err *err)
{
    (void)s, (void)name, (void)w, (void)out;
    return mb_err_set(err, MB_ERUN, "%s", MB_NO_CUPTI);
}

void mb_cupti_close(mb_cupti *s)
{
    (void)s;
}
