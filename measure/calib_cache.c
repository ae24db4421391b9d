/* calib_cache.c — one calibration per host, reused: a per-user cache of
 * calibrated CPU specs, one INI file per key (CPU model, thread count,
 * physical memory), so that `measure` and `demo` do not calibrate every time.
 * Does not read the environment (the CLI passes $MEMBOUND_CACHE_DIR,
 * $XDG_CACHE_HOME and $HOME in) and does not calibrate. */
#define _GNU_SOURCE
#include "measure.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* mkdir -p dir (0700 for what it creates); 0 when dir is a writable directory. */
static int make_dir(const char *dir)
{
    char tmp[1024];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp || !tmp[0]) return -1;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
    struct stat sb;
    if (stat(tmp, &sb) != 0 || !S_ISDIR(sb.st_mode)) return -1;
    return access(tmp, W_OK | X_OK) == 0 ? 0 : -1;
}

/* FNV-1a, 64 bits: the host key in the file name. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void mb_meas_cache_key(int threads, char *key, size_t keysz)
{
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    long long mem_mib = pages > 0 && psz > 0 ? (long long)pages * psz / 1048576 : 0;
    snprintf(key, keysz, "%s|threads=%d|mem_mib=%lld", pv.cpu_model[0] ? pv.cpu_model : "cpu",
             threads, mem_mib);
}

int mb_meas_cache_locate(const char *dir_env, const char *xdg_env, const char *home_env,
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
    mb_meas_cache_key(threads, key, sizeof key);
    const char *refused = NULL;
    for (int i = 0; i < 4; i++) {
        if (!have[i]) continue;
        nc++;
        if (make_dir(cand[i]) != 0) {
            if (!refused) refused = why[i];
            continue;
        }
        if (snprintf(path, pathsz, "%s/local-cpu-%016llx.ini", cand[i],
                     (unsigned long long)fnv1a(key)) >= (int)pathsz)
            return mb_err_set(err, MB_ERUN, "calibration cache path too long under %s", cand[i]);
        if (refused && note && notesz)
            snprintf(note, notesz, "%s is not a writable directory: calibration cache in %s",
                     refused, cand[i]);
        return MB_OK;
    }
    return mb_err_set(err, MB_ERUN, "no writable directory for the calibration cache (tried %d)", nc);
}

int mb_meas_cache_load(const char *path, mb_device *d, double *age_s, mb_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return 1;
    int rc = mb_device_load_ini(path, d, err);
    if (rc) return rc;
    if (strcmp(d->kind, "cpu") != 0)
        return mb_err_set(err, MB_EINPUT, "%s: not a CPU calibration (kind %s)", path, d->kind);
    if (age_s) *age_s = difftime(time(NULL), sb.st_mtime);
    return MB_OK;
}

double mb_meas_calib_moved(const mb_device *before, const mb_device *now, char *desc, size_t descsz)
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

int mb_meas_cache_save(const char *path, const mb_device *d, char *moved, size_t movedsz, mb_err *err)
{
    if (moved && movedsz) {
        mb_device was;
        mb_err e;
        double age_s = 0;
        char what[512];
        moved[0] = '\0';
        if (mb_meas_cache_load(path, &was, &age_s, &e) == MB_OK &&
            mb_meas_calib_moved(&was, d, what, sizeof what) > MB_MEAS_DRIFT_MAX)
            snprintf(moved, movedsz, "this host moved since its calibration of %.0f min before: %s",
                     age_s / 60.0, what);
    }
    return mb_device_write_ini(d, path, err);
}
