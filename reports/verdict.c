/* verdict.c — checks the lecture's claims against the joined, fitted rows of
 * each device × backend: the lecture's figure, the model's figure for that
 * device, the measured figure (the minima between like rows, else the
 * medians), and two judgements: the lecture's claim here (direction and
 * rough size, as the claim's kind reads it) and the model's expectation
 * here, with the reason wherever the two part. Does not write anything. */
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
    mb_rpt_claim_kind kind;
} claim;

static claim claim_of(const mb_rpt_demo *d, const mb_rpt_claim *c)
{
    const mb_rpt_lecture_series *a = &d->series[c->slow], *b = &d->series[c->fast];
    int any_plan = a->dtype != b->dtype; /* a precision claim: same op, any plan */
    claim k = {c->text, c->lecture, d->variant, any_plan ? NULL : a->plan, a->dtype,
               d->variant, any_plan ? NULL : b->plan, b->dtype, c->ratio, d->n, c->kind};
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

/* The name a row goes by in a reason: its dtype in the precision demo (its
 * series differ in dtype), else its plan. */
static const char *series_name(const mb_rpt_row *r)
{
    const mb_rpt_demo *dd = rpt_dtype_demo();
    return dd && !strcmp(r->variant, dd->variant) ? r->dtype : r->plan;
}

/* Appends to buf (of size) after a "; " when it holds something already. */
static void why_add(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len && len + 2 < size) memcpy(buf + len, "; ", 3), len += 2;
    if (len >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* The device-level reasons the model's ratio on this device departs from
 * the lecture's count, into v->reason: a kernel compute-bound here, launch
 * overhead, the cache serving part of the traffic at this size (the model's
 * DRAM ratio off its bytes ratio). */
static void model_reasons(const mb_rpt_row *a, const mb_rpt_row *b, mb_rpt_verdict *v)
{
    const char *na = series_name(a), *nb = series_name(b);
    int ca = a->pred_bound == MB_BOUND_COMPUTE, cb = b->pred_bound == MB_BOUND_COMPUTE;
    if (ca && cb) why_add(v->reason, sizeof v->reason, "compute-bound here: both %s and %s", na, nb);
    else if (ca || cb) why_add(v->reason, sizeof v->reason, "compute-bound here: %s", ca ? na : nb);
    double la = a->pred_time_s > 0 ? a->pred_launch_s / a->pred_time_s : 0;
    double lb = b->pred_time_s > 0 ? b->pred_launch_s / b->pred_time_s : 0;
    if (a->pred_bound == MB_BOUND_LAUNCH || b->pred_bound == MB_BOUND_LAUNCH || fmax(la, lb) > 0.1)
        why_add(v->reason, sizeof v->reason, "launch-bound at this size (launch overhead %.0f%% of the time)",
                100 * fmax(la, lb));
    if (fabs(v->model_dram_ratio / v->model_bytes_ratio - 1) > 0.1)
        why_add(v->reason, sizeof v->reason, "the cache serves part of the traffic at this size (model DRAM "
                "ratio %.2f)", v->model_dram_ratio);
}

/* The rate (GB/s) at which row r moved its modelled DRAM bytes in its
 * fastest sample (a busy machine adds time, never takes it away), and its
 * device's DRAM bandwidth into *bw_gbs; NaN when either is unknown. */
static double row_dram_gbs(const mb_rpt_set *s, const mb_rpt_row *r, double *bw_gbs)
{
    *bw_gbs = r->dev >= 0 && r->dev < s->n_devices ? mb_device_bandwidth_gbs(&s->devices[r->dev], NULL) : 0;
    double t_s = r->time_s_min > 0 ? r->time_s_min : r->time_s_median;
    double bytes = (double)(r->pred_dram_read_bytes + r->pred_dram_write_bytes);
    return *bw_gbs > 0 && t_s > 0 && bytes > 0 ? bytes / t_s / 1e9 : NAN;
}

/* The measured reason: a row that moved its modelled DRAM bytes faster than
 * its device's DRAM bandwidth allows (by MB_RPT_CACHE_MARGIN) found part of
 * them in the cache, whatever the model said, unless the host itself ran
 * that much faster than its calibration: a CPU row's host reference copy
 * (host_copy_ratio, measure's host check) sets how much faster its DRAM was
 * during the row, and a row within that is the host's drift. Against a
 * marked calibration (quick, fallback: cache-sized arrays, contended runs)
 * the DRAM figure itself may be the low one: said so, once for both rows. */
static void cache_reasons(const mb_rpt_set *s, const mb_rpt_row *a, const mb_rpt_row *b, mb_rpt_verdict *v)
{
    const mb_rpt_row *rows[2] = {a, b};
    int fast[2];
    double gbs[2], bw[2];
    for (int i = 0; i < 2; i++) {
        gbs[i] = row_dram_gbs(s, rows[i], &bw[i]);
        fast[i] = gbs[i] > bw[i] * (1 + MB_RPT_CACHE_MARGIN);
    }
    if (!fast[0] && !fast[1]) return;
    if (v->calibration[0] && (strstr(v->calibration, "quick") || strstr(v->calibration, "fallback"))) {
        why_add(v->reason, sizeof v->reason, "%s ran faster than the %s calibration's DRAM figure (%.1f GB/s) "
                "allows: that figure is likely low, or the cache served part of it", fast[0] && fast[1]
                ? "both rows" : series_name(fast[0] ? a : b), v->calibration, bw[fast[0] ? 0 : 1]);
        return;
    }
    for (int i = 0; i < 2; i++) {
        if (!fast[i]) continue;
        const double mib = (double)(rows[i]->pred_dram_read_bytes + rows[i]->pred_dram_write_bytes) / 1048576.0;
        const double drift = rows[i]->host_copy_ratio;
        if (isfinite(drift) && drift > 1 && gbs[i] <= bw[i] * drift * (1 + MB_RPT_CACHE_MARGIN))
            why_add(v->reason, sizeof v->reason, "the host ran faster than its calibration: %s moved its %.0f MiB "
                    "of modelled DRAM traffic at %.1f GB/s, as its own reference copy did during the row (%.0f%% of "
                    "the calibrated %.1f GB/s)", series_name(rows[i]), mib, gbs[i], 100 * drift, bw[i]);
        else if (isfinite(drift) && drift > 1)
            why_add(v->reason, sizeof v->reason, "the cache served part of it: %s moved its %.0f MiB of modelled "
                    "DRAM traffic at %.1f GB/s, faster than this device's DRAM allows even at the host's drift "
                    "during the row (its reference copy at %.0f%% of the calibrated %.1f GB/s)",
                    series_name(rows[i]), mib, gbs[i], 100 * drift, bw[i]);
        else
            why_add(v->reason, sizeof v->reason, "the cache served part of it: %s moved its %.0f MiB of modelled "
                    "DRAM traffic at %.1f GB/s, faster than this device's DRAM (%.1f GB/s) allows",
                    series_name(rows[i]), mib, gbs[i], bw[i]);
    }
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

/* The statistic that decides, and how firm a side of a band it gives. */
typedef struct decision {
    int use_min;               /* 1: the minima decide */
    double r;                  /* the deciding ratio */
    double other;              /* the other statistic's ratio (NaN: none) */
    double range_lo, range_hi; /* the ratio over the rows' min-to-p90 spans (NaN: none) */
    char why_median[200];      /* why the median decides ("" when the minima do) */
    int busy;                  /* a row both noisy and drifted: no statistic decides */
} decision;

/* Like with like: the minima decide only when both rows have one, neither
 * is noisy, their sample counts are within MB_RPT_LIKE_REPS of each other
 * and neither spreads wider than MB_RPT_QUIET_CV; else the medians, and
 * why into d->why_median. */
static void pick_statistic(const mb_rpt_row *a, const mb_rpt_row *b, mb_rpt_verdict *v, decision *d)
{
    double rmin = a->time_s_min > 0 && b->time_s_min > 0 ? a->time_s_min / b->time_s_min : NAN;
    double rmed = v->meas_time_ratio;
    d->why_median[0] = '\0';
    if (!isfinite(rmin)) snprintf(d->why_median, sizeof d->why_median, "the rows carry no minimum");
    else if (a->noisy || b->noisy)
        snprintf(d->why_median, sizeof d->why_median, "%s measured while the machine was busy",
                 a->noisy && b->noisy ? "both rows" : "a row");
    else if (a->reps > 0 && b->reps > 0 && fmax(a->reps, b->reps) > MB_RPT_LIKE_REPS * fmin(a->reps, b->reps))
        snprintf(d->why_median, sizeof d->why_median, "the rows' sample counts differ (%d against %d): the "
                 "minimum of more samples lies further out", a->reps, b->reps);
    else if (fmax(a->time_cv, b->time_cv) > MB_RPT_QUIET_CV)
        snprintf(d->why_median, sizeof d->why_median, "a row spreads wide (CV %.0f%%): its minimum is a "
                 "long tail's", 100 * fmax(a->time_cv, b->time_cv));
    d->use_min = d->why_median[0] == '\0';
    /* contended samples while the host ran more than 20% off its calibration:
     * the time ratio is the busy host's, its minimum as much as its median
     * (a compile beside a 2-vCPU demo: sin^2+cos^2 measured 0.03x on the
     * medians, 1.83x on the minima, against 5.08x expected) */
    d->busy = (a->noisy && a->drifted) || (b->noisy && b->drifted);
    d->r = d->use_min ? rmin : rmed;
    d->other = d->use_min ? rmed : rmin;
    int have_range = isfinite(rmin) && a->time_s_p90 >= a->time_s_min && b->time_s_p90 >= b->time_s_min;
    d->range_lo = have_range ? a->time_s_min / b->time_s_p90 : NAN;
    d->range_hi = have_range ? a->time_s_p90 / b->time_s_min : NAN;
    v->statistic = d->use_min ? "min" : "median";
    v->meas_min_ratio = rmin;
    v->meas_ratio = d->r;
    v->meas_range_lo = d->range_lo;
    v->meas_range_hi = d->range_hi;
}

static int side_of(double r, double lo, double hi) { return r < lo ? -1 : r > hi ? 1 : 0; }

/* Where d's ratio lies against the band lo..hi (hi INFINITY: no upper
 * edge): -1 below, 0 inside, 1 above, 2 undecided (always when d is
 * busy). The minima decide
 * firmly unless the rows' ranges straddle an edge and the ratio lies
 * within MB_RPT_DECIDE_MARGIN of it; the medians only when the minima lie
 * on the same side (a busy machine slows both, unevenly). */
static int judge_band(const decision *d, double lo, double hi)
{
    if (!isfinite(d->r) || d->busy) return 2;
    int side = side_of(d->r, lo, hi);
    if (!d->use_min) return isfinite(d->other) && side_of(d->other, lo, hi) != side ? 2 : side;
    if (!isfinite(d->range_lo)) return side;
    int straddles = (d->range_lo < lo && d->range_hi > lo) || (d->range_lo < hi && d->range_hi > hi);
    double near = fmin(fabs(d->r / lo - 1), isfinite(hi) ? fabs(d->r / hi - 1) : INFINITY);
    return straddles && near < MB_RPT_DECIDE_MARGIN ? 2 : side;
}

/* The lecture's claim on this device, by its time ratio: inside its band
 * (an at-least claim has no upper edge) holds; above it exceeds; below it
 * falls short, or is reversed when the fast series ran slower. */
static const char *lecture_verdict(const decision *d, const claim *c)
{
    double lo = c->ratio * (1 - MB_RPT_TOL_TIME);
    double hi = c->kind == MB_RPT_CLAIM_AT_LEAST ? INFINITY : c->ratio * (1 + MB_RPT_TOL_TIME);
    switch (judge_band(d, lo, hi)) {
    case 0: return "holds";
    case 1: return "exceeds";
    case 2: return "inconclusive";
    default: return judge_band(d, 1.0, INFINITY) == -1 ? "reversed" : "falls short";
    }
}

/* The note: what decided, the lecture's claim and the model's expectation
 * in words, the rows' state, the calibration. */
static void verdict_note(const mb_rpt_row *a, const mb_rpt_row *b, const claim *c, const decision *d,
                         int counted, int bytes_ok, mb_rpt_verdict *v)
{
    if (d->use_min && isfinite(v->meas_range_lo))
        note_add(v, "decided on the minimum times (ratio %.2fx; median %.2fx beside it, range %.2f-%.2fx over "
                 "the rows' min-to-p90). ", d->r, v->meas_time_ratio, v->meas_range_lo, v->meas_range_hi);
    else if (d->use_min)
        note_add(v, "decided on the minimum times (ratio %.2fx; median %.2fx beside it; no p90 for a range). ",
                 d->r, v->meas_time_ratio);
    else if (isfinite(d->other))
        note_add(v, "decided on the median times (ratio %.2fx; minimum %.2fx beside it): %s. ", d->r, d->other,
                 d->why_median);
    else
        note_add(v, "decided on the median times (the rows carry no minimum). ");
    if (counted && !bytes_ok)
        note_add(v, "counted DRAM bytes ratio %.2f, not %.2f. ", v->meas_bytes_ratio, c->ratio);
    else if (!counted)
        note_add(v, "bytes: modelled, not counted on this backend. ");
    const char *h = v->holds;
    if (!strcmp(h, "exceeds"))
        note_add(v, "the lecture's claim: %.2fx measured, more than its %.2fx +-%.0f%% (faster than claimed). ",
                 d->r, c->ratio, 100 * MB_RPT_TOL_TIME);
    else if (!strcmp(h, "falls short"))
        note_add(v, "the lecture's claim: %.2fx measured, the right direction but less than its %.2fx -%.0f%%. ",
                 d->r, c->ratio, 100 * MB_RPT_TOL_TIME);
    else if (!strcmp(h, "reversed"))
        note_add(v, "the lecture's claim: reversed here, the series the lecture calls faster took %.2fx the "
                 "time of the other. ", d->r > 0 ? 1 / d->r : NAN);
    if (!strcmp(v->model_agrees, "no"))
        note_add(v, "the model's expectation: %.2fx +-%.0f%%, measured %.2fx. ", v->expected_ratio,
                 100 * MB_RPT_TOL_TIME, d->r);
    if (!strcmp(h, "inconclusive") || !strcmp(v->model_agrees, "inconclusive"))
        note_add(v, "INCONCLUSIVE: %s (rerun: %s). ", d->busy
                 ? "a row ran on a busy host, its samples contended while the host's copy bandwidth or op rate "
                   "was more than 20% off its calibration: neither its minimum nor its median is the device's"
                 : d->use_min ? "the minimum ratio lies next to an edge of a band and the rows' ranges straddle it"
                 : "the minimum and the median ratios fall on different sides of a band", v->rerun);
    if (v->reason[0] && strcmp(h, "holds"))
        note_add(v, "why: %s. ", v->reason);
    if (a->noisy || b->noisy)
        note_add(v, "NOISY: %s measured while the machine was busy (contended samples). ",
                 a->noisy && b->noisy ? "both rows" : "one row");
    if (a->drifted || b->drifted)
        note_add(v, "DRIFTED: the host's copy bandwidth or op rate was more than 20%% off its calibration "
                 "during %s (the rows table gives the shares): the model's side may be off by as much. ",
                 a->drifted && b->drifted ? "both rows" : "one row");
    if (v->smoke_test)
        note_add(v, "SMOKE TEST: %s: the figures say nothing about this machine. ",
                 strstr(v->calibration, "quick") ? "measured against a quick calibration" : "small sizes, short runs");
    if (strstr(v->calibration, "fallback"))
        note_add(v, "FALLBACK: the model columns come from a fallback calibration (a quick one taken after "
                 "full ones were refused, a probe contended or a figure could not be true; or the cached one "
                 "after quick ones were): the expected ratio is rough. ");
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
    v->kind = c->kind;
    v->model_bytes_ratio = v->model_dram_ratio = v->model_time_ratio = NAN;
    v->meas_time_ratio = v->meas_bytes_ratio = v->meas_ratio = NAN;
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
    calibration_marks(a, b, v);
    v->smoke_test = s->smoke_test || strstr(v->calibration, "quick") != NULL;
    rerun_command(c, n, v);
    decision d;
    pick_statistic(a, b, v, &d);
    /* counted bytes are not noisy: a bytes ratio off the claim decides alone */
    v->holds = bytes_ok ? lecture_verdict(&d, c) : "does not hold";
    if (isfinite(v->model_time_ratio)) {
        int m = judge_band(&d, v->expected_ratio * (1 - MB_RPT_TOL_TIME), v->expected_ratio * (1 + MB_RPT_TOL_TIME));
        v->model_agrees = m == 2 ? "inconclusive" : m == 0 ? "yes" : "no";
    }
    model_reasons(a, b, v);
    cache_reasons(s, a, b, v);
    /* every verdict that departs from the lecture says why, or that no reason was found */
    if (strcmp(v->holds, "holds") && strcmp(v->holds, "inconclusive") && !v->reason[0])
        snprintf(v->reason, sizeof v->reason, "no reason found on the device's side: the model expects %.2fx "
                 "here and the rows ran neither compute- nor launch-bound nor from the cache", v->expected_ratio);
    verdict_note(a, b, c, &d, counted, bytes_ok, v);
    if (strcmp(v->holds, "inconclusive") && strcmp(v->model_agrees, "inconclusive"))
        v->rerun[0] = '\0'; /* only an inconclusive verdict names one */
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
                   rc->ratio, rc->n, rc->kind};
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
