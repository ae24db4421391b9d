/* cuda_gpu.c — the CUDA kernels on a real GPU: every plan of every built-in
 * variant, --expr plans, a backward variant and a mixed-dtype plan, in f32,
 * bf16 and f16 at sizes with and without a vector tail, against the float64
 * reference (outputs poisoned first); hand-written kernels against the
 * evaluator bit for bit; which implementation each lecture kernel gets; one
 * full mb_meas_cuda_run (timing, check, counters when permitted) and one
 * in cuda_once mode (one checked sample, no counters); the row variants'
 * plans (the row evaluator: warp and block rows, one pass and multi-pass,
 * vector and odd row lengths) and the weights' gradients (the column
 * evaluator, launched twice) against the float64 reference, the one-pass
 * row the model keeps on chip but a block cannot hold run multi-pass and
 * said so, and one counted softmax row at 2^26 elements.
 * Exits 77 (skipped) without a GPU. */
#include "kernels_cuda.h"
#include "mb_cupti.h"
#include "mb_test.h"
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sm_count;
static int64_t dev_optin; /* shared memory a block may take, bytes */

/* The backend's notes and warnings, for the log. */
static void print_note(void *ctx, const char *level, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "membound: %s: %s\n", level, msg);
}

/* Runs plan p at n with flags; checks it against the reference; copies the
 * results' bytes into *res (malloc'd) when res is non-NULL. */
static void run_plan(const mb_plan *p, int64_t n, int flags, const char *what, void **res, size_t *res_bytes)
{
    mb_err e;
    mb_kern_cuda_plan *cp = NULL;
    mb_kern_tensors t;
    int rc = mb_kern_cuda_plan_new(p, n, sm_count, flags, &cp, &e);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) {
        fprintf(stderr, "%s: %s\n", what, e.msg);
        return;
    }
    rc = mb_kern_tensors_alloc(p, n, 0, &t, &e);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) {
        mb_kern_cuda_plan_free(cp);
        return;
    }
    CHECK_EQ_I64(mb_kern_cuda_upload_inputs(cp, &t, &e), MB_OK);
    CHECK_EQ_I64(mb_kern_cuda_poison(cp, 7, NULL, &e), MB_OK);
    CHECK_EQ_I64(mb_kern_cuda_launch_plan(cp, NULL, &e), MB_OK);
    CHECK_EQ_I64(mb_kern_cuda_download_results(cp, &t, &e), MB_OK);
    mb_kern_check ck;
    CHECK_EQ_I64(mb_kern_verify(&t, 7, 0, &ck, &e), MB_OK);
    CHECK(ck.passed);
    if (!ck.passed)
        fprintf(stderr, "%s n=%lld: %lld bad, %lld poisoned, max rel err %g (tol %g), first [%lld] got %g want %g\n",
                what, (long long)n, (long long)ck.bad, (long long)ck.poisoned, ck.max_rel_err, ck.tol,
                (long long)ck.first_bad, ck.first_got, ck.first_want);
    if (res) {
        size_t total = 0;
        for (int r = 0; r < p->n_results; r++)
            total += (size_t)n * mb_dtype_bytes(p->g->nodes[p->results[r]].dtype);
        char *buf = malloc(total);
        size_t off = 0;
        for (int r = 0; buf && r < p->n_results; r++) {
            size_t b = (size_t)n * mb_dtype_bytes(p->g->nodes[p->results[r]].dtype);
            memcpy(buf + off, t.data[p->results[r]], b);
            off += b;
        }
        *res = buf;
        *res_bytes = total;
    }
    mb_kern_tensors_free(&t);
    mb_kern_cuda_plan_free(cp);
}

/* Every supported plan of g: checked, and (when any kernel is hand-written)
 * identical to the evaluator's results. */
static void check_graph(const mb_graph *g, const char *name)
{
    const int64_t sizes[] = {1000003, 4096}; /* with and without a tail */
    for (int k = 0; k < MB_PLAN_COUNT; k++) {
        if (!mb_plan_supported(g, (mb_plan_kind)k)) continue;
        mb_plan *p = NULL;
        mb_err e;
        if (mb_plan_build(g, (mb_plan_kind)k, &p, &e) != MB_OK) {
            CHECK(0);
            continue;
        }
        for (int s = 0; s < 2; s++) {
            char what[160];
            snprintf(what, sizeof what, "%s %s %s", name, mb_plan_name((mb_plan_kind)k),
                     mb_dtype_name(g->nodes[g->inputs[0]].dtype));
            void *a = NULL, *b = NULL;
            size_t na = 0, nb = 0;
            run_plan(p, sizes[s], 0, what, &a, &na);
            run_plan(p, sizes[s], MB_KERN_CUDA_ALL_EVAL, what, &b, &nb);
            CHECK(a && b && na == nb && memcmp(a, b, na) == 0);
            free(a);
            free(b);
        }
        mb_plan_free(p);
    }
}

static void check_variant(const char *v, mb_dtype dt)
{
    mb_graph *g = NULL;
    mb_err e;
    int rc = mb_variant_load(v, dt, &g, &e);
    CHECK_EQ_I64(rc, MB_OK);
    if (rc) {
        fprintf(stderr, "%s: %s\n", v, e.msg);
        return;
    }
    check_graph(g, v);
    mb_graph_free(g);
}

/* Every plan of the row variants at shapes taking each path, on the GPU's
 * own on-chip size (spec) and on a 4 KiB chip (multi-pass beyond 1024 f32
 * columns), against the float64 reference; outputs poisoned first. */
static void check_rows(const mb_device *spec)
{
    /* the built-in row variants, then the library ops none of them spells
     * (hand-written row-op kernels too), then the weights' gradients (sums
     * over the rows: the column evaluator, its rows split among blocks at
     * 1100 rows), and those with colsum partial (a row group an SM, each
     * summing its rows into its row of the partial sums) */
    const char *vs[] = {"softmax",   "softmax_op", "layernorm", "rmsnorm", "log_softmax", "layer_norm", "rms_norm",
                        "layernorm_affine_bwd", "rmsnorm_affine_bwd", "layernorm_affine_bwd", "rmsnorm_affine_bwd"};
    const char *texts[] = {"name log_softmax\ninput x [rows, cols]\ny = log_softmax(x, -1)\noutput y\n",
                           "name layer_norm\ninput x [rows, cols]\ninput w [cols]\ny = layer_norm(x, w)\noutput y\n",
                           "name rms_norm\ninput x [rows, cols]\ninput w [cols]\ny = rms_norm(x, w)\noutput y\n"};
    const mb_dtype dts[] = {MB_F32, MB_BF16, MB_F16};
    const mb_shape shapes[] = {{2, 24, 1024, 0}, {2, 9, 37, 0}, {2, 5, 4100, 0}, {2, 3, 3001, 0}, {2, 130, 16384, 0}, {2, 1100, 301, 0}};
    mb_device tiny = *spec;
    tiny.onchip_kib = 4;
    for (int v = 0; v < 11; v++)
        for (int d = 0; d < 3; d++) {
            mb_graph *g = NULL;
            mb_err e;
            if ((v < 4 || v > 6 ? mb_variant_load(vs[v], dts[d], &g, &e)
                                : mb_parse_variant(texts[v - 4], "<test>", dts[d], &g, &e))
                != MB_OK) {
                CHECK(0);
                continue;
            }
            g->colsum = v >= 9 ? MB_COLSUM_PARTIAL : MB_COLSUM_WRITTEN;
            for (int pk = 0; pk < MB_PLAN_COUNT; pk++) {
                mb_plan *p = NULL;
                if (!mb_plan_supported(g, (mb_plan_kind)pk) || mb_plan_build(g, (mb_plan_kind)pk, &p, &e)) continue;
                for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
                    for (int t = 0; t < 2; t++) {
                        mb_kern_cuda_plan *cp = NULL;
                        mb_kern_tensors ht;
                        int rc = mb_kern_cuda_plan_new_shape(p, shapes[si], t ? &tiny : spec, sm_count, 0, &cp, &e);
                        if (rc) fprintf(stderr, "%s %s: %s\n", vs[v], mb_plan_name(p->kind), e.msg);
                        CHECK_EQ_I64(rc, MB_OK);
                        if (rc) continue;
                        rc = mb_kern_tensors_alloc_shape(p, shapes[si], 0, &ht, &e);
                        CHECK_EQ_I64(rc, MB_OK);
                        mb_kern_check ck;
                        memset(&ck, 0, sizeof ck);
                        if (!rc) {
                            CHECK_EQ_I64(mb_kern_cuda_upload_inputs(cp, &ht, &e), MB_OK);
                            CHECK_EQ_I64(mb_kern_cuda_poison(cp, 7, NULL, &e), MB_OK);
                            /* twice: a launch leaves the column kernels' arrival counters at 0 */
                            CHECK_EQ_I64(mb_kern_cuda_launch_plan(cp, NULL, &e), MB_OK);
                            CHECK_EQ_I64(mb_kern_cuda_launch_plan(cp, NULL, &e), MB_OK);
                            CHECK_EQ_I64(mb_kern_cuda_download_results(cp, &ht, &e), MB_OK);
                            CHECK_EQ_I64(mb_kern_verify(&ht, 7, 0, &ck, &e), MB_OK);
                            CHECK(ck.passed);
                            if (!ck.passed)
                                fprintf(stderr, "rows %s %s %s %lldx%lld%s (%s): %lld bad, %lld poisoned, max rel err %g\n",
                                        vs[v], mb_plan_name(p->kind), mb_dtype_name(dts[d]), (long long)shapes[si].rows,
                                        (long long)shapes[si].cols, t ? " 4 KiB chip" : "", mb_kern_cuda_plan_desc(cp, 0),
                                        (long long)ck.bad, (long long)ck.poisoned, ck.max_rel_err);
                            mb_kern_tensors_free(&ht);
                        }
                        mb_kern_cuda_plan_free(cp);
                    }
                mb_plan_free(p);
            }
            mb_graph_free(g);
        }
    /* the model keeps 123,904 f32 columns of softmax_op on chip on a
     * 484 KiB SM; a block's shared memory holds less: that kernel runs
     * multi-pass, says so, and still computes softmax */
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err e;
    if (mb_variant_load("softmax_op", MB_F32, &g, &e) == MB_OK && mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_OK) {
        const int64_t edge = mb_kernel_onepass_max_cols(&p->kernels[0], spec);
        mb_shape s = {2, 2, edge, 0};
        mb_kern_cuda_plan *cp = NULL;
        int rc = mb_kern_cuda_plan_new_shape(p, s, spec, sm_count, 0, &cp, &e);
        printf("softmax_op at %lld columns (the model's one-pass edge): %s\n", (long long)edge,
               rc ? e.msg : mb_kern_cuda_plan_desc(cp, 0));
        CHECK_EQ_I64(rc, MB_OK);
        if (rc == MB_OK && (int64_t)edge * 4 > dev_optin) {
            CHECK(mb_kern_cuda_plan_short_of_chip(cp, 0) && strstr(mb_kern_cuda_plan_desc(cp, 0), "multi-pass"));
            mb_kern_tensors ht;
            mb_kern_check ck;
            memset(&ck, 0, sizeof ck);
            if (mb_kern_tensors_alloc_shape(p, s, 0, &ht, &e) == MB_OK) {
                CHECK_EQ_I64(mb_kern_cuda_upload_inputs(cp, &ht, &e), MB_OK);
                CHECK_EQ_I64(mb_kern_cuda_poison(cp, 7, NULL, &e), MB_OK);
                CHECK_EQ_I64(mb_kern_cuda_launch_plan(cp, NULL, &e), MB_OK);
                CHECK_EQ_I64(mb_kern_cuda_download_results(cp, &ht, &e), MB_OK);
                CHECK_EQ_I64(mb_kern_verify(&ht, 7, 0, &ck, &e), MB_OK);
                CHECK(ck.passed);
                mb_kern_tensors_free(&ht);
            }
        }
        mb_kern_cuda_plan_free(cp);
    }
    mb_plan_free(p);
    mb_graph_free(g);
}

/* The implementation kernel k of variant v's plan gets. */
static mb_kern_cuda_impl impl_of(const char *v, mb_plan_kind kind, int k)
{
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_cuda_plan *cp = NULL;
    mb_err e;
    mb_kern_cuda_impl r = MB_KERN_CUDA_IMPL_COUNT;
    if (mb_variant_load(v, MB_F32, &g, &e) == MB_OK && mb_plan_build(g, kind, &p, &e) == MB_OK &&
        mb_kern_cuda_plan_new(p, 1024, sm_count, 0, &cp, &e) == MB_OK) {
        r = mb_kern_cuda_plan_impl(cp, k);
        printf("%s %s kernel %d: %s\n", v, mb_plan_name(kind), k, mb_kern_cuda_plan_desc(cp, k));
    }
    mb_kern_cuda_plan_free(cp);
    mb_plan_free(p);
    mb_graph_free(g);
    return r;
}

int main(void)
{
    char why[512];
    if (mb_kern_cuda_device_count(why, sizeof why) < 1) {
        printf("skipped: %s\n", why);
        return 77;
    }
    mb_err e;
    mb_kern_cuda_device dev;
    if (mb_kern_cuda_open(0, &dev, &e) != MB_OK) {
        printf("skipped: %s\n", e.msg);
        return 77;
    }
    sm_count = dev.sm_count;
    dev_optin = dev.smem_optin_bytes;
    printf("%s: %d SMs of %d threads, L2 %lld B, peak %.0f GB/s\n", dev.name, dev.sm_count,
           dev.max_threads_per_sm, (long long)dev.l2_bytes, dev.peak_bandwidth_gbs);
    CHECK(dev.sm_count > 0 && dev.l2_bytes > 0 && dev.peak_bandwidth_gbs > 0);
    /* whole row blocks resident, whole warps (the device table: 1024-2048) */
    CHECK(dev.max_threads_per_sm >= MB_ROW_BLOCK_THREADS && dev.max_threads_per_sm % 32 == 0);

    const char *variants[] = {"copy", "sin2_plus_cos2", "gelu_tanh", "sigmoid3"};
    const mb_dtype dts[] = {MB_F32, MB_BF16, MB_F16};
    for (int v = 0; v < 4; v++)
        for (int d = 0; d < 3; d++) check_variant(variants[v], dts[d]);

    /* which kernels are hand-written, per-op or evaluated */
    CHECK_EQ_I64(impl_of("copy", MB_PLAN_EAGER, 0), MB_KERN_CUDA_HAND);
    CHECK_EQ_I64(impl_of("sin2_plus_cos2", MB_PLAN_FUSED, 0), MB_KERN_CUDA_HAND);
    CHECK_EQ_I64(impl_of("sin2_plus_cos2", MB_PLAN_EAGER, 0), MB_KERN_CUDA_OP);
    CHECK_EQ_I64(impl_of("gelu_tanh", MB_PLAN_FUSED, 0), MB_KERN_CUDA_HAND);
    for (int k = 0; k < 2; k++) {
        CHECK_EQ_I64(impl_of("sigmoid3", MB_PLAN_STORE, k), MB_KERN_CUDA_HAND);
        CHECK_EQ_I64(impl_of("sigmoid3", MB_PLAN_RECOMPUTE, k), MB_KERN_CUDA_HAND);
    }
    CHECK_EQ_I64(impl_of("sigmoid3", MB_PLAN_EAGER, 3), MB_KERN_CUDA_EVAL); /* sigmoid backward: 3 nodes */

    /* --expr plans, a backward variant with a reused input, mixed dtypes */
    const char *exprs[] = {"y = x*x + log(x)/2 - rsqrt(x)", "y = gelu(x) * tanh(x) + abs(x)**1.5",
                           "y = relu(x - 0.25) * exp(-x**2)"};
    for (int i = 0; i < 3; i++) {
        mb_graph *g = NULL;
        if (mb_parse_expr(exprs[i], MB_F32, &g, &e) == MB_OK) check_graph(g, exprs[i]);
        else {
            CHECK(0);
            fprintf(stderr, "%s: %s\n", exprs[i], e.msg);
        }
        mb_graph_free(g);
    }
    const char *texts[] = {"name bwd\ninput x\ny = tanh(x) * sin(x) + x\noutput y\nbackward\n",
                           "name mixed\ninput x bf16\ninput w f32\ny = x * w + sin(x)\noutput y\n"};
    for (int i = 0; i < 2; i++) {
        mb_graph *g = NULL;
        if (mb_parse_variant(texts[i], "<test>", MB_F32, &g, &e) == MB_OK) check_graph(g, texts[i]);
        else {
            CHECK(0);
            fprintf(stderr, "%s\n", e.msg);
        }
        mb_graph_free(g);
    }

    /* the row variants, on this GPU's on-chip size */
    mb_device spec;
    memset(&spec, 0, sizeof spec);
    spec.onchip_kib = mb_kern_cuda_onchip_kib(&dev);
    spec.sm_count = dev.sm_count;
    spec.max_threads_per_sm = dev.max_threads_per_sm;
    printf("on chip: %.0f KiB per SM (shared %lld B, registers %lld), a block up to %lld B of shared memory\n",
           spec.onchip_kib, (long long)dev.smem_per_sm_bytes, (long long)dev.regs_per_sm,
           (long long)dev.smem_optin_bytes);
    CHECK(spec.onchip_kib > 64 && dev.smem_optin_bytes > 0);
    check_rows(&spec);

    /* one full measurement through the backend */
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    const mb_device *model = mb_device_at(0);
    if (mb_variant_load("sin2_plus_cos2", MB_F32, &g, &e) == MB_OK && mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_OK) {
        mb_meas_config c;
        mb_meas_config_default(&c);
        c.counters = 1;
        c.note = print_note;
        mb_meas_record row, pk[1];
        int64_t n = (int64_t)1 << 22;
        CHECK_EQ_I64(mb_meas_record_init(&row, pk, "sin2_plus_cos2", p, n, model, &e), MB_OK);
        char w2[512] = "";
        int rc = mb_meas_cuda_run(p, n, &c, &row, pk, w2, sizeof w2, &e);
        CHECK_EQ_I64(rc, MB_OK);
        if (rc) fprintf(stderr, "run: %s\n", e.msg);
        CHECK(row.verified);
        CHECK(row.reps >= 10);
        CHECK(row.time_s_min > 0 && row.time_s_min <= row.time_s_median && row.time_s_median <= row.time_s_p90);
        CHECK(!strcmp(row.backend, "cuda"));
        printf("run: %s %s: median %.3g s, counters %s, dram %lld / %lld B (model %lld / %lld)\n", row.device,
               row.plan, row.time_s_median, row.counters, (long long)row.dram_read_bytes,
               (long long)row.dram_write_bytes, (long long)row.model_dram_read_bytes,
               (long long)row.model_dram_write_bytes);
        if (!strncmp(row.counters, "cupti", 5)) {
            CHECK(row.dram_read_bytes > 0 && row.dram_write_bytes > 0);
            /* 16 MiB tensors: under 4x any data-centre GPU's L2, reported, not judged */
            CHECK(!strcmp(row.count_check, "below 4x L2") || !strcmp(row.count_check, "ok"));
            CHECK(isfinite(row.count_err));
        } else {
            CHECK(!strncmp(row.counters, "unavailable: ", 13) || !strncmp(row.counters, "untrusted: ", 11));
            printf("counters not trusted here: %s\n", row.counters);
        }
        /* at 2^26 (256 MiB tensors, >= 4x the L2 of every GPU of the table)
         * the counted bytes must be the model's within 3%, plan and kernel */
        const int64_t big = (int64_t)1 << 26;
        CHECK_EQ_I64(mb_meas_record_init(&row, pk, "sin2_plus_cos2", p, big, model, &e), MB_OK);
        rc = mb_meas_cuda_run(p, big, &c, &row, pk, w2, sizeof w2, &e);
        CHECK_EQ_I64(rc, MB_OK);
        printf("run 2^26: counters %s, dram %lld / %lld B (model %lld / %lld): %s %+.2f%%; kernel: %s\n",
               row.counters, (long long)row.dram_read_bytes, (long long)row.dram_write_bytes,
               (long long)row.model_dram_read_bytes, (long long)row.model_dram_write_bytes, row.count_check,
               100 * row.count_err, pk[0].count_check);
        if (!strcmp(row.counters, "cupti")) {
            CHECK(!strcmp(row.count_check, "ok"));
            CHECK(!strcmp(pk[0].count_check, "ok"));
        }
        char prov[1024];
        mb_meas_cuda_provenance(prov, sizeof prov);
        printf("%s", prov);
        CHECK(strstr(prov, "gpu:") != NULL);

        /* a row plan through the backend: softmax fused at 16384x4096 (2^26
         * elements, one pass): counted bytes within 3% of the model's */
        mb_graph *gs = NULL;
        mb_plan *ps = NULL;
        if (mb_variant_load("softmax", MB_F32, &gs, &e) == MB_OK && mb_plan_build(gs, MB_PLAN_FUSED, &ps, &e) == MB_OK) {
            mb_meas_record srow, spk[1];
            const mb_shape sh = {2, 16384, 4096, 0};
            CHECK_EQ_I64(mb_meas_record_init_shape(&srow, spk, "softmax", ps, sh, model, &e), MB_OK);
            rc = mb_meas_cuda_run(ps, mb_shape_elems(sh), &c, &srow, spk, w2, sizeof w2, &e);
            CHECK_EQ_I64(rc, MB_OK);
            if (rc) fprintf(stderr, "softmax run: %s\n", e.msg);
            CHECK(srow.verified);
            printf("softmax fused 16384x4096: median %.3g s, counters %s, dram %lld / %lld B (model %lld / %lld): %s\n",
                   srow.time_s_median, srow.counters, (long long)srow.dram_read_bytes, (long long)srow.dram_write_bytes,
                   (long long)srow.model_dram_read_bytes, (long long)srow.model_dram_write_bytes, srow.count_check);
            if (!strcmp(srow.counters, "cupti")) CHECK(!strcmp(srow.count_check, "ok"));
        } else {
            CHECK(0);
        }
        mb_plan_free(ps);
        mb_graph_free(gs);

        /* once (for external profilers): one checked sample, no counters;
         * last, since it turns the blocking kernel off for the process */
        c.cuda_once = 1;
        CHECK_EQ_I64(mb_meas_record_init(&row, pk, "sin2_plus_cos2", p, n, model, &e), MB_OK);
        rc = mb_meas_cuda_run(p, n, &c, &row, pk, w2, sizeof w2, &e);
        CHECK_EQ_I64(rc, MB_OK);
        CHECK_EQ_I64(row.reps, 1);
        CHECK(row.verified);
        CHECK(!strncmp(row.counters, "unavailable: MB_CUDA_ONCE", 25));
        CHECK_EQ_I64(row.dram_read_bytes, -1);
        CHECK_EQ_I64(pk[0].reps, 1);
    } else {
        CHECK(0);
    }
    mb_plan_free(p);
    mb_graph_free(g);
    return mb_test_done();
}
