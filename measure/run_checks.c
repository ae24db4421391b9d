/* run_checks.c — measure's policy around the rows: memory admission before
 * any runs, the host's copy bandwidth checked against the calibrated spec
 * before and after them, and what is said of each measured row (contended,
 * drifted, two modes, above the roof, cache-resident). Does not run rows
 * (protocol.c and the backends do) and does not write the CSV (csv.c). */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "measure.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* One line to c->note; a "note" is dropped when c->quiet unless always. */
static void say(const mb_meas_config *c, const char *level, int always, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(const mb_meas_config *c, const char *level, int always, const char *fmt, ...)
{
    if (!always && c->quiet && !strcmp(level, "note")) return;
    va_list ap;
    va_start(ap, fmt);
    mb_meas_note_to(c->note, c->note_ctx, level, fmt, ap);
    va_end(ap);
}

const char *mb_meas_fmt_n(int64_t n, char *buf, size_t bufsz)
{
    if (n > 0 && (n & (n - 1)) == 0) {
        int k = 0;
        while (((int64_t)1 << k) < n) k++;
        snprintf(buf, bufsz, "2^%d", k);
    } else {
        snprintf(buf, bufsz, "%lld", (long long)n);
    }
    return buf;
}

const char *mb_meas_fmt_size(int64_t n, int64_t cols, char *buf, size_t bufsz)
{
    if (cols <= 0 || n % cols) return mb_meas_fmt_n(n, buf, bufsz);
    char rb[32], cb[32];
    snprintf(buf, bufsz, "%sx%s", mb_meas_fmt_n(n / cols, rb, sizeof rb), mb_meas_fmt_n(cols, cb, sizeof cb));
    return buf;
}

const char *mb_meas_fmt_at(int64_t n, int64_t cols, char *buf, size_t bufsz)
{
    char sb[72];
    snprintf(buf, bufsz, "%s %s", cols > 0 ? "shape" : "n =", mb_meas_fmt_size(n, cols, sb, sizeof sb));
    return buf;
}

/* "1.23 ms": s in the unit that fits. */
static const char *fmt_time(double s, char *buf, size_t bufsz)
{
    double a = fabs(s);
    if (a >= 1) snprintf(buf, bufsz, "%.2f s", s);
    else if (a >= 1e-3) snprintf(buf, bufsz, "%.2f ms", s * 1e3);
    else if (a >= 1e-6) snprintf(buf, bufsz, "%.2f us", s * 1e6);
    else snprintf(buf, bufsz, "%.0f ns", s * 1e9);
    return buf;
}

const char *mb_meas_host_ratios(const mb_meas_record *r, char *buf, size_t bufsz)
{
    int len = 0;
    buf[0] = '\0';
    if (r->host_copy_ratio > 0) len = snprintf(buf, bufsz, "copy %.0f%%", 100 * r->host_copy_ratio);
    if (r->host_op_ratio > 0 && len >= 0 && (size_t)len < bufsz)
        snprintf(buf + len, bufsz - (size_t)len, "%sops %.0f%%", len ? ", " : "", 100 * r->host_op_ratio);
    return buf;
}

/* ---- admission ----------------------------------------------------------------- */

int64_t mb_meas_host_memory_bytes(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    size_t kl = strlen(key);
    int64_t v = -1;
    while (fgets(line, sizeof line, f)) {
        long long kb;
        if (!strncmp(line, key, kl) && line[kl] == ':' && sscanf(line + kl + 1, "%lld kB", &kb) == 1) {
            v = (int64_t)kb * 1024;
            break;
        }
    }
    fclose(f);
    return v;
}

int64_t mb_meas_llc_bytes(const mb_meas_config *c)
{
    return c->llc_bytes > 0 ? c->llc_bytes : mb_kern_llc_bytes();
}

void mb_meas_config_for_device(mb_meas_config *c, mb_meas_backend b, const mb_device *dev)
{
    if (b == MB_MEAS_CPU && !strcmp(dev->kind, "cpu") && c->llc_bytes <= 0 && dev->cache_mb > 0) {
        c->llc_bytes = (int64_t)(dev->cache_mb * 1048576.0);
        /* the executors stream as the spec's model says they do */
        if (c->nt_min_bytes <= 0) c->nt_min_bytes = c->llc_bytes + (dev->stream_at_cache_size > 0 ? 0 : 1);
    }
}

int64_t mb_meas_host_need_bytes(const mb_plan *p, int64_t n, const mb_meas_config *c)
{
    return mb_kern_plan_peak_bytes(p, n, (mb_kern_exec)c->exec) + 2 * mb_meas_llc_bytes(c);
}

/* A CUDA row: its device tensors against the GPU's free memory, its host
 * copies against MemTotal (a note, once, past MemAvailable). */
static int admit_cuda(const mb_meas_config *c, const mb_meas_job *jb, const char *what, int64_t avail,
                      int64_t total, int *noted, mb_err *err)
{
    mb_plan *p = NULL;
    int64_t need = 0, dev_free = 0, dev_total = 0;
    int rc = mb_plan_build(jb->g, jb->plan, &p, err);
    if (!rc) rc = mb_meas_cuda_plan_memory(c, p, jb->n, &need, &dev_free, &dev_total, err);
    mb_plan_free(p);
    if (rc) return MB_ERUN;
    if (need > dev_free - MB_MEAS_CUDA_MARGIN_BYTES)
        return mb_err_set(err, MB_EINPUT, "%s needs %.2f GB of device memory, %.2f GB free of %.2f GB "
                          "(%.2f GB kept free): use a smaller --sizes", what, (double)need / 1e9,
                          (double)dev_free / 1e9, (double)dev_total / 1e9,
                          (double)MB_MEAS_CUDA_MARGIN_BYTES / 1e9);
    if (total > 0 && need > total)
        return mb_err_set(err, MB_EINPUT, "%s needs %.2f GB of host memory for its checks, the host "
                          "has %.2f GB: use a smaller --sizes", what, (double)need / 1e9, (double)total / 1e9);
    if (avail > 0 && need > avail && !(*noted)++)
        say(c, "note", 0, "%s needs %.2f GB of host memory for its checks, %.2f GB available now (of "
            "%.2f GB): measuring anyway; a row that cannot get it fails alone", what, (double)need / 1e9,
            (double)avail / 1e9, (double)total / 1e9);
    return MB_OK;
}

int mb_meas_admit_jobs(mb_meas_backend b, const mb_meas_config *c, const mb_meas_job *jobs,
                       int n_jobs, int64_t avail, mb_err *err)
{
    int64_t total = mb_meas_host_memory_bytes("MemTotal");
    int noted = 0;
    for (int j = 0; j < n_jobs; j++) {
        const mb_meas_job *jb = &jobs[j];
        char what[MB_NAME_MAX + 160], nb[96];
        snprintf(what, sizeof what, "%s %s %s at %s", jb->g->name, mb_plan_name(jb->plan),
                 mb_dtype_name(jb->g->nodes[jb->g->inputs[0]].dtype), mb_meas_fmt_at(jb->n, jb->cols, nb, sizeof nb));
        if (b == MB_MEAS_CUDA) {
            int rc = admit_cuda(c, jb, what, avail, total, &noted, err);
            if (rc) return rc;
        } else if (avail > 0 && jb->host_bytes > avail) {
            return mb_err_set(err, MB_EINPUT, "%s needs %.2f GB of memory, %.2f GB available: use a "
                              "smaller --sizes", what, (double)jb->host_bytes / 1e9, (double)avail / 1e9);
        }
    }
    return MB_OK;
}

/* ---- the host check ------------------------------------------------------------- */

void mb_meas_hostcheck_begin(mb_meas_hostcheck *h, mb_meas_backend b, const mb_device *dev,
                             mb_meas_config *c, int64_t llc_bytes)
{
    memset(h, 0, sizeof *h);
    h->worst_ratio = 1;
    const int cpu_spec = b == MB_MEAS_CPU && !strcmp(dev->kind, "cpu");
    h->on = cpu_spec && dev->host_ref_copy_gbs > 0;
    h->calibrated_gbs = dev->host_ref_copy_gbs;
    /* a quick calibration (a fallback is one too) times no host reference,
     * its arrays not being measure's: said as such, not as an old spec's */
    int quick = !strcmp(dev->calibration, "quick") || !strcmp(dev->calibration, "fallback");
    if (cpu_spec && !h->on && dev->measured_bandwidth_gbs > 0 && quick)
        say(c, "note", 0, "the spec has no host reference: a %s calibration times none (its arrays are "
            "cache-sized): no drift checks; a full calibration has them", dev->calibration);
    else if (cpu_spec && !h->on && dev->measured_bandwidth_gbs > 0)
        say(c, "note", 0, "the spec has no host reference (host_ref_copy_gbs: calibrated before measure "
            "checked the host's drift): --recalibrate for the host checks");
    if (!h->on) return;
    mb_err e;
    mb_kern_set_threads(c->threads);
    if (mb_meas_hostref_init(&h->href, mb_meas_stream_elements(llc_bytes, 0), dev->host_ref_copy_gbs,
                             &e) != MB_OK) {
        say(c, "note", 1, "no host checks: %s", e.msg); /* the rows still run */
        h->on = 0;
        return;
    }
    h->href.calibrated_op_geps[0] = dev->host_ref_sin_geps;
    h->href.calibrated_op_geps[1] = dev->host_ref_sigmoid_geps;
    h->before_gbs = mb_meas_hostref_median_gbs(&h->href, 5);
    c->hostref = &h->href;
    say(c, "note", 0, "host check: copy at %.1f GB/s before the rows (calibrated %.1f GB/s)", h->before_gbs,
        dev->host_ref_copy_gbs);
}

int mb_meas_hostcheck_end(mb_meas_hostcheck *h, const mb_meas_config *c)
{
    if (!h->on || !(h->before_gbs > 0) || !((h->after_gbs = mb_meas_hostref_median_gbs(&h->href, 5)) > 0))
        return 0;
    double cal = h->calibrated_gbs, worst = 1, gbs[2] = {h->before_gbs, h->after_gbs};
    for (int i = 0; i < 2; i++) {
        double r = gbs[i] / cal;
        if (fabs(r - 1) > fabs(worst - 1)) worst = r;
    }
    h->worst_ratio = worst;
    if (fabs(worst - 1) > MB_MEAS_DRIFT_MAX)
        say(c, "warning", 1, "the host's copy bandwidth was %.1f GB/s before the rows and %.1f after, %.0f%% "
            "of the calibrated %.1f GB/s the model columns assume (a shared host drifts): times and model "
            "errors may be off by about as much; --recalibrate, or measure again when the host is steady",
            gbs[0], gbs[1], 100 * worst, cal);
    else
        say(c, "note", 0, "host check: copy at %.1f GB/s after the rows (calibrated %.1f GB/s)", gbs[1], cal);
    return 1;
}

void mb_meas_hostcheck_free(mb_meas_hostcheck *h)
{
    mb_meas_hostref_free(&h->href);
    h->on = 0;
}

/* ---- what is said of a row ------------------------------------------------------ */

/* A row whose host ran off the calibrated rates during it. */
static void warn_drifted(const mb_meas_record *row, const mb_device *dev, const char *id, const mb_meas_config *c)
{
    char ratios[64], at_host[96] = "";
    if (isfinite(row->model_host_time_s))
        snprintf(at_host, sizeof at_host, " (at those rates measured / model - 1 is %+.0f%%, column "
                 "'model_host_time_s')", 100.0 * (row->time_s_median / row->model_host_time_s - 1.0));
    say(c, "warning", 1, "%s: during the row the host ran at %s of the calibrated copy bandwidth (%.1f GB/s) "
        "and op rate the model column assumes (a shared host drifts): its model error is off by up to as "
        "much%s; the row is kept and marked in 'host_copy_ratio' and 'host_op_ratio'",
        id, mb_meas_host_ratios(row, ratios, sizeof ratios), dev->host_ref_copy_gbs, at_host);
}

int mb_meas_row_warn(const mb_meas_record *row, const mb_device *dev, mb_meas_backend b,
                     int64_t llc, int first, const mb_meas_config *c)
{
    char id[MB_NAME_MAX + 160], nb[96];
    int flags = 0;
    snprintf(id, sizeof id, "%s %s %s %s", row->variant, row->plan, row->dtype,
             mb_meas_fmt_at(row->n, row->cols, nb, sizeof nb));
    const int tell = c->row_details;
    if (mb_meas_row_noisy(row)) {
        flags |= MB_MEAS_ROW_NOISY;
        if (tell) say(c, "warning", 1, "%s: %d of %d samples contended (the process waited for its cores: other "
            "processes or steal); the row is kept and marked in the 'contended' column", id, row->contended,
            row->reps);
    }
    if (MB_MEAS_HOST_DRIFTED(row->host_copy_ratio, row->host_op_ratio)) {
        flags |= MB_MEAS_ROW_DRIFTED;
        if (tell) warn_drifted(row, dev, id, c);
    }
    if (isfinite(row->upper_mode_share)) {
        char lo[32], hi[32], med[32];
        flags |= MB_MEAS_ROW_TWO_MODES;
        if (tell) say(c, "warning", 1, "%s: its samples fall in two modes, %s and %s (%.0f%% of them): the median (%s) "
            "is one of them, and so is its model error; the row is kept and marked in 'time_s_lower_mode', "
            "'time_s_upper_mode' and 'upper_mode_share'", id, fmt_time(row->time_s_lower_mode, lo, sizeof lo),
            fmt_time(row->time_s_upper_mode, hi, sizeof hi), 100 * row->upper_mode_share,
            fmt_time(row->time_s_median, med, sizeof med));
    }
    /* An achieved bandwidth well above the calibrated one points at a wrong
     * byte count or calibration. A CPU's calibration is a measurement, not a
     * hardware peak (a shared host's bandwidth drifts by tens of percent), so
     * this is a note; the CUDA backend checks against the driver's peak and
     * marks such rows untrusted. */
    int64_t bytes = row->read_bytes + row->write_bytes;
    double gbs = (double)bytes / row->time_s_min / 1e9;
    double roof = dev->mem_bandwidth_gbs > dev->measured_bandwidth_gbs ? dev->mem_bandwidth_gbs
                                                                       : dev->measured_bandwidth_gbs;
    if (!strcmp(dev->kind, "cpu") && b == MB_MEAS_CPU && bytes > 4 * llc && gbs > 1.25 * roof &&
        (flags |= MB_MEAS_ROW_ABOVE_ROOF) && tell)
        say(c, "note", 1, "%s: %.1f GB/s is above the calibrated %.1f GB/s: check the byte count or the "
            "calibration", id, gbs, roof);
    if (bytes < 4 * llc && b == MB_MEAS_CPU && first)
        say(c, "note", 0, "%s is below 4x the last-level cache (%.0f MiB): cache-resident, not a "
            "cold-memory figure", nb, (double)llc / 1048576.0);
    return flags;
}
