/* measure.c — protocol settings, sample statistics, records and the backend
 * switch. Does not run kernels itself (cpu_run.c, cuda_backend.*). */
#define _POSIX_C_SOURCE 200809L
#include "measure.h"

#include <math.h>
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

void mb_meas_stats_compute(const double *samples, int n, mb_meas_stats *out)
{
    memset(out, 0, sizeof *out);
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
    memset(row, 0, sizeof *row);
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
    mb_estimate e;
    int rc = mb_estimate_plan(p, n, dev, &e, err);
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

int mb_meas_resolve_backend(mb_meas_backend want, mb_meas_backend *got, char *note, size_t notesz,
                            mb_err *err)
{
    char why[256] = "";
    if (note && notesz) note[0] = '\0';
    if (want == MB_MEAS_CPU) {
        *got = MB_MEAS_CPU;
        return MB_OK;
    }
    int ok = mb_meas_cuda_available(why, sizeof why);
    if (want == MB_MEAS_CUDA) {
        if (!ok) return mb_err_set(err, MB_ERUN, "--backend cuda: no usable GPU (%s)", why);
        *got = MB_MEAS_CUDA;
        return MB_OK;
    }
    *got = ok ? MB_MEAS_CUDA : MB_MEAS_CPU;
    if (note && notesz) {
        if (ok) snprintf(note, notesz, "backend auto: using cuda");
        else snprintf(note, notesz, "backend auto: using cpu (cuda: %s)", why);
    }
    return MB_OK;
}

int mb_meas_run(mb_meas_backend b, const mb_plan *p, int64_t n, const mb_meas_config *c,
                mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                mb_err *err)
{
    if (b == MB_MEAS_CUDA) return mb_meas_cuda_run(p, n, c, row, per_kernel, why, whysz, err);
    if (b == MB_MEAS_CPU) return mb_meas_cpu_run(p, n, c, row, per_kernel, why, whysz, err);
    return mb_err_set(err, MB_EINPUT, "backend must be resolved before running");
}

void mb_meas_row_finish(mb_meas_record *row, const double *samples, int ns, int checked,
                        double max_err, int passed, mb_meas_record *per_kernel, int nk,
                        const double *ksamples, size_t stride, double *tmp)
{
    mb_meas_stats rs;
    mb_meas_stats_compute(samples, ns, &rs);
    row->reps = ns;
    row->time_s_median = rs.median_s;
    row->time_s_min = rs.min_s;
    row->time_s_p90 = rs.p90_s;
    row->time_cv = rs.cv;
    row->max_rel_err = checked ? max_err : NAN;
    row->verified = checked ? passed : 0;
    for (int k = 0; per_kernel && k < nk; k++) {
        mb_meas_record *pk = &per_kernel[k];
        memcpy(pk->device, row->device, sizeof pk->device);
        memcpy(pk->backend, row->backend, sizeof pk->backend);
        memcpy(pk->counters, row->counters, sizeof pk->counters);
        pk->dram_read_bytes = pk->dram_write_bytes = -1;
        memcpy(tmp, ksamples + (size_t)k * stride, (size_t)ns * sizeof(double));
        mb_meas_stats st;
        mb_meas_stats_compute(tmp, ns, &st);
        pk->reps = ns;
        pk->time_s_median = st.median_s;
        pk->time_s_min = st.min_s;
        pk->time_s_p90 = st.p90_s;
        pk->time_cv = st.cv;
        pk->max_rel_err = row->max_rel_err;
        pk->verified = row->verified;
    }
}
