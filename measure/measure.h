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

#include "membound_model.h"

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- backends ---------------------------------------------------------------- */

typedef enum mb_meas_backend {
    MB_MEAS_AUTO = 0, /* CUDA when mb_meas_cuda_available, else CPU */
    MB_MEAS_CPU,
    MB_MEAS_CUDA,
    MB_MEAS_BACKEND_COUNT
} mb_meas_backend;

const char *mb_meas_backend_name(mb_meas_backend b);          /* "auto", "cpu", "cuda" */
int mb_meas_backend_parse(const char *s, mb_meas_backend *out); /* MB_OK or MB_EINPUT */

/* ---- settings ---------------------------------------------------------------- */

/* Which CUDA implementation runs each kernel of a plan. */
typedef enum mb_meas_cuda_impl {
    MB_MEAS_CUDA_IMPL_AUTO = 0, /* hand-written kernels where they match, else per-op / evaluator */
    MB_MEAS_CUDA_IMPL_EVAL,     /* every kernel through the fused-kernel evaluator */
    MB_MEAS_CUDA_IMPL_NOHAND,   /* per-op kernels and the evaluator only */
    MB_MEAS_CUDA_IMPL_COUNT
} mb_meas_cuda_impl;

/* How one row is measured. mb_meas_config_default fills the protocol's defaults. */
typedef struct mb_meas_config {
    int warmup;            /* untimed runs before sampling (>= 1; default 2) */
    int min_reps;          /* samples at least (>= 10; default 10) */
    int max_reps;          /* samples at most (default 200) */
    double max_cv;         /* stop once CV <= max_cv after min_reps (default 0.02) */
    double min_time_s;     /* and once this much time was sampled (default 0.2) */
    double timeout_s;      /* stop sampling after this long even if noisy (default 10) */
    int cold;              /* 1: evict the last-level cache before every sample,
                              outside the timed region (default 1) */
    int64_t llc_bytes;     /* cache size to evict; <= 0: detect (CPU: mb_kern_llc_bytes) */
    int64_t nt_min_bytes;  /* CPU: written tensors this large or larger are streamed
                              (the model's spec: llc_bytes, or one byte more for a
                              spec without stream_at_cache_size); <= 0: llc_bytes */
    int exec;              /* CPU executor, an mb_kern_exec (mb_meas_exec_parse;
                              default 0, auto) */
    int threads;           /* CPU threads, <= 0: all cores */
    int check;             /* 1: poison outputs, verify against float64 (default 1) */
    double tol;            /* relative tolerance, <= 0: mb_kern_default_tol */
    int gradcheck_points;  /* finite-difference points for backward plans (default 64) */
    int counters;          /* CUDA: 1 to collect CUPTI DRAM bytes in a separate run */
    int quiet;             /* 1: notes are dropped (warnings still reach note) */
    int row_details;       /* 1 (default): mb_meas_row_warn says what it finds of
                              each row; 0: it only returns the flags (the caller
                              prints one summary line per kind) */
    double contention_frac;/* a sample is contended when its threads waited for a
                              CPU (or were stolen) longer than this share of its
                              wall time; <= 0: MB_MEAS_CONTENTION_FRAC */
    struct mb_meas_hostref *hostref; /* may be NULL; else (CPU, cold) the host
                              reference copy and op probe are timed beside the
                              row's samples (outside the timed region) into the
                              row's host_copy_gbs, host_copy_ratio, host_op_ratio */
    const volatile sig_atomic_t *stop; /* may be NULL; non-zero (a signal
                              handler sets it): the protocol stops sampling and
                              returns MB_ERUN "interrupted", no row */
    /* Where the library reports: one line per call, level "note" (progress,
     * fallbacks; dropped when quiet) or "warning" (a number that cannot be
     * true). NULL: nothing is reported. ctx is passed back. */
    void (*note)(void *ctx, const char *level, const char *msg);
    void *note_ctx;
    /* CUDA backend (the CLI sets these from the environment: mb_meas_config_env) */
    int cuda_device;       /* device ordinal (default 0); the first CUDA call of the
                              process opens it, later ones use the same */
    int cuda_block;        /* 1: samples queued behind a blocking kernel, so launch
                              latency is not timed (default 1; the session's first
                              call decides) */
    int cuda_once;         /* 1: each plan runs exactly once (no warm-up, one timed,
                              checked run, no blocking kernel, no counters), for
                              external profilers that replay every launch */
    mb_meas_cuda_impl cuda_impl; /* kernel implementations (default AUTO) */
    int cupti_disabled;    /* 1: CUPTI is not opened (counters "unavailable:
                              disabled by MB_CUPTI=0"), e.g. under ncu */
    int cupti_kernel_clean;/* 1: per-kernel counts each start from a clean L2 (one
                              counted run per kernel, as ncu --cache-control all);
                              0: one run, each kernel in the plan's cache state */
} mb_meas_config;

void mb_meas_config_default(mb_meas_config *c);

/* The CPU executor named s ("auto", "opwise", "blocked": kernels/' list) into
 * *exec (mb_meas_config.exec): MB_OK, or MB_EINPUT with the names in err. */
int mb_meas_exec_parse(const char *s, int *exec, mb_err *err);
const char *mb_meas_exec_name(int exec); /* "auto", ...; "?" out of range */

/* The environment the layers below use, read once through lookup (the CLI
 * passes getenv; NULL: none set), process-wide: the compiled-kernel cache's
 * $XDG_CACHE_HOME and $HOME, the compiler it runs ($MEMBOUND_JIT_CC, a path
 * or a name on $PATH; default the one that built membound) and that
 * compiler's deadline ($MEMBOUND_JIT_TIMEOUT_S, default 60) (kernels/ reads
 * no environment variable). */
void mb_meas_set_env(char *(*lookup)(const char *name));

/* Where a refused compiled-kernel cache (kernels/' run-time compiler) says
 * why, one line per refusal (NULL: nowhere). Process-wide. */
void mb_meas_set_jit_warn(void (*warn)(const char *line));

/* Why kernels are not compiled at run time on this host (no C compiler, a
 * refused cache, ...), or NULL when they are; and the vector ISA of the
 * executors' math ("avx2", "scalar", ...). Static strings. */
const char *mb_meas_jit_why_not(void);
const char *mb_meas_vector_isa(void);

/* Sets c's fields from the environment variables the harness documents
 * (MB_CUDA_DEVICE, MB_CUDA_NO_BLOCK, MB_CUDA_ONCE, MB_CUDA_IMPL, MB_CUPTI,
 * MB_CUPTI_KERNEL_CLEAN): lookup(name) gives a variable's value or NULL
 * (the CLI passes getenv). A value that does not parse leaves its field as
 * it was, with a warning through c->note. */
void mb_meas_config_env(mb_meas_config *c, char *(*lookup)(const char *name));

/* Writes an "environment:" paragraph for --help: one line per variable. */
void mb_meas_env_usage(FILE *fp);

/* The note callback of a config or a spec request: one line per call. */
typedef void (*mb_meas_note_cb)(void *ctx, const char *level, const char *msg);

/* Formats fmt with ap (at most 1600 bytes, cut beyond) and calls note(ctx,
 * level, msg); nothing when note is NULL. Each caller checks its own quiet
 * setting first (mb_meas_vnote, protocol_int.h, is this with a config's). */
void mb_meas_note_to(mb_meas_note_cb note, void *ctx, const char *level, const char *fmt, va_list ap);

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

/* ---- running ----------------------------------------------------------------- */

/* Runs plan p (of the variant named in row->variant) at n elements on the CPU
 * under config c and fills row's timing and check columns (and per_kernel[k]'s
 * when non-NULL: each kernel's own time within the same samples). row and
 * per_kernel must come from mb_meas_record_init. A failed check sets
 * verified = 0 and still returns MB_OK (the row is reported, flagged); *why
 * (when non-NULL, whysz bytes) gets the first mismatch, or for a verified row
 * whose accuracy is "inaccurate" the note that says why (mb_kern_check_note). MB_ERUN when memory
 * or threads fail, or "interrupted" when *c->stop was set. */
int mb_meas_cpu_run(const mb_plan *p, int64_t n, const mb_meas_config *c,
                    mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                    mb_err *err);

/* The CUDA backend (measure/cuda_*.cu; measure/cuda_absent.c when built
 * without CUDA, where nothing is available and every call fails saying so). */

/* 1 when a usable GPU is present; else 0 and why gets one line ("built
 * without CUDA", "cudaErrorNoDevice: ..."). */
int mb_meas_cuda_available(char *why, size_t whysz);

/* Same contract as mb_meas_cpu_run, on the GPU c->cuda_device: fills device,
 * backend "cuda", reps, time_s_*, time_cv, dram_*_bytes (-1 without
 * counters), counters, max_rel_err, verified (mb_kern_verify on host copies,
 * sampled above 2^24 elements; mb_kern_gradcheck and the CPU backend's input
 * gradients for backward plans). MB_ERUN on a CUDA failure (err says which
 * call). */
int mb_meas_cuda_run(const mb_plan *p, int64_t n, const mb_meas_config *c,
                     mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                     mb_err *err);

/* Device memory for plan p at n on the GPU c->cuda_device (opened with c,
 * as a run would): *need_bytes gets the plan's device tensors, *free_bytes
 * and *total_bytes the device's memory now (cudaMemGetInfo). measure admits
 * its rows against these before it runs any (MB_MEAS_CUDA_MARGIN_BYTES
 * kept free, as each row's own check does). MB_ERUN without a GPU. */
#define MB_MEAS_CUDA_MARGIN_BYTES ((int64_t)256000000)
int mb_meas_cuda_plan_memory(const mb_meas_config *c, const mb_plan *p, int64_t n, int64_t *need_bytes,
                             int64_t *free_bytes, int64_t *total_bytes, mb_err *err);

/* ---- GPU probes: the session's timing, for calibrate --backend cuda ---- */

/* Launches a probe may queue behind the blocking kernel at most: the launch
 * queue holds ~32 entries (nvbench's blocking_kernel note), and a launch
 * that finds it full stalls the host until the block times out. */
#define MB_MEAS_GPU_MAX_QUEUED 12

struct mb_kern_cuda_device;
/* What a probe launches on: the device the session opened (kernels_cuda.h's
 * struct), its PCI id, the session's stream (a cudaStream_t) and a sink of
 * 64 floats the probes may write. */
typedef struct mb_meas_gpu {
    const struct mb_kern_cuda_device *dev;
    const char *pci;
    void *stream;
    float *sink;
} mb_meas_gpu;

/* Opens the session of c->cuda_device (as a run would: once per process)
 * into *g. MB_ERUN when there is no GPU or no CUDA in this build. */
int mb_meas_gpu_open(const mb_meas_config *c, mb_meas_gpu *g, mb_err *err);
/* Device memory of bytes into *out; freed by mb_meas_gpu_free. MB_ERUN. */
int mb_meas_gpu_alloc(int64_t bytes, void **out, mb_err *err);
void mb_meas_gpu_free(void *p);
/* Median seconds of samples (<= 64) runs of fn(arg) between events on the
 * session's stream (cold: after the clean L2 flush), fn's launches queued
 * behind the blocking kernel while the session uses it (at most
 * MB_MEAS_GPU_MAX_QUEUED launches). A sample whose block timed out holds
 * host launch latency: it is dropped, the block turned off (said once
 * through c's note) and the sample taken again without it. MB_ERUN when a
 * CUDA call fails or fewer than samples are valid. */
int mb_meas_gpu_time(const mb_meas_config *c, int (*fn)(void *arg, mb_err *err), void *arg, int samples,
                     int cold, double *median_s, mb_err *err);
/* 1 while the session queues samples behind the blocking kernel. */
int mb_meas_gpu_blocked(void);

/* Provenance of the GPU runs so far, as "key: value" lines ('\n'-ended):
 * device, PCI id, driver and runtime versions, peak bandwidth, SM and memory
 * clocks seen (min..max over the rows' starts and ends; NVML when the driver
 * has it, else clock64 and the peak memory clock), the timing method, the
 * counters' state and the sanity gate's result. Empty when no GPU was opened.
 * Call after the runs, before writing the CSV's '#' lines. */
void mb_meas_cuda_provenance(char *buf, size_t bufsz);

/* Picks the backend for AUTO (CUDA if available, else CPU) and says why in
 * note (one line, may be NULL). Explicit CUDA without a GPU: MB_ERUN. */
int mb_meas_resolve_backend(mb_meas_backend want, mb_meas_backend *got, char *note,
                            size_t notesz, mb_err *err);

/* Runs one row on backend b (CPU or CUDA, not AUTO). */
int mb_meas_run(mb_meas_backend b, const mb_plan *p, int64_t n, const mb_meas_config *c,
                mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                mb_err *err);

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

/* ---- CSV --------------------------------------------------------------------- */

/* The run's provenance (the CSV's provenance column). Strings may be empty. */
typedef struct mb_meas_provenance {
    char cpu_model[128];
    char compiler[128];
    char git_commit[64];
    char date[64];        /* ISO 8601, UTC */
    char host[128];
    char settings[512];   /* e.g. "cold=1 min_reps=10 max_cv=0.02 threads=2 exec=auto" */
    char extra[1024];     /* more "key: value" lines (backend, model device), '\n'-separated */
} mb_meas_provenance;

/* Fills cpu_model (/proc/cpuinfo), compiler, git commit (MB_GIT_COMMIT at
 * build time, else "unknown"), date, host; settings from c (may be NULL). */
void mb_meas_provenance_fill(mb_meas_provenance *pv, const mb_meas_config *c);

/* Settings line of a config ("cold=1 reps>=10 ..."), into buf. */
void mb_meas_settings_str(const mb_meas_config *c, const char *exec_extra, char *buf,
                          size_t bufsz);

/* The text columns of a run's CSVs (MB_MEAS_CSV_TEXT_COLUMNS), escaped to
 * one line each and owned: the device spec, the provenance lines, the text
 * of each distinct variant. */
typedef struct mb_meas_csv_var {
    char name[MB_NAME_MAX];
    int is_expr;           /* 1: the text is an --expr string */
    char *text;            /* escaped */
} mb_meas_csv_var;
typedef struct mb_meas_csv_texts {
    char *spec;            /* escaped INI text of the model device */
    char *prov;            /* escaped provenance lines; grows with mb_meas_csv_texts_add */
    mb_meas_csv_var *vars;
    int n_vars;
} mb_meas_csv_texts;

/* Fills t: the spec of dev (the device the model columns used), pv's lines,
 * and the text of each distinct variant of graphs: exprs[i] (an --expr
 * string) when exprs and exprs[i] are not NULL, else graphs[i]'s file read
 * back from g->path. MB_ERUN when a file cannot be read back or memory runs
 * out, MB_EINPUT when dev cannot be written as a spec; t is then empty. */
int mb_meas_csv_texts_init(mb_meas_csv_texts *t, const mb_meas_provenance *pv, const mb_device *dev,
                           mb_graph *const *graphs, const char *const *exprs, int n_graphs, mb_err *err);

/* Appends one provenance line ("key: value"; newlines become spaces) to t:
 * what is known only after the rows (host_check, partial, GPU clocks).
 * MB_ERUN when memory runs out. */
int mb_meas_csv_texts_add(mb_meas_csv_texts *t, const char *line);
void mb_meas_csv_texts_free(mb_meas_csv_texts *t);

/* Writes the header row: the contract's columns, "kernel" when per_kernel,
 * the later columns, the text columns. */
void mb_meas_csv_header(FILE *fp, int per_kernel);

/* Writes one row, one line (fields quoted where needed; newlines in a field
 * become spaces; dram -1 written empty), with the texts of t (NULL: the text
 * columns empty). */
void mb_meas_csv_row(FILE *fp, const mb_meas_record *r, int per_kernel, const mb_meas_csv_texts *t);

/* Rows held until the run ends, so that every row carries the provenance
 * known only then (mb_meas_csv_texts_add): add rows, then write the file. */
typedef struct mb_meas_csv_rows {
    mb_meas_record *rows;
    int n, cap;
    int per_kernel;
} mb_meas_csv_rows;

/* Copies r into b. MB_ERUN when memory runs out. */
int mb_meas_csv_rows_add(mb_meas_csv_rows *b, const mb_meas_record *r);
/* Writes the header and b's rows with the texts of t. MB_ERUN (err set) on
 * a write error. */
int mb_meas_csv_rows_write(const mb_meas_csv_rows *b, const mb_meas_csv_texts *t, FILE *fp, mb_err *err);
void mb_meas_csv_rows_free(mb_meas_csv_rows *b);

#ifdef __cplusplus
}
#endif
#endif
