/* test_model_dtypes.c — what the language says as PyTorch code says it: casts
 * (x.to(f32)), each tensor's own dtype in the traffic, inputs declared
 * nograd, and sums over every element. Kernel counts and bytes derived by
 * hand from what PyTorch's eager mode launches, per case below. */
#include "membound_model.h"
#include "mb_test.h"
#include "mb_test_model.h"

#include <string.h>

/* Hugging Face's LlamaRMSNorm.forward, as it is written there: bf16 in, the
 * statistics in f32, cast back before the weight. */
#define LLAMA_RMSNORM                                                                              \
    "input x [rows, cols] bf16\n"                                                                  \
    "input w [cols] bf16\n"                                                                        \
    "h = x.to(f32)\n"                                                                              \
    "v = h.pow(2).mean(-1, keepdim=True)\n"                                                        \
    "h = h * rsqrt(v + 1e-6)\n"                                                                    \
    "y = w * h.to(bf16)\n"                                                                         \
    "output y\n"

/* variant, shape, plan, kernels; bytes read and written as a*n + b*rows + c*cols */
static const struct {
    const char *text, *shape;
    mb_plan_kind plan;
    int kernels;
    int rn, rr, rc, wn, wr, wc;
} cases[] = {
    /* a cast reads 2 B and writes 4 B an element */
    {"input x [n] bf16\ny = x.to(f32)\noutput y\n", "1024", MB_PLAN_EAGER, 1, 2, 0, 0, 4, 0, 0},
    /* the same dtype is x itself: torch returns self, no kernel (the mul's) */
    {"input x [n] bf16\ny = x.to(torch.bfloat16) * 2\noutput y\n", "1024", MB_PLAN_EAGER, 1, 2, 0, 0, 2, 0, 0},
    /* mixed operands promote: bf16 x f32 -> f32 (reads 2 + 4, writes 4) */
    {"input x [n] bf16\ninput z [n]\ny = x * z\noutput y\n", "1024", MB_PLAN_EAGER, 1, 6, 0, 0, 4, 0, 0},
    /* forward copy (2n, 4n), mul (4n, 4n); backward mul g*2 (4n, 4n), and
     * the cast's backward, grad.to(bf16) (4n, 2n) */
    {"input x [n] bf16\ny = x.to(f32) * 2\noutput y\nbackward\n", "1024", MB_PLAN_EAGER, 4, 14, 0, 0, 14, 0, 0},
    /* the product's f32 gradient of its bf16 operand cast to bf16 after the
     * mul (validate_outputs): fwd mul (2n + 4n, 4n); bwd g*z (8n, 4n), copy
     * (4n, 2n), g*x (4n + 2n, 4n) */
    {"input x [n] bf16\ninput z [n]\ny = x * z\noutput y\nbackward\n", "1024", MB_PLAN_EAGER, 4, 24, 0, 0, 14,
     0, 0},
    /* LlamaRMSNorm: copy (2n, 4n), pow (4n, 4n), mean (4n, 4R), add (4R, 4R),
     * rsqrt (4R, 4R), mul (4n + 4R, 4n), copy (4n, 2n), mul (2C + 2n, 2n) */
    {LLAMA_RMSNORM, "64x256", MB_PLAN_EAGER, 8, 20, 12, 2, 16, 12, 0},
    /* fused: x and w in, y out */
    {LLAMA_RMSNORM, "64x256", MB_PLAN_FUSED, 1, 2, 0, 2, 2, 0, 0},
    /* a frozen weight: fwd mul (4n + 4C, 4n); bwd g*w only (4n + 4C, 4n),
     * no g*x and no sum over the rows */
    {"input x [rows, cols]\ninput w [cols] nograd\ny = x * w\noutput y\nbackward\n", "64x256", MB_PLAN_EAGER, 2,
     8, 0, 8, 8, 0, 0},
    /* detach(w) is the same frozen weight, and so are its kernels and bytes */
    {"input x [rows, cols]\ninput w [cols]\ny = x * detach(w)\noutput y\nbackward\n", "64x256", MB_PLAN_EAGER,
     2, 8, 0, 8, 8, 0, 0},
    {"input x [rows, cols]\ninput w [cols]\nv = w\ny = x * v.detach()\noutput y\nbackward\n", "64x256",
     MB_PLAN_EAGER, 2, 8, 0, 8, 8, 0, 0},
    {"input x [rows, cols]\ninput w [cols]\nd = detach(w)\ny = x * d\noutput y\nbackward\n", "64x256",
     MB_PLAN_EAGER, 2, 8, 0, 8, 8, 0, 0},
    /* the same with w's gradient: + g*x (8n, 4n) and colsum (4n, 4C) */
    {"input x [rows, cols]\ninput w [cols]\ny = x * w\noutput y\nbackward\n", "64x256", MB_PLAN_EAGER, 4, 20, 0,
     8, 12, 0, 4},
    /* rms_norm with a frozen weight: no GammaBetaBackward kernel, and so no
     * rstd written for it: fwd (4n + 4C, 4n), rms_norm_backward g, x, w
     * (8n + 4C, 4n) */
    {"input x [rows, cols]\ninput w [cols] nograd\ny = rms_norm(x, w, eps=1e-6)\noutput y\nbackward\n",
     "64x256", MB_PLAN_EAGER, 2, 12, 0, 8, 8, 0, 0},
    /* a masked loss over every element, 1-D (rows = 1, the loss one element):
     * fwd sub (8n, 4n), mul by m (8n, 4n), d*d (4n, 4n), mean (4n, 4); bwd
     * mean's expand and div (4, 4n), d*d's g*d twice and their add (24n,
     * 12n), g*m (8n, 4n); no neg for t, no g*s for m */
    {"input x [n]\ninput t [n] nograd\ninput m [n] nograd\nd = (x - t) * m\nloss = (d * d).mean()\n"
     "output loss\nbackward\n", "1024", MB_PLAN_EAGER, 9, 56, 4, 0, 32, 4, 0},
    /* the same loss over a 2-D tensor: its n elements, as the 1-D one */
    {"input x [rows, cols]\ninput t [rows, cols] nograd\ninput m [rows, cols] nograd\nd = (x - t) * m\n"
     "loss = (d * d).mean()\noutput loss\nbackward\n", "32x32", MB_PLAN_EAGER, 9, 56, 4, 0, 32, 4, 0},
};

static void check_case(int i, const mb_device *d)
{
    mb_test_plan_counts(i, cases[i].text, cases[i].shape, cases[i].plan, d,
                        (mb_test_counts){cases[i].kernels, 1, cases[i].rn, cases[i].rr, cases[i].rc, cases[i].wn,
                                         cases[i].wr, cases[i].wc});
}

/* A gradient has its input's dtype, and a nograd input none. */
static void check_grads(void)
{
    mb_graph *g = NULL;
    mb_err e;
    int rc = mb_parse_variant(LLAMA_RMSNORM "backward\n", "llama.mb", MB_F32, &g, &e);
    if (rc) fprintf(stderr, "llama: %s\n", e.msg);
    CHECK(rc == MB_OK);
    if (!rc) {
        for (int k = 0; k < g->n_inputs; k++) {
            CHECK(g->grad_inputs[k] >= g->n_forward);
            CHECK_EQ_I64(g->nodes[g->grad_inputs[k]].dtype, MB_BF16);
        }
        CHECK_EQ_I64(g->nodes[g->outputs[0]].dtype, MB_BF16);
        CHECK_EQ_I64(g->nodes[g->grad_outputs[0]].dtype, MB_BF16);
    }
    mb_graph_free(g);
    g = NULL;
    rc = mb_parse_variant("input x\ninput w nograd\ny = sin(x) * w\noutput y\nbackward\n", "w.mb", MB_F32, &g, &e);
    CHECK(rc == MB_OK);
    if (!rc) {
        CHECK(g->grad_inputs[0] >= g->n_forward);
        CHECK_EQ_I64(g->grad_inputs[1], -1);
        /* g * w, then g w cos(x): cos, mul; nothing for w (no g sin(x)) */
        CHECK_EQ_I64(g->n_nodes - g->n_forward, 4);
    }
    mb_graph_free(g);
}

/* text, expected fragment of the message (with line:col) */
static const struct {
    const char *text, *msg;
} bad[] = {
    {"input x bf16\ny = x.float()\n", "v.mb:2:7: a cast is written x.to(f32)"},
    {"input x\ny = x.half()\n", "v.mb:2:7: a cast is written x.to(f16)"},
    {"input x\ny = cast(x, bf16)\n", "v.mb:2:5: a cast is written x.to(f32)"},
    {"input x\ny = x.to(f64)\n", "v.mb:2:10: to(): unknown dtype 'f64'"},
    {"input x\ny = x.to(torch.float64)\n", "v.mb:2:16: to(): unknown dtype 'float64'"},
    {"input x\ny = x.to(bf16, f32)\n", "v.mb:2:14: to() takes one dtype"},
    {"input x\ny = x.to(2)\n", "v.mb:2:10: to() takes a dtype"},
    {"input x nograd nograd\ny = x*2\n", "v.mb:1:16: expected ',' or the end of the line"},
    {"input x bf16 f32\ny = x*2\n", "v.mb:1:14: expected ',' or the end of the line"},
    {"input x nogard\ny = x*2\n", "v.mb:1:9: unknown dtype or word 'nogard'"},
    {"input x nograd\ny = x*2\nbackward\n", "v.mb:2:6: output 'y' reads no input with a gradient"},
    {"input x\ninput w\ny = x * w.detach() + w\n", "v.mb:3:11: input 'w' is read both through detach() and without"},
    {"input x\ninput w\ny = w * x * detach(w)\n", "v.mb:3:13: input 'w' is read both through detach() and without"},
    {"input x\ninput w\nd = detach(w)\ny = x * d + w\n", "v.mb:3:5: input 'w' is read both"},
    {"input x\ny = x.T * 2\n", "v.mb:2:7: 'T' is not modelled: views that move or reshape dimensions"},
    {"input x\ny = 1 + x.transpose(-2, -1)\n", "v.mb:2:11: 'transpose' is not modelled"},
    {"input x\ninput w\ny = 1 + x @ w\n", "v.mb:3:11: a matrix multiply ('@'): a variant with one is a layer, modelled by 'membound mlp --variant"},
    {"input x\ninput w\ny = torch.matmul(x, w)\n", "v.mb:3:11: 'matmul' is not modelled here: a matrix multiply is written '@'"},
    {"input x\ny = x[0] * 2\n", "v.mb:2:6: indexing and slicing ('[') are not modelled"},
    {"input x\ny = detach(x * 2)\n", "v.mb:2:5: detach() of a computed tensor is not modelled"},
    {"input x\ny = x.detach(1)\n", "v.mb:2:7: detach() takes one tensor"},
    {"input x\ny = detach(2) * x\n", "v.mb:2:5: detach() of a number"},
    {"input x [rows, cols]\ninput w [cols]\ny = (x * w).sum()\n", "v.mb:3:13: sum() over every element of a [rows, cols] tensor beside"},
    {"input x [rows, cols]\ny = x.sum() + x.sum(-1, keepdim=True)\n", "v.mb:2:7: sum() over every element of a [rows, cols] tensor beside"},
    {"input x\ny = x.sum(keepdim=True)\n", "v.mb:2:11: sum(): keepdim needs a dim"},
    {"input x [rows, cols]\ny = softmax(x)\n", "v.mb:2:5: softmax() without dim picks the dimension"},
};

static void check_bad(void)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mb_graph *g = NULL;
        mb_err e = {{0}};
        CHECK(mb_parse_variant(bad[i].text, "v.mb", MB_F32, &g, &e) == MB_EINPUT);
        CHECK(g == NULL);
        if (!strstr(e.msg, bad[i].msg)) fprintf(stderr, "  '%s': got '%s', want '%s'\n", bad[i].text, e.msg, bad[i].msg);
        CHECK(strstr(e.msg, bad[i].msg) != NULL);
    }
}

/* Named dimensions: the leading ones run as rows, the last as columns. */
static void check_named_dims(const mb_device *d)
{
    static const char *const softmax4 = "input x [batch, heads, seq, head_dim]\ny = softmax(x, -1)\noutput y\n"
                                        "backward\n";
    mb_graph *g = NULL;
    mb_err e;
    mb_shape s = {0, 0, 0, 0};
    int rc = mb_parse_variant(softmax4, "s4.mb", MB_F32, &g, &e);
    if (!rc) rc = mb_graph_dims_shape(g, "batch=2, heads=3,seq = 4,head_dim=8", &s, &e);
    if (rc) fprintf(stderr, "softmax4: %s\n", e.msg);
    CHECK(rc == MB_OK);
    if (!rc) {
        CHECK_EQ_I64(g->n_dims, 4);
        CHECK_EQ_I64(g->rank, 2);
        CHECK_EQ_I64(s.rank, 2);
        CHECK_EQ_I64(s.rows, 24);
        CHECK_EQ_I64(s.cols, 8);
        mb_plan *p = NULL;
        mb_estimate est;
        memset(&est, 0, sizeof est);
        rc = mb_plan_build(g, MB_PLAN_EAGER, &p, &e);
        if (!rc) rc = mb_estimate_plan_shape(p, s, d, &est, &e);
        CHECK(rc == MB_OK);
        if (!rc) { /* softmax (4n, 4n), _softmax_backward_data g, y (8n, 4n) */
            CHECK_EQ_I64(p->n_kernels, 2);
            CHECK_EQ_I64(est.total.read_bytes, 12 * 192);
            CHECK_EQ_I64(est.total.write_bytes, 8 * 192);
        }
        mb_estimate_free(&est);
        mb_plan_free(p);
        static const struct { const char *text, *msg; } bad_dims[] = {
            {"batch=2,heads=3,seq=4", "dims: no size for 'head_dim'"},
            {"batch=2,heads=3,seq=4,head_dim=8,depth=2", "'depth' is not a dimension of variant 's4'"},
            {"batch=2,batch=3,heads=3,seq=4,head_dim=8", "'batch' given twice"},
            {"batch=2,heads=0,seq=4,head_dim=8", "dims: heads: size '0'"},
            {"batch", "expected name=SIZE"},
        };
        for (size_t i = 0; i < sizeof bad_dims / sizeof bad_dims[0]; i++) {
            CHECK(mb_graph_dims_shape(g, bad_dims[i].text, &s, &e) == MB_EINPUT);
            if (!strstr(e.msg, bad_dims[i].msg)) fprintf(stderr, "  dims '%s': got '%s'\n", bad_dims[i].text, e.msg);
            CHECK(strstr(e.msg, bad_dims[i].msg) != NULL);
        }
        /* a 2-D variant at --n is refused, naming --dims */
        CHECK(mb_graph_set_rank(g, 1, &e) == MB_EINPUT);
        CHECK(strstr(e.msg, "--dims batch=SIZE") != NULL);
    }
    mb_graph_free(g);
    /* the forms another input may take, and a 'dims' line's default */
    g = NULL;
    rc = mb_parse_variant("input x [b, s, d]\ninput r [b, s, 1]\ninput w [d]\ndims b=2, s=3, d=5\n"
                          "y = x * r * w\noutput y\n", "f.mb", MB_F32, &g, &e);
    if (rc) fprintf(stderr, "forms: %s\n", e.msg);
    CHECK(rc == MB_OK);
    if (!rc) {
        CHECK_EQ_I64(g->nodes[g->inputs[1]].shape, MB_SHC_ROW);
        CHECK_EQ_I64(g->nodes[g->inputs[2]].shape, MB_SHC_COL);
        CHECK_EQ_I64(g->default_shape.rows, 6);
        CHECK_EQ_I64(g->default_shape.cols, 5);
    }
    mb_graph_free(g);
    g = NULL; /* one named dimension is 1-D */
    rc = mb_parse_variant("input x [tokens]\ndims tokens=4096\ny = x.sum()\noutput y\n", "t.mb", MB_F32, &g, &e);
    CHECK(rc == MB_OK);
    if (!rc) {
        CHECK_EQ_I64(g->rank, 1);
        CHECK_EQ_I64(g->default_n, 4096);
    }
    mb_graph_free(g);
}

/* Named-dimension errors, at the declaration or operator they concern. */
static const struct {
    const char *text, *msg;
} bad_named[] = {
    {"input s [batch, heads, seq, seq]\ninput m [batch, 1, seq, seq]\ny = s + m\n",
     "v.mb:2:9: input 'm' [batch, 1, seq, seq] does not broadcast as modelled against [batch, heads, seq, seq]"},
    {"input s [batch, heads, seq, seq]\ninput m [batch, heads, 1, 1]\ny = s + m\n",
     "v.mb:2:9: input 'm' [batch, heads, 1, 1] does not broadcast as modelled"},
    {"input s [b, h, q, k]\ninput m [b, 1, 1, k]\ny = s + m\noutput y\nbackward\n",
     "v.mb:2:7: 'm' is broadcast within the leading dimensions and needs a gradient"},
    {"input s [b, h, q, k]\ninput m [b, 1, 1, k] nograd\ninput c [1, h, 1, k] nograd\ny = s + m * c\n",
     "v.mb:4:11: shapes [b, 1, 1, k] and [1, h, 1, k]: a broadcast of two tensors that keep different"},
    {"input s [b, h, q, k]\ninput m [b, 1, 1, k] nograd\ny = softmax(m, -1) + s\n",
     "v.mb:3:5: softmax() of a [b, 1, 1, k] tensor: only whole rows are reduced"},
    {"input x [b, s, d]\ny = x / x.sum(-1)\n", "shapes [b, s, d] and [b, s] do not broadcast"},
    {"input x [b, s, d]\ninput w [e]\ny = x * w\n", "v.mb:2:9: input 'w' [e] does not broadcast as modelled"},
    {"input x [b, s, d]\ninput w [rows, cols]\ny = x * w\n", "v.mb:2:7: input 'w' is declared [rows, cols]-style"},
    {"input x [b, s, d]\ndims b=2, s=3\ny = x * 2\n", "v.mb:2:6: dims: no size for 'd'"},
    {"input x\ndims b=2\ny = x * 2\n", "v.mb:2:6: 'dims' names sizes of named dimensions"},
    {"input x [a, b, c, d, e, f, g, h, i]\ny = x * 2\n", "v.mb:1:34: at most 8 dimensions"},
};

/* A [b, 1, 1, k] mask against [b, h, q, k] scores, at b=2, h=3, q=5, k=7
 * (210 elements, 30 rows; the mask 14): eager mul (56 B, 56 B), add (840 +
 * 56, 840), softmax (840, 840), its backward (840 + 840, 840); the mask's
 * rows are counted from the bound sizes, and a shape without them refused. */
static void check_mask(const mb_device *d)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_estimate est;
    mb_err e;
    mb_shape s;
    memset(&est, 0, sizeof est);
    int rc = mb_parse_variant("input s [b, h, q, k]\ninput m [b, 1, 1, k] nograd\ny = softmax(s + m * -3, -1)\n"
                              "output y\nbackward\n", "mask.mb", MB_F32, &g, &e);
    if (!rc) { /* not bound yet: refused, naming --dims */
        CHECK(mb_graph_check_shape(g, (mb_shape){2, 30, 7, 0}, &e) == MB_EINPUT);
        CHECK(strstr(e.msg, "give their sizes by name, --dims b=SIZE") != NULL);
    }
    if (!rc) rc = mb_graph_bind_dims(g, "b=2,h=3,q=5,k=7", &s, &e);
    if (!rc) rc = mb_plan_build(g, MB_PLAN_EAGER, &p, &e);
    if (!rc) rc = mb_estimate_plan_shape(p, s, d, &est, &e);
    if (rc) fprintf(stderr, "mask: %s\n", e.msg);
    CHECK(rc == MB_OK);
    if (!rc) {
        CHECK_EQ_I64(s.rows, 30);
        CHECK_EQ_I64(p->n_kernels, 4);
        CHECK_EQ_I64(est.total.read_bytes, 56 + 896 + 840 + 1680);
        CHECK_EQ_I64(est.total.write_bytes, 56 + 840 + 840 + 840);
        CHECK_EQ_I64(mb_tensor_elems_at(g, g->inputs[1], s), 14);
        /* another shape than the bound one */
        CHECK(mb_graph_check_shape(g, (mb_shape){2, 15, 14, 0}, &e) == MB_EINPUT);
        char t[64];
        CHECK(!strcmp(mb_graph_dims_text(g, t, sizeof t), "b=2,h=3,q=5,k=7"));
    }
    mb_estimate_free(&est);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* rms_norm's eager kernels follow the device: one on a GPU, torch 2.x's
 * composite on a CPU (pow, mean, add, rsqrt, mul, mul by the weight). */
static void check_rms_norm_on(const mb_device *gpu)
{
    mb_device cpu = *gpu;
    snprintf(cpu.kind, sizeof cpu.kind, "cpu");
    static const struct { const char *text; int gpu_k, cpu_k; } rows[] = {
        {"input x [rows, cols]\ninput w [cols]\ny = rms_norm(x, w, eps=1e-6)\noutput y\n", 1, 6},
        {"input x [rows, cols]\ny = rms_norm(x)\noutput y\n", 1, 5},
        /* bf16: cast to f32 first and back before the weight */
        {"input x [rows, cols] bf16\ninput w [cols] bf16\ny = rms_norm(x, w)\noutput y\n", 1, 8},
        {"input x [rows, cols]\ny = softmax(x, -1)\noutput y\n", 1, 1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mb_graph *g = NULL;
        mb_plan *p = NULL, *q = NULL;
        mb_err e;
        int rc = mb_parse_variant(rows[i].text, "r.mb", MB_F32, &g, &e);
        if (!rc) rc = mb_plan_build_on(g, MB_PLAN_EAGER, gpu, &p, &e);
        if (!rc) rc = mb_plan_build_on(g, MB_PLAN_EAGER, &cpu, &q, &e);
        if (rc) fprintf(stderr, "rms_norm on %zu: %s\n", i, e.msg);
        CHECK(rc == MB_OK);
        if (!rc) {
            CHECK_EQ_I64(p->n_kernels, rows[i].gpu_k);
            CHECK_EQ_I64(q->n_kernels, rows[i].cpu_k);
            /* the same results either way: outputs of the same dtype */
            CHECK_EQ_I64(q->g->nodes[q->g->outputs[0]].dtype, g->nodes[g->outputs[0]].dtype);
        }
        mb_plan_free(p);
        mb_plan_free(q);
        mb_graph_free(g);
    }
}

int main(void)
{
    mb_device d;
    mb_err e;
    if (mb_device_find("h100-sxm", &d, &e) != MB_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case((int)i, &d);
    check_grads();
    check_bad();
    check_named_dims(&d);
    for (size_t i = 0; i < sizeof bad_named / sizeof bad_named[0]; i++) {
        mb_graph *g = NULL;
        CHECK(mb_parse_variant(bad_named[i].text, "v.mb", MB_F32, &g, &e) == MB_EINPUT);
        CHECK(g == NULL);
        if (!strstr(e.msg, bad_named[i].msg)) fprintf(stderr, "  '%s': got '%s'\n", bad_named[i].text, e.msg);
        CHECK(strstr(e.msg, bad_named[i].msg) != NULL);
    }
    check_rms_norm_on(&d);
    check_mask(&d);
    return mb_test_done();
}
