/* cuda_rows_host.c — the CUDA row kernels' logic without a GPU: every plan
 * of the built-in row variants (softmax, softmax_op, layernorm, rmsnorm and
 * the backward of softmax, layernorm and rmsnorm, with and without weights) at
 * shapes that take each path (a row per warp and per block, one pass and
 * multi-pass, vectors and an odd row length), run on the host by the same
 * programs and per-lane code the GPU runs (mb_kern_cuda_row_emulate) and
 * checked against the float64 reference; and the kernel's one pass against
 * multi-pass choice against the model's on every GPU of the device table;
 * the weights' variants (a sum over the rows, a [cols] weight's gradient)
 * through the column evaluator, its rows split among blocks and tiles.
 * It does not launch anything (tests/cuda_gpu.c does, on a GPU). */
#include "kernels.h"
#include "kernels_cuda.h"
#include "mb_test.h"
#include "membound_model.h"

#include <stdio.h>
#include <string.h>

/* the backward variants' kernels through the same evaluator: layernorm_bwd
 * and rmsnorm_bwd divide by the row length (mean's backward, a scalar_cols
 * operand) */
static const char *const row_variants[] = {"softmax",     "softmax_op",    "layernorm",  "rmsnorm",
                                           "softmax_bwd", "layernorm_bwd", "rmsnorm_bwd", "layernorm_affine_bwd",
                                           "rmsnorm_affine_bwd"};

/* Runs plan p at shape s on dev through the emulator and verifies it. */
static void run_one(const mb_plan *p, mb_shape s, const mb_device *dev, const char *what)
{
    mb_kern_tensors t;
    mb_err err;
    memset(&t, 0, sizeof t);
    int rc = mb_kern_tensors_alloc_shape(p, s, 0, &t, &err);
    CHECK(rc == MB_OK);
    if (rc != MB_OK) return;
    rc = mb_kern_cuda_row_emulate(&t, dev, &err);
    if (rc != MB_OK) fprintf(stderr, "%s: %s\n", what, err.msg);
    CHECK(rc == MB_OK);
    mb_kern_check ck;
    if (rc == MB_OK && mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK) {
        if (!ck.passed)
            fprintf(stderr, "%s: %lld bad, %lld poisoned, max rel err %.3g (first at %lld: %g, want %g)\n", what,
                    (long long)ck.bad, (long long)ck.poisoned, ck.max_rel_err, (long long)ck.first_bad,
                    ck.first_got, ck.first_want);
        CHECK(ck.passed);
    }
    mb_kern_tensors_free(&t);
}

/* The kernel's choice agrees with the model's estimate on dev at s: one
 * pass exactly where the model counts one (per kernel's passes), the
 * program's passes are the model's, and what it loads from memory per
 * element of a full row is the model's count. */
static void agree(const mb_plan *p, mb_shape s, const mb_device *dev, const char *what)
{
    mb_estimate est;
    mb_err err;
    if (mb_estimate_plan_shape(p, s, dev, &est, &err) != MB_OK) {
        fprintf(stderr, "%s: %s\n", what, err.msg);
        CHECK(0);
        return;
    }
    for (int k = 0; k < p->n_kernels; k++) {
        mb_kern_cuda_choice c;
        mb_kern_cuda_row_bytes b;
        CHECK(mb_kern_cuda_choose_shape(p, k, s, dev, 0, &c, &err) == MB_OK);
        CHECK(mb_kern_cuda_row_traffic(p, k, s, dev, &b, &err) == MB_OK);
        const int made = c.onepass ? 1 : c.passes;
        if (made != est.per_kernel[k].passes)
            fprintf(stderr, "%s kernel %s: CUDA makes %d passes, the model %d\n", what, p->kernels[k].name, made,
                    est.per_kernel[k].passes);
        CHECK(made == est.per_kernel[k].passes);
        CHECK((c.impl == MB_KERN_CUDA_ROW || c.impl == MB_KERN_CUDA_ROW_OP || c.impl == MB_KERN_CUDA_COL) &&
              b.onepass == c.onepass);
        /* a sum over the rows, and only that, runs on the column evaluator */
        int has_colsum = 0;
        for (int j = 0; j < p->kernels[k].n_nodes; j++)
            has_colsum |= MB_OP_IS_COLUMN(p->g->nodes[p->kernels[k].nodes[j]].op) &&
                          p->g->nodes[p->kernels[k].nodes[j]].shape != MB_SHC_PART; /* partial sums: a row's */
        if (has_colsum) CHECK(c.impl == MB_KERN_CUDA_COL && !strcmp(c.symbol, "col_eval_kernel"));
        /* full-row tensors the model counts per element, in passes: its
         * reads of [rows, cols] tensors at this shape (one pass: once) */
        const mb_kernel *K = &p->kernels[k];
        int want = 0;
        for (int r = 0; r < K->n_reads; r++) /* partial sums: the column kernel's rows are their blocks */
            if (p->g->nodes[K->reads[r]].shape == MB_SHC_FULL || p->g->nodes[K->reads[r]].shape == MB_SHC_PART)
                want += made > 1 ? K->read_passes[r] : 1;
        if (b.full_loads != want)
            fprintf(stderr, "%s kernel %s: the program loads full rows %d times, the model %d\n", what, K->name,
                    b.full_loads, want);
        CHECK(b.full_loads == want);
    }
    mb_estimate_free(&est);
}

int main(void)
{
    mb_device h200, tiny;
    mb_err err;
    if (mb_device_find("h200", &h200, &err) != MB_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    tiny = h200;
    tiny.onchip_kib = 4; /* 1024 f32 columns of one row on chip: longer rows go multi-pass */
    /* {rows, cols}: warp rows (1024 and an odd 37), block rows (4100, 3001) */
    const mb_shape shapes[] = {{2, 24, 1024, 0}, {2, 9, 37, 0}, {2, 5, 4100, 0}, {2, 3, 3001, 0}};
    const mb_dtype dts[] = {MB_F32, MB_BF16};
    int runs = 0;
    for (size_t v = 0; v < sizeof row_variants / sizeof row_variants[0]; v++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            mb_graph *g = NULL;
            if (mb_variant_load(row_variants[v], dts[d], &g, &err) != MB_OK) {
                fprintf(stderr, "%s\n", err.msg);
                CHECK(0);
                continue;
            }
            for (int pk = 0; pk < MB_PLAN_COUNT; pk++) {
                if (!mb_plan_supported(g, (mb_plan_kind)pk)) continue;
                mb_plan *p = NULL;
                if (mb_plan_build(g, (mb_plan_kind)pk, &p, &err) != MB_OK) {
                    fprintf(stderr, "%s\n", err.msg);
                    CHECK(0);
                    continue;
                }
                for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
                    for (int dv = 0; dv < 2; dv++) {
                        char what[160];
                        snprintf(what, sizeof what, "%s %s %s %lldx%lld on %s", row_variants[v],
                                 mb_plan_name((mb_plan_kind)pk), mb_dtype_name(dts[d]), (long long)shapes[si].rows,
                                 (long long)shapes[si].cols, dv ? "a 4 KiB chip" : "h200");
                        run_one(p, shapes[si], dv ? &tiny : &h200, what);
                        agree(p, shapes[si], dv ? &tiny : &h200, what);
                        runs++;
                    }
                mb_plan_free(p);
            }
            mb_graph_free(g);
        }
    /* the one pass against multi-pass choice on every GPU of the table, at
     * the session's two shapes and at the model's threshold on each side */
    for (int i = 0; i < mb_device_count(); i++) {
        const mb_device *dv = mb_device_at(i);
        if (strcmp(dv->kind, "gpu")) continue;
        for (size_t v = 0; v < sizeof row_variants / sizeof row_variants[0]; v++) {
            mb_graph *g = NULL;
            if (mb_variant_load(row_variants[v], MB_F32, &g, &err) != MB_OK) continue;
            for (int pk = 0; pk < MB_PLAN_COUNT; pk++) {
                mb_plan *p = NULL;
                if (!mb_plan_supported(g, (mb_plan_kind)pk) || mb_plan_build(g, (mb_plan_kind)pk, &p, &err)) continue;
                int64_t edge = INT64_MAX;
                for (int k = 0; k < p->n_kernels; k++) {
                    int64_t m = mb_kernel_onepass_max_cols(&p->kernels[k], dv);
                    if (m < edge) edge = m;
                }
                mb_shape s[4] = {{2, 4096, 1024, 0}, {2, 512, (int64_t)1 << 18, 0}, {2, 8, 0, 0}, {2, 8, 0, 0}};
                int ns = 2;
                if (edge < INT64_MAX && edge > 1) s[2].cols = edge, s[3].cols = edge + 1, ns = 4;
                for (int j = 0; j < ns; j++) {
                    char what[160];
                    snprintf(what, sizeof what, "%s %s f32 %lldx%lld on %s", row_variants[v],
                             mb_plan_name((mb_plan_kind)pk), (long long)s[j].rows, (long long)s[j].cols, dv->name);
                    agree(p, s[j], dv, what);
                }
                mb_plan_free(p);
            }
            mb_graph_free(g);
        }
    }
    printf("%d emulated runs\n", runs);
    CHECK(runs >= 9 * 2 * 2 * 4 * 2);
    /* sums over the rows split among blocks (1100 and 2049 rows: 3 and 5
     * splits of the rows on the h200's 132 SMs) and column tiles (301
     * columns: 3 tiles, the last of 45 columns, no vectors; 520: 5 tiles),
     * the splits met by the last block of each tile */
    /* and colsum partial: the fused backward's 132 row groups (h200's SMs)
     * each summing its rows (a stride of 132) into its row of the partial
     * sums, the column kernel summing those 132 rows; and colsum reread: the
     * column evaluator computing each row's term again from x, dy and the
     * row statistics */
    static const char *const col_variants[] = {"layernorm_affine_bwd", "rmsnorm_affine_bwd"};
    const mb_shape col_shapes[] = {{2, 1100, 301, 132}, {2, 2049, 520, 132}};
    int col_runs = 0, part_runs = 0, reread_runs = 0;
    for (int part = 0; part < MB_COLSUM_COUNT; part++)
    for (size_t v = 0; v < 2; v++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            mb_graph *g = NULL;
            CHECK(mb_variant_load(col_variants[v], dts[d], &g, &err) == MB_OK);
            if (g) g->colsum = (mb_colsum)part;
            for (int pk = part ? MB_PLAN_STORE : 0; g && pk < MB_PLAN_COUNT; pk++) {
                mb_plan *p = NULL;
                if (!mb_plan_supported(g, (mb_plan_kind)pk) || mb_plan_build(g, (mb_plan_kind)pk, &p, &err)) continue;
                for (size_t si = 0; si < 2; si++) {
                    char what[160];
                    snprintf(what, sizeof what, "%s %s %s %lldx%lld on h200%s", col_variants[v],
                             mb_plan_name((mb_plan_kind)pk), mb_dtype_name(dts[d]), (long long)col_shapes[si].rows,
                             (long long)col_shapes[si].cols, part ? (part == MB_COLSUM_PARTIAL ? ", colsum partial" : ", colsum reread") : "");
                    part_runs += part == MB_COLSUM_PARTIAL;
                    reread_runs += part == MB_COLSUM_REREAD;
                    run_one(p, col_shapes[si], &h200, what);
                    agree(p, col_shapes[si], &h200, what);
                    col_runs++;
                }
                mb_plan_free(p);
            }
            mb_graph_free(g);
        }
    printf("%d emulated runs with splits of the rows, %d of them with partial sums, %d rereading\n", col_runs,
           part_runs, reread_runs);
    CHECK(col_runs == 2 * 2 * 4 * 2 + 2 * 2 * 2 * 3 * 2 && part_runs == 2 * 2 * 3 * 2 && reread_runs == 2 * 2 * 3 * 2);
    /* masks broadcast within the leading dimensions (GCOL reads and writes):
     * a padding mask, a causal one, a bias per head; a weight's gradient
     * (the column evaluator) beside a mask; rows per warp and per block */
    static const char *const masks[] = {
        "input s [b, h, q, k]\ninput m [b, 1, 1, k] nograd\ny = softmax(s + m * -3, -1)\noutput y\nbackward\n",
        "input s [b, h, q, k]\ninput m [q, k] nograd\ninput c [1, h, 1, k] nograd\n"
        "y = softmax(s * 0.125 + m + (c * 2 + 1), -1)\noutput y\nbackward\n",
        "input s [b, h, q, k]\ninput w [k]\ninput m [b, 1, 1, k] nograd\ny = tanh(s * w * m)\noutput y\nbackward\n",
    };
    static const char *const mask_dims[] = {"b=2,h=3,q=5,k=301", "b=2,h=3,q=7,k=2048"};
    int mask_runs = 0;
    for (size_t v = 0; v < sizeof masks / sizeof masks[0]; v++)
        for (size_t si = 0; si < 2; si++) {
            mb_graph *g = NULL;
            mb_shape s;
            int rc = mb_parse_variant(masks[v], "mask.mb", MB_F32, &g, &err);
            if (!rc) rc = mb_graph_bind_dims(g, mask_dims[si], &s, &err);
            if (rc) fprintf(stderr, "mask %zu: %s\n", v, err.msg);
            CHECK(rc == MB_OK);
            for (int pk = 0; !rc && pk < MB_PLAN_COUNT; pk++) {
                mb_plan *p = NULL;
                if (!mb_plan_supported(g, (mb_plan_kind)pk) || mb_plan_build(g, (mb_plan_kind)pk, &p, &err)) continue;
                char what[160];
                snprintf(what, sizeof what, "mask %zu %s at %s on h200", v, mb_plan_name((mb_plan_kind)pk),
                         mask_dims[si]);
                run_one(p, s, &h200, what);
                mask_runs++;
                mb_plan_free(p);
            }
            mb_graph_free(g);
        }
    printf("%d emulated runs with masks\n", mask_runs);
    CHECK(mask_runs == 3 * 2 * 4);
    /* dy given in bf16 ('backward grad bf16'): the engine's cast, a kernel of
     * its own before the backward in every plan, then each colsum way */
    int cast_runs = 0;
    for (int cs = 0; cs < MB_COLSUM_COUNT; cs++) {
        mb_graph *g = NULL;
        int rc = mb_parse_variant("input x [rows, cols]\ninput w [cols]\ny = rms_norm(x, w, eps=1e-6) * 2.0\n"
                                  "output y\nbackward grad bf16\n", "cast.mb", MB_F32, &g, &err);
        CHECK(rc == MB_OK);
        if (rc) continue;
        g->colsum = (mb_colsum)cs;
        for (int pk = cs ? MB_PLAN_STORE : 0; pk < MB_PLAN_COUNT; pk++) {
            mb_plan *p = NULL;
            if (!mb_plan_supported(g, (mb_plan_kind)pk) || mb_plan_build(g, (mb_plan_kind)pk, &p, &err)) continue;
            char what[160];
            snprintf(what, sizeof what, "grad cast %s, colsum %s, 1100x301 on h200", mb_plan_name((mb_plan_kind)pk),
                     mb_colsum_name((mb_colsum)cs));
            run_one(p, col_shapes[0], &h200, what);
            cast_runs++;
            mb_plan_free(p);
        }
        mb_graph_free(g);
    }
    printf("%d emulated runs with the gradient's cast\n", cast_runs);
    CHECK(cast_runs == 4 + 3 + 3);
    return mb_test_done();
}
