/* report_row_claims.c — the normalization family's claims (reports/lecture.c)
 * against the model: at each claim's shape on h100-sxm, the count that
 * judges it (the lecture's read + write bytes, or the cache-aware DRAM
 * bytes) of the slow plan over the fast one is the claim's ratio. */
#include "report.h"
#include "mb_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double count_of(const char *variant, const char *plan, mb_shape s, const mb_device *d, int dram)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_plan_kind k;
    mb_err e;
    mb_estimate est;
    memset(&est, 0, sizeof est);
    double v = NAN;
    if (!mb_plan_parse(plan, &k) && !mb_variant_load(variant, MB_F32, &g, &e) && !mb_plan_build(g, k, &p, &e) &&
        !mb_estimate_plan_shape(p, s, d, &est, &e))
        v = dram ? (double)(est.total.dram_read_bytes + est.total.dram_write_bytes)
                 : (double)(est.total.read_bytes + est.total.write_bytes);
    else
        fprintf(stderr, "%s %s: %s\n", variant, plan, e.msg);
    mb_estimate_free(&est);
    mb_plan_free(p);
    mb_graph_free(g);
    return v;
}

int main(void)
{
    mb_device d;
    mb_err e;
    CHECK(mb_device_find("h100-sxm", &d, &e) == MB_OK);
    for (int i = 0; i < MB_RPT_N_ROW_CLAIMS; i++) {
        const mb_rpt_row_claim *c = &mb_rpt_row_claims[i];
        mb_shape s;
        CHECK(mb_shape_parse(c->shape, &s, &e) == MB_OK && mb_shape_elems(s) == c->n);
        int dram = !strcmp(c->judged_by, "DRAM count");
        CHECK(dram || !strcmp(c->judged_by, "lecture count"));
        double r = count_of(c->variant, c->slow, s, &d, dram) / count_of(c->variant, c->fast, s, &d, dram);
        if (!(fabs(r / c->ratio - 1) < 0.01)) fprintf(stderr, "%s: model %.4f, claim %.4f\n", c->text, r, c->ratio);
        CHECK(fabs(r / c->ratio - 1) < 0.01);
        /* where the DRAM count judges, the two counts agree (re-reads leave the L2) */
        if (dram) {
            double lr = count_of(c->variant, c->slow, s, &d, 0) / count_of(c->variant, c->fast, s, &d, 0);
            CHECK(fabs(lr / r - 1) < 0.01);
        }
    }
    return mb_test_done();
}
