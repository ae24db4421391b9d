/* kernels_lang.c — the language's PyTorch forms on the executors: casts in
 * the middle of a graph (Hugging Face's LlamaRMSNorm), mixed dtypes, inputs
 * without gradients, losses that reduce every element (of a 1-D or a 2-D
 * tensor), a 4-D softmax of named
 * dimensions, and rms_norm as the CPU's composite kernels; every plan on
 * every executor against the float64 reference and finite differences. */
#include "kernels.h"
#include "membound_model.h"
#include "mb_test.h"

#include <stdio.h>
#include <string.h>

#define LLAMA                                                                                      \
    "input x [rows, cols] bf16\ninput w [cols] bf16\nh = x.to(f32)\n"                              \
    "v = h.pow(2).mean(-1, keepdim=True)\nh = h * rsqrt(v + 1e-6)\ny = w * h.to(bf16)\noutput y\nbackward\n"

static const struct {
    const char *text, *dims; /* dims: --dims for named dimensions, else NULL */
    int rank;
} cases[] = {
    {LLAMA, NULL, 2},
    {"input x [rows, cols] bf16\ninput w [cols] bf16 nograd\nh = x.to(f32)\n"
     "h = h * rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)\ny = w * h.to(bf16)\noutput y\nbackward\n", NULL, 2},
    {"input x [n] bf16\ninput z [n]\ny = sin(x * z).to(bf16) * 2\noutput y\nbackward\n", NULL, 1},
    {"input x [rows, cols]\ninput w [cols] nograd\ny = tanh(x * w)\noutput y\nbackward\n", NULL, 2},
    {"input x [rows, cols]\ninput w [cols] nograd\ny = rms_norm(x, w, eps=1e-6)\noutput y\nbackward\n", NULL, 2},
    {"input x [n]\ninput t [n] nograd\ninput m [n] nograd\nd = (x - t) * m\nloss = (d * d).mean()\n"
     "output loss\nbackward\n", NULL, 1},
    {"input x [n]\ny = exp(x).sum()\noutput y\nbackward\n", NULL, 1},
    {"input x [batch, heads, seq, head_dim]\ny = softmax(x, -1)\noutput y\nbackward\n",
     "batch=2,heads=3,seq=5,head_dim=200", 2},
    /* masks broadcast within the leading dimensions: a padding mask, a
     * causal one written 2-D, and one kept per head and query */
    {"input s [batch, heads, seq, key]\ninput m [batch, 1, 1, key] nograd\ny = softmax(s + m * -3, -1)\n"
     "output y\nbackward\n", "batch=2,heads=3,seq=5,key=301", 2},
    {"input s [batch, heads, seq, key]\ninput m [seq, key] nograd\ninput b [1, heads, 1, key] nograd\n"
     "y = softmax(s * 0.125 + m + b, -1)\noutput y\nbackward\n", "batch=2,heads=3,seq=5,key=301", 2},
    {"input s [batch, heads, seq, key]\ninput m [batch, heads, 1, key] nograd\nz = m * 2 + 1\n"
     "y = tanh(s) * z\noutput y\nbackward\n", "batch=2,heads=3,seq=5,key=301", 2},
    /* losses over a 2-D tensor: they run over its n elements (rank 1) */
    {"input x [batch, seq]\ninput t [batch, seq] nograd\ninput m [batch, seq] nograd\nd = (x - t) * m\n"
     "loss = (d * d).mean()\noutput loss\nbackward\n", "batch=5,seq=1001", 1},
    {"input x [b, s, d]\ny = exp(x).sum() * x + torch.amax(x)\noutput y\nbackward\n", "b=3,s=7,d=301", 1},
    {"input x [b, s, d]\ninput g [d]\ny = rms_norm(x, g) * x.mean(-1, keepdim=True)\noutput y\nbackward\n",
     "b=2,s=3,d=300", 2},
};

/* Runs every plan of g (built for device d) on every executor at shape s. */
static void run_all(const mb_graph *g, const mb_device *d, mb_shape s, int i)
{
    for (int k = MB_PLAN_EAGER; k < MB_PLAN_COUNT; k++) {
        if (!mb_plan_supported(g, (mb_plan_kind)k)) continue;
        mb_plan *p = NULL;
        mb_err e;
        int rc = mb_plan_build_on(g, (mb_plan_kind)k, d, &p, &e);
        if (rc) fprintf(stderr, "case %d plan %d: %s\n", i, k, e.msg);
        CHECK(rc == MB_OK);
        for (int ex = 0; ex < MB_KERN_EXEC_COUNT && p; ex++) {
            mb_kern_tensors t;
            CHECK(mb_kern_tensors_alloc_shape(p, s, 0, &t, &e) == MB_OK);
            CHECK(mb_kern_run_plan(&t, (mb_kern_exec)ex, &e) == MB_OK);
            mb_kern_check ck;
            CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK);
            double gerr = 0;
            int gok = 0;
            CHECK(mb_kern_gradcheck(&t, 24, &gerr, &gok, &e) == MB_OK);
            if (!ck.passed || !gok)
                fprintf(stderr, "case %d plan %s (%s) exec %d: max rel err %.3g (tol %.3g), gradcheck %.3g x tol\n",
                        i, mb_plan_name((mb_plan_kind)k), d->kind, ex, ck.max_rel_err, ck.tol, gerr);
            CHECK(ck.passed);
            CHECK(gok);
            mb_kern_tensors_free(&t);
        }
        mb_plan_free(p);
    }
}

int main(void)
{
    mb_device gpu, cpu;
    mb_err e;
    if (mb_device_find("h100-sxm", &gpu, &e) != MB_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    cpu = gpu;
    snprintf(cpu.kind, sizeof cpu.kind, "cpu");
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        mb_graph *g = NULL;
        int rc = mb_parse_variant(cases[i].text, "<test>", MB_F32, &g, &e);
        mb_shape s = cases[i].rank == 2 ? (mb_shape){2, 5, 3 * MB_KERN_TILE + 77, 0} : mb_shape_1d(4099);
        if (!rc && cases[i].dims) rc = mb_graph_bind_dims(g, cases[i].dims, &s, &e);
        if (rc) fprintf(stderr, "case %d: %s\n", i, e.msg);
        CHECK(rc == MB_OK);
        if (!rc) {
            CHECK_EQ_I64(g->rank, cases[i].rank);
            run_all(g, &gpu, s, i);
            run_all(g, &cpu, s, i); /* rms_norm: the composite's kernels */
        }
        mb_graph_free(g);
    }
    return mb_test_done();
}
