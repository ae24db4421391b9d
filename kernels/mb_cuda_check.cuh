/* mb_cuda_check.cuh — the one definition of CUDA_TRY / CUDA_CHECK, the check
 * on every CUDA runtime call in functions that report through an mb_err (the
 * .cu files of kernels/, and measure/cuda_*.cu, which may look down at
 * kernels/). Included by .cu files only: it includes cuda_runtime.h, so no
 * public header includes it. Launchers that return a cudaError_t instead
 * (kernels_cuda_int.cuh) check with `if (e != cudaSuccess) return e;`. */
#ifndef MB_CUDA_CHECK_CUH
#define MB_CUDA_CHECK_CUH

#include "membound_model.h" /* mb_err, mb_err_set, MB_ERUN */

#include <cuda_runtime.h>

/* MB_OK when e is cudaSuccess; else MB_ERUN, with err (may be NULL) naming
 * call, the error's name and its text. Clears the runtime's last-error
 * state first, so a non-sticky error (e.g. out of memory) is not reported
 * again by the next cudaGetLastError after a launch. */
static inline int mb_cuda_check(cudaError_t e, const char *call, mb_err *err)
{
    if (e == cudaSuccess) return MB_OK;
    (void)cudaGetLastError();
    return mb_err_set(err, MB_ERUN, "%s: %s (%s)", call, cudaGetErrorName(e), cudaGetErrorString(e));
}

/* Two forms of one check, for functions with an `mb_err *err` in scope.
 * CUDA_TRY returns MB_ERUN from the enclosing function when call (a
 * cudaError_t expression) fails; CUDA_CHECK is the check's value (MB_OK or
 * MB_ERUN), for paths that must release something before they return:
 *     if (rc == MB_OK) rc = CUDA_CHECK(cudaEventRecord(e1, s)); */
#define CUDA_CHECK(call) mb_cuda_check((call), #call, err)
#define CUDA_TRY(call)                                                                           \
    do {                                                                                         \
        if (CUDA_CHECK(call) != MB_OK) return MB_ERUN;                                           \
    } while (0)

#endif
