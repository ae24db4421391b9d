/* cuda_int.h — the CUDA backend's shared state and helpers, for its own
 * files and no other: cuda_session.cu (the device, clocks, L2 flush, timed
 * samples, calibrate's probe timing, provenance), cuda_counters.cu (CUPTI,
 * the sanity gate, counted runs), cuda_ops.cu (the protocol's ops).
 * Host code; includes cuda_runtime.h, so only .cu files include it. */
#ifndef MB_CUDA_INT_H
#define MB_CUDA_INT_H

#include "kernels_cuda.h"
#include "mb_cupti.h"
#include "protocol_int.h"

#include <cuda_runtime.h>

/* State of the counters for the process. */
enum { MB_GPU_CNT_NOT_TRIED = 0, MB_GPU_CNT_TRUSTED, MB_GPU_CNT_UNTRUSTED, MB_GPU_CNT_UNAVAILABLE };

/* Launches queued behind the blocking kernel at most (measure.h says why).
 * Plans with more kernels are timed without the block (their launches then
 * overlap the running kernels anyway). */
#define MB_BLOCK_MAX_LAUNCHES MB_MEAS_GPU_MAX_QUEUED

typedef struct mb_gpu_clocks {
    double sm_mhz, mem_mhz;
    const char *source; /* "nvml" or "clock64" (memory clock then: peak attribute) */
} mb_gpu_clocks;

/* The session: one device per process, opened by the first call
 * (mb_gpu_open), reached through the handle it returns: the backend's
 * files hold no global of it. */
typedef struct mb_gpu_session {
    int state; /* 0 not opened, 1 ready, -1 failed (why) */
    char why[512];
    mb_kern_cuda_device dev;
    char pci[32];
    cudaStream_t stream;
    void *flush;       /* 2x L2, memset before every timed sample and counted range */
    void *clean;       /* 2x L2, read after the memset (leaves L2 holding clean lines) */
    void *drain;       /* 2x L2, read at the end of a counted plan range */
    int64_t l2x2_bytes;
    double drain_read_bytes, drain_write_bytes; /* counted drain-only range (subtracted) */
    float *sink;
    volatile int *flag; /* host-mapped: releases the blocking kernel */
    int *flag_dev;
    volatile int *timed_out;
    int *timed_out_dev;
    int use_block;
    unsigned flush_seq;
    int sampled_noted;
    /* counters */
    int cnt;            /* MB_GPU_CNT_* */
    char cnt_text[160]; /* the CSV's counters column for trusted/untrusted/unavailable */
    char gate[640];     /* the sanity gate's result, for provenance */
    int row_gate;       /* the row gate (cuda_counters.cu): 0 not run, 1 ok, -1 off */
    char row_gate_why[120]; /* off: the counters column of 2-D rows */
    mb_cupti *cupti;
    double count_s;     /* wall time spent in counted runs (CUPTI overhead included) */
    int count_rows;
    /* clocks seen at row starts and ends */
    double sm_min, sm_max, mem_min, mem_max;
    const char *clock_source;
    int rows;
} mb_gpu_session;

/* cuda_session.cu */

/* The session of device c->cuda_device, opened once per process (blocking
 * kernel per c->cuda_block): the handle every other call takes; NULL with
 * err when it cannot be opened (a failure is kept and reported again by
 * every later call). */
mb_gpu_session *mb_gpu_open(const mb_meas_config *c, mb_err *err);
/* SM and memory clocks now; mb_gpu_clocks_seen widens the session's range. */
int mb_gpu_clocks_read(mb_gpu_session *gs, mb_gpu_clocks *ck);
void mb_gpu_clocks_seen(mb_gpu_session *gs, const mb_gpu_clocks *ck);
/* L2 left holding only clean lines of other data (outside any timed region). */
int mb_gpu_clean_l2(mb_gpu_session *gs, mb_err *err);
/* One timed sample of nk kernels of cp between events ev[0..nk] (behind the
 * blocking kernel when enabled): kernel_s[k] and *total_s in seconds; *valid
 * 0 when the block timed out (the block is then off for the session). */
int mb_gpu_timed_sample(mb_gpu_session *gs, const mb_meas_config *c, mb_kern_cuda_plan *cp, cudaEvent_t *ev, int nk,
                        double *kernel_s, double *total_s, int *valid, mb_err *err);

/* cuda_counters.cu */

/* Opens CUPTI and runs the drain baseline and the sanity gate, once per
 * process; failures leave counters unavailable with one note. */
void mb_gpu_counters_open(mb_gpu_session *gs, const mb_meas_config *c);
/* After a row's timing: its counted DRAM bytes (and per kernel's when
 * per_kernel asked for them), or why there are none, into row->counters. */
void mb_gpu_count_row(mb_gpu_session *gs, const mb_meas_config *c, mb_kern_cuda_plan *cp, int nk, mb_meas_record *row,
                      mb_meas_record *per_kernel);
/* 1, with a warning, when bytes over time_s exceed the peak (count_check.c). */
int mb_gpu_above_peak(mb_gpu_session *gs, const mb_meas_config *c, const char *what, const mb_meas_record *row, double read,
                      double write, int warm, double time_s, double slack);

#endif
