/* cli_common.c — error lines, option values and formatting shared by the
 * subcommands. No subcommand logic. */
#include "cli_common.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Writes msg with control bytes as \xNN, so user text never breaks the
 * one-line rule. */
static void put_escaped(const char *msg)
{
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) fprintf(stderr, "\\x%02x", *p);
        else fputc(*p, stderr);
    }
}

/* "membound: LEVEL: msg" on stderr, control characters escaped. */
static void put_line(const char *level, const char *fmt, va_list ap)
{
    char msg[sizeof ((mb_err *)0)->msg + 512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "membound: %s: ", level);
    put_escaped(msg);
    fputc('\n', stderr);
}

int mb_cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_line("error", fmt, ap);
    va_end(ap);
    return code;
}

int mb_cli_fail_err(int code, const mb_err *err)
{
    return mb_cli_fail(code, "%s", err->msg);
}

void mb_cli_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_line("note", fmt, ap);
    va_end(ap);
}

void mb_cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    put_line("warning", fmt, ap);
    va_end(ap);
}

void mb_cli_note_line(const char *line)
{
    mb_cli_note("%s", line);
}

void mb_cli_warn_line(const char *line)
{
    mb_cli_warn("%s", line);
}

void mb_cli_graph_warning(const mb_graph *g)
{
    if (!g || !g->n_warnings) return;
    fputs("membound: warning: ", stderr);
    put_escaped(g->warning);
    if (g->n_warnings > 1) fprintf(stderr, " (and %d more)", g->n_warnings - 1);
    fputc('\n', stderr);
}

static int push_size(int64_t **v, int *n, int64_t x, mb_err *err)
{
    if (*n >= 4096) return mb_err_set(err, MB_EINPUT, "too many sizes (at most 4096)");
    int64_t *nv = realloc(*v, (size_t)(*n + 1) * sizeof **v);
    if (!nv) return mb_err_set(err, MB_ERUN, "out of memory");
    nv[(*n)++] = x;
    *v = nv;
    return MB_OK;
}

int mb_cli_parse_shapes(const char *s, mb_shape **out, int *count, mb_err *err)
{
    *out = NULL;
    *count = 0;
    char *copy = strdup(s);
    if (!copy) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK, rank = 0;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && rc == MB_OK; item = strtok_r(NULL, ",", &save)) {
        mb_shape one[1], *many = one;
        int n = 1;
        int64_t *ns = NULL;
        if (strchr(item, 'x')) rc = mb_shape_parse(item, &one[0], err);
        else if ((rc = mb_cli_parse_sizes(item, &ns, &n, err)) == MB_OK && !(many = malloc((size_t)n * sizeof *many)))
            rc = mb_err_set(err, MB_ERUN, "out of memory");
        for (int k = 0; rc == MB_OK && ns && k < n; k++) many[k] = mb_shape_1d(ns[k]);
        free(ns);
        if (rc == MB_OK && rank && many[0].rank != rank)
            rc = mb_err_set(err, MB_EINPUT, "sizes '%s' mix 1-D sizes and ROWSxCOLS shapes: give one kind", s);
        if (rc == MB_OK) rank = many[0].rank;
        mb_shape *grown = rc == MB_OK ? realloc(*out, (size_t)(*count + n) * sizeof **out) : NULL;
        if (rc == MB_OK && !grown) rc = mb_err_set(err, MB_ERUN, "out of memory");
        if (rc == MB_OK) {
            memcpy(grown + *count, many, (size_t)n * sizeof *many);
            *out = grown;
            *count += n;
        }
        if (many != one) free(many);
    }
    free(copy);
    if (rc == MB_OK && *count == 0) rc = mb_err_set(err, MB_EINPUT, "no sizes in '%s'", s);
    if (rc != MB_OK) { free(*out); *out = NULL; *count = 0; }
    return rc;
}

int mb_cli_parse_sizes(const char *s, int64_t **out, int *count, mb_err *err)
{
    *out = NULL;
    *count = 0;
    char *copy = strdup(s);
    if (!copy) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && rc == MB_OK; item = strtok_r(NULL, ",", &save)) {
        char *dots = strstr(item, "..");
        if (!dots) {
            int64_t n;
            rc = mb_size_parse(item, &n, err);
            if (rc == MB_OK) rc = push_size(out, count, n, err);
            continue;
        }
        *dots = '\0';
        char *hi_s = dots + 2, *step_s = strchr(hi_s, ':');
        int step = 1;
        if (step_s) {
            *step_s++ = '\0';
            char *end;
            errno = 0;
            long v = strtol(step_s, &end, 10);
            if (errno || *end || end == step_s || v < 1 || v > 64) {
                rc = mb_err_set(err, MB_EINPUT, "range step ':%s' must be an integer from 1 to 64", step_s);
                break;
            }
            step = (int)v;
        }
        int64_t lo, hi;
        if ((rc = mb_size_parse(item, &lo, err)) || (rc = mb_size_parse(hi_s, &hi, err))) break;
        if (lo > hi) { rc = mb_err_set(err, MB_EINPUT, "range %s..%s is empty", item, hi_s); break; }
        /* lo, 2 lo, 4 lo, ... up to hi; every step-th of them */
        int idx = 0;
        for (int64_t n = lo; n <= hi && rc == MB_OK; n *= 2, idx++)
            if (idx % step == 0) rc = push_size(out, count, n, err);
    }
    free(copy);
    if (rc == MB_OK && *count == 0) rc = mb_err_set(err, MB_EINPUT, "no sizes in '%s'", s);
    if (rc != MB_OK) { free(*out); *out = NULL; *count = 0; }
    return rc;
}

/* Splits a comma list into values parsed by parse (0 = ok), each once. */
static int parse_list(const char *opt, const char *what, const char *known, const char *s, int max,
                      int (*parse)(const char *, int *), int *out, int *count)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *count = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        size_t len = strlen(tok);
        while (len && tok[len - 1] == ' ') tok[--len] = '\0';
        int v;
        char near[64];
        if (parse(tok, &v) != 0 && mb_closest_word(tok, strchr(known, ':') + 2, near, sizeof near))
            return mb_cli_fail(2, "%s: unknown %s '%s' (did you mean '%s'?; %s)", opt, what, tok, near, known);
        if (parse(tok, &v) != 0) return mb_cli_fail(2, "%s: unknown %s '%s' (%s)", opt, what, tok, known);
        for (int i = 0; i < *count; i++)
            if (out[i] == v) return mb_cli_fail(2, "%s: '%s' given twice in '%s'", opt, tok, s);
        if (*count >= max) return mb_cli_fail(2, "%s: too many values in '%s'", opt, s);
        out[(*count)++] = v;
    }
    if (!*count) return mb_cli_fail(2, "%s: empty list", opt);
    return 0;
}

static int one_dtype(const char *s, int *v)
{
    mb_dtype t;
    if (mb_dtype_parse(s, &t) != MB_OK) return 1;
    *v = (int)t;
    return 0;
}

static int one_plan(const char *s, int *v)
{
    mb_plan_kind k;
    if (mb_plan_parse(s, &k) != MB_OK) return 1;
    *v = (int)k;
    return 0;
}

int mb_cli_dtypes(const char *s, mb_dtype *out, int *count)
{
    int v[MB_DTYPE_COUNT];
    int rc = parse_list("--dtype", "dtype", "dtypes: f32, bf16, f16", s, MB_DTYPE_COUNT, one_dtype, v, count);
    for (int i = 0; !rc && i < *count; i++) out[i] = (mb_dtype)v[i];
    return rc;
}

int mb_cli_plans(const char *s, mb_plan_kind *out, int *count)
{
    int v[MB_PLAN_COUNT];
    int rc = parse_list("--plan", "plan", "plans: eager, fused, store, recompute, optimal, online", s, MB_PLAN_COUNT,
                        one_plan, v, count);
    for (int i = 0; !rc && i < *count; i++) out[i] = (mb_plan_kind)v[i];
    return rc;
}

int mb_cli_variant_names(int argc, char **argv, int first, char (**names)[MB_NAME_MAX], int *count,
                         mb_err *err)
{
    *names = NULL;
    *count = 0;
    int n = argc - first;
    if (n > 0) {
        *names = calloc((size_t)n, MB_NAME_MAX);
        if (!*names) return mb_err_set(err, MB_ERUN, "out of memory");
        for (int i = 0; i < n; i++) snprintf((*names)[i], MB_NAME_MAX, "%s", argv[first + i]);
        *count = n;
        return MB_OK;
    }
    int total = mb_variant_list(NULL, 0);
    if (total == 0)
        return mb_err_set(err, MB_ERUN, "no built-in variants found in %s (set MEMBOUND_VARIANTS)",
                          mb_variant_dir());
    *names = calloc((size_t)total, MB_NAME_MAX);
    if (!*names) return mb_err_set(err, MB_ERUN, "out of memory");
    *count = mb_variant_list(*names, total);
    if (*count > total) *count = total;
    return MB_OK;
}

const char *mb_cli_fmt_bytes(double bytes, char *buf, int bufsize)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (bytes >= 1000 && u < 5) { bytes /= 1000; u++; }
    snprintf(buf, (size_t)bufsize, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
    return buf;
}

const char *mb_cli_fmt_time(double s, char *buf, int bufsize)
{
    double a = s < 0 ? -s : s; /* a fitted intercept may be negative */
    if (a >= 1) snprintf(buf, (size_t)bufsize, "%.2f s", s);
    else if (a >= 1e-3) snprintf(buf, (size_t)bufsize, "%.2f ms", s * 1e3);
    else if (a >= 1e-6) snprintf(buf, (size_t)bufsize, "%.2f us", s * 1e6);
    else snprintf(buf, (size_t)bufsize, "%.0f ns", s * 1e9);
    return buf;
}

void mb_cli_meas_note(void *ctx, const char *level, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "membound: %s: %s\n", level, msg);
}

int mb_cli_bad_option(int c, char **argv, int optind_now, int optopt_now, const char *cmd)
{
    const char *arg = argv[optind_now - 1];
    if (c == ':')
        return mb_cli_fail(2, "option '%s' needs a value (see 'membound %s --help')", arg, cmd);
    if (optopt_now && strncmp(arg, "--", 2) != 0)
        return mb_cli_fail(2, "unknown option '-%c' (see 'membound %s --help')", optopt_now, cmd);
    return mb_cli_fail(2, "unknown option '%s' (see 'membound %s --help')", arg, cmd);
}

int mb_cli_dtype(const char *s, mb_dtype *out)
{
    if (mb_dtype_parse(s, out) == MB_OK) return 0;
    return mb_cli_fail(2, "unknown dtype '%s' (dtypes: f32, bf16, f16)", s);
}

int mb_cli_size(const char *s, int64_t *out)
{
    mb_err e;
    if (mb_size_parse(s, out, &e) == MB_OK) return 0;
    return mb_cli_fail_err(2, &e);
}

int mb_cli_keyed_sizes(const char *opt, const char *s, const char *const *keys, int nkeys, int64_t *v, int *seen,
                       const char *example)
{
    char buf[256], list[160] = "";
    if (strlen(s) >= sizeof buf) return mb_cli_fail(2, "%s '%.40s...' is too long", opt, s);
    snprintf(buf, sizeof buf, "%s", s);
    if (!buf[0] || buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,"))
        return mb_cli_fail(2, "%s '%s': expected key=size pairs separated by commas (%s)", opt, s, example);
    for (int i = 0; i < nkeys; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", keys[i]);
    for (int i = 0; i < nkeys; i++) seen[i] = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        while (*p == ' ') p++;
        char *eq = strchr(p, '=');
        if (!eq) return mb_cli_fail(2, "%s '%s': '%s' is not key=size", opt, s, p);
        *eq = 0;
        int i = 0;
        while (i < nkeys && strcmp(p, keys[i])) i++;
        if (i == nkeys) return mb_cli_fail(2, "%s '%s': unknown key '%s' (%s)", opt, s, p, list);
        if (seen[i]) return mb_cli_fail(2, "%s '%s': %s given twice", opt, s, p);
        seen[i] = 1;
        mb_err e;
        if (mb_size_parse(eq + 1, &v[i], &e)) return mb_cli_fail(2, "%s '%s': %s: %s", opt, s, p, e.msg);
    }
    return 0;
}

int mb_cli_gemm_devices(const char *list, mb_dtype dt, mb_device **out, int *count, int **rated)
{
    *rated = NULL;
    int rc = mb_cli_devices(list ? list : "h100-sxm", out, count);
    if (rc) return rc;
    int n = *count, n_rated = 0;
    int *r = calloc((size_t)n + 1, sizeof *r);
    if (!r) {
        free(*out);
        *out = NULL;
        return mb_cli_fail(1, "out of memory");
    }
    for (int i = 0; i < n; i++) n_rated += r[i] = n == 1 || mb_gemm_peak_flops(&(*out)[i], dt, NULL) > 0;
    if (n_rated == 0) { /* one error line, no notes before it */
        free(*out), free(r);
        *out = NULL;
        return mb_cli_fail(2, "no device of the list has a %s GEMM rate", mb_dtype_name(dt));
    }
    for (int i = 0; i < n; i++) { /* a device of a list without the dtype's rate (bf16 on a V100): said, skipped */
        const char *key = NULL;
        if (!r[i] && !(mb_gemm_peak_flops(&(*out)[i], dt, &key) > 0))
            mb_cli_note("%s: no %s GEMM rate (%s is 0): skipped", (*out)[i].name, mb_dtype_name(dt), key);
    }
    *rated = r;
    return 0;
}

int mb_cli_devices(const char *list, mb_device **out, int *count)
{
    *out = NULL;
    *count = 0;
    mb_err e;
    if (!strcmp(list, "all")) {
        int n = mb_device_count();
        *out = malloc((size_t)n * sizeof **out);
        if (!*out) return mb_cli_fail(1, "out of memory");
        for (int i = 0; i < n; i++) (*out)[i] = *mb_device_at(i);
        *count = n;
        return 0;
    }
    char *copy = strdup(list), *save = NULL;
    if (!copy) return mb_cli_fail(1, "out of memory");
    for (char *id = strtok_r(copy, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*id)) id++; /* 'a, b' as 'a,b' */
        size_t len = strlen(id);
        while (len && isspace((unsigned char)id[len - 1])) id[--len] = '\0';
        if (!len) continue;
        mb_device *nd = realloc(*out, (size_t)(*count + 1) * sizeof **out);
        if (!nd) { free(copy); free(*out); *out = NULL; return mb_cli_fail(1, "out of memory"); }
        *out = nd;
        int rc = mb_device_find(id, &(*out)[*count], &e);
        if (rc) { free(copy); free(*out); *out = NULL; return mb_cli_fail_err(rc, &e); }
        /* a quick calibration's arrays are cache-sized (measure/hostref.c): said, not refused */
        const char *cal = (*out)[*count].calibration;
        if (!strcmp(cal, "quick") || !strcmp(cal, "fallback"))
            mb_cli_note("%s: a %s calibration streams cache-sized arrays, so its bandwidths are cache figures, "
                        "not DRAM's ('membound calibrate' without --quick measures a spec for the model)", id, cal);
        (*count)++;
    }
    free(copy);
    if (*count == 0) return mb_cli_fail(2, "--devices is empty");
    return 0;
}

void mb_cli_calib_test_hook(int *refuse_first, double *backoff_s)
{
    const char *v = getenv("MEMBOUND_TEST_CALIB_REFUSE");
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || !end || *end || n < 1 || n > 100) return;
    *refuse_first = (int)n;
    *backoff_s = 0.05;
}

double mb_cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mb_cli_scheduler_line(char *buf, size_t size)
{
    const char *job = getenv("SLURM_JOB_ID");
    buf[0] = '\0';
    if (!job || !*job) return;
    const char *arr = getenv("SLURM_ARRAY_JOB_ID"), *task = getenv("SLURM_ARRAY_TASK_ID");
    const char *node = getenv("SLURMD_NODENAME"), *part = getenv("SLURM_JOB_PARTITION");
    const char *cluster = getenv("SLURM_CLUSTER_NAME");
    char a[96] = "";
    if (arr && *arr && task && *task) snprintf(a, sizeof a, ", array task %.40s_%.40s", arr, task);
    snprintf(buf, size, "scheduler: slurm job %.40s%s, node %.100s, partition %.100s, cluster %.100s", job, a,
             node && *node ? node : "?", part && *part ? part : "?", cluster && *cluster ? cluster : "?");
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' '; /* one line, whatever the environment held */
}
