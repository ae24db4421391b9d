/* meas_record.h — what a run gives back: one record per row (and per
 * kernel), and the statistics of its samples. Does not write them (the CSV:
 * meas_csv.h). */
#ifndef MB_MEAS_RECORD_H
#define MB_MEAS_RECORD_H

#include "meas_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- records ----------------------------------------------------------------- */

/* One CSV row: variant x plan x dtype x n x backend (or one kernel of it).
 * Model columns come from mb_estimate_plan on the model device; measured DRAM
 * bytes are -1 (written empty) where no counters ran, and counters says why:
 * "cupti", "none-cpu" or "unavailable: <reason>". */
typedef struct mb_meas_record {
    char device[128];        /* what ran it: CPU model or GPU name */
    char backend[16];        /* "cpu" or "cuda"; imported rows "cuda-ncu", "cuda-torch" */
    char variant[MB_NAME_MAX];
    char plan[16];
    char dtype[8];
    int64_t n;
    int kernels;
    int reps;                /* timed samples */
    double time_s_median, time_s_min, time_s_p90, time_cv;
    double model_time_s;     /* model's prediction on the model device */
    int64_t read_bytes, write_bytes;                 /* model, the lecture's count */
    int64_t model_dram_read_bytes, model_dram_write_bytes;
    int64_t dram_read_bytes, dram_write_bytes;       /* measured, -1 = none */
    char counters[160];
    double max_rel_err;      /* max relative error of the results against the
                                float64 reference (see mb_kern_verify) */
    int verified;            /* 1 passed (results within tolerance, nothing left
                                poisoned, and for backward plans the
                                finite-difference gradient check); 0 failed:
                                the row is kept and flagged, never dropped */
    char kernel[MB_NAME_MAX];/* per-kernel rows: kernel name; "" for plan rows */
    char model_device[MB_NAME_MAX]; /* device the model columns use (provenance) */
    int contended;           /* timed samples during which the process did not get
                                its cores (mb_meas_contention_end); -1 = not
                                watched (written empty) */
    double host_copy_gbs;    /* the host reference copy during the row (median of
                                its copies beside the samples); NAN = none */
    double host_copy_ratio;  /* host_copy_gbs / the calibrated copy bandwidth the
                                model columns assume; NAN = none */
    double host_op_ratio;    /* the op reference (sin, L1) during the row over the
                                calibrated rate; NAN = none */
    double model_host_time_s;/* the model at the host's rates during the row
                                (mb_meas_record_host_model); NAN = none */
    double time_s_lower_mode;/* samples in two modes (mb_meas_stats): the lower
                                one's median; NAN = one mode */
    double time_s_upper_mode;/* the upper one's median; NAN = one mode */
    double upper_mode_share; /* the share of samples in it; NAN = one mode */
    double count_err;        /* counted DRAM bytes / the model's - 1 (GPU rows
                                with counts, MB_MEAS_CSV_COUNT_COLUMNS); NAN = none */
    char count_check[16];    /* mb_meas_count_verdict_name: "ok", "off",
                                "below 4x L2", "" */
    int64_t rows, cols;      /* 2-D rows: the shape (n = rows x cols); 0, 0 for
                                1-D (MB_MEAS_CSV_SHAPE_COLUMN) */
    char accuracy[12];       /* mb_kern_accuracy_name of the row's checks: "ok",
                                "inaccurate" (verified, off float64 as correct f32
                                evaluation is), "failed"; "" unchecked
                                (MB_MEAS_CSV_ACCURACY_COLUMN) */
    char dims[256];          /* named dimensions' sizes, mb_graph_dims_text
                                (MB_MEAS_CSV_DIMS_COLUMN); "" none */
    char calibration[16];    /* mb_cal_mark of the model device:
                                "full", "quick", "fallback", "stale", ""
                                (MB_MEAS_CSV_CALIBRATION_COLUMN) */
} mb_meas_record;

/* Fills the identity and model columns of row (and of per_kernel[k] for each
 * kernel when per_kernel is non-NULL, plan->n_kernels entries) from plan p at n
 * on model device dev; timing columns zeroed, dram -1, verified 0. */
int mb_meas_record_init(mb_meas_record *row, mb_meas_record *per_kernel, const char *variant,
                        const mb_plan *p, int64_t n, const mb_device *dev, mb_err *err);
/* The same at a shape: a rank-2 shape sets rows and cols, and the run
 * (mb_meas_run) sizes its tensors by it. */
int mb_meas_record_init_shape(mb_meas_record *row, mb_meas_record *per_kernel, const char *variant,
                              const mb_plan *p, mb_shape shape, const mb_device *dev, mb_err *err);
/* The shape of a record: rank 2 when it has rows and cols, else 1-D n. */
mb_shape mb_meas_record_shape(const mb_meas_record *r);

/* Fills model_host_time_s of row (and of per_kernel[k], as above) after the
 * row was measured: the model of plan p at n on dev at row's host_copy_ratio
 * and host_op_ratio (mb_device_at_rates; MB_MEAS_CSV_HOST_MODEL_COLUMN).
 * Leaves NAN where either ratio is not a positive number (no host reference). */
int mb_meas_record_host_model(mb_meas_record *row, mb_meas_record *per_kernel, const mb_plan *p,
                              int64_t n, const mb_device *dev, mb_err *err);

/* ---- sample statistics ------------------------------------------------------- */

typedef struct mb_meas_stats {
    int n;
    double median_s, min_s, p90_s, mean_s, cv; /* cv = stdev / mean (sample stdev) */
    /* two modes (MB_MEAS_CSV_MODES_COLUMNS): the medians of the samples below
     * and above the split and the share above it; NAN, NAN, 0 for one mode */
    double lower_mode_s, upper_mode_s, upper_mode_share;
} mb_meas_stats;

/* Statistics of n samples (seconds); samples are not modified. n >= 1.
 * Two modes: the sorted samples split at their largest relative step among
 * those that leave at least a fifth of the samples (and 3) on each side; a
 * split counts when n >= 10, that step is at least 10% and 4x the median
 * step, and the upper side's median is 20% above the lower side's. (2-vCPU
 * EPYC guest, an interpreted kernel at 2^25 on two threads: about half its
 * samples 25-45% above the others, a row's median on either; one thread,
 * one mode: bench/store_policy.c.) */
void mb_meas_stats_compute(const double *samples, int n, mb_meas_stats *out);

/* 1 when sampling should stop: n >= min_reps and ((cv <= max_cv and
 * elapsed >= min_time_s) or n >= max_reps or elapsed >= timeout_s). */
int mb_meas_should_stop(const mb_meas_config *c, const double *samples, int n,
                        double elapsed_s);

/* Monotonic clock in seconds. */
double mb_meas_now_s(void);

#ifdef __cplusplus
}
#endif
#endif
