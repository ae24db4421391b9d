/* cli_common.h — helpers shared by the subcommands: error lines, option
 * values (sizes, dtypes, devices, variant lists). No subcommand logic. */
#ifndef MB_CLI_COMMON_H
#define MB_CLI_COMMON_H

#include "membound_model.h"

#include <stdint.h>

/* getopt code of --dims, a long option only (whatif's -D is --devices) */
#define MB_OPT_DIMS 0x144
#define MB_OPT_PHASE 0x145 /* model --phase */
#define MB_OPT_FLUSH 0x146 /* model --flush-mb */
#define MB_OPT_COLSUM 0x147 /* model, whatif, plan --colsum */

/* Prints "membound: error: <msg>" to stderr and returns code. */
int mb_cli_fail(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints an mb_err as one error line and returns code. */
int mb_cli_fail_err(int code, const mb_err *err);

/* Prints "membound: note: <msg>" to stderr (progress, fallbacks). */
void mb_cli_note(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Seconds on the monotonic clock (for progress notes' elapsed times). */
double mb_cli_now_s(void);

/* Prints the parse's warning of g, if any, as one "membound: warning: " line. */
void mb_cli_graph_warning(const mb_graph *g);

/* Prints "membound: warning: <msg>" to stderr, under --quiet too (a cache
 * refused, a fallback the user should know of). */
void mb_cli_warn(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* mb_cli_note and mb_cli_warn for a callback that takes one line. */
void mb_cli_note_line(const char *line);
void mb_cli_warn_line(const char *line);

/* The measurement library's note callback (mb_meas_config.note): prints
 * "membound: <level>: <msg>" to stderr; the library drops notes under
 * --quiet itself. */
void mb_cli_meas_note(void *ctx, const char *level, const char *msg);

/* The test hook of calibration refusals, from the environment (the CLI reads
 * it, the libraries do not): MEMBOUND_TEST_CALIB_REFUSE=N takes the first N
 * calibrations of the run as refused for contention, with 0.05 s backoffs
 * (mb_cal_spec_req's refuse_first and backoff_s). Sets *refuse_first and
 * *backoff_s when it is set to a count. */
void mb_cli_calib_test_hook(int *refuse_first, double *backoff_s);

/* For getopt_long's '?' / ':' returns (opterr = 0): one error line naming
 * the option ("unknown option '--foo'", "option '--n' needs a value"),
 * returns 2. */
int mb_cli_bad_option(int c, char **argv, int optind_now, int optopt_now, const char *cmd);

/* Parses --dtype, --n values with one error line; 0 or 2. */
int mb_cli_dtype(const char *s, mb_dtype *out);
int mb_cli_size(const char *s, int64_t *out);
/* "key=size,..." (each size as --n takes it) into v[i] for keys[i] (nkeys
 * of them), seen[i] 1 for each given; 0, or 2 after one error line naming
 * opt and s (a malformed list shows example). */
int mb_cli_keyed_sizes(const char *opt, const char *s, const char *const *keys, int nkeys, int64_t *v, int *seen,
                       const char *example);

/* Comma-separated lists of dtypes ("bf16,f32") and plans ("eager,fused"),
 * each value once, into out (at most MB_DTYPE_COUNT / MB_PLAN_COUNT).
 * Returns 0, or 2 after one error line naming the option. */
int mb_cli_dtypes(const char *s, mb_dtype *out, int *count);
int mb_cli_plans(const char *s, mb_plan_kind *out, int *count);

/* A comma-separated list of sizes ("2^16,2^20,16M") or a geometric range
 * "2^16..2^28" (every power of two) or "2^16..2^28:4" (every 4th). Returns
 * MB_OK and a malloc'd array, or MB_EINPUT. */
int mb_cli_parse_sizes(const char *s, int64_t **out, int *count, mb_err *err);
/* The same list where items may also be ROWSxCOLS shapes (4096x1024,
 * 2^12x2^12), into *out (malloc'd): all 1-D or all 2-D, else MB_EINPUT. */
int mb_cli_parse_shapes(const char *s, mb_shape **out, int *count, mb_err *err);

/* The variants named on the command line, or every built-in when none. */
int mb_cli_variant_names(int argc, char **argv, int first, char (**names)[MB_NAME_MAX],
                         int *count, mb_err *err);

/* Devices of a --devices list: comma-separated table ids or INI files
 * (spaces around each ignored), or "all" (the table). *out is malloc'd.
 * Returns 0, or an exit code after printing one error line. */
int mb_cli_devices(const char *list, mb_device **out, int *count);
/* mb_cli_devices of list (NULL: h100-sxm) for a command that multiplies
 * matrices at dtype dt (gemm, attention): (*rated)[i] is 1 where device i
 * has dt's GEMM rate, or is the only one (its estimate says what it lacks);
 * a device of a list without it is noted and left out, and a list with none
 * is exit 2. Returns 0, or the exit code after the error line; the caller
 * frees *out and *rated. */
int mb_cli_gemm_devices(const char *list, mb_dtype dt, mb_device **out, int *count, int **rated);

/* Human-readable byte count: "12.58 MB" (1e6), for tables. */
const char *mb_cli_fmt_bytes(double bytes, char *buf, int bufsize);
/* Human-readable time: "1.23 ms", "45.6 us", "2.10 s". */
const char *mb_cli_fmt_time(double s, char *buf, int bufsize);

/* The batch job this process runs in, from SLURM's environment, as one
 * provenance line ("scheduler: slurm job 12, array task 11_1, node n1,
 * partition p, cluster c"; "?" for what the environment lacks); "" outside
 * a job. */
void mb_cli_scheduler_line(char *buf, size_t size);

#endif
