/* kernels_exec.c — CPU executors against the float64 reference: every built-in
 * variant x plan x dtype x executor at a small n spanning several tiles (with a
 * partial last tile); sin^2+cos^2 = 1 within 1e-6 in f32; sigmoid3's gradients
 * agree across eager/store/recompute and pass finite differences; a kernel that
 * skips its writes is caught by the poison; an --expr graph with scalars on
 * both sides and every op runs and verifies; every derivative rule passes
 * finite differences through eager, store and recompute; a sin and a cos of
 * one operand are one sincos and repeated subexpressions are evaluated once,
 * and the model's compute cost counts the same. Runs the interpreter
 * (compiled kernels: kernels_jit.c). */
#include "kernels.h"
#include "mb_ops.h"
#include "mb_test.h"

#include <stdlib.h>
#include <string.h>

#define N_SMALL (3 * MB_KERN_TILE + 77)

static int run_case(const char *variant, mb_dtype dt, mb_plan_kind pk, mb_kern_exec ex,
                    mb_kern_tensors *keep)
{
    mb_err err;
    mb_graph *g = NULL;
    if (mb_variant_load(variant, dt, &g, &err)) {
        fprintf(stderr, "%s: %s\n", variant, err.msg);
        return -1;
    }
    int ok = 0;
    if (!mb_plan_supported(g, pk) || g->has_row_ops) { /* row variants: tests/kernels_rows.c */
        mb_graph_free(g);
        return 1; /* nothing to run */
    }
    mb_plan *p = NULL;
    CHECK(mb_plan_build(g, pk, &p, &err) == MB_OK);
    mb_kern_tensors t;
    CHECK(mb_kern_tensors_alloc(p, N_SMALL, 0, &t, &err) == MB_OK);
    /* run twice: the second run must reproduce the first over fresh poison */
    CHECK(mb_kern_run_plan(&t, ex, &err) == MB_OK);
    mb_kern_poison(&t, 3);
    CHECK(mb_kern_run_plan(&t, ex, &err) == MB_OK);
    mb_kern_check ck;
    CHECK(mb_kern_verify(&t, 3, 0, &ck, &err) == MB_OK);
    if (!ck.passed)
        fprintf(stderr, "%s %s %s %s: max rel err %.3g (tol %.3g), %lld bad, %lld poisoned, "
                "first [%lld] got %.9g want %.9g\n", variant, mb_plan_name(pk), mb_dtype_name(dt),
                mb_kern_exec_name(ex), ck.max_rel_err, ck.tol, (long long)ck.bad,
                (long long)ck.poisoned, (long long)ck.first_bad, ck.first_got, ck.first_want);
    CHECK(ck.passed);
    if (g->has_backward) {
        double gerr = 0;
        int gok = 0;
        CHECK(mb_kern_gradcheck(&t, 50, &gerr, &gok, &err) == MB_OK);
        if (!gok) fprintf(stderr, "%s %s: gradcheck %.3g x tol\n", variant, mb_plan_name(pk), gerr);
        CHECK(gok);
    }
    ok = ck.passed;
    if (keep) {
        *keep = t; /* caller frees tensors, plan and graph via plan pointer */
    } else {
        mb_kern_tensors_free(&t);
        mb_plan_free(p);
    }
    mb_graph_free(g);
    return ok;
}

static void every_builtin(void)
{
    char names[64][MB_NAME_MAX];
    int nv = mb_variant_list(names, 64);
    CHECK(nv >= 4);
    int ran = 0;
    for (int v = 0; v < nv && v < 64; v++)
        for (int dt = 0; dt < MB_DTYPE_COUNT; dt++)
            for (int pk = 0; pk < MB_PLAN_COUNT; pk++)
                for (int ex = 0; ex < MB_KERN_EXEC_COUNT; ex++) {
                    int r = run_case(names[v], (mb_dtype)dt, (mb_plan_kind)pk, (mb_kern_exec)ex, NULL);
                    CHECK(r != -1);
                    ran += r == 1;
                }
    CHECK(ran > 0);
}

/* Value of result r of a kept run at element i, as f32. */
static float result_at(const mb_kern_tensors *t, int r, int64_t i)
{
    int node = t->plan->results[r];
    return mb_load_f32(t->data[node], i, t->plan->g->nodes[node].dtype);
}

static void sin2_cos2_is_one(void)
{
    for (int pk = MB_PLAN_EAGER; pk <= MB_PLAN_FUSED; pk++) {
        mb_kern_tensors t;
        CHECK(run_case("sin2_plus_cos2", MB_F32, (mb_plan_kind)pk, MB_KERN_EXEC_AUTO, &t) == 1);
        double worst = 0;
        for (int64_t i = 0; i < t.n; i++) {
            double d = fabs((double)result_at(&t, 0, i) - 1.0);
            if (d > worst) worst = d;
        }
        if (!(worst <= 1e-6)) fprintf(stderr, "sin2+cos2 %s: |y-1| up to %.3g\n",
                                      mb_plan_name((mb_plan_kind)pk), worst);
        CHECK(worst <= 1e-6);
        const mb_plan *p = t.plan;
        mb_kern_tensors_free(&t);
        mb_plan_free((mb_plan *)p);
    }
}

static void sigmoid3_gradients_agree(void)
{
    mb_kern_tensors t[3];
    const mb_plan_kind kinds[3] = {MB_PLAN_EAGER, MB_PLAN_STORE, MB_PLAN_RECOMPUTE};
    for (int k = 0; k < 3; k++)
        CHECK(run_case("sigmoid3", MB_F32, kinds[k], MB_KERN_EXEC_AUTO, &t[k]) == 1);
    /* results: y, then dx; same inputs (same fill seed) in all three */
    CHECK_EQ_I64(t[0].plan->n_results, 2);
    double worst = 0;
    for (int64_t i = 0; i < t[0].n; i++)
        for (int r = 0; r < 2; r++) {
            double a = result_at(&t[0], r, i);
            for (int k = 1; k < 3; k++) {
                double d = fabs(result_at(&t[k], r, i) - a) / fabs(a);
                if (d > worst) worst = d;
            }
        }
    if (!(worst <= 1e-5)) fprintf(stderr, "sigmoid3 plans disagree by %.3g\n", worst);
    CHECK(worst <= 1e-5);
    for (int k = 0; k < 3; k++) {
        const mb_plan *p = t[k].plan;
        mb_kern_tensors_free(&t[k]);
        mb_plan_free((mb_plan *)p);
    }
}

/* Every op of the language, scalars on either side, and a backward pass. */
static void expr_all_ops(void)
{
    const char *exprs[] = {
        "y = sin(x) + cos(x) * tan(x*0.3) - tanh(x) / (1 + exp(x)) + log(x) + sqrt(x)"
        " + rsqrt(x) + sigmoid(x) + relu(x - 1) + abs(1 - x) + gelu(x) + 2**x + x**2.5 - -x",
        "y = 3 / x + x ** -1 + copy(x) * 0.5",
    };
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (int dt = 0; dt < MB_DTYPE_COUNT; dt++)
            for (int pk = MB_PLAN_EAGER; pk <= MB_PLAN_FUSED; pk++) {
                mb_err err;
                mb_graph *g = NULL;
                if (mb_parse_expr(exprs[e], (mb_dtype)dt, &g, &err)) {
                    fprintf(stderr, "expr: %s\n", err.msg);
                    CHECK(0);
                    continue;
                }
                mb_plan *p = NULL;
                CHECK(mb_plan_build(g, (mb_plan_kind)pk, &p, &err) == MB_OK);
                mb_kern_tensors t;
                CHECK(mb_kern_tensors_alloc(p, N_SMALL, 0, &t, &err) == MB_OK);
                CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err) == MB_OK);
                mb_kern_check ck;
                CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
                if (!ck.passed)
                    fprintf(stderr, "expr %zu %s %s: err %.3g, first [%lld] got %.9g want %.9g\n", e,
                            mb_dtype_name((mb_dtype)dt), mb_plan_name((mb_plan_kind)pk),
                            ck.max_rel_err, (long long)ck.first_bad, ck.first_got, ck.first_want);
                CHECK(ck.passed);
                mb_kern_tensors_free(&t);
                mb_plan_free(p);
                mb_graph_free(g);
            }
}

/* Every derivative rule of the model's autodiff, through all three backward
 * plans, against central differences in float64 (one expression per rule,
 * inputs where the op is smooth). */
static void autodiff_every_rule(void)
{
    static const char *const exprs[] = {
        "y = x + w", "y = x - w", "y = 2 - x", "y = x * w", "y = x * x", "y = x / w",
        "y = 3 / x", "y = x / 4", "y = x ** 3", "y = x ** 2.5", "y = 2 ** x", "y = x ** w",
        "y = -x", "y = sin(x)", "y = cos(x)", "y = tan(x * 0.3)", "y = tanh(x)", "y = exp(x)",
        "y = log(x)", "y = sqrt(x)", "y = rsqrt(x)", "y = sigmoid(x)", "y = relu(x - 1)",
        "y = abs(x - 1)", "y = gelu(x)", "y = copy(x) * 2",
        "y = sin(x)**2 + cos(x)", "t = exp(x); y = t * sigmoid(t) + t",
    };
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (int pk = MB_PLAN_EAGER; pk < MB_PLAN_COUNT; pk++) {
            if (pk == MB_PLAN_FUSED || pk == MB_PLAN_ONLINE) continue; /* forward-only plans */
            char text[256];
            snprintf(text, sizeof text, "%s\nbackward", exprs[e]);
            mb_err err;
            mb_graph *g = NULL;
            mb_plan *p = NULL;
            mb_kern_tensors t;
            if (mb_parse_expr(text, MB_F32, &g, &err) || mb_plan_build(g, (mb_plan_kind)pk, &p, &err) ||
                mb_kern_tensors_alloc(p, N_SMALL, 0, &t, &err)) {
                fprintf(stderr, "'%s' %s: %s\n", exprs[e], mb_plan_name((mb_plan_kind)pk), err.msg);
                CHECK(0);
                mb_plan_free(p);
                mb_graph_free(g);
                continue;
            }
            CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err) == MB_OK);
            mb_kern_check ck;
            CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
            double gerr = 0;
            int gok = 0;
            CHECK(mb_kern_gradcheck(&t, 50, &gerr, &gok, &err) == MB_OK);
            if (!ck.passed || !gok)
                fprintf(stderr, "'%s' %s: verify %s, gradcheck %.3g x tol\n", exprs[e],
                        mb_plan_name((mb_plan_kind)pk), ck.passed ? "ok" : "FAILED", gerr);
            CHECK(ck.passed);
            CHECK(gok);
            mb_kern_tensors_free(&t);
            mb_plan_free(p);
            mb_graph_free(g);
        }
}

/* The checks are not blind: an unrun plan is caught by the poison, a
 * perturbed result by the error. */
static void checks_catch_faults(void)
{
    mb_err err;
    mb_graph *g = NULL;
    CHECK(mb_variant_load("gelu_tanh", MB_F32, &g, &err) == MB_OK);
    mb_plan *p = NULL;
    CHECK(mb_plan_build(g, MB_PLAN_FUSED, &p, &err) == MB_OK);
    mb_kern_tensors t;
    CHECK(mb_kern_tensors_alloc(p, N_SMALL, 0, &t, &err) == MB_OK);
    mb_kern_check ck;
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
    CHECK(!ck.passed && ck.poisoned == N_SMALL);
    CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err) == MB_OK);
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
    CHECK(ck.passed);
    float *y = t.data[p->results[0]];
    y[1234] *= 1.001f;
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
    CHECK(!ck.passed && ck.first_bad == 1234);
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* What the blocked executor evaluates: sin/cos pairs once, common
 * subexpressions once; results still verify (f32 and bf16). */
static void evaluates_once(void)
{
    static const struct {
        const char *expr;
        int evaluated, sincos;
    } cases[] = {
        {"y = sin(x)**2 + cos(x)**2", 4, 1},           /* sincos, 2 squares, add */
        {"y = cos(x)**2 + sin(x)**2", 4, 1},           /* cos first */
        {"y = sin(x)*sin(x) + cos(x)", 3, 1},          /* sin twice: once */
        {"y = cos(2*x) + sin(x) + sin(2*x)", 5, 1},    /* 2*x once; cos(2x), sin(2x) paired */
        {"y = sin(x) + cos(w) + cos(x) + sin(x)", 5, 1}, /* cos(w) stays apart */
        {"y = sin(x) + sin(w)", 3, 0},
        {"y = 2*x + x*2", 3, 0},                       /* operand order differs: not common */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int dt = MB_F32; dt <= MB_BF16; dt++) {
            mb_err err;
            mb_graph *g = NULL;
            mb_plan *p = NULL;
            mb_kern_tensors t;
            if (mb_parse_expr(cases[c].expr, (mb_dtype)dt, &g, &err) ||
                mb_plan_build(g, MB_PLAN_FUSED, &p, &err) ||
                mb_kern_tensors_alloc(p, N_SMALL, 0, &t, &err)) {
                fprintf(stderr, "'%s': %s\n", cases[c].expr, err.msg);
                CHECK(0);
                mb_plan_free(p);
                mb_graph_free(g);
                continue;
            }
            mb_kern_eval_info info;
            CHECK(mb_kern_kernel_info(&t, 0, &info, &err) == MB_OK);
            if (info.evaluated != cases[c].evaluated || info.sincos != cases[c].sincos)
                fprintf(stderr, "'%s': evaluates %d ops, %d sincos\n", cases[c].expr, info.evaluated,
                        info.sincos);
            CHECK_EQ_I64(info.evaluated, cases[c].evaluated);
            CHECK_EQ_I64(info.sincos, cases[c].sincos);
            CHECK_EQ_I64(info.compiled, 0);
            /* the model counts the same: every op (and the sincos) at 1e9
             * elements/s makes compute time x 1e9 / n the evaluated count,
             * plus the interpreter's copy of each output out of its tile
             * buffer and of each 16-bit read into one; without a sincos rate
             * (a GPU spec) the pair costs two ops */
            const mb_kernel *K0 = &p->kernels[0];
            int copies = K0->n_writes + (dt == MB_BF16 ? K0->n_reads : 0);
            mb_device dev;
            memset(&dev, 0, sizeof dev);
            dev.mem_bandwidth_gbs = 1000;
            dev.cache_mb = 1;
            dev.fp32_tflops = 1;
            for (int op = 0; op < MB_OP_COUNT; op++) dev.op_geps[op] = 1;
            for (int with_sincos = 1; with_sincos >= 0; with_sincos--) {
                dev.op_sincos_geps = with_sincos;
                mb_estimate est;
                CHECK(mb_estimate_plan(p, N_SMALL, &dev, &est, &err) == MB_OK);
                CHECK_NEAR(est.per_kernel[0].compute_s * 1e9 / N_SMALL,
                           info.evaluated + (with_sincos ? 0 : info.sincos) + copies, 1e-9);
                mb_estimate_free(&est);
            }
            CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_BLOCKED, &err) == MB_OK);
            mb_kern_check ck;
            CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
            CHECK(ck.passed);
            mb_kern_tensors_free(&t);
            mb_plan_free(p);
            mb_graph_free(g);
        }
    mb_err err;
    mb_kern_eval_info info;
    mb_kern_tensors none = {0};
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    CHECK(mb_parse_expr("y = sin(x)", MB_F32, &g, &err) == MB_OK);
    CHECK(mb_plan_build(g, MB_PLAN_FUSED, &p, &err) == MB_OK);
    none.plan = p;
    CHECK(mb_kern_kernel_info(&none, 1, &info, &err) == MB_EINPUT);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* Memory admission: what op-at-a-time really holds after a run is within
 * mb_kern_plan_peak_bytes (allocation rounding and stagger aside), and more
 * than the stored tensors alone (its temporaries). */
static void peak_bytes_cover_temporaries(void)
{
    mb_err err;
    mb_graph *g = NULL;
    CHECK(mb_variant_load("gelu_tanh", MB_F32, &g, &err) == MB_OK);
    mb_plan *p = NULL;
    CHECK(g && mb_plan_build(g, MB_PLAN_FUSED, &p, &err) == MB_OK);
    if (!p) { mb_graph_free(g); return; }
    int64_t stored = mb_kern_plan_bytes(p, N_SMALL);
    int64_t blocked = mb_kern_plan_peak_bytes(p, N_SMALL, MB_KERN_EXEC_BLOCKED);
    int64_t opwise = mb_kern_plan_peak_bytes(p, N_SMALL, MB_KERN_EXEC_OPWISE);
    CHECK_EQ_I64(blocked, stored);
    CHECK(opwise > stored);
    mb_kern_tensors t;
    CHECK(mb_kern_tensors_alloc(p, N_SMALL, 0, &t, &err) == MB_OK);
    CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_OPWISE, &err) == MB_OK);
    int n_arrays = g->n_nodes; /* each array rounds up by < 64 B plus its stagger */
    int64_t slack = (int64_t)n_arrays * (64 + 64 * 17 * 64);
    CHECK((int64_t)t.alloc_bytes > stored);
    CHECK((int64_t)t.alloc_bytes <= opwise + slack);
    CHECK((int64_t)t.alloc_bytes >= opwise);
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
}

int main(void)
{
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME")); /* as the CLI does */
    peak_bytes_cover_temporaries();
    mb_kern_jit_configure(MB_KERN_JIT_OFF, NULL, NULL);
    evaluates_once();
    every_builtin();
    sin2_cos2_is_one();
    sigmoid3_gradients_agree();
    expr_all_ops();
    autodiff_every_rule();
    checks_catch_faults();
    return mb_test_done();
}
