/* protocol_int.h — the measurement protocol's contract with its backends,
 * shared by the files of measure/ (and its white-box test) and no one else.
 * protocol.c runs warm-up, checks, sampling, the stop rule and the row's
 * statistics once; a backend (cpu_run.c, cuda_ops.cu) only prepares,
 * poisons, flushes, runs one timed sample and brings results back for the
 * checks. Plain C; compiles under nvcc; includes no CUDA header. */
#ifndef MB_PROTOCOL_INT_H
#define MB_PROTOCOL_INT_H

#include "kernels.h"
#include "measure.h"

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One row in flight. The protocol fills the first block; the backend's
 * prepare fills the second (and row's device, backend and counters). */
typedef struct mb_meas_row_run {
    const mb_plan *p;
    int64_t n;
    const mb_meas_config *c;
    mb_meas_record *row;        /* from mb_meas_record_init */
    mb_meas_record *per_kernel; /* p->n_kernels records, or NULL */

    mb_kern_tensors *host;      /* host tensors the gradient check reads:
                                   current after every check op */
    int once;                   /* 1: no warm-up, exactly one timed sample,
                                   checked (runs under external profilers) */
    void *be;                   /* the backend's own state */
} mb_meas_row_run;

/* One timed sample, as a backend took it. */
typedef struct mb_meas_sample {
    double total_s;   /* the plan's time */
    double *kernel_s; /* p->n_kernels entries (the protocol's buffer): each
                         kernel's time within the same sample */
    int valid;        /* 0: the sample is dropped and taken again */
    int contended;    /* 1 / 0 (mb_meas_contention_end); -1: not watched */
} mb_meas_sample;

/* A backend: its checks' poison reps and the operations the protocol calls,
 * in this order:
 *   prepare; [poison(early_rep); warm; check(early_rep)]; warm...;
 *   { [poison(final_rep)]; [flush]; sample } until the stop rule;
 *   check(final_rep); [extra_check]; [after_timing]; release.
 * Every op returns MB_OK or an error code with err filled; a failed check
 * is not an error (ck->passed = 0). */
typedef struct mb_meas_ops {
    const char *name;           /* "cpu", "cuda" */
    unsigned early_rep;         /* poison of the check after the first run */
    unsigned final_rep;         /* poison written before the last sample */
    int64_t early_check_max_n;  /* the check after the first run only up to
                                   this n (<= 0: every n) */
    /* Allocates what the row needs (r->be), uploads inputs, fills row's
     * device, backend and counters columns, r->host and r->once. */
    int (*prepare)(mb_meas_row_run *r, mb_err *err);
    /* Fills every output with the poison of rep (outside any timed region). */
    int (*poison)(mb_meas_row_run *r, unsigned rep, mb_err *err);
    /* One untimed run of the plan, finished. */
    int (*warm)(mb_meas_row_run *r, mb_err *err);
    /* Evicts the caches before a cold sample (outside the timed region). */
    int (*flush)(mb_meas_row_run *r, mb_err *err);
    /* One timed run of the plan into s. */
    int (*sample)(mb_meas_row_run *r, mb_meas_sample *s, mb_err *err);
    /* Brings the results to r->host and compares them with the float64
     * reference (every element, or a sample: the backend's choice). */
    int (*check)(mb_meas_row_run *r, unsigned rep, mb_kern_check *ck, mb_err *err);
    /* May be NULL. A backend's own check after the gradient check: *ok = 0
     * and msg (one line) when it fails. */
    int (*extra_check)(mb_meas_row_run *r, int *ok, char *msg, size_t msgsz, mb_err *err);
    /* May be NULL. After the row's statistics are in: clocks, peak checks,
     * counted runs. */
    int (*after_timing)(mb_meas_row_run *r, mb_err *err);
    /* Frees r->be; called once after prepare, failed or not, with the row's
     * status (rc != MB_OK: the row failed). */
    void (*release)(mb_meas_row_run *r, int rc);
} mb_meas_ops;

extern const mb_meas_ops mb_meas_cpu_ops;  /* cpu_run.c */
extern const mb_meas_ops mb_meas_cuda_ops; /* cuda_ops.cu, or cuda_absent.c */

/* The protocol: runs plan p at n elements through ops under config c and
 * fills row's timing and check columns (per_kernel's too when non-NULL).
 * Warm-up: c->warmup runs (at least 1; none when r->once), the first on
 * poisoned outputs and checked (up to ops->early_check_max_n). Samples until
 * mb_meas_should_stop (or max_reps), each after ops->flush when c->cold;
 * invalid samples are dropped and taken again. The last sample runs on
 * outputs poisoned with final_rep and is checked; backward plans also pass
 * mb_kern_gradcheck on r->host. A failed check sets verified = 0, why
 * (whysz bytes, may be NULL) gets the first failure, and MB_OK is returned.
 * *c->stop set: MB_ERUN "interrupted". Other errors: the op's code and err. */
int mb_meas_protocol_run(const mb_meas_ops *ops, const mb_plan *p, int64_t n, const mb_meas_config *c,
                         mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                         mb_err *err);

/* Reports one line through c->note at level "note" (dropped when c->quiet)
 * or "warning" (always). Nothing when c or c->note is NULL. */
#define MB_MEAS_NOTE "note"
#define MB_MEAS_WARNING "warning"
void mb_meas_note(const mb_meas_config *c, const char *level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void mb_meas_vnote(const mb_meas_config *c, const char *level, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 0)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
