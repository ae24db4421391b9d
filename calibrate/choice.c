/* choice.c — which device spec the model columns use: a spec given by
 * name or file, the CUDA backend's default, ./local-cpu.ini when trusted,
 * this host's cached calibration, or a calibration of this CPU now (then
 * cached) — one entry point for measure, calibrate and demo. Does not
 * measure (cpu.c does), does not print (notes go to the caller's
 * callback) and does not parse options (the CLI does). */
#define _GNU_SOURCE /* strptime, timegm */
#include "kernels.h"
#include "calibrate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <pwd.h>
#include <unistd.h>

/* One line to req->note; a "note" is dropped when req->quiet. */
static void say(const mb_cal_spec_req *req, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const mb_cal_spec_req *req, const char *level, const char *fmt, ...)
{
    if (req->quiet && !strcmp(level, "note")) return;
    va_list ap;
    va_start(ap, fmt);
    mb_meas_note_to(req->note, req->note_ctx, level, fmt, ap);
    va_end(ap);
}

/* The cache's callback (claim, lock) into say. */
static void relay(void *ctx, const char *level, const char *msg)
{
    say((const mb_cal_spec_req *)ctx, level, "%s", msg);
}

static const char *lookup(const mb_cal_spec_req *req, const char *name)
{
    return req->lookup ? req->lookup(name) : NULL;
}

/* ./local-cpu.ini, an implicit input, read only when the working folder and
 * the file pass the trusted-folder rule (model/trusted_dir.c): MB_OK with
 * *dev; 1 when there is none or it was not used (one warning says why);
 * MB_EINPUT for a spec with an error. */
static int workdir_spec(const mb_cal_spec_req *req, mb_device *dev, mb_err *err)
{
    static const char name[] = MB_CAL_SPEC_WORKDIR_FILE, shown[] = "./" MB_CAL_SPEC_WORKDIR_FILE;
    char cwd[4096];
    mb_tdir here;
    mb_err e;
    int fd = -1;
    int rc = getcwd(cwd, sizeof cwd) ? mb_tdir_open(&here, cwd, 0, &e) : MB_ERUN;
    if (rc == MB_OK) {
        rc = mb_tdir_open_file(&here, name, &fd, &e);
        mb_tdir_close(&here);
    } else if (access(name, F_OK) != 0) {
        return 1; /* nothing to say about a folder without one */
    }
    if (rc == 1) return 1;
    if (rc != MB_OK) {
        say(req, "warning", "%s not used (%s); --device %s uses it anyway", shown, e.msg, shown);
        return 1;
    }
    char *text = NULL;
    rc = mb_text_read_fd(fd, shown, (size_t)1 << 20, &text, NULL, err);
    close(fd);
    if (rc == MB_OK) rc = mb_device_load_ini_text(text, shown, dev, err);
    free(text);
    return rc == MB_OK ? MB_OK : MB_EINPUT;
}

/* The cached calibration at cache when req reads it: MB_OK with *dev and
 * used's path and age, else 1 (none, or not used: said why). */
static int cached_spec(const mb_cal_spec_req *req, const char *cache, mb_device *dev,
                       mb_cal_spec_used *used)
{
    mb_err e;
    int rc = cache && req->cache_read ? mb_cal_cache_load(cache, dev, &used->age_s, &e) : 1;
    if (rc == MB_OK) {
        used->source = MB_CAL_SPEC_CACHED;
        snprintf(used->path, sizeof used->path, "%s", cache);
        return MB_OK;
    }
    if (rc == MB_EINPUT) say(req, "warning", "%s", e.msg);
    else if (rc != 1) say(req, "note", "ignoring the cached calibration: %s", e.msg);
    return 1;
}

/* One calibration of this CPU, quick or full, into *dev, checked as a spec
 * file would be: MB_OK; 1 when refused (its figures cannot be true, a
 * probe contended, a figure out of a spec's range: why in err); MB_ERUN for
 * another failure. */
static int calibrate_once(const mb_cal_spec_req *req, int quick, int force_refusal, mb_device *dev,
                          mb_cal_spec_used *used, mb_err *err)
{
    if (force_refusal)
        return mb_err_set(err, MB_ERUN, "calibration refused, nothing written: refused by the test hook"), 1;
    if (mb_cal_cpu(req->threads, quick, req->quiet ? NULL : req->progress, &used->cal, err))
        return strstr(err->msg, "calibration refused") ? 1 : MB_ERUN;
    mb_cal_to_device(&used->cal, req->command_line ? req->command_line : "membound", dev);
    snprintf(dev->calibration, sizeof dev->calibration, "%s", quick ? "quick" : "full");
    mb_err e;
    char *text = mb_device_ini_text(dev, &e); /* what a spec file refuses */
    if (!text) return mb_err_set(err, MB_ERUN, "calibration refused, nothing written: %s", e.msg), 1;
    free(text);
    return MB_OK;
}

/* Calibrations of one kind (quick or full), MB_CAL_TRIES at most,
 * with a backoff between refusals (*wait_s, doubled each time). MB_OK; 1
 * when every one was refused; MB_ERUN. */
static int calibrate_tries(const mb_cal_spec_req *req, int quick, double *wait_s, mb_device *dev,
                           mb_cal_spec_used *used, mb_err *err)
{
    for (int t = 0; t < MB_CAL_TRIES; t++) {
        int rc = calibrate_once(req, quick, used->refused < req->refuse_first, dev, used, err);
        if (rc != 1) return rc;
        used->refused++;
        const char *why = strstr(err->msg, "nothing written: ");
        snprintf(used->refused_why, sizeof used->refused_why, "%s",
                 why ? why + strlen("nothing written: ") : err->msg);
        if (t + 1 == MB_CAL_TRIES) {
            say(req, "warning", "%s calibration refused %d times (last: %s)", quick ? "the quick" : "a full",
                MB_CAL_TRIES, err->msg);
            return 1;
        }
        say(req, "warning", "%s calibration refused (%s): taken again in %.1f s (try %d of %d)",
            quick ? "the quick" : "the", err->msg, *wait_s, t + 2, MB_CAL_TRIES);
        struct timespec ts = {(time_t)*wait_s, (long)((*wait_s - (double)(time_t)*wait_s) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {} /* a signal: the rest of the wait */
        *wait_s *= 2;
    }
    return 1;
}

/* Calibrates this CPU into *dev (and the cache at cache, when not NULL):
 * full (or quick when asked), taken again when refused; a full one refused
 * every time falls back to a quick one, a quick one to the cached
 * calibration at fallback_cache (when not NULL). */
static int calibrated_spec(const mb_cal_spec_req *req, const char *cache, const char *fallback_cache,
                           mb_device *dev, mb_cal_spec_used *used, mb_err *err)
{
    if (req->cache_read)
        say(req, "note", "%s: calibrating this CPU first", req->workdir
            ? "no --device, no ./" MB_CAL_SPEC_WORKDIR_FILE " and no cached calibration"
            : "no cached calibration");
    double t0 = mb_meas_now_s(), wait_s = req->backoff_s > 0 ? req->backoff_s : MB_CAL_BACKOFF_S;
    int rc = calibrate_tries(req, req->quick, &wait_s, dev, used, err);
    if (rc == 1 && !req->quick) {
        say(req, "warning", "falling back to a quick calibration: every full one was refused (the last: %s; "
            "the quick one's figures are rough; rows measured against it are marked 'fallback' in the CSV's "
            "calibration column, and it is not cached)", used->refused_why);
        rc = calibrate_tries(req, 1, &wait_s, dev, used, err);
        if (rc == MB_OK) {
            used->fallback = 1;
            snprintf(dev->calibration, sizeof dev->calibration, "fallback");
            cache = NULL; /* a rough calibration does not become this host's */
        }
    }
    if (rc == 1 && fallback_cache && mb_cal_cache_load(fallback_cache, dev, &used->age_s, &(mb_err){0}) == MB_OK) {
        say(req, "warning", "falling back to this host's cached calibration %s (%.1f h old): every "
            "calibration now was refused", fallback_cache, used->age_s / 3600.0);
        used->source = MB_CAL_SPEC_CACHED;
        used->fallback = 1;
        snprintf(dev->calibration, sizeof dev->calibration, "fallback"); /* not the one asked for */
        snprintf(used->path, sizeof used->path, "%s", fallback_cache);
        return MB_OK;
    }
    if (rc == 1)
        return mb_err_set(err, MB_ERUN, "every calibration was refused (%d tries%s): the machine is too busy; "
                          "run again when it is quieter, or give --device SPEC", used->refused,
                          req->quick ? "" : ", full then quick");
    if (rc) return rc;
    used->calib_s = mb_meas_now_s() - t0;
    used->source = MB_CAL_SPEC_CALIBRATED;
    if (!cache) return MB_OK;
    mb_err e;
    if (mb_cal_cache_save(cache, dev, used->moved, sizeof used->moved, &e)) {
        say(req, "note", "calibration not cached: %s", e.msg);
        return MB_OK;
    }
    used->cached = 1;
    snprintf(used->path, sizeof used->path, "%s", cache);
    say(req, "note", "calibration cached as %s", cache);
    return MB_OK;
}

int mb_cal_spec_get(const mb_cal_spec_req *req, mb_device *dev, mb_cal_spec_used *used,
                     mb_err *err)
{
    memset(used, 0, sizeof *used);
    if (req->device) {
        if (mb_device_find(req->device, dev, err)) return MB_EINPUT;
        used->source = MB_CAL_SPEC_GIVEN;
        snprintf(used->path, sizeof used->path, "%s", req->device);
        return MB_OK;
    }
    if (req->backend == MB_MEAS_CUDA) {
        if (mb_device_find(MB_CAL_SPEC_GPU_DEFAULT_ID, dev, err)) return MB_ERUN;
        used->source = MB_CAL_SPEC_GPU_DEFAULT;
        return MB_OK;
    }
    int rc = req->workdir ? workdir_spec(req, dev, err) : 1;
    if (rc == MB_OK) {
        used->source = MB_CAL_SPEC_WORKDIR;
        snprintf(used->path, sizeof used->path, "./%s", MB_CAL_SPEC_WORKDIR_FILE);
        return MB_OK;
    }
    if (rc != 1) return rc;
    /* this host's cache, claimed (its lock) while it is read and written:
     * one run calibrates at a time, another waits, then reads what it cached */
    char cache[1024];
    mb_tdir lock = {-1, ""};
    mb_kern_set_threads(req->threads);
    int have_cache = (req->cache_read || req->cache_write || req->quick) &&
                     mb_cal_cache_claim(lookup(req, "MEMBOUND_CACHE_DIR"), lookup(req, "XDG_CACHE_HOME"),
                                         lookup(req, "HOME"), mb_kern_threads(), cache, sizeof cache, relay,
                                         (void *)req, &lock) == MB_OK;
    rc = cached_spec(req, have_cache ? cache : NULL, dev, used);
    if (rc != MB_OK)
        rc = calibrated_spec(req, have_cache && req->cache_write ? cache : NULL,
                             have_cache && req->quick ? cache : NULL, dev, used, err);
    /* a spec cached before the row keys: this host's core cache and threads */
    if (rc == MB_OK && !(dev->onchip_kib > 0)) dev->onchip_kib = (double)mb_kern_core_cache_bytes() / 1024.0;
    if (rc == MB_OK && !(dev->sm_count >= 1)) dev->sm_count = mb_kern_threads();
    mb_tdir_close(&lock);
    return rc;
}

void mb_cal_spec_describe(const mb_cal_spec_used *used, const mb_device *dev, char *buf,
                           size_t bufsz)
{
    switch (used->source) {
    case MB_CAL_SPEC_GIVEN: snprintf(buf, bufsz, "%s (--device %s)", dev->name, used->path); return;
    case MB_CAL_SPEC_GPU_DEFAULT: snprintf(buf, bufsz, "%s (default for cuda)", dev->name); return;
    case MB_CAL_SPEC_WORKDIR: snprintf(buf, bufsz, "%s (%s)", dev->name, used->path); return;
    case MB_CAL_SPEC_CACHED: snprintf(buf, bufsz, "%s (cached calibration %s)", dev->name, used->path); return;
    case MB_CAL_SPEC_CALIBRATED:
        if (used->cached) snprintf(buf, bufsz, "%s (calibrated in-process, cached as %s)", dev->name, used->path);
        else snprintf(buf, bufsz, "%s (calibrated in-process)", dev->name);
        return;
    case MB_CAL_SPEC_NONE:
    case MB_CAL_SPEC_SRC_COUNT: break;
    }
    snprintf(buf, bufsz, "%s", dev->name);
}

/* Seconds since the epoch of a spec's measured_at ("host 2026-12-01T09:47:10Z"),
 * or -1. */
static double measured_epoch_s(const mb_device *dev)
{
    const char *date = strrchr(dev->measured_at, ' ');
    date = date ? date + 1 : dev->measured_at;
    struct tm tmv;
    memset(&tmv, 0, sizeof tmv);
    const char *end = strptime(date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    if (!end || *end) return -1;
    return (double)timegm(&tmv);
}

const char *mb_cal_mark(const mb_cal_spec_used *used, const mb_device *dev,
                                     double now_epoch_s, double *age_s)
{
    double age = -1;
    if (used->source == MB_CAL_SPEC_CALIBRATED) age = 0;
    else if (used->source == MB_CAL_SPEC_CACHED) age = used->age_s;
    double at = measured_epoch_s(dev);
    if (age < 0 && at > 0 && now_epoch_s >= at) age = now_epoch_s - at;
    if (age_s) *age_s = age;
    /* a spec no calibration wrote: the table's, or one written by hand */
    if (strcmp(dev->kind, "cpu") != 0 || (!dev->measured_at[0] && !dev->calibration[0])) return "";
    if (used->fallback || !strcmp(dev->calibration, "fallback")) return "fallback";
    if (!strcmp(dev->calibration, "quick")) return "quick";
    return age > MB_CAL_STALE_S ? "stale" : "full";
}

static const char *fmt_age(double s, char *buf, size_t size)
{
    if (s < 0) snprintf(buf, size, "age unknown");
    else if (s < 120) snprintf(buf, size, "%.0f s old", s);
    else if (s < 7200) snprintf(buf, size, "%.0f min old", s / 60);
    else if (s < 3 * 86400.0) snprintf(buf, size, "%.1f h old", s / 3600);
    else snprintf(buf, size, "%.0f days old", s / 86400);
    return buf;
}

void mb_cal_spec_line(const mb_cal_spec_used *used, const mb_device *dev, char *buf, size_t bufsz)
{
    double age;
    const char *mark = mb_cal_mark(used, dev, (double)time(NULL), &age);
    char agebuf[48], owner[96] = "";
    struct stat st;
    if (used->path[0] && stat(used->path, &st) == 0) {
        struct passwd *pw = getpwuid(st.st_uid);
        if (pw) snprintf(owner, sizeof owner, "owner %s, ", pw->pw_name);
        else snprintf(owner, sizeof owner, "owner uid %ld, ", (long)st.st_uid);
    }
    if (!mark[0]) {
        snprintf(buf, bufsz, "calibration: none (the spec %s%s: %s figures)", dev->name,
                 used->source == MB_CAL_SPEC_GPU_DEFAULT ? ", the cuda backend's default" : "",
                 strcmp(dev->kind, "cpu") ? "its source's" : "hand-written");
        return;
    }
    const char *kind = !strcmp(mark, "fallback") ? "fallback (quick, full ones refused)"
                       : !strcmp(mark, "stale") ? "full but stale (older than a day)" : mark;
    switch (used->source) {
    case MB_CAL_SPEC_CALIBRATED:
        snprintf(buf, bufsz, "calibration: %s, measured now in %.1f s%s%s%s", kind, used->calib_s,
                 used->refused ? " after refusals" : "", used->cached ? ", cached as " : "",
                 used->cached ? used->path : "");
        return;
    case MB_CAL_SPEC_CACHED:
        snprintf(buf, bufsz, "calibration: %s, this host's cached calibration %s (%smeasured on %s, %s)", kind, used->path,
                 owner, dev->measured_at[0] ? dev->measured_at : "?", fmt_age(age, agebuf, sizeof agebuf));
        return;
    default:
        snprintf(buf, bufsz, "calibration: %s, from %s (%smeasured on %s, %s)", kind, used->path, owner,
                 dev->measured_at[0] ? dev->measured_at : "?", fmt_age(age, agebuf, sizeof agebuf));
    }
}
