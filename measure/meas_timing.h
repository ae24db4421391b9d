/* meas_timing.h — the timing primitives below the protocol: telling a
 * contended sample, the one sample timer, evicting the cache between
 * samples. Does not decide how many samples a row takes (protocol.c). */
#ifndef MB_MEAS_TIMING_H
#define MB_MEAS_TIMING_H

#include "meas_record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- contention ------------------------------------------------------------- */

/* Share of a sample's wall time its threads may wait for a CPU before the
 * sample is flagged. 10%: a sample that lost that much is off by about as
 * much, five times the 2% spread the stop rule aims for. */
#define MB_MEAS_CONTENTION_FRAC 0.10

/* What the host did to this process during one sample: begin fills the
 * counters, end turns them into deltas. */
typedef struct mb_meas_contention {
    int64_t run_delay_ns; /* begin: schedstat run_delay sum, -1 = unavailable */
    double waited_s;      /* end: time the threads were runnable but not running */
    double steal_s;       /* end: host steal time, this process's share */
    double cpu_s;         /* end: process CPU time */
    long nivcsw;          /* end: involuntary context switches */
    double wall_s;        /* end: the sample's wall time, as given */
    int have_schedstat;   /* end: 1 when waited_s was measured */
} mb_meas_contention;

/* Reads the counters before a sample (outside the timed region: tens of us). */
void mb_meas_contention_begin(mb_meas_contention *s);

/* Deltas since begin for a sample of wall_s seconds run on threads threads;
 * returns 1 when the sample is contended: waited + steal > frac x wall_s
 * (frac <= 0: MB_MEAS_CONTENTION_FRAC), or, without schedstat, more than one
 * involuntary context switch per 10 ms. */
int mb_meas_contention_end(mb_meas_contention *s, double wall_s, int threads, double frac);

/* 1 when more than a fifth of a row's samples were contended: the row is
 * marked noisy: measure warns, report shows it and fits it not (MB_MEAS_NOISY). */
int mb_meas_row_noisy(const mb_meas_record *r);

/* ---- one timed sample -------------------------------------------------------- */

typedef void (*mb_meas_fn)(void *ctx);

/* One sample: calls x fn(ctx), wall time; taken again, up to retries times,
 * while the process did not get its threads cores (mb_meas_contention). before
 * (may be NULL) runs untimed ahead of each attempt (a cache flush). The one
 * sample timer of calibrate's probes, the cache knee and the host reference. */
typedef struct mb_meas_sampler {
    mb_meas_fn fn;
    void *ctx;
    mb_meas_fn before;
    void *before_ctx;
    int calls;
    int threads;
    int retries;
} mb_meas_sampler;

/* Seconds per call of the sample kept (the last attempt's). *contended (may be
 * NULL) gets 1 when that sample was contended; *retaken (may be NULL) counts
 * the attempts taken again. */
double mb_meas_sample_s(const mb_meas_sampler *s, int *contended, int *retaken);

/* ---- cache eviction ---------------------------------------------------------- */

/* A buffer that evicts the CPU's last-level cache: 2x LLC, written once with
 * non-zero data, then read in full (clean lines) by mb_meas_flush_cpu. */
typedef struct mb_meas_flusher {
    float *buf;
    int64_t n;
    volatile float sink;
} mb_meas_flusher;

int mb_meas_flusher_init(mb_meas_flusher *f, int64_t llc_bytes, mb_err *err);
void mb_meas_flush_cpu(mb_meas_flusher *f);
void mb_meas_flusher_free(mb_meas_flusher *f);

#ifdef __cplusplus
}
#endif
#endif
