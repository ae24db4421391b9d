/* kernels_rows_bwd.c — the backward of row operations: the eager plan's
 * kernels as torch 1.13's profiler lists them on the CPU (sum: an expand,
 * copied only as an input's gradient; mean: one div; amax: eq, sum, div,
 * mul; softmax, log_softmax, layer_norm, rms_norm: one kernel), the store and
 * recompute plans' traffic and saved sets at 4096x1024 (counted by hand),
 * a [rows, 1] statistic saved by the time objective where recomputing it
 * costs passes, amax's ties sharing the gradient evenly, every plan and
 * executor run against the float64 reference and finite differences (the
 * gradients of [cols] weights and biases too: sums over the rows, colsum),
 * a wrong weight gradient caught, and a 1-D variant differentiated again at
 * a 2-D shape. */
#include "kernels.h"
#include "membound_model.h"
#include "mb_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define X_ "input x [rows, cols]\n"
#define W_ "input w [cols]\n"
#define WB_ "input w [cols]\ninput b [cols]\n"
#define BWD "output y\nbackward\n"

static mb_graph *parse(const char *text)
{
    mb_graph *g = NULL;
    mb_err e;
    int rc = mb_parse_variant(text, "<test>", MB_F32, &g, &e);
    if (rc) fprintf(stderr, "parse: %s\n", e.msg);
    CHECK(rc == MB_OK);
    return g;
}

/* The eager plan's backward kernels, by name, space-separated. */
static void bwd_kernels(const mb_plan *p, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < p->n_kernels; k++)
        if (p->kernels[k].is_backward)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "", p->kernels[k].name);
}

static void eager_kernels(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        /* the expand is a view; AccumulateGrad copies it into x's gradient */
        {X_ "y = x.sum(-1, keepdim=True)\n" BWD, "copy"},
        {X_ "y = x.sum(-1)\n" BWD, "copy"},
        {X_ "y = x.mean(-1, keepdim=True)\n" BWD, "div"},
        {X_ "y = x.amax(-1, keepdim=True)\n" BWD, "eq sum div mul"},
        {X_ "y = softmax(x, -1)\n" BWD, "_softmax_backward_data"},
        {X_ "y = log_softmax(x, -1)\n" BWD, "_log_softmax_backward_data"},
        {X_ "y = layer_norm(x)\n" BWD, "native_layer_norm_backward"},
        {X_ "y = rms_norm(x, eps=1e-6)\n" BWD, "rms_norm_backward"},
        /* x minus its row mean: sub's gradient of the [rows, 1] operand is neg, then
         * the sum over the row (autograd's sum_to); mean's one div; the accumulation */
        {X_ "m = x.mean(-1, keepdim=True)\ny = x - m\n" BWD, "neg sum div add_grad"},
        /* a [cols] weight and bias, as layer_norm_kernel.cu on CUDA: dx, then
         * GammaBetaBackward (dw and db in one kernel) */
        {X_ WB_ "y = layer_norm(x, w, b)\n" BWD, "native_layer_norm_backward gamma_beta_backward"},
        {X_ W_ "y = rms_norm(x, w, eps=1e-6)\n" BWD, "rms_norm_backward gamma_beta_backward"},
        /* written out: autograd's sum_to, one sum(dim=0) kernel per [cols] operand */
        {X_ WB_ "y = x * w + b\n" BWD, "colsum mul mul colsum"},
        /* a weight used twice: two sums over the rows, then the accumulation */
        {X_ W_ "y = tanh(x * w) * w\n" BWD, "mul mul colsum tanh_backward mul mul colsum add_grad"},
        /* a computed [cols] tensor: exp's backward (grad * result) on [cols] */
        {X_ W_ "y = x * exp(w)\n" BWD, "mul mul colsum mul"},
        /* w's gradient held as a row value: expanded (a view) in the sum over the
         * rows; as autograd's engine, a function's sums first, then the accumulations */
        {X_ W_ "y = (x + w).sum(-1, keepdim=True) * x\n" BWD, "mul mul sum colsum add_grad"},
        {X_ WB_ "y = layer_norm(x, w, b) * x\n" BWD,
         "mul mul native_layer_norm_backward gamma_beta_backward add_grad"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mb_graph *g = parse(cases[i].text);
        mb_plan *p = NULL;
        mb_err e;
        if (!g) continue;
        CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
        char got[512];
        bwd_kernels(p, got, sizeof got);
        if (strcmp(got, cases[i].want)) fprintf(stderr, "case %zu: eager backward '%s', want '%s'\n", i, got, cases[i].want);
        CHECK(!strcmp(got, cases[i].want));
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* Traffic (lecture count) and the saved set of store and recompute at
 * 4096x1024, in full tensors n and row statistics R. */
static void plans_at_shape(void)
{
    static const struct {
        const char *variant;
        mb_plan_kind plan;
        int tn, tr; /* traffic: tn n + tr R elements */
        int sn, sr; /* saved: sn n + sr R elements */
        int tc, sc; /* and tc, sc C elements (weights, their gradients) */
    } cases[] = {
        /* fwd x -> y, m, e, s: 3n + 2R; bwd g, x, e, m, s -> gx: 4n + 2R */
        {"softmax_bwd", MB_PLAN_STORE, 7, 4, 2, 2, 0, 0},
        /* fwd x -> y: 2n; bwd g, x -> gx: 3n */
        {"softmax_bwd", MB_PLAN_RECOMPUTE, 5, 0, 1, 0, 0, 0},
        {"softmax_bwd", MB_PLAN_OPTIMAL, 5, 0, 1, 0, 0, 0},
        /* fwd x -> y, d, rsqrt: 3n + R; bwd g, d, rsqrt -> gx: 3n + R */
        {"layernorm_bwd", MB_PLAN_STORE, 6, 2, 1, 1, 0, 0},
        {"layernorm_bwd", MB_PLAN_RECOMPUTE, 5, 0, 1, 0, 0, 0},
        {"layernorm_bwd", MB_PLAN_OPTIMAL, 5, 0, 1, 0, 0, 0},
        /* fwd x -> y, rsqrt: 2n + R; bwd g, x, rsqrt -> gx: 3n + R */
        {"rmsnorm_bwd", MB_PLAN_STORE, 5, 2, 1, 1, 0, 0},
        {"rmsnorm_bwd", MB_PLAN_RECOMPUTE, 5, 0, 1, 0, 0, 0},
        {"rmsnorm_bwd", MB_PLAN_OPTIMAL, 5, 0, 1, 0, 0, 0},
        /* with [cols] weight w and bias b (tc, sc: C elements); a column kernel
         * after the fused backward reads g and g x_hat (written by the fused
         * backward) and writes dw, db. fwd x, w, b -> y, d, d rsqrt, rsqrt:
         * 4n + R + 2C; bwd g, d, d rsqrt, rsqrt, w -> gx, g d rsqrt: 5n + R + C;
         * columns g, g d rsqrt -> dw, db: 2n + 2C */
        {"layernorm_affine_bwd", MB_PLAN_STORE, 11, 2, 2, 1, 5, 1},
        /* fwd x, w, b -> y: 2n + 2C; bwd g, x, w -> gx, g x_hat: 4n + C; columns 2n + 2C */
        {"layernorm_affine_bwd", MB_PLAN_RECOMPUTE, 8, 0, 1, 0, 5, 1},
        {"layernorm_affine_bwd", MB_PLAN_OPTIMAL, 8, 0, 1, 0, 5, 1},
        /* fwd x, w -> y, x rsqrt, rsqrt: 3n + R + C; bwd g, x, x rsqrt, rsqrt, w
         * -> gx, g x rsqrt: 5n + R + C; columns g x rsqrt -> dw: n + C */
        {"rmsnorm_affine_bwd", MB_PLAN_STORE, 9, 2, 2, 1, 3, 1},
        /* fwd x, w -> y: 2n + C; bwd g, x, w -> gx, g x_hat: 4n + C; columns n + C */
        {"rmsnorm_affine_bwd", MB_PLAN_RECOMPUTE, 7, 0, 1, 0, 3, 1},
        {"rmsnorm_affine_bwd", MB_PLAN_OPTIMAL, 7, 0, 1, 0, 3, 1},
    };
    const mb_shape s = {2, 4096, 1024, 0};
    mb_device d;
    mb_err e;
    CHECK(mb_device_find("h100-sxm", &d, &e) == MB_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].plan == MB_PLAN_OPTIMAL && !mb_plan_optimal_available()) continue;
        mb_graph *g = NULL;
        mb_plan *p = NULL;
        mb_estimate est;
        CHECK(mb_variant_load(cases[i].variant, MB_F32, &g, &e) == MB_OK);
        if (!g) continue;
        CHECK(mb_plan_build(g, cases[i].plan, &p, &e) == MB_OK);
        CHECK(mb_estimate_plan_shape(p, s, &d, &est, &e) == MB_OK);
        int64_t n = s.rows * s.cols;
        int64_t want_t = 4 * (cases[i].tn * n + cases[i].tr * s.rows + cases[i].tc * s.cols),
                want_s = 4 * (cases[i].sn * n + cases[i].sr * s.rows + cases[i].sc * s.cols);
        int64_t got_t = est.total.read_bytes + est.total.write_bytes;
        if (got_t != want_t || est.saved_bytes != want_s)
            fprintf(stderr, "%s %s: traffic %lld saved %lld; want %lld, %lld\n", cases[i].variant,
                    mb_plan_name(cases[i].plan), (long long)got_t, (long long)est.saved_bytes, (long long)want_t,
                    (long long)want_s);
        CHECK_EQ_I64(got_t, want_t);
        CHECK_EQ_I64(est.saved_bytes, want_s);
        mb_estimate_free(&est);
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* Where a row does not fit on chip (64x2^22 on an H100), recomputing the
 * max and the sum costs the backward two passes over x: the time objective
 * saves the two [rows, 1] statistics beside x (11n against recompute's 13n
 * by the DRAM count); the bytes objective, which counts each tensor once,
 * keeps x alone. */
static void statistics_saved(void)
{
    if (!mb_plan_optimal_available()) return;
    mb_graph *g = NULL;
    mb_plan *t = NULL, *b = NULL, *r = NULL;
    mb_err e;
    mb_device d;
    const mb_shape s = {2, 64, (int64_t)1 << 22, 0};
    CHECK(mb_device_find("h100-sxm", &d, &e) == MB_OK);
    CHECK(mb_variant_load("softmax_bwd", MB_F32, &g, &e) == MB_OK);
    if (!g) return;
    CHECK(mb_plan_build_optimal_shape(g, MB_OBJECTIVE_TIME, s, &d, &t, &e) == MB_OK);
    CHECK(mb_plan_build_optimal_shape(g, MB_OBJECTIVE_BYTES, s, &d, &b, &e) == MB_OK);
    CHECK(mb_plan_build(g, MB_PLAN_RECOMPUTE, &r, &e) == MB_OK);
    if (t && b && r) {
        int rows_saved = 0;
        for (int i = 0; i < t->n_saved; i++) rows_saved += t->g->nodes[t->saved[i]].shape == MB_SHC_ROW;
        CHECK_EQ_I64(rows_saved, 2);
        CHECK_EQ_I64(b->n_saved, 1);
        mb_estimate et, er;
        CHECK(mb_estimate_plan_shape(t, s, &d, &et, &e) == MB_OK);
        CHECK(mb_estimate_plan_shape(r, s, &d, &er, &e) == MB_OK);
        int64_t n = s.rows * s.cols;
        CHECK_EQ_I64((et.total.dram_read_bytes + et.total.dram_write_bytes) / (4 * n), 11);
        CHECK_EQ_I64((er.total.dram_read_bytes + er.total.dram_write_bytes) / (4 * n), 13);
        mb_estimate_free(&et);
        mb_estimate_free(&er);
    }
    mb_plan_free(t);
    mb_plan_free(b);
    mb_plan_free(r);
    mb_graph_free(g);
}

/* Every plan on both executors against the float64 reference, and the
 * reference's gradients against finite differences. */
static void runs(void)
{
    static const char *const texts[] = {
        X_ "y = x.sum(-1, keepdim=True)\n" BWD,
        X_ "y = exp(x) * x.mean(-1)\n" BWD, /* [rows] against [rows, cols] as PyTorch refuses: */
        X_ "y = x.amax(-1, keepdim=True)\n" BWD,
        X_ "y = softmax(x, -1)\n" BWD,
        X_ "y = log_softmax(x, -1) * 0.5\n" BWD,
        X_ "y = layer_norm(x, eps=1e-5)\n" BWD,
        X_ "y = rms_norm(x, eps=1e-6) * 2.0\n" BWD,
        X_ "input r [rows, 1]\ny = tanh(x * r) - (x + r).mean(-1, keepdim=True)\n" BWD,
        /* [cols] weights and biases: their gradients are sums over the rows */
        X_ WB_ "y = layer_norm(x, w, b)\n" BWD,
        X_ W_ "y = rms_norm(x, w, eps=1e-6)\n" BWD,
        X_ WB_ "y = tanh(x * w + b) * w\n" BWD,
        X_ W_ "y = x * exp(w) + (x * w).sum(-1, keepdim=True)\n" BWD,
        X_ W_ "input r [rows, 1]\ny = layer_norm(x * w + r) * sigmoid(w)\n" BWD,
        /* w's gradient a row value (sum's backward, an expand): summed over the rows */
        X_ W_ "y = x * (x + w).sum(-1, keepdim=True)\n" BWD,
        /* dy given in bf16: autograd's engine casts it to y's f32 first, a kernel of its own */
        X_ W_ "y = rms_norm(x, w, eps=1e-6) * 2.0\noutput y\nbackward grad bf16\n",
    };
    static const char *const variants[] = {"softmax_bwd", "layernorm_bwd", "rmsnorm_bwd", "layernorm_affine_bwd",
                                           "rmsnorm_affine_bwd"};
    /* the third: --colsum partial's blocks (3 of 37 rows, uneven) */
    static const mb_shape shapes[] = {{2, 5, 3 * MB_KERN_TILE + 77, 0}, {2, 2, 300000, 0}, {2, 37, 301, 3}};
    const int nt = (int)(sizeof texts / sizeof texts[0]), nv = (int)(sizeof variants / sizeof variants[0]);
    int n_split = 0, n_reread = 0;
    /* the second round: colsum partial; the third: colsum reread */
    for (int part = 0; part < MB_COLSUM_COUNT; part++)
    for (int i = 0; i < nt + nv; i++) {
        mb_graph *g = NULL;
        mb_err e;
        int rc = i < nt ? mb_parse_variant(texts[i], "<test>", MB_F32, &g, &e)
                        : mb_variant_load(variants[i - nt], MB_F32, &g, &e);
        if (i == 1) { /* [rows] does not broadcast against [rows, cols] */
            CHECK(rc == MB_EINPUT && strstr(e.msg, "broadcast"));
            continue;
        }
        if (rc) fprintf(stderr, "case %d: %s\n", i, e.msg);
        CHECK(rc == MB_OK);
        if (rc) continue;
        g->colsum = (mb_colsum)part;
        for (int k = MB_PLAN_EAGER; k < MB_PLAN_COUNT; k++) {
            if (!mb_plan_supported(g, (mb_plan_kind)k)) continue;
            mb_plan *p = NULL;
            CHECK(mb_plan_build(g, (mb_plan_kind)k, &p, &e) == MB_OK);
            int split = 0;
            for (int v = 0; p && v < p->g->n_nodes; v++) split += p->g->nodes[v].shape == MB_SHC_PART;
            /* partial sums in the fused backward plans only */
            CHECK(!split || (part == MB_COLSUM_PARTIAL && k != MB_PLAN_EAGER));
            n_split += split;
            int cols = 0, casts = 0; /* a column kernel: reread's differs from written's */
            for (int q = 0; p && q < p->n_kernels; q++) {
                cols += strstr(p->kernels[q].name, "_colsum") != NULL;
                casts += !strcmp(p->kernels[q].name, MB_KERNEL_GRAD_CAST);
            }
            CHECK(casts == (i < nt && strstr(texts[i], "backward grad") != NULL));
            const int reread = part == MB_COLSUM_REREAD && cols && k != MB_PLAN_EAGER;
            n_reread += reread;
            if (part && !split && !reread) { /* the same plan as the first round's */
                mb_plan_free(p);
                continue;
            }
            for (int si = 0; si < 3 && p; si++) {
                /* long rows (multi-pass): softmax_bwd's fused plans, the built-in norms' split ones */
                if (si == 1 && ((i != nt && !(part && i > nt)) || k == MB_PLAN_EAGER)) continue;
                if (si == 2 && part != MB_COLSUM_PARTIAL) continue;
                for (int ex = 0; ex < MB_KERN_EXEC_COUNT; ex++) {
                    mb_kern_tensors t;
                    CHECK(mb_kern_tensors_alloc_shape(p, shapes[si], 0, &t, &e) == MB_OK);
                    CHECK(mb_kern_run_plan(&t, (mb_kern_exec)ex, &e) == MB_OK);
                    mb_kern_check ck;
                    CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK);
                    double gerr = 0;
                    int gok = 0;
                    CHECK(mb_kern_gradcheck(&t, 24, &gerr, &gok, &e) == MB_OK);
                    if (!ck.passed || !gok)
                        fprintf(stderr, "case %d plan %s%s exec %d shape %d: max rel err %.3g (tol %.3g), "
                                "gradcheck %.3g x tol\n", i, mb_plan_name((mb_plan_kind)k), part ? (reread ? " (colsum reread)" : " (colsum partial)") : "", ex, si, ck.max_rel_err,
                                ck.tol, gerr);
                    CHECK(ck.passed);
                    CHECK(gok);
                    mb_kern_tensors_free(&t);
                }
            }
            mb_plan_free(p);
        }
        mb_graph_free(g);
    }
    if (n_reread != 27) fprintf(stderr, "plans rereading: %d\n", n_reread);
    CHECK(n_reread == 27); /* store, recompute, optimal of the nine weighted cases */
    if (n_split != 42) fprintf(stderr, "colsums split: %d\n", n_split);
    CHECK(n_split == 42); /* store, recompute, optimal: 14 colsums of the nine weighted cases (a weight read
                             twice sums twice; one reaching a row value, an expand, stays written) */
}

/* amax(x) with the row's max at two columns: each gets half the gradient
 * (PyTorch's amax; max(dim) would give one of them all of it). */
static void amax_ties(void)
{
    mb_graph *g = parse(X_ "y = x.amax(-1, keepdim=True)\n" BWD);
    mb_plan *p = NULL;
    mb_err e;
    if (!g) return;
    CHECK(mb_plan_build(g, MB_PLAN_STORE, &p, &e) == MB_OK);
    mb_kern_tensors t;
    const mb_shape s = {2, 3, 8, 0};
    CHECK(mb_kern_tensors_alloc_shape(p, s, 0, &t, &e) == MB_OK);
    float *x = t.data[g->inputs[0]], *gy = t.data[g->grad_outputs[0]];
    for (int i = 0; i < 24; i++) x[i] = (float)(i % 8) * 0.25f;
    x[2] = x[5] = 3.0f; /* row 0: two maxima */
    for (int r = 0; r < 3; r++) gy[r] = 1.0f + (float)r;
    CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &e) == MB_OK);
    const float *gx = t.data[g->grad_inputs[0]];
    for (int c = 0; c < 8; c++) CHECK(gx[c] == (c == 2 || c == 5 ? 0.5f : 0.0f));
    for (int c = 0; c < 8; c++) CHECK(gx[8 + c] == (c == 7 ? 2.0f : 0.0f));
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* A weight's gradient that is wrong in one column, and one left unwritten,
 * fail the check against the float64 reference; bf16 sums accumulate in f32
 * (4096 rows of bf16 terms, summed in bf16, would be off by far more than
 * bf16's tolerance). */
static void weight_gradient_checked(void)
{
    mb_graph *g = parse(X_ WB_ "y = x * w + b\n" BWD);
    if (!g) return;
    mb_err e;
    for (int k = MB_PLAN_EAGER; k <= MB_PLAN_RECOMPUTE; k += MB_PLAN_RECOMPUTE - MB_PLAN_EAGER) {
        mb_plan *p = NULL;
        CHECK(mb_plan_build(g, (mb_plan_kind)k, &p, &e) == MB_OK);
        mb_kern_tensors t;
        CHECK(mb_kern_tensors_alloc_shape(p, (mb_shape){2, 7, 33, 0}, 0, &t, &e) == MB_OK);
        CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &e) == MB_OK);
        mb_kern_check ck;
        CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK && ck.passed);
        float *gw = t.data[g->grad_inputs[1]];
        gw[5] *= 1.01f;
        CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK && !ck.passed && ck.bad == 1 && ck.first_bad == 5);
        gw[5] = mb_kern_poison_value(0);
        CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK && !ck.passed && ck.poisoned == 1);
        mb_kern_tensors_free(&t);
        mb_plan_free(p);
    }
    mb_graph_free(g);
    mb_graph *h = NULL;
    CHECK(mb_parse_variant(X_ WB_ "y = x * w + b\n" BWD, "<test>", MB_BF16, &h, &e) == MB_OK);
    mb_plan *p = NULL;
    if (h) CHECK(mb_plan_build(h, MB_PLAN_STORE, &p, &e) == MB_OK);
    mb_kern_tensors t;
    if (p && mb_kern_tensors_alloc_shape(p, (mb_shape){2, 4096, 8, 0}, 0, &t, &e) == MB_OK) {
        CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &e) == MB_OK);
        mb_kern_check ck;
        CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK);
        if (!ck.passed) fprintf(stderr, "bf16 weight gradients: max rel err %.3g (tol %.3g)\n", ck.max_rel_err, ck.tol);
        CHECK(ck.passed && ck.max_rel_err < 1e-2);
        mb_kern_tensors_free(&t);
    }
    mb_plan_free(p);
    mb_graph_free(h);
}

static void errors_and_rank(void)
{
    mb_graph *g = NULL;
    mb_err e;
    /* a [cols] weight's gradient: a sum over the rows where the refusal was */
    g = parse(X_ W_ "y = layer_norm(x, w)\n" BWD);
    int cols = 0;
    for (int i = g ? g->n_forward : 0; g && i < g->n_nodes; i++) cols += g->nodes[i].op == MB_OP_COLSUM;
    CHECK_EQ_I64(cols, 1);
    if (g) CHECK_EQ_I64(g->nodes[g->grad_inputs[1]].shape, MB_SHC_COL);
    mb_graph_free(g);
    /* a 1-D variant at a 2-D shape: differentiated again, row statistics [rows, 1] */
    g = parse("input x\ny = x / x.sum(-1, keepdim=True)\n" BWD);
    if (!g) return;
    CHECK(mb_graph_set_rank(g, 2, &e) == MB_OK);
    int rows = 0;
    for (int i = g->n_forward; i < g->n_nodes; i++) rows += g->nodes[i].shape == MB_SHC_ROW;
    CHECK(rows > 0);
    mb_plan *p = NULL;
    CHECK(mb_plan_build(g, MB_PLAN_RECOMPUTE, &p, &e) == MB_OK);
    mb_kern_tensors t;
    CHECK(mb_kern_tensors_alloc_shape(p, (mb_shape){2, 3, 100, 0}, 0, &t, &e) == MB_OK);
    CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &e) == MB_OK);
    mb_kern_check ck;
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK && ck.passed);
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
}

int main(void)
{
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME"));
    eager_kernels();
    plans_at_shape();
    statistics_saved();
    runs();
    amax_ties();
    weight_gradient_checked();
    errors_and_rank();
    return mb_test_done();
}
