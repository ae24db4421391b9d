/* import.h — membound measurement rows from other tools' files: Nsight
 * Compute's CSV (`ncu --csv`, pages details and raw) and the PyTorch
 * profiler's Chrome trace (Kineto kernel events). Each launch is matched to a
 * kernel of a membound plan; the rows are measure/'s records, written with
 * measure/'s CSV writer, so `report` reads them as it reads a `measure` run.
 * Prefix mb_imp_. Does not write files (the CLI does) nor run anything. */
#ifndef MB_IMPORT_H
#define MB_IMPORT_H

#include "membound_model.h"
#include "measure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mb_imp_format { MB_IMP_NCU = 0, MB_IMP_TORCH_TRACE } mb_imp_format;

/* What the user says about the file; what the file says (NVTX ranges,
 * record_function marks named "membound:VARIANT:PLAN:n=N:DTYPE", N a size
 * or ROWSxCOLS) wins where the user says nothing, and the user's choice
 * filters the file's groups. A mark's VARIANT is a name: it selects a
 * built-in variant or the user's, never a file. */
typedef struct mb_imp_options {
    mb_imp_format format;
    const char *variant;        /* a variant name or .mb file; NULL: from the marks */
    const char *expr;           /* or an --expr string; NULL: none */
    int n_plans;                /* 0: from the marks */
    mb_plan_kind plans[MB_PLAN_COUNT];
    const int64_t *sizes;       /* elements; NULL/0: from the marks */
    int n_sizes;
    int has_dtype;              /* 0: from the marks, else f32 */
    mb_dtype dtype;
    const char *device;         /* model device (table id or .ini); NULL: the
                                   file's GPU name mapped to the table, else h100-sxm */
    int warmup;                 /* repetitions of the plan left out at the start of each group */
    int cache_all;              /* ncu --cache-control all (its default): 1; none: 0 */
    int clock_base;             /* ncu --clock-control base (its default): 1; none: 0 */
    int settings_given;         /* 1: the two above were said by the user */
    int kernel_rows;            /* 1 (the default): the per-kernel rows too; 0: none
                                   (half the rows' memory when no one writes them) */
    /* NULL: the rows are kept in the result. Else each row is handed to
     * row as it is made, with the texts every row carries (complete from
     * the first row on), and not kept: per_kernel 0 a plan row, 1 a kernel
     * row (with kernel_rows). 10^6 launches make 5 * 10^5 rows of 768 B:
     * handed over, they need no memory. A status other than MB_OK (err
     * set) stops the run with it. */
    int (*row)(void *ctx, const mb_meas_record *r, int per_kernel, const mb_meas_csv_texts *t, mb_err *err);
    void *row_ctx;
    /* one line per note ("left out: ..."), NULL: none */
    void (*note)(void *ctx, const char *level, const char *msg);
    void *note_ctx;
} mb_imp_options;

/* Sets o to the defaults: ncu, warmup 0, cache_all 1, clock_base 1,
 * kernel_rows 1. */
void mb_imp_options_init(mb_imp_options *o);

/* What an import made: one row per matched (variant, plan, dtype, n) group
 * and one per plan kernel, with the texts (model device spec, variant texts,
 * provenance) every row carries. */
typedef struct mb_imp_result {
    mb_meas_csv_rows rows;         /* plan totals */
    mb_meas_csv_rows kernel_rows;  /* per kernel (per_kernel = 1) */
    mb_meas_csv_texts texts;
    int n_rows;                    /* plan rows made, kept or handed to row */
    int n_launches, n_matched, n_left_out;
} mb_imp_result;

/* Reads path (at most 1 GiB of text, a UTF-8 byte order mark skipped) and
 * matches its launches. Returns MB_OK with *out filled (free with
 * mb_imp_result_free); MB_EINPUT with "path:line:col: ..." for a file that
 * does not parse, lacks what the format needs (columns, metrics, units),
 * holds a value that is not a whole decimal number in its range, a
 * duplicate (a JSON key, a metric of one launch, a launch ID), a mark that
 * names no variant, has no launch or group that matches, or too few or too
 * many kernels for a plan (never forced); MB_ERUN when memory runs out.
 * Names from the file reach notes, messages and rows with their control
 * characters escaped. Bytes never choose a match: they are compared after
 * it (count_check, per-kernel cold counts for ncu's flushed caches). */
int mb_imp_run(const char *path, const mb_imp_options *o, mb_imp_result *out, mb_err *err);
void mb_imp_result_free(mb_imp_result *r);

/* The device table's id for a GPU name as a tool prints it ("NVIDIA H200",
 * "NVIDIA H100 80GB HBM3"), or NULL when none fits. */
const char *mb_imp_device_id(const char *gpu_name);

/* The first part of a PyTorch kernel name that launches plan kernel
 * plan_kernel (an op's name, "sigmoid_backward", ...), e.g. "sin_kernel_cuda";
 * NULL when PyTorch has none (a fused kernel: Inductor's triton_*). */
const char *mb_imp_kernel_pattern(const char *plan_kernel);

/* The format named s ("ncu", "torch-trace"): MB_OK, or MB_EINPUT. */
int mb_imp_format_parse(const char *s, mb_imp_format *out);

#ifdef __cplusplus
}
#endif
#endif
