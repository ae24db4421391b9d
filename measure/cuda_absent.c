/* cuda_absent.c — the CUDA backend entry points of a build without CUDA:
 * nothing is available and a CUDA run fails with the reason. */
#include "measure.h"

#include <stdio.h>

int mb_meas_cuda_available(char *why, size_t whysz)
{
    if (why && whysz) snprintf(why, whysz, "built without CUDA");
    return 0;
}

int mb_meas_cuda_run(const mb_plan *p, int64_t n, const mb_meas_config *c, mb_meas_record *row,
                     mb_meas_record *per_kernel, char *why, size_t whysz, mb_err *err)
{
    (void)p, (void)n, (void)c, (void)row, (void)per_kernel;
    if (why && whysz) snprintf(why, whysz, "built without CUDA");
    return mb_err_set(err, MB_ERUN, "the CUDA backend is not in this build (built without CUDA)");
}
