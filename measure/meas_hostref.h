/* meas_hostref.h — the host reference: calibrate's copy and op probes
 * timed again beside measure's rows, to tell a shared host's drift from
 * the model's error. Does not judge the rows (meas_admit.h). */
#ifndef MB_MEAS_HOSTREF_H
#define MB_MEAS_HOSTREF_H

#include "meas_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- host reference ------------------------------------------------------- */

/* The ops of the host reference's compute probe (hostref.c): two of the
 * lecture's costly ones, whose rates drift apart (between two calibrations
 * here sigmoid moved 34-39%, sin 12-18%); a row's host_op_ratio is the one
 * farther from 1. */
#define MB_MEAS_HOSTREF_N_OPS 2


/* f32 elements of each of calibrate's bandwidth arrays for a cache of
 * llc_bytes (the STREAM rule: >= 4x the cache, 2^25..2^27; quick: a smoke
 * test's 16 MiB at most). A multiple of 64. */
int64_t mb_meas_stream_elements(int64_t llc_bytes, int quick);

/* dst[i] = src[i] with non-temporal stores, in parallel over the current
 * threads: the copy calibrate times for the spec's copy bandwidth. src and
 * dst 64-byte aligned, n a multiple of 64. */
void mb_meas_copy_nt(float *dst, const float *src, int64_t n);

/* The host reference: a copy of calibrate's bandwidth arrays that follows a
 * copy, and its op-rate probe of one op, timed by calibrate once a round
 * (the spec's host_ref_copy_gbs, host_ref_sin_geps and host_ref_sigmoid_geps) and by measure before
 * and after its rows and beside each row's samples (the protocol, when
 * c->hostref is set): a shared host drifts (10-60% over minutes on a 2-vCPU
 * guest here), and the model columns assume the calibrated figures. */
typedef struct mb_meas_hostref {
    float *src, *dst;
    int64_t n;             /* elements of each array */
    double calibrated_gbs; /* the spec's host_ref_copy_gbs */
    double calibrated_op_geps[MB_MEAS_HOSTREF_N_OPS]; /* the spec's host_ref_sin_geps
                              and host_ref_sigmoid_geps; <= 0: no such reference */
    double interval_s;     /* within a row, a reference at most this often
                              (and before the first and the last sample) */
} mb_meas_hostref;

/* Within a row, a reference before the first sample, before the last and at
 * most every half second between: two 256 MiB copies (~18 ms) and the op
 * probe (~1 ms) cost ~4% of a long row. */
#define MB_MEAS_HOSTREF_INTERVAL_S 0.5
/* And before sample 5 and every 50th: a row has three references at least,
 * spread over its samples, so that one probe the host slowed for a moment
 * (a 2^18 row matched the calibrated model within 10% while the median of
 * its two op probes said 41%) does not set its ratios; ~80 ms on a row of
 * 200 short samples. */
#define MB_MEAS_HOSTREF_SAMPLE_A 5
#define MB_MEAS_HOSTREF_EVERY 50

/* 1 when a row's host reference is due before its sample ns (0-based), the
 * last when last, seconds_since the previous reference. */
int mb_meas_hostref_due(int ns, int last, double seconds_since, double interval_s);
/* References a row keeps (a longer row's later ones replace its last). */
#define MB_MEAS_HOSTREF_MAX 64
/* The ops of the compute reference (MB_MEAS_HOSTREF_N_OPS, above) */
extern const mb_op mb_meas_hostref_ops[MB_MEAS_HOSTREF_N_OPS]; /* sin, sigmoid */
#define MB_MEAS_HOSTREF_OP_ROUNDS 4000

/* Allocates two arrays of n f32 (use mb_meas_stream_elements: the figure is
 * calibrate's only at its sizes), first-touches them in parallel and copies
 * once (warm). MB_ERUN when memory runs out. */
int mb_meas_hostref_init(mb_meas_hostref *h, int64_t n, double calibrated_gbs, mb_err *err);
/* One untimed copy, then one timed (taken again, twice at most, while the
 * process did not get its cores): the bytes read and written per second,
 * 1e9/s. */
double mb_meas_hostref_copy_gbs(mb_meas_hostref *h);
/* The median of reps (1..16) such copies, 1e9/s. */
double mb_meas_hostref_median_gbs(mb_meas_hostref *h, int reps);
/* One timed run of the op-rate probe of mb_meas_hostref_ops[i] (~1 ms; taken
 * again, twice at most, while contended): elements per second, 1e9/s. */
double mb_meas_hostref_op_geps(int i);
void mb_meas_hostref_free(mb_meas_hostref *h);

/* calibrate's op-rate probe: op over an L1-resident tile of MB_KERN_TILE
 * elements, rounds times, on every thread (the executors' per-op code);
 * returns the elements evaluated. */
double mb_meas_op_rate_run(mb_op op, int64_t rounds);
/* The median of n rates (those > 0, up to MB_MEAS_HOSTREF_MAX), as the rate
 * of the median time; 0 when none is > 0. */
double mb_meas_median_rate(const double *rates, int n);

/* A host reference out of this band (ratio to the calibrated figure) is
 * warned: before or after the rows, and row by row (MB_MEAS_DRIFTED). */
#define MB_MEAS_DRIFT_MAX MB_MEAS_HOST_DRIFT_MAX

#ifdef __cplusplus
}
#endif
#endif
