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
    v->holds = "no data";
    v->model_agrees = "no data";

    /* the lecture's size when both were measured there, else the largest common size */
    int64_t n = -1;
    if (find(s, gi, c->va, c->pa, c->da, c->n) && find(s, gi, c->vb, c->pb, c->db, c->n)) {
        n = c->n;
    } else {
        for (int i = 0; i < s->n_rows; i++) {
            const mb_rpt_row *r = &s->rows[i];
            if (!matches(r, gi, c->va, c->pa, c->da) || r->n <= n) continue;
            if (find(s, gi, c->vb, c->pb, c->db, r->n)) n = r->n;
        }
    }
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
    int counted = a->has_dram && b->has_dram && (b->dram_read_bytes + b->dram_write_bytes) > 0;
    if (counted)
        v->meas_bytes_ratio = (double)(a->dram_read_bytes + a->dram_write_bytes) /
                              (double)(b->dram_read_bytes + b->dram_write_bytes);

    int time_ok = within(v->meas_time_ratio, c->ratio, MB_RPT_TOL_TIME);
    int bytes_ok = counted ? within(v->meas_bytes_ratio, c->ratio, MB_RPT_TOL_BYTES) : 1;
    v->holds = time_ok && bytes_ok ? "holds" : "does not hold";
    v->model_agrees = within(v->meas_time_ratio, v->model_time_ratio, MB_RPT_TOL_TIME) ? "yes" : "no";

    if (a->noisy || b->noisy)
        note_add(v,
                                "NOISY: measured while the machine was busy (contended samples): rerun "
                                "on a quiet machine. ");
    if ((a->drifted || b->drifted))
        note_add(v,
                                "DRIFTED: the host's copy bandwidth or op rate was more than 20%% "
                                "off its calibration during %s (the rows table gives the shares): "
                                "the model's side may be off by as much. ",
                                a->drifted && b->drifted ? "both rows" : "one row");
    if (!counted)
        note_add(v, "time only (no counters). ");
    else if (!bytes_ok)
        note_add(v,
                                "DRAM bytes ratio %.2f, not %.2f. ", v->meas_bytes_ratio, c->ratio);
    if (!within(v->model_time_ratio, c->ratio, MB_RPT_TOL_TIME)) {
        /* why the model departs from the lecture's count here */
        char why[160] = "";
        size_t wl = 0;
        if (a->pred_bound == MB_BOUND_COMPUTE || b->pred_bound == MB_BOUND_COMPUTE)
        {
            int ca = a->pred_bound == MB_BOUND_COMPUTE, cb = b->pred_bound == MB_BOUND_COMPUTE;
            const mb_rpt_demo *dd = rpt_dtype_demo(); /* its series differ in dtype */
            const char *na = dd && !strcmp(a->variant, dd->variant) ? a->dtype : a->plan;
            const char *nb = dd && !strcmp(b->variant, dd->variant) ? b->dtype : b->plan;
            if (ca && cb) wl += (size_t)snprintf(why + wl, sizeof why - wl, "both are compute-bound");
            else wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s is compute-bound", ca ? na : nb);
        }
        if (wl < sizeof why && fabs(v->model_dram_ratio / v->model_bytes_ratio - 1) > 0.1)
            wl += (size_t)snprintf(why + wl, sizeof why - wl, "%sthe cache serves part of the traffic (DRAM ratio %.2f)",
                                   wl ? "; " : "", v->model_dram_ratio);
        double la = a->pred_time_s > 0 ? a->pred_launch_s / a->pred_time_s : 0;
        double lb = b->pred_time_s > 0 ? b->pred_launch_s / b->pred_time_s : 0;
        if (wl < sizeof why && fmax(la, lb) > 0.1)
            wl += (size_t)snprintf(why + wl, sizeof why - wl, "%slaunch overhead is %.0f%% of the time",
                                   wl ? "; " : "", 100 * fmax(la, lb));
        note_add(v,
                                "the model expects %.2fx on this device: %s. ", v->model_time_ratio,
                                wl ? why : "not purely memory-bound");
    }
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
