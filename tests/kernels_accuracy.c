/* kernels_accuracy.c — the check against the float64 reference is faithful to
 * f32: an expression that overflows in f32 where float64 does not, and one the
 * input range makes ill-conditioned in f32, verify as "inaccurate" (not
 * failed), a well-conditioned one as "ok"; and a kernel bug still fails:
 * each expression's mutants (an op swapped, a term dropped, a constant
 * changed) are run and their results checked against the original's
 * reference, and every one must fail, under both plans and both
 * interpreters; with a backward pass the gradient check passes too. The JIT is off (kernels_jit.c covers compiled kernels). */
#include "kernels.h"
#include "mb_test.h"

#include <string.h>

#define N_ELEMS (8 * MB_KERN_TILE + 77)
#define MAX_MUTANTS 5

typedef struct acc_case {
    const char *expr;
    mb_kern_accuracy want;
    const char *mutants[MAX_MUTANTS];
} acc_case;

static const acc_case cases[] = {
    {"y = exp(((x + x - 2.041)**3)**2)", MB_KERN_ACC_INACCURATE,
     {"y = exp(((x - 2.041)**3)**2)", "y = exp(((x + x - 2.04)**3)**2)",
      "y = sin(((x + x - 2.041)**3)**2)", "y = exp(((x + x + 2.041)**3)**2)", NULL}},
    {"y = sin(exp(x**2))", MB_KERN_ACC_INACCURATE,
     {"y = cos(exp(x**2))", "y = sin(exp(x))", "y = sin(exp(x**3))", "y = sin(exp(x**2) + 0.001)",
      "y = sin(exp(x**2 * 1.001))"}},
    {"y = sin(x) * x + 0.5", MB_KERN_ACC_OK,
     {"y = cos(x) * x + 0.5", "y = sin(x) * x", "y = sin(x) * x + 0.501", "y = sin(x) * x - 0.5", NULL}},
    {"y = x * sigmoid(x) + tanh(x) * 0.25", MB_KERN_ACC_OK,
     {"y = x * sigmoid(x)", "y = x * sigmoid(x) + tanh(x) * 0.26", "y = x * sigmoid(x) + sin(x) * 0.25",
      "y = x * tanh(x) + tanh(x) * 0.25", NULL}},
};

/* One expression run: its graph, plan and tensors. */
typedef struct expr_run {
    mb_graph *g;
    mb_plan *p;
    mb_kern_tensors t;
} expr_run;

/* Parses expr, builds plan pk and runs it on tensors with input x copied
 * from x_from (when non-NULL). 0 on failure (reported). */
static int run_expr(const char *expr, mb_plan_kind pk, mb_kern_exec ex, const void *x_from, expr_run *r)
{
    mb_err err;
    mb_graph *g = NULL;
    mb_kern_tensors *t = &r->t;
    mb_plan *p = NULL;
    if (mb_parse_expr(expr, MB_F32, &g, &err) || mb_plan_build(g, pk, &p, &err) ||
        mb_kern_tensors_alloc(p, N_ELEMS, 0, t, &err)) {
        fprintf(stderr, "'%s': %s\n", expr, err.msg);
        CHECK(0);
        if (p) mb_plan_free(p);
        if (g) mb_graph_free(g);
        return 0;
    }
    if (x_from) {
        CHECK_EQ_I64(p->g->n_inputs, 1);
        memcpy(t->data[p->g->inputs[0]], x_from, N_ELEMS * sizeof(float));
    }
    if (mb_kern_run_plan(t, ex, &err)) {
        fprintf(stderr, "'%s': %s\n", expr, err.msg);
        CHECK(0);
    }
    r->g = g;
    r->p = p;
    return 1;
}

static void free_run(expr_run *r)
{
    mb_kern_tensors_free(&r->t);
    mb_plan_free(r->p);
    mb_graph_free(r->g);
}

static void one_case(const acc_case *c, mb_plan_kind pk, mb_kern_exec ex)
{
    mb_err err;
    expr_run run;
    if (!run_expr(c->expr, pk, ex, NULL, &run)) return;
    mb_kern_tensors t = run.t;
    const mb_graph *g = run.p->g;
    mb_kern_check ck;
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
    mb_kern_accuracy got = mb_kern_check_accuracy(&ck);
    char note[256];
    mb_kern_check_note(&ck, note, sizeof note);
    if (got != c->want)
        fprintf(stderr, "'%s' %s %s: %s (want %s): %lld bad, %lld inaccurate, first [%lld] got %.9g "
                "want %.9g; %s\n", c->expr, mb_plan_name(pk), mb_kern_exec_name(ex),
                mb_kern_accuracy_name(got), mb_kern_accuracy_name(c->want), (long long)ck.bad,
                (long long)ck.inaccurate, (long long)ck.first_bad, ck.first_got, ck.first_want, note);
    CHECK(got == c->want);
    CHECK(ck.passed);
    CHECK(isfinite(ck.max_rel_err));
    CHECK((got == MB_KERN_ACC_INACCURATE) == !strncmp(note, "inaccurate: ", 12));
    /* each mutant's result in place of the original's: the check must fail */
    int y = g->outputs[0];
    for (int m = 0; m < MAX_MUTANTS && c->mutants[m]; m++) {
        expr_run mu;
        if (!run_expr(c->mutants[m], pk, ex, t.data[g->inputs[0]], &mu)) continue;
        memcpy(t.data[y], mu.t.data[mu.p->g->outputs[0]], N_ELEMS * sizeof(float));
        CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
        if (ck.passed)
            fprintf(stderr, "mutant '%s' of '%s' (%s %s) passed: %s, %lld inaccurate, max err %.3g\n",
                    c->mutants[m], c->expr, mb_plan_name(pk), mb_kern_exec_name(ex),
                    mb_kern_accuracy_name(mb_kern_check_accuracy(&ck)), (long long)ck.inaccurate,
                    ck.max_rel_err);
        CHECK(!ck.passed && ck.bad > 0);
        CHECK(mb_kern_check_accuracy(&ck) == MB_KERN_ACC_FAILED);
        free_run(&mu);
    }
    free_run(&run);
}

/* With a backward pass: the results verify as inaccurate and the
 * finite-difference gradient check passes, leaving out the elements whose
 * forward value overflows f32 (float64's inf - inf there judges nothing). */
static void backward_in_range(void)
{
    for (int c = 0; c < 2; c++) {
        char text[128];
        snprintf(text, sizeof text, "%s\nbackward", cases[c].expr);
        for (int pk = MB_PLAN_EAGER; pk <= MB_PLAN_RECOMPUTE; pk++) {
            if (pk == MB_PLAN_FUSED) continue; /* no backward plan */
            expr_run run;
            if (!run_expr(text, (mb_plan_kind)pk, MB_KERN_EXEC_AUTO, NULL, &run)) continue;
            mb_err err;
            mb_kern_check ck;
            CHECK(mb_kern_verify(&run.t, 0, 0, &ck, &err) == MB_OK);
            CHECK(mb_kern_check_accuracy(&ck) == MB_KERN_ACC_INACCURATE);
            double gerr = 0;
            int gok = 0;
            CHECK(mb_kern_gradcheck(&run.t, 64, &gerr, &gok, &err) == MB_OK);
            if (!gok) fprintf(stderr, "'%s' %s: gradcheck %.3g x tol\n", cases[c].expr,
                              mb_plan_name((mb_plan_kind)pk), gerr);
            CHECK(gok && isfinite(gerr));
            free_run(&run);
        }
    }
}

int main(void)
{
    mb_kern_jit_configure(MB_KERN_JIT_OFF, NULL, NULL);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int pk = MB_PLAN_EAGER; pk <= MB_PLAN_FUSED; pk++)
            for (int ex = MB_KERN_EXEC_OPWISE; ex <= MB_KERN_EXEC_BLOCKED; ex++)
                one_case(&cases[c], (mb_plan_kind)pk, (mb_kern_exec)ex);
    backward_in_range();
    /* the names the CSV's accuracy column writes */
    CHECK(!strcmp(mb_kern_accuracy_name(MB_KERN_ACC_OK), "ok"));
    CHECK(!strcmp(mb_kern_accuracy_name(MB_KERN_ACC_INACCURATE), "inaccurate"));
    CHECK(!strcmp(mb_kern_accuracy_name(MB_KERN_ACC_FAILED), "failed"));
    return mb_test_done();
}
