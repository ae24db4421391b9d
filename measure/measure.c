/* measure.c — protocol settings (defaults, the environment variables the CLI
 * passes in), the note callback, sample statistics and records. Does not run
 * kernels or the protocol (protocol.c and the backends do). */
#define _POSIX_C_SOURCE 200809L
#include "protocol_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *mb_meas_backend_name(mb_meas_backend b)
{
    switch (b) {
    case MB_MEAS_AUTO: return "auto";
    case MB_MEAS_CPU: return "cpu";
    case MB_MEAS_CUDA: return "cuda";
    case MB_MEAS_BACKEND_COUNT: break;
    }
    return "?";
}

int mb_meas_backend_parse(const char *s, mb_meas_backend *out)
{
    for (int b = 0; b < MB_MEAS_BACKEND_COUNT; b++)
        if (!strcmp(s, mb_meas_backend_name((mb_meas_backend)b))) {
            *out = (mb_meas_backend)b;
            return MB_OK;
        }
    return MB_EINPUT;
}

void mb_meas_config_default(mb_meas_config *c)
{
    memset(c, 0, sizeof *c);
    c->warmup = 2;
    c->min_reps = 10;
    c->max_reps = 200;
    c->max_cv = 0.02;
    c->min_time_s = 0.2;
    c->timeout_s = 10.0;
    c->cold = 1;
    c->exec = MB_KERN_EXEC_AUTO;
    c->check = 1;
    c->gradcheck_points = 64;
    c->counters = 1;
    c->cuda_block = 1;
    c->row_details = 1;
}

int mb_meas_exec_parse(const char *s, int *exec, mb_err *err)
{
    char names[128] = "";
    for (int k = 0; k < MB_KERN_EXEC_COUNT; k++) {
        const char *name = mb_kern_exec_name((mb_kern_exec)k);
        if (!strcmp(s, name)) {
            *exec = k;
            return MB_OK;
        }
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", k ? ", " : "", name);
    }
    return mb_err_set(err, MB_EINPUT, "unknown executor '%s' (executors: %s)", s, names);
}


const char *mb_meas_exec_name(int exec)
{
    return exec >= 0 && exec < MB_KERN_EXEC_COUNT ? mb_kern_exec_name((mb_kern_exec)exec) : "?";
}

void mb_meas_set_env(char *(*lookup)(const char *name))
{
    mb_kern_jit_set_env(lookup ? lookup("XDG_CACHE_HOME") : NULL, lookup ? lookup("HOME") : NULL);
    const char *cc = lookup ? lookup("MEMBOUND_JIT_CC") : NULL;
    if (cc && cc[0]) mb_kern_jit_configure(MB_KERN_JIT_AUTO, cc, NULL);
    const char *t = lookup ? lookup("MEMBOUND_JIT_TIMEOUT_S") : NULL;
    mb_kern_jit_set_timeout(t ? strtod(t, NULL) : 0);
}

void mb_meas_set_jit_warn(void (*warn)(const char *line))
{
    mb_kern_jit_set_warn(warn);
}

const char *mb_meas_jit_why_not(void)
{
    return mb_kern_jit_why_not();
}

const char *mb_meas_vector_isa(void)
{
    return mb_kern_vector_isa();
}

/* ---- settings from the environment ----------------------------------------- */

/* "1", "yes", anything but "" and "0" */
static int env_flag(const char *v)
{
    return *v && strcmp(v, "0") != 0;
}

static int env_device(mb_meas_config *c, const char *v)
{
    if (!*v) return 0; /* set but empty: the default */
    char *end = NULL;
    long d = strtol(v, &end, 10);
    if (!end || *end || d < 0 || d > 1023) return -1;
    c->cuda_device = (int)d;
    return 0;
}

static int env_no_block(mb_meas_config *c, const char *v)
{
    c->cuda_block = !env_flag(v);
    return 0;
}

static int env_once(mb_meas_config *c, const char *v)
{
    c->cuda_once = env_flag(v);
    return 0;
}

static int env_impl(mb_meas_config *c, const char *v)
{
    static const char *const names[MB_MEAS_CUDA_IMPL_COUNT] = {"auto", "eval", "nohand"};
    if (!*v) v = "auto";
    for (int i = 0; i < MB_MEAS_CUDA_IMPL_COUNT; i++)
        if (!strcmp(v, names[i])) {
            c->cuda_impl = (mb_meas_cuda_impl)i;
            return 0;
        }
    return -1;
}

static int env_cupti(mb_meas_config *c, const char *v)
{
    c->cupti_disabled = !strcmp(v, "0");
    return 0;
}

static int env_kernel_clean(mb_meas_config *c, const char *v)
{
    c->cupti_kernel_clean = env_flag(v);
    return 0;
}

/* The variables, one row each: name and value for --help, what it does
 * (lines after the first are indented by the printer), what a value must
 * look like, and how it sets the config. */
static const struct env_var {
    const char *name, *value, *help, *expect;
    int (*apply)(mb_meas_config *c, const char *value);
} env_vars[] = {
    {"MB_CUDA_DEVICE", "N", "GPU ordinal for the cuda backend (default 0)", "a device ordinal",
     env_device},
    {"MB_CUDA_NO_BLOCK", "1", "time without the blocking kernel (launch latency\nincluded)", "",
     env_no_block},
    {"MB_CUDA_ONCE", "1", "each plan once: no warm-up, one checked run, no\ncounters (for ncu, "
     "which replays every launch)", "", env_once},
    {"MB_CUDA_IMPL", "I", "CUDA kernels: auto (hand-written where they match),\neval (all through "
     "the evaluator), nohand", "auto, eval or nohand", env_impl},
    {"MB_CUPTI", "0", "no CUPTI counters (timing only)", "", env_cupti},
    {"MB_CUPTI_KERNEL_CLEAN", "1", "per-kernel counts each from a clean L2 (as\nncu --cache-control all)",
     "", env_kernel_clean},
};
#define N_ENV_VARS (sizeof env_vars / sizeof env_vars[0])

void mb_meas_config_env(mb_meas_config *c, char *(*lookup)(const char *name))
{
    for (size_t i = 0; i < N_ENV_VARS; i++) {
        const char *v = lookup(env_vars[i].name);
        if (v && env_vars[i].apply(c, v) != 0)
            mb_meas_note(c, MB_MEAS_WARNING, "ignoring %s='%s': expected %s", env_vars[i].name, v,
                         env_vars[i].expect);
    }
}

void mb_meas_env_usage(FILE *fp)
{
    fprintf(fp, "environment (read by the CLI, for the cuda backend):\n");
    for (size_t i = 0; i < N_ENV_VARS; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s=%s", env_vars[i].name, env_vars[i].value);
        fprintf(fp, "  %-23s ", key);
        for (const char *h = env_vars[i].help; *h; h++) {
            fputc(*h, fp);
            if (*h == '\n') fprintf(fp, "%26s", "");
        }
        fputc('\n', fp);
    }
    fprintf(fp, "and for the cpu backend's compiled kernels:\n"
                "  MEMBOUND_JIT_CC=CC      the C compiler they are built with (default: the one\n"
                "                          that built membound)\n"
                "  MEMBOUND_JIT_TIMEOUT_S=S  its deadline (default 60): past it, or on SIGINT/TERM,\n"
                "                          it is killed and the kernels are interpreted\n");
}

/* ---- notes ------------------------------------------------------------------ */

void mb_meas_note_to(mb_meas_note_cb note, void *ctx, const char *level, const char *fmt, va_list ap)
{
    if (!note) return;
    char msg[1600];
    vsnprintf(msg, sizeof msg, fmt, ap);
    note(ctx, level, msg);
}

void mb_meas_vnote(const mb_meas_config *c, const char *level, const char *fmt, va_list ap)
{
    if (!c || (c->quiet && !strcmp(level, MB_MEAS_NOTE))) return;
    mb_meas_note_to(c->note, c->note_ctx, level, fmt, ap);
}

void mb_meas_note(const mb_meas_config *c, const char *level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mb_meas_vnote(c, level, fmt, ap);
    va_end(ap);
}

double mb_meas_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile q of sorted s (linear interpolation between order statistics). */
static double quantile(const double *s, int n, double q)
{
    double pos = q * (double)(n - 1);
    int lo = (int)floor(pos);
    if (lo >= n - 1) return s[n - 1];
    double f = pos - lo;
    return s[lo] * (1.0 - f) + s[lo + 1] * f;
}

/* The two modes of sorted s into out (see mb_meas_stats_compute). */
static void find_modes(const double *s, int n, mb_meas_stats *out)
{
    out->lower_mode_s = out->upper_mode_s = NAN;
    out->upper_mode_share = 0;
    if (n < 10 || !(s[0] > 0)) return;
    int edge = (n + 4) / 5 > 3 ? (n + 4) / 5 : 3, split = 0;
    double *step = malloc((size_t)n * sizeof(double));
    if (!step) return;
    double best = 0;
    for (int i = 1; i < n; i++) {
        step[i - 1] = s[i] / s[i - 1] - 1;
        if (i >= edge && n - i >= edge && step[i - 1] > best) best = step[i - 1], split = i;
    }
    qsort(step, (size_t)(n - 1), sizeof(double), cmp_double);
    double typical = quantile(step, n - 1, 0.5);
    free(step);
    if (!split || best < 0.10 || best < 4 * typical) return;
    double lo = quantile(s, split, 0.5), hi = quantile(s + split, n - split, 0.5);
    if (hi < 1.2 * lo) return;
    out->lower_mode_s = lo;
    out->upper_mode_s = hi;
    out->upper_mode_share = (double)(n - split) / n;
}

void mb_meas_stats_compute(const double *samples, int n, mb_meas_stats *out)
{
    memset(out, 0, sizeof *out);
    out->lower_mode_s = out->upper_mode_s = NAN;
    if (n < 1) return;
    double *s = malloc((size_t)n * sizeof(double));
    if (!s) return;
    memcpy(s, samples, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    double mean = sum / n, ss = 0;
    for (int i = 0; i < n; i++) ss += (s[i] - mean) * (s[i] - mean);
    out->n = n;
    out->min_s = s[0];
    out->median_s = quantile(s, n, 0.5);
    out->p90_s = quantile(s, n, 0.9);
    out->mean_s = mean;
    out->cv = (n > 1 && mean > 0) ? sqrt(ss / (n - 1)) / mean : 0.0;
    find_modes(s, n, out);
    free(s);
}

int mb_meas_should_stop(const mb_meas_config *c, const double *samples, int n, double elapsed_s)
{
    int min_reps = c->min_reps < 10 ? 10 : c->min_reps;
    if (n < min_reps) return 0;
    if (n >= c->max_reps || elapsed_s >= c->timeout_s) return 1;
    mb_meas_stats st;
    mb_meas_stats_compute(samples, n, &st);
    return st.cv <= c->max_cv && elapsed_s >= c->min_time_s;
}

static void copy_str(char *dst, size_t dstsz, const char *src)
{
    size_t k = strlen(src);
    if (k >= dstsz) k = dstsz - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
}

static void fill_model(mb_meas_record *r, const mb_cost *c)
{
    r->model_time_s = c->time_s;
    r->read_bytes = c->read_bytes;
    r->write_bytes = c->write_bytes;
    r->model_dram_read_bytes = c->dram_read_bytes;
    r->model_dram_write_bytes = c->dram_write_bytes;
}

int mb_meas_record_init(mb_meas_record *row, mb_meas_record *per_kernel, const char *variant,
                        const mb_plan *p, int64_t n, const mb_device *dev, mb_err *err)
{
    return mb_meas_record_init_shape(row, per_kernel, variant, p, mb_shape_1d(n), dev, err);
}

mb_shape mb_meas_record_shape(const mb_meas_record *r)
{
    if (r->rows > 0 && r->cols > 0) return (mb_shape){2, r->rows, r->cols, 0};
    return mb_shape_1d(r->n);
}

int mb_meas_record_init_shape(mb_meas_record *row, mb_meas_record *per_kernel, const char *variant,
                              const mb_plan *p, mb_shape shape, const mb_device *dev, mb_err *err)
{
    int64_t n = mb_shape_elems(shape);
    memset(row, 0, sizeof *row);
    if (shape.rank == 2) { /* a flat graph (a loss over [batch, seq]) runs 1-D: no dims */
        row->rows = shape.rows, row->cols = shape.cols;
        mb_graph_dims_text(p->g, row->dims, sizeof row->dims);
    }
    copy_str(row->variant, sizeof row->variant, variant);
    copy_str(row->plan, sizeof row->plan, mb_plan_name(p->kind));
    mb_dtype dt = MB_F32;
    if (p->g->n_inputs > 0) dt = p->g->nodes[p->g->inputs[0]].dtype;
    copy_str(row->dtype, sizeof row->dtype, mb_dtype_name(dt));
    copy_str(row->model_device, sizeof row->model_device, dev->name);
    row->n = n;
    row->kernels = p->n_kernels;
    row->dram_read_bytes = row->dram_write_bytes = -1;
    row->model_time_s = NAN;
    row->contended = -1;
    row->host_copy_gbs = row->host_copy_ratio = row->host_op_ratio = NAN;
    row->model_host_time_s = NAN;
    row->time_s_upper_mode = row->upper_mode_share = row->time_s_lower_mode = NAN;
    row->count_err = NAN;
    mb_estimate e;
    int rc = mb_estimate_plan_shape(p, shape, dev, &e, err);
    if (rc) return rc;
    fill_model(row, &e.total);
    if (per_kernel) {
        for (int k = 0; k < p->n_kernels; k++) {
            mb_meas_record *pk = &per_kernel[k];
            *pk = *row;
            pk->kernels = 1;
            copy_str(pk->kernel, sizeof pk->kernel, p->kernels[k].name);
            fill_model(pk, &e.per_kernel[k]);
        }
    }
    mb_estimate_free(&e);
    return MB_OK;
}

int mb_meas_record_host_model(mb_meas_record *row, mb_meas_record *per_kernel, const mb_plan *p,
                              int64_t n, const mb_device *dev, mb_err *err)
{
    const double bw = row->host_copy_ratio, op = row->host_op_ratio;
    if (!(bw > 0 && op > 0 && isfinite(bw) && isfinite(op))) return MB_OK;
    mb_device at_host;
    mb_device_at_rates(dev, bw, op, &at_host);
    mb_estimate e;
    mb_shape s = mb_meas_record_shape(row);
    int rc = s.rank == 2 ? mb_estimate_plan_shape(p, s, &at_host, &e, err) : mb_estimate_plan(p, n, &at_host, &e, err);
    if (rc) return rc;
    row->model_host_time_s = e.total.time_s;
    for (int k = 0; per_kernel && k < p->n_kernels; k++)
        per_kernel[k].model_host_time_s = e.per_kernel[k].time_s;
    mb_estimate_free(&e);
    return MB_OK;
}
