/* test_model_plans.c — the lecture's counts for the built-in variants, the
 * backward plans, the cache-aware DRAM figures and the time formula checked
 * against a hand calculation on a device file written here. */
#include "membound_model.h"
#include "mb_test.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static mb_device h100(void)
{
    mb_device d;
    mb_err e;
    if (mb_device_find("h100-sxm", &d, &e) != MB_OK) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    return d;
}

/* traffic of variant v, plan k at n on d */
static mb_estimate est(const char *v, mb_dtype t, mb_plan_kind k, int64_t n, const mb_device *d, int *kernels)
{
    mb_graph *g;
    mb_plan *p;
    mb_err e;
    mb_estimate out;
    memset(&out, 0, sizeof out);
    if (mb_variant_load(v, t, &g, &e) || mb_plan_build(g, k, &p, &e) || mb_estimate_plan(p, n, d, &out, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    if (kernels) *kernels = p->n_kernels;
    mb_plan_free(p);
    mb_graph_free(g);
    return out;
}

static void check_lecture_counts(void)
{
    mb_device d = h100();
    int64_t n = 1 << 24;
    int kern;
    mb_estimate e = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, n, &d, &kern);
    CHECK_EQ_I64(kern, 5);
    CHECK_EQ_I64(e.total.read_bytes, 6 * 4 * n);
    CHECK_EQ_I64(e.total.write_bytes, 5 * 4 * n);
    mb_estimate_free(&e);
    e = est("sin2_plus_cos2", MB_F32, MB_PLAN_FUSED, n, &d, &kern);
    CHECK_EQ_I64(kern, 1);
    CHECK_EQ_I64(e.total.read_bytes, 4 * n);
    CHECK_EQ_I64(e.total.write_bytes, 4 * n);
    mb_estimate_free(&e);

    e = est("gelu_tanh", MB_F32, MB_PLAN_EAGER, n, &d, &kern);
    CHECK_EQ_I64(kern, 8);
    CHECK_EQ_I64(e.total.read_bytes, 10 * 4 * n);
    CHECK_EQ_I64(e.total.write_bytes, 8 * 4 * n);
    mb_estimate_free(&e);
    e = est("gelu_tanh", MB_F32, MB_PLAN_FUSED, n, &d, &kern);
    CHECK_EQ_I64(e.total.read_bytes + e.total.write_bytes, 2 * 4 * n);
    mb_estimate_free(&e);

    /* sigmoid3 forward + backward at 2^20: 15n, 9n, 5n; saved 3, 3, 1 tensors */
    n = 1 << 20;
    static const struct { mb_plan_kind k; int elems; long long saved; } s3[] = {
        {MB_PLAN_EAGER, 15, 12582912}, {MB_PLAN_STORE, 9, 12582912}, {MB_PLAN_RECOMPUTE, 5, 4194304}};
    for (int i = 0; i < 3; i++) {
        e = est("sigmoid3", MB_F32, s3[i].k, n, &d, &kern);
        CHECK_EQ_I64(e.total.read_bytes + e.total.write_bytes, (int64_t)s3[i].elems * 4 * n);
        CHECK_EQ_I64(e.saved_bytes, s3[i].saved);
        mb_estimate_free(&e);
    }
    e = est("sigmoid3", MB_F32, MB_PLAN_EAGER, n, &d, &kern);
    CHECK_EQ_I64(kern, 6); /* three forward, three backward */
    mb_estimate_free(&e);

    /* bf16 copy moves half the bytes of f32 copy */
    n = 1 << 25;
    mb_estimate a = est("copy", MB_F32, MB_PLAN_EAGER, n, &d, NULL);
    mb_estimate b = est("copy", MB_BF16, MB_PLAN_EAGER, n, &d, NULL);
    CHECK_EQ_I64(a.total.read_bytes + a.total.write_bytes, 8 * n);
    CHECK_EQ_I64(2 * (b.total.read_bytes + b.total.write_bytes), a.total.read_bytes + a.total.write_bytes);
    CHECK(b.total.time_s < a.total.time_s);
    mb_estimate_free(&a);
    mb_estimate_free(&b);
}

/* Cache-aware DRAM bytes: equal to the lecture's count for tensors many
 * times the cache, below it when they fit (the knee). */
static void check_cache_model(void)
{
    mb_device d = h100(); /* 50 MiB L2 */
    mb_estimate big = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, (int64_t)1 << 28, &d, NULL);
    CHECK_EQ_I64(big.total.dram_read_bytes, big.total.read_bytes);
    CHECK_EQ_I64(big.total.dram_write_bytes, big.total.write_bytes);
    mb_estimate_free(&big);
    /* 4 MiB tensors: every intermediate is re-read from L2, only x comes from DRAM */
    mb_estimate small = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, (int64_t)1 << 20, &d, NULL);
    CHECK(small.total.dram_read_bytes < small.total.read_bytes);
    CHECK_EQ_I64(small.total.dram_read_bytes, 4 << 20);
    mb_estimate_free(&small);
    /* the fused kernel reads x cold whatever its size */
    mb_estimate f = est("sin2_plus_cos2", MB_F32, MB_PLAN_FUSED, (int64_t)1 << 20, &d, NULL);
    CHECK_EQ_I64(f.total.dram_read_bytes, f.total.read_bytes);
    mb_estimate_free(&f);
    /* DRAM bytes never exceed the lecture count, at any size */
    for (int lg = 10; lg <= 30; lg++) {
        mb_estimate x = est("gelu_tanh", MB_F32, MB_PLAN_EAGER, (int64_t)1 << lg, &d, NULL);
        CHECK(x.total.dram_read_bytes <= x.total.read_bytes);
        mb_estimate_free(&x);
    }
}

/* A write-allocate CPU (write_allocate = 1, cache 32 MiB): a store to a
 * tensor the cache does not hold reads it from DRAM first; tensors larger
 * than the cache (and of its size, with stream_at_cache_size) are streamed
 * (no read); the tensors the last kernel writes
 * are still dirty in the cache when the plan ends (written back after it);
 * the read bandwidth bounds the kernel's own reads, not the line fills. A
 * GPU spec (write_allocate 0) counts as before. */
static void check_write_allocate(void)
{
    mb_device d = h100();
    d.cache_mb = 32;
    d.cache_resident_mb = 0;
    d.cache_bandwidth_gbs = 0;
    d.read_bandwidth_gbs = 0;
    const int64_t small = (int64_t)1 << 20, big = (int64_t)1 << 25; /* 4 MiB, 128 MiB f32 */
    mb_estimate g0 = est("copy", MB_F32, MB_PLAN_EAGER, small, &d, NULL);
    d.write_allocate = 1;
    mb_estimate c = est("copy", MB_F32, MB_PLAN_EAGER, small, &d, NULL);
    CHECK_EQ_I64(g0.total.dram_read_bytes, 4 << 20);   /* x */
    CHECK_EQ_I64(g0.total.dram_write_bytes, 4 << 20);  /* y, eventually */
    CHECK_EQ_I64(c.total.dram_read_bytes, 8 << 20);    /* x, and y's lines before the store */
    CHECK_EQ_I64(c.total.dram_write_bytes, 0);         /* y still in the cache at the end */
    mb_estimate cb = est("copy", MB_F32, MB_PLAN_EAGER, big, &d, NULL);
    CHECK_EQ_I64(cb.total.dram_read_bytes, cb.total.read_bytes); /* streamed: no line fill */
    CHECK_EQ_I64(cb.total.dram_write_bytes, cb.total.write_bytes);
    /* a tensor of the cache's size: line-filled and left in the cache under
     * an older spec's rule; streamed where the spec says the executors
     * stream it (stream_at_cache_size, as calibrate writes) */
    mb_estimate ce = est("copy", MB_F32, MB_PLAN_EAGER, (int64_t)1 << 23, &d, NULL); /* 32 MiB */
    CHECK_EQ_I64(ce.total.dram_read_bytes, 64 << 20);
    CHECK_EQ_I64(ce.total.dram_write_bytes, 0);
    mb_estimate_free(&ce);
    d.stream_at_cache_size = 1;
    ce = est("copy", MB_F32, MB_PLAN_EAGER, (int64_t)1 << 23, &d, NULL);
    CHECK_EQ_I64(ce.total.dram_read_bytes, 32 << 20);
    CHECK_EQ_I64(ce.total.dram_write_bytes, 32 << 20);
    mb_estimate_free(&ce);
    d.stream_at_cache_size = 0;
    /* eager sin^2+cos^2, 4 MiB tensors: every kernel's output is filled
     * before its store; only the last kernel's is left in the cache */
    int nk = 0;
    mb_estimate e = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, small, &d, &nk);
    CHECK_EQ_I64(nk, 5);
    CHECK_EQ_I64(e.total.dram_read_bytes, (int64_t)(1 + 5) << 22);
    CHECK_EQ_I64(e.total.dram_write_bytes, (int64_t)4 << 22);
    CHECK_EQ_I64(e.per_kernel[4].dram_write_bytes, 0);
    /* the read floor leaves the fills out: a copy at 1 GB/s of reads and
     * 1e6 GB/s of bandwidth takes x / read bandwidth, not x + y */
    d.read_bandwidth_gbs = 1;
    d.measured_bandwidth_gbs = d.mem_bandwidth_gbs = 1e6;
    d.launch_overhead_us = 0;
    mb_estimate f = est("copy", MB_F32, MB_PLAN_EAGER, small, &d, NULL);
    CHECK_NEAR(f.per_kernel[0].mem_s, (double)(4 << 20) / 1e9, 1e-12);
    mb_estimate_free(&g0);
    mb_estimate_free(&c);
    mb_estimate_free(&cb);
    mb_estimate_free(&e);
    mb_estimate_free(&f);
}

/* time = launch + max(DRAM bytes / bandwidth, compute), on numbers chosen here */
static void check_time_formula(void)
{
    char path[] = "/tmp/mb_spec_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, "[device]\nname = handcalc\nlabel = Hand calculation\nmem_bandwidth_gbs = 1000\n"
                "cache_mb = 1\nfp32_tflops = 0.001\nbf16_tflops = 0.01\nsfu_tops = 0.0001\nlaunch_overhead_us = 5\n"
                "mem_gb = 16\nsource = written by test_model_plans\n");
    fclose(fp);
    mb_device d;
    mb_err e;
    int found = mb_device_find(path, &d, &e);
    if (found) fprintf(stderr, "  %s\n", e.msg);
    CHECK(found == MB_OK);
    if (found) return;
    unlink(path);

    int64_t n = 1 << 24;
    /* copy: 2 * 4n bytes at 1e12 B/s, no compute */
    mb_estimate c = est("copy", MB_F32, MB_PLAN_EAGER, n, &d, NULL);
    CHECK_NEAR(c.total.time_s, 5e-6 + 8.0 * n / 1e12, 1e-12);
    CHECK(c.total.bound == MB_BOUND_MEMORY);
    CHECK(!strcmp(c.bandwidth_source, "datasheet"));
    mb_estimate_free(&c);

    /* sin2_plus_cos2 fused on a slow ALU: sin, cos = 4 flops + 1 SFU each,
     * two squares = 1 flop each, add = 1 flop: 11 flops, 2 SFU per element.
     * flops are instructions, at half the FMA-counting peak: 11n / 0.5e9 s;
     * SFU: 2n / 1e8 s. */
    mb_estimate f = est("sin2_plus_cos2", MB_F32, MB_PLAN_FUSED, n, &d, NULL);
    double sfu_s = 2.0 * n / 1e8, flop_s = 11.0 * n / 0.5e9;
    CHECK_NEAR(f.total.compute_s, sfu_s > flop_s ? sfu_s : flop_s, 1e-12);
    CHECK_NEAR(f.total.time_s, 5e-6 + f.total.compute_s, 1e-12);
    CHECK(f.total.bound == MB_BOUND_COMPUTE);
    mb_estimate_free(&f);

    /* measured bandwidth wins over the datasheet when the spec has it */
    d.measured_bandwidth_gbs = 500;
    c = est("copy", MB_F32, MB_PLAN_EAGER, n, &d, NULL);
    CHECK_NEAR(c.total.time_s, 5e-6 + 8.0 * n / 5e11, 1e-12);
    CHECK(!strcmp(c.bandwidth_source, "measured"));
    mb_estimate_free(&c);

    /* serial_fraction: the part of the shorter term not hidden by the longer */
    mb_device cpu = d;
    snprintf(cpu.kind, sizeof cpu.kind, "cpu");
    cpu.op_geps[MB_OP_SIN] = 1; /* 1e9 elements/s: compute n / 1e9 s, memory 8n / 5e11 s */
    cpu.serial_fraction = 0.25;
    f = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, n, &cpu, NULL);
    CHECK_NEAR(f.per_kernel[0].time_s, 5e-6 + n / 1e9 + 0.25 * 8.0 * n / 5e11, 1e-12);
    mb_estimate_free(&f);
    /* a kernel run compiled (compiled rates in the spec) that reads one tensor
     * and writes one takes serial_fraction_compiled where the spec gives it:
     * sin^2+cos^2 fused; sigmoid3 recompute's forward too, not its backward
     * (two reads); without the key, serial_fraction for all */
    mb_device cc = cpu;
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) cc.op_compiled_geps[op] = 1;
    cc.serial_fraction_compiled = 0.0625;
    for (int has = 0; has < 2; has++) {
        cc.given[MB_DK_serial_fraction_compiled] = (unsigned char)has;
        double beta = has ? 0.0625 : 0.25;
        f = est("sin2_plus_cos2", MB_F32, MB_PLAN_FUSED, n, &cc, NULL);
        const mb_cost *k = &f.per_kernel[0];
        CHECK(k->compute_s > k->mem_s && k->mem_s > 0);
        CHECK_NEAR(k->time_s, k->launch_s + k->compute_s + beta * k->mem_s, 1e-12);
        mb_estimate_free(&f);
        f = est("sigmoid3", MB_F32, MB_PLAN_RECOMPUTE, n, &cc, NULL);
        CHECK_EQ_I64(f.n_kernels, 2);
        for (int i = 0; i < f.n_kernels && i < 2; i++) {
            k = &f.per_kernel[i];
            double b = i == 0 ? beta : 0.25, lo = fmin(k->mem_s, k->compute_s);
            CHECK(lo > 0);
            CHECK_NEAR(k->time_s, k->launch_s + fmax(k->mem_s, k->compute_s) + b * lo, 1e-12);
        }
        mb_estimate_free(&f);
        f = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, n, &cc, NULL); /* one op a kernel: interpreted */
        CHECK_NEAR(f.per_kernel[0].time_s, f.per_kernel[0].launch_s + fmax(f.per_kernel[0].mem_s,
                   f.per_kernel[0].compute_s) + 0.25 * fmin(f.per_kernel[0].mem_s, f.per_kernel[0].compute_s), 1e-12);
        mb_estimate_free(&f);
    }
    /* a read bandwidth bounds a kernel's reads, lowered per extra read stream:
     * the add reads 2 tensors of 4n bytes at 100 / (1 + 0.5) GB/s */
    cpu.read_bandwidth_gbs = 100;
    cpu.read_stream_penalty = 0.5;
    f = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, (int64_t)1 << 28, &cpu, NULL);
    CHECK_NEAR(f.per_kernel[4].mem_s, 2.0 * 4 * ((int64_t)1 << 28) / (1e11 / 1.5), 1e-12);
    mb_estimate_free(&f);
    /* or raised: 2 read streams at 100 x (1 + 0.5) GB/s, below the 11/4 of
     * the bandwidth term (12n bytes at 500 GB/s): that term rules; with the
     * read bandwidth at 10 GB/s the floor rules */
    cpu.read_stream_penalty = 0;
    cpu.read_stream_gain = 0.5;
    cpu.read_bandwidth_gbs = 10;
    f = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, (int64_t)1 << 28, &cpu, NULL);
    CHECK_NEAR(f.per_kernel[4].mem_s, 2.0 * 4 * ((int64_t)1 << 28) / (1e10 * 1.5), 1e-12);
    CHECK_NEAR(f.per_kernel[0].mem_s, 1.0 * 4 * ((int64_t)1 << 28) / 1e10, 1e-12); /* one stream: no gain */
    mb_estimate_free(&f);
    cpu.read_stream_gain = 0;
    cpu.read_bandwidth_gbs = 0;
    /* the interpreter copies each output out of its tile buffer, and widens
     * each 16-bit read into one: a copy per element each at the copy rate
     * (2e9/s here); the copy variant's one copy is the loop the bandwidth
     * probes time: its memory term alone */
    cpu.op_geps[MB_OP_COPY] = 2;
    f = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, n, &cpu, NULL);
    CHECK_NEAR(f.per_kernel[0].compute_s, n / 1e9 + n / 2e9, 1e-12);
    mb_estimate_free(&f);
    f = est("sin2_plus_cos2", MB_BF16, MB_PLAN_EAGER, n, &cpu, NULL);
    CHECK_NEAR(f.per_kernel[0].compute_s, n / 1e9 + 2 * n / 2e9, 1e-12);
    mb_estimate_free(&f);
    f = est("copy", MB_F32, MB_PLAN_EAGER, n, &cpu, NULL);
    CHECK_NEAR(f.per_kernel[0].compute_s, 0, 1e-15);
    CHECK_NEAR(f.per_kernel[0].time_s, f.per_kernel[0].launch_s + f.per_kernel[0].mem_s, 1e-15);
    mb_estimate_free(&f);
    cpu.op_geps[MB_OP_COPY] = 0;

    /* two-level roofline: with a cache bandwidth, cache hits are not free;
     * at 2^20 on 50 MiB every intermediate hits, but all 11n bytes still
     * stream through the cache */
    mb_device h = h100();
    h.cache_bandwidth_gbs = 1000;
    f = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, (int64_t)1 << 20, &h, NULL);
    double t_cache = 0;
    for (int k = 0; k < f.n_kernels; k++) t_cache += f.per_kernel[k].mem_s;
    CHECK_NEAR(t_cache, 11.0 * 4 * (1 << 20) / 1e12, 1e-9);
    mb_estimate_free(&f);

    /* a measured op rate replaces the peak-based compute term */
    d.op_geps[MB_OP_SIN] = 0.5;
    c = est("sin2_plus_cos2", MB_F32, MB_PLAN_EAGER, n, &d, NULL);
    CHECK_NEAR(c.per_kernel[0].compute_s, n / 0.5e9, 1e-12);
    mb_estimate_free(&c);
}

/* the backward graph computes what autodiff should: check structure */
static void check_backward_structure(void)
{
    mb_graph *g;
    mb_err e;
    CHECK(mb_parse_expr("y = sin(x)**2 + cos(x)**2\nbackward", MB_F32, &g, &e) == MB_OK);
    CHECK(g->has_backward);
    CHECK_EQ_I64(g->n_inputs, 1);
    CHECK(g->grad_inputs[0] >= g->n_forward);
    mb_plan *p;
    CHECK(mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_EINPUT); /* fused is forward-only */
    CHECK(strstr(e.msg, "plans: eager, store, recompute") != NULL);
    CHECK(mb_plan_build(g, MB_PLAN_RECOMPUTE, &p, &e) == MB_OK);
    /* recompute: backward reads only the input and the incoming gradient */
    CHECK_EQ_I64(p->n_kernels, 2);
    CHECK_EQ_I64(p->kernels[1].n_reads, 2);
    CHECK_EQ_I64(p->n_saved, 1);
    CHECK_EQ_I64(p->saved[0], g->inputs[0]);
    mb_plan_free(p);
    CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
    /* x feeds sin and cos: one gradient accumulation kernel */
    int adds = 0;
    for (int k = 0; k < p->n_kernels; k++) adds += !strcmp(p->kernels[k].name, "add_grad");
    CHECK_EQ_I64(adds, 1);
    mb_plan_free(p);
    mb_graph_free(g);

    CHECK(mb_parse_expr("y = x * 2\nbackward", MB_F32, &g, &e) == MB_OK);
    mb_graph_free(g);

    /* a fused kernel drops statements that reach no output; eager runs them */
    CHECK(mb_parse_expr("z = sin(w); y = cos(x)", MB_F32, &g, &e) == MB_OK);
    CHECK(mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_OK);
    CHECK_EQ_I64(p->kernels[0].n_nodes, 1);
    CHECK_EQ_I64(p->kernels[0].n_reads, 1);
    mb_plan_free(p);
    CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
    CHECK_EQ_I64(p->n_kernels, 2);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* The eager backward launches what PyTorch 1.13 and 2.x launch under
 * y.backward(g) (their kernel-launching aten calls, as tests/torch_oracle.py
 * records them; add_grad is autograd's accumulation add): fused *_backward
 * kernels where PyTorch has one, each step of a composite formula otherwise,
 * one kernel per tensor operand, and AccumulateGrad's copy of a gradient it
 * cannot take over (the incoming gradient itself, or one another input's
 * gradient also holds). */
static void check_eager_backward_kernels(void)
{
    static const struct { const char *expr, *kernels; } cases[] = {
        {"y = sin(x)**2 + cos(x)**2", "pow mul mul sin neg mul pow mul mul cos mul add_grad"},
        {"y = sigmoid(sigmoid(sigmoid(x)))", "sigmoid_backward sigmoid_backward sigmoid_backward"},
        {"y = x * sigmoid(x)", "mul mul sigmoid_backward add_grad"},
        {"y = exp(x) * x", "mul mul mul add_grad"},
        {"y = x * w", "mul mul"},
        {"y = x * x", "mul mul add_grad"},
        {"y = x / w", "div div neg mul div"},
        {"y = x / 2.0", "div"},
        {"y = 2.0 / x", "mul mul neg mul"},
        {"y = 1 - x", "neg"},
        {"y = x - w", "neg copy"},
        {"y = x + 0.5", "copy"},
        {"y = x + w", "copy copy"},
        {"y = (x + w) * 2.0", "mul copy"},
        {"y = tan(x)", "pow add mul"},
        {"y = tanh(x) + relu(x) + gelu(x)", "gelu_backward threshold_backward add_grad tanh_backward add_grad"},
        {"y = sqrt(x) + rsqrt(w)", "pow mul mul mul div"},
        {"y = erf(x)", "pow neg exp mul mul"},
        {"y = abs(x) * 3.0", "mul sign mul"},
        {"y = softplus(x) + silu(w) + log(x)", "div silu_backward softplus_backward add_grad"},
        {"y = copy(x) + x", "add_grad"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[160], got[512] = "";
        snprintf(text, sizeof text, "%s\nbackward", cases[c].expr);
        mb_graph *g;
        mb_plan *p;
        mb_err e;
        CHECK(mb_parse_expr(text, MB_F32, &g, &e) == MB_OK);
        CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
        for (int k = 0; k < p->n_kernels; k++) {
            if (!p->kernels[k].is_backward) continue;
            if (got[0]) strcat(got, " ");
            strncat(got, p->kernels[k].name, sizeof got - strlen(got) - 1);
        }
        if (strcmp(got, cases[c].kernels))
            fprintf(stderr, "%s: eager backward '%s', PyTorch '%s'\n", cases[c].expr, got, cases[c].kernels);
        CHECK(strcmp(got, cases[c].kernels) == 0);
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* A [cols] weight's gradient, a sum over the rows: eager launches PyTorch's
 * kernels (torch 1.13's, tests/torch_oracle_rows.py: a sum(dim=0) per weight
 * after the op's own), store, recompute and optimal a column kernel after
 * the fused backward one that holds every colsum, reads only what that
 * kernel wrote, the incoming gradient and [cols] tensors, and writes only
 * [cols] gradients. */
static void check_column_plans(void)
{
    static const struct { const char *variant, *eager_bwd; } cases[] = {
        {"layernorm_affine_bwd", "colsum mul mul colsum mul mul sum pow mul mul div mul mul add_grad add_grad neg "
                                 "sum div add_grad"},
        {"rmsnorm_affine_bwd", "mul mul colsum mul mul sum pow mul mul div pow mul mul add_grad"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mb_graph *g = NULL;
        mb_err e;
        CHECK(mb_variant_load(cases[c].variant, MB_F32, &g, &e) == MB_OK);
        if (!g) continue;
        for (int k = MB_PLAN_EAGER; k < MB_PLAN_COUNT; k++) {
            mb_plan *p = NULL;
            if (!mb_plan_supported(g, (mb_plan_kind)k)) continue;
            CHECK(mb_plan_build(g, (mb_plan_kind)k, &p, &e) == MB_OK);
            if (!p) continue;
            if (k == MB_PLAN_EAGER) {
                char got[512] = "";
                for (int j = 0; j < p->n_kernels; j++) {
                    if (!p->kernels[j].is_backward) continue;
                    if (got[0]) strcat(got, " ");
                    strncat(got, p->kernels[j].name, sizeof got - strlen(got) - 1);
                }
                if (strcmp(got, cases[c].eager_bwd)) fprintf(stderr, "%s eager backward '%s'\n", cases[c].variant, got);
                CHECK(!strcmp(got, cases[c].eager_bwd));
                mb_plan_free(p);
                continue;
            }
            CHECK_EQ_I64(p->n_kernels, 3);
            const mb_kernel *C = &p->kernels[p->n_kernels - 1];
            CHECK(C->is_backward && strstr(C->name, "_colsum") != NULL);
            int sums = 0;
            for (int j = 0; j < C->n_nodes; j++) sums += p->g->nodes[C->nodes[j]].op == MB_OP_COLSUM;
            CHECK_EQ_I64(sums, g->n_inputs - 1); /* one per weight and bias */
            for (int j = 0; j < p->kernels[1].n_nodes; j++)
                CHECK(p->g->nodes[p->kernels[1].nodes[j]].op != MB_OP_COLSUM);
            for (int r = 0; r < C->n_reads; r++) {
                const mb_node *t = &p->g->nodes[C->reads[r]];
                int from_bwd = 0;
                for (int w = 0; w < p->kernels[1].n_writes; w++) from_bwd |= p->kernels[1].writes[w] == C->reads[r];
                CHECK(from_bwd || (t->op == MB_OP_INPUT && C->reads[r] >= g->n_forward) || t->shape == MB_SHC_COL);
            }
            for (int w = 0; w < C->n_writes; w++) CHECK_EQ_I64(p->g->nodes[C->writes[w]].shape, MB_SHC_COL);
            mb_plan_free(p);
        }
        mb_graph_free(g);
    }
}

/* variant's recompute plan with its [cols] gradients summed as how, and
 * its estimate at R x C on d: 1 when all three were made. */
static int colsum_plan(const char *variant, mb_colsum how, int64_t R, int64_t C, const mb_device *d, mb_graph **g,
                       mb_plan **p, mb_estimate *out)
{
    mb_err e;
    *g = NULL;
    *p = NULL;
    memset(out, 0, sizeof *out);
    CHECK(mb_variant_load(variant, MB_F32, g, &e) == MB_OK);
    if (!*g) return 0;
    (*g)->colsum = how;
    CHECK(mb_plan_build(*g, MB_PLAN_RECOMPUTE, p, &e) == MB_OK);
    CHECK(*p && mb_estimate_plan_shape(*p, (mb_shape){2, R, C, 0}, d, out, &e) == MB_OK);
    return *p && out->per_kernel;
}

/* --colsum partial (Liger's weight gradient): RMSNorm's recompute backward
 * at 4096x4096 f32 on h100-sxm writes dx and 132 SMs' partial sums of g x^
 * (132 x 4096 f32) instead of g x^ itself, the column kernel reads those
 * and writes w's gradient; LayerNorm's sums two (weight and bias: dy is
 * read once, by the row kernel); with fewer rows than SMs a block a row;
 * eager keeps sum(dim=0). Counted by hand. */
static void check_partial_colsums(void)
{
    const mb_device d = h100();
    const int64_t R = 4096, C = 4096, n = R * C, part = 132 * C * 4;
    static const struct { const char *variant; int sums; } cases[] = {{"rmsnorm_affine_bwd", 1},
                                                                      {"layernorm_affine_bwd", 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mb_graph *g;
        mb_plan *p;
        mb_err e;
        mb_estimate out;
        if (!colsum_plan(cases[c].variant, MB_COLSUM_PARTIAL, R, C, &d, &g, &p, &out)) continue;
        CHECK_EQ_I64(p->n_kernels, 3);
        CHECK_EQ_I64(out.per_kernel[1].read_bytes, 2 * n * 4 + C * 4); /* x, dy, w (b: not needed) */
        CHECK_EQ_I64(out.per_kernel[1].write_bytes, n * 4 + cases[c].sums * part);
        CHECK_EQ_I64(out.per_kernel[2].read_bytes, cases[c].sums * part);
        CHECK_EQ_I64(out.per_kernel[2].write_bytes, cases[c].sums * C * 4);
        mb_estimate_free(&out);
        /* a compiled kernel's partial sums: a load and a store of the block's row an
         * element (LayerNorm's bias sum reads dy in one pass more: 5 more, not 4) */
        mb_plan *w = NULL;
        g->colsum = MB_COLSUM_WRITTEN;
        CHECK(mb_plan_build(g, MB_PLAN_RECOMPUTE, &w, &e) == MB_OK);
        g->colsum = MB_COLSUM_PARTIAL;
        if (w)
            CHECK(mb_kernel_onepass_cache_accesses(p->g, &p->kernels[1]) ==
                  mb_kernel_onepass_cache_accesses(w->g, &w->kernels[1]) + 2 * cases[c].sums + (cases[c].sums - 1));
        mb_plan_free(w);
        CHECK(mb_estimate_plan_shape(p, (mb_shape){2, 64, C, 0}, &d, &out, &e) == MB_OK);
        if (out.per_kernel) CHECK_EQ_I64(out.per_kernel[2].read_bytes, cases[c].sums * 64 * C * 4);
        mb_estimate_free(&out);
        mb_plan_free(p);
        CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
        for (int v = 0; p && v < p->g->n_nodes; v++) CHECK(p->g->nodes[v].shape != MB_SHC_PART);
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* colsum reread (Inductor's dx and dw/db reductions, two kernels): the
 * column kernel computes x_hat and its products with dy again from x, dy
 * and the row statistics the fused backward writes (RMSNorm's rstd,
 * LayerNorm's mean and rstd: R x 4 B each), instead of reading g x_hat
 * written by it. RMSNorm's recompute backward stays 5n (the term is f32
 * either way), LayerNorm's goes from 6n to 5n (its bias's dy was read
 * again already). */
static void check_reread_colsums(void)
{
    const mb_device d = h100();
    const int64_t R = 4096, C = 4096, n = R * C;
    static const struct { const char *variant; int sums, stats; } cases[] = {{"rmsnorm_affine_bwd", 1, 1},
                                                                             {"layernorm_affine_bwd", 2, 2}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mb_graph *g;
        mb_plan *p;
        mb_estimate out;
        if (!colsum_plan(cases[c].variant, MB_COLSUM_REREAD, R, C, &d, &g, &p, &out)) continue;
        CHECK_EQ_I64(p->n_kernels, 3);
        CHECK_EQ_I64(out.per_kernel[1].read_bytes, 2 * n * 4 + C * 4); /* x, dy, w */
        CHECK_EQ_I64(out.per_kernel[1].write_bytes, n * 4 + cases[c].stats * R * 4); /* dx, the statistics */
        CHECK_EQ_I64(out.per_kernel[2].read_bytes, 2 * n * 4 + cases[c].stats * R * 4);
        CHECK_EQ_I64(out.per_kernel[2].write_bytes, cases[c].sums * C * 4);
        int clones = 0; /* the column kernel's own x_hat: nodes after the plan's graph as built */
        for (int j = 0; j < p->kernels[2].n_nodes; j++) clones += p->kernels[2].nodes[j] >= g->n_nodes;
        CHECK(clones > 0);
        mb_estimate_free(&out);
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* A row held in registers alone (a Triton program a row, Liger's norms): 4 B
 * a column for each full-row read used in two passes, each [cols] operand
 * and each partial sum. RMSNorm's recompute backward with partial sums:
 * x, dy, w and dW's partials, 16 B, 16384 columns in the 256 KiB of an
 * NVIDIA SM; LayerNorm's: dB's partials too, 20 B, 13107; the forward x
 * and w, 8 B, 32768. A one-pass kernel needs none; a device without
 * register_kib gives no limit (0). */
static void check_register_columns(void)
{
    const mb_device d = h100();
    CHECK(d.register_kib == 256);
    static const struct { const char *variant; double fwd, bwd; } cases[] = {{"rmsnorm_affine_bwd", 8, 16},
                                                                              {"layernorm_affine_bwd", 12, 20}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mb_graph *g = NULL;
        mb_plan *p = NULL;
        mb_err e;
        CHECK(mb_variant_load(cases[c].variant, MB_F32, &g, &e) == MB_OK);
        if (!g) continue;
        g->colsum = MB_COLSUM_PARTIAL;
        CHECK(mb_plan_build(g, MB_PLAN_RECOMPUTE, &p, &e) == MB_OK);
        if (p && p->n_kernels == 3) {
            CHECK_NEAR(mb_kernel_register_bytes_per_col(p->g, &p->kernels[0]), cases[c].fwd, 0);
            CHECK_NEAR(mb_kernel_register_bytes_per_col(p->g, &p->kernels[1]), cases[c].bwd, 0);
            CHECK_EQ_I64(mb_kernel_register_max_cols(p->g, &p->kernels[1], &d), (int64_t)(262144 / cases[c].bwd));
            CHECK_NEAR(mb_kernel_register_bytes_per_col(p->g, &p->kernels[2]), 0, 0); /* the column kernel */
            CHECK_EQ_I64(mb_kernel_register_max_cols(p->g, &p->kernels[2], &d), INT64_MAX);
            mb_device none = d;
            none.register_kib = 0;
            CHECK_EQ_I64(mb_kernel_register_max_cols(p->g, &p->kernels[1], &none), 0);
        } else {
            CHECK(0);
        }
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* The cache between 1x and 4x: eager y = exp(x) + x re-reads x and t =
 * exp(x) in its second kernel, each 3 tensors (x, t, y) back. A 12 MiB
 * cache that still serves 6 MiB of a larger stream (cache_retained_mb)
 * serves all of it at 1x (3 x 4 MiB), 6/24 at 2x and 6/48 at 4x; without
 * the key the step: nothing beyond the cache. */
static void check_cache_retained(void)
{
    mb_device d = h100();
    d.cache_mb = 12;
    d.cache_resident_mb = 0;
    mb_graph *g;
    mb_plan *p;
    mb_err e;
    CHECK(mb_parse_expr("y = exp(x) + x", MB_F32, &g, &e) == MB_OK);
    CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
    CHECK_EQ_I64(p->n_kernels, 2);
    const double want_share[3] = {1, 6.0 / 24, 6.0 / 48};
    for (int k = 0; k < 3; k++) { /* 1x, 2x, 4x the cache */
        int64_t n = (int64_t)1 << (20 + k), S = 4 * n;
        for (int with = 0; with < 2; with++) {
            d.cache_retained_mb = with ? 6 : 0;
            mb_estimate x;
            CHECK(mb_estimate_plan(p, n, &d, &x, &e) == MB_OK);
            double share = k == 0 ? 1 : with ? want_share[k] : 0;
            CHECK_EQ_I64(x.per_kernel[0].dram_read_bytes, S); /* x's first touch */
            CHECK_EQ_I64(x.per_kernel[1].dram_read_bytes, (int64_t)llround(2.0 * (double)S * (1 - share)));
            mb_estimate_free(&x);
        }
    }
    CHECK_NEAR(mb_cache_share(12.0, 12.0, 6.0), 1, 0);
    CHECK_NEAR(mb_cache_share(24.0, 12.0, 6.0), 0.25, 1e-15);
    CHECK_NEAR(mb_cache_share(48.0, 12.0, 6.0), 0.125, 1e-15);
    CHECK_NEAR(mb_cache_share(13.0, 12.0, 30.0), 1, 0); /* never more than all of it */
    CHECK_NEAR(mb_cache_share(24.0, 12.0, 0), 0, 0);
    mb_plan_free(p);
    mb_graph_free(g);
}

int main(void)
{
    check_lecture_counts();
    check_cache_model();
    check_time_formula();
    check_write_allocate();
    check_cache_retained();
    check_backward_structure();
    check_eager_backward_kernels();
    check_column_plans();
    check_partial_colsums();
    check_reread_colsums();
    check_register_columns();
    return mb_test_done();
}
