/* kernels_rows.c — the row executor (kernels/rows_run_cpu.c, rows_cpu.c) against its
 * float64 reference: every row operation, hand-written softmax, LayerNorm
 * and RMSNorm, in every plan, op at a time and blocked by rows, at shapes
 * whose rows are shorter and longer than a tile, in f32 and bf16; and the
 * check failing when an output is wrong or left unwritten. */
#include "kernels.h"
#include "mb_test.h"

#include <stdio.h>
#include <string.h>

#define X_ "input x [rows, cols]\n"
#define XW X_ "input w [cols]\n"
static const char *const texts[] = {
    X_ "y = x.sum(-1, keepdim=True)",
    X_ "y = mean(x, -1)",
    X_ "y = torch.amax(x * 2, dim=1, keepdim=True) - 1",
    X_ "y = softmax(x, -1)",
    X_ "y = log_softmax(x * 3, -1)",
    XW "input b [cols]\ny = layer_norm(x, w, b)",
    XW "y = rms_norm(x, w, eps=1e-6)",
    X_ "m = x.amax(-1, keepdim=True)\ne = exp(x - m)\ny = e / e.sum(-1, keepdim=True)",
    XW "y = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w",
    XW "input b [cols]\nm = x.mean(-1, keepdim=True)\nd = x - m\nv = (d*d).mean(-1, keepdim=True)\n"
       "y = d * rsqrt(v + 1e-5) * w + b",
    X_ "s = x.sum(-1)\nt = x.amax(-1)\ny = s * t",                   /* [rows] results */
    XW "y = x.sum(-1, keepdim=True) * w",                             /* outer [rows, 1] x [cols] */
    /* broadcasts without a row op: the row executor indexes [cols] and [rows, 1]
     * by their shape (the elementwise one read past w's cols elements) */
    XW "input r [rows, 1]\ny = sin(x) * w + r",
};
/* rows that fit a core cache (one pass) and one that does not (2 x 300000 f32:
 * 1.2 MB a row, the tiled passes) */
static const mb_shape shapes[] = {{2, 37, 1000, 0}, {2, 3, 5000, 0}, {2, 64, 512, 0}, {2, 5, 1, 0}, {2, 2, 300000, 0}};

static int run_one(const char *text, mb_plan_kind k, mb_kern_exec e, mb_shape s, mb_dtype dt, int mutate)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_tensors t;
    mb_kern_check ck;
    mb_err err;
    memset(&t, 0, sizeof t);
    int rc = mb_parse_variant(text, "rows.mb", dt, &g, &err);
    if (!rc && !mb_plan_supported(g, k)) { mb_graph_free(g); return -1; }
    if (!rc) rc = mb_plan_build(g, k, &p, &err);
    if (!rc) rc = mb_kern_tensors_alloc_shape(p, s, 0, &t, &err);
    if (!rc) rc = mb_kern_run_plan(&t, e, &err);
    if (!rc && mutate == 1) { /* one element of the first result off */
        int v = p->results[0];
        float *d = t.data[v];
        if (g->nodes[v].dtype == MB_F32) d[0] += 10.0f;
    }
    if (!rc && mutate == 2) mb_kern_poison(&t, 0); /* nothing written */
    if (!rc) rc = mb_kern_verify(&t, 0, 0, &ck, &err);
    if (rc) fprintf(stderr, "%s: %s\n", text, err.msg);
    CHECK(rc == MB_OK);
    int passed = !rc && ck.passed;
    if (!rc && !ck.passed && !mutate)
        fprintf(stderr, "%s (%s, %s, %lldx%lld, %s): max err %.3g, %lld bad, %lld poisoned (got %g want %g)\n", text,
                mb_plan_name(k), mb_kern_exec_name(e), (long long)s.rows, (long long)s.cols, mb_dtype_name(dt),
                ck.max_rel_err, (long long)ck.bad, (long long)ck.poisoned, ck.first_got, ck.first_want);
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
    return passed;
}

int main(void)
{
    static const mb_plan_kind plans[] = {MB_PLAN_EAGER, MB_PLAN_FUSED, MB_PLAN_ONLINE};
    static const mb_kern_exec execs[] = {MB_KERN_EXEC_OPWISE, MB_KERN_EXEC_BLOCKED};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (size_t k = 0; k < 3; k++)
            for (size_t e = 0; e < 2; e++)
                for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                    for (int dt = 0; dt < 2; dt++) {
                        int r = run_one(texts[i], plans[k], execs[e], shapes[s], dt ? MB_BF16 : MB_F32, 0);
                        if (r >= 0) CHECK(r == 1);
                    }
    /* 1-D: one row of n */
    CHECK(run_one("input x\ny = x - x.mean(-1)", MB_PLAN_FUSED, MB_KERN_EXEC_BLOCKED, mb_shape_1d(3000), MB_F32, 0) == 1);
    CHECK(run_one("input x\ny = softmax(x, 0)", MB_PLAN_EAGER, MB_KERN_EXEC_AUTO, mb_shape_1d(70000), MB_F32, 0) == 1);
    /* the built-in row variants, every plan, at a shape of their kind */
    static const char *const builtins[] = {"softmax", "softmax_op", "layernorm", "rmsnorm"};
    for (size_t v = 0; v < sizeof builtins / sizeof builtins[0]; v++) {
        mb_graph *g = NULL;
        mb_err err;
        CHECK(mb_variant_load(builtins[v], MB_F32, &g, &err) == MB_OK);
        CHECK(g && g->rank == 2 && g->default_shape.rank == 2 && g->has_row_ops);
        mb_graph_free(g);
        char path[600];
        snprintf(path, sizeof path, "%s/%s.mb", mb_variant_dir(), builtins[v]);
        FILE *fp = fopen(path, "r");
        char text[4096] = "";
        size_t got = fp ? fread(text, 1, sizeof text - 1, fp) : 0;
        text[got] = '\0';
        if (fp) fclose(fp);
        CHECK(got > 0);
        for (size_t k = 0; k < 3; k++) {
            int r = run_one(text, plans[k], MB_KERN_EXEC_AUTO, shapes[0], MB_F32, 0);
            if (r >= 0) CHECK(r == 1);
        }
    }
    /* which executor runs: the one-pass buffers below the core cache, tiled passes beyond */
    {
        mb_graph *g = NULL;
        mb_plan *p = NULL;
        mb_err err;
        CHECK(mb_parse_variant(texts[7], "s.mb", MB_F32, &g, &err) == MB_OK);
        CHECK(g && mb_plan_build(g, MB_PLAN_FUSED, &p, &err) == MB_OK);
        if (p) {
            int64_t fits = mb_kern_core_cache_bytes() / 4;
            CHECK(mb_kern_rows_onepass(&p->kernels[0], fits) == 1);
            CHECK(mb_kern_rows_onepass(&p->kernels[0], fits + 1) == 0);
            CHECK(mb_kern_rows_onepass(&p->kernels[0], 300000) == (300000 <= fits));
        }
        mb_plan_free(p);
        mb_graph_free(g);
    }
    /* the check can fail: a wrong element, and outputs never written */
    CHECK(run_one(texts[3], MB_PLAN_FUSED, MB_KERN_EXEC_BLOCKED, shapes[0], MB_F32, 1) == 0);
    CHECK(run_one(texts[7], MB_PLAN_ONLINE, MB_KERN_EXEC_BLOCKED, shapes[0], MB_F32, 2) == 0);
    CHECK(run_one(texts[0], MB_PLAN_EAGER, MB_KERN_EXEC_BLOCKED, shapes[1], MB_F32, 1) == 0);
    return mb_test_done();
}
