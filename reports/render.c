/* render.c — a figure folder: copies the scripts next to the data, has
 * gnuplot draw each figure headless (one run per figure and format, gnuplot.c)
 * and writes render.sh so a user can restyle and redraw; and the figures'
 * settings (formats, size, theme, output folder). Does not decide what a
 * figure shows (fig_*.c and the plots/ scripts do). */
#define _POSIX_C_SOURCE 200809L
#include "render_int.h"
#include "mb_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mb_rpt_parse_formats(const char *s, unsigned *out, mb_err *err)
{
    unsigned f = 0;
    const char *p = s;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == 3 && !strncmp(p, "png", 3)) f |= MB_RPT_PNG;
        else if (len == 3 && !strncmp(p, "svg", 3)) f |= MB_RPT_SVG;
        else if (len == 3 && !strncmp(p, "pdf", 3)) f |= MB_RPT_PDF;
        else
            return mb_err_set(err, MB_EINPUT, "unknown figure format '%.*s' (png, svg, pdf)",
                              (int)len, p);
        if (!c) break;
        p = c + 1;
    }
    if (!f) return mb_err_set(err, MB_EINPUT, "no figure format given (png, svg, pdf)");
    *out = f;
    return MB_OK;
}

int mb_rpt_mkdirs(const char *dir, mb_err *err)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return mb_err_set(err, MB_EINPUT, "%s: path too long", dir);
    for (char *s = p + 1; ; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return mb_err_set(err, errno == ENOSPC || errno == EIO ? MB_ERUN : MB_EINPUT,
                                  "%s: cannot create directory: %s", p, strerror(errno));
            *s = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return mb_err_set(err, MB_EINPUT, "%s: not a directory", dir);
    return MB_OK;
}

int mb_rpt_check_out_dir(const char *dir, mb_err *err)
{
    char p[PATH_MAX];
    if (!dir[0]) return mb_err_set(err, MB_EINPUT, "output directory is empty");
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
        return mb_err_set(err, MB_EINPUT, "%s: path too long", dir);
    /* the folder itself, else its nearest existing ancestor, must be a
     * directory this process can create entries in */
    for (;;) {
        struct stat st;
        if (stat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return mb_err_set(err, MB_EINPUT, "%s: %s is not a directory", dir, p);
            if (access(p, W_OK | X_OK) != 0)
                return mb_err_set(err, MB_EINPUT, "%s: cannot write in %s: %s", dir, p, strerror(errno));
            return MB_OK;
        }
        if (errno != ENOENT) return mb_err_set(err, MB_EINPUT, "%s: %s", p, strerror(errno));
        char *slash = strrchr(p, '/');
        while (slash && slash > p && slash[1] == '\0') { /* trailing slashes */
            *slash = '\0';
            slash = strrchr(p, '/');
        }
        if (!slash) { snprintf(p, sizeof p, "."); continue; }
        if (slash == p) { p[1] = '\0'; continue; }
        *slash = '\0';
    }
}

int mb_rpt_parse_size(const char *s, mb_rpt_look *look, mb_err *err)
{
    int w = 0, h = 0;
    char end;
    if (!strcmp(s, "16:9")) w = 1280, h = 720;
    else if (!strcmp(s, "4:3")) w = 960, h = 720;
    else if (sscanf(s, "%dx%d%c", &w, &h, &end) != 2 || w < 320 || h < 240 || w > 4096 || h > 4096)
        return mb_err_set(err, MB_EINPUT, "--size '%s': give 16:9 (1280x720), 4:3 (960x720) or "
                                          "WIDTHxHEIGHT in pixels, 320x240 to 4096x4096", s);
    look->width_px = w;
    look->height_px = h;
    return MB_OK;
}

int mb_rpt_parse_font_scale(const char *s, mb_rpt_look *look, mb_err *err)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0.5 && v <= 3))
        return mb_err_set(err, MB_EINPUT, "--font-scale '%s': give a number from 0.5 to 3 (1: as drawn "
                                          "for a 1280x720 slide)", s);
    look->font_scale = v;
    return MB_OK;
}

int mb_rpt_parse_theme(const char *s, mb_rpt_look *look, mb_err *err)
{
    if (strcmp(s, "light") && strcmp(s, "dark"))
        return mb_err_set(err, MB_EINPUT, "--theme '%s': give light or dark", s);
    look->dark = !strcmp(s, "dark");
    return MB_OK;
}

/* look.gp: the look every script loads (style.gp), the defaults for a zero field. */
static int write_look(rpt_fig_ctx *fc)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/look.gp", fc->dir);
    mb_outfile of;
    int rc = mb_outfile_open(&of, path, fc->err);
    if (rc) return rc;
    const mb_rpt_look *l = &fc->look;
    fprintf(of.fp, "# look.gp — the look of the figures beside it (membound --size, --font-scale,\n"
                   "# --theme): edit and run render.sh. A value given with gnuplot -e before -c wins.\n"
                   "if (!exists(\"mb_width\")) mb_width = %d\n"
                   "if (!exists(\"mb_height\")) mb_height = %d\n"
                   "if (!exists(\"mb_fscale\")) mb_fscale = %.3g\n"
                   "if (!exists(\"mb_theme\")) mb_theme = '%s'\n",
            l->width_px > 0 ? l->width_px : 1280, l->height_px > 0 ? l->height_px : 720,
            l->font_scale > 0 ? l->font_scale : 1.0, l->dark ? "dark" : "light");
    return mb_outfile_commit(&of, fc->err);
}

int rpt_fig_begin(rpt_fig_ctx *fc, const char *dir, unsigned formats, int render,
                  const mb_rpt_look *look, mb_rpt_figures *out, mb_err *err)
{
    memset(fc, 0, sizeof *fc);
    memset(out, 0, sizeof *out);
    if (look) fc->look = *look;
    snprintf(fc->dir, sizeof fc->dir, "%s", dir);
    snprintf(out->dir, sizeof out->dir, "%s", dir);
    fc->formats = formats ? formats : MB_RPT_PNG;
    fc->render = render;
    fc->out = out;
    fc->err = err;
    int rc = mb_rpt_mkdirs(dir, err);
    if (rc) return rc;
    fc->plots = mb_rpt_plots_dir();
    if (render) {
        mb_err e;
        if (mb_rpt_find_gnuplot(fc->gnuplot, sizeof fc->gnuplot, &e) == MB_OK) fc->have_gnuplot = 1;
        else {
            out->gnuplot_missing = 1;
            snprintf(out->render_error, sizeof out->render_error, "%s", e.msg);
        }
    }
    return MB_OK;
}

int rpt_fig_open(rpt_fig_ctx *fc, const char *name, mb_outfile *of, FILE **fp)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.dat", fc->dir, name);
    int rc = mb_outfile_open(of, path, fc->err);
    if (rc) return rc;
    *fp = of->fp;
    return MB_OK;
}

static int copy_file(const char *from, const char *to, mb_err *err)
{
    FILE *in = fopen(from, "rb");
    if (!in) return mb_err_set(err, MB_ERUN, "%s: cannot read: %s", from, strerror(errno));
    mb_outfile of;
    int rc = mb_outfile_open(&of, to, err);
    if (rc) { fclose(in); return rc; }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, of.fp);
    int bad = ferror(in);
    fclose(in);
    if (bad) {
        mb_outfile_abort(&of);
        return mb_err_set(err, MB_ERUN, "%s: read error", from);
    }
    return mb_outfile_commit(&of, err);
}

/* Copies plots/<script>.gp (and style.gp and look.gp, once) into the figure directory. */
static int copy_script(rpt_fig_ctx *fc, const char *script)
{
    if (!fc->plots) return MB_OK;
    for (int i = 0; i < fc->n_copied; i++)
        if (!strcmp(fc->copied[i], script)) return MB_OK;
    char from[PATH_MAX], to[PATH_MAX];
    int rc;
    if (fc->n_copied == 0) {
        snprintf(from, sizeof from, "%s/style.gp", fc->plots);
        snprintf(to, sizeof to, "%s/style.gp", fc->dir);
        if ((rc = copy_file(from, to, fc->err))) return rc;
        if ((rc = write_look(fc))) return rc;
    }
    snprintf(from, sizeof from, "%s/%s.gp", fc->plots, script);
    snprintf(to, sizeof to, "%s/%s.gp", fc->dir, script);
    if ((rc = copy_file(from, to, fc->err))) return rc;
    if (fc->n_copied < 16) snprintf(fc->copied[fc->n_copied++], sizeof fc->copied[0], "%s", script);
    return MB_OK;
}

/* Runs gnuplot -c script data out (out written to a temporary of the same
 * extension, renamed when non-empty). Fills msg with the reason on failure. */
static int run_gnuplot(rpt_fig_ctx *fc, const char *script, const char *name, const char *ext,
                       char *msg, size_t msgsize)
{
    char sp[PATH_MAX], dp[PATH_MAX], op[PATH_MAX], tp[PATH_MAX], lp[PATH_MAX];
    snprintf(sp, sizeof sp, "%s/%s.gp", fc->dir, script);
    snprintf(dp, sizeof dp, "%s/%s.dat", fc->dir, name);
    snprintf(op, sizeof op, "%s/%s.%s", fc->dir, name, ext);
    snprintf(tp, sizeof tp, "%s/.%s.tmp%ld.%s", fc->dir, name, (long)getpid(), ext);
    snprintf(lp, sizeof lp, "%s/.%s.log%ld", fc->dir, name, (long)getpid());
    mb_child_result res;
    mb_err e;
    double timeout_s = mb_rpt_gnuplot_timeout_s();
    if (rpt_gnuplot_run(fc->gnuplot, sp, dp, tp, lp, &res, &e) != MB_OK) {
        snprintf(msg, msgsize, "%s", e.msg);
        return MB_ERUN;
    }
    char how[160];
    if (res.outcome != MB_CHILD_EXITED && res.outcome != MB_CHILD_SIGNALED) {
        /* a gnuplot that hangs would hang on every figure: none is run again */
        fc->hung = 1;
        snprintf(msg, msgsize, "gnuplot on %s.gp with %s.dat: %s", script, name,
                 mb_child_describe(&res, timeout_s, how, sizeof how));
        return MB_ERUN;
    }
    struct stat sb;
    int ok = res.outcome == MB_CHILD_EXITED && res.status == 0 && stat(tp, &sb) == 0 && sb.st_size > 0;
    if (!ok) {
        /* the first error line gnuplot printed */
        char line[400] = "", first[400] = "";
        FILE *lf = fopen(lp, "r");
        while (lf && fgets(line, sizeof line, lf)) {
            line[strcspn(line, "\n")] = '\0';
            if (!first[0] && line[0] && strspn(line, " ^") != strlen(line)) snprintf(first, sizeof first, "%s", line);
            if (strstr(line, "error") || strstr(line, "Error")) { snprintf(first, sizeof first, "%s", line); break; }
        }
        if (lf) fclose(lf);
        snprintf(msg, msgsize, "gnuplot failed on %s.gp with %s.dat (%s): %s", script, name,
                 mb_child_describe(&res, timeout_s, how, sizeof how), first[0] ? first : "no output file");
        unlink(tp);
        unlink(lp);
        return MB_ERUN;
    }
    unlink(lp);
    if (rename(tp, op) != 0) {
        snprintf(msg, msgsize, "%s: cannot rename into place: %s", op, strerror(errno));
        unlink(tp);
        return MB_ERUN;
    }
    return MB_OK;
}

int rpt_fig_finish(rpt_fig_ctx *fc, mb_outfile *of, const char *script, const char *name,
                   const char *title)
{
    int rc = mb_outfile_commit(of, fc->err);
    if (rc) return rc;
    if ((rc = copy_script(fc, script))) return rc;
    mb_rpt_figures *out = fc->out;
    if (out->n >= MB_RPT_MAX_FIGURES) return MB_OK;
    mb_rpt_figure *f = &out->fig[out->n++];
    snprintf(f->name, sizeof f->name, "%s", name);
    /* the documents' title: gnuplot's enhanced-text braces dropped ("2^{20}" -> "2^20") */
    size_t j = 0;
    for (const char *t = title; *t && j + 1 < sizeof f->title; t++)
        if (*t != '{' && *t != '}') f->title[j++] = *t;
    f->title[j] = '\0';
    if (fc->n_cmds < MB_RPT_MAX_FIGURES)
        snprintf(fc->cmds[fc->n_cmds++], sizeof fc->cmds[0], "%s %s", script, name);
    if (!fc->render || !fc->have_gnuplot || !fc->plots) return MB_OK;
    static const struct { unsigned bit; const char *ext; } fmts[] = {
        {MB_RPT_PNG, "png"}, {MB_RPT_SVG, "svg"}, {MB_RPT_PDF, "pdf"}};
    int all = 1;
    for (int i = 0; i < 3; i++) {
        if (!(fc->formats & fmts[i].bit)) continue;
        if (fc->hung) { all = 0; continue; }
        char msg[512];
        if (run_gnuplot(fc, script, name, fmts[i].ext, msg, sizeof msg) != MB_OK) {
            all = 0;
            if (!fc->failed) snprintf(out->render_error, sizeof out->render_error, "%s", msg);
            fc->failed = 1;
        }
    }
    f->rendered = all;
    return MB_OK;
}

int rpt_fig_end(rpt_fig_ctx *fc, int rc)
{
    if (rc) return rc;
    /* render.sh: redraw every figure after editing style.gp or a script */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/render.sh", fc->dir);
    mb_outfile of;
    if ((rc = mb_outfile_open(&of, path, fc->err))) return rc;
    FILE *fp = of.fp;
    fprintf(fp, "#!/bin/sh\n"
                "# Redraws every figure from its data file: edit style.gp (the shared look)\n"
                "# or one script, then run this. Usage: sh render.sh [png|svg|pdf]...\n"
                "set -e\ncd \"$(dirname \"$0\")\"\n[ $# -gt 0 ] || set -- png\n"
                "for ext in \"$@\"; do\n");
    for (int i = 0; i < fc->n_cmds; i++) {
        char script[64], name[96];
        if (sscanf(fc->cmds[i], "%63s %95s", script, name) != 2) continue;
        fprintf(fp, "  gnuplot -c %s.gp %s.dat %s.\"$ext\"\n", script, name, name);
    }
    fprintf(fp, "done\n");
    fchmod(of.fd, 0755); /* the stream writes through of.fd (no fileno) */
    if ((rc = mb_outfile_commit(&of, fc->err))) return rc;
    if (!fc->render) return MB_OK;
    if (!fc->plots)
        return mb_err_set(fc->err, MB_ERUN,
                          "gnuplot scripts not found (set MEMBOUND_PLOTS to the plots folder): "
                          "data files are in %s", fc->dir);
    if (!fc->have_gnuplot)
        return mb_err_set(fc->err, MB_ERUN, "%s: figures not drawn; their data and scripts are in %s",
                          fc->out->render_error, fc->dir);
    if (fc->failed)
        return mb_err_set(fc->err, MB_ERUN, "%s", fc->out->render_error);
    return MB_OK;
}
