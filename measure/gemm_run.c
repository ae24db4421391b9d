/* gemm_run.c — one (batched) f32 GEMM, or a transformer MLP built on it (its
 * forward or backward), timed on the CPU through kernels/'s BLAS, and checked
 * against float64 on sampled entries. Does not model them (model/) nor print
 * them (cli/). */
#include "measure.h"
#include "meas_gemm.h"
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gemm_ctx {
    const mb_gemm *g;
    float *a, *b, *c;
} gemm_ctx;

/* the whole product: batch calls, each on its own strided operands (PyTorch's
 * CPU bmm where its BLAS has no batched GEMM: at::native::cpublas::
 * gemm_batched_with_stride falls back to a loop of gemm calls,
 * aten/src/ATen/native/CPUBlas.cpp; MKL builds call MKL's batched GEMM) */
static int run_all(const gemm_ctx *x, mb_err *err)
{
    const mb_gemm *g = x->g;
    for (int64_t i = 0; i < g->batch; i++) {
        int rc = mb_kern_sgemm(0, 0, g->m, g->n, g->k, 1.0f, x->a + i * g->m * g->k, g->k, x->b + i * g->k * g->n,
                               g->n, 0.0f, x->c + i * g->m * g->n, g->n, err);
        if (rc) return rc;
    }
    return MB_OK;
}

/* sizes checked by the first run: cannot fail here */
static void run_fn(void *ctx) { run_all(ctx, NULL); }

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void fill(float *x, int64_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) x[i] = (float)((double)(next_u64(&s) >> 11) * 0x1p-52 - 1.0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int mb_meas_gemm_available(char *why, size_t whysz)
{
    int ok = mb_kern_blas_load();
    if (why && whysz) snprintf(why, whysz, "%s", mb_kern_blas_desc());
    return ok;
}

/* samples of fn(ctx), before(before_ctx) untimed ahead of each (may be NULL),
 * until c's minimum time and count: median and min into out */
static int sample_all(mb_meas_fn fn, void *ctx, mb_meas_fn before, void *before_ctx, const mb_meas_gemm_config *c,
                      mb_meas_gemm_result *out, mb_err *err)
{
    int cap = 64, n = 0;
    double *t = malloc((size_t)cap * sizeof *t), total = 0;
    if (!t) return mb_err_set(err, MB_ERUN, "out of memory for the samples");
    mb_meas_sampler s = {.fn = fn, .ctx = ctx, .before = before, .before_ctx = before_ctx, .calls = 1,
                         .threads = out->threads, .retries = 2};
    while (n < (c->min_samples > 1 ? c->min_samples : 1) || total < c->min_s) {
        if (n == cap) {
            double *u = realloc(t, (size_t)(cap *= 2) * sizeof *t);
            if (!u) {
                free(t);
                return mb_err_set(err, MB_ERUN, "out of memory for the samples");
            }
            t = u;
        }
        int bad = 0;
        t[n] = mb_meas_sample_s(&s, &bad, NULL);
        total += t[n++];
        out->contended += bad;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    out->samples = n;
    out->min_s = t[0];
    out->median_s = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return MB_OK;
}

int mb_meas_gemm_cpu(const mb_gemm *g, const mb_meas_gemm_config *c, mb_meas_gemm_result *out, mb_err *err)
{
    if (g->dtype != MB_F32)
        return mb_err_set(err, MB_EINPUT,
                          "the CPU runs f32 GEMMs only (OpenBLAS 0.3.21 exports no %s GEMM: cblas_sbgemm is declared, "
                          "not exported); measure with --dtype f32", mb_dtype_name(g->dtype));
    if (g->m < 1 || g->n < 1 || g->k < 1 || g->batch < 1)
        return mb_err_set(err, MB_EINPUT, "a GEMM's m, n, k and batch are at least 1");
    if (!mb_kern_blas_load()) return mb_err_set(err, MB_ERUN, "no BLAS for the GEMM: %s", mb_kern_blas_desc());
    const double lim = 1.0e11; /* elements an operand may have here: 400 GB */
    const double M = (double)g->m, N = (double)g->n, K = (double)g->k, B = (double)g->batch;
    if (B * M * K > lim || B * K * N > lim || B * M * N > lim)
        return mb_err_set(err, MB_EINPUT, "a GEMM of %lldx%lldx%lld, batch %lld, is beyond this host's memory",
                          (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch);
    gemm_ctx x = {.g = g};
    size_t na = (size_t)(g->batch * g->m * g->k), nb = (size_t)(g->batch * g->k * g->n),
           nc = (size_t)(g->batch * g->m * g->n);
    x.a = malloc(na * sizeof(float));
    x.b = malloc(nb * sizeof(float));
    x.c = calloc(nc, sizeof(float));
    int rc = MB_OK;
    if (!x.a || !x.b || !x.c) {
        rc = mb_err_set(err, MB_ERUN, "out of memory for a GEMM's operands (%.3g GB)",
                        (double)(na + nb + nc) * 4 / 1e9);
        goto done;
    }
    fill(x.a, (int64_t)na, 1);
    fill(x.b, (int64_t)nb, 2);
    mb_kern_blas_set_threads(c->threads);
    memset(out, 0, sizeof *out);
    out->threads = c->threads > 0 ? c->threads : mb_kern_threads();
    snprintf(out->blas, sizeof out->blas, "%s", mb_kern_blas_desc());
    if ((rc = run_all(&x, err))) goto done; /* the warm-up */
    /* the check: the first and the last product of the batch */
    out->tol = mb_kern_gemm_tol(g->k);
    for (int64_t i = 0; i < g->batch; i += g->batch > 1 ? g->batch - 1 : 1) {
        double e = mb_kern_gemm_check(0, 0, g->m, g->n, g->k, 1.0, x.a + i * g->m * g->k, g->k,
                                      x.b + i * g->k * g->n, g->n, x.c + i * g->m * g->n, g->n,
                                      c->check_samples > 2 ? c->check_samples : 2, 7 + (uint64_t)i);
        if (e > out->max_rel_err) out->max_rel_err = e;
    }
    out->verified = out->max_rel_err <= out->tol;
    if ((rc = sample_all(run_fn, &x, NULL, NULL, c, out, err))) goto done;
    out->gflops_median = 2.0 * M * N * K * B / out->median_s / 1e9;
done:
    free(x.a), free(x.b), free(x.c);
    return rc;
}

typedef struct mlp_ctx {
    mb_kern_mlp cfg;
    mb_kern_mlp_plan plan;
    mb_kern_mlp_bufs b;
} mlp_ctx;

/* sizes and BLAS checked by the warm-up: cannot fail here */
static void mlp_fn(void *ctx)
{
    mlp_ctx *x = ctx;
    mb_kern_mlp_run(&x->cfg, x->plan, &x->b, NULL);
}

static void mlp_bwd_fn(void *ctx)
{
    mlp_ctx *x = ctx;
    mb_kern_mlp_backward(&x->cfg, x->plan, &x->b, NULL);
}

static void flush_fn(void *f) { mb_meas_flush_cpu(f); }

/* the executor's configuration of m on threads threads */
static mb_kern_mlp kern_cfg(const mb_meas_mlp *m, int threads)
{
    const mb_kern_mlp cfg = {.kind = m->kind == MB_MEAS_MLP_LLAMA ? MB_KERN_MLP_LLAMA : MB_KERN_MLP_GPT2,
                             .tokens = m->tokens, .d_model = m->d_model, .d_ff = m->d_ff,
                             .cache_bytes = m->cache_bytes, .panel_rows = m->panel_rows, .threads = threads,
                             .fault = m->fault, .backward = m->backward};
    return cfg;
}

int mb_meas_mlp_admit(const mb_meas_mlp *m, mb_err *err)
{
    const mb_kern_mlp cfg = kern_cfg(m, 0);
    const double need = mb_kern_mlp_bytes(&cfg) + 2.0 * (double)(m->flush_bytes > 0 ? m->flush_bytes : 0);
    const int64_t avail = mb_meas_host_memory_bytes("MemAvailable");
    if (avail > 0 && need > (double)avail)
        return mb_err_set(err, MB_EINPUT, "an MLP of %lld tokens, %lld x %lld%s needs %.3g GB of memory, this host has "
                          "%.3g GB available: use fewer tokens", (long long)m->tokens, (long long)m->d_model,
                          (long long)m->d_ff, m->backward ? " with its backward" : "", need / 1e9, (double)avail / 1e9);
    return MB_OK;
}

int mb_meas_mlp_cpu(const mb_meas_mlp *m, const mb_meas_gemm_config *c, mb_meas_gemm_result *out,
                    int64_t *panel_rows, mb_err *err)
{
    if (!mb_kern_blas_load()) return mb_err_set(err, MB_ERUN, "no BLAS for the MLP's GEMMs: %s", mb_kern_blas_desc());
    mlp_ctx x = {.cfg = kern_cfg(m, c->threads),
                 .plan = m->plan == MB_MEAS_MLP_FUSED ? MB_KERN_MLP_FUSED : MB_KERN_MLP_EAGER};
    int rc = mb_meas_mlp_admit(m, err);
    if (rc) return rc;
    rc = mb_kern_mlp_alloc(&x.cfg, &x.b, 1, err);
    if (rc) return rc;
    mb_meas_flusher fl;
    memset(&fl, 0, sizeof fl);
    memset(out, 0, sizeof *out);
    out->threads = c->threads > 0 ? c->threads : mb_kern_threads();
    snprintf(out->blas, sizeof out->blas, "%s", mb_kern_blas_desc());
    if (panel_rows) *panel_rows = mb_kern_mlp_panel_rows(&x.cfg);
    if (m->flush_bytes > 0 && (rc = mb_meas_flusher_init(&fl, m->flush_bytes, err))) goto done;
    /* the warm-up; the backward's reads what an eager forward saves */
    if (m->backward && (rc = mb_kern_mlp_run(&x.cfg, MB_KERN_MLP_EAGER, &x.b, err))) goto done;
    if ((rc = m->backward ? mb_kern_mlp_backward(&x.cfg, x.plan, &x.b, err) : mb_kern_mlp_run(&x.cfg, x.plan, &x.b, err)))
        goto done;
    /* rows (entries) of d_model x d_ff float64 work each: 8 at most */
    int rows = c->check_samples < 2 ? 2 : c->check_samples > 8 ? 8 : c->check_samples;
    out->max_rel_err = m->backward ? mb_kern_mlp_check_backward(&x.cfg, &x.b, rows, 3)
                                   : mb_kern_mlp_check(&x.cfg, &x.b, rows, 16, 3);
    out->tol = 1;
    out->verified = out->max_rel_err <= 1;
    if ((rc = sample_all(m->backward ? mlp_bwd_fn : mlp_fn, &x, m->flush_bytes > 0 ? flush_fn : NULL, &fl, c, out,
                         err)))
        goto done;
    out->gflops_median =
        (m->backward ? mb_kern_mlp_backward_flops(&x.cfg) : mb_kern_mlp_flops(&x.cfg)) / out->median_s / 1e9;
done:
    mb_meas_flusher_free(&fl);
    mb_kern_mlp_free(&x.b);
    return rc;
}

static const char *const gemm_epilogues[MB_MEAS_GEMM_N_EPILOGUES] = {"none", "bias", "bias_relu", "bias_gelu"};

const char *mb_meas_gemm_epilogue_name(mb_meas_gemm_epilogue e)
{
    return (unsigned)e < MB_MEAS_GEMM_N_EPILOGUES ? gemm_epilogues[e] : "?";
}

int mb_meas_gemm_epilogue_parse(const char *s, mb_meas_gemm_epilogue *out)
{
    for (int e = 0; e < MB_MEAS_GEMM_N_EPILOGUES; e++)
        if (!strcmp(s, gemm_epilogues[e])) {
            *out = (mb_meas_gemm_epilogue)e;
            return MB_OK;
        }
    return MB_EINPUT;
}
