/* test_model_rows.c — shapes, reductions and the normalization family in the
 * model: PyTorch-eager kernel counts and traffic (counts derived by hand from
 * one kernel per op and PyTorch's softmax/layer_norm dispatch), the fused
 * plan's one pass and passes, the online plan, broadcasting and line:column
 * shape errors. Table-driven: one row per expression, plan and shape. */
#include "membound_model.h"
#include "mb_test.h"
#include "mb_test_model.h"

#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define X_ "input x [rows, cols]\n"
#define XW X_ "input w [cols]\n"
#define HEAD XW "input b [cols]\n"
#define SOFTMAX X_ "m = x.amax(-1, keepdim=True)\ne = exp(x - m)\ny = e / e.sum(-1, keepdim=True)\n"
#define RMS_HF XW "y = x * rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w\n"

/* reads = rn n + rr rows + rc cols elements, writes = wn n + wr rows + wc
 * cols (f32) */
static const struct {
    const char *text, *shape;
    mb_plan_kind plan;
    int kernels, rn, rr, rc, wn, wr, wc;
} cases[] = {
    /* amax (r n, w R), sub (n + R, n), exp (n, n), sum (n, R), div (n + R, n) = 5n + 3n */
    {SOFTMAX "output y", "4096x1024", MB_PLAN_EAGER, 5, 5, 2, 0, 3, 2, 0},
    {SOFTMAX "output y", "4096x1024", MB_PLAN_FUSED, 1, 1, 0, 0, 1, 0, 0},    /* a row fits: one pass */
    {SOFTMAX "output y", "64x2^22", MB_PLAN_FUSED, 1, 3, 0, 0, 1, 0, 0},      /* max, sum, write: 3 reads */
    {SOFTMAX "output y", "64x2^22", MB_PLAN_ONLINE, 1, 2, 0, 0, 1, 0, 0},     /* online: 2 reads */
    {SOFTMAX "output y", "4096x1024", MB_PLAN_ONLINE, 1, 1, 0, 0, 1, 0, 0},
    {XW "y = softmax(x, -1)\nz = y + w", "4096x1024", MB_PLAN_EAGER, 2, 2, 0, 1, 2, 0, 0},
    {XW "y = softmax(x, dim=-1)\nz = y + w", "64x2^22", MB_PLAN_EAGER, 2, 4, 0, 1, 2, 0, 0},
    {XW "y = softmax(x, -1)\nz = y + w", "64x2^22", MB_PLAN_ONLINE, 1, 2, 0, 1, 1, 0, 0},
    {XW "y = log_softmax(x, 1)\nz = y * w", "64x2^22", MB_PLAN_EAGER, 2, 4, 0, 1, 2, 0, 0},
    /* HF RMSNorm: pow (n, n), mean (n, R), add (R, R), rsqrt (R, R), mul (n + R, n), mul (n + C, n) */
    {RMS_HF, "4096x1024", MB_PLAN_EAGER, 6, 4, 3, 1, 3, 3, 0},
    {RMS_HF, "4096x1024", MB_PLAN_FUSED, 1, 1, 0, 1, 1, 0, 0},
    {RMS_HF, "64x2^22", MB_PLAN_FUSED, 1, 2, 0, 1, 1, 0, 0},                  /* mean of squares, then write */
    {HEAD "y = rms_norm(x, w, eps=1e-6)\nz = y + b", "64x2^22", MB_PLAN_EAGER, 2, 3, 0, 2, 2, 0, 0},
    /* F.layer_norm: one kernel, bias inside; Welford then normalize: 2 reads beyond
     * on-chip (membound's kernels; PyTorch's: check_torch_layer_norm) */
    {HEAD "y = layer_norm(x, w, b)", "4096x1024", MB_PLAN_EAGER, 1, 1, 0, 2, 1, 0, 0},
    {HEAD "y = layer_norm(x, w, b, eps=1e-5)", "64x2^22", MB_PLAN_EAGER, 1, 2, 0, 2, 1, 0, 0},
    /* written out: mean, centre, variance of the centred rows: 3 passes */
    {HEAD "m = x.mean(-1, keepdim=True)\nd = x - m\nv = (d*d).mean(-1, keepdim=True)\n"
          "y = d * rsqrt(v + 1e-5) * w + b", "64x2^22", MB_PLAN_FUSED, 1, 3, 0, 2, 1, 0, 0},
    /* keepdim=False: a [rows] result, the default */
    {X_ "y = x.sum(-1)", "4096x1024", MB_PLAN_EAGER, 1, 1, 0, 0, 0, 1, 0},
    {X_ "y = torch.amax(x, dim=1, keepdim=False)", "4096x1024", MB_PLAN_FUSED, 1, 1, 0, 0, 0, 1, 0},
    /* a [rows, 1] statistic broadcast against [cols]: the outer [rows, cols] */
    {XW "s = x.sum(-1, keepdim=True)\ny = s * w", "4096x1024", MB_PLAN_EAGER, 2, 1, 1, 1, 1, 1, 0},
    /* 1-D: the reduction is a scalar ([] with keepdim=False), broadcast as PyTorch does */
    {"input x\ny = x / sum(x, -1)", "2^20", MB_PLAN_EAGER, 2, 2, 1, 0, 1, 1, 0},
    /* 1-D is one row: 2^15 f32 (128 KiB) fits on chip, 2^20 (4 MiB) does not */
    {"input x [n]\ny = x - x.mean(0)", "2^15", MB_PLAN_FUSED, 1, 1, 0, 0, 1, 0, 0},
    {"input x [n]\ny = x - x.mean(0)", "2^20", MB_PLAN_FUSED, 1, 2, 0, 0, 1, 0, 0},
    /* a [cols] weight's gradient, a sum over the rows (colsum): mul (n + C, n);
     * backward mul g w (n + C, n), mul g x (2n, n), colsum (n, C) */
    {XW "y = x * w\noutput y\nbackward", "4096x1024", MB_PLAN_EAGER, 4, 5, 0, 2, 3, 0, 1},
    /* store: fwd x, w -> y; bwd g, w -> gx, g x; columns g x -> gw */
    {XW "y = x * w\noutput y\nbackward", "4096x1024", MB_PLAN_STORE, 3, 4, 0, 2, 3, 0, 1},
    /* F.layer_norm with weight and bias, as on CUDA: layer_norm (n + 2C, n);
     * native_layer_norm_backward g, x, w -> gx, mean, rstd (2n + C, n + 2R);
     * gamma_beta_backward g, x, mean, rstd -> gw, gb (2n + 2R, 2C) */
    {HEAD "y = layer_norm(x, w, b)\noutput y\nbackward", "4096x1024", MB_PLAN_EAGER, 3, 5, 2, 3, 2, 2, 2},
    /* recompute: fwd x, w, b -> y; bwd g, x, w -> gx, g x_hat; columns g, g x_hat -> gw, gb */
    {HEAD "y = layer_norm(x, w, b)\noutput y\nbackward", "4096x1024", MB_PLAN_RECOMPUTE, 3, 5, 0, 3, 3, 0, 2},
    /* rms_norm: (n + C, n); rms_norm_backward g, x, w -> gx, rstd (2n + C, n + R);
     * gamma_beta_backward g, x, rstd -> gw (2n + R, C) */
    {XW "y = rms_norm(x, w, eps=1e-6)\noutput y\nbackward", "4096x1024", MB_PLAN_EAGER, 3, 5, 1, 2, 2, 1, 1},
};

static void check_case(int i, const mb_device *d)
{
    mb_test_plan_counts(i, cases[i].text, cases[i].shape, cases[i].plan, d,
                        (mb_test_counts){cases[i].kernels, 4, cases[i].rn, cases[i].rr, cases[i].rc, cases[i].wn,
                                         cases[i].wr, cases[i].wc});
}

/* rows of 16 MiB: 132 SMs x the row's 32 MiB (read + written) leave the 50 MB
 * L2, so every pass reaches DRAM and both counts agree; at 4096x1024 the
 * eager kernels' re-reads of a 16 MiB x hit the L2 */
static void check_dram(const mb_device *d)
{
    static const struct { const char *shape; mb_plan_kind plan; int agree; } rows[] = {
        {"64x2^22", MB_PLAN_FUSED, 1}, {"64x2^22", MB_PLAN_ONLINE, 1}, {"4096x1024", MB_PLAN_EAGER, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mb_graph *g = NULL;
        mb_plan *p = NULL;
        mb_err e;
        mb_shape s;
        mb_estimate est;
        memset(&est, 0, sizeof est);
        int rc = mb_shape_parse(rows[i].shape, &s, &e) || mb_parse_variant(SOFTMAX, "s.mb", MB_F32, &g, &e) ||
                 mb_plan_build(g, rows[i].plan, &p, &e) || mb_estimate_plan_shape(p, s, d, &est, &e);
        CHECK(rc == 0);
        if (!rc) {
            CHECK((est.total.dram_read_bytes == est.total.read_bytes) == rows[i].agree);
            CHECK(est.total.dram_write_bytes == est.total.write_bytes);
        }
        mb_estimate_free(&est);
        mb_plan_free(p);
        mb_graph_free(g);
    }
    /* a device without an on-chip size makes every pass even for short rows */
    mb_device none = *d;
    none.onchip_kib = 0;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err e;
    mb_estimate est;
    memset(&est, 0, sizeof est);
    mb_shape s = {2, 4096, 1024, 0};
    int rc = mb_parse_variant(SOFTMAX, "s.mb", MB_F32, &g, &e) || mb_plan_build(g, MB_PLAN_FUSED, &p, &e) ||
             mb_estimate_plan_shape(p, s, &none, &est, &e);
    CHECK(rc == 0);
    if (!rc) {
        CHECK_EQ_I64(est.total.read_bytes, 3 * 4 * s.rows * s.cols);
        CHECK_EQ_I64(mb_kernel_onepass_max_cols(&p->kernels[0], d), (int64_t)(484 * 1024 / 4));
        CHECK_EQ_I64(mb_kernel_onepass_max_cols(&p->kernels[0], &none), 0);
    }
    mb_estimate_free(&est);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* On a spec with measured op rates (a calibrated CPU), a row op costs the
 * elementwise work the CPU row executor does for it at those rates:
 * F.softmax's max (relu's rate), x - m, exp, the sum and the scaling, each
 * once in one pass, x - m and exp again in the write pass beyond the core's
 * cache; plus the interpreter's copy of its output. A spec without rates
 * (a GPU's) keeps the flop counts at the peaks. */
static void check_row_rates(const mb_device *gpu)
{
    mb_device cpu = *gpu;
    for (int op = 0; op < MB_OP_COUNT; op++) cpu.op_geps[op] = 2.0;
    cpu.op_geps[MB_OP_EXP] = 0.5;
    cpu.onchip_kib = 1024;
    static const struct { const char *shape; double ns_per_elem; } rows[] = {
        {"4096x1024", 4 * 0.5 + 2.0 + 0.5},         /* a 4 KiB row: one pass */
        {"4x2^20", 4 * 0.5 + 2.0 + 0.5 + 0.5 + 2.0}, /* a 4 MiB row: three passes */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mb_graph *g = NULL;
        mb_plan *p = NULL;
        mb_err e;
        mb_shape s;
        mb_estimate est, at_peaks;
        memset(&est, 0, sizeof est);
        memset(&at_peaks, 0, sizeof at_peaks);
        int rc = mb_shape_parse(rows[i].shape, &s, &e) ||
                 mb_parse_variant(X_ "y = softmax(x, -1)\noutput y", "s.mb", MB_F32, &g, &e) ||
                 mb_graph_set_rank(g, 2, &e) || mb_plan_build(g, MB_PLAN_FUSED, &p, &e) ||
                 mb_estimate_plan_shape(p, s, &cpu, &est, &e) || mb_estimate_plan_shape(p, s, gpu, &at_peaks, &e);
        CHECK(rc == 0);
        if (!rc) {
            double want_s = rows[i].ns_per_elem * 1e-9 * (double)(s.rows * s.cols);
            if (fabs(est.total.compute_s - want_s) > 1e-9 * want_s)
                fprintf(stderr, "softmax at %s: compute %.6g s, want %.6g\n", rows[i].shape, est.total.compute_s,
                        want_s);
            CHECK(fabs(est.total.compute_s - want_s) <= 1e-9 * want_s);
            CHECK(at_peaks.total.compute_s > 0 && fabs(at_peaks.total.compute_s - want_s) > 0.01 * want_s);
        }
        mb_estimate_free(&est);
        mb_estimate_free(&at_peaks);
        mb_plan_free(p);
        mb_graph_free(g);
    }
    /* the online plan of the hand-written softmax beyond the cache: the
     * max; the online sum's own max, a - m, exp and sum; the write pass's
     * x - m, exp and division; the copy out */
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err e;
    mb_shape s;
    mb_estimate est;
    memset(&est, 0, sizeof est);
    int rc = mb_shape_parse("4x2^20", &s, &e) ||
             mb_parse_variant(X_ "m = x.amax(-1, keepdim=True)\ne = exp(x - m)\ny = e / e.sum(-1, keepdim=True)",
                              "s.mb", MB_F32, &g, &e) ||
             mb_plan_build(g, MB_PLAN_ONLINE, &p, &e) || mb_estimate_plan_shape(p, s, &cpu, &est, &e);
    CHECK(rc == 0);
    if (!rc) {
        double want_s = (0.5 + (0.5 + 0.5 + 2.0 + 0.5) + (0.5 + 2.0 + 0.5) + 0.5) * 1e-9 * (double)(s.rows * s.cols);
        if (fabs(est.total.compute_s - want_s) > 1e-9 * want_s)
            fprintf(stderr, "online softmax: compute %.6g s, want %.6g\n", est.total.compute_s, want_s);
        CHECK(fabs(est.total.compute_s - want_s) <= 1e-9 * want_s);
    }
    mb_estimate_free(&est);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* text, rank to set (0: as parsed), the error's "file:line:col: ..." start */
static const struct {
    const char *text;
    int rank;
    const char *want;
} bad[] = {
    {X_ "y = x / x.sum(-1)", 0, "e.mb:2:7: shapes [rows, cols] and [rows] do not broadcast"},
    {X_ "y = x.sum(-1) / x", 0, "e.mb:2:15: shapes [rows] and [rows, cols]"},
    {X_ "y = sum(x, 0, keepdim=True)", 0, "e.mb:2:5: sum() over dim 0 is not supported: only the last"},
    {X_ "y = x.amax(-2)", 0, "e.mb:2:7: amax() over dim -2 is not supported"},
    {X_ "y = x.mean(dim=3)", 0, "e.mb:2:7: mean(): dim 3 is out of range"},
    /* a dim beyond int's range: refused before it is converted (UB found by fuzzing) */
    {X_ "y = x.amax(77777777777-1, keepdim=True)", 0, "e.mb:2:12: amax(): dim must be an integer"},
    /* just past int's range, and far past it: refused, never cast (float-cast-overflow) */
    {X_ "y = softmax(x, 2147483648)", 0, "e.mb:2:16: softmax(): dim must be an integer"},
    {X_ "y = softmax(x, 1e20)", 0, "e.mb:2:16: softmax(): dim must be an integer"},
    {X_ "y = x.sum() * softmax(x, -1)", 0, "e.mb:2:7: sum() over every element of a [rows, cols] tensor beside"},
    {X_ "y = sum(x, -1, keepdim=1)", 0, "e.mb:2:16: sum(): keepdim must be True or False"},
    {X_ "y = sum(x, -1, keep=True)", 0, "e.mb:2:16: sum() got an unexpected keyword argument 'keep'"},
    {X_ "y = sum(x, -1, dim=-1)", 0, "e.mb:2:16: sum() got multiple values for argument 'dim'"},
    {X_ "y = softmax(x)", 0, "e.mb:2:5: softmax() without dim"},
    {X_ "y = layer_norm(x, x)", 0, "e.mb:2:5: layer_norm(): the weight is [rows, cols], expected [cols]"},
    {X_ "y = sum(x.sum(-1, keepdim=True), -1)", 0, "e.mb:2:5: sum() of a [rows, 1] tensor"},
    {"input x [rows, cols]\ninput v [rows]\ny = x * v", 0, "e.mb:3:7: shapes [rows, cols] and [rows]"},
    {"input x [rows, cols]\ninput v [n]\ny = x * v", 0, "e.mb:2:9: a 1-D declaration in a 2-D variant"},
    {"input x [rows, 2]\ny = x", 0, "e.mb:1:16: expected a dimension"},
    {"input x [cols, rows]\ny = x * 2", 0, "e.mb:1:9: unsupported shape [cols, rows]"},
    {"shape 4096\ninput x\ny = x * 2", 0, "e.mb:1:7: shape '4096': expected ROWSxCOLS"},
    {"input x\ny = x.nope(-1)", 0, "e.mb:2:7: unknown function 'nope'"},
    {"input x\ny = x / x.sum(-1)", 2, "e.mb:2:7: shapes [rows, cols] and [rows] do not broadcast"},
    {XW "y = x * w", 1, "variant 'e' is 2-D (its inputs are [rows, cols]): give a shape"},
};

static void check_bad(int i)
{
    mb_graph *g = NULL;
    mb_err e = {""};
    int rc = mb_parse_variant(bad[i].text, "e.mb", MB_F32, &g, &e);
    if (!rc && bad[i].rank) rc = mb_graph_set_rank(g, bad[i].rank, &e);
    if (rc != MB_EINPUT || strncmp(e.msg, bad[i].want, strlen(bad[i].want)))
        fprintf(stderr, "bad %d: rc %d, '%s'\n  want '%s'\n", i, rc, e.msg, bad[i].want);
    CHECK(rc == MB_EINPUT);
    CHECK(strncmp(e.msg, bad[i].want, strlen(bad[i].want)) == 0);
    mb_graph_free(g);
}

/* [rows] against a last dimension of cols: the error says what PyTorch does
 * with it ([1, rows]: rows = cols only, a value per column), and only there */
static void check_rowv_note(void)
{
    static const struct {
        const char *text;
        int note;
    } rowv_cases[] = {
        {X_ "y = x / x.sum(-1)", 1},
        {"input x [rows, cols]\ninput v [rows]\ninput w [cols]\ny = x.sum(-1, keepdim=True) * w + v", 1},
        {"input x [rows, cols]\ninput w [cols]\ny = x.sum(-1) * w", 1},
        {"input x [rows, cols]\ny = x.sum(-1) * x.sum(-1, keepdim=True)", 0}, /* [rows] x [rows, 1] */
    };
    for (size_t i = 0; i < sizeof rowv_cases / sizeof rowv_cases[0]; i++) {
        mb_graph *g = NULL;
        mb_err e = {""};
        int rc = mb_parse_variant(rowv_cases[i].text, "e.mb", MB_F32, &g, &e);
        CHECK(rc == MB_EINPUT && strstr(e.msg, "do not broadcast"));
        const char *note = strstr(e.msg, "PyTorch aligns a [rows] tensor with the last dimension, as [1, rows]: it "
                                         "broadcasts only when rows = cols, and then element [i, j] takes its value j");
        if (!note != !rowv_cases[i].note) fprintf(stderr, "rowv note %zu: '%s'\n", i, e.msg);
        CHECK(!note == !rowv_cases[i].note);
        mb_graph_free(g);
    }
}

static void check_shapes(void)
{
    mb_shape s;
    mb_err e;
    CHECK(mb_shape_parse("2^12x2^12", &s, &e) == MB_OK && s.rank == 2 && s.rows == 4096 && s.cols == 4096);
    CHECK(mb_shape_parse("64x4M", &s, &e) == MB_OK && s.rows == 64 && s.cols == ((int64_t)4 << 20));
    CHECK(mb_shape_parse("16777216", &s, &e) == MB_OK && s.rank == 1 && s.cols == 16777216 && s.rows == 1);
    CHECK(mb_shape_parse("4096x", &s, &e) == MB_EINPUT);
    CHECK(mb_shape_parse("0x4", &s, &e) == MB_EINPUT);
    CHECK(mb_shape_parse("2^30x2^30", &s, &e) == MB_EINPUT);
    char buf[32];
    mb_shape_format((mb_shape){2, 64, 4194304, 0}, buf, sizeof buf);
    CHECK(!strcmp(buf, "64x4194304"));
    /* a variant's shape line */
    mb_graph *g = NULL;
    CHECK(mb_parse_variant("shape 2^10x2^14\ninput x\ny = softmax(x, -1)", "v.mb", MB_F32, &g, &e) == MB_OK);
    if (g) {
        CHECK(g->rank == 2 && g->default_shape.rows == 1024 && g->default_shape.cols == 16384);
        CHECK(mb_plan_supported(g, MB_PLAN_ONLINE) && mb_plan_supported(g, MB_PLAN_FUSED));
    }
    mb_graph_free(g);
    /* an elementwise 1-D variant is unchanged at a 2-D shape: n = rows x cols */
    g = NULL;
    CHECK(mb_parse_variant("input x\ny = sin(x)**2 + cos(x)**2", "v.mb", MB_F32, &g, &e) == MB_OK);
    if (g) {
        CHECK(!mb_plan_supported(g, MB_PLAN_ONLINE));
        CHECK(mb_graph_set_rank(g, 2, &e) == MB_OK);
    }
    mb_graph_free(g);
}

/* What a one-pass compiled row kernel loads and stores from the cache after
 * its first pass (mb_kernel_onepass_cache_accesses, the rule jit_rows.c
 * keeps values by): the hand-written softmax re-reads x for exp(x - max) and
 * keeps the exp (stored, loaded), not x - max; F.softmax the same; the
 * hand-written LayerNorm re-reads x once, keeps x - mean, loads w and b;
 * RMSNorm re-reads x and loads w. On a calibrated CPU that costs each at
 * half the copy rate, and such a kernel's memory and compute add up, or
 * overlap as the spec's serial_fraction_rows says where it has one. */
static void check_onepass_accesses(const mb_device *gpu)
{
    static const struct { const char *variant; double accesses; } want[] = {
        {"softmax", 3}, {"softmax_op", 3}, {"layernorm", 5}, {"rmsnorm", 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char path[600], text[4096] = "";
        snprintf(path, sizeof path, "%s/model/variants/%s.mb", getenv("MB_SRC") ? getenv("MB_SRC") : "..",
                 want[i].variant);
        FILE *fp = fopen(path, "r");
        size_t got = fp ? fread(text, 1, sizeof text - 1, fp) : 0;
        text[got] = '\0';
        if (fp) fclose(fp);
        CHECK(got > 0);
        mb_graph *g = NULL;
        mb_plan *p = NULL;
        mb_err e;
        int rc = mb_parse_variant(text, path, MB_F32, &g, &e) || mb_plan_build(g, MB_PLAN_FUSED, &p, &e);
        CHECK(rc == 0);
        if (rc) {
            mb_graph_free(g);
            continue;
        }
        double acc = mb_kernel_onepass_cache_accesses(p->g, &p->kernels[0]);
        if (acc != want[i].accesses) fprintf(stderr, "%s: %g accesses, want %g\n", want[i].variant, acc, want[i].accesses);
        CHECK(acc == want[i].accesses);
        /* on a calibrated CPU: memory + compute, the accesses in compute */
        mb_device cpu = *gpu;
        for (int op = 0; op < MB_OP_COUNT; op++) cpu.op_geps[op] = cpu.op_compiled_geps[op] = 10.0;
        cpu.onchip_kib = 1024;
        cpu.serial_fraction = 0.5;
        mb_shape s = {2, 4096, 1024, 0};
        mb_estimate est;
        memset(&est, 0, sizeof est);
        CHECK(mb_estimate_plan_shape(p, s, &cpu, &est, &e) == MB_OK);
        const mb_cost *c = &est.per_kernel[0];
        CHECK(fabs(c->time_s - (c->launch_s + c->mem_s + c->compute_s)) <= 1e-12 + 1e-9 * c->time_s);
        CHECK(c->compute_s >= acc * 4096.0 * 1024.0 / (2 * 10.0e9));
        mb_estimate_free(&est);
        /* with calibrate's row-kernel figure: launch + max + that share of
         * min, whatever serial_fraction is */
        mb_device_set(&cpu, MB_DK_serial_fraction_rows, 0.25);
        memset(&est, 0, sizeof est);
        CHECK(mb_estimate_plan_shape(p, s, &cpu, &est, &e) == MB_OK);
        c = &est.per_kernel[0];
        const double want_s = c->launch_s + fmax(c->mem_s, c->compute_s) + 0.25 * fmin(c->mem_s, c->compute_s);
        if (fabs(c->time_s - want_s) > 1e-12 + 1e-9 * want_s)
            fprintf(stderr, "%s: %.6g s with serial_fraction_rows 0.25, want %.6g\n", want[i].variant, c->time_s, want_s);
        CHECK(fabs(c->time_s - want_s) <= 1e-12 + 1e-9 * want_s);
        mb_estimate_free(&est);
        /* rows beyond the L1 (1024 columns of 4 B or more against 1 KiB):
         * the figure for those; within it (4 KiB) the first */
        mb_device_set(&cpu, MB_DK_serial_fraction_rows_l2, 0.75);
        for (int l1 = 0; l1 < 2; l1++) {
            cpu.l1_kib = l1 ? 4096 : 1;
            memset(&est, 0, sizeof est);
            CHECK(mb_estimate_plan_shape(p, s, &cpu, &est, &e) == MB_OK);
            c = &est.per_kernel[0];
            const double sf = l1 ? 0.25 : 0.75;
            const double want2_s = c->launch_s + fmax(c->mem_s, c->compute_s) + sf * fmin(c->mem_s, c->compute_s);
            CHECK(fabs(c->time_s - want2_s) <= 1e-12 + 1e-9 * want2_s);
            mb_estimate_free(&est);
        }
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* Softmax's exp (mb_node_exp_nonpos: exp(a - amax(a)), and every exp of a
 * library softmax): in a compiled row kernel at the spec's exp_nonpos_gain
 * times the compiled exp's rate, else at the exp's. The fused kernels at
 * 4096x1024 f32 (one pass), every rate 10 but exp's 1: gain 4 saves 3/4 of
 * a ns an element, once for the hand-written form's exp and for F.softmax's. */
static void check_exp_nonpos(const mb_device *gpu)
{
    mb_graph *g = NULL;
    mb_err e;
    CHECK(mb_parse_variant(X_ "m = x.amax(-1, keepdim=True)\nt = exp(x - m)\nu = exp(x)\n"
                              "v = exp(m - x)\nw = exp(x - x.sum(-1, keepdim=True))\ny = t + u + v + w",
                           "s.mb", MB_F32, &g, &e) == MB_OK);
    int found[4] = {0, 0, 0, 0}, k = 0;
    for (int i = 0; g && i < g->n_nodes; i++)
        if (g->nodes[i].op == MB_OP_EXP && k < 4) found[k++] = mb_node_exp_nonpos(g, i) ? 1 : 2;
    CHECK(found[0] == 1 && found[1] == 2 && found[2] == 2 && found[3] == 2);
    mb_graph_free(g);
    static const char *const texts[] = {X_ "m = x.amax(-1, keepdim=True)\ne = exp(x - m)\ny = e / e.sum(-1, keepdim=True)",
                                        X_ "y = softmax(x, -1)"};
    for (int t = 0; t < 2; t++) {
        mb_plan *p = NULL;
        g = NULL;
        mb_device cpu = *gpu;
        for (int op = 0; op < MB_OP_COUNT; op++) cpu.op_geps[op] = cpu.op_compiled_geps[op] = 10.0;
        cpu.op_geps[MB_OP_EXP] = cpu.op_compiled_geps[MB_OP_EXP] = 1.0;
        cpu.onchip_kib = 1024;
        mb_shape s = {2, 4096, 1024, 0};
        mb_estimate a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        int rc = mb_parse_variant(texts[t], "s.mb", MB_F32, &g, &e) || mb_plan_build(g, MB_PLAN_FUSED, &p, &e) ||
                 mb_estimate_plan_shape(p, s, &cpu, &a, &e);
        cpu.exp_nonpos_gain = 4.0;
        rc = rc || mb_estimate_plan_shape(p, s, &cpu, &b, &e);
        CHECK(rc == 0);
        if (!rc) {
            const double want_s = 0.75e-9 * 4096.0 * 1024.0, got_s = a.total.compute_s - b.total.compute_s;
            if (fabs(got_s - want_s) > 1e-6 * want_s)
                fprintf(stderr, "%s: the gain saves %.6g s, want %.6g\n", t ? "softmax_op" : "softmax", got_s, want_s);
            CHECK(fabs(got_s - want_s) <= 1e-6 * want_s);
        }
        mb_estimate_free(&a);
        mb_estimate_free(&b);
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* Rows in flight as the CUDA row kernels keep them: SMs x (resident threads
 * / a 256-thread row block), at most rows; one a core without the key. */
static void check_in_flight(void)
{
    static const struct { const char *id; double threads; int64_t rows, want; } rows[] = {
        {"h100-sxm", -1, 1 << 20, 132 * 8}, {"h100-sxm", -1, 64, 64}, {"t4", -1, 1 << 20, 40 * 4},
        {"l40s", -1, 1 << 20, 142 * 6},     {"jetson-agx-orin", -1, 1 << 20, 16 * 6},
        {"mi300x", -1, 1 << 20, 304 * 8},   {"rtx-5090", -1, 1 << 20, 170 * 6},
        {"h100-sxm", 0, 1 << 20, 132},      /* no key (a CPU's spec): one a core */
        {"h100-sxm", 128, 1 << 20, 132},    /* fewer threads than a block: one a SM */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mb_device d;
        mb_err e;
        CHECK(mb_device_find(rows[i].id, &d, &e) == MB_OK);
        if (rows[i].threads >= 0) d.max_threads_per_sm = rows[i].threads;
        CHECK_EQ_I64(mb_device_rows_in_flight(&d, rows[i].rows), rows[i].want);
    }
    mb_device none;
    memset(&none, 0, sizeof none);
    CHECK_EQ_I64(mb_device_rows_in_flight(&none, 1000), 1);
}

/* log-sum-exp fused (x read twice: its max, then the sum of exp; a [rows, 1]
 * result) on b200 at 2^17 f32 columns (past its 123904-column one-pass
 * limit: 484 KiB / 4 B): a row streams 512 KiB. The L2 (126.5 MiB) holds
 * 253 rows in flight: the second read hits at 253 rows, misses at 254; at
 * 1024 rows the 1024 in flight miss (2n from DRAM), where one row per SM
 * (148 x 512 KiB = 74 MiB, the rule without max_threads_per_sm) would hit. */
static void check_in_flight_dram(void)
{
    static const struct { int64_t rows; double threads; int64_t in_flight; int cached; } rows[] = {
        {253, -1, 253, 1}, {254, -1, 254, 0}, {1024, -1, 1024, 0}, {1024, 0, 148, 1},
    };
    mb_device b200;
    mb_err e;
    CHECK(mb_device_find("b200", &b200, &e) == MB_OK);
    CHECK_EQ_I64(mb_device_cache_bytes(&b200), 253 * 512 * 1024);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        mb_device d = b200;
        if (rows[i].threads >= 0) d.max_threads_per_sm = rows[i].threads;
        mb_graph *g = NULL;
        mb_plan *p = NULL;
        mb_estimate est;
        memset(&est, 0, sizeof est);
        mb_shape s = {2, rows[i].rows, (int64_t)1 << 17, 0};
        int rc = mb_parse_variant(X_ "m = x.amax(-1, keepdim=True)\ny = log(exp(x - m).sum(-1, keepdim=True)) + m\n"
                                  "output y", "lse.mb", MB_F32, &g, &e) ||
                 mb_plan_build(g, MB_PLAN_FUSED, &p, &e) || mb_estimate_plan_shape(p, s, &d, &est, &e);
        CHECK(rc == 0);
        if (!rc) {
            const int64_t x_bytes = 4 * s.rows * s.cols;
            const mb_cost *c = &est.per_kernel[0];
            CHECK_EQ_I64(p->n_kernels, 1);
            CHECK(c->passes > 1 && p->kernels[0].n_reads == 1 && p->kernels[0].read_passes[0] == 2);
            CHECK_EQ_I64(c->rows_in_flight, rows[i].in_flight);
            CHECK_EQ_I64(c->rereads_cached, rows[i].cached);
            CHECK_EQ_I64(est.total.read_bytes, 2 * x_bytes);
            CHECK_EQ_I64(est.total.dram_read_bytes, (rows[i].cached ? 1 : 2) * x_bytes);
            CHECK_EQ_I64(est.total.dram_write_bytes, 4 * s.rows);
        }
        mb_estimate_free(&est);
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

/* PyTorch's native layer_norm kernels in the eager plan (layer_norm_kernel.cu:
 * vectorized_layer_norm_kernel, layer_norm_grad_input_kernel_vectorized) hold
 * no row on chip: a 128-thread block reads x twice forward, x and dy twice
 * backward, whatever the row's length. Under --framework pytorch on
 * a100-pcie-80gb (108 SMs x 2048 threads / 128 = 1728 rows in flight, 40 MiB
 * L2) the re-reads hit at 1024 columns (x and y rows: 1728 x 8 KiB = 13.5
 * MiB) and reach DRAM at 8192 (108 MiB). Without the framework (membound's
 * own CUDA kernels, which hold the row on chip), on a CPU, in
 * gamma_beta_backward and in the store plan: one pass. */
static void check_torch_layer_norm(void)
{
    static const struct { int64_t cols; int cpu, fw, cached; } ln[] = {
        {1024, 0, 1, 1}, {8192, 0, 1, 0}, {8192, 1, 1, 1}, {8192, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof ln / sizeof ln[0]; i++) {
        mb_device d;
        mb_err e;
        CHECK(mb_device_find("a100-pcie-80gb", &d, &e) == MB_OK);
        if (ln[i].cpu) snprintf(d.kind, sizeof d.kind, "cpu"), d.first_touch_gbs = 4;
        mb_graph *g = NULL;
        mb_plan *p = NULL, *ps = NULL;
        mb_estimate est;
        memset(&est, 0, sizeof est);
        mb_shape s = {2, 4096, ln[i].cols, 0};
        mb_timing t = {ln[i].fw ? MB_FW_PYTORCH : MB_FW_NONE, MB_PHASE_ALL, 0};
        int rc = mb_parse_variant(X_ "input w [cols]\ninput b [cols]\ny = layer_norm(x, w, b)\noutput y\nbackward",
                                  "ln.mb", MB_F32, &g, &e) ||
                 mb_plan_build(g, MB_PLAN_EAGER, &p, &e) || mb_plan_build(g, MB_PLAN_STORE, &ps, &e) ||
                 mb_estimate_plan_timed(p, s, &d, &t, &est, &e);
        if (rc) fprintf(stderr, "torch layer_norm case %zu: %s\n", i, e.msg);
        CHECK(rc == 0);
        if (!rc) {
            const int64_t x = 4 * s.rows * s.cols, wb = 2 * 4 * s.cols;
            const int torch = !ln[i].cpu && ln[i].fw;
            CHECK_EQ_I64(p->n_kernels, 3);
            CHECK(!strcmp(p->kernels[1].name, "native_layer_norm_backward"));
            CHECK(!strcmp(p->kernels[2].name, MB_KERNEL_GAMMA_BETA));
            CHECK(p->kernels[0].torch_layer_norm && p->kernels[1].torch_layer_norm && !p->kernels[2].torch_layer_norm);
            for (int k = 0; k < ps->n_kernels; k++) CHECK(!ps->kernels[k].torch_layer_norm);
            const mb_cost *f = &est.per_kernel[0], *b = &est.per_kernel[1];
            if (!torch) {
                CHECK_EQ_I64(f->passes, 1);
                CHECK_EQ_I64(f->read_bytes, x + wb);
            } else {
                CHECK_EQ_I64(f->passes, 2);
                CHECK_EQ_I64(b->passes, 2);
                CHECK_EQ_I64(f->rows_in_flight, 1728);
                CHECK_EQ_I64(f->rereads_cached, ln[i].cached);
                CHECK_EQ_I64(f->read_bytes, 2 * x + wb); /* x twice, w and b once */
                CHECK_EQ_I64(f->dram_read_bytes, (ln[i].cached ? 1 : 2) * x + wb);
                /* backward: x and dy twice each (mean and rstd saved, not recomputed) */
                CHECK(b->read_bytes >= 4 * x && b->read_bytes < 4 * x + x / 16);
            }
        }
        mb_estimate_free(&est);
        mb_plan_free(p);
        mb_plan_free(ps);
        mb_graph_free(g);
    }
}

int main(void)
{
    mb_device d;
    mb_err e;
    if (mb_device_find("h100-sxm", &d, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case((int)i, &d);
    check_dram(&d);
    check_row_rates(&d);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) check_bad((int)i);
    check_shapes();
    check_rowv_note();
    check_onepass_accesses(&d);
    check_exp_nonpos(&d);
    check_in_flight();
    check_in_flight_dram();
    check_torch_layer_norm();
    return mb_test_done();
}
