/* cuda_absent.c — calibrate --backend cuda in a build without CUDA: it fails
 * with the reason. Does not stand in for measure's CUDA backend
 * (measure/cuda_absent.c does). */
#include "calibrate.h"

#include <stdio.h>

int mb_cal_cuda(const mb_meas_config *c, mb_device *out, char *summary, size_t summarysz, mb_err *err)
{
    (void)c, (void)out;
    if (summary && summarysz) summary[0] = '\0';
    return mb_err_set(err, MB_ERUN, "GPU calibration is not in this build; GPU specs come from the "
                                    "device table (membound devices)");
}
