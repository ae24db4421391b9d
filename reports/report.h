/* report.h — the reporter: reads measurement CSVs, joins each row with the
 * model's prediction, fits time = t0 + bytes / bandwidth (and per-op costs on
 * CPUs) with GSL, checks the lecture's claims, writes figure data and
 * gnuplot scripts, report.md / report.html / summary.csv / summary.json.
 * It does not measure anything (measure/ does) and never exits: every
 * function returns MB_OK, MB_EINPUT or MB_ERUN and fills an mb_err. */
#ifndef MEMBOUND_REPORT_H
#define MEMBOUND_REPORT_H

#include "membound_model.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the lecture ------------------------------------------------------- */

/* The lecture's demos (design.md, "The lecture's claims"), defined once and
 * used by the join, the verdicts, the figures and `membound demo`: each
 * demo's variant, display name, size, the series it compares with the
 * lecture's traffic count, and its claims (series slow vs fast). */
typedef struct mb_rpt_lecture_series {
    const char *plan;
    mb_dtype dtype;
    const char *count;         /* the lecture's traffic in elements: "11n" */
} mb_rpt_lecture_series;

/* How a claim's time ratio is read: about its ratio (within the tolerance
 * either way: "takes about half the time"), or at least about it ("at
 * least 2x faster": a larger ratio holds too). */
typedef enum mb_rpt_claim_kind { MB_RPT_CLAIM_ABOUT, MB_RPT_CLAIM_AT_LEAST } mb_rpt_claim_kind;

/* "about" or "at least" */
const char *mb_rpt_claim_kind_name(mb_rpt_claim_kind k);

typedef struct mb_rpt_claim {
    const char *text;          /* "fusion: sin^2+cos^2 fused moves 2n instead of 11n" */
    const char *lecture;       /* "11n / 2n = 5.5x" */
    int slow, fast;            /* indices into the demo's series */
    double ratio;              /* the lecture's slow / fast */
    mb_rpt_claim_kind kind;
} mb_rpt_claim;

typedef struct mb_rpt_demo {
    const char *variant;       /* built-in variant name */
    const char *display;       /* in figures and tables: "sin^2+cos^2" */
    const char *title;         /* panel title: "fusion: sin^2(x) + cos^2(x)" */
    int64_t n;                 /* the lecture's size */
    int n_series;
    mb_rpt_lecture_series series[3];
    int n_claims;
    mb_rpt_claim claims[2];
} mb_rpt_demo;

#define MB_RPT_N_DEMOS 4
extern const mb_rpt_demo mb_rpt_lecture[MB_RPT_N_DEMOS];

/* The normalization family's claims (issue 33): a slow and a fast plan of
 * one built-in at n elements (its shape's rows x cols), the ratio of the
 * count that judges it: the lecture's count (read + write bytes) where a
 * row fits on chip, the cache-aware DRAM count where re-reads must leave
 * the L2 (the online claim, at rows of 16 MiB). */
typedef struct mb_rpt_row_claim {
    const char *variant, *slow, *fast;
    const char *shape;         /* "4096x1024": the size the claim is made at */
    int64_t n;                 /* its elements */
    const char *text, *lecture;
    double ratio;
    const char *judged_by;     /* "lecture count" or "DRAM count" */
    mb_rpt_claim_kind kind;
} mb_rpt_row_claim;
#define MB_RPT_N_ROW_CLAIMS 5
extern const mb_rpt_row_claim mb_rpt_row_claims[MB_RPT_N_ROW_CLAIMS];

/* The demo of a variant name, or NULL for any other variant. */
const mb_rpt_demo *mb_rpt_demo_of(const char *variant);

/* The size at which demo d's claims are judged where DRAM serves them: its
 * lecture size, doubled until its fastest series (its lecture count, "2n",
 * in its dtype) moves at least floor_bytes (4x the larger of the calibrated
 * and the reported cache: `membound demo`), but not past max_n; *capped set
 * to 1 when max_n stops it short (left as it is otherwise). */
int64_t mb_rpt_claim_n(const mb_rpt_demo *d, double floor_bytes, int64_t max_n, int *capped);

/* ---- variant definitions ------------------------------------------------ */

/* Where a variant's definition comes from, so a row of any variant joins:
 * its text as measured (a CSV's "# variant_text/variant_expr" provenance),
 * a .mb file or --expr given on the command line, or a built-in by name. */
typedef struct mb_rpt_vardef {
    char name[MB_NAME_MAX];
    int is_expr;               /* text is an --expr string */
    char *text;                /* owned; NULL: the built-in of that name */
    int file;                  /* index into mb_rpt_set.files, -1: command line */
    char origin[600];          /* for messages: "m.csv (variant silu)", "silu.mb" */
    int line;                  /* a CSV's text: the line of its first provenance line */
} mb_rpt_vardef;

/* ---- measurement rows ------------------------------------------------- */

/* One row of a measurement CSV (design.md, "Measurement records"), plus the
 * model's prediction for it (filled by mb_rpt_join) and its fit residuals
 * (filled by mb_rpt_fit). Numbers absent from the file are NaN (doubles)
 * or -1 (byte counts). */
typedef struct mb_rpt_row {
    /* where the row came from. The strings of a row are interned in its set
     * (one copy of each distinct value, owned by the set, never NULL, valid
     * until mb_rpt_set_free): a row is ~0.5 KB whatever its file's path or
     * its text columns (1.7 KB when each held its own arrays) */
    const char *file;
    int line;
    /* as read */
    const char *device;        /* table id or spec-file path, as written */
    int device_col;            /* character column of the device field */
    const char *backend;
    const char *variant;       /* at most MB_NAME_MAX - 1 bytes */
    const char *plan;          /* at most 15 bytes */
    const char *dtype;         /* at most 7 bytes */
    int64_t n;
    int64_t rows, cols;        /* 2-D rows (the 'shape' column): rows x cols = n; 0, 0 for 1-D */
    const char *dims;          /* named dimensions' sizes (the 'dims' column), "" none */
    int kernels, reps;         /* -1 when absent */
    int contended;             /* contended samples (-1: no such column) */
    int noisy;                 /* more than a fifth contended: shown, never fitted */
    double host_copy_gbs;      /* the host reference copy during the row, NaN: none */
    double host_copy_ratio;    /* its ratio to the calibrated figure, NaN: none */
    double host_op_ratio;      /* the op reference's ratio to the calibrated rate, NaN: none */
    int drifted;               /* a ratio more than 20% off (MB_MEAS_HOST_DRIFTED):
                                  fitted, but its model error is flagged */
    double time_s_lower_mode, time_s_upper_mode, upper_mode_share; /* samples in
                                  two modes (MB_MEAS_CSV_MODES_COLUMNS), NaN: one */
    int two_modes;             /* all three given: fitted, its measured/model
                                  shown against each mode */
    double time_s_median, time_s_min, time_s_p90, time_cv;
    double model_time_s;       /* the model time the harness wrote, or NaN */
    int64_t read_bytes, write_bytes;
    int has_dram;              /* 1 when dram_read/write_bytes were measured */
    int64_t dram_read_bytes, dram_write_bytes;
    int64_t model_dram_read_bytes, model_dram_write_bytes; /* as the harness modelled
                                  them (-1: no such column or empty) */
    const char *counters;      /* as written ("" when absent) */
    const char *count_check;   /* the harness's counted-vs-model verdict (count_check
                                  column): "ok", "off", "below 4x L2" or "" */
    int cold_kernels;          /* 1: its counted bytes were judged against each
                                  kernel's cold count (its file's provenance says
                                  MB_MEAS_PROV_COLD_KERNELS: ncu flushed the caches
                                  before every kernel) */
    int file_index;            /* index into mb_rpt_set.files */
    double max_rel_err;
    int verified;              /* 1 passed, 0 failed (never fitted) */
    const char *calibration;   /* the calibration its model columns used
                                  (MB_MEAS_CSV_CALIBRATION_COLUMN): "full",
                                  "quick", "fallback", "stale", "" (none said) */
    int col_of[8];             /* character columns of variant, plan, dtype, n
                                  (for join errors) */

    /* filled by mb_rpt_join */
    int dev;                   /* index into mb_rpt_set.devices */
    double pred_time_s, pred_mem_s, pred_compute_s, pred_launch_s;
    double pred_host_time_s;   /* the model at the host's rates during the row
                                  (mb_device_at_rates by its host ratios), NaN: none */
    int64_t pred_read_bytes, pred_write_bytes;           /* the lecture's count */
    int64_t pred_dram_read_bytes, pred_dram_write_bytes; /* cache-aware */
    int64_t pred_saved_bytes;
    double pred_flops, pred_sfu_ops;
    int pred_kernels;
    mb_bound pred_bound;
    const double *op_per_elem; /* MB_OP_COUNT evaluations of each op per element
                                  (owned by the set; NULL before the join): the row
                                  evaluates op k op_per_elem[k] * n times */

    /* filled by mb_rpt_fit */
    int group;                 /* index into mb_rpt_set.groups, -1 if none */
    int used;                  /* 1 when it entered the bandwidth fit */
    int outlier;               /* 1 when rejected by the studentised-residual pass */
    double fit_bytes;          /* the byte count the fit used for this row */
    double fit_time_s;         /* t0 + bytes / bandwidth */
    double resid_time_rel;     /* time_s_median / fit_time_s - 1 */
    double resid_model_rel;    /* time_s_median / pred_time_s - 1 */
    double stud_resid;         /* externally studentised residual, NaN if none */
    double resid_bytes_rel;    /* measured DRAM / model DRAM - 1, NaN without counters */
} mb_rpt_row;

/* ---- fits ------------------------------------------------------------- */

/* A weighted straight line y = c0 + c1 x with 95% confidence half-widths
 * (Student t, covariance scaled by chi2/dof because the weights are only
 * relative) and weighted R². */
typedef struct mb_rpt_line {
    int n_points, n_used, n_rejected;
    double c0, c1;
    double sd0, sd1;           /* standard errors */
    double ci0, ci1;           /* 95% half-widths */
    double cov01;
    double chi2, dof, r2;
    double resid_sd;           /* sqrt(chi2 / dof) */
} mb_rpt_line;

/* Fits y = c0 + c1 x by weighted least squares (gsl_fit_wlinear; w are
 * weights 1/sigma², or all 1). n >= 3. When reject is nonzero and n >= 5,
 * points whose externally studentised residual exceeds 3 in magnitude are
 * dropped once and the line refitted. used (may be NULL, n entries) gets 1
 * for points in the final fit; stud (may be NULL) their studentised residuals
 * from the first pass. MB_EINPUT for too few points or a degenerate x,
 * MB_ERUN when GSL fails or a result is not finite. */
int mb_rpt_fit_line(const double *x, const double *y, const double *w, size_t n, int reject,
                    unsigned char *used, double *stud, mb_rpt_line *out, mb_err *err);

#define MB_RPT_MAX_PARAMS 16

/* A weighted multilinear fit y = sum_j c_j X_ij. */
typedef struct mb_rpt_multi {
    int p;                         /* parameters */
    char names[MB_RPT_MAX_PARAMS][48];
    double c[MB_RPT_MAX_PARAMS], sd[MB_RPT_MAX_PARAMS], ci[MB_RPT_MAX_PARAMS];
    int n_points, rank;
    int determined;                /* 1 when rank == p and dof >= 1 */
    double chi2, dof, r2;
    char note[256];                /* why not determined, what was merged */
} mb_rpt_multi;

/* Fits y = X c (X row-major, n x p, p <= MB_RPT_MAX_PARAMS) with weights w
 * by gsl_multifit_wlinear_tsvd. Always fills rank and determined; fills the
 * coefficients and their 95% half-widths when determined. Returns MB_OK even
 * when underdetermined (out->determined == 0 says so); MB_ERUN when GSL
 * fails. names may be NULL. */
int mb_rpt_fit_multi(const double *X, const double *y, const double *w, size_t n, int p,
                     const char *const *names, mb_rpt_multi *out, mb_err *err);

/* One device × backend: its bandwidth fit and, where compute matters, the
 * per-op cost fit. */
typedef struct mb_rpt_group {
    char device[MB_NAME_MAX];
    char backend[32];
    int dev;                       /* index into mb_rpt_set.devices */
    int fitted;                    /* 1 when line holds a fit */
    char why[256];                 /* when not fitted: why */
    char rows_note[256];           /* which rows the line fit used */
    char bytes_note[128];          /* measured DRAM bytes or model DRAM bytes */
    mb_rpt_line line;              /* time_s = c0 + c1 * bytes */
    int impossible;                /* 1: the bandwidth's lower bound exceeds the
                                      device's peak (mb_rpt_peak_what: a GPU's
                                      datasheet, a CPU spec's calibration, times
                                      the host's drift; the bytes understate the
                                      traffic) */
    int above_calibrated;          /* 1: it exceeds a CPU spec's calibrated
                                      bandwidth, not the host's own reference copy
                                      during the fitted rows: the host drifted */
    double host_copy_ratio_max;    /* the fitted rows' fastest host reference copy
                                      over the calibrated one; NaN: none */
    int t0_negative;               /* 1: t0 + its 95% half-width < 0 */
    double t0_s, t0_ci_s;
    double bandwidth_gbs, bandwidth_lo_gbs, bandwidth_hi_gbs; /* 95% interval */
    int has_ops;                   /* 1 when a per-op fit was attempted */
    mb_rpt_multi ops;              /* time = t0 + bytes/bw + sum ops_k c_k */
} mb_rpt_group;

/* ---- lecture claims --------------------------------------------------- */

/* One lecture claim checked on one device × backend, in two separate
 * judgements: whether the lecture's claim held here (holds: its bytes,
 * counted or modelled, and its time ratio in direction and rough size as
 * the claim's kind reads it) and whether the model's expectation on this
 * device held (model_agrees). Ratios are slow/fast (a speed-up > 1), or
 * f32/bf16 for precision. NaN where unknown. */
typedef struct mb_rpt_verdict {
    char claim[160];
    char lecture[64];              /* the lecture's figure, e.g. "11n / 2n = 5.5x" */
    char device[MB_NAME_MAX];
    char backend[32];
    int64_t n;                     /* size compared at */
    double lecture_ratio;
    double model_bytes_ratio;      /* the model's lecture-count bytes ratio */
    double model_dram_ratio;       /* the model's cache-aware DRAM ratio at n */
    double model_time_ratio;       /* the model's time ratio on this device */
    double meas_time_ratio;        /* measured median time ratio (beside the deciding one) */
    double meas_bytes_ratio;       /* measured DRAM bytes ratio (counters) */
    const char *holds;             /* the lecture's claim here: "holds"; "exceeds" (an
                                      about-claim's ratio above its band: faster than
                                      claimed); "falls short" (the right direction,
                                      below the band); "reversed" (the fast series ran
                                      slower); "does not hold" (counted bytes off the
                                      claim); "inconclusive"; "no data" */
    const char *model_agrees;      /* the model's expectation here: "yes", "no",
                                      "inconclusive", "no data" */
    mb_rpt_claim_kind kind;        /* how the claim's ratio is read */
    char note[1024];
    /* how it was decided (verdicts.csv's columns after note) */
    double meas_min_ratio;         /* slow row's minimum / fast row's minimum: the
                                      statistic that decides when both rows are quiet
                                      and of comparable sample counts (a shared machine
                                      adds time, never takes it away: STREAM's best
                                      rate); else the median decides */
    double meas_range_lo, meas_range_hi; /* the ratio over the rows' min-to-p90
                                      ranges: slow min / fast p90 .. slow p90 / fast min */
    double expected_ratio;         /* what the time is judged against: the model's
                                      time ratio on this device (the lecture's ratio
                                      when the model gives none) */
    const char *statistic;         /* "min" (the median beside it), "median" (a row
                                      noisy, the rows' sample counts or spreads unlike,
                                      or no minimum), "" (no data) */
    double meas_ratio;             /* the deciding ratio: meas_min_ratio or
                                      meas_time_ratio as statistic says */
    const char *bytes;             /* "counted: holds", "counted: does not hold",
                                      "modelled, not counted on this backend", "" */
    char reason[400];              /* why the measurement or the expectation differs
                                      from the lecture's figure ("compute-bound here:
                                      eager"; "the cache served part of it: ..."), or
                                      "" when nothing differs */
    char calibration[64];          /* "" or the rows' marks: "fallback", "stale",
                                      "quick" (a smoke test) */
    char rerun[256];               /* inconclusive: the command that measures again */
    int smoke_test;                /* 1: a smoke test's (mb_rpt_set.smoke_test, or rows
                                      measured against a quick calibration) */
} mb_rpt_verdict;

/* Tolerances of the verdict table (relative). */
#define MB_RPT_TOL_BYTES 0.10  /* counters vs a byte-count claim */
#define MB_RPT_TOL_TIME 0.25   /* measured time ratio vs a claimed/modelled ratio */
/* A verdict is inconclusive when the rows' min-to-p90 ranges straddle an edge
 * of the tolerance band and the minimum ratio itself lies within this of
 * that edge: the minima of two rows of 10-200 samples on the 2-vCPU guest
 * moved by up to ~4% between runs taken minutes apart (the committed
 * rounds), so a minimum ratio nearer than 5% to an edge decides nothing. */
#define MB_RPT_DECIDE_MARGIN 0.05
/* The minimum decides only between like rows: neither noisy, sample counts
 * within this factor of each other and each row's CV at most
 * MB_RPT_QUIET_CV. The minimum of 201 samples at CV 36% against that of 14
 * quiet ones (a demo's bf16 and f32 copy rows on the 2-vCPU guest, issue
 * 52) is an extreme of a long tail against one of a short one; beside two
 * CPU hogs sin^2+cos^2's minima gave 5.61x where its medians gave 3.27x. */
#define MB_RPT_LIKE_REPS 4.0
#define MB_RPT_QUIET_CV 0.25
/* A row moved its modelled DRAM bytes this much faster than the device's
 * DRAM bandwidth allows: the cache served part of it (a row's time below
 * bytes / bandwidth by more than the calibrated copy's run-to-run spread,
 * ~4-10% on the guest). */
#define MB_RPT_CACHE_MARGIN 0.15

/* ---- the set ---------------------------------------------------------- */

/* How the figures look (figures/report --size, --font-scale, --theme);
 * zeros: 1280x720, scale 1, light. Written into the figure folder as
 * look.gp, which every script loads. */
typedef struct mb_rpt_look {
    int width_px, height_px;
    double font_scale;
    int dark;
} mb_rpt_look;

/* Parse one option value into look: "16:9" (1280x720), "4:3" (960x720)
 * or WxH pixels (320..4096); a font scale 0.5..3; "light" or "dark".
 * MB_EINPUT naming the value and what is accepted. */
int mb_rpt_parse_size(const char *s, mb_rpt_look *look, mb_err *err);
int mb_rpt_parse_font_scale(const char *s, mb_rpt_look *look, mb_err *err);
int mb_rpt_parse_theme(const char *s, mb_rpt_look *look, mb_err *err);

#define MB_RPT_MAX_FIG_VARIANTS 16


#define MB_RPT_MAX_DEVICES 32

/* One task of a fleet run (report --fleet: scripts/slurm/merge.sh's
 * tasks.csv): what it was to measure, where it ran, how it ended and why,
 * and the CSV it left ("" when none arrived). */
typedef struct mb_rpt_task {
    char task[32];             /* the array task: "0", "1", ... */
    char target[128];          /* what it asked for: "constraint=a100", "node=gpu017" */
    char node[128];            /* where it ran, "" when it never started */
    char state[32];            /* the scheduler's: COMPLETED, FAILED, TIMEOUT, ... */
    char exit[32];             /* its exit status as the scheduler gives it ("1:0") */
    char step[32];             /* the step that failed: calibrate, measure, ... */
    char reason[512];          /* why, in the task's or the scheduler's words */
    char csv[256];             /* the CSV's file name in the run's folder */
} mb_rpt_task;

typedef struct mb_rpt_set {
    mb_rpt_row *rows;
    int n_rows, cap_rows;
    char (*files)[512];            /* inputs, in order */
    int n_files;
    char (*prov)[512];             /* "#" provenance lines, "file: text" */
    int n_prov;
    int n_kernel_rows_skipped;     /* per-kernel rows (a "kernel" column) */
    int n_kernel_files;            /* inputs holding per-kernel rows only */
    char **specs;                  /* per input: its embedded device spec (INI), or NULL */
    int *spec_lines;               /* per input: the CSV line whose device_spec column
                                      carried its spec; 0: '#' lines (or none) */
    mb_rpt_vardef *vars;           /* variant definitions, embedded then given */
    int n_vars;
    mb_device devices[MB_RPT_MAX_DEVICES];
    char device_keys[MB_RPT_MAX_DEVICES][256]; /* how each was named */
    char device_machines[MB_RPT_MAX_DEVICES][600]; /* the machine each was measured
                                      on, from its CSVs' provenance: "HOST: CPU"
                                      or "HOST: GPU; DRIVER" (machines.c) */
    int n_devices;
    mb_rpt_group *groups;
    int n_groups;
    mb_rpt_verdict *verdicts;
    int n_verdicts;
    struct rpt_strings *strings;   /* the rows' interned strings (csv.c), owned */
    double **op_tables;            /* the rows' op_per_elem arrays (join.c), owned */
    int n_op_tables;
    /* the model-only figures' series (figures --dtype, --plan): only these
     * dtypes and plans (a variant of the command line: in this order); none
     * given (0): each variant's own */
    mb_dtype fig_dtypes[MB_DTYPE_COUNT];
    int n_fig_dtypes;
    mb_plan_kind fig_plans[MB_PLAN_COUNT];
    int n_fig_plans;
    /* report --variants: only these variants' series on the figures (none: all) */
    char fig_variants[MB_RPT_MAX_FIG_VARIANTS][MB_NAME_MAX];
    int n_fig_variants;
    mb_rpt_look look;              /* the figures' size, font scale, theme */
    int smoke_test;                /* 1: every verdict is a smoke test's (report
                                      --smoke-test, as demo --quick runs it) */
    mb_rpt_task *tasks;            /* a fleet run's tasks (mb_rpt_read_fleet), owned */
    int n_tasks;
} mb_rpt_set;

void mb_rpt_set_init(mb_rpt_set *s);
void mb_rpt_set_free(mb_rpt_set *s);

/* What report reads: at most MB_RPT_MAX_ROWS rows in all (a row is ~0.5 KB
 * once read; the join, the fits and the figures add ~0.3 KB) and at most
 * MB_RPT_MAX_CSV_BYTES per CSV (streamed in 1 MiB pieces, mb_csv_read_file:
 * a file's size costs no memory): peak memory is about 0.8 KB a row (783 MiB
 * at 10^6 rows), 1.6 GiB at the limit. Beyond either the input is refused
 * with one line (MB_EINPUT). */
#define MB_RPT_MAX_ROWS 2000000
#define MB_RPT_MAX_CSV_BYTES ((size_t)1 << 30)
/* The largest byte count a row may carry (read, write, DRAM): no plan over
 * at most 2^44 elements moves an exbibyte, and sums of two stay in int64. */
#define MB_RPT_MAX_BYTES ((int64_t)1 << 60)

/* Appends the rows of one measurement CSV to s. Columns are found by header
 * name (any order; extra columns ignored). Required: device, backend,
 * variant, plan, dtype, n, time_s_median, verified; the others of the
 * contract are read when present. Empty dram_* fields mean no counters.
 * Leading and interleaved "#" lines are kept as provenance. Errors
 * (MB_EINPUT) name "file:line:col" and the column: a missing column, a
 * malformed number, a file without rows. MB_ERUN when the file cannot be
 * read. */
int mb_rpt_read_csv(mb_rpt_set *s, const char *path, mb_err *err);

/* Appends the tasks of a fleet run's task table (a CSV with columns task,
 * target, state, csv and optionally node, exit, step, reason; '#' lines
 * skipped) to s->tasks: the report then lists every task, the rows each
 * delivered, and the missing ones with their reason. MB_EINPUT naming
 * path:line:col for a missing column, an empty task or state, a csv that
 * is a path; MB_ERUN when it cannot be read. */
int mb_rpt_read_fleet(mb_rpt_set *s, const char *path, mb_err *err);
/* The rows s holds from task t's CSV (matched by file name); *given (may be
 * NULL) is 1 when that CSV is among the inputs. */
int mb_rpt_task_rows(const mb_rpt_set *s, const mb_rpt_task *t, int *given);

/* Adds a variant definition given on the command line: a .mb file (or a
 * built-in name) when is_expr is 0, else an --expr string (its "name"
 * directive names it). It joins rows of that name whose CSV carries no text
 * of its own, and figures draw it. MB_EINPUT with the parser's message. */
int mb_rpt_define_variant(mb_rpt_set *s, const char *name_path_or_expr, int is_expr,
                          mb_err *err);

/* Loads variant name at dtype dt: the text of CSV file (when >= 0) first,
 * then the command line's, then any CSV's, then the built-in. *out is a new
 * graph (mb_graph_free). MB_EINPUT naming the variant's origin. */
int mb_rpt_load_variant(const mb_rpt_set *s, int file, const char *name, mb_dtype dt,
                        mb_graph **out, mb_err *err);

/* Joins every row with the model: loads its variant at its dtype, builds its
 * plan and estimates it at its n on its device (the row's device column, a
 * table id or spec-file path, relative paths also tried beside the CSV;
 * device_override, when not NULL, replaces it for every row). Rows of two
 * machines (their CSVs' host, CPU or GPU and driver) are two devices, and
 * devices of one name on different machines are named NAME@HOST
 * (machines.c). MB_EINPUT naming file:line:col for an unknown device,
 * variant, plan or dtype. */
int mb_rpt_join(mb_rpt_set *s, const char *device_override, mb_err *err);

/* Fits every device × backend group (rows with verified != 1 are skipped),
 * fills the groups and per-row residuals, then the verdicts. Call after
 * mb_rpt_join. Groups that cannot be fitted (too few rows) say why in
 * group.why; that is not an error. MB_ERUN only when GSL fails. */
int mb_rpt_fit(mb_rpt_set *s, mb_err *err);

/* What a group's "impossible" beats: "datasheet peak" (a GPU's), or
 * "calibrated bandwidth" (a CPU spec's: a measurement, which the host's
 * drift during the rows raises) */
const char *mb_rpt_peak_what(const mb_device *d);

/* Fills s->verdicts from the joined, fitted rows (mb_rpt_fit calls it). */
int mb_rpt_verdicts(mb_rpt_set *s, mb_err *err);

/* ---- figures ---------------------------------------------------------- */

/* Output formats of rendered figures (a bit set). */
enum { MB_RPT_PNG = 1, MB_RPT_SVG = 2, MB_RPT_PDF = 4 };

/* Parses "png,svg,pdf" into a bit set. MB_EINPUT naming the bad word. */
int mb_rpt_parse_formats(const char *s, unsigned *out, mb_err *err);

/* The environment the report's tools come from, read once through lookup
 * (the CLI passes getenv; NULL: none set) and copied: $MEMBOUND_PLOTS,
 * $MEMBOUND_GNUPLOT, $MEMBOUND_GNUPLOT_TIMEOUT_S and $PATH for the three
 * below. The library reads no
 * environment variable: until this is called, none is set (PATH:
 * /usr/bin:/bin). */
void mb_rpt_set_env(char *(*lookup)(const char *name));

/* Directory of the gnuplot scripts: $MEMBOUND_PLOTS (mb_rpt_set_env), else
 * <exe>/../share/membound/plots, else the installed share directory, else
 * the source tree's plots/. NULL when none holds style.gp. */
const char *mb_rpt_plots_dir(void);

/* The gnuplot to run: $MEMBOUND_GNUPLOT, else "gnuplot" on PATH (both as
 * mb_rpt_set_env gave them). Writes the
 * resolved path into buf; MB_ERUN when none can be executed. */
int mb_rpt_find_gnuplot(char *buf, size_t bufsize, mb_err *err);
/* gnuplot's deadline per figure in wall seconds: $MEMBOUND_GNUPLOT_TIMEOUT_S
 * as mb_rpt_set_env gave it, else 60. Past it gnuplot is killed with its
 * process group (mb_child_run) and no later figure is drawn. */
double mb_rpt_gnuplot_timeout_s(void);

typedef struct mb_rpt_figure {
    char name[64];                 /* file stem: "time_vs_n", ... */
    char title[160];
    int rendered;                  /* 1 when the PNG (or first format) exists */
} mb_rpt_figure;

#define MB_RPT_MAX_FIGURES 48

typedef struct mb_rpt_figures {
    mb_rpt_figure fig[MB_RPT_MAX_FIGURES];
    int n;
    char dir[1024];                /* where data, scripts and images are */
    int gnuplot_missing;           /* 1 when nothing could be rendered */
    char render_error[512];        /* first rendering error, or "" */
} mb_rpt_figures;

/* Writes model-only figures into dir (created if needed): the data files,
 * the scripts (copied from plots_dir, with style.gp) and, unless render is
 * 0, the images in the formats asked. The variants are those defined in defs
 * (mb_rpt_define_variant), or the lecture's when it defines none; d is the
 * device of the per-device figures; the what-if compares the n_whatif
 * devices of whatif (n_whatif 0: every GPU of the table). Data files are
 * written even when gnuplot is missing; then out->gnuplot_missing is set and
 * MB_ERUN returned with a message saying so. */
int mb_rpt_model_figures(const mb_rpt_set *defs, const mb_device *d, const mb_device *whatif,
                         int n_whatif, const char *dir, unsigned formats, int render,
                         mb_rpt_figures *out, mb_err *err);

/* The same for a fitted set: bytes per element, time vs n and residuals of
 * each device × backend group, the roofline of each device with its measured
 * points, recomputation, and the what-if across the GPU table. */
int mb_rpt_set_figures(const mb_rpt_set *s, const char *dir, unsigned formats, int render,
                       mb_rpt_figures *out, mb_err *err);

/* Draws image (its extension picks png, svg or pdf) from data, a data file
 * its caller wrote, with plots/STEM.gp: for the figures of the table whose
 * data another command writes ("frontier": membound plan --frontier
 * --figure). env is handed to mb_rpt_set_env first (the CLI passes getenv).
 * Drawn under a temporary name beside image and renamed when gnuplot exits
 * 0; gnuplot's errors go to standard error. MB_EINPUT for a stem the table
 * has not as such; MB_ERUN naming data when the scripts or gnuplot are not
 * found or the drawing fails. */
int mb_rpt_draw_figure(const char *stem, const char *data, const char *image,
                       char *(*env)(const char *name), mb_err *err);

/* ---- writers ---------------------------------------------------------- */

/* Writes dir/report.md, dir/report.html (figures embedded as base64 PNG),
 * dir/summary.csv (one line per row with model and residuals),
 * dir/fits.csv, dir/verdicts.csv and dir/summary.json. Every file appears
 * whole or not at all. figs may be NULL (no figures section). */
int mb_rpt_write(const mb_rpt_set *s, const mb_rpt_figures *figs, const char *dir,
                 mb_err *err);

/* A report built in a staging folder and put in place whole (stage.c):
 * beside the target (PARENT/.NAME.staging.PID) and renamed into place, or,
 * where the target exists, swapped with it (its other entries, a demo's
 * CSVs and logs/, carried over as hard links) and the old one removed; so a
 * reader of the target sees the old report or the new one, never a mix.
 * Where the target is the working folder (or holds it), is a link, or its
 * other entries cannot be linked, the staging folder is inside it and the
 * report's entries are put in place one by one: figures/ swapped, then the
 * files, report.html last. Until commit or abort, a signal that ends the
 * process removes the staging folder (mb_outfile_remove_dir_on_signal). */
typedef struct mb_rpt_stage {
    char target[4096];
    char dir[4200];            /* the staging folder: build the report here */
    int in_place;              /* 1: entries put in place one by one */
    int done;                  /* committed or aborted */
} mb_rpt_stage;

/* Creates the staging folder for target (and target's parent folders).
 * MB_EINPUT for a target that is not a folder, MB_ERUN when the folder
 * cannot be created. Call after the inputs are accepted: nothing is
 * written before. */
int mb_rpt_stage_begin(const char *target, mb_rpt_stage *st, mb_err *err);
/* Puts the staging folder's report in place as above and removes what is
 * left (the old report). MB_ERUN when a rename fails (the target keeps the
 * old report, or, in place, the entries not yet moved). */
int mb_rpt_stage_commit(mb_rpt_stage *st, mb_err *err);
/* Removes the staging folder; the target is untouched. */
void mb_rpt_stage_abort(mb_rpt_stage *st);
/* msg with the staging folder's path replaced by the target's (a message
 * written while building names files by where they end up), in place. */
void mb_rpt_stage_msg(const mb_rpt_stage *st, char *msg, size_t size);

/* Writes dir/index.md and dir/index.html listing the model-only figures of
 * device d, with the model's table of the variants of defs (the lecture's
 * when it defines none). */
int mb_rpt_write_model_index(const mb_rpt_set *defs, const mb_device *d,
                             const mb_rpt_figures *figs, const char *dir, mb_err *err);

/* Creates dir and its parents (mode 0777 & ~umask). MB_EINPUT naming it
 * when the path is unusable (a file in the way, no permission), MB_ERUN for
 * a full disk or an I/O error. */
int mb_rpt_mkdirs(const char *dir, mb_err *err);

/* The files mb_rpt_write writes into its folder (report.md, report.html,
 * summary.csv, ...), NULL-terminated: for refusing an input among them
 * before any work. The pages are named by write_doc.c's "report" stem. */
extern const char *const mb_rpt_report_files[];

/* Checks, creating nothing, that dir could be made and written: it, or its
 * nearest existing ancestor, is a directory this process may write in.
 * MB_EINPUT naming the obstacle. For checking -o before any work. */
int mb_rpt_check_out_dir(const char *dir, mb_err *err);

#ifdef __cplusplus
}
#endif
#endif
