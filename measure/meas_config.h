/* meas_config.h — what a measurement run is told: the backend, the
 * settings (samples, eviction, counters, the CUDA device) and where notes
 * go. Does not run anything (meas_run.h). */
#ifndef MB_MEAS_CONFIG_H
#define MB_MEAS_CONFIG_H

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

#ifdef __cplusplus
}
#endif
#endif
