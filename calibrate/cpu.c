/* cpu.c — this CPU's roofs, in sequence: the last-level cache knee,
 * then interleaved rounds of every figure (STREAM-style bandwidths on all
 * cores, the FMA peak, each op's throughput through the executors' tile
 * primitive and in compiled chains, one executor pass, an f32 GEMM through
 * the BLAS), then the sincos rate and the overlap probes. The probes live in
 * streams.c, ops.c, gemm.c and overlap.c, their one sample timer in
 * figure.c, the spec they give and the rules that refuse them in spec.c.
 * Writes no file (the CLI does). */
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include "cal_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Progress lines, "[ 1.2 s] what". */
typedef struct cal_log {
    void (*progress)(const char *label);
    double t_start;
} cal_log;

static void step(const cal_log *lg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void step(const cal_log *lg, const char *fmt, ...)
{
    if (!lg->progress) return;
    char label[320];
    int k = snprintf(label, sizeof label, "[%4.1f s] ", mb_meas_now_s() - lg->t_start);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(label + k, sizeof label - (size_t)k, fmt, ap);
    va_end(ap);
    lg->progress(label);
}

enum { F_COPY, F_COPY_PLAIN, F_CACHE, F_READ, F_WRITE, F_WRITE_PLAIN, F_FMA, F_PASS, F_OPS };

/* Every figure of the interleaved rounds and what it runs on. */
typedef struct cal_run {
    mb_cal_stream_ctx sc; /* arrays beyond the cache */
    mb_cal_stream_ctx cc; /* the same copy with both arrays an eighth of the LLC */
    mb_cal_fma_ctx fc;
    mb_cal_op_ctx oc[MB_OP_COUNT];
    mb_cal_pass_ctx pc;
    mb_cal_chains ch;
    mb_cal_gemm_ctx gc;
    mb_cal_figure figs[F_OPS + MB_OP_COUNT + MB_CAL_MAX_CHAINS + 1];
    char chain_names[MB_CAL_MAX_CHAINS][48];
    int nf, f_chains, f_gemm; /* f_gemm: the GEMM's figure, -1 without a BLAS */
} cal_run;

static void run_free(cal_run *R)
{
    free(R->sc.a);
    free(R->sc.b);
    mb_cal_pass_free(&R->pc);
    mb_cal_chains_free(&R->ch);
    mb_cal_gemm_free(&R->gc);
    free(R);
}

/* The last-level cache knee into out (a smoke test goes on with the reported
 * size when it cannot be measured). */
static int cal_llc(mb_cal_result *out, int quick, const cal_log *lg, mb_err *err)
{
    step(lg, "last-level cache: warm copy bandwidth from 1 MiB up");
    int rc = mb_cal_cache_knee(out->llc_reported_bytes, quick, &out->llc_bytes,
                                &out->llc_from_knee, &out->llc_retained_bytes, out->llc_desc, sizeof out->llc_desc, err);
    if (rc && quick && out->llc_reported_bytes > 0) {
        step(lg, "last-level cache knee not measured: %s", err->msg);
        out->llc_bytes = out->llc_reported_bytes;
        snprintf(out->llc_desc, sizeof out->llc_desc, "reported %.0f MiB (knee not measured: "
                 "contended)", (double)out->llc_reported_bytes / 1048576.0);
        rc = MB_OK;
    }
    if (rc) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return mb_err_set(err, rc, "calibration refused, nothing written: %.400s", msg);
    }
    step(lg, "last-level cache: %s", out->llc_desc);
    return MB_OK;
}

/* The figures' list, in sampling order: bandwidths, FMA, pass, each op of
 * op_table.h, each compiled chain that is ready. */
static void figures_list(cal_run *R, int quick)
{
    const double bytes1 = (double)R->sc.n * sizeof(float);
    mb_cal_figure *f = R->figs;
    memset(R->figs, 0, sizeof R->figs);
    f[F_COPY] = (mb_cal_figure){.name = "copy", .fn = mb_cal_copy_nt, .ctx = &R->sc, .work = 2 * bytes1};
    f[F_COPY_PLAIN] = (mb_cal_figure){.name = "plain copy", .fn = mb_cal_copy_plain, .ctx = &R->sc,
                                       .work = 2 * bytes1};
    f[F_CACHE] = mb_cal_cache_copy_figure(&R->cc);
    f[F_READ] = (mb_cal_figure){.name = "read", .fn = mb_cal_read_sum, .ctx = &R->sc, .work = bytes1};
    f[F_WRITE] = (mb_cal_figure){.name = "write", .fn = mb_cal_write_nt, .ctx = &R->sc, .work = bytes1};
    f[F_WRITE_PLAIN] = (mb_cal_figure){.name = "plain write", .fn = mb_cal_write_plain, .ctx = &R->sc,
                                        .work = bytes1};
    f[F_FMA] = (mb_cal_figure){.name = "fp32 FMA", .fn = mb_cal_fma_peak, .ctx = &R->fc, .work = 0};
    /* 1 / rate: us per pass */
    f[F_PASS] = (mb_cal_figure){.name = "executor pass", .fn = mb_cal_pass, .ctx = &R->pc, .work = 1e3};
    R->nf = F_OPS;
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++) {
        /* a row op (or the column sum) has no tile form: the model costs it
         * by its parts' rates */
        if (MB_OP_IS_ROW((mb_op)op) || MB_OP_IS_COLUMN((mb_op)op)) continue;
        R->oc[op] = (mb_cal_op_ctx){(mb_op)op, quick ? 100 : 2000, 0};
        f[R->nf++] = (mb_cal_figure){.name = mb_op_name((mb_op)op), .fn = mb_cal_op_rate,
                                      .ctx = &R->oc[op], .work = 0};
    }
    R->f_chains = R->nf;
    for (int i = 0; i < R->ch.n; i++) {
        if (!R->ch.c[i].have_t) continue;
        snprintf(R->chain_names[i], sizeof R->chain_names[i], "compiled %s chain",
                 i == 0 ? "short add" : R->ch.op[i] == MB_OP_COUNT ? "sincos" : mb_op_name(R->ch.op[i]));
        f[R->nf++] = (mb_cal_figure){.name = R->chain_names[i], .fn = mb_cal_pass,
                                      .ctx = &R->ch.c[i], .work = 1};
    }
    /* last: the chains' figures above are read in order from f_chains */
    R->f_gemm = -1;
    if (R->gc.n > 0) {
        R->f_gemm = R->nf;
        /* each sample after an untimed product: the operands warm, as
         * `gemm --measure` times its products back to back (the round's
         * streams before it would leave them cold) */
        f[R->nf++] = (mb_cal_figure){.name = "f32 GEMM (cblas_sgemm)", .fn = mb_cal_gemm, .ctx = &R->gc,
                                      .work = 2.0 * R->gc.n * (double)R->gc.n * R->gc.n, .before = mb_cal_gemm};
    }
}

/* Arrays, the pass plan, the chains and the figures of a calibration at n
 * elements. NULL with err set when memory or the pass plan fails. */
static cal_run *run_new(const mb_cal_result *out, int64_t n, int quick, const cal_log *lg, mb_err *err)
{
    cal_run *R = calloc(1, sizeof *R);
    if (!R) return mb_err_set(err, MB_ERUN, "out of memory"), NULL;
    R->sc.n = n;
    R->sc.a = aligned_alloc(64, (size_t)n * sizeof(float));
    R->sc.b = aligned_alloc(64, (size_t)n * sizeof(float));
    if (!R->sc.a || !R->sc.b) {
        mb_err_set(err, MB_ERUN, "cannot allocate 2 x %.3g GB for the bandwidth test", (double)n * 4 / 1e9);
        run_free(R);
        return NULL;
    }
    if (mb_cal_pass_init(&R->pc, "y = copy(x)", MB_PLAN_EAGER, (int64_t)mb_kern_threads() * MB_KERN_TILE,
                              err)) {
        run_free(R);
        return NULL;
    }
    int n_chains = 2; /* the shallow adds and sincos, then op_table.h's chains */
    for (int op = 1; op < MB_OP_COUNT; op++) n_chains += mb_op_info_of((mb_op)op)->probe_pre != NULL;
    step(lg, "compiled kernels: %d probe chains (compiled once, then loaded from the kernel cache)", n_chains);
    mb_cal_chains_init(&R->ch, (int64_t)mb_kern_threads() * CHAIN_N);
    float *a = R->sc.a, *b = R->sc.b;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 1.0f + (float)(i & 255) * 0.01f; /* non-zero, varied */
        b[i] = 2.0f;
    }
    R->cc = (mb_cal_stream_ctx){R->sc.a, R->sc.b, (out->llc_bytes / 8 / (int64_t)sizeof(float)) & ~(int64_t)63, 0};
    if (R->cc.n > n) R->cc.n = n; /* quick: the arrays are smaller */
    R->fc = (mb_cal_fma_ctx){quick ? 20000 : 200000, 0, 0};
    if (!mb_cal_gemm_init(&R->gc, out->threads))
        step(lg, "f32 GEMM: not measured (%s)", mb_cal_gemm_blas()[0] ? "no memory" : "built without OpenBLAS");
    figures_list(R, quick);
    return R;
}

/* One attempt: every figure warmed, then interleaved rounds with the host
 * reference once a round, and the calibration's figures from their medians.
 * Returns 1 with why set when the figures are refused. */
static int cal_attempt(cal_run *R, mb_cal_result *out, int quick, char *why, size_t whysz)
{
    const int rounds = quick ? CAL_ROUNDS_QUICK : CAL_ROUNDS;
    mb_cal_figure *f = R->figs;
    for (int i = 0; i < R->nf; i++) mb_cal_figure_warm(&f[i]);
    f[F_FMA].work = R->fc.flops; /* set by the warm-up call */
    for (int i = F_OPS; i < R->f_chains; i++) f[i].work = ((const mb_cal_op_ctx *)f[i].ctx)->elements;
    /* a figure with more than half its rounds contended cannot have a clean
     * median: the attempt stops there */
    int hopeless = 0, n_ref = 0;
    /* the host reference on the copy's arrays, once a round: measure times
     * the same beside its rows and compares */
    mb_meas_hostref href = {.src = R->sc.a, .dst = R->sc.b, .n = R->sc.n};
    double ref_copy[CAL_ROUNDS], ref_op[MB_MEAS_HOSTREF_N_OPS][CAL_ROUNDS];
    for (int r = 0; r < rounds && !hopeless; r++) {
        for (int i = 0; i < R->nf && !hopeless; i++) {
            mb_cal_figure_sample(&f[i], out->threads);
            hopeless = !quick && 2 * f[i].contended > rounds;
        }
        if (quick) continue; /* a smoke test's arrays are not measure's: no reference */
        for (int o = 0; o < MB_MEAS_HOSTREF_N_OPS; o++) ref_op[o][n_ref] = mb_meas_hostref_op_geps(o);
        ref_copy[n_ref++] = mb_meas_hostref_copy_gbs(&href);
    }
    out->ref_copy_gbs = mb_meas_median_rate(ref_copy, n_ref);
    for (int o = 0; o < MB_MEAS_HOSTREF_N_OPS; o++) out->ref_op_geps[o] = mb_meas_median_rate(ref_op[o], n_ref);
    double bw_spread = 0, op_spread = 0;
    out->copy_gbs = mb_cal_figure_rate(&f[F_COPY], &bw_spread);
    out->copy_plain_gbs = mb_cal_figure_rate(&f[F_COPY_PLAIN], &bw_spread);
    out->cache_gbs = R->cc.n > 0 ? mb_cal_figure_rate(&f[F_CACHE], &bw_spread) : 0.0;
    out->read_gbs = mb_cal_figure_rate(&f[F_READ], &bw_spread);
    out->write_gbs = mb_cal_figure_rate(&f[F_WRITE], &bw_spread);
    out->write_plain_gbs = mb_cal_figure_rate(&f[F_WRITE_PLAIN], &bw_spread);
    out->fp32_tflops = mb_cal_figure_rate(&f[F_FMA], &op_spread) / 1e3;
    out->pass_overhead_us = 1.0 / mb_cal_figure_rate(&f[F_PASS], &op_spread);
    for (int i = F_OPS; i < R->f_chains; i++)
        out->op_geps[((const mb_cal_op_ctx *)f[i].ctx)->op] = mb_cal_figure_rate(&f[i], &op_spread);
    mb_cal_compiled_rates(&R->ch, f + R->f_chains, (int64_t)mb_kern_threads() * CHAIN_N, out);
    if (R->f_gemm >= 0) {
        double spread = 0, gflops = mb_cal_figure_rate(&f[R->f_gemm], &spread);
        mb_device_set(&out->dev, MB_DK_gemm_gflops, gflops);
        snprintf(out->detail[MB_DK_gemm_gflops], sizeof out->detail[MB_DK_gemm_gflops],
                 "cblas_sgemm %dx%dx%d row-major, %d threads, warm, CV %.1f%% (%.60s)", R->gc.n, R->gc.n, R->gc.n,
                 out->threads, 100 * spread, mb_cal_gemm_blas());
        if (spread > op_spread) op_spread = spread;
    }
    out->bw_spread = bw_spread;
    out->op_spread = op_spread;
    out->samples = out->retaken = 0;
    for (int i = 0; i < R->nf; i++) out->samples += f[i].ns, out->retaken += f[i].retaken;
    return mb_cal_refused(out, f, R->nf, quick, why, whysz);
}

int mb_cal_cpu(int threads, int quick, void (*progress)(const char *label),
                          mb_cal_result *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    mb_kern_set_threads(threads);
    out->threads = mb_kern_threads();
    out->llc_reported_bytes = mb_kern_llc_bytes();
    out->l1_bytes = mb_kern_l1_cache_bytes();
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    out->mem_gb = pages > 0 && psz > 0 ? (double)pages * (double)psz / 1e9 : 0.0;
    const cal_log lg = {progress, mb_meas_now_s()};
    /* the effective last-level cache sizes everything after it */
    int rc = cal_llc(out, quick, &lg, err);
    if (rc) return rc;
    int64_t n = mb_meas_stream_elements(out->llc_bytes, quick);
    out->stream_n = n;
    cal_run *R = run_new(out, n, quick, &lg, err);
    if (!R) return MB_ERUN;
    out->compiled_chains = R->ch.ready;
    char why[512] = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        step(&lg, "%sprobes: bandwidth, FMA peak, %d op rates, executor pass; %d interleaved rounds",
             attempt ? "again: " : "", R->f_chains - F_OPS, quick ? CAL_ROUNDS_QUICK : CAL_ROUNDS);
        if (!cal_attempt(R, out, quick, why, sizeof why)) {
            why[0] = '\0';
            break;
        }
        step(&lg, "implausible: %s", why);
        if (quick) { /* a smoke test: said, not refused (its figures are not for the model) */
            why[0] = '\0';
            break;
        }
    }
    run_free(R);
    if (why[0]) return mb_err_set(err, MB_ERUN, "calibration refused, nothing written: %s", why);
    out->sincos_geps = mb_cal_sincos_geps(quick);
    out->exp_nonpos_gain = mb_cal_exp_nonpos_gain(quick);
    step(&lg, "overlap of memory and compute, read streams");
    /* the probes need arrays beyond the cache, not the STREAM rule's 4x: the
     * four-stream probe holds five of them */
    int64_t n_probe = n < ((int64_t)1 << 25) ? n : (int64_t)1 << 25;
    if ((rc = mb_cal_overlap(out, n_probe, quick ? 1 : 3, err))) return rc;
    step(&lg, "first touch of fresh allocations, 8-128 MiB");
    if ((rc = mb_cal_first_touch(out, quick, err))) return rc;
    mb_cal_details(out);
    step(&lg, "done");
    return MB_OK;
}
