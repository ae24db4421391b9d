/* cuda_absent.c — the CUDA backend of a build without CUDA: nothing is
 * available, a CUDA run or a GPU probe fails with the reason, and there is
 * no GPU provenance. */
#include "protocol_int.h"

#include <stdio.h>
#include <string.h>

#define MB_NO_CUDA "the CUDA backend is not in this build (built without CUDA)"

int mb_meas_cuda_available(char *why, size_t whysz)
{
    if (why && whysz) snprintf(why, whysz, "built without CUDA");
    return 0;
}

static int absent_prepare(mb_meas_row_run *r, mb_err *err)
{
    (void)r;
    return mb_err_set(err, MB_ERUN, MB_NO_CUDA);
}

static void absent_release(mb_meas_row_run *r, int rc)
{
    (void)r, (void)rc;
}

/* Only prepare and release are ever called. */
const mb_meas_ops mb_meas_cuda_ops = {.name = "cuda", .prepare = absent_prepare, .release = absent_release};

int mb_meas_cuda_plan_memory(const mb_meas_config *c, const mb_plan *p, int64_t n, int64_t *need_bytes,
                             int64_t *free_bytes, int64_t *total_bytes, mb_err *err)
{
    (void)c, (void)p, (void)n;
    *need_bytes = *free_bytes = *total_bytes = 0;
    return mb_err_set(err, MB_ERUN, MB_NO_CUDA);
}

int mb_meas_gpu_open(const mb_meas_config *c, mb_meas_gpu *g, mb_err *err)
{
    (void)c;
    memset(g, 0, sizeof *g);
    return mb_err_set(err, MB_ERUN, MB_NO_CUDA);
}

int mb_meas_gpu_alloc(int64_t bytes, void **out, mb_err *err)
{
    (void)bytes;
    *out = NULL;
    return mb_err_set(err, MB_ERUN, MB_NO_CUDA);
}

void mb_meas_gpu_free(void *p) { (void)p; }

int mb_meas_gpu_time(const mb_meas_config *c, int (*fn)(void *arg, mb_err *err), void *arg, int samples,
                     int cold, double *median_s, mb_err *err)
{
    (void)c, (void)fn, (void)arg, (void)samples, (void)cold;
    *median_s = 0;
    return mb_err_set(err, MB_ERUN, MB_NO_CUDA);
}

int mb_meas_gpu_blocked(void) { return 0; }

void mb_meas_cuda_provenance(char *buf, size_t bufsz)
{
    if (buf && bufsz) buf[0] = '\0';
}

int mb_meas_cuda_gemm(const mb_meas_config *c, const mb_gemm *g, mb_meas_gemm_epilogue epi, int samples,
                      mb_meas_gemm_result *out, mb_err *err)
{
    (void)c, (void)g, (void)epi, (void)samples;
    memset(out, 0, sizeof *out);
    return mb_err_set(err, MB_ERUN, MB_NO_CUDA);
}
