/* mb_cupti.h — DRAM bytes and GPU time from CUPTI's range profiler (CUDA 13
 * API), per kernel (auto range) and per group of kernels (user range), behind a
 * plain C interface. Compiles as C; includes no CUDA or CUPTI header.
 * It does not time with events, flush caches or judge whether the counts are
 * trustworthy: the caller does (measure/cuda_counters.cu).
 *
 * Metrics: dram__bytes_read.sum, dram__bytes_write.sum, gpu__time_duration.sum,
 * collected in one pass (checked when the session opens).
 *
 * Errors: functions return MB_OK or MB_ERUN and fill an mb_err with one line
 * that starts "<CUPTI_ERROR_NAME> (<code>) at <call>" (or "<what> at <call>"
 * for non-CUPTI failures), then ": <CUPTI's message>", then "; fix: ..." where
 * a fix is known. mb_cupti_reason() extracts the part before the first ':' for
 * the CSV's "unavailable: <reason>" column. */
#ifndef MB_CUPTI_H
#define MB_CUPTI_H

#include "membound_model.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Values of one counted range. */
typedef struct mb_cupti_range {
    char name[64];           /* auto range: "0", "1", ... in launch order;
                                user range: the name pushed */
    double dram_read_bytes;  /* dram__bytes_read.sum */
    double dram_write_bytes; /* dram__bytes_write.sum */
    double gpu_time_s;       /* gpu__time_duration.sum (ns in CUPTI) / 1e9 */
} mb_cupti_range;

/* The work counted in one run. prepare (may be NULL) runs before each pass,
 * outside the profiling window: the caller leaves L2 clean there and
 * synchronises. launch enqueues exactly n_launches kernels on the current
 * context and returns 0, or nonzero after filling nothing (the session then
 * reports "launch failed"). */
typedef struct mb_cupti_work {
    int (*prepare)(void *arg);
    int (*launch)(void *arg);
    void *arg;
    int n_launches;
} mb_cupti_work;

typedef struct mb_cupti mb_cupti;

/* Host side only: builds the metric configuration for chip (e.g. "GH100")
 * and stores in *passes how many replay passes it needs. Needs neither a GPU
 * nor a driver, only libcupti and libnvperf_host. MB_ERUN with the reason
 * (unknown chip, libnvperf_host not loadable, ...). */
int mb_cupti_host_passes(const char *chip, int *passes, mb_err *err);

/* Opens a counter session on the device of the calling thread's current CUDA
 * context (the caller has run cudaSetDevice and cudaFree(0)). Probes, in
 * order: a working driver and context, cuptiProfilerInitialize,
 * cuptiProfilerDeviceSupported (naming any unsupported flag),
 * cuptiDeviceGetChipName, cuptiProfilerGetCounterAvailability (the privilege
 * probe), the host configuration and its pass count (must be 1). On success
 * *out is a new session (free with mb_cupti_close). On failure returns
 * MB_ERUN, *out is NULL, and err holds one line naming the call, the code and
 * the fix; nothing is left initialised. No CUPTI call is made unless the
 * driver and the context work. */
int mb_cupti_open(mb_cupti **out, mb_err *err);

/* Chip name CUPTI reports for the session's device ("GH100"). */
const char *mb_cupti_chip(const mb_cupti *s);

/* Counts each kernel w->launch enqueues as its own range (auto range,
 * user replay; one pass). Fills out[0 .. *n_out) (at most max_out) in launch order.
 * The profiler is enabled only for the duration of this call. MB_ERUN with
 * the reason when a CUPTI call fails mid-run, ranges were dropped, or the
 * count of ranges differs from w->n_launches. */
int mb_cupti_count_kernels(mb_cupti *s, const mb_cupti_work *w, mb_cupti_range *out,
                           int max_out, int *n_out, mb_err *err);

/* Counts everything w->launch enqueues as one range named name (user range,
 * user replay). */
int mb_cupti_count_range(mb_cupti *s, const char *name, const mb_cupti_work *w,
                         mb_cupti_range *out, mb_err *err);

/* Tears the session down: the host object, then the buffers it was handed
 * at open (counter availability and config images, kept until here), then
 * the profiler. s may be NULL. */
void mb_cupti_close(mb_cupti *s);

/* Copies the short reason of a failure line (the text before its first ':',
 * e.g. "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (35) at
 * cuptiProfilerGetCounterAvailability") into buf, with commas replaced by
 * ';' so it fits a CSV field. Returns buf. */
const char *mb_cupti_reason(const mb_err *err, char *buf, size_t bufsize);

#ifdef __cplusplus
}
#endif
#endif
