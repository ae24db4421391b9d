/* measure.h — the measurement harness: timing protocol (warm-up, >= 10
 * samples, noise-based stop, optional LLC eviction between samples), result
 * checks against the float64 reference, measurement records and their CSV,
 * and the backend switch (the protocol once in protocol.c; the CPU backend in
 * cpu_run.c, the CUDA backend in cuda_*.cu). Library code reports through the
 * config's note callback and reads no environment variable (the CLI does,
 * mb_meas_config_env). It does not choose variants or sizes (the CLI does)
 * and does not fit or plot (reports/). Builds without GSL and gnuplot. The
 * CLI reaches kernels/ through this header only: it does not include
 * kernels.h (layers look down one at a time). */
#ifndef MB_MEASURE_H
#define MB_MEASURE_H

/* One header per topic; a file that needs one topic may include it alone.
 *   meas_config.h    backends, settings, notes
 *   meas_record.h    records and sample statistics
 *   meas_timing.h    contention, the sample timer, cache eviction
 *   meas_run.h       running a row; the CUDA session's probe timing
 *   meas_hostref.h   the host reference
 *   meas_admit.h     admission, the host check, row warnings
 *   meas_csv.h       the CSV writer
 *   meas_gemm.h      timing one GEMM on the CPU
 *   meas_attn.h      attention's CPU plans timed */
#include "meas_config.h"
#include "meas_record.h"
#include "meas_timing.h"
#include "meas_run.h"
#include "meas_hostref.h"
#include "meas_admit.h"
#include "meas_csv.h"
#include "meas_gemm.h"
#include "meas_attn.h"

#endif
