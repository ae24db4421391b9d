/* kernels_jit_rows.c — compiled row kernels (kernels/jit_rows.c): every row
 * operation, hand-written softmax, LayerNorm and RMSNorm, online sums, row
 * values and [cols] operands, in the eager, fused and online plans and the
 * backward variants, at rows kept in the core's cache (one pass), rows
 * beyond it (the passes re-read), rows shorter than a vector and with a
 * partial last vector; each compiled (the model's rule agreeing) and
 * verified against float64; the kept values' rule held on the generated
 * source; bf16 and an op without a vector form interpreted. Skips (77)
 * where the build has no SLEEF vector ISA. */
#define _GNU_SOURCE /* mkdtemp */
#include "kernels_int.h"
#include "mb_test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define X_ "input x [rows, cols]\n"
#define XW X_ "input w [cols]\n"
static const char *const texts[] = {
    X_ "y = x.sum(-1, keepdim=True) * 2",
    X_ "y = x - mean(x, -1, keepdim=True)",
    X_ "y = torch.amax(x * 2, dim=1, keepdim=True) - 1",
    X_ "y = softmax(x * 0.5, -1)",
    X_ "y = log_softmax(x * 3, -1)",
    XW "input b [cols]\ny = layer_norm(x + 1000, w, b)", /* far from 0: the shifted sums */
    XW "y = rms_norm(x, w, eps=1e-6) * 2",
    X_ "m = x.amax(-1, keepdim=True)\ne = exp(x - m)\ny = e / e.sum(-1, keepdim=True)",
    XW "y = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w",
    XW "input b [cols]\nm = x.mean(-1, keepdim=True)\nd = x - m\nv = (d*d).mean(-1, keepdim=True)\n"
       "y = d * rsqrt(v + 1e-5) * w + b",
    X_ "s = x.sum(-1)\nt = x.amax(-1)\ny = s * t",                      /* [rows] results */
    XW "y = sigmoid(x.sum(-1, keepdim=True) * 0.01) * w + tanh(x)",      /* row values, [cols] */
    X_ "y = softmax(x, -1)\nz = log_softmax(x, -1)",                     /* two outputs */
};
/* one pass; a partial last vector; shorter than a vector; beyond the core
 * cache (2 x 300000 f32: 1.2 MB a row) */
static const mb_shape shapes[] = {{2, 37, 1000, 0}, {2, 3, 5003, 0}, {2, 5, 7, 0}, {2, 2, 300000, 0}};

/* Runs text under plan k at s; *compiled gets how many of its kernels run
 * compiled, *expect how many should (a row op, or two nodes or more). 1
 * verified, 0 wrong, -1 plan unsupported. */
static int run_one(const char *text, mb_plan_kind k, mb_shape s, mb_dtype dt, int *compiled, int *expect)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_tensors t;
    mb_kern_check ck;
    mb_err err;
    memset(&t, 0, sizeof t);
    *compiled = *expect = 0;
    int rc = mb_parse_variant(text, "rows.mb", dt, &g, &err);
    if (!rc && !mb_plan_supported(g, k)) { mb_graph_free(g); return -1; }
    if (!rc) rc = mb_plan_build(g, k, &p, &err);
    if (!rc) rc = mb_kern_tensors_alloc_shape(p, s, 0, &t, &err);
    for (int i = 0; !rc && i < p->n_kernels; i++) {
        mb_kern_eval_info info;
        rc = mb_kern_kernel_info(&t, i, &info, &err);
        *compiled += info.compiled;
        int row_op = 0;
        for (int j = 0; j < p->kernels[i].n_nodes; j++) row_op |= MB_OP_IS_ROW(p->g->nodes[p->kernels[i].nodes[j]].op);
        *expect += p->kernels[i].n_nodes >= 2 || row_op;
        /* the model's rule is the executor's */
        if (!rc && mb_kernel_compiled(p->g, &p->kernels[i]) != info.compiled)
            fprintf(stderr, "%s %s kernel %s: executor compiled=%d, model %d\n", text, mb_plan_name(k),
                    p->kernels[i].name, info.compiled, mb_kernel_compiled(p->g, &p->kernels[i]));
        if (!rc) CHECK_EQ_I64(mb_kernel_compiled(p->g, &p->kernels[i]), info.compiled);
    }
    if (!rc) rc = mb_kern_run_plan(&t, MB_KERN_EXEC_BLOCKED, &err);
    if (!rc) rc = mb_kern_verify(&t, 0, 0, &ck, &err);
    if (rc) fprintf(stderr, "%s: %s\n", text, err.msg);
    CHECK(rc == MB_OK);
    int passed = !rc && ck.passed;
    if (!rc && !ck.passed)
        fprintf(stderr, "%s (%s, %lldx%lld, %s): max err %.3g, %lld bad, %lld poisoned (got %g want %g)\n", text,
                mb_plan_name(k), (long long)s.rows, (long long)s.cols, mb_dtype_name(dt), ck.max_rel_err,
                (long long)ck.bad, (long long)ck.poisoned, ck.first_got, ck.first_want);
    if (!rc && g->has_backward) {
        double gerr = 0;
        int gok = 0;
        CHECK(mb_kern_gradcheck(&t, 50, &gerr, &gok, &err) == MB_OK);
        CHECK(gok);
    }
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
    return passed;
}

/* Occurrences of what in text after the row function's start. */
static int count_in_kernel(const char *text, const char *what)
{
    const char *k = text ? strstr(text, "void mb_jit_rows(") : NULL;
    int n = 0;
    for (const char *q = k; q && (q = strstr(q, what)) != NULL; q += strlen(what)) n++;
    return n;
}

/* The hand-written softmax's fused kernel: one pass keeps exp(x - max) and
 * nothing else (one kept store, exp once in the body and its tail, softmax's
 * exp); the passes beyond the cache recompute it in the write pass. */
static void kept_values(void)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err;
    CHECK(mb_parse_variant(texts[7], "s.mb", MB_F32, &g, &err) == MB_OK);
    CHECK(g && mb_plan_build(g, MB_PLAN_FUSED, &p, &err) == MB_OK);
    if (!p) {
        mb_graph_free(g);
        return;
    }
    CHECK_EQ_I64(p->kernels[0].passes, 3);
    char *one = mb_kern_jit_rows_source(p->g, &p->kernels[0], 1);
    char *multi = mb_kern_jit_rows_source(p->g, &p->kernels[0], 0);
    CHECK(one && multi);
    /* exp(x - amax(x)) is softmax's exp (mb_node_exp_nonpos), not SLEEF's */
    CHECK_EQ_I64(count_in_kernel(one, "MB_V_EXP_NONPOS("), 2);
    CHECK_EQ_I64(count_in_kernel(one, " V_EXP(") + count_in_kernel(one, "(V_EXP("), 0);
    CHECK_EQ_I64(count_in_kernel(one, "V_ST(o"), 1);
    CHECK_EQ_I64(count_in_kernel(one, "V_LD(o"), 1);
    CHECK_EQ_I64(count_in_kernel(multi, "MB_V_EXP_NONPOS("), 4);
    CHECK_EQ_I64(count_in_kernel(multi, "V_ST(o"), 0);
    CHECK_EQ_I64(count_in_kernel(one, "for (int64_t c0 = 0;"), 3); /* a loop a pass */
    /* the online plan: one pass is the fused kernel (no rescaling); beyond
     * the cache the max and the sum share a pass, each chunk's max first */
    mb_plan *po = NULL;
    CHECK(mb_plan_build(g, MB_PLAN_ONLINE, &po, &err) == MB_OK);
    if (po) {
        char *one_o = mb_kern_jit_rows_source(po->g, &po->kernels[0], 1);
        char *multi_o = mb_kern_jit_rows_source(po->g, &po->kernels[0], 0);
        CHECK_EQ_I64(po->kernels[0].passes, 2);
        CHECK(one_o && one && strcmp(strstr(one_o, "void mb_jit_rows("), strstr(one, "void mb_jit_rows(")) == 0);
        CHECK(count_in_kernel(multi_o, "vf cm") == 1 && count_in_kernel(one_o, "vf cm") == 0);
        CHECK_EQ_I64(count_in_kernel(multi_o, "for (int64_t c0 = 0;"), 2);
        free(one_o);
        free(multi_o);
    }
    mb_plan_free(po);
    free(one);
    free(multi);
    mb_plan_free(p);
    mb_graph_free(g);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1200];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int main(void)
{
    if (strncmp(mb_kern_vector_isa(), "sleef-", 6) != 0) {
        printf("built without a SLEEF vector ISA (%s): nothing to compile\n", mb_kern_vector_isa());
        return 77;
    }
    char dir[] = "/tmp/mb-jit-rows-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, dir);
    static const mb_plan_kind plans[] = {MB_PLAN_FUSED, MB_PLAN_ONLINE, MB_PLAN_EAGER};
    int compiled_total = 0;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (size_t k = 0; k < 3; k++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                int c = 0, m = 0;
                int r = run_one(texts[i], plans[k], shapes[s], MB_F32, &c, &m);
                if (r < 0) continue;
                CHECK(r == 1);
                CHECK_EQ_I64(c, m); /* every kernel with a row op or two nodes */
                compiled_total += c;
            }
    CHECK(compiled_total > 50);
    /* the backward variants, by their plans */
    static const char *const bwd[] = {"softmax_bwd", "layernorm_bwd", "rmsnorm_bwd"};
    for (size_t v = 0; v < sizeof bwd / sizeof bwd[0]; v++) {
        char path[600], text[4096] = "";
        snprintf(path, sizeof path, "%s/%s.mb", mb_variant_dir(), bwd[v]);
        FILE *fp = fopen(path, "r");
        size_t got = fp ? fread(text, 1, sizeof text - 1, fp) : 0;
        text[got] = '\0';
        if (fp) fclose(fp);
        CHECK(got > 0);
        for (int pk = 0; pk < MB_PLAN_COUNT; pk++)
            for (size_t s = 0; s < 2; s++) {
                int c = 0, m = 0;
                int r = run_one(text, (mb_plan_kind)pk, shapes[s], MB_F32, &c, &m);
                if (r >= 0) CHECK(r == 1);
                compiled_total += c;
            }
    }
    /* bf16 and relu (no vector form) interpret, with the same checks */
    int c = -1, m = 0;
    CHECK(run_one(texts[7], MB_PLAN_FUSED, shapes[0], MB_BF16, &c, &m) == 1);
    CHECK_EQ_I64(c, 0);
    CHECK(run_one(X_ "y = relu(x) - x.amax(-1, keepdim=True)", MB_PLAN_FUSED, shapes[0], MB_F32, &c, &m) == 1);
    CHECK_EQ_I64(c, 0);
    kept_values();
    mb_kern_jit_stats st;
    mb_kern_jit_get_stats(&st);
    CHECK_EQ_I64(st.failed, 0); /* every generated source compiles */
    CHECK(st.compiled > 20);
    mb_kern_jit_configure(MB_KERN_JIT_OFF, NULL, NULL);
    remove_dir(dir);
    return mb_test_done();
}
