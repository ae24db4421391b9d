/* mb_test_model.h — a variant's plan at a shape against counts derived by
 * hand: its kernels and the lecture's bytes read and written, for the model
 * tests' tables (test_model_rows.c, test_model_dtypes.c). */
#ifndef MB_TEST_MODEL_H
#define MB_TEST_MODEL_H

#include "membound_model.h"
#include "mb_test.h"

#include <stdio.h>
#include <string.h>

/* The counts of one table row: kernels, and bytes read and written as
 * unit x (n n + r rows + c cols), n = rows x cols. */
typedef struct mb_test_counts {
    int kernels, unit, rn, rr, rc, wn, wr, wc;
} mb_test_counts;

/* Plans variant text (parsed as "caseI.mb") with plan at shape (as
 * mb_shape_parse reads it) on d and checks its kernels and bytes against
 * want; prints the plan's kernels when they differ. */
static inline void mb_test_plan_counts(int i, const char *text, const char *shape, mb_plan_kind plan,
                                       const mb_device *d, mb_test_counts want)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err e;
    mb_shape s;
    mb_estimate est;
    memset(&est, 0, sizeof est);
    char name[32];
    snprintf(name, sizeof name, "case%d.mb", i);
    int rc = mb_shape_parse(shape, &s, &e);
    if (!rc) rc = mb_parse_variant(text, name, MB_F32, &g, &e);
    if (!rc) rc = mb_graph_set_rank(g, s.rank, &e);
    if (!rc) rc = mb_plan_build(g, plan, &p, &e);
    if (!rc) rc = mb_estimate_plan_shape(p, s, d, &est, &e);
    if (rc) fprintf(stderr, "case %d: %s\n", i, e.msg);
    CHECK(rc == MB_OK);
    if (!rc) {
        s = mb_graph_shape_at(g, s); /* a loss over a 2-D tensor: one row of n */
        int64_t n = s.rows * s.cols, kernels = want.kernels;
        int64_t want_r = want.unit * (want.rn * n + want.rr * s.rows + want.rc * s.cols);
        int64_t want_w = want.unit * (want.wn * n + want.wr * s.rows + want.wc * s.cols);
        if (p->n_kernels != kernels || est.total.read_bytes != want_r || est.total.write_bytes != want_w) {
            fprintf(stderr, "case %d (%s, %s): %d kernels, read %lld, write %lld; want %d, %lld, %lld\n", i,
                    mb_plan_name(plan), shape, p->n_kernels, (long long)est.total.read_bytes,
                    (long long)est.total.write_bytes, (int)kernels, (long long)want_r, (long long)want_w);
            for (int k = 0; k < p->n_kernels; k++) fprintf(stderr, "  kernel %d: %s\n", k, p->kernels[k].name);
        }
        CHECK_EQ_I64(p->n_kernels, kernels);
        CHECK_EQ_I64(est.total.read_bytes, want_r);
        CHECK_EQ_I64(est.total.write_bytes, want_w);
    }
    mb_estimate_free(&est);
    mb_plan_free(p);
    mb_graph_free(g);
}

#endif
