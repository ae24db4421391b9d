/* report_figures.c — every figure renders headless into a valid, non-empty
 * PNG (signature), SVG ("<svg") and PDF ("%PDF"); with gnuplot missing the
 * data files are still written and the error says so. Skips (77) without
 * gnuplot. */
#include "mb_test.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int starts_with(const char *path, const void *magic, size_t len, long *size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) { fprintf(stderr, "missing %s\n", path); return 0; }
    unsigned char buf[4096] = {0};
    size_t n = fread(buf, 1, sizeof buf, fp);
    fseek(fp, 0, SEEK_END);
    *size = ftell(fp);
    fclose(fp);
    if (len == 0) return n > 0;
    if (len == 4 && !memcmp(magic, "<svg", 4)) {
        for (size_t i = 0; i + 4 <= n; i++)
            if (!memcmp(buf + i, "<svg", 4)) return 1;
        return 0;
    }
    return n >= len && !memcmp(buf, magic, len);
}

int main(void)
{
    char gp[1024];
    mb_err e;
    mb_rpt_set_env(getenv); /* as the CLI does: the library reads no environment */
    if (mb_rpt_find_gnuplot(gp, sizeof gp, &e) != MB_OK) {
        printf("skipped: %s\n", e.msg);
        return 77;
    }
    if (!mb_rpt_plots_dir()) {
        fprintf(stderr, "plots directory not found (MEMBOUND_PLOTS)\n");
        return 1;
    }
    char tmp[] = "/tmp/mb_report_fig_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    mb_device d;
    CHECK(mb_device_find("h100-sxm", &d, &e) == MB_OK);
    static mb_rpt_figures figs;
    int rc = mb_rpt_model_figures(NULL, &d, NULL, 0, tmp, MB_RPT_PNG | MB_RPT_SVG | MB_RPT_PDF, 1, &figs, &e);
    if (rc) fprintf(stderr, "%s\n", e.msg);
    CHECK(rc == MB_OK);
    CHECK_EQ_I64(figs.n, 5);
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    for (int i = 0; i < figs.n; i++) {
        char p[2048];
        long size = 0;
        CHECK(figs.fig[i].rendered);
        snprintf(p, sizeof p, "%s/%s.png", tmp, figs.fig[i].name);
        CHECK(starts_with(p, png, 8, &size) && size > 10000);
        snprintf(p, sizeof p, "%s/%s.svg", tmp, figs.fig[i].name);
        CHECK(starts_with(p, "<svg", 4, &size) && size > 2000);
        snprintf(p, sizeof p, "%s/%s.pdf", tmp, figs.fig[i].name);
        CHECK(starts_with(p, "%PDF", 4, &size) && size > 2000);
        snprintf(p, sizeof p, "%s/%s.gp", tmp, figs.fig[i].name);
        CHECK(access(p, R_OK) == 0);
        printf("%-10s rendered png, svg, pdf\n", figs.fig[i].name);
    }
    char p[2048];
    snprintf(p, sizeof p, "%s/style.gp", tmp);
    CHECK(access(p, R_OK) == 0);
    snprintf(p, sizeof p, "%s/render.sh", tmp);
    CHECK(access(p, X_OK) == 0);
    CHECK(mb_rpt_write_model_index(NULL, &d, &figs, tmp, &e) == MB_OK);

    /* gnuplot missing: an error naming the cause, data and scripts still written */
    char tmp2[] = "/tmp/mb_report_nogp_XXXXXX";
    CHECK(mkdtemp(tmp2) != NULL);
    setenv("MEMBOUND_GNUPLOT", "/nonexistent/gnuplot", 1);
    mb_rpt_set_env(getenv);
    rc = mb_rpt_model_figures(NULL, &d, NULL, 0, tmp2, MB_RPT_PNG, 1, &figs, &e);
    CHECK_EQ_I64(rc, MB_ERUN);
    printf("without gnuplot: %s\n", e.msg);
    CHECK(strstr(e.msg, "gnuplot not found") != NULL);
    CHECK(figs.gnuplot_missing);
    snprintf(p, sizeof p, "%s/time_vs_n.dat", tmp2);
    CHECK(access(p, R_OK) == 0);
    snprintf(p, sizeof p, "%s/time_vs_n.gp", tmp2);
    CHECK(access(p, R_OK) == 0);
    snprintf(p, sizeof p, "%s/time_vs_n.png", tmp2);
    CHECK(access(p, R_OK) != 0);
    unsetenv("MEMBOUND_GNUPLOT");
    mb_rpt_set_env(getenv);

    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", tmp, tmp2);
    if (system(cmd) != 0) fprintf(stderr, "could not clean up\n");
    return mb_test_done();
}
