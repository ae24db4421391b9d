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

/* quick_gelu, the custom variant of these tests */
static const char quick_gelu_expr[] = "name quick_gelu; y = x * sigmoid(1.702 * x)";

/* A CSV of quick_gelu (eager and fused, n = 2^20..2^26) whose device column says
 * a100-80gb and whose times are scale x the model's time + t0_s on a spec
 * named my-gpu (an A100's figures under another name). With embed, the
 * spec and the variant's text are in its provenance, as `measure` writes
 * them; with kernel_rows, every row is a per-kernel row. 0 on success. */
static int write_quick_gelu_csv(const char *path, int embed, double scale, double t0_s, int kernel_rows)
{
    mb_device d;
    mb_err e;
    if (mb_device_find("a100-80gb", &d, &e)) return -1;
    snprintf(d.name, sizeof d.name, "my-gpu");
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fputs("# membound measurement (written by report_cli)\n", fp);
    if (embed) {
        char *spec = mb_device_ini_text(&d, &e);
        if (!spec) { fclose(fp); return -1; }
        for (char *line = strtok(spec, "\n"); line; line = strtok(NULL, "\n"))
            fprintf(fp, "# %s: %s\n", MB_MEAS_PROV_SPEC, line);
        free(spec);
        fprintf(fp, "# %s quick_gelu: %s\n", MB_MEAS_PROV_EXPR, quick_gelu_expr);
    }
#define COL_NAME(name, required) "," #name
    fprintf(fp, "%s%s\n", &(MB_MEAS_CSV_COLUMNS(COL_NAME))[1], kernel_rows ? ",kernel" : "");
#undef COL_NAME
    mb_graph *g;
    if (mb_parse_expr(quick_gelu_expr, MB_F32, &g, &e)) { fclose(fp); return -1; }
    for (int pk = MB_PLAN_EAGER; pk <= MB_PLAN_FUSED; pk++) {
        mb_plan *p;
        if (mb_plan_build(g, (mb_plan_kind)pk, &p, &e)) { fclose(fp); return -1; }
        for (int lg = 20; lg <= 26; lg += 2) {
            mb_estimate est;
            if (mb_estimate_plan(p, (int64_t)1 << lg, &d, &est, &e)) { fclose(fp); return -1; }
            double t = scale * est.total.time_s + t0_s;
            fprintf(fp, "a100-80gb,cuda,quick_gelu,%s,f32,%lld,%d,20,%.9g,%.9g,%.9g,0.01,%.9g,%lld,%lld,"
                        "%lld,%lld,,,none,0,1%s\n",
                    mb_plan_name((mb_plan_kind)pk), 1LL << lg, est.n_kernels, t, 0.99 * t, 1.02 * t,
                    est.total.time_s, (long long)est.total.read_bytes,
                    (long long)est.total.write_bytes, (long long)est.total.dram_read_bytes,
                    (long long)est.total.dram_write_bytes, kernel_rows ? ",k0" : "");
            mb_estimate_free(&est);
        }
        mb_plan_free(p);
    }
    mb_graph_free(g);
    return fclose(fp);
}

/* Lines of dir/name that start with prefix. */
/* speedup.dat's measured ratios against its model ratios: how many sizes
 * have both, and the largest |measured / model - 1| among them */
static int speedup_points(const char *dir, double *worst)
{
    char p[2048], line[512];
    snprintf(p, sizeof p, "%s/figures/speedup.dat", dir);
    FILE *fp = fopen(p, "r");
    if (!fp) return -1;
    int n = 0;
    *worst = 0;
    while (fgets(line, sizeof line, fp)) {
        double sz, model, meas, lo, hi;
        if (sscanf(line, "%lf %lf %lf %lf %lf", &sz, &model, &meas, &lo, &hi) != 5 || !isfinite(meas)) continue;
        n++;
        *worst = fmax(*worst, fabs(meas / model - 1));
        if (!(lo <= meas && meas <= hi)) *worst = INFINITY; /* the bar holds the median */
    }
    fclose(fp);
    return n;
}

static int count_lines(const char *dir, const char *name, const char *prefix)
{
    char p[2048], line[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "r");
    int n = 0;
    while (fp && fgets(line, sizeof line, fp)) n += !strncmp(line, prefix, strlen(prefix));
    if (fp) fclose(fp);
    return n;
}

/* Any variant, from any folder: the CSV carries its spec and variant text. */
static void test_custom(const char *tmp, int have_gp)
{
    char csv[1100], bare[1100], kern[1100], mb[1100], ini[1100], d[1100], other[1100];
    snprintf(csv, sizeof csv, "%s/quick_gelu.csv", tmp);
    snprintf(bare, sizeof bare, "%s/bare.csv", tmp);
    snprintf(kern, sizeof kern, "%s/quick_gelu-kernels.csv", tmp);
    snprintf(mb, sizeof mb, "%s/quick_gelu.mb", tmp);
    snprintf(ini, sizeof ini, "%s/my.ini", tmp);
    snprintf(other, sizeof other, "%s/elsewhere", tmp);
    CHECK(write_quick_gelu_csv(csv, 1, 1.0, 0, 0) == 0);
    CHECK(write_quick_gelu_csv(bare, 0, 1.0, 0, 0) == 0);
    CHECK(write_quick_gelu_csv(kern, 1, 1.0, 0, 1) == 0);
    const char *nr = have_gp ? "" : "--no-figures";

    /* embedded: reports from another folder; the spec, not the column, is the device */
    CHECK(RUN("mkdir -p '%s' && cd '%s' && '%s' report '%s' '%s' -o r %s", other, other, bin, csv, kern, nr) == 0);
    snprintf(d, sizeof d, "%s/r", other);
    CHECK(contains(d, "report.md", "my-gpu"));
    CHECK(!contains(d, "report.md", "Verdict: the lecture's claims"));
    CHECK(contains(d, "report.md", "no lecture claim is checked"));
    CHECK(contains(d, "report.md", "x \\* sigmoid(1.702 \\* x)") || contains(d, "report.md", "x * sigmoid(1.702 * x)"));
    CHECK(contains(d, "report.md", "8 per-kernel rows (1 file holding only per-kernel rows)"));
    CHECK(contains(d, "figures/bytes.dat", "traffic-rule count"));
    CHECK(!contains(d, "figures/bytes.dat", "lecture"));
    CHECK(strstr(out, "no lecture variant") != NULL);
    /* a per-kernel CSV alone is not a report */
    CHECK(RUN("'%s' report '%s' -o '%s/never'", bin, kern, tmp) == 2);
    CHECK(strstr(out, "per-kernel rows only") != NULL);

    /* without the text: the variant must be given, as --expr or a .mb file */
    CHECK(RUN("'%s' report '%s' -o '%s/never' --no-figures", bin, bare, tmp) == 2);
    CHECK(strstr(out, "unknown variant 'quick_gelu'") != NULL);
    CHECK(RUN("'%s' report '%s' --expr '%s' -o '%s/rx' --no-figures", bin, bare, quick_gelu_expr, tmp) == 0);
    FILE *fp = fopen(mb, "w");
    CHECK(fp != NULL);
    if (fp) { fputs("name quick_gelu\ninput x\ny = x * sigmoid(1.702 * x)\noutput y\n", fp); fclose(fp); }
    CHECK(RUN("'%s' report '%s' '%s' -o '%s/rm' --no-figures", bin, bare, mb, tmp) == 0);
    snprintf(d, sizeof d, "%s/rm", tmp);
    CHECK(contains(d, "report.md", "a100-80gb"));

    /* a number that cannot be true is flagged by the fit, in every output */
    CHECK(write_quick_gelu_csv(csv, 1, 0.1, 0, 0) == 0);
    CHECK(RUN("'%s' report '%s' -o '%s/ri' --no-figures", bin, csv, tmp) == 0);
    CHECK(strstr(out, "IMPOSSIBLE") != NULL);
    snprintf(d, sizeof d, "%s/ri", tmp);
    CHECK(contains(d, "summary.json", "\"impossible\": true"));
    CHECK(contains(d, "report.md", "IMPOSSIBLE: above the datasheet peak"));
    CHECK(contains(d, "report.html", "Impossible number"));
    CHECK(count_lines(d, "fits.csv", "my-gpu,cuda,1,8,") == 1);
    /* a fitted launch time below zero is explained in the fit table itself */
    CHECK(write_quick_gelu_csv(csv, 1, 1.0, -5e-6, 0) == 0);
    CHECK(RUN("'%s' report '%s' -o '%s/rt' --no-figures", bin, csv, tmp) == 0);
    CHECK(strstr(out, "below zero") != NULL && strstr(out, "e+0") == NULL);
    snprintf(d, sizeof d, "%s/rt", tmp);
    CHECK(contains(d, "report.md", "not determined (") && contains(d, "report.md", "below zero, not a launch time"));
    CHECK(contains(d, "summary.json", "\"t0_negative\": true"));

    if (!have_gp) return;
    /* figures of any variant, on the devices asked for, a spec file among them */
    mb_device my;
    mb_err e;
    CHECK(mb_device_find("a100-80gb", &my, &e) == MB_OK);
    snprintf(my.name, sizeof my.name, "my-gpu");
    CHECK(mb_device_write_ini(&my, ini, &e) == MB_OK);
    CHECK(RUN("'%s' figures gelu_tanh --devices 'h100-sxm, a100-80gb' -o '%s/f1'", bin, tmp) == 0);
    snprintf(d, sizeof d, "%s/f1", tmp);
    CHECK(count_lines(d, "whatif.dat", "\"") == 2);
    CHECK(count_lines(d, "whatif.dat", "\"a100-80gb\"") == 1);
    CHECK(contains(d, "index.md", "gelu\\_tanh") && !contains(d, "index.md", "sigmoid3"));
    /* one variant, two definitions: refused, naming both */
    CHECK(RUN("'%s' figures --expr '%s' '%s' --devices h100-sxm,'%s' -o '%s/f2'", bin, quick_gelu_expr, mb,
              ini, tmp) == 2);
    CHECK(RUN("'%s' figures '%s' --devices h100-sxm,'%s' -o '%s/f2'", bin, mb, ini, tmp) == 0);
    snprintf(d, sizeof d, "%s/f2", tmp);
    CHECK(count_lines(d, "whatif.dat", "\"my-gpu\"") == 1);
    /* the panel names the variant, the legend its plans */
    CHECK(contains(d, "time_vs_n.dat", "panel0 \"quick-gelu\"") && contains(d, "time_vs_n.dat", "\"fused\""));
    CHECK(contains(d, "roofline.dat", "quick-gelu eager"));
    CHECK(contains(d, "whatif.png", "PNG"));
    /* --dtype and --plan lists: the given variant at each dtype, only those plans */
    CHECK(RUN("'%s' figures --expr '%s' --dtype f32,bf16 --plan fused --no-render -o '%s/f3'", bin,
              quick_gelu_expr, tmp) == 0);
    snprintf(d, sizeof d, "%s/f3", tmp);
    CHECK(contains(d, "time_vs_n.dat", "\"fused\"") && contains(d, "time_vs_n.dat", "\"fused bf16\""));
    CHECK(!contains(d, "time_vs_n.dat", "\"eager\""));
    CHECK(RUN("'%s' figures --plan eager --no-render -o '%s/f4'", bin, tmp) == 0);
    snprintf(d, sizeof d, "%s/f4", tmp);
    CHECK(contains(d, "time_vs_n.dat", "eager") && !contains(d, "time_vs_n.dat", "fused"));
    CHECK(RUN("'%s' figures --dtype f64 -o '%s/f5'", bin, tmp) == 2);
}

/* The three commands a user runs: measure a custom variant, then report and
 * draw it from another folder. */
static void test_three_commands(const char *tmp, int have_gp)
{
    char m[1100], other[1100];
    snprintf(m, sizeof m, "%s/measured", tmp);
    snprintf(other, sizeof other, "%s/another", tmp);
    CHECK(RUN("mkdir -p '%s' '%s' && cd '%s' && '%s' measure --expr '%s' --device h100-sxm "
              "--backend cpu --sizes 2^12,2^14,2^16 --timeout 0.05 -q -o quick_gelu.csv",
              m, other, m, bin, quick_gelu_expr) == 0);
    CHECK(RUN("cd '%s' && '%s' report ../measured/quick_gelu.csv -o r %s", other, bin,
              have_gp ? "" : "--no-figures") == 0);
    char d[1200];
    snprintf(d, sizeof d, "%s/r", other);
    CHECK(contains(d, "report.md", "| quick\\_gelu | eager |"));
    CHECK(contains(d, "report.md", "h100-sxm"));
    if (have_gp)
        CHECK(RUN("cd '%s' && '%s' figures --expr '%s' -o f", other, bin, quick_gelu_expr) == 0);
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
    mb_rpt_set_env(getenv); /* as the CLI does: the library reads no environment */
    int have_gp = mb_rpt_find_gnuplot(gp, sizeof gp, &e) == MB_OK;
    if (have_gp) {
        CHECK(RUN("'%s' report '%s' -o '%s' --formats png,svg", bin, csv, dir) == 0);
        CHECK(contains(dir, "report.html", "data:image/png;base64"));
        CHECK(contains(dir, "report.md", "!["));
        CHECK(contains(dir, "figures/time_vs_n.png", "PNG"));
        CHECK(contains(dir, "figures/residuals.svg", "<svg"));
        CHECK(contains(dir, "figures/roofline.png", "PNG"));
        CHECK(contains(dir, "figures/recompute.png", "PNG"));
        /* the claims as ratios: rows made from the model with 2% noise give
         * measured ratios near the model's at every measured size */
        CHECK(contains(dir, "figures/speedup.png", "PNG"));
        CHECK(contains(dir, "figures/speedup.dat", "claim2 \"sin^2+cos^2: eager / fused\""));
        CHECK(contains(dir, "figures/speedup.dat", "claim1 \"copy: f32 / bf16\""));
        CHECK(contains(dir, "figures/speedup.dat", "n_claims 5"));
        double worst = INFINITY;
        int pts = speedup_points(dir, &worst);
        CHECK(pts >= 15);
        CHECK(worst < 0.1);
        /* a claim whose fast side was not measured is not drawn; none: no figure */
        char dir3[1200];
        snprintf(dir3, sizeof dir3, "%s/r3", tmp);
        CHECK(RUN("'%s' report '%s' -o '%s' --variants copy,gelu_tanh --plan eager -q", bin, csv, dir3) == 0);
        CHECK(contains(dir3, "figures/speedup.dat", "n_claims 1"));
        CHECK(!contains(dir3, "figures/speedup.dat", "GELU"));
        snprintf(dir3, sizeof dir3, "%s/r4", tmp);
        CHECK(RUN("'%s' report '%s' -o '%s' --variants gelu_tanh --plan eager -q", bin, csv, dir3) == 0);
        CHECK(!exists(dir3, "figures/speedup.dat"));
        CHECK(exists(dir3, "figures/time_vs_n.dat"));
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
    CHECK(exists(dir2, "figures/speedup.dat"));
    CHECK(contains(dir2, "report.md", "Figures not drawn"));

    /* model-only figures for another device */
    if (have_gp) {
        CHECK(RUN("'%s' figures -o '%s' --device a100-80gb", bin, fdir) == 0);
        CHECK(contains(fdir, "index.html", "A100"));
        CHECK(contains(fdir, "roofline.png", "PNG"));
    }
    CHECK(RUN("'%s' figures --device no-such-gpu -o /tmp/never-written", bin) == 2);

    /* the HTML comes from cmark: no raw Markdown left in it */
    if (have_gp) {
        CHECK(contains(dir, "report.html", "<em>exceeds</em>"));
        CHECK(contains(dir, "report.html", "<table>"));
        CHECK(!contains(dir, "report.html", "**"));
        CHECK(!contains(dir, "report.html", "^{"));
    }
    test_custom(tmp, have_gp);
    test_three_commands(tmp, have_gp);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return mb_test_done();
}
