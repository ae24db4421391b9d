/* spec_choice.c — which device spec the model columns use: a spec given by
 * name or file, the CUDA backend's default, ./local-cpu.ini when trusted,
 * this host's cached calibration, or a calibration of this CPU now (then
 * cached) — one entry point for measure, calibrate and demo. Does not
 * measure (calibrate_cpu.c does), does not print (notes go to the caller's
 * callback) and does not parse options (the CLI does). */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "measure.h"
#include "note_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One line to req->note; a "note" is dropped when req->quiet. */
static void say(const mb_meas_spec_req *req, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const mb_meas_spec_req *req, const char *level, const char *fmt, ...)
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
    say((const mb_meas_spec_req *)ctx, level, "%s", msg);
}

static const char *lookup(const mb_meas_spec_req *req, const char *name)
{
    return req->lookup ? req->lookup(name) : NULL;
}

/* ./local-cpu.ini, an implicit input, read only when the working folder and
 * the file pass the trusted-folder rule (model/trusted_dir.c): MB_OK with
 * *dev; 1 when there is none or it was not used (one warning says why);
 * MB_EINPUT for a spec with an error. */
static int workdir_spec(const mb_meas_spec_req *req, mb_device *dev, mb_err *err)
{
    static const char name[] = MB_MEAS_SPEC_WORKDIR_FILE, shown[] = "./" MB_MEAS_SPEC_WORKDIR_FILE;
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
static int cached_spec(const mb_meas_spec_req *req, const char *cache, mb_device *dev,
                       mb_meas_spec_used *used)
{
    mb_err e;
    int rc = cache && req->cache_read ? mb_meas_cache_load(cache, dev, &used->age_s, &e) : 1;
    if (rc == MB_OK) {
        used->source = MB_MEAS_SPEC_CACHED;
        snprintf(used->path, sizeof used->path, "%s", cache);
        return MB_OK;
    }
    if (rc == MB_EINPUT) say(req, "warning", "%s", e.msg);
    else if (rc != 1) say(req, "note", "ignoring the cached calibration: %s", e.msg);
    return 1;
}

/* Calibrates this CPU into *dev (and the cache at cache, when not NULL). */
static int calibrated_spec(const mb_meas_spec_req *req, const char *cache, mb_device *dev,
                           mb_meas_spec_used *used, mb_err *err)
{
    if (req->cache_read)
        say(req, "note", "%s: calibrating this CPU first", req->workdir
            ? "no --device, no ./" MB_MEAS_SPEC_WORKDIR_FILE " and no cached calibration"
            : "no cached calibration");
    double t0 = mb_meas_now_s();
    if (mb_meas_calibrate_cpu(req->threads, req->quick, req->quiet ? NULL : req->progress, &used->cal, err))
        return MB_ERUN;
    used->calib_s = mb_meas_now_s() - t0;
    used->source = MB_MEAS_SPEC_CALIBRATED;
    mb_meas_calib_to_device(&used->cal, req->command_line ? req->command_line : "membound", dev);
    if (!cache) return MB_OK;
    mb_err e;
    if (mb_meas_cache_save(cache, dev, used->moved, sizeof used->moved, &e)) {
        say(req, "note", "calibration not cached: %s", e.msg);
        return MB_OK;
    }
    used->cached = 1;
    snprintf(used->path, sizeof used->path, "%s", cache);
    say(req, "note", "calibration cached as %s", cache);
    return MB_OK;
}

int mb_meas_spec_get(const mb_meas_spec_req *req, mb_device *dev, mb_meas_spec_used *used,
                     mb_err *err)
{
    memset(used, 0, sizeof *used);
    if (req->device) {
        if (mb_device_find(req->device, dev, err)) return MB_EINPUT;
        used->source = MB_MEAS_SPEC_GIVEN;
        snprintf(used->path, sizeof used->path, "%s", req->device);
        return MB_OK;
    }
    if (req->backend == MB_MEAS_CUDA) {
        if (mb_device_find(MB_MEAS_SPEC_GPU_DEFAULT_ID, dev, err)) return MB_ERUN;
        used->source = MB_MEAS_SPEC_GPU_DEFAULT;
        return MB_OK;
    }
    int rc = req->workdir ? workdir_spec(req, dev, err) : 1;
    if (rc == MB_OK) {
        used->source = MB_MEAS_SPEC_WORKDIR;
        snprintf(used->path, sizeof used->path, "./%s", MB_MEAS_SPEC_WORKDIR_FILE);
        return MB_OK;
    }
    if (rc != 1) return rc;
    /* this host's cache, claimed (its lock) while it is read and written:
     * one run calibrates at a time, another waits, then reads what it cached */
    char cache[1024];
    mb_tdir lock = {-1, ""};
    mb_kern_set_threads(req->threads);
    int have_cache = (req->cache_read || req->cache_write) &&
                     mb_meas_cache_claim(lookup(req, "MEMBOUND_CACHE_DIR"), lookup(req, "XDG_CACHE_HOME"),
                                         lookup(req, "HOME"), mb_kern_threads(), cache, sizeof cache, relay,
                                         (void *)req, &lock) == MB_OK;
    rc = cached_spec(req, have_cache ? cache : NULL, dev, used);
    if (rc != MB_OK)
        rc = calibrated_spec(req, have_cache && req->cache_write ? cache : NULL, dev, used, err);
    /* a spec cached before the row keys: this host's core cache and threads */
    if (rc == MB_OK && !(dev->onchip_kib > 0)) dev->onchip_kib = (double)mb_kern_core_cache_bytes() / 1024.0;
    if (rc == MB_OK && !(dev->sm_count >= 1)) dev->sm_count = mb_kern_threads();
    mb_tdir_close(&lock);
    return rc;
}

void mb_meas_spec_describe(const mb_meas_spec_used *used, const mb_device *dev, char *buf,
                           size_t bufsz)
{
    switch (used->source) {
    case MB_MEAS_SPEC_GIVEN: snprintf(buf, bufsz, "%s (--device %s)", dev->name, used->path); return;
    case MB_MEAS_SPEC_GPU_DEFAULT: snprintf(buf, bufsz, "%s (default for cuda)", dev->name); return;
    case MB_MEAS_SPEC_WORKDIR: snprintf(buf, bufsz, "%s (%s)", dev->name, used->path); return;
    case MB_MEAS_SPEC_CACHED: snprintf(buf, bufsz, "%s (cached calibration %s)", dev->name, used->path); return;
    case MB_MEAS_SPEC_CALIBRATED:
        if (used->cached) snprintf(buf, bufsz, "%s (calibrated in-process, cached as %s)", dev->name, used->path);
        else snprintf(buf, bufsz, "%s (calibrated in-process)", dev->name);
        return;
    case MB_MEAS_SPEC_NONE:
    case MB_MEAS_SPEC_SRC_COUNT: break;
    }
    snprintf(buf, bufsz, "%s", dev->name);
}
