/* report_cli.c — `membound report` and `membound figures` as a user runs
 * them: exit codes, one-line errors naming file:line:col, the report files
 * with embedded figures, and gnuplot missing (exit 1, data still written). */
#include "mb_test.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int mb_test_write_csv(const char *path, const char *device, const char *backend, int counters,
                      double noise);

static char bin[1024], src[1024], out[1 << 16];

/* Runs a shell command, captures stdout+stderr into out, returns the exit status. */
static char cmd[4096];
#define RUN(...) (snprintf(cmd, sizeof cmd, __VA_ARGS__), run(cmd))
static int run(const char *c)
{
    char full[4200];
    snprintf(full, sizeof full, "%s 2>&1", c);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    printf("$ %s -> %d\n%s", c, rc, out);
    return rc;
}

static int exists(const char *dir, const char *name)
{
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int ok = access(p, R_OK) == 0;
    if (!ok) fprintf(stderr, "missing %s\n", p);
    return ok;
}

static int contains(const char *dir, const char *name, const char *needle)
{
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "rb");
    if (!fp) return 0;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return strstr(buf, needle) != NULL;
}

int main(void)
{
    const char *b = getenv("MB_BIN"), *s = getenv("MB_SRC");
    if (!b || !s) { fprintf(stderr, "needs MB_BIN and MB_SRC\n"); return 1; }
    snprintf(bin, sizeof bin, "%s", b);
    snprintf(src, sizeof src, "%s", s);
    char tmp[] = "/tmp/mb_report_cli_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char csv[1100], dir[1100], dir2[1100], fdir[1100], fixture[2048];
    snprintf(csv, sizeof csv, "%s/m.csv", tmp);
    snprintf(dir, sizeof dir, "%s/r", tmp);
    snprintf(dir2, sizeof dir2, "%s/r2", tmp);
    snprintf(fdir, sizeof fdir, "%s/f", tmp);

    CHECK(RUN("'%s' report --help", bin) == 0);
    CHECK(strstr(out, "usage: membound report") != NULL);
    CHECK(RUN("'%s' report", bin) == 2);
    snprintf(fixture, sizeof fixture, "%s/tests/data/report_wrong_type.csv", src);
    CHECK(RUN("'%s' report '%s' -o /tmp/never-written", bin, fixture) == 2);
    CHECK(strstr(out, "membound: error: ") != NULL);
    CHECK(strstr(out, "report_wrong_type.csv:4:30:") != NULL);
    snprintf(fixture, sizeof fixture, "%s/tests/data/report_unknown_device.csv", src);
    CHECK(RUN("'%s' report '%s' -o /tmp/never-written", bin, fixture) == 2);
    CHECK(strstr(out, "report_unknown_device.csv:4:1:") != NULL);
    CHECK(access("/tmp/never-written", F_OK) != 0);

    /* a report without counters (a100-80gb, as a GPU without counter permission) */
    CHECK(mb_test_write_csv(csv, "a100-80gb", "cuda", 0, 0.02) == 0);
    char gp[1024];
    mb_err e;
    int have_gp = mb_rpt_find_gnuplot(gp, sizeof gp, &e) == MB_OK;
    if (have_gp) {
        CHECK(RUN("'%s' report '%s' -o '%s' --formats png,svg", bin, csv, dir) == 0);
        CHECK(contains(dir, "report.html", "data:image/png;base64"));
        CHECK(contains(dir, "report.md", "!["));
        CHECK(contains(dir, "figures/time_vs_n.png", "PNG"));
        CHECK(contains(dir, "figures/residuals.svg", "<svg"));
        CHECK(contains(dir, "figures/roofline.png", "PNG"));
        CHECK(contains(dir, "figures/recompute.png", "PNG"));
        CHECK(exists(dir, "figures/render.sh"));
        CHECK(exists(dir, "figures/style.gp"));
        CHECK(contains(dir, "report.md", "no counters"));
        CHECK(strstr(out, "report: ") != NULL);
    } else {
        printf("gnuplot missing: figure checks skipped\n");
    }
    CHECK(exists(dir, "summary.csv") || !have_gp);

    /* gnuplot missing: exit 1, one error line, everything else written */
    CHECK(RUN("MEMBOUND_GNUPLOT=/nonexistent/gnuplot '%s' report '%s' -o '%s'", bin, csv, dir2) == 1);
    CHECK(strstr(out, "gnuplot not found") != NULL);
    CHECK(exists(dir2, "report.md"));
    CHECK(exists(dir2, "report.html"));
    CHECK(exists(dir2, "summary.json"));
    CHECK(exists(dir2, "figures/time_vs_n.dat"));
    CHECK(exists(dir2, "figures/time_vs_n.gp"));
    CHECK(contains(dir2, "report.md", "Figures not drawn"));

    /* model-only figures for another device */
    if (have_gp) {
        CHECK(RUN("'%s' figures -o '%s' --device a100-80gb", bin, fdir) == 0);
        CHECK(contains(fdir, "index.html", "A100"));
        CHECK(contains(fdir, "roofline.png", "PNG"));
    }
    CHECK(RUN("'%s' figures --device no-such-gpu -o /tmp/never-written", bin) == 2);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return mb_test_done();
}
