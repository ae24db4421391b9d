/* err.c — formatting of error lines for mb_err. */
#include "membound_model.h"

#include <stdarg.h>
#include <stdio.h>

int mb_err_set(mb_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}
