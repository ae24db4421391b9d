/* report_settings.c — the reports library reads no environment variable:
 * gnuplot, the plots folder and PATH are what the caller passes
 * (mb_rpt_set_env, the CLI passing getenv), whatever the environment says. */
#define _POSIX_C_SOURCE 200809L
#include "mb_test.h"
#include "report.h"

#include <stdlib.h>
#include <string.h>

static char *no_gnuplot(const char *name)
{
    if (!strcmp(name, "MEMBOUND_GNUPLOT")) return (char *)"/nonexistent/gnuplot";
    if (!strcmp(name, "MEMBOUND_PLOTS")) return (char *)"/nonexistent/plots";
    return NULL;
}

static char *empty_path(const char *name)
{
    return !strcmp(name, "PATH") ? (char *)"/nonexistent/bin" : NULL;
}

int main(void)
{
    char gp[1024];
    mb_err e;
    /* the environment says gnuplot is nowhere: not read */
    setenv("MEMBOUND_GNUPLOT", "/nonexistent/env-gnuplot", 1);
    setenv("MEMBOUND_PLOTS", "/nonexistent/env-plots", 1);
    mb_rpt_set_env(no_gnuplot);
    CHECK(mb_rpt_find_gnuplot(gp, sizeof gp, &e) == MB_ERUN);
    CHECK(strstr(e.msg, "MEMBOUND_GNUPLOT=/nonexistent/gnuplot is not executable") != NULL);
    CHECK(mb_rpt_plots_dir() == NULL); /* a wrong setting is not replaced */
    mb_rpt_set_env(empty_path);
    CHECK(mb_rpt_find_gnuplot(gp, sizeof gp, &e) == MB_ERUN);
    CHECK(strstr(e.msg, "gnuplot not found on PATH") != NULL);
    /* nothing set: the plots folder is found without it (beside the binary or
     * the source tree), never from the environment's wrong one */
    mb_rpt_set_env(NULL);
    const char *plots = mb_rpt_plots_dir();
    CHECK(plots == NULL || strstr(plots, "env-plots") == NULL);
    return mb_test_done();
}
