/* gnuplot.c — where the gnuplot scripts are and which gnuplot runs them (as
 * the caller's environment says, mb_rpt_set_env), one gnuplot run under its
 * deadline, and a figure drawn from a data file its caller wrote. Does not
 * write figure data (fig_*.c) or a figure folder (render.c). */
#include "render_int.h"
#include "mb_child.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MB_PLOTS_INSTALL_DIR
#define MB_PLOTS_INSTALL_DIR "/usr/local/share/membound/plots"
#endif
#ifndef MB_PLOTS_SOURCE_DIR
#define MB_PLOTS_SOURCE_DIR ""
#endif

static int has_style(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/style.gp", dir);
    return access(p, R_OK) == 0;
}

/* The environment as the caller gave it (mb_rpt_set_env): this library
 * reads no environment variable. "" = unset. */
static char env_plots[PATH_MAX], env_gnuplot[PATH_MAX], env_path[16384];

/* gnuplot's deadline per figure: the report's largest figure draws in under
 * 0.5 s on the 2-vCPU test host; a minute means it hangs (waits on a
 * terminal, a font server, a pipe). */
#define MB_RPT_GNUPLOT_TIMEOUT_S 60.0
static double gnuplot_timeout_s = MB_RPT_GNUPLOT_TIMEOUT_S;

void mb_rpt_set_env(char *(*lookup)(const char *name))
{
    const char *v;
    snprintf(env_plots, sizeof env_plots, "%s", lookup && (v = lookup("MEMBOUND_PLOTS")) ? v : "");
    snprintf(env_gnuplot, sizeof env_gnuplot, "%s", lookup && (v = lookup("MEMBOUND_GNUPLOT")) ? v : "");
    snprintf(env_path, sizeof env_path, "%s", lookup && (v = lookup("PATH")) ? v : "");
    double t = lookup && (v = lookup("MEMBOUND_GNUPLOT_TIMEOUT_S")) ? strtod(v, NULL) : 0;
    gnuplot_timeout_s = t > 0 ? t : MB_RPT_GNUPLOT_TIMEOUT_S;
}

double mb_rpt_gnuplot_timeout_s(void)
{
    return gnuplot_timeout_s;
}

const char *mb_rpt_plots_dir(void)
{
    static char found[PATH_MAX];
    const char *env = env_plots;
    if (env && *env) {
        if (has_style(env)) {
            snprintf(found, sizeof found, "%s", env);
            return found;
        }
        return NULL; /* an explicit setting that is wrong is not silently replaced */
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if (snprintf(found, sizeof found, "%.4000s/../share/membound/plots", exe) <
                    (int)sizeof found &&
                has_style(found))
                return found;
        }
    }
    snprintf(found, sizeof found, "%s", MB_PLOTS_INSTALL_DIR);
    if (has_style(found)) return found;
    snprintf(found, sizeof found, "%s", MB_PLOTS_SOURCE_DIR);
    if (found[0] && has_style(found)) return found;
    return NULL;
}

int mb_rpt_find_gnuplot(char *buf, size_t bufsize, mb_err *err)
{
    const char *env = env_gnuplot;
    if (env && *env) {
        if (access(env, X_OK) == 0) {
            snprintf(buf, bufsize, "%s", env);
            return MB_OK;
        }
        return mb_err_set(err, MB_ERUN, "gnuplot not found: MEMBOUND_GNUPLOT=%s is not executable",
                          env);
    }
    const char *path = env_path;
    if (!*path) path = "/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        char cand[PATH_MAX];
        snprintf(cand, sizeof cand, "%.*s/gnuplot", (int)len, len ? path : ".");
        if (access(cand, X_OK) == 0) {
            snprintf(buf, bufsize, "%s", cand);
            return MB_OK;
        }
        if (!colon) break;
        path = colon + 1;
    }
    return mb_err_set(err, MB_ERUN, "gnuplot not found on PATH (install gnuplot, or set "
                                    "MEMBOUND_GNUPLOT)");
}

int rpt_gnuplot_run(const char *gnuplot, const char *script, const char *data, const char *tmp,
                    const char *log, mb_child_result *res, mb_err *err)
{
    char *argv[] = {(char *)gnuplot, (char *)"-c", (char *)script, (char *)data, (char *)tmp, NULL};
    mb_child_spec spec = {argv, NULL, log, log ? "=" : "", gnuplot_timeout_s, {tmp, log, NULL}};
    return mb_child_run(&spec, res, err);
}

int rpt_draw_given(const char *stem, const char *dat, const char *figure, mb_err *err)
{
    const char *dir = mb_rpt_plots_dir();
    char gp[4096], path[4200];
    mb_err e;
    if (!dir) return mb_err_set(err, MB_ERUN, "plot scripts not found (set MEMBOUND_PLOTS); data in %s", dat);
    if (mb_rpt_find_gnuplot(gp, sizeof gp, &e)) return mb_err_set(err, MB_ERUN, "%s; data in %s", e.msg, dat);
    snprintf(path, sizeof path, "%s/%s.gp", dir, stem);
    /* drawn under a temporary name beside the figure, renamed when whole */
    char tmp[4200];
    const char *slash = strrchr(figure, '/'), *dot = strrchr(figure, '.');
    const char *ext = dot && (!slash || dot > slash) ? dot : "";
    snprintf(tmp, sizeof tmp, "%s.tmp%ld%s", figure, (long)getpid(), ext);
    mb_child_result res;
    char how[160];
    if (rpt_gnuplot_run(gp, path, dat, tmp, NULL, &res, err)) return MB_ERUN;
    if (res.outcome != MB_CHILD_EXITED || res.status != 0 || rename(tmp, figure) != 0) {
        unlink(tmp);
        return mb_err_set(err, MB_ERUN, "gnuplot failed drawing %s from %s (%s)", figure, dat,
                          mb_child_describe(&res, gnuplot_timeout_s, how, sizeof how));
    }
    return MB_OK;
}
