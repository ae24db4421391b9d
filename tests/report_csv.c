/* report_csv.c — reading measurement CSVs: bad inputs give MB_EINPUT naming
 * file:line:col; a good CSV (generated here from the model with noise and
 * fake counters) joins, fits, yields verdicts and writes every report file. */
#include "mb_test.h"
#include "report.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char src[1024];

static const char *fixture(const char *name)
{
    static char p[2048];
    snprintf(p, sizeof p, "%s/tests/data/%s", src, name);
    return p;
}

static void expect_read_error(const char *name, const char *where, const char *what)
{
    mb_rpt_set s;
    mb_rpt_set_init(&s);
    mb_err e = {{0}};
    int rc = mb_rpt_read_csv(&s, fixture(name), &e);
    if (rc == MB_OK) rc = mb_rpt_join(&s, NULL, &e);
    printf("%s: %s\n", name, e.msg);
    CHECK_EQ_I64(rc, MB_EINPUT);
    CHECK(strstr(e.msg, where) != NULL);
    CHECK(strstr(e.msg, what) != NULL);
    mb_rpt_set_free(&s);
}

/* report_gen.c: a CSV of every lecture series generated from the model. */
int mb_test_write_csv(const char *path, const char *device, const char *backend, int counters,
                      double noise);

static int write_good_csv(const char *path)
{
    return mb_test_write_csv(path, "h100-sxm", "cuda", 1, 0.015);
}

/* A copy of 2^k f32 on one bandwidth line: 8 bytes an element at 3 TB/s,
 * 5 us of launch; the rows the tests below fit. */
static double copy_time_s(int k)
{
    return 8.0 * (double)(1LL << k) / 3.0e12 + 5e-6;
}

/* tmp/name opened for writing with header as its first line (path gets its
 * path); NULL, and a failed check, when it cannot be created. */
static FILE *open_csv(const char *tmp, const char *name, const char *header, char *path, size_t pathsz)
{
    snprintf(path, pathsz, "%s/%s", tmp, name);
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (fp) fputs(header, fp);
    return fp;
}

static int file_has(const char *dir, const char *name, const char *needle)
{
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *fp = fopen(p, "r");
    if (!fp) { fprintf(stderr, "missing %s\n", p); return 0; }
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    if (!strstr(buf, needle)) fprintf(stderr, "%s lacks '%s'\n", p, needle);
    return strstr(buf, needle) != NULL;
}

static void test_good(const char *tmp)
{
    char csv[1024], out[1024];
    snprintf(csv, sizeof csv, "%s/good.csv", tmp);
    snprintf(out, sizeof out, "%s/report", tmp);
    CHECK(write_good_csv(csv) == 0);
    mb_rpt_set s;
    mb_rpt_set_init(&s);
    mb_err e = {{0}};
    CHECK(mb_rpt_read_csv(&s, csv, &e) == MB_OK);
    CHECK_EQ_I64(s.n_rows, 9 * 4 + 1);
    CHECK_EQ_I64(s.n_prov, 2);
    CHECK(mb_rpt_join(&s, NULL, &e) == MB_OK);
    int rc = mb_rpt_fit(&s, &e);
    if (rc) printf("fit: %s\n", e.msg);
    CHECK(rc == MB_OK);
    CHECK_EQ_I64(s.n_groups, 1);
    const mb_rpt_group *g = &s.groups[0];
    CHECK(g->fitted);
    CHECK_EQ_I64(g->line.n_points, 36); /* the failed row is not fitted */
    printf("fit: %.1f GB/s [%.1f, %.1f], t0 %.2f us, R2 %.4f, %d rejected\n", g->bandwidth_gbs,
           g->bandwidth_lo_gbs, g->bandwidth_hi_gbs, g->t0_s * 1e6, g->line.r2, g->line.n_rejected);
    /* times came from the model with h100-sxm's measured bandwidth */
    CHECK_NEAR(g->bandwidth_gbs, s.devices[g->dev].measured_bandwidth_gbs, 0.10);
    CHECK(g->line.r2 > 0.95);
    const mb_rpt_row *failed = &s.rows[s.n_rows - 1];
    CHECK(!failed->verified && !failed->used);
    /* verdicts: fusion of sin^2+cos^2 holds on this synthetic H100 data, with counters */
    int found = 0;
    for (int i = 0; i < s.n_verdicts; i++) {
        const mb_rpt_verdict *v = &s.verdicts[i];
        printf("verdict: %-70s n=%lld lecture %.2f model %.2f measured %.2f bytes %.2f: %s (%s)\n",
               v->claim, (long long)v->n, v->lecture_ratio, v->model_time_ratio, v->meas_time_ratio,
               v->meas_bytes_ratio, v->holds, v->note);
        if (strstr(v->claim, "sin^2+cos^2")) {
            found = 1;
            CHECK_EQ_I64(v->n, (int64_t)1 << 24);
            CHECK_NEAR(v->model_bytes_ratio, 5.5, 1e-12);
            CHECK_NEAR(v->meas_bytes_ratio, v->model_dram_ratio, 1e-9);
            CHECK(!strcmp(v->holds, "holds"));
            CHECK(!strcmp(v->model_agrees, "yes"));
        }
        if (strstr(v->claim, "bf16 copy")) CHECK_NEAR(v->model_bytes_ratio, 2.0, 1e-12);
    }
    CHECK(found);
    CHECK(mb_rpt_write(&s, NULL, out, &e) == MB_OK);
    CHECK(file_has(out, "report.md", "Verdict"));
    CHECK(file_has(out, "report.md", "11n / 2n = 5.5x"));
    CHECK(file_has(out, "report.html", "<table>"));
    CHECK(file_has(out, "summary.csv", "sin2_plus_cos2,fused,f32,16777216,1,"));
    CHECK(file_has(out, "summary.json", "\"verdicts\""));
    CHECK(file_has(out, "fits.csv", "h100-sxm,cuda,1,36,"));
    CHECK(file_has(out, "verdicts.csv", "holds"));
    mb_rpt_set_free(&s);

    /* --device overrides the column; an unknown override is an input error */
    mb_rpt_set_init(&s);
    CHECK(mb_rpt_read_csv(&s, csv, &e) == MB_OK);
    CHECK(mb_rpt_join(&s, "a100-80gb", &e) == MB_OK);
    CHECK(!strcmp(s.devices[s.rows[0].dev].name, "a100-80gb"));
    mb_rpt_set_free(&s);
    mb_rpt_set_init(&s);
    CHECK(mb_rpt_read_csv(&s, csv, &e) == MB_OK);
    CHECK(mb_rpt_join(&s, "no-such-gpu", &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "no-such-gpu") != NULL);
    mb_rpt_set_free(&s);
}

/* counts the CUDA sanity gate marked untrusted are not used as measurements */
static void test_untrusted(const char *tmp)
{
    char path[512];
    FILE *fp = open_csv(tmp, "untrusted.csv",
                        "device,backend,variant,plan,dtype,n,time_s_median,dram_read_bytes,"
                        "dram_write_bytes,counters,verified\n"
                        "h200,cuda,copy,eager,f32,268435456,0.0005,1073741824,1073741824,cupti,1\n"
                        "h200,cuda,copy,fused,f32,268435456,0.0005,1073741824,1073741824,"
                        "untrusted: copy gate off by 30%,1\n",
                        path, sizeof path);
    if (!fp) return;
    fclose(fp);
    mb_rpt_set s;
    mb_rpt_set_init(&s);
    mb_err e;
    int rc = mb_rpt_read_csv(&s, path, &e);
    CHECK(rc == MB_OK);
    if (rc) fprintf(stderr, "  %s\n", e.msg);
    if (!rc) {
        CHECK_EQ_I64(s.n_rows, 2);
        CHECK(s.rows[0].has_dram);
        CHECK(!s.rows[1].has_dram);
    }
    mb_rpt_set_free(&s);
}

/* The harness's counted-vs-model verdict (count_check) is read and shown:
 * a row counted 5% over the model is OFF in the rows table and counted in
 * the summary, one below 4x L2 is shown as not judged; a value that is not
 * one of the verdicts is refused with its line and column. */
static void test_count_check(const char *tmp)
{
    char path[512];
    FILE *fp = open_csv(tmp, "count.csv",
                        "device,backend,variant,plan,dtype,n,time_s_median,dram_read_bytes,"
                        "dram_write_bytes,counters,verified,count_check\n"
                        "h200,cuda,copy,eager,f32,268435456,0.0005,1127428915,1127428915,cupti,1,off\n"
                        "h200,cuda,copy,eager,f32,1048576,0.00001,4404019,4404019,cupti,1,below 4x L2\n"
                        "h200,cuda,copy,fused,f32,268435456,0.0005,1073741824,1073741824,cupti,1,ok\n",
                        path, sizeof path);
    if (!fp) return;
    fclose(fp);
    mb_rpt_set s;
    mb_err e;
    mb_rpt_set_init(&s);
    int rc = mb_rpt_read_csv(&s, path, &e);
    if (!rc) rc = mb_rpt_join(&s, NULL, &e);
    CHECK(rc == MB_OK);
    if (rc) fprintf(stderr, "  %s\n", e.msg);
    char out[600];
    snprintf(out, sizeof out, "%s/count-report", tmp);
    if (!rc) {
        CHECK(!strcmp(s.rows[0].count_check, "off"));
        CHECK(mb_rpt_write(&s, NULL, out, &e) == MB_OK);
        CHECK(file_has(out, "report.md", "+5.0% OFF (over 3%)"));
        CHECK(file_has(out, "report.md", "(below 4x L2: not judged)"));
        CHECK(file_has(out, "report.md", "1 of 2 counted rows at tensors of 4x the L2"));
        CHECK(file_has(out, "summary.csv", ",off,,\n")); /* then an empty calibration */
        CHECK(file_has(out, "summary.json", "\"count_check\": \"off\""));
    }
    mb_rpt_set_free(&s);

    fp = open_csv(tmp, "count-bad.csv",
                  "device,backend,variant,plan,dtype,n,time_s_median,verified,count_check\n"
                  "h200,cuda,copy,eager,f32,268435456,0.0005,1,maybe\n",
                  path, sizeof path);
    if (!fp) return;
    fclose(fp);
    mb_rpt_set_init(&s);
    CHECK(mb_rpt_read_csv(&s, path, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "count-bad.csv:2:") != NULL && strstr(e.msg, "count_check") != NULL);
    mb_rpt_set_free(&s);
}

/* Statistics that contradict each other, counts no run makes and byte counts
 * no plan moves are refused at their line and column (each read before
 * this change, clamped or summed into an overflow). */
static void test_contradictions(const char *tmp)
{
    static const char header[] = "device,backend,variant,plan,dtype,n,time_s_median,time_s_min,time_s_p90,"
                                 "reps,contended,kernels,time_s_lower_mode,time_s_upper_mode,upper_mode_share,"
                                 "count_err,dram_read_bytes,dram_write_bytes,verified\n";
    static const struct { const char *row, *what; } cases[] = {
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,2e-5,3e-5,11,0,1,,,,,,,1", "time_s_min <= time_s_median"},
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,1e-5,9e-6,11,0,1,,,,,,,1", "time_s_p90 >= time_s_median"},
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,1e-5,1e-5,11,0,1,1e-5,2e-5,2,,,,1", "a share in [0, 1]"},
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,1e-5,1e-5,11,0,1,3e-5,2e-5,0.5,,,,1",
         "time_s_lower_mode <= time_s_upper_mode"},
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,1e-5,1e-5,11,12,1,,,,,,,1", "contended samples <= reps"},
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,1e-5,1e-5,11,0,99999999999,,,,,,,1",
         "a kernel count <= 1000000"},
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,1e-5,1e-5,11,0,1,,,,inf,,,1", "a finite number"},
        {"h100-sxm,cuda,copy,eager,f32,1048576,1e-5,1e-5,1e-5,11,0,1,,,,,9223372036854775807,"
         "9223372036854775807,1", "bytes below 2^60"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512], name[32];
        snprintf(name, sizeof name, "contra%zu.csv", i);
        FILE *fp = open_csv(tmp, name, header, path, sizeof path);
        if (!fp) return;
        fprintf(fp, "%s\n", cases[i].row);
        fclose(fp);
        mb_rpt_set s;
        mb_err e;
        mb_rpt_set_init(&s);
        CHECK(mb_rpt_read_csv(&s, path, &e) == MB_EINPUT);
        char where[48];
        snprintf(where, sizeof where, "%s:2:", name);
        if (!strstr(e.msg, cases[i].what) || !strstr(e.msg, where))
            fprintf(stderr, "  case %zu: '%s' lacks '%s' or '%s'\n", i, e.msg, cases[i].what, where);
        CHECK(strstr(e.msg, cases[i].what) != NULL && strstr(e.msg, where) != NULL);
        mb_rpt_set_free(&s);
    }
}

/* A variant column names a variant, never a file: a row naming a path (a
 * planted evil.mb, /etc/passwd) is refused at the join, and nothing of the
 * file is read or echoed. */
static void test_variant_not_a_file(const char *tmp)
{
    char evil[512], path[512], row[1400];
    snprintf(evil, sizeof evil, "%s/evil.mb", tmp);
    FILE *fp = fopen(evil, "w");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs("name evil\ninput x\ny = x * 2\n", fp);
    fclose(fp);
    const char *names[] = {evil, "/etc/passwd", "evil.mb"};
    for (int i = 0; i < 3; i++) {
        fp = open_csv(tmp, "evil.csv", "device,backend,variant,plan,dtype,n,time_s_median,verified\n", path,
                      sizeof path);
        if (!fp) return;
        snprintf(row, sizeof row, "h100-sxm,cuda,%s,eager,f32,1048576,1e-5,1\n", names[i]);
        fputs(row, fp);
        fclose(fp);
        mb_rpt_set s;
        mb_err e;
        mb_rpt_set_init(&s);
        int rc = mb_rpt_read_csv(&s, path, &e);
        if (!rc) rc = mb_rpt_join(&s, NULL, &e);
        CHECK(rc == MB_EINPUT);
        if (!strstr(e.msg, "not a variant name")) fprintf(stderr, "  variant '%s': %s\n", names[i], e.msg);
        CHECK(strstr(e.msg, "not a variant name") != NULL && !strstr(e.msg, "root:"));
        mb_rpt_set_free(&s);
    }
}

/* Reads path into s (initialised here; the caller frees it), joins it with
 * the model and fits it; checks that all went well. */
static int read_join_fit(mb_rpt_set *s, const char *path, mb_err *e)
{
    mb_rpt_set_init(s);
    int rc = mb_rpt_read_csv(s, path, e);
    if (!rc) rc = mb_rpt_join(s, NULL, e);
    if (!rc) rc = mb_rpt_fit(s, e);
    CHECK(rc == MB_OK);
    if (rc) fprintf(stderr, "  %s\n", e->msg);
    return rc;
}

/* Rows with more than a fifth of their samples contended are read, shown and
 * never fitted: here a contended row twice as slow would drag the line. */
static void test_noisy(const char *tmp)
{
    char path[512];
    FILE *fp = open_csv(tmp, "noisy.csv",
                        "device,backend,variant,plan,dtype,n,reps,time_s_median,verified,contended\n",
                        path, sizeof path);
    if (!fp) return;
    for (int k = 24; k <= 28; k++) {
        double t = copy_time_s(k);
        fprintf(fp, "h100-sxm,cuda,copy,eager,f32,%lld,50,%.9g,1,%d\n", 1LL << k, t, k == 27 ? 0 : 10);
    }
    fprintf(fp, "h100-sxm,cuda,copy,fused,f32,%lld,50,%.9g,1,11\n", 1LL << 26,
            2 * 8.0 * (double)(1LL << 26) / 3.0e12);
    fclose(fp);
    mb_rpt_set s;
    mb_err e;
    int rc = read_join_fit(&s, path, &e);
    if (!rc) {
        CHECK_EQ_I64(s.n_rows, 6);
        CHECK(!s.rows[0].noisy && s.rows[0].contended == 10); /* 10 of 50: a fifth, not more */
        CHECK(s.rows[5].noisy && s.rows[5].contended == 11);
        CHECK(!s.rows[5].used);
        CHECK(s.n_groups == 1 && s.groups[0].fitted);
        if (s.n_groups == 1 && s.groups[0].fitted) CHECK_NEAR(s.groups[0].bandwidth_gbs, 3000, 0.02);
        char out[600];
        snprintf(out, sizeof out, "%s/noisy-report", tmp);
        CHECK(mb_rpt_write(&s, NULL, out, &e) == MB_OK);
        CHECK(file_has(out, "summary.csv", ",noisy,,,,,,,,,\n")); /* no host reference, one mode, no count: empty */
        CHECK(file_has(out, "summary.json", "\"noisy\": true"));
        CHECK(file_has(out, "report.md", "skipped (noisy"));
    }
    mb_rpt_set_free(&s);
}

/* A fully contended row with the largest counts the CSV accepts (10^9; more
 * is refused) is noisy and not fitted: 5 x contended must not overflow int. */
static void test_noisy_large(const char *tmp)
{
    CHECK(MB_MEAS_NOISY(INT_MAX, INT_MAX));
    CHECK(MB_MEAS_NOISY(INT_MAX / 5 + 1, INT_MAX));
    CHECK(!MB_MEAS_NOISY(INT_MAX / 5, INT_MAX));
    char path[512];
    FILE *fp = open_csv(tmp, "noisy_large.csv",
                        "device,backend,variant,plan,dtype,n,reps,time_s_median,verified,contended\n",
                        path, sizeof path);
    if (!fp) return;
    for (int k = 24; k <= 27; k++)
        fprintf(fp, "h100-sxm,cuda,copy,eager,f32,%lld,50,%.9g,1,0\n", 1LL << k, copy_time_s(k));
    fprintf(fp, "h100-sxm,cuda,copy,eager,f32,%lld,1000000000,%.9g,1,1000000000\n", 1LL << 28,
            3 * copy_time_s(28));
    fclose(fp);
    mb_rpt_set s;
    mb_err e;
    if (!read_join_fit(&s, path, &e)) {
        CHECK_EQ_I64(s.n_rows, 5);
        CHECK(s.rows[4].noisy && !s.rows[4].used);
        CHECK(s.n_groups == 1 && s.groups[0].fitted);
        if (s.n_groups == 1 && s.groups[0].fitted) CHECK_NEAR(s.groups[0].bandwidth_gbs, 3000, 0.02);
    }
    mb_rpt_set_free(&s);
}

/* CPU rows carry the host reference (copy and op rate) beside their samples:
 * a row with either ratio to the calibrated figures more than 20% off is drifted: read,
 * still fitted, and its model error flagged in the rows table, the summary
 * paragraph and the JSON; an empty ratio is none. */
static void test_drifted(const char *tmp)
{
    char path[512];
    FILE *fp = open_csv(tmp, "drift.csv",
                        "device,backend,variant,plan,dtype,n,reps,time_s_median,verified,contended,"
                        "host_copy_gbs,host_copy_ratio,host_op_ratio\n",
                        path, sizeof path);
    if (!fp) return;
    static const char *ratio[] = {"1.05", "0.79", "1.19", "1.40", "", "1.0"};
    static const char *op_ratio[] = {"0.9", "", "1.1", "1.0", "", "0.5"};
    for (int k = 24; k <= 29; k++) {
        double t = copy_time_s(k);
        fprintf(fp, "h100-sxm,cpu,copy,eager,f32,%lld,50,%.9g,1,0,%s,%s,%s\n", 1LL << k, t,
                ratio[k - 24][0] ? "50" : "", ratio[k - 24], op_ratio[k - 24]);
    }
    fclose(fp);
    mb_rpt_set s;
    mb_err e;
    int rc = read_join_fit(&s, path, &e);
    if (!rc) {
        CHECK_EQ_I64(s.n_rows, 6);
        static const int want[] = {0, 1, 0, 1, 0, 1}; /* the last: the op rate alone */
        for (int i = 0; i < 6 && i < s.n_rows; i++) CHECK_EQ_I64(s.rows[i].drifted, want[i]);
        CHECK_NEAR(s.rows[5].host_op_ratio, 0.5, 1e-12);
        CHECK(isnan(s.rows[1].host_op_ratio));
        CHECK_NEAR(s.rows[1].host_copy_ratio, 0.79, 1e-12);
        CHECK_NEAR(s.rows[1].host_copy_gbs, 50, 1e-12);
        CHECK(isnan(s.rows[4].host_copy_ratio) && isnan(s.rows[4].host_copy_gbs));
        CHECK(s.rows[1].used && s.rows[3].used); /* fitted all the same */
        char out[600];
        snprintf(out, sizeof out, "%s/drift-report", tmp);
        CHECK(mb_rpt_write(&s, NULL, out, &e) == MB_OK);
        CHECK(file_has(out, "report.md", "(host at copy 79% of calibrated)"));
        char want_md[2][128] = {"(rows missing)", "(rows missing)"};
        for (int i = 0; i < 2 && s.n_rows == 6; i++)
            snprintf(want_md[i], sizeof want_md[i], "(host at copy %s, op %s of calibrated; at those "
                     "rates %.2f)", i ? "100%" : "140%", i ? "50%" : "100%",
                     s.rows[3 + 2 * i].time_s_median / s.rows[3 + 2 * i].pred_host_time_s);
        CHECK(file_has(out, "report.md", want_md[0]));
        CHECK(file_has(out, "report.md", want_md[1]));
        CHECK(file_has(out, "report.md", "3 rows were measured while the host's copy bandwidth"));
        CHECK(file_has(out, "summary.json", "\"drifted\": true"));
        CHECK(file_has(out, "summary.json", "\"host_copy_ratio\": 1.05"));
        CHECK(file_has(out, "summary.json", "\"host_op_ratio\": 0.5"));
        CHECK(file_has(out, "summary.csv", ",used,1.4,1,"));
        CHECK(file_has(out, "summary.json", "\"model_host_time_s\": null"));
        /* the model at the host's rates: both ratios or none; a memory-bound
         * copy at 1.4x the bandwidth takes 1/1.4 of its memory time */
        CHECK(isnan(s.rows[1].pred_host_time_s) && isnan(s.rows[4].pred_host_time_s));
        const mb_rpt_row *r = &s.rows[3];
        CHECK_NEAR(r->pred_host_time_s - r->pred_launch_s, (r->pred_time_s - r->pred_launch_s) / 1.4,
                   1e-12);
        /* half the op rate: twice the launch overhead, the copy's memory time as it was */
        CHECK_NEAR(s.rows[5].pred_host_time_s - 2 * s.rows[5].pred_launch_s,
                   s.rows[5].pred_time_s - s.rows[5].pred_launch_s, 1e-12);
    }
    mb_rpt_set_free(&s);
}

/* A row whose samples fell in two modes: read, fitted, and its
 * measured/model given for each mode in the rows table, the summary
 * paragraph, summary.csv and the JSON; empty columns are one mode. */
static void test_two_modes(const char *tmp)
{
    char path[512];
    FILE *fp = open_csv(tmp, "modes.csv",
                        "device,backend,variant,plan,dtype,n,reps,time_s_median,verified,"
                        "time_s_lower_mode,time_s_upper_mode,upper_mode_share\n",
                        path, sizeof path);
    if (!fp) return;
    for (int k = 24; k <= 27; k++) {
        double t = copy_time_s(k);
        if (k == 25)
            fprintf(fp, "h100-sxm,cpu,copy,eager,f32,%lld,50,%.9g,1,%.9g,%.9g,0.25\n", 1LL << k, t, t,
                    1.5 * t);
        else
            fprintf(fp, "h100-sxm,cpu,copy,eager,f32,%lld,50,%.9g,1,,,\n", 1LL << k, t);
    }
    fclose(fp);
    mb_rpt_set s;
    mb_err e;
    if (read_join_fit(&s, path, &e) == MB_OK) {
        CHECK_EQ_I64(s.n_rows, 4);
        for (int i = 0; i < s.n_rows; i++) CHECK_EQ_I64(s.rows[i].two_modes, i == 1);
        CHECK(isnan(s.rows[0].time_s_upper_mode) && isnan(s.rows[0].upper_mode_share));
        CHECK_NEAR(s.rows[1].upper_mode_share, 0.25, 1e-12);
        CHECK(s.rows[1].used); /* fitted all the same */
        char out[600], want[128] = "(rows missing)";
        snprintf(out, sizeof out, "%s/modes-report", tmp);
        CHECK(mb_rpt_write(&s, NULL, out, &e) == MB_OK);
        if (s.n_rows == 4) {
            const mb_rpt_row *r = &s.rows[1];
            snprintf(want, sizeof want, "(two modes: %.2f / %.2f, 25%% high)",
                     r->time_s_lower_mode / r->pred_time_s, r->time_s_upper_mode / r->pred_time_s);
        }
        CHECK(file_has(out, "report.md", want));
        CHECK(file_has(out, "report.md", "1 row's samples fell in two modes"));
        CHECK(file_has(out, "summary.csv", "time_s_upper_mode,upper_mode_share,count_check,calibration,shape\n"));
        CHECK(file_has(out, "summary.csv", ",0.25,,,\n"));
        CHECK(file_has(out, "summary.json", "\"upper_mode_share\": 0.25"));
        CHECK(file_has(out, "summary.json", "\"upper_mode_share\": null"));
    }
    mb_rpt_set_free(&s);
}

int main(void)
{
    const char *env = getenv("MB_SRC");
    snprintf(src, sizeof src, "%s", env ? env : ".");
    expect_read_error("report_missing_column.csv", "report_missing_column.csv:3:", "missing column 'time_s_median'");
    expect_read_error("report_wrong_type.csv", "report_wrong_type.csv:4:30:", "column 'n'");
    expect_read_error("report_no_rows.csv", "report_no_rows.csv:3:1:", "no measurement rows");
    expect_read_error("report_bad_calibration.csv", "report_bad_calibration.csv:4:127:",
                      "column 'calibration'");
    expect_read_error("report_unknown_device.csv", "report_unknown_device.csv:4:1:", "warp-drive-9000");
    /* a file that is not there is a clear error too */
    mb_rpt_set s;
    mb_rpt_set_init(&s);
    mb_err e;
    CHECK(mb_rpt_read_csv(&s, "/nonexistent/m.csv", &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "/nonexistent/m.csv") != NULL);
    mb_rpt_set_free(&s);

    char tmp[] = "/tmp/mb_report_csv_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    test_good(tmp);
    test_untrusted(tmp);
    test_noisy(tmp);
    test_noisy_large(tmp);
    test_two_modes(tmp);
    test_drifted(tmp);
    test_count_check(tmp);
    test_contradictions(tmp);
    test_variant_not_a_file(tmp);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    return mb_test_done();
}
