/* test_model_mmvar.c — variants with '@' (model/mmvar.c): Llama's MLP written
 * in the language costs what the built-in layer (model/mlp.c) costs, kernel
 * for kernel in eager forward and backward and in the fused forward's dual
 * GEMM; GPT-2's written-out MLP puts gelu_new and the biases in the GEMMs'
 * epilogues and a norm in none; autograd's add for a tensor read twice, no
 * weight gradient for a nograd weight; and the errors, at line:col. */
#include "membound_model.h"
#include "mb_mmvar.h"
#include "cpu_spec.h"
#include "mb_test.h"

#include <stdlib.h>
#include <string.h>

static mb_device dev(const char *name)
{
    mb_device d;
    mb_err e;
    memset(&d, 0, sizeof d);
    if (mb_device_find(name, &d, &e)) fprintf(stderr, "%s\n", e.msg);
    return d;
}

static const char llama[] = "input x [tokens, dim]\ninput wg [dim, ffn]\ninput wu [dim, ffn]\ninput wd [ffn, dim]\n"
                            "y = (silu(x @ wg) * (x @ wu)) @ wd\n";

static mb_mlp_est *est_of(const char *text, const char *dims, const mb_device *d, mb_dtype dt)
{
    mb_mmvar *v = NULL;
    mb_err e;
    mb_mlp_est *out = calloc(1, sizeof *out);
    int rc = mb_mmvar_parse(text, "v.mb", dt, &v, &e);
    if (!rc) rc = mb_mmvar_bind(v, dims, &e);
    if (!rc) rc = mb_mmvar_estimate(v, d, out, &e);
    if (rc) {
        fprintf(stderr, "%s\n", e.msg);
        free(out);
        out = NULL;
    }
    mb_mmvar_free(v);
    return out;
}

static int n_named(const mb_mlp_plan *p, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < p->n_kernels; i++) n += !strncmp(p->k[i].name, prefix, strlen(prefix));
    return n;
}

/* the variant's plan against the built-in's: the same kernels in the same
 * order (by their first word: mm, silu, mul, add, ...), the same totals */
static void same_plan(const mb_mlp_plan *a, const mb_mlp_plan *b)
{
    CHECK_EQ_I64(a->n_kernels, b->n_kernels);
    for (int i = 0; i < a->n_kernels && i < b->n_kernels; i++) {
        size_t la = strcspn(a->k[i].name, " "), lb = strcspn(b->k[i].name, " ");
        if (la != lb || strncmp(a->k[i].name, b->k[i].name, la) || a->k[i].backward != b->k[i].backward) {
            fprintf(stderr, "kernel %d: '%s' against the built-in's '%s'\n", i, a->k[i].name, b->k[i].name);
            CHECK(0);
        }
    }
    CHECK_NEAR(a->hidden_write_bytes, b->hidden_write_bytes, 1e-12);
    CHECK_NEAR(a->time_s, b->time_s, 1e-12);
    CHECK_NEAR(a->flops, b->flops, 1e-12);
    CHECK_NEAR(a->dram_read_bytes, b->dram_read_bytes, 1e-12);
    CHECK_NEAR(a->dram_write_bytes, b->dram_write_bytes, 1e-12);
    CHECK_NEAR(a->saved_bytes, b->saved_bytes, 1e-12);
}

static void llama_as_builtin(const mb_device *d, mb_dtype dt)
{
    mb_err e;
    for (int bwd = 0; bwd < 2; bwd++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", llama, bwd ? "backward\n" : "");
        mb_mlp_est *v = est_of(text, "tokens=2048, dim=1024, ffn=2816", d, dt);
        mb_mlp m = {MB_MLP_LLAMA, 2048, 1024, 2816, dt, bwd};
        mb_mlp_est *b = calloc(1, sizeof *b);
        CHECK(v && b && mb_mlp_estimate(&m, d, b, &e) == MB_OK);
        if (!v || !b) {
            free(v), free(b);
            return;
        }
        same_plan(&v->plan[MB_MLP_EAGER][0], &b->plan[MB_MLP_EAGER][MB_MLP_STORE]);
        CHECK_NEAR(v->gemm_flops, b->gemm_flops, 1e-12);
        CHECK_NEAR(v->weight_bytes, b->weight_bytes, 1e-12);
        /* the dual GEMM's epilogue: on a CPU the variant keeps gemm.c's
         * partial C passes before the last K block, which mlp.c's gated
         * layer replaces by the hidden's one write */
        if (!bwd && strcmp(d->kind, "cpu")) same_plan(&v->plan[MB_MLP_FUSED][0], &b->plan[MB_MLP_FUSED][MB_MLP_STORE]);
        /* x feeds two GEMMs: autograd adds its two gradients */
        CHECK_EQ_I64(n_named(&v->plan[MB_MLP_EAGER][0], "add grad x"), bwd);
        CHECK_EQ_I64(n_named(&v->plan[MB_MLP_FUSED][0], "mm x@[wg|wu] +epi"), 1);
        free(v), free(b);
    }
}

/* GPT-2's MLP as nn.Linear layers (F.linear: addmm, the bias in the GEMM)
 * costs what the built-in layer costs, forward and backward (the biases'
 * gradients a reduce kernel each) */
static void gpt2_linear_as_builtin(const mb_device *d)
{
    /* nn.Linear's F.linear (w [out, in]) and GPT-2's Conv1D's torch.addmm (w [in, out]): one addmm each */
    const char *lin = "input x [tokens, dim]\ninput w1 [ffn, dim]\ninput b1 [ffn]\ninput w2 [dim, ffn]\ninput b2 [dim]\n"
                      "a = F.linear(x, w1, b1)\nh = 0.5 * a * (1.0 + tanh(0.7978845608 * (a + 0.044715 * a**3)))\n"
                      "y = linear(h, w2, b2)\n";
    const char *conv = "input x [tokens, dim]\ninput w1 [dim, ffn]\ninput b1 [ffn]\ninput w2 [ffn, dim]\n"
                       "input b2 [dim]\na = torch.addmm(b1, x, w1)\n"
                       "h = 0.5 * a * (1.0 + tanh(0.7978845608 * (a + 0.044715 * a**3)))\ny = addmm(b2, h, w2)\n";
    mb_err e;
    for (int form = 0; form < 2; form++)
    for (int bwd = 0; bwd < 2; bwd++) {
        const char *text = form ? conv : lin;
        char t[1024];
        snprintf(t, sizeof t, "%s%s", text, bwd ? "backward\n" : "");
        mb_mlp_est *v = est_of(t, "tokens=2048, dim=768, ffn=3072", d, MB_F32);
        mb_mlp m = {MB_MLP_GPT2, 2048, 768, 3072, MB_F32, bwd};
        mb_mlp_est *b = calloc(1, sizeof *b);
        CHECK(v && b && mb_mlp_estimate(&m, d, b, &e) == MB_OK);
        if (v && b) {
            same_plan(&v->plan[MB_MLP_EAGER][0], &b->plan[MB_MLP_EAGER][MB_MLP_STORE]);
            if (!bwd) same_plan(&v->plan[MB_MLP_FUSED][0], &b->plan[MB_MLP_FUSED][MB_MLP_STORE]);
        }
        free(v), free(b);
    }
}

static void gpt2(const mb_device *d)
{
    const char *text = "input x [batch, seq, dim]\ninput w1 [dim, ffn]\ninput b1 [ffn]\ninput w2 [ffn, dim]\n"
                       "input b2 [dim]\na = x @ w1 + b1\n"
                       "h = 0.5 * a * (1.0 + tanh(0.7978845608 * (a + 0.044715 * a**3)))\ny = h @ w2 + b2\n";
    mb_mlp_est *v = est_of(text, "batch=4, seq=512, dim=768, ffn=3072", d, MB_F32);
    CHECK(v != NULL);
    if (!v) return;
    const mb_mlp_plan *eg = &v->plan[MB_MLP_EAGER][0], *fu = &v->plan[MB_MLP_FUSED][0];
    /* eager: mm, add, gelu_new's 8 (pow mul add mul tanh add mul mul), mm, add */
    CHECK_EQ_I64(eg->n_kernels, 12);
    CHECK_EQ_I64(n_named(eg, "mm "), 2);
    /* fused: both GEMMs with their epilogues, the hidden written once */
    CHECK_EQ_I64(fu->n_kernels, 2);
    CHECK_EQ_I64(n_named(fu, "mm x@w1 +epi"), 1);
    const double T = 2048, F = 3072, D = 768, s = 4;
    /* the first kernel writes h alone (on a GPU, where C crosses DRAM once) */
    if (strcmp(d->kind, "cpu")) {
        CHECK_NEAR(fu->k[0].dram_write_bytes, T * F * s, 1e-9);
        CHECK_NEAR(fu->k[1].dram_write_bytes, T * D * s, 1e-9);
    }
    CHECK(fu->time_s < eg->time_s);
    CHECK_NEAR(v->gemm_flops, 2 * 2 * T * D * F, 1e-12);
    free(v);
}

/* standard attention written in the language costs what `membound
 * attention` costs its standard plan on a GPU, kernel for kernel forward;
 * the backward's too but CUDA's separate dP * P (attention.c: SoftMax.cu
 * forms grad * output first), which the language's softmax backward, one
 * kernel as on the CPU, does not have */
static void attention_as_builtin(const mb_device *d, mb_dtype dt)
{
    const char *text = "input q [batch, heads, seq, hdim]\ninput k [batch, heads, seq, hdim]\n"
                       "input v [batch, heads, seq, hdim]\ns = (q @ k.transpose(-2, -1)) * 0.125\n"
                       "p = softmax(s, -1)\no = p @ v\nbackward\n";
    mb_mlp_est *v = est_of(text, "batch=4, heads=16, seq=2048, hdim=64", d, dt);
    mb_attn a = {4, 16, 2048, 64, dt, 0, 1};
    mb_attn_est *b = calloc(1, sizeof *b);
    mb_err e;
    CHECK(v && b && mb_attn_estimate(&a, d, b, &e) == MB_OK);
    if (v && b) {
        const mb_mlp_plan *pv = &v->plan[MB_MLP_EAGER][0];
        const mb_attn_plan *pa = &b->plan[MB_ATTN_STANDARD];
        int j = 0, leaf_copies = 0; /* AccumulateGrad's copy of k's gradient (k a leaf here) */
        for (int i = 0; i < pv->n_kernels; i++) leaf_copies += !strncmp(pv->k[i].name, "copy_ grad k", 12);
        CHECK_EQ_I64(leaf_copies, 1);
        CHECK(!strcmp(pv->k[pv->n_kernels - 1].name, "copy_ grad k"));
        for (int i = 0; i < pa->n_kernels; i++) {
            if (!strcmp(pa->k[i].name, "mul dP*P")) continue;
            CHECK(j < pv->n_kernels && pv->k[j].backward == pa->k[i].backward);
            if (j < pv->n_kernels) CHECK_NEAR(pv->k[j].time_s, pa->k[i].time_s, 1e-9);
            j++;
        }
        CHECK_EQ_I64(j, pv->n_kernels - leaf_copies);
        CHECK_NEAR(pv->saved_bytes, pa->saved_bytes + 3 * 4.0 * 16 * 2048 * 64 * mb_dtype_bytes(dt), 1e-12); /* and q, k, v */
    }
    free(v), free(b);
}

static void norm_not_in_epilogue(const mb_device *d)
{
    const char *text = "input x [tokens, dim]\ninput w [dim, ffn]\ninput g [ffn]\ny = rms_norm(x @ w, g)\n";
    mb_mlp_est *v = est_of(text, "tokens=4096, dim=1024, ffn=4096", d, MB_BF16);
    CHECK(v != NULL);
    if (!v) return;
    CHECK_EQ_I64(v->plan[MB_MLP_FUSED][0].n_kernels, 2); /* mm, then the norm's kernel */
    CHECK_EQ_I64(n_named(&v->plan[MB_MLP_FUSED][0], "mm x@w"), 1);
    CHECK_EQ_I64(n_named(&v->plan[MB_MLP_FUSED][0], "mm x@w +epi"), 0);
    free(v);
}

static void nograd_weight(const mb_device *d)
{
    const char *text = "input x [tokens, dim]\ninput w [dim, ffn] nograd\ny = relu(x @ w)\nbackward\n";
    mb_mlp_est *v = est_of(text, "tokens=1024, dim=512, ffn=2048", d, MB_F32);
    CHECK(v != NULL);
    if (!v) return;
    const mb_mlp_plan *p = &v->plan[MB_MLP_EAGER][0];
    CHECK_EQ_I64(n_named(p, "mm dy@w^T"), 0);  /* y is the GEMM's... no: relu's output */
    CHECK_EQ_I64(n_named(p, "mm d(x@w)@w^T"), 1); /* dx */
    CHECK_EQ_I64(n_named(p, "mm x^T@"), 0);       /* no dW: w is frozen */
    CHECK_NEAR(v->gemm_flops, 2 * 2.0 * 1024 * 512 * 2048, 1e-12);
    /* saved: relu's output for its backward; not x (no dW needs it) */
    int x_saved = 0;
    for (int i = 0; i < p->n_saved; i++) x_saved |= !strcmp(p->saved[i].name, "x");
    CHECK(!x_saved);
    free(v);
}

/* a loss ending a layer: a 0-d output, its backward from the scalar */
static void loss(const mb_device *d)
{
    mb_mlp_est *v = est_of("input x [tokens, dim]\ninput w [dim, ffn]\ny = relu(x @ w).sum()\nbackward\n",
                           "tokens=64, dim=32, ffn=48", d, MB_F32);
    CHECK(v != NULL);
    if (!v) return;
    const mb_mlp_plan *p = &v->plan[MB_MLP_EAGER][0];
    CHECK_EQ_I64(p->n_kernels, 6); /* mm, relu, sum; threshold_backward, mm, mm */
    CHECK_EQ_I64(n_named(p, "sum"), 1);
    CHECK_EQ_I64(n_named(p, "threshold_backward"), 1);
    free(v);
}

static void error_is(const char *text, const char *want)
{
    mb_mmvar *v = NULL;
    mb_err e;
    int rc = mb_mmvar_parse(text, "v.mb", MB_F32, &v, &e);
    CHECK(rc == MB_EINPUT);
    if (rc != MB_EINPUT) fprintf(stderr, "parsed, expected: %s\n", want);
    if (rc == MB_EINPUT && !strstr(e.msg, want)) {
        fprintf(stderr, "got: %s\nwant: %s\n", e.msg, want);
        CHECK(0);
    }
    mb_mmvar_free(v);
}

static void errors(void)
{
    error_is("input x [t, d]\ninput y [t, d]\nz = x @ (y)\n",
             "v.mb:3:7: 'x' [t, d] @ 'y' [t, d]: the left operand's last dimension 'd' is not the right one's first 't'");
    error_is("input x [t, d]\ninput b [d]\nz = x @ b\n", "v.mb:3:7: '@' of 'x' [t, d] and 'b' [d]: a product of a "
             "matrix by a vector is not modelled");
    error_is("input x [t, d]\ninput w [f, d]\nz = relu(x @ w)\n",
             "v.mb:3:12: 'x' [t, d] @ 'w' [f, d]: the left operand's last dimension 'd' is not the right one's first 'f'");
    error_is("input q [b, h, s, e]\ninput k [b, h, s, e]\nz = q @ k\n", "the right one's second-to-last 's'");
    error_is("input q [b, h, s, e]\ninput k [h, b, s, e]\nz = q @ k.transpose(-2, -1)\n",
             "a batched product has the same leading dimensions on both sides");
    error_is("input q [b, h, s, e]\ninput k [b, h, s, e]\nz = q @ k.transpose(0, 1)\n",
             "v.mb:3:9: 'k' has 4 dimensions: transpose(0, 1) is not of its last two");
    error_is("input x [t, d]\ninput w [f, d]\ninput b [d]\nz = linear(x, w, b)\n",
             "linear(): the bias 'b' [d] is not [f]");
    error_is("input x [t, d]\ninput w [f, d]\nz = linear(x)\n", "v.mb:3:13: linear(x, w) or linear(x, w, b)");
    error_is("input x [t, d]\ninput w [d, f]\nh = x @ w\nh = relu(h)\n", "v.mb:4:1: 'h' is assigned on line 3");
    error_is("input x [t, d]\ninput w [d, f]\nshape 4x4\nh = x @ w\n", "v.mb:3:1: 'shape'");
    error_is("input x\ninput w [d, f]\nh = x @ w\n", "v.mb:1:8: input 'x': in a variant with '@' every input");
    /* a step between the products that does not broadcast: at its position,
     * the product's made name said in the variant's words */
    error_is("input x [t, d]\ninput w [d, f]\ny = x + x @ w\n", "v.mb:3:");
    error_is("input x [t, d]\ninput w [d, f]\ny = x + x @ w\n", "_m1 is x@w (line 3)");
    error_is("input x [t, d]\ninput w [d, f]\ny = x @ w\nz = x * 2\n", "v.mb:3:1: 'y' is never used");
    error_is("input x [t, d]\ninput w [d, f]\ny = x @ w\nz = x * 2\noutput y\n", "v.mb:4:1: 'z' is never used");
    error_is("input x [t, d]\ninput w [d, f]\ny = x @ w +\n", "v.mb:3:12: expected an expression");
    /* unbound sizes */
    mb_mmvar *v = NULL;
    mb_err e;
    CHECK(mb_mmvar_parse(llama, "v.mb", MB_F32, &v, &e) == MB_OK);
    CHECK(v && mb_mmvar_bind(v, "tokens=8, dim=4", &e) == MB_EINPUT && strstr(e.msg, "no size for 'ffn'"));
    CHECK(v && mb_mmvar_bind(v, "tokens=8, dim=4, ffn=4, seq=2", &e) == MB_EINPUT && strstr(e.msg, "'seq' is not a dimension"));
    mb_device h = dev("h100-sxm");
    mb_mlp_est *out = calloc(1, sizeof *out);
    CHECK(v && out && mb_mmvar_estimate(v, &h, out, &e) == MB_EINPUT && strstr(e.msg, "--dims tokens=SIZE"));
    free(out);
    mb_mmvar_free(v);
    CHECK(mb_mmvar_text_multiplies("y = x @ w\n") == 1);
    CHECK(mb_mmvar_text_multiplies("# x @ w\ny = x * w\n") == 0);
    CHECK(mb_mmvar_text_multiplies("y = F.linear (x, w)\n") == 1);
    CHECK(mb_mmvar_text_multiplies("y = nonlinear(x)\n") == 0);
}

int main(void)
{
    mb_device h100 = dev("h100-sxm"), a100 = dev("a100-80gb"), cpu;
    mb_err e;
    CHECK(mb_device_load_ini_text(MB_TEST_CPU_SPEC, "cpu_spec.h", &cpu, &e) == MB_OK);
    llama_as_builtin(&h100, MB_F32);
    llama_as_builtin(&h100, MB_BF16);
    llama_as_builtin(&a100, MB_BF16);
    llama_as_builtin(&cpu, MB_F32);
    gpt2(&h100);
    gpt2(&cpu);
    gpt2_linear_as_builtin(&h100);
    gpt2_linear_as_builtin(&a100);
    gpt2_linear_as_builtin(&cpu);
    attention_as_builtin(&h100, MB_BF16);
    attention_as_builtin(&a100, MB_F32);
    norm_not_in_epilogue(&h100);
    nograd_weight(&h100);
    loss(&h100);
    errors();
    return mb_test_done();
}
