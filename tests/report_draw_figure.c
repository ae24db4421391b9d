/* report_draw_figure.c — a figure drawn from its caller's data file
 * (mb_rpt_draw_figure, plan --frontier --figure): only the figure table's
 * rows of that kind, with their plots/STEM.gp, renamed into place whole. */
#define _POSIX_C_SOURCE 200809L
#include "mb_test.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char plots[4096], gnuplot[4096];

/* The settings the CLI would pass: the source tree's plots, a fake gnuplot. */
static char *settings(const char *name)
{
    if (!strcmp(name, "MEMBOUND_PLOTS")) return plots;
    if (!strcmp(name, "MEMBOUND_GNUPLOT")) return gnuplot;
    return NULL;
}

static char *no_plots(const char *name)
{
    return !strcmp(name, "MEMBOUND_PLOTS") ? (char *)"/nonexistent/plots" : NULL;
}

/* A fake gnuplot: records its arguments in args, writes "img" to its output
 * (the 4th: -c script data out) and exits with status. */
static void fake_gnuplot(const char *dir, int status)
{
    snprintf(gnuplot, sizeof gnuplot, "%s/gnuplot", dir);
    FILE *fp = fopen(gnuplot, "w");
    if (!fp) return;
    fprintf(fp, "#!/bin/sh\necho \"$@\" > '%s/args'\necho img > \"$4\"\nexit %d\n", dir, status);
    fclose(fp);
    chmod(gnuplot, 0755);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* 1 when dir holds an entry whose name contains part. */
static int left(const char *dir, const char *part)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q '%s'", dir, part);
    return system(cmd) == 0;
}

int main(void)
{
    const char *src = getenv("MB_SRC");
    if (!src) return 77;
    snprintf(plots, sizeof plots, "%s/plots", src);
    char dir[] = "/tmp/mb_draw_figureXXXXXX";
    if (!mkdtemp(dir)) return 1;
    char dat[4200], png[4200], args[4200], want[8400], line[8400] = "";
    snprintf(dat, sizeof dat, "%s/f.dat", dir);
    snprintf(png, sizeof png, "%s/f.png", dir);
    snprintf(args, sizeof args, "%s/args", dir);
    FILE *fp = fopen(dat, "w");
    if (fp) fclose(fp);
    mb_err e;

    /* the frontier's row: its script, the caller's data, the image in place */
    fake_gnuplot(dir, 0);
    CHECK(mb_rpt_draw_figure("frontier", dat, png, settings, &e) == MB_OK);
    CHECK(exists(png));
    CHECK(!left(dir, "tmp"));
    fp = fopen(args, "r");
    if (fp) {
        if (!fgets(line, sizeof line, fp)) line[0] = '\0';
        fclose(fp);
    }
    snprintf(want, sizeof want, "-c %s/frontier.gp %s %s/f.png.tmp", plots, dat, dir);
    CHECK(!strncmp(line, want, strlen(want)));

    /* a failed drawing: no image, no temporary, the message plan prints */
    unlink(png);
    fake_gnuplot(dir, 3);
    CHECK(mb_rpt_draw_figure("frontier", dat, png, settings, &e) == MB_ERUN);
    snprintf(want, sizeof want, "gnuplot failed drawing %s from %s (exit status 3)", png, dat);
    CHECK(!strcmp(e.msg, want));
    CHECK(!exists(png));
    CHECK(!left(dir, "tmp"));

    /* no scripts: said, with where the data is */
    CHECK(mb_rpt_draw_figure("frontier", dat, png, no_plots, &e) == MB_ERUN);
    snprintf(want, sizeof want, "plot scripts not found (set MEMBOUND_PLOTS); data in %s", dat);
    CHECK(!strcmp(e.msg, want));

    /* a figure whose data the library writes itself, or none of the table */
    CHECK(mb_rpt_draw_figure("bytes", dat, png, settings, &e) == MB_EINPUT);
    CHECK(mb_rpt_draw_figure("nosuch", dat, png, settings, &e) == MB_EINPUT);
    CHECK(!exists(png));

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return mb_test_done();
}
