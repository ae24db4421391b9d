/* meas_run.h — running a row on a backend (the protocol, the CPU and CUDA
 * backends), and the CUDA session's probe timing calibrate uses. Does not
 * choose the model's spec (calibrate/) or write records (meas_csv.h). */
#ifndef MB_MEAS_RUN_H
#define MB_MEAS_RUN_H

#include "meas_record.h"
#include "meas_timing.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- running ----------------------------------------------------------------- */

/* Runs plan p (of the variant named in row->variant) at n elements on the CPU
 * under config c and fills row's timing and check columns (and per_kernel[k]'s
 * when non-NULL: each kernel's own time within the same samples). row and
 * per_kernel must come from mb_meas_record_init. A failed check sets
 * verified = 0 and still returns MB_OK (the row is reported, flagged); *why
 * (when non-NULL, whysz bytes) gets the first mismatch, or for a verified row
 * whose accuracy is "inaccurate" the note that says why (mb_kern_check_note). MB_ERUN when memory
 * or threads fail, or "interrupted" when *c->stop was set. */
int mb_meas_cpu_run(const mb_plan *p, int64_t n, const mb_meas_config *c,
                    mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                    mb_err *err);

/* The CUDA backend (measure/cuda_*.cu; measure/cuda_absent.c when built
 * without CUDA, where nothing is available and every call fails saying so). */

/* 1 when a usable GPU is present; else 0 and why gets one line ("built
 * without CUDA", "cudaErrorNoDevice: ..."). */
int mb_meas_cuda_available(char *why, size_t whysz);

/* Same contract as mb_meas_cpu_run, on the GPU c->cuda_device: fills device,
 * backend "cuda", reps, time_s_*, time_cv, dram_*_bytes (-1 without
 * counters), counters, max_rel_err, verified (mb_kern_verify on host copies,
 * sampled above 2^24 elements; mb_kern_gradcheck and the CPU backend's input
 * gradients for backward plans). MB_ERUN on a CUDA failure (err says which
 * call). */
int mb_meas_cuda_run(const mb_plan *p, int64_t n, const mb_meas_config *c,
                     mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                     mb_err *err);

/* Device memory for plan p at n on the GPU c->cuda_device (opened with c,
 * as a run would): *need_bytes gets the plan's device tensors, *free_bytes
 * and *total_bytes the device's memory now (cudaMemGetInfo). measure admits
 * its rows against these before it runs any (MB_MEAS_CUDA_MARGIN_BYTES
 * kept free, as each row's own check does). MB_ERUN without a GPU. */
#define MB_MEAS_CUDA_MARGIN_BYTES ((int64_t)256000000)
int mb_meas_cuda_plan_memory(const mb_meas_config *c, const mb_plan *p, int64_t n, int64_t *need_bytes,
                             int64_t *free_bytes, int64_t *total_bytes, mb_err *err);

/* ---- GPU probes: the session's timing, for calibrate --backend cuda ---- */

/* Launches a probe may queue behind the blocking kernel at most: the launch
 * queue holds ~32 entries (nvbench's blocking_kernel note), and a launch
 * that finds it full stalls the host until the block times out. */
#define MB_MEAS_GPU_MAX_QUEUED 12

struct mb_kern_cuda_device;
/* What a probe launches on: the device the session opened (kernels_cuda.h's
 * struct), its PCI id, the session's stream (a cudaStream_t) and a sink of
 * 64 floats the probes may write. */
typedef struct mb_meas_gpu {
    const struct mb_kern_cuda_device *dev;
    const char *pci;
    void *stream;
    float *sink;
} mb_meas_gpu;

/* Opens the session of c->cuda_device (as a run would: once per process)
 * into *g. MB_ERUN when there is no GPU or no CUDA in this build. */
int mb_meas_gpu_open(const mb_meas_config *c, mb_meas_gpu *g, mb_err *err);
/* Device memory of bytes into *out; freed by mb_meas_gpu_free. MB_ERUN. */
int mb_meas_gpu_alloc(int64_t bytes, void **out, mb_err *err);
void mb_meas_gpu_free(void *p);
/* Median seconds of samples (<= 64) runs of fn(arg) between events on the
 * session's stream (cold: after the clean L2 flush), fn's launches queued
 * behind the blocking kernel while the session uses it (at most
 * MB_MEAS_GPU_MAX_QUEUED launches). A sample whose block timed out holds
 * host launch latency: it is dropped, the block turned off (said once
 * through c's note) and the sample taken again without it. MB_ERUN when a
 * CUDA call fails or fewer than samples are valid. */
int mb_meas_gpu_time(const mb_meas_config *c, int (*fn)(void *arg, mb_err *err), void *arg, int samples,
                     int cold, double *median_s, mb_err *err);
/* 1 while the session queues samples behind the blocking kernel. */
int mb_meas_gpu_blocked(void);

/* Provenance of the GPU runs so far, as "key: value" lines ('\n'-ended):
 * device, PCI id, driver and runtime versions, peak bandwidth, SM and memory
 * clocks seen (min..max over the rows' starts and ends; NVML when the driver
 * has it, else clock64 and the peak memory clock), the timing method, the
 * counters' state and the sanity gate's result. Empty when no GPU was opened.
 * Call after the runs, before writing the CSV's '#' lines. */
void mb_meas_cuda_provenance(char *buf, size_t bufsz);

/* Picks the backend for AUTO (CUDA if available, else CPU) and says why in
 * note (one line, may be NULL). Explicit CUDA without a GPU: MB_ERUN. */
int mb_meas_resolve_backend(mb_meas_backend want, mb_meas_backend *got, char *note,
                            size_t notesz, mb_err *err);

/* Runs one row on backend b (CPU or CUDA, not AUTO). */
int mb_meas_run(mb_meas_backend b, const mb_plan *p, int64_t n, const mb_meas_config *c,
                mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                mb_err *err);

#ifdef __cplusplus
}
#endif
#endif
