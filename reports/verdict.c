/* verdict.c — checks the lecture's claims against the joined, fitted rows of
 * each device × backend: the lecture's figure, the model's figure for that
 * device, the measured figure, and whether the claim holds within the
 * stated tolerance. Does not write anything. */
#include "report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A claim compares a slow series (a) with a fast one (b) of one demo of
 * the lecture table; plan NULL matches any plan (a copy is one kernel
 * whatever the plan). */
typedef struct claim {
    const char *text, *lecture;
    const char *va, *pa;
    mb_dtype da;
    const char *vb, *pb;
    mb_dtype db;
    double ratio;
    int64_t n;
} claim;

static claim claim_of(const mb_rpt_demo *d, const mb_rpt_claim *c)
{
    const mb_rpt_lecture_series *a = &d->series[c->slow], *b = &d->series[c->fast];
    int any_plan = a->dtype != b->dtype; /* a precision claim: same op, any plan */
    claim k = {c->text, c->lecture, d->variant, any_plan ? NULL : a->plan, a->dtype,
               d->variant, any_plan ? NULL : b->plan, b->dtype, c->ratio, d->n};
    return k;
}

static int matches(const mb_rpt_row *r, int gi, const char *v, const char *p, mb_dtype dt)
{
    mb_dtype rd;
    if (r->group != gi || !r->verified || !(r->time_s_median > 0)) return 0;
    if (strcmp(r->variant, v) != 0) return 0;
    if (p && strcmp(r->plan, p) != 0) return 0;
    if (mb_dtype_parse(r->dtype, &rd) != MB_OK || rd != dt) return 0;
    return 1;
}

/* Appends to v->note, cut at its end. */
static void note_add(mb_rpt_verdict *v, const char *fmt, ...)
{
    size_t len = strlen(v->note);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->note + len, sizeof v->note - len, fmt, ap);
    va_end(ap);
}

/* The row of (v, p, dt) at size n in group gi: a quiet one before a noisy
 * one, then an eager plan when p is NULL. */
static const mb_rpt_row *find(const mb_rpt_set *s, int gi, const char *v, const char *p,
                              mb_dtype dt, int64_t n)
{
    const mb_rpt_row *best = NULL;
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (r->n != n || !matches(r, gi, v, p, dt)) continue;
        if (!best || (best->noisy && !r->noisy) ||
            (best->noisy == r->noisy && !strcmp(r->plan, "eager") && strcmp(best->plan, "eager") != 0))
            best = r;
    }
    return best;
}

static int within(double measured, double expected, double tol)
{
    return isfinite(measured) && isfinite(expected) && expected > 0 &&
           fabs(measured / expected - 1.0) <= tol;
}

/* The device-level reason the model's ratio on this device departs from the
 * lecture's count, into why: a kernel compute-bound here, the cache serving
 * part of the traffic at this size, launch overhead. "" when none. */
static void device_reason(const mb_rpt_row *a, const mb_rpt_row *b, const mb_rpt_verdict *v, char *why,
                          size_t size)
{
    size_t wl = 0;
    why[0] = '\0';
    const mb_rpt_demo *dd = rpt_dtype_demo(); /* its series differ in dtype */
    const char *na = dd && !strcmp(a->variant, dd->variant) ? a->dtype : a->plan;
    const char *nb = dd && !strcmp(b->variant, dd->variant) ? b->dtype : b->plan;
    int ca = a->pred_bound == MB_BOUND_COMPUTE, cb = b->pred_bound == MB_BOUND_COMPUTE;
    if (ca && cb) wl += (size_t)snprintf(why, size, "compute-bound here: both %s and %s", na, nb);
    else if (ca || cb) wl += (size_t)snprintf(why, size, "compute-bound here: %s", ca ? na : nb);
    double la = a->pred_time_s > 0 ? a->pred_launch_s / a->pred_time_s : 0;
    double lb = b->pred_time_s > 0 ? b->pred_launch_s / b->pred_time_s : 0;
    if (wl < size && (a->pred_bound == MB_BOUND_LAUNCH || b->pred_bound == MB_BOUND_LAUNCH || fmax(la, lb) > 0.1))
        wl += (size_t)snprintf(why + wl, size - wl, "%slaunch-bound at this size (launch overhead %.0f%% of "
                               "the time)", wl ? "; " : "", 100 * fmax(la, lb));
    if (wl < size && fabs(v->model_dram_ratio / v->model_bytes_ratio - 1) > 0.1)
        snprintf(why + wl, size - wl, "%sthe cache serves part of the traffic at this size (DRAM ratio %.2f)",
                 wl ? "; " : "", v->model_dram_ratio);
}

/* The rows' calibration marks ("fallback", "stale", "quick") into v. */
static void calibration_marks(const mb_rpt_row *a, const mb_rpt_row *b, mb_rpt_verdict *v)
{
    static const char *const marks[] = {"fallback", "stale", "quick"};
    size_t len = 0;
    for (int i = 0; i < 3; i++)
        if (!strcmp(a->calibration, marks[i]) || !strcmp(b->calibration, marks[i]))
            len += (size_t)snprintf(v->calibration + len, sizeof v->calibration - len, "%s%s",
                                    len ? "," : "", marks[i]);
}

/* The time judgement: the deciding ratio (minimum over minimum, the median
 * when a row has no minimum), its range over the rows' min-to-p90 spans,
 * and whether it lies within the tolerance of the expected ratio: 1 inside,
 * 0 outside, -1 when it cannot be decided (the range straddles an edge of
 * the band and the ratio lies within MB_RPT_DECIDE_MARGIN of it). */
static int judge_time(const mb_rpt_row *a, const mb_rpt_row *b, mb_rpt_verdict *v)
{
    double E = v->expected_ratio;
    int have_min = a->time_s_min > 0 && b->time_s_min > 0;
    v->statistic = have_min ? "min" : "median";
    double r = have_min ? a->time_s_min / b->time_s_min : v->meas_time_ratio;
    v->meas_min_ratio = have_min ? r : NAN;
    int have_range = have_min && a->time_s_p90 >= a->time_s_min && b->time_s_p90 >= b->time_s_min;
    v->meas_range_lo = have_range ? a->time_s_min / b->time_s_p90 : NAN;
    v->meas_range_hi = have_range ? a->time_s_p90 / b->time_s_min : NAN;
    int in = within(r, E, MB_RPT_TOL_TIME);
    if (!have_range) return in;
    double lo = E * (1 - MB_RPT_TOL_TIME), hi = E * (1 + MB_RPT_TOL_TIME);
    /* the whole range on one side of both edges: firm whatever the noise */
    int straddles = (v->meas_range_lo < lo && v->meas_range_hi > lo) ||
                    (v->meas_range_lo < hi && v->meas_range_hi > hi);
    if (!straddles) return in;
    double near = fmin(fabs(r / lo - 1), fabs(r / hi - 1));
    return near < MB_RPT_DECIDE_MARGIN ? -1 : in;
}

/* The note of a decided verdict: which statistic, the device's reason, the
 * rows' state, the calibration; the rerun command when inconclusive. */
static void verdict_note(const mb_rpt_row *a, const mb_rpt_row *b, const claim *c, int time_in, int counted,
                         int bytes_ok, mb_rpt_verdict *v)
{
    if (!strcmp(v->statistic, "min") && isfinite(v->meas_range_lo))
        note_add(v, "decided on the minimum times (ratio %.2fx; median %.2fx beside it, range %.2f-%.2fx over "
                 "the rows' min-to-p90). ", v->meas_min_ratio, v->meas_time_ratio, v->meas_range_lo,
                 v->meas_range_hi);
    else if (!strcmp(v->statistic, "min"))
        note_add(v, "decided on the minimum times (ratio %.2fx; median %.2fx beside it; no p90 for a range). ",
                 v->meas_min_ratio, v->meas_time_ratio);
    else
        note_add(v, "decided on the median times (the rows carry no minimum). ");
    if (time_in < 0)
        note_add(v, "INCONCLUSIVE: the minimum ratio lies within %.0f%% of an edge of the band %.2f-%.2fx "
                 "(the expected %.2fx +-%.0f%%) and the rows' ranges straddle it (rerun: %s). ",
                 100 * MB_RPT_DECIDE_MARGIN, v->expected_ratio * (1 - MB_RPT_TOL_TIME),
                 v->expected_ratio * (1 + MB_RPT_TOL_TIME), v->expected_ratio, 100 * MB_RPT_TOL_TIME, v->rerun);
    if (counted && !bytes_ok)
        note_add(v, "counted DRAM bytes ratio %.2f, not %.2f. ", v->meas_bytes_ratio, c->ratio);
    else if (!counted)
        note_add(v, "bytes: modelled, not counted on this backend. ");
    if (v->reason[0] && !within(v->model_time_ratio, c->ratio, MB_RPT_TOL_TIME))
        note_add(v, "the lecture's %.2fx is a memory-bound GPU's figure; the model expects %.2fx on this device: %s. ",
                 c->ratio, v->model_time_ratio, v->reason);
    else if (!within(v->model_time_ratio, c->ratio, MB_RPT_TOL_TIME) && isfinite(v->model_time_ratio))
        note_add(v, "the model expects %.2fx on this device: not purely memory-bound. ", v->model_time_ratio);
    if (a->noisy || b->noisy)
        note_add(v, "NOISY: %s measured while the machine was busy (contended samples): %s. ",
                 a->noisy && b->noisy ? "both rows" : "one row", strcmp(v->statistic, "min")
                 ? "the medians decided, and a busy machine slows them: measure again"
                 : "the minimum still decides, the median is slowed");
    if (a->drifted || b->drifted)
        note_add(v, "DRIFTED: the host's copy bandwidth or op rate was more than 20%% off its calibration "
                 "during %s (the rows table gives the shares): the model's side may be off by as much. ",
                 a->drifted && b->drifted ? "both rows" : "one row");
    if (v->smoke_test)
        note_add(v, "SMOKE TEST: %s: the figures say nothing about this machine. ",
                 strstr(v->calibration, "quick") ? "measured against a quick calibration" : "small sizes, short runs");
    if (strstr(v->calibration, "fallback"))
        note_add(v, "FALLBACK: the model columns come from a fallback calibration (a quick one taken after "
                 "full ones were refused for contention, or the cached one after quick ones were): the "
                 "expected ratio is rough. ");
    if (strstr(v->calibration, "stale"))
        note_add(v, "STALE: the calibration is old: the host may have moved since (calibrate again). ");
}

/* The command that measures claim c's two series again at n, with more
 * samples, into v->rerun. */
static void rerun_command(const claim *c, int64_t n, mb_rpt_verdict *v)
{
    char plans[40], dtypes[24];
    if (c->pa && c->pb && strcmp(c->pa, c->pb)) snprintf(plans, sizeof plans, "%s,%s", c->pa, c->pb);
    else snprintf(plans, sizeof plans, "%s", c->pa ? c->pa : "eager"); /* one kernel whatever the plan */
    if (c->da != c->db) snprintf(dtypes, sizeof dtypes, "%s,%s", mb_dtype_name(c->da), mb_dtype_name(c->db));
    else snprintf(dtypes, sizeof dtypes, "%s", mb_dtype_name(c->da));
    snprintf(v->rerun, sizeof v->rerun, "membound measure %s --plan %s --dtype %s --sizes %lld --reps 50 "
             "-o rerun.csv", c->va, plans, dtypes, (long long)n);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The largest n at which both of claim c's series have a row, -1 when none:
 * the second series' sizes sorted once and each of the first's looked up in
 * them (a search per row made 10^5 rows 45 s). */
static int64_t largest_common_n(const mb_rpt_set *s, int gi, const claim *c)
{
    int64_t *sizes = malloc((size_t)(s->n_rows ? s->n_rows : 1) * sizeof *sizes), best = -1;
    if (!sizes) { /* out of memory: the search per row, slow but the same answer */
        for (int i = 0; i < s->n_rows; i++) {
            const mb_rpt_row *r = &s->rows[i];
            if (r->n > best && matches(r, gi, c->va, c->pa, c->da) && find(s, gi, c->vb, c->pb, c->db, r->n))
                best = r->n;
        }
        return best;
    }
    size_t m = 0;
    for (int i = 0; i < s->n_rows; i++)
        if (matches(&s->rows[i], gi, c->vb, c->pb, c->db)) sizes[m++] = s->rows[i].n;
    qsort(sizes, m, sizeof *sizes, cmp_i64);
    for (int i = 0; i < s->n_rows && m; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (r->n > best && matches(r, gi, c->va, c->pa, c->da) && bsearch(&r->n, sizes, m, sizeof *sizes, cmp_i64))
            best = r->n;
    }
    free(sizes);
    return best;
}

static void check(const mb_rpt_set *s, int gi, const claim *c, mb_rpt_verdict *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->claim, sizeof v->claim, "%s", c->text);
    snprintf(v->lecture, sizeof v->lecture, "%s", c->lecture);
    snprintf(v->device, sizeof v->device, "%s", s->groups[gi].device);
    snprintf(v->backend, sizeof v->backend, "%s", s->groups[gi].backend);
    v->lecture_ratio = c->ratio;
    v->model_bytes_ratio = v->model_dram_ratio = v->model_time_ratio = NAN;
    v->meas_time_ratio = v->meas_bytes_ratio = NAN;
    v->meas_min_ratio = v->meas_range_lo = v->meas_range_hi = v->expected_ratio = NAN;
    v->holds = "no data";
    v->model_agrees = "no data";
    v->statistic = v->bytes = "";

    /* the lecture's size when both were measured there, else the largest common size */
    int64_t n = -1;
    if (find(s, gi, c->va, c->pa, c->da, c->n) && find(s, gi, c->vb, c->pb, c->db, c->n)) n = c->n;
    else n = largest_common_n(s, gi, c);
    if (n < 0) {
        snprintf(v->note, sizeof v->note, "no verified rows of both %s/%s/%s and %s/%s/%s",
                 c->va, c->pa ? c->pa : "*", mb_dtype_name(c->da), c->vb, c->pb ? c->pb : "*",
                 mb_dtype_name(c->db));
        return;
    }
    const mb_rpt_row *a = find(s, gi, c->va, c->pa, c->da, n);
    const mb_rpt_row *b = find(s, gi, c->vb, c->pb, c->db, n);
    v->n = n;
    double ba = (double)(a->pred_read_bytes + a->pred_write_bytes);
    double bb = (double)(b->pred_read_bytes + b->pred_write_bytes);
    double da = (double)(a->pred_dram_read_bytes + a->pred_dram_write_bytes);
    double db = (double)(b->pred_dram_read_bytes + b->pred_dram_write_bytes);
    v->model_bytes_ratio = bb > 0 ? ba / bb : NAN;
    v->model_dram_ratio = db > 0 ? da / db : NAN;
    v->model_time_ratio = b->pred_time_s > 0 ? a->pred_time_s / b->pred_time_s : NAN;
    v->meas_time_ratio = a->time_s_median / b->time_s_median;
    v->expected_ratio = isfinite(v->model_time_ratio) && v->model_time_ratio > 0 ? v->model_time_ratio : c->ratio;
    int counted = a->has_dram && b->has_dram && (b->dram_read_bytes + b->dram_write_bytes) > 0;
    if (counted)
        v->meas_bytes_ratio = (double)(a->dram_read_bytes + a->dram_write_bytes) /
                              (double)(b->dram_read_bytes + b->dram_write_bytes);
    int bytes_ok = counted ? within(v->meas_bytes_ratio, c->ratio, MB_RPT_TOL_BYTES) : 1;
    v->bytes = !counted ? "modelled, not counted on this backend"
                        : bytes_ok ? "counted: holds" : "counted: does not hold";
    device_reason(a, b, v, v->reason, sizeof v->reason);
    calibration_marks(a, b, v);
    v->smoke_test = s->smoke_test || strstr(v->calibration, "quick") != NULL;
    rerun_command(c, n, v);
    int time_in = judge_time(a, b, v);
    /* counted bytes are not noisy: a bytes ratio off the claim decides alone */
    if (!bytes_ok) v->holds = "does not hold";
    else v->holds = time_in < 0 ? "inconclusive" : time_in ? "holds" : "does not hold";
    if (!isfinite(v->model_time_ratio)) v->model_agrees = "no data";
    else if (time_in < 0) v->model_agrees = "inconclusive";
    else v->model_agrees = time_in ? "yes" : "no";
    verdict_note(a, b, c, time_in, counted, bytes_ok, v);
    if (time_in >= 0) v->rerun[0] = '\0'; /* only an inconclusive verdict names one */
    if (n != c->n)
        note_add(v, "compared at n = %lld, not the lecture's %lld.",
                 (long long)n, (long long)c->n);
}

int mb_rpt_verdicts(mb_rpt_set *s, mb_err *err)
{
    free(s->verdicts);
    s->verdicts = NULL;
    s->n_verdicts = 0;
    if (!s->n_groups) return MB_OK;
    s->verdicts = calloc((size_t)(s->n_groups * (2 * MB_RPT_N_DEMOS + MB_RPT_N_ROW_CLAIMS)), sizeof *s->verdicts);
    if (!s->verdicts) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int d = 0; d < MB_RPT_N_DEMOS; d++) {
        const mb_rpt_demo *demo = &mb_rpt_lecture[d];
        for (int c = 0; c < demo->n_claims; c++) {
            claim k = claim_of(demo, &demo->claims[c]);
            for (int g = 0; g < s->n_groups; g++) {
                /* a claim about a variant this group never ran is not a row */
                int ran = 0;
                for (int i = 0; i < s->n_rows && !ran; i++)
                    ran = s->rows[i].group == g && !strcmp(s->rows[i].variant, demo->variant);
                if (ran) check(s, g, &k, &s->verdicts[s->n_verdicts++]);
            }
        }
    }
    for (int c = 0; c < MB_RPT_N_ROW_CLAIMS; c++) { /* the normalization family's */
        const mb_rpt_row_claim *rc = &mb_rpt_row_claims[c];
        claim k = {rc->text, rc->lecture, rc->variant, rc->slow, MB_F32, rc->variant, rc->fast, MB_F32,
                   rc->ratio, rc->n};
        for (int g = 0; g < s->n_groups; g++) {
            int ran = 0;
            for (int i = 0; i < s->n_rows && !ran; i++)
                ran = s->rows[i].group == g && !strcmp(s->rows[i].variant, rc->variant);
            if (!ran) continue;
            mb_rpt_verdict *v = &s->verdicts[s->n_verdicts++];
            check(s, g, &k, v);
            note_add(v, " Judged by the %s at %s.", rc->judged_by, rc->shape);
        }
    }
    return MB_OK;
}
