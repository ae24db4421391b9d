/* meas_admit.h — before and after the rows: what a host can hold, the
 * jobs a run admits, the host check against the calibration and the
 * warnings a row earns. Does not time (meas_run.h). */
#ifndef MB_MEAS_ADMIT_H
#define MB_MEAS_ADMIT_H

#include "meas_run.h"
#include "meas_hostref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- admission, the host check and row warnings ----------------------------- */

/* This host's memory from /proc/meminfo ("MemAvailable", "MemTotal"), bytes;
 * -1 when unknown. */
int64_t mb_meas_host_memory_bytes(const char *key);

/* The CPU's last-level cache as c evicts it: c->llc_bytes, else detected. */
int64_t mb_meas_llc_bytes(const mb_meas_config *c);

/* The settings a model device gives the run: a calibrated CPU spec (kind
 * cpu, cache_mb > 0) on the CPU backend knows the cache this process gets
 * (the measured knee; a guest may report far more), so it sizes the flush
 * between samples (c->llc_bytes) unless that was set. */
void mb_meas_config_for_device(mb_meas_config *c, mb_meas_backend b, const mb_device *dev);

/* Host memory a CPU row of plan p at n takes: the executor's peak under
 * c->exec plus the flush buffer (2x the cache). */
int64_t mb_meas_host_need_bytes(const mb_plan *p, int64_t n, const mb_meas_config *c);

/* One row to run: a variant's graph (borrowed), a plan, a size. */
typedef struct mb_meas_job {
    mb_graph *g;
    mb_plan_kind plan;
    int64_t n;
    int64_t host_bytes; /* mb_meas_host_need_bytes */
    int64_t cols;       /* 2-D jobs: the row length (rows = n / cols); 0 for 1-D */
} mb_meas_job;

/* Admits every job before any runs. CPU: each row's host_bytes against
 * avail_bytes (MemAvailable, <= 0: unknown). CUDA: the plan's device tensors
 * against the GPU's free memory less MB_MEAS_CUDA_MARGIN_BYTES, and against
 * the host's MemTotal (the checks' host copies); more than MemAvailable is a
 * note (a VM's memory grows on demand), once. MB_EINPUT naming the first row
 * that does not fit ("copy eager f32 at n = 2^30 needs 8.59 GB of memory,
 * ...: use a smaller --sizes"); MB_ERUN when the GPU cannot say. */
int mb_meas_admit_jobs(mb_meas_backend b, const mb_meas_config *c, const mb_meas_job *jobs,
                       int n_jobs, int64_t avail_bytes, mb_err *err);

/* The host's copy bandwidth against a calibrated CPU spec's
 * (host_ref_copy_gbs), before and after the rows: the model columns assume
 * the calibrated figure. */
typedef struct mb_meas_hostcheck {
    mb_meas_hostref href;
    int on;                 /* 1: the checks run (a CPU spec with a host reference) */
    double calibrated_gbs;  /* the spec's host_ref_copy_gbs */
    double before_gbs, after_gbs; /* 0 until measured */
    double worst_ratio;     /* after: the one farther from 1 of before and after
                               over calibrated; 1 until then */
} mb_meas_hostcheck;

/* Before the rows: when b is the CPU and dev a calibrated CPU spec with a
 * host reference, sets up the reference (arrays for a cache of llc_bytes),
 * times the copy (before_gbs) and sets c->hostref (the rows time it again
 * beside their samples). Notes through c->note: no reference in the spec,
 * the reference could not be set up (the rows still run), the figure. */
void mb_meas_hostcheck_begin(mb_meas_hostcheck *h, mb_meas_backend b, const mb_device *dev,
                             mb_meas_config *c, int64_t llc_bytes);

/* After the rows: times the copy again (after_gbs, worst_ratio); warns when
 * worst_ratio is more than MB_MEAS_DRIFT_MAX off 1, else notes the figure.
 * 1 when both figures are there (for the CSV's '# host_check:' line), else 0. */
int mb_meas_hostcheck_end(mb_meas_hostcheck *h, const mb_meas_config *c);
void mb_meas_hostcheck_free(mb_meas_hostcheck *h);

/* What measure says of one measured row, through c->note: contended samples
 * (noisy), a host that drifted during it, samples in two modes, an achieved
 * bandwidth above the calibrated roof (CPU spec, row > 4x the cache), and for
 * the first row (first != 0) a size below 4x the cache. Returns
 * the MB_MEAS_ROW_* flags that apply; with c->row_details 0 it says nothing
 * of them (the caller sums them up), only the cache-resident note. */
#define MB_MEAS_ROW_NOISY 1
#define MB_MEAS_ROW_DRIFTED 2
#define MB_MEAS_ROW_TWO_MODES 4
#define MB_MEAS_ROW_ABOVE_ROOF 8
int mb_meas_row_warn(const mb_meas_record *row, const mb_device *dev, mb_meas_backend b,
                     int64_t llc_bytes, int first, const mb_meas_config *c);

/* "2^24" when n is a power of two, else the number; buf returned. */
const char *mb_meas_fmt_n(int64_t n, char *buf, size_t bufsz);
/* A row's size: "2^12x2^10" (each side as mb_meas_fmt_n) for a 2-D row of
 * cols > 0 columns, else mb_meas_fmt_n(n); buf returned. */
const char *mb_meas_fmt_size(int64_t n, int64_t cols, char *buf, size_t bufsz);
/* The same as a label: "n = 2^24" (1-D), "shape 2^12x2^10" (2-D); buf returned. */
const char *mb_meas_fmt_at(int64_t n, int64_t cols, char *buf, size_t bufsz);

/* "copy 78%, ops 65%": a row's host ratios as percentages of the calibrated
 * figures (those it has); buf returned. */
const char *mb_meas_host_ratios(const mb_meas_record *r, char *buf, size_t bufsz);

#ifdef __cplusplus
}
#endif
#endif
