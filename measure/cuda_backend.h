/* cuda_backend.h — what the CUDA backend offers beyond measure.h's
 * mb_meas_cuda_available / mb_meas_cuda_run: GPU calibration and provenance
 * lines. Plain C; no CUDA header. Defined in cuda_backend.cu only in CUDA
 * builds (callers reference them weakly or under MB_HAVE_CUDA). */
#ifndef MB_CUDA_BACKEND_H
#define MB_CUDA_BACKEND_H

#include "membound_model.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Calibrates the GPU (device 0, or $MB_CUDA_DEVICE) for `membound calibrate
 * --backend cuda`: fills out as a spec ("local-gpu"): name, SM count and L2
 * from the driver, peak bandwidth = 2 x memory clock x bus width, measured
 * copy / read / write bandwidth (f32 arrays >= 8x L2, cold, median of 10),
 * GPU-side launch overhead, fp32 FMA peak, per-op rates (register-resident).
 * Prints a short summary on stdout. MB_ERUN when there is no GPU or a CUDA
 * call fails. */
int mb_meas_cuda_calibrate(mb_device *out, mb_err *err);

/* Provenance of the GPU runs so far, as "key: value" lines ('\n'-ended):
 * device, PCI id, driver and runtime versions, peak bandwidth, SM and memory
 * clocks seen (min..max over the rows' starts and ends; NVML when the driver
 * has it, else clock64 and the peak memory clock), the timing method, the
 * counters' state and the sanity gate's result. Empty when no GPU was opened.
 * Call after the runs, before writing the CSV's '#' lines. */
void mb_meas_cuda_provenance(char *buf, size_t bufsz);

#ifdef __cplusplus
}
#endif
#endif
