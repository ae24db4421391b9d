/* cache.c — one calibration per host, reused: a per-user cache of
 * calibrated CPU specs, one INI file per key (CPU model, thread count,
 * physical memory, the probes' version), so that `measure` and `demo` do
 * not calibrate every time.
 * The folder and its files go through model/'s trusted-folder rule
 * (mb_tdir_*): another user's folder or file, one others can write, or a link
 * is not used; files are written beside and renamed in, never through a link;
 * one run calibrates at a time (an flock on the folder).
 * Does not read the environment (the CLI passes $MEMBOUND_CACHE_DIR,
 * $XDG_CACHE_HOME and $HOME in) and does not calibrate. */
#define _GNU_SOURCE
#include "calibrate.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* FNV-1a, 64 bits: the host key in the file name. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void mb_cal_cache_key(int threads, char *key, size_t keysz)
{
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    long long mem_mib = pages > 0 && psz > 0 ? (long long)pages * psz / 1048576 : 0;
    snprintf(key, keysz, "%s|threads=%d|mem_mib=%lld|probes=%d", pv.cpu_model[0] ? pv.cpu_model : "cpu",
             threads, mem_mib, MB_CAL_PROBES_VERSION);
}

int mb_cal_cache_locate(const char *dir_env, const char *xdg_env, const char *home_env,
                         int threads, char *path, size_t pathsz, char *note, size_t notesz,
                         mb_err *err)
{
    if (note && notesz) note[0] = '\0';
    char cand[4][1024];
    const char *why[4] = {"$MEMBOUND_CACHE_DIR", "$XDG_CACHE_HOME", "$HOME/.cache", "/tmp"};
    int nc = 0;
    int have[4] = {0};
    if (dir_env && dir_env[0]) snprintf(cand[0], sizeof cand[0], "%s", dir_env), have[0] = 1;
    if (xdg_env && xdg_env[0] == '/') snprintf(cand[1], sizeof cand[1], "%s/membound", xdg_env), have[1] = 1;
    if (home_env && home_env[0] == '/')
        snprintf(cand[2], sizeof cand[2], "%s/.cache/membound", home_env), have[2] = 1;
    snprintf(cand[3], sizeof cand[3], "/tmp/membound-cache-%ld", (long)getuid());
    have[3] = 1;
    char key[256];
    mb_cal_cache_key(threads, key, sizeof key);
    const char *passed = NULL; /* the first candidate passed over, and why */
    mb_err passed_why = {{0}};
    int passed_code = MB_ERUN;
    for (int i = 0; i < 4; i++) {
        if (!have[i]) continue;
        nc++;
        mb_tdir d;
        mb_err e;
        int rc = mb_tdir_open(&d, cand[i], 1, &e);
        if (rc == MB_OK && faccessat(d.fd, ".", W_OK | X_OK, AT_EACCESS) != 0)
            rc = mb_err_set(&e, MB_ERUN, "%s is not a writable directory", cand[i]);
        mb_tdir_close(&d);
        if (rc != MB_OK) {
            if (!passed || (rc == MB_EINPUT && passed_code != MB_EINPUT)) {
                passed = why[i];
                passed_why = e;
                passed_code = rc;
            }
            continue;
        }
        if (snprintf(path, pathsz, "%s/local-cpu-%016llx.ini", cand[i],
                     (unsigned long long)fnv1a(key)) >= (int)pathsz)
            return mb_err_set(err, MB_ERUN, "calibration cache path too long under %s", cand[i]);
        if (passed && note && notesz)
            snprintf(note, notesz, "calibration cache %s (%s); using %s", passed_why.msg, passed, cand[i]);
        return MB_OK;
    }
    if (passed) return mb_err_set(err, passed_code, "calibration cache %s (%s)", passed_why.msg, passed);
    return mb_err_set(err, MB_ERUN, "no writable directory for the calibration cache (tried %d)", nc);
}

/* The cache folder of path, opened by the trusted-folder rule, and the
 * file's name in it. */
static int open_dir_of(const char *path, int create, mb_tdir *d, const char **name, mb_err *err)
{
    const char *slash = strrchr(path, '/');
    char dir[1024];
    if (!slash || (size_t)(slash - path) >= sizeof dir)
        return mb_err_set(err, MB_ERUN, "%s: not a cache path", path);
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    *name = slash + 1;
    int rc = mb_tdir_open(d, dir[0] ? dir : "/", create, err);
    if (rc == MB_EINPUT) {
        mb_err e = *err;
        mb_err_set(err, rc, "calibration cache %s", e.msg);
    }
    return rc;
}

int mb_cal_cache_load(const char *path, mb_device *d, double *age_s, mb_err *err)
{
    mb_tdir dir;
    const char *name;
    int rc = open_dir_of(path, 0, &dir, &name, err);
    if (rc != MB_OK) return rc == MB_ERUN ? 1 : rc; /* no folder yet: no cached calibration */
    int fd = -1;
    rc = mb_tdir_open_file(&dir, name, &fd, err);
    mb_tdir_close(&dir);
    if (rc == MB_EINPUT) {
        mb_err e = *err;
        return mb_err_set(err, rc, "calibration cache %s", e.msg);
    }
    if (rc != MB_OK) return rc;
    struct stat sb;
    char *text = NULL;
    rc = fstat(fd, &sb) != 0 ? mb_err_set(err, MB_ERUN, "%s: %s", path, strerror(errno))
                             : mb_text_read_fd(fd, path, (size_t)1 << 20, &text, NULL, err);
    close(fd);
    if (rc == MB_OK) rc = mb_device_load_ini_text(text, path, d, err);
    free(text);
    if (rc) return rc;
    if (strcmp(d->kind, "cpu") != 0)
        return mb_err_set(err, MB_EINPUT, "%s: not a CPU calibration (kind %s)", path, d->kind);
    /* a file written this second can carry a later mtime than time() says:
     * the file system's stamps are finer than time()'s coarse clock (Linux
     * 6.x multigrain timestamps): no negative age */
    if (age_s) *age_s = fmax(0.0, difftime(time(NULL), sb.st_mtime));
    return MB_OK;
}

double mb_cal_moved(const mb_device *before, const mb_device *now, char *desc, size_t descsz)
{
    static const struct {
        const char *what, *unit;
        size_t off;
    } fig[] = {
        {"copy bandwidth", "GB/s", offsetof(mb_device, measured_bandwidth_gbs)},
        {"read bandwidth", "GB/s", offsetof(mb_device, read_bandwidth_gbs)},
        {"sin", "Gelem/s", offsetof(mb_device, op_geps) + MB_OP_SIN * sizeof(double)},
        {"sigmoid", "Gelem/s", offsetof(mb_device, op_geps) + MB_OP_SIGMOID * sizeof(double)},
    };
    double worst = 0;
    size_t used = 0;
    if (desc && descsz) desc[0] = '\0';
    for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
        double was = *(const double *)((const char *)before + fig[i].off);
        double is = *(const double *)((const char *)now + fig[i].off);
        if (!(was > 0 && is > 0)) continue;
        double moved = is / was - 1;
        if (fabs(moved) > worst) worst = fabs(moved);
        if (fabs(moved) <= MB_MEAS_DRIFT_MAX || !desc || used >= descsz) continue;
        int k = snprintf(desc + used, descsz - used, "%s%s %.3g %s (was %.3g, %+.0f%%)", used ? ", " : "",
                         fig[i].what, is, fig[i].unit, was, 100 * moved);
        if (k > 0) used += (size_t)k;
    }
    return worst;
}

int mb_cal_cache_save(const char *path, const mb_device *d, char *moved, size_t movedsz, mb_err *err)
{
    if (moved && movedsz) {
        mb_device was;
        mb_err e;
        double age_s = 0;
        char what[512];
        moved[0] = '\0';
        if (mb_cal_cache_load(path, &was, &age_s, &e) == MB_OK &&
            mb_cal_moved(&was, d, what, sizeof what) > MB_MEAS_DRIFT_MAX)
            snprintf(moved, movedsz, "this host moved since its calibration of %.0f min before: %s",
                     age_s / 60.0, what);
    }
    char *keys = mb_device_ini_text(d, err);
    if (!keys) return MB_EINPUT;
    char *text = NULL;
    int len = asprintf(&text, "# calibration cache of membound (this host, this user); use with --device FILE\n%s",
                       keys);
    free(keys);
    if (len < 0) return mb_err_set(err, MB_ERUN, "out of memory");
    mb_tdir dir;
    const char *name;
    int rc = open_dir_of(path, 1, &dir, &name, err);
    if (rc == MB_OK) rc = mb_tdir_write_file(&dir, name, text, (size_t)len, err);
    mb_tdir_close(&dir);
    free(text);
    return rc;
}

int mb_cal_cache_lock(const char *path, double timeout_s,
                       void (*note)(void *ctx, const char *level, const char *msg), void *ctx,
                       mb_tdir *held, mb_err *err)
{
    const char *name;
    int rc = open_dir_of(path, 1, held, &name, err);
    if (rc != MB_OK) return rc;
    if (mb_tdir_lock(held, 0, err) == MB_OK) return MB_OK;
    if (note) {
        char line[1200];
        snprintf(line, sizeof line, "waiting for another membound run calibrating this host "
                 "(calibration cache %s, up to %.0f s)", held->path, timeout_s);
        note(ctx, "note", line);
    }
    rc = mb_tdir_lock(held, timeout_s, err);
    if (rc != MB_OK) mb_tdir_close(held);
    return rc;
}

int mb_cal_cache_claim(const char *dir_env, const char *xdg_env, const char *home_env, int threads,
                        char *path, size_t pathsz,
                        void (*notef)(void *ctx, const char *level, const char *msg), void *ctx,
                        mb_tdir *held)
{
    char note[1200];
    mb_err e;
    held->fd = -1;
    int rc = mb_cal_cache_locate(dir_env, xdg_env, home_env, threads, path, pathsz, note, sizeof note, &e);
    if (rc == MB_OK && note[0] && notef) notef(ctx, "warning", note);
    if (rc == MB_OK && (rc = mb_cal_cache_lock(path, MB_CAL_CACHE_WAIT_S, notef, ctx, held, &e)) != MB_OK)
        snprintf(e.msg + strlen(e.msg), sizeof e.msg - strlen(e.msg), ": calibrating without the cache");
    if (rc != MB_OK && notef) notef(ctx, "warning", e.msg);
    return rc;
}
