/* test_model_mlp.c — the model of a transformer MLP (model/mlp.c) against
 * counts made by hand: each plan's FLOPs, a GEMM's bytes with its epilogue,
 * the hidden tensor written once by the fused plans and more often by eager,
 * the tensors autograd saves, the checkpointing choice flipping where the
 * recomputed GEMM's time crosses the stored tensors' traffic time and under
 * a memory budget, the frontier, and the errors. h100-sxm: 132 SMs, 50 MiB
 * L2, 2680 GB/s measured, FP32 66.9 and BF16 989.4 TFLOP/s, 3 us a launch. */
#include "membound_model.h"
#include "cpu_spec.h"
#include "mb_test.h"

#include <string.h>

static mb_device dev(const char *name)
{
    mb_device d;
    mb_err e;
    memset(&d, 0, sizeof d);
    if (mb_device_find(name, &d, &e)) fprintf(stderr, "%s\n", e.msg);
    return d;
}

static mb_mlp_est est;

static int run(const mb_device *d, mb_mlp_layer l, int64_t t, int64_t dm, int64_t ff, mb_dtype dt, int bwd)
{
    mb_mlp m = {l, t, dm, ff, dt, bwd};
    mb_err err;
    memset(&est, 0, sizeof est);
    int rc = mb_mlp_estimate(&m, d, &est, &err);
    if (rc) fprintf(stderr, "mlp: %s\n", err.msg);
    return rc;
}

static const mb_mlp_kernel *kernel(const mb_mlp_plan *p, const char *name)
{
    for (int i = 0; i < p->n_kernels; i++)
        if (!strcmp(p->k[i].name, name)) return &p->k[i];
    fprintf(stderr, "no kernel '%s'\n", name);
    return NULL;
}

static int count_gemms(const mb_mlp_plan *p, int backward)
{
    int n = 0;
    for (int i = 0; i < p->n_kernels; i++) n += p->k[i].gemm && p->k[i].backward == backward;
    return n;
}

static int expect_err(const mb_device *d, mb_mlp_layer l, int64_t t, int64_t dm, int64_t ff, mb_dtype dt,
                      const char *needle)
{
    mb_mlp m = {l, t, dm, ff, dt, 1};
    mb_err err;
    int rc = mb_mlp_estimate(&m, d, &est, &err);
    if (rc != MB_EINPUT || !strstr(err.msg, needle)) {
        fprintf(stderr, "expected an error with '%s', got rc %d '%s'\n", needle, rc, rc ? err.msg : "");
        return 0;
    }
    return 1;
}

/* On a CPU spec: every GEMM kernel timed by gemm.c's CPU rule, launch +
 * compute + memory (OpenBLAS's packing and C's passes do not overlap its
 * kernel: the rule max() would drop 10-12 ms of each of GPT-2 small's
 * 2048-token GEMMs on the 2-vCPU guest), and a fused epilogue's arithmetic
 * on the cores after each panel: the GEMM's compute plus the activation's,
 * which the act checkpoint's "gelu(a) again" kernel costs alone. */
static void cpu_rules(void)
{
    mb_device cpu;
    mb_err e;
    CHECK(mb_device_load_ini_text(MB_TEST_CPU_SPEC, "test_model_mlp", &cpu, &e) == MB_OK);
    CHECK(run(&cpu, MB_MLP_GPT2, 2048, 768, 3072, MB_F32, 1) == MB_OK);
    int gemms = 0;
    for (int p = 0; p < MB_MLP_N_PLANS; p++)
        for (int c = 0; c < est.n_ckpt; c++)
            for (int i = 0; est.supported[p] && est.plan[p][c].valid && i < est.plan[p][c].n_kernels; i++) {
                const mb_mlp_kernel *k = &est.plan[p][c].k[i];
                if (!k->gemm) continue;
                gemms++;
                CHECK_NEAR(k->time_s, k->launch_s + k->compute_s + k->mem_s, 1e-12);
            }
    CHECK(gemms >= 20);
    mb_gemm g = {.m = 2048, .n = 3072, .k = 768, .batch = 1, .dtype = MB_F32};
    mb_gemm_est ge;
    CHECK(mb_gemm_estimate(&g, &cpu, &ge, &e) == MB_OK);
    const mb_mlp_kernel *fk = kernel(&est.plan[MB_MLP_FUSED][MB_MLP_STORE], "addmm x@w1 +bias,gelu");
    const mb_mlp_kernel *again = kernel(&est.plan[MB_MLP_FUSED][MB_MLP_ACT], "gelu(a) again");
    if (fk && again) {
        CHECK(again->compute_s > 0);
        CHECK_NEAR(fk->compute_s, ge.compute_s + again->compute_s, 1e-12);
    }
    /* a GPU's epilogue adds nothing: the product's compute alone */
    const mb_device h100 = dev("h100-sxm");
    CHECK(run(&h100, MB_MLP_GPT2, 2048, 768, 3072, MB_F32, 1) == MB_OK);
    CHECK(mb_gemm_estimate(&g, &h100, &ge, &e) == MB_OK);
    fk = kernel(&est.plan[MB_MLP_FUSED][MB_MLP_STORE], "addmm x@w1 +bias,gelu");
    if (fk) CHECK_NEAR(fk->compute_s, ge.compute_s, 1e-12);
}

int main(void)
{
    const mb_device h100 = dev("h100-sxm");
    CHECK(!strcmp(h100.name, "h100-sxm"));
    /* T 1024, d 512, f 2048, f32: x 2 MiB, w1 4 MiB, the hidden 8 MiB; every
     * GEMM's operands fit the 50 MiB L2 together, so each is read once */
    const double T = 1024, D = 512, F = 2048, s = 4, hid = T * F * s, xs = T * D * s;
    int nrec;
    mb_err err;

    /* gpt2, forward: two GEMMs of 2 T d f each; fused has no other kernel */
    CHECK(run(&h100, MB_MLP_GPT2, 1024, 512, 2048, MB_F32, 0) == MB_OK);
    CHECK_EQ_I64(est.n_ckpt, 1);
    CHECK(!est.supported[MB_MLP_LIGER]);
    const mb_mlp_plan *fu = &est.plan[MB_MLP_FUSED][0], *ea = &est.plan[MB_MLP_EAGER][0];
    CHECK_EQ_I64(fu->n_kernels, 2);
    CHECK_NEAR(fu->flops, 2 * 2 * T * D * F, 1e-12);
    /* GELU_BIAS: reads x, w1 and b1, writes h once */
    const mb_mlp_kernel *k = kernel(fu, "addmm x@w1 +bias,gelu");
    CHECK(k != NULL);
    if (k) {
        CHECK_NEAR(k->dram_read_bytes, xs + D * F * s + F * s, 1e-12);
        CHECK_NEAR(k->dram_write_bytes, hid, 1e-12);
        CHECK(k->gemm && k->bound == MB_BOUND_COMPUTE);
        /* 2 T d f at 66.9 TFLOP/s over the tiles' efficiency <= 1 */
        CHECK(k->compute_s >= 2 * T * D * F / 66.9e12 * (1 - 1e-12));
    }
    CHECK_NEAR(fu->hidden_write_bytes, hid, 1e-12);
    CHECK_NEAR(fu->saved_bytes, 0, 1e-12);
    /* eager: addmm, the eight kernels of gelu_new, addmm; each of the nine
     * writes a [T, f] tensor: the hidden written 9 times against once */
    CHECK_EQ_I64(ea->n_kernels, 10);
    CHECK_NEAR(ea->hidden_write_bytes, 9 * hid, 1e-12);
    CHECK_NEAR(ea->dram_write_bytes - fu->dram_write_bytes, 8 * hid, 1e-12); /* every write reaches DRAM */
    CHECK(ea->time_s > fu->time_s);
    CHECK(ea->flops > fu->flops); /* the activation's elementwise FLOPs */

    /* llama, forward: fused one GEMM over [wg|wu] (2 T d 2f) and the down
     * one; c written once. eager writes a, b, silu(a), c; liger a, b, c */
    CHECK(run(&h100, MB_MLP_LLAMA, 1024, 512, 2048, MB_F32, 0) == MB_OK);
    CHECK(est.supported[MB_MLP_LIGER]);
    fu = &est.plan[MB_MLP_FUSED][0];
    ea = &est.plan[MB_MLP_EAGER][0];
    const mb_mlp_plan *li = &est.plan[MB_MLP_LIGER][0];
    CHECK_EQ_I64(fu->n_kernels, 2);
    CHECK_NEAR(fu->flops, 3 * 2 * T * D * F, 1e-12);
    k = kernel(fu, "mm x@[wg|wu] +act*mul");
    if (k) {
        CHECK_NEAR(k->flops, 2 * T * D * 2 * F, 1e-12);
        CHECK_NEAR(k->dram_write_bytes, hid, 1e-12); /* c, not [T, 2f] */
        CHECK_NEAR(k->dram_read_bytes, xs + D * 2 * F * s, 1e-12);
    }
    CHECK_NEAR(fu->hidden_write_bytes, hid, 1e-12);
    CHECK_NEAR(ea->hidden_write_bytes, 4 * hid, 1e-12);
    CHECK_NEAR(li->hidden_write_bytes, 3 * hid, 1e-12);
    CHECK_EQ_I64(ea->n_kernels, 5); /* mm, mm, silu, mul, mm */
    CHECK_EQ_I64(li->n_kernels, 4);
    k = kernel(li, "act*mul (liger)");
    if (k) { /* reads a and b, writes c */
        CHECK_NEAR(k->dram_read_bytes, 2 * hid, 1e-12);
        CHECK_NEAR(k->dram_write_bytes, hid, 1e-12);
    }
    CHECK(fu->time_s < li->time_s && li->time_s < ea->time_s);

    /* llama with backward: what autograd saves. eager: x, a (silu's input),
     * silu(a) and b (mul's), c (the down mm's); liger: x, a, b, c; fused: x,
     * the aux a|b, c; recompute: x alone */
    CHECK(run(&h100, MB_MLP_LLAMA, 1024, 512, 2048, MB_F32, 1) == MB_OK);
    CHECK_EQ_I64(est.n_ckpt, 3);
    CHECK_NEAR(est.plan[MB_MLP_EAGER][MB_MLP_STORE].saved_bytes, xs + 4 * hid, 1e-12);
    CHECK_EQ_I64(est.plan[MB_MLP_EAGER][MB_MLP_STORE].n_saved, 5);
    CHECK_NEAR(est.plan[MB_MLP_LIGER][MB_MLP_STORE].saved_bytes, xs + 3 * hid, 1e-12);
    CHECK_NEAR(est.plan[MB_MLP_FUSED][MB_MLP_STORE].saved_bytes, xs + 3 * hid, 1e-12);
    /* act keeps x and the activation's input, a and b, and runs the
     * activation again: eager silu and mul, liger its kernel, fused only
     * writes c again in the dact epilogue (which reads a|b anyway) */
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        CHECK(est.plan[p][MB_MLP_ACT].valid);
        CHECK_NEAR(est.plan[p][MB_MLP_ACT].saved_bytes, xs + 2 * hid, 1e-12);
    }
    nrec = 0;
    for (int i = 0; i < est.plan[MB_MLP_EAGER][MB_MLP_ACT].n_kernels; i++)
        nrec += est.plan[MB_MLP_EAGER][MB_MLP_ACT].k[i].recompute;
    CHECK_EQ_I64(nrec, 2);
    k = kernel(&est.plan[MB_MLP_FUSED][MB_MLP_ACT], "mm dY@wd^T +dact,c");
    if (k) CHECK_NEAR(k->dram_write_bytes, 3 * hid, 1e-12);
    CHECK_NEAR(est.plan[MB_MLP_FUSED][MB_MLP_ACT].flops, est.plan[MB_MLP_FUSED][MB_MLP_STORE].flops, 1e-12);
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        CHECK_NEAR(est.plan[p][MB_MLP_RECOMPUTE].saved_bytes, xs, 1e-12);
        CHECK_EQ_I64(est.plan[p][MB_MLP_RECOMPUTE].n_saved, 1);
        CHECK(!strcmp(est.plan[p][MB_MLP_RECOMPUTE].saved[0].name, "x"));
    }
    /* the backward's GEMMs: eager 6 (dc, dWd, and dx, dW per projection),
     * fused 4 (one over [wg|wu] each way); 3 x the forward's FLOPs */
    fu = &est.plan[MB_MLP_FUSED][MB_MLP_STORE];
    ea = &est.plan[MB_MLP_EAGER][MB_MLP_STORE];
    CHECK_EQ_I64(count_gemms(ea, 1), 6);
    CHECK_EQ_I64(count_gemms(fu, 1), 4);
    CHECK_NEAR(fu->flops, 3 * 3 * 2 * T * D * F, 1e-12);
    CHECK_NEAR(est.gemm_flops, 3 * 3 * 2 * T * D * F, 1e-12);
    CHECK(kernel(ea, "add dx (autograd)") && kernel(ea, "add dx (autograd)")->backward);
    k = kernel(fu, "mm dY@wd^T +dact"); /* reads dY, wd and a|b; writes da|db */
    if (k) {
        CHECK_NEAR(k->dram_read_bytes, xs + D * F * s + 2 * hid, 1e-12);
        CHECK_NEAR(k->dram_write_bytes, 2 * hid, 1e-12);
    }
    /* the fused forward writes the aux a|b only when it stores */
    CHECK_NEAR(kernel(fu, "mm x@[wg|wu] +act*mul")->dram_write_bytes, 3 * hid, 1e-12);
    const mb_mlp_plan *fr = &est.plan[MB_MLP_FUSED][MB_MLP_RECOMPUTE];
    CHECK_NEAR(fr->k[0].dram_write_bytes, hid, 1e-12);
    /* recompute runs the [wg|wu] GEMM again: 4 T d f FLOPs more */
    CHECK_NEAR(fr->flops - fu->flops, 2 * T * D * 2 * F, 1e-12);
    nrec = 0;
    for (int i = 0; i < fr->n_kernels; i++) nrec += fr->k[i].recompute && fr->k[i].backward;
    CHECK_EQ_I64(nrec, 1);
    /* eager's recomputation: both projections and silu, mul; not the down mm */
    nrec = 0;
    const mb_mlp_plan *er = &est.plan[MB_MLP_EAGER][MB_MLP_RECOMPUTE];
    for (int i = 0; i < er->n_kernels; i++) nrec += er->k[i].recompute;
    CHECK_EQ_I64(nrec, 4);

    /* gpt2 with backward: eager saves x, gelu_new's four tensors (a for pow,
     * tanh's output, the mul's two operands) and h; fused x, the aux a, h */
    CHECK(run(&h100, MB_MLP_GPT2, 1024, 512, 2048, MB_F32, 1) == MB_OK);
    CHECK_NEAR(est.plan[MB_MLP_EAGER][MB_MLP_STORE].saved_bytes, xs + 5 * hid, 1e-12);
    CHECK_NEAR(est.plan[MB_MLP_FUSED][MB_MLP_STORE].saved_bytes, xs + 2 * hid, 1e-12);
    /* act: x and a; fused runs gelu(a) again as one kernel reading a and writing h */
    CHECK_NEAR(est.plan[MB_MLP_EAGER][MB_MLP_ACT].saved_bytes, xs + hid, 1e-12);
    CHECK_NEAR(est.plan[MB_MLP_FUSED][MB_MLP_ACT].saved_bytes, xs + hid, 1e-12);
    k = kernel(&est.plan[MB_MLP_FUSED][MB_MLP_ACT], "gelu(a) again");
    if (k) {
        CHECK(k->recompute && k->backward && !k->gemm);
        CHECK_NEAR(k->dram_write_bytes, hid, 1e-12);
    }
    ea = &est.plan[MB_MLP_EAGER][MB_MLP_STORE];
    k = kernel(ea, "sum dA (b1)"); /* the bias's gradient: reads dA, writes f */
    if (k) {
        CHECK_NEAR(k->dram_write_bytes, F * s, 1e-12);
        CHECK(k->backward && !k->gemm);
    }
    CHECK(kernel(ea, "sum dY (b2)") != NULL);
    k = kernel(&est.plan[MB_MLP_FUSED][MB_MLP_STORE], "mm dY@w2^T +dgelu,bgrad");
    if (k) { /* reads the aux a beside dY and w2; writes dA and b1's gradient */
        CHECK_NEAR(k->dram_read_bytes, xs + D * F * s + hid, 1e-12);
        CHECK_NEAR(k->dram_write_bytes, hid + F * s, 1e-12);
    }

    /* linear-layernorm: eager addmm, layer_norm; backward the norm's two
     * kernels, two mms, the bias's sum; fused takes the bias gradient in the
     * wgrad GEMM (BGRADB) instead of the sum */
    CHECK(run(&h100, MB_MLP_LINEAR_LN, 1024, 512, 2048, MB_F32, 1) == MB_OK);
    ea = &est.plan[MB_MLP_EAGER][MB_MLP_STORE];
    fu = &est.plan[MB_MLP_FUSED][MB_MLP_STORE];
    CHECK(kernel(ea, "layer_norm") && kernel(ea, "sum dy (b)"));
    CHECK_EQ_I64(ea->n_kernels, fu->n_kernels + 1);
    CHECK_NEAR(ea->saved_bytes, xs + hid, 1e-12); /* x, y (the norm's weight is a parameter) */
    CHECK(!est.plan[MB_MLP_EAGER][MB_MLP_ACT].valid && !est.plan[MB_MLP_FUSED][MB_MLP_ACT].valid);
    CHECK(mb_mlp_choose(&est, MB_MLP_FUSED, 0) != MB_MLP_ACT);
    CHECK(!mb_mlp_on_frontier(&est, MB_MLP_FUSED, MB_MLP_ACT));
    CHECK(fu->time_s < ea->time_s);
    CHECK(run(&h100, MB_MLP_LINEAR_RMS, 1024, 512, 2048, MB_F32, 0) == MB_OK);
    CHECK(kernel(&est.plan[MB_MLP_EAGER][0], "rms_norm") != NULL);

    /* the checkpointing choice: fused llama, bf16, T 16384, f 4096. Recompute
     * adds the [wg|wu] GEMM, 4 T d f FLOPs, and saves writing and reading
     * a|b, 4 T f s bytes less 2 T f s for dc: it wins while d < s x ridge / 2
     * = 369 (989.4e12 / 2680e9 = 369 FLOP/B) — at 256 recompute, at 384
     * store (the GEMMs' quantization moves the edge a little) */
    CHECK(run(&h100, MB_MLP_LLAMA, 16384, 256, 4096, MB_BF16, 1) == MB_OK);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, 0), MB_MLP_RECOMPUTE);
    CHECK(mb_mlp_on_frontier(&est, MB_MLP_FUSED, MB_MLP_RECOMPUTE));
    CHECK(!mb_mlp_on_frontier(&est, MB_MLP_FUSED, MB_MLP_STORE));
    CHECK(run(&h100, MB_MLP_LLAMA, 16384, 512, 4096, MB_BF16, 1) == MB_OK);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, 0), MB_MLP_STORE);
    CHECK(mb_mlp_on_frontier(&est, MB_MLP_FUSED, MB_MLP_STORE));
    /* eager's recomputation never pays: its forward writes the hidden anyway */
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_EAGER, 0), MB_MLP_STORE);
    /* a budget below the stored bytes makes act the choice (faster than
     * recompute here), below act's recompute; below x's bytes nothing fits */
    const double xb = 16384.0 * 512 * 2;
    CHECK(est.plan[MB_MLP_FUSED][MB_MLP_ACT].time_s < est.plan[MB_MLP_FUSED][MB_MLP_RECOMPUTE].time_s);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, est.plan[MB_MLP_FUSED][MB_MLP_STORE].saved_bytes - 1),
                 MB_MLP_ACT);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, est.plan[MB_MLP_FUSED][MB_MLP_ACT].saved_bytes - 1),
                 MB_MLP_RECOMPUTE);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, xb), MB_MLP_RECOMPUTE);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, xb - 1), -1);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, est.plan[MB_MLP_FUSED][MB_MLP_STORE].saved_bytes), MB_MLP_STORE);

    /* llama-7b at 4096 tokens, bf16: the dact GEMM is compute-bound, so
     * writing c again in its epilogue costs no time: act ties store and,
     * saving 90 MB less, is chosen */
    CHECK(run(&h100, MB_MLP_LLAMA, 4096, 4096, 11008, MB_BF16, 1) == MB_OK);
    CHECK_NEAR(est.plan[MB_MLP_FUSED][MB_MLP_ACT].time_s, est.plan[MB_MLP_FUSED][MB_MLP_STORE].time_s, 1e-12);
    CHECK_EQ_I64(mb_mlp_choose(&est, MB_MLP_FUSED, 0), MB_MLP_ACT);
    CHECK(!mb_mlp_on_frontier(&est, MB_MLP_FUSED, MB_MLP_STORE));

    /* roofline placement: llama-7b's MLP at 4096 tokens is compute-bound on
     * the H100 in bf16, at 8 tokens (decode) memory-bound on its weights */
    CHECK(run(&h100, MB_MLP_LLAMA, 4096, 4096, 11008, MB_BF16, 0) == MB_OK);
    CHECK(est.plan[MB_MLP_FUSED][0].bound == MB_BOUND_COMPUTE);
    CHECK(run(&h100, MB_MLP_LLAMA, 8, 4096, 11008, MB_BF16, 0) == MB_OK);
    CHECK(est.plan[MB_MLP_FUSED][0].bound == MB_BOUND_MEMORY);
    CHECK(est.plan[MB_MLP_FUSED][0].dram_read_bytes >= est.weight_bytes);

    /* the crossover in tokens: a GEMM's intensity against its weights is
     * about 2 T / s FLOP/B, T in bf16, so the fused forward turns
     * compute-bound near the ridge, 369 on the H100: at 512, not at 256 */
    mb_mlp q = {MB_MLP_LLAMA, 1, 4096, 11008, MB_BF16, 0};
    CHECK_EQ_I64(mb_mlp_compute_bound_tokens(&q, &h100, MB_MLP_FUSED, &err), 512);
    CHECK(run(&h100, MB_MLP_LLAMA, 256, 4096, 11008, MB_BF16, 0) == MB_OK);
    CHECK(est.plan[MB_MLP_FUSED][0].bound == MB_BOUND_MEMORY);
    q.layer = MB_MLP_GPT2;
    CHECK_EQ_I64(mb_mlp_compute_bound_tokens(&q, &h100, MB_MLP_LIGER, &err), -1);

    /* names */
    mb_mlp_layer l;
    mb_mlp_ckpt ck;
    CHECK(mb_mlp_layer_parse("linear-rmsnorm", &l, &err) == MB_OK && l == MB_MLP_LINEAR_RMS);
    CHECK(mb_mlp_layer_parse("mistral", &l, &err) == MB_EINPUT && strstr(err.msg, "gpt2, llama"));
    CHECK(mb_mlp_ckpt_parse("auto", &ck, &err) == MB_OK && ck == MB_MLP_AUTO);
    CHECK(mb_mlp_ckpt_parse("act", &ck, &err) == MB_OK && ck == MB_MLP_ACT);
    CHECK(mb_mlp_ckpt_parse("sometimes", &ck, &err) == MB_EINPUT && strstr(err.msg, "store, act, recompute"));

    /* errors */
    CHECK(expect_err(&h100, MB_MLP_LLAMA, 0, 512, 2048, MB_F32, "tokens, d_model and d_ff are at least 1"));
    CHECK(expect_err(&h100, MB_MLP_GPT2, 1 << 30, 1 << 20, 2048, MB_F32, "beyond 2^43"));
    const mb_device v100 = dev("v100");
    CHECK(expect_err(&v100, MB_MLP_LLAMA, 1024, 512, 2048, MB_BF16, "no bf16 GEMM rate"));
    cpu_rules();
    return mb_test_done();
}
