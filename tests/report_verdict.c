/* report_verdict.c — the lecture's verdicts decided on the right statistic
 * and the right claim, in two judgements (the lecture's claim here, the
 * model's expectation here): table-driven rows whose minimum, median and
 * p90 are known (the minimum decides between like rows, the median beside
 * it, inconclusive only near an edge, counted bytes decide alone, the
 * calibration's marks); the cases a student read wrongly (bf16 at 2x the
 * knee faster than DRAM allows, recompute slower than store, a busy run's
 * minima against its medians); then two committed runs: a quiet one
 * (reports/data/cpu-amd-epyc-2vcpu/steady-run-cb591e2), where every claim
 * gets a firm verdict that matches its rows, and a busy one
 * (tests/data/verdict-busy, every row noisy and its host reference far off
 * its calibration), where no verdict is firm, nor in a demo run beside a
 * compile. The oracle recomputes each
 * decision from the rows, not from the verdict's own columns. */
#include "mb_test.h"
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- synthetic rows ------------------------------------------------------- */

typedef struct tcase {
    const char *what;
    double a_min, a_med, a_p90, b_min, b_med, b_p90; /* slow (eager) and fast (fused) rows */
    int counted;               /* 1: DRAM counts, bytes ratio bytes_ratio */
    double bytes_ratio;
    const char *calibration;   /* both rows' mark */
    const char *lecture;       /* holds: the lecture's 5.5x here */
    const char *model;         /* model_agrees: the model's 3x here */
    const char *note_has;      /* in the note, or NULL */
} tcase;

/* The model expects 3x on this "device": sin^2+cos^2 eager 3 s, fused 1 s;
 * its band is 2.25x..3.75x (MB_RPT_TOL_TIME 25%); the lecture's 5.5x band
 * 4.125x..6.875x. */
static const tcase cases[] = {
    {"min on the model's ratio, tight ranges", 3.0, 3.1, 3.2, 1.0, 1.02, 1.05, 0, 0, "", "falls short", "yes",
     "decided on the minimum times"},
    {"min twice the model's ratio", 6.0, 6.2, 6.5, 1.0, 1.01, 1.02, 0, 0, "", "holds", "no", NULL},
    {"median in a slow mode (9x), min on the model's 3x", 3.0, 9.0, 9.5, 1.0, 1.0, 1.1, 0, 0, "", "falls short",
     "yes", "median 9.00x"},
    {"min 2% inside the lower edge, ranges straddling it", 2.295, 3.0, 4.0, 1.0, 1.3, 1.6, 0, 0, "",
     "falls short", "inconclusive", "rerun: membound measure sin2_plus_cos2 --plan eager,fused"},
    {"min 2% inside the lower edge, ranges inside the band", 2.295, 2.3, 2.4, 1.0, 1.0, 1.0, 0, 0, "",
     "falls short", "yes", NULL},
    {"min 11% below the lower edge, ranges straddling it", 2.0, 3.0, 4.0, 1.0, 1.3, 1.6, 0, 0, "",
     "falls short", "no", NULL},
    {"min 4% above the upper edge, ranges straddling it", 3.9, 4.0, 5.0, 1.0, 1.1, 1.2, 0, 0, "", "falls short",
     "inconclusive", "INCONCLUSIVE"},
    {"above the lecture's band", 8.0, 8.1, 8.2, 1.0, 1.0, 1.0, 0, 0, "", "exceeds", "no", "faster than claimed"},
    {"counted bytes off the claim decide alone", 5.5, 5.5, 5.6, 1.0, 1.0, 1.0, 1, 3.0, "", "does not hold",
     "no", "counted DRAM bytes ratio 3.00"},
    {"counted bytes on the claim", 3.0, 3.0, 3.1, 1.0, 1.0, 1.0, 1, 5.5, "", "falls short", "yes", NULL},
    {"a quick calibration: a smoke test", 3.0, 3.0, 3.1, 1.0, 1.0, 1.0, 0, 0, "quick", "falls short", "yes",
     "SMOKE TEST"},
    {"a fallback calibration", 3.0, 3.0, 3.1, 1.0, 1.0, 1.0, 0, 0, "fallback", "falls short", "yes", "FALLBACK"},
    {"a stale calibration", 3.0, 3.0, 3.1, 1.0, 1.0, 1.0, 0, 0, "stale", "falls short", "yes", "STALE"},
};

/* One row: its times, its model (pred seconds, bytes both counts), counted
 * bytes (0: no counters); reps 0 and CV 0 unless the caller sets them. */
static void fill_row(mb_rpt_row *r, const char *variant, const char *plan, const char *dtype, int64_t n,
                     double tmin, double tmed, double tp90, double pred, int64_t bytes, int64_t counted_bytes,
                     const char *cal)
{
    memset(r, 0, sizeof *r);
    /* a row's strings are the set's (interned by the CSV reader); these
     * rows are built by hand and point at literals */
    r->file = r->device = r->counters = r->count_check = "";
    r->variant = variant;
    r->plan = plan;
    r->dtype = dtype;
    r->backend = "cpu";
    r->calibration = cal;
    r->n = n;
    r->verified = 1;
    r->time_s_min = tmin;
    r->time_s_median = tmed;
    r->time_s_p90 = tp90;
    r->pred_time_s = pred;
    r->pred_mem_s = pred;
    r->pred_read_bytes = bytes / 2;
    r->pred_write_bytes = bytes - bytes / 2;
    r->pred_dram_read_bytes = r->pred_read_bytes;
    r->pred_dram_write_bytes = r->pred_write_bytes;
    r->pred_bound = MB_BOUND_MEMORY;
    r->has_dram = counted_bytes > 0;
    r->dram_read_bytes = counted_bytes > 0 ? counted_bytes / 2 : -1;
    r->dram_write_bytes = counted_bytes > 0 ? counted_bytes - counted_bytes / 2 : -1;
}

/* A set of two rows on one group of device "test-cpu" whose DRAM moves
 * bw_gbs (0: no bandwidth known); the rows to fill. */
static int two_rows(mb_rpt_set *s, double bw_gbs)
{
    mb_rpt_set_init(s);
    s->rows = calloc(2, sizeof *s->rows);
    s->groups = calloc(1, sizeof *s->groups);
    if (!s->rows || !s->groups) return -1;
    s->n_rows = s->cap_rows = 2;
    s->n_groups = 1;
    s->n_devices = 1;
    s->devices[0].measured_bandwidth_gbs = bw_gbs;
    snprintf(s->groups[0].device, sizeof s->groups[0].device, "test-cpu");
    snprintf(s->groups[0].backend, sizeof s->groups[0].backend, "cpu");
    return 0;
}

static void test_cases(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tcase *t = &cases[i];
        mb_rpt_set s;
        if (two_rows(&s, 0)) { CHECK(0); return; }
        const int64_t n = (int64_t)1 << 24, fast_counted = 8 * n;
        fill_row(&s.rows[0], "sin2_plus_cos2", "eager", "f32", n, t->a_min, t->a_med, t->a_p90, 3.0, 44 * n,
                 t->counted ? (int64_t)(t->bytes_ratio * (double)fast_counted) : 0, t->calibration);
        fill_row(&s.rows[1], "sin2_plus_cos2", "fused", "f32", n, t->b_min, t->b_med, t->b_p90, 1.0, 8 * n,
                 t->counted ? fast_counted : 0, t->calibration);
        s.rows[0].pred_bound = s.rows[1].pred_bound = MB_BOUND_COMPUTE;
        mb_err e;
        CHECK(mb_rpt_verdicts(&s, &e) == MB_OK);
        CHECK(s.n_verdicts == 1);
        if (s.n_verdicts == 1) {
            const mb_rpt_verdict *v = &s.verdicts[0];
            int ok = !strcmp(v->holds, t->lecture) && !strcmp(v->model_agrees, t->model) &&
                     (!t->note_has || strstr(v->note, t->note_has));
            if (!ok)
                fprintf(stderr, "case '%s': lecture '%s' (want '%s'), model '%s' (want '%s'), note: %s\n", t->what,
                        v->holds, t->lecture, v->model_agrees, t->model, v->note);
            CHECK(ok);
            CHECK(!strcmp(v->statistic, "min"));
            CHECK_NEAR(v->meas_min_ratio, t->a_min / t->b_min, 1e-12);
            CHECK_NEAR(v->meas_ratio, t->a_min / t->b_min, 1e-12);
            CHECK_NEAR(v->meas_time_ratio, t->a_med / t->b_med, 1e-12);
            CHECK_NEAR(v->expected_ratio, 3.0, 1e-12);
            CHECK(!strcmp(v->bytes, t->counted ? (strcmp(t->lecture, "does not hold") ? "counted: holds"
                                                                                  : "counted: does not hold")
                                               : "modelled, not counted on this backend"));
            /* the device-level reason beside the lecture's 5.5x */
            CHECK(strstr(v->reason, "compute-bound here") != NULL);
            int undecided = !strcmp(t->lecture, "inconclusive") || !strcmp(t->model, "inconclusive");
            CHECK((v->rerun[0] != '\0') == undecided);
            CHECK(v->smoke_test == !strcmp(t->calibration, "quick"));
        }
        mb_rpt_set_free(&s);
    }
}

/* The cases a student read wrongly (issue 52), each as its rows were. */
static void test_student_cases(void)
{
    const int64_t n25 = (int64_t)1 << 25, n20 = (int64_t)1 << 20, n24 = (int64_t)1 << 24;
    const double MiB = 1048576.0, bw = 40.2; /* the calibrated copy, GB/s */
    mb_rpt_set s;
    mb_err e;

    /* bf16 at 2x the knee, quiet like rows: f32's 256 MiB at DRAM speed
     * (40.6 GB/s), bf16's 128 MiB at 60.1: the lecture's "about half the
     * time" exceeded, and the reason is the cache, found from the rows */
    if (two_rows(&s, bw)) { CHECK(0); return; }
    double f32_s = 256 * MiB / 40.6e9, bf16_s = 128 * MiB / 60.1e9;
    fill_row(&s.rows[0], "copy", "eager", "f32", n25, f32_s, 1.02 * f32_s, 1.05 * f32_s, 256 * MiB / (bw * 1e9),
             (int64_t)(256 * MiB), 0, "");
    fill_row(&s.rows[1], "copy", "eager", "bf16", n25, bf16_s, 1.02 * bf16_s, 1.05 * bf16_s,
             128 * MiB / (bw * 1e9), (int64_t)(128 * MiB), 0, "");
    s.rows[0].reps = s.rows[1].reps = 20;
    CHECK(mb_rpt_verdicts(&s, &e) == MB_OK && s.n_verdicts == 1);
    if (s.n_verdicts == 1) {
        const mb_rpt_verdict *v = &s.verdicts[0];
        CHECK(!strcmp(v->statistic, "min"));
        CHECK(!strcmp(v->holds, "exceeds"));   /* faster than claimed, not "does not hold" */
        CHECK(!strcmp(v->model_agrees, "no")); /* the model expects 2x */
        CHECK(strstr(v->reason, "the cache served part of it: bf16") != NULL);
        CHECK(strstr(v->reason, "f32") == NULL); /* f32 ran at DRAM speed */
        CHECK(strstr(v->note, "why: ") != NULL);
    }
    /* against a fallback calibration the DRAM figure itself may be low:
     * said so, not the cache alone */
    s.rows[0].calibration = s.rows[1].calibration = "fallback";
    CHECK(mb_rpt_verdicts(&s, &e) == MB_OK && s.n_verdicts == 1);
    if (s.n_verdicts == 1) {
        CHECK(strstr(s.verdicts[0].reason, "bf16 ran faster than the fallback calibration's DRAM figure") != NULL);
        CHECK(strstr(s.verdicts[0].reason, "the cache served part of it:") == NULL);
    }
    s.rows[0].calibration = s.rows[1].calibration = "";
    /* the same rows as the demo had them: bf16 of 201 samples at CV 36%,
     * f32 of 14 quiet ones: the minima are not alike, the medians decide,
     * and where the minima say otherwise nothing is firm */
    s.rows[1].reps = 201;
    s.rows[1].time_cv = 0.36;
    s.rows[0].reps = 14;
    s.rows[1].time_s_median = s.rows[0].time_s_median / 2.40;
    s.rows[1].time_s_p90 = 1.5 * s.rows[1].time_s_median;
    CHECK(mb_rpt_verdicts(&s, &e) == MB_OK && s.n_verdicts == 1);
    if (s.n_verdicts == 1) {
        const mb_rpt_verdict *v = &s.verdicts[0];
        CHECK(!strcmp(v->statistic, "median"));
        CHECK_NEAR(v->meas_ratio, 2.40, 1e-9);
        CHECK(strstr(v->note, "sample counts differ (14 against 201)") != NULL);
        CHECK(!strcmp(v->holds, "inconclusive")); /* median 2.40x in the band, minimum 2.96x above */
        CHECK(v->rerun[0] != '\0');
        CHECK(strstr(v->reason, "the cache served part of it: bf16") != NULL);
    }
    mb_rpt_set_free(&s);

    /* recompute slower than store: the lecture's 1.8x reversed (0.77x), as
     * the model expects of a compute-bound recompute on this device */
    if (two_rows(&s, bw)) { CHECK(0); return; }
    fill_row(&s.rows[0], "sigmoid3", "store", "f32", n20, 1.0e-3, 1.02e-3, 1.05e-3, 1.0e-3, 36 * n20, 0, "");
    fill_row(&s.rows[1], "sigmoid3", "recompute", "f32", n20, 1.3e-3, 1.32e-3, 1.35e-3, 1.25e-3, 20 * n20, 0, "");
    s.rows[1].pred_bound = MB_BOUND_COMPUTE;
    /* two claims of sigmoid^3: against store (these rows), against eager (no data) */
    CHECK(mb_rpt_verdicts(&s, &e) == MB_OK && s.n_verdicts == 2);
    if (s.n_verdicts == 2) {
        const mb_rpt_verdict *v = &s.verdicts[strstr(s.verdicts[0].claim, "(store)") ? 0 : 1];
        CHECK(strstr(v->claim, "instead of 9n (store)") != NULL);
        CHECK(!strcmp(s.verdicts[v == &s.verdicts[0]].holds, "no data"));
        CHECK(!strcmp(v->holds, "reversed"));
        CHECK(!strcmp(v->model_agrees, "yes"));
        CHECK(strstr(v->reason, "compute-bound here: recompute") != NULL);
        CHECK(strstr(v->note, "reversed here") != NULL);
    }
    mb_rpt_set_free(&s);

    /* beside two CPU hogs: sin^2+cos^2's noisy rows, minima 5.61x, medians
     * 3.27x: the medians decide, and the minima on another side of both
     * bands leave both judgements undecided, never a firm "does not hold" */
    if (two_rows(&s, bw)) { CHECK(0); return; }
    fill_row(&s.rows[0], "sin2_plus_cos2", "eager", "f32", n24, 5.61, 3.27 * 1.5, 9.0, 3.0, 44 * n24, 0, "");
    fill_row(&s.rows[1], "sin2_plus_cos2", "fused", "f32", n24, 1.0, 1.5, 2.0, 1.0, 8 * n24, 0, "");
    s.rows[0].noisy = s.rows[1].noisy = 1;
    CHECK(mb_rpt_verdicts(&s, &e) == MB_OK && s.n_verdicts == 1);
    if (s.n_verdicts == 1) {
        const mb_rpt_verdict *v = &s.verdicts[0];
        CHECK(!strcmp(v->statistic, "median"));
        CHECK_NEAR(v->meas_ratio, 3.27, 1e-9);
        CHECK(!strcmp(v->holds, "inconclusive"));
        CHECK(!strcmp(v->model_agrees, "inconclusive"));
        CHECK(strstr(v->note, "NOISY") != NULL);
    }
    mb_rpt_set_free(&s);
}

/* ---- the committed runs -------------------------------------------------- */

static int within(double m, double e) { return fabs(m / e - 1.0) <= MB_RPT_TOL_TIME; }

/* The verified row of (variant, plan or any when NULL, dtype, n) the
 * verdicts compare: a quiet one before a noisy one, then eager. */
static const mb_rpt_row *row_of(const mb_rpt_set *s, const char *v, const char *p, mb_dtype dt, int64_t n)
{
    const mb_rpt_row *best = NULL;
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        mb_dtype rd;
        if (!r->verified || r->n != n || strcmp(r->variant, v) || (p && strcmp(r->plan, p)) ||
            mb_dtype_parse(r->dtype, &rd) || rd != dt)
            continue;
        if (!best || (best->noisy && !r->noisy) ||
            (best->noisy == r->noisy && !strcmp(r->plan, "eager") && strcmp(best->plan, "eager")))
            best = r;
    }
    return best;
}

/* The claim of verdict v and its two rows; 0 when not found. */
static int rows_of(const mb_rpt_set *s, const mb_rpt_verdict *v, const mb_rpt_row **a, const mb_rpt_row **b)
{
    for (int d = 0; d < MB_RPT_N_DEMOS; d++) {
        const mb_rpt_demo *dm = &mb_rpt_lecture[d];
        for (int c = 0; c < dm->n_claims; c++) {
            if (strcmp(dm->claims[c].text, v->claim)) continue;
            const mb_rpt_lecture_series *sa = &dm->series[dm->claims[c].slow], *sb = &dm->series[dm->claims[c].fast];
            int any = sa->dtype != sb->dtype;
            *a = row_of(s, dm->variant, any ? NULL : sa->plan, sa->dtype, v->n);
            *b = row_of(s, dm->variant, any ? NULL : sb->plan, sb->dtype, v->n);
            return *a && *b;
        }
    }
    return 0;
}

static int load(mb_rpt_set *s, const char *dir, const char *const *files, int n_files)
{
    mb_err e;
    char path[1024];
    mb_rpt_set_init(s);
    for (int i = 0; i < n_files; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (mb_rpt_read_csv(s, path, &e)) { fprintf(stderr, "%s\n", e.msg); return -1; }
    }
    if (mb_rpt_join(s, NULL, &e) || mb_rpt_fit(s, &e)) { fprintf(stderr, "%s\n", e.msg); return -1; }
    return 0;
}

/* The oracle: the deciding ratio by the like-with-like rule, recomputed
 * from the rows; *use_min says which. */
static double deciding_ratio(const mb_rpt_row *a, const mb_rpt_row *b, int *use_min, double *other)
{
    double rmin = a->time_s_min / b->time_s_min, rmed = a->time_s_median / b->time_s_median;
    int reps_alike = a->reps <= 0 || b->reps <= 0 ||
                     (a->reps <= MB_RPT_LIKE_REPS * b->reps && b->reps <= MB_RPT_LIKE_REPS * a->reps);
    *use_min = !a->noisy && !b->noisy && reps_alike && a->time_cv <= MB_RPT_QUIET_CV &&
               b->time_cv <= MB_RPT_QUIET_CV;
    *other = *use_min ? rmed : rmin;
    return *use_min ? rmin : rmed;
}

/* Checks one committed-run verdict against the oracle: the statistic the
 * rule picks, the model's judgement firm and as that ratio says unless the
 * rows leave it undecided (the minima next to an edge, or the medians and
 * minima on two sides of it); returns 1 when firm. */
static int check_against_rows(const char *run, const mb_rpt_verdict *v, const mb_rpt_row *a, const mb_rpt_row *b)
{
    int use_min;
    double other, r = deciding_ratio(a, b, &use_min, &other), E = a->pred_time_s / b->pred_time_s;
    double lo = E * (1 - MB_RPT_TOL_TIME), hi = E * (1 + MB_RPT_TOL_TIME);
    CHECK(!strcmp(v->statistic, use_min ? "min" : "median"));
    CHECK_NEAR(v->meas_ratio, r, 1e-9 * r);
    if ((a->noisy && a->drifted) || (b->noisy && b->drifted)) { /* a busy host decides nothing */
        CHECK(!strcmp(v->model_agrees, "inconclusive"));
        CHECK(!strcmp(v->holds, "inconclusive"));
        CHECK(strstr(v->note, "ran on a busy host") != NULL);
        CHECK(strstr(v->note, "rerun: membound measure ") != NULL);
        return 0;
    }
    if (!strcmp(v->model_agrees, "inconclusive")) {
        int may = use_min ? fmin(fabs(r / lo - 1), fabs(r / hi - 1)) < MB_RPT_DECIDE_MARGIN
                          : within(r, E) != within(other, E) || (r < lo) != (other < lo);
        if (!may) fprintf(stderr, "%s: '%s' inconclusive, but its rows decide (%.3f vs %.3f)\n", run, v->claim, r, E);
        CHECK(may);
        CHECK(strstr(v->note, "rerun: membound measure ") != NULL);
        CHECK(strchr(v->note, '`') == NULL); /* plain text: report.html shows notes as written */
        return 0;
    }
    const char *want = within(r, E) ? "yes" : "no";
    if (strcmp(v->model_agrees, want))
        fprintf(stderr, "%s: '%s': model %s, the rows say %s (%.3f vs %.3f)\n", run, v->claim, v->model_agrees,
                want, r, E);
    CHECK(!strcmp(v->model_agrees, want));
    /* every verdict that parts from the lecture says why */
    if (strcmp(v->holds, "holds") && strcmp(v->holds, "inconclusive")) CHECK(v->reason[0] != '\0');
    return 1;
}

static void test_quiet(const char *src)
{
    static const char *const files[] = {"all-copy.csv", "copy-2p25.csv", "all-sin2_plus_cos2.csv",
                                        "all-gelu_tanh.csv", "all-sigmoid3.csv"};
    char dir[900];
    snprintf(dir, sizeof dir, "%s/reports/data/cpu-amd-epyc-2vcpu/steady-run-cb591e2", src);
    static mb_rpt_set s;
    CHECK(load(&s, dir, files, 5) == 0);
    CHECK(s.n_verdicts == 5); /* every claim of the lecture */
    int firm = 0;
    for (int i = 0; i < s.n_verdicts; i++) {
        const mb_rpt_verdict *v = &s.verdicts[i];
        const mb_rpt_row *a, *b;
        if (!rows_of(&s, v, &a, &b)) { CHECK(0); continue; }
        firm += check_against_rows("quiet", v, a, b);
        CHECK(!v->smoke_test);
        CHECK(strstr(v->note, "bytes: modelled, not counted on this backend") != NULL);
    }
    CHECK(firm == s.n_verdicts); /* a quiet run decides every claim */
    mb_rpt_set_free(&s);
}

static void test_busy(const char *src)
{
    static const char *const files[] = {"busy-copy.csv", "busy-fusion_recompute.csv"};
    char dir[900];
    snprintf(dir, sizeof dir, "%s/tests/data/verdict-busy", src);
    static mb_rpt_set s;
    CHECK(load(&s, dir, files, 2) == 0);
    int noisy = 0;
    for (int i = 0; i < s.n_rows; i++) noisy += s.rows[i].noisy;
    CHECK(s.n_rows > 0 && noisy == s.n_rows); /* the fixture: every row noisy */
    CHECK(s.n_verdicts == 5);
    for (int i = 0; i < s.n_verdicts; i++) {
        const mb_rpt_verdict *v = &s.verdicts[i];
        const mb_rpt_row *a, *b;
        if (!rows_of(&s, v, &a, &b)) { CHECK(0); continue; }
        CHECK(strstr(v->note, "NOISY") != NULL);
        CHECK(!strcmp(v->statistic, "median")); /* a busy machine's minima are not alike */
        CHECK(a->drifted && b->drifted);         /* the host reference at 5-11% of its calibration */
        CHECK(check_against_rows("busy", v, a, b) == 0);
    }
    mb_rpt_set_free(&s);

    /* demo --quick while the project compiled on both cores: sin^2+cos^2's
     * medians 0.03x and minima 1.83x, both under the lecture's band, the
     * model expecting 5.08x; the rule before took it for "falls short" */
    static const char *const demo[] = {"demo-copy.csv", "demo-fusion_recompute.csv"};
    CHECK(load(&s, dir, demo, 2) == 0);
    CHECK(s.n_verdicts == 5);
    int seen = 0;
    for (int i = 0; i < s.n_verdicts; i++) {
        const mb_rpt_verdict *v = &s.verdicts[i];
        const mb_rpt_row *a, *b;
        if (!rows_of(&s, v, &a, &b)) { CHECK(0); continue; }
        check_against_rows("demo", v, a, b);
        if (strstr(v->claim, "sin^2+cos^2")) {
            seen = 1;
            CHECK(a->time_s_min / b->time_s_min < 5.5 * (1 - MB_RPT_TOL_TIME));
            CHECK(!strcmp(v->holds, "inconclusive"));
        }
    }
    CHECK(seen);
    mb_rpt_set_free(&s);
}

/* The demo's claim sizes at 4x the larger cache: the 2-vCPU guest's 64
 * MiB knee and 260 MiB reported L3 (1040 MiB): the bf16 copy (4 B an
 * element in and out: 1024 MiB at 2^28, short of it) 2^29, capped at 2^28
 * when asked; sigmoid^3 recompute (5n f32, 20 B) from its 2^20 to 2^26; no
 * cache: the lecture's sizes. */
static void claim_sizes(void)
{
    const double floor_bytes = 4 * 260.0 * 1048576;
    int capped = 0;
    CHECK_EQ_I64(mb_rpt_claim_n(mb_rpt_demo_of("copy"), floor_bytes, (int64_t)1 << 29, &capped), (int64_t)1 << 29);
    CHECK(!capped);
    CHECK_EQ_I64(mb_rpt_claim_n(mb_rpt_demo_of("copy"), floor_bytes, (int64_t)1 << 28, &capped), (int64_t)1 << 28);
    CHECK(capped);
    capped = 0;
    CHECK_EQ_I64(mb_rpt_claim_n(mb_rpt_demo_of("sigmoid3"), floor_bytes, (int64_t)1 << 28, &capped),
                 (int64_t)1 << 26);
    CHECK(!capped);
    CHECK_EQ_I64(mb_rpt_claim_n(mb_rpt_demo_of("sin2_plus_cos2"), 0, (int64_t)1 << 28, &capped), (int64_t)1 << 24);
}

int main(void)
{
    claim_sizes();
    const char *src = getenv("MB_SRC");
    test_cases();
    test_student_cases();
    if (src) {
        test_quiet(src);
        test_busy(src);
    } else {
        fprintf(stderr, "MB_SRC not set: the committed runs not checked\n");
        CHECK(0);
    }
    return mb_test_done();
}
