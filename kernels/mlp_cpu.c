/* mlp_cpu.c — the transformer MLP on the CPU, f32 forward: GPT-2's
 * gelu(x @ w1 + b1) @ w2 + b2 and Llama's (silu(x @ wg) * (x @ wu)) @ wd,
 * in two plans (kernels.h): eager (PyTorch eager's kernels, each
 * elementwise op a pass over the whole hidden tensor) and fused (token
 * panels, the epilogue on each panel in cache); the float64 check of
 * sampled entries. Every GEMM is mb_kern_sgemm's (OpenBLAS); this file
 * writes no GEMM. It does not model the MLP (model/) nor time it (measure/,
 * bench/cpu_mlp.py). */
#include "kernels.h"
#include "op_math.h"
#include "vec_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- per-element math: op_math.h's scalars, vec_ops.h's vectors ---- */

/* v[i] = gelu(v[i] + bias[i]) over one row of n (bias may be NULL) */
static void bias_gelu_row(float *v, const float *bias, int64_t n, int skip_act)
{
    int64_t i = 0;
#ifdef MB_VW
    if (!skip_act)
        for (; i + MB_VW <= n; i += MB_VW) {
            vf x = V_LD(v + i);
            if (bias) x = V_ADD(x, V_LD(bias + i));
            V_ST(v + i, MB_V_GELU(x));
        }
#endif
    for (; i < n; i++) {
        float x = v[i] + (bias ? bias[i] : 0.0f);
        v[i] = skip_act ? x : mb_op_apply_f32(MB_OP_GELU, x, 0);
    }
}

/* out[i] = silu(g[i]) * u[i] over one row of n (u NULL: silu alone) */
static void silu_mul_row(float *out, const float *g, const float *u, int64_t n)
{
    int64_t i = 0;
#ifdef MB_VW
    for (; i + MB_VW <= n; i += MB_VW) {
        vf s = MB_V_SILU(V_LD(g + i));
        V_ST(out + i, u ? V_MUL(s, V_LD(u + i)) : s);
    }
#endif
    for (; i < n; i++) {
        float s = mb_op_apply_f32(MB_OP_SILU, g[i], 0);
        out[i] = u ? s * u[i] : s;
    }
}

/* out[i] = a[i] * u[i] */
static void mul_row(float *out, const float *a, const float *u, int64_t n)
{
    for (int64_t i = 0; i < n; i++) out[i] = a[i] * u[i];
}

/* each of rows rows of c (row stride n) set to bias: addmm's broadcast copy */
static void bias_rows(float *c, const float *bias, int64_t rows, int64_t n)
{
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) memcpy(c + r * n, bias, (size_t)n * sizeof *c);
}

/* ---- sizes ---- */

static int64_t llc_bytes(void)
{
#ifdef _SC_LEVEL3_CACHE_SIZE
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return v;
#endif
    return (int64_t)32 << 20;
}

static int threads_of(const mb_kern_mlp *cfg) { return cfg->threads > 0 ? cfg->threads : mb_kern_threads(); }

int64_t mb_kern_mlp_panel_rows(const mb_kern_mlp *cfg)
{
    if (cfg->panel_rows > 0) return cfg->panel_rows < cfg->tokens ? cfg->panel_rows : cfg->tokens;
    const int64_t cache = cfg->cache_bytes > 0 ? cfg->cache_bytes : llc_bytes();
    const int64_t row_bytes = (cfg->kind == MB_KERN_MLP_LLAMA ? 2 : 1) * cfg->d_ff * (int64_t)sizeof(float);
    int64_t p = cache / 2 / (row_bytes > 0 ? row_bytes : 1) / 16 * 16;
    if (p < MB_KERN_MLP_MIN_PANEL) p = MB_KERN_MLP_MIN_PANEL;
    return p < cfg->tokens ? p : cfg->tokens;
}

double mb_kern_mlp_flops(const mb_kern_mlp *cfg)
{
    return 2.0 * (double)cfg->tokens * (double)cfg->d_model * (double)cfg->d_ff *
           (cfg->kind == MB_KERN_MLP_LLAMA ? 3 : 2);
}

/* ---- buffers ---- */

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float *filled(int64_t n, double scale, uint64_t *s)
{
    float *p = malloc((size_t)n * sizeof *p);
    if (p)
        for (int64_t i = 0; i < n; i++) p[i] = (float)(scale * ((double)(next_u64(s) >> 11) * 0x1p-52 - 1.0));
    return p;
}

void mb_kern_mlp_free(mb_kern_mlp_bufs *b)
{
    float **all[] = {&b->x, &b->w1, &b->b1, &b->w2, &b->b2, &b->wg, &b->wu, &b->wd, &b->h, &b->u, &b->g, &b->y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

int mb_kern_mlp_alloc(const mb_kern_mlp *cfg, mb_kern_mlp_bufs *b, uint64_t seed, mb_err *err)
{
    memset(b, 0, sizeof *b);
    const int64_t T = cfg->tokens, D = cfg->d_model, F = cfg->d_ff;
    if (T < 1 || D < 1 || F < 1)
        return mb_err_set(err, MB_EINPUT, "an MLP's tokens, d_model and d_ff are at least 1 (got %lld, %lld, %lld)",
                          (long long)T, (long long)D, (long long)F);
    const double lim = 1099511627776.0; /* 2^40 elements */
    if ((double)T * F > lim || (double)T * D > lim || (double)D * F > lim)
        return mb_err_set(err, MB_EINPUT, "an MLP of %lld tokens, %lld x %lld has a tensor beyond 2^40 elements",
                          (long long)T, (long long)D, (long long)F);
    uint64_t s = seed;
    const double s_in = 1.0 / sqrt((double)D), s_ff = 1.0 / sqrt((double)F);
    int ok = (b->x = filled(T * D, 1.0, &s)) != NULL;
    if (cfg->kind == MB_KERN_MLP_LLAMA) {
        ok = ok && (b->wg = filled(D * F, s_in, &s)) && (b->wu = filled(D * F, s_in, &s)) &&
             (b->wd = filled(F * D, s_ff, &s)) && (b->u = malloc((size_t)(T * F) * sizeof(float)));
    } else {
        ok = ok && (b->w1 = filled(D * F, s_in, &s)) && (b->b1 = filled(F, s_in, &s)) &&
             (b->w2 = filled(F * D, s_ff, &s)) && (b->b2 = filled(D, s_ff, &s));
    }
    ok = ok && (b->h = malloc((size_t)(T * F) * sizeof(float))) && (b->g = malloc((size_t)(T * F) * sizeof(float))) &&
         (b->y = calloc((size_t)(T * D), sizeof(float)));
    if (!ok) {
        mb_kern_mlp_free(b);
        return mb_err_set(err, MB_ERUN, "out of memory for an MLP of %lld tokens, %lld x %lld", (long long)T,
                          (long long)D, (long long)F);
    }
    /* first touch of the hidden buffers here, not in the first timed run */
    memset(b->h, 0, (size_t)(T * F) * sizeof(float));
    memset(b->g, 0, (size_t)(T * F) * sizeof(float));
    if (b->u) memset(b->u, 0, (size_t)(T * F) * sizeof(float));
    return MB_OK;
}

/* ---- the plans ---- */

static int eager(const mb_kern_mlp *cfg, mb_kern_mlp_bufs *b, mb_err *err)
{
    const int64_t T = cfg->tokens, D = cfg->d_model, F = cfg->d_ff;
    int rc;
    if (cfg->kind == MB_KERN_MLP_GPT2) {
        /* addmm(b1, x, w1); gelu into g; addmm(b2, g, w2) */
        bias_rows(b->h, b->b1, T, F);
        if ((rc = mb_kern_sgemm(0, 0, T, F, D, 1.0f, b->x, D, b->w1, F, 1.0f, b->h, F, err))) return rc;
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < T; r++) {
            memcpy(b->g + r * F, b->h + r * F, (size_t)F * sizeof(float));
            bias_gelu_row(b->g + r * F, NULL, F, 0);
        }
        bias_rows(b->y, b->b2, T, D);
        return mb_kern_sgemm(0, 0, T, D, F, 1.0f, b->g, F, b->w2, D, 1.0f, b->y, D, err);
    }
    /* mm(x, wg); mm(x, wu); silu into g; g * u into h; mm(h, wd) */
    if ((rc = mb_kern_sgemm(0, 0, T, F, D, 1.0f, b->x, D, b->wg, F, 0.0f, b->h, F, err))) return rc;
    if ((rc = mb_kern_sgemm(0, 0, T, F, D, 1.0f, b->x, D, b->wu, F, 0.0f, b->u, F, err))) return rc;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < T; r++) silu_mul_row(b->g + r * F, b->h + r * F, NULL, F);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < T; r++) mul_row(b->h + r * F, b->g + r * F, b->u + r * F, F);
    return mb_kern_sgemm(0, 0, T, D, F, 1.0f, b->h, F, b->wd, D, 0.0f, b->y, D, err);
}

static int fused(const mb_kern_mlp *cfg, mb_kern_mlp_bufs *b, mb_err *err)
{
    const int64_t T = cfg->tokens, D = cfg->d_model, F = cfg->d_ff, P = mb_kern_mlp_panel_rows(cfg);
    int rc;
    for (int64_t r0 = 0; r0 < T; r0 += P) {
        const int64_t rows = T - r0 < P ? T - r0 : P;
        const int last = r0 + rows == T;
        const float *x = b->x + r0 * D;
        float *y = b->y + r0 * D;
        if (cfg->kind == MB_KERN_MLP_GPT2) {
            if ((rc = mb_kern_sgemm(0, 0, rows, F, D, 1.0f, x, D, b->w1, F, 0.0f, b->h, F, err))) return rc;
            const float *b1 = last && cfg->fault == 2 ? NULL : b->b1;
            const int skip = last && cfg->fault == 1;
#pragma omp parallel for schedule(static)
            for (int64_t r = 0; r < rows; r++) bias_gelu_row(b->h + r * F, b1, F, skip);
            bias_rows(y, b->b2, rows, D);
            if ((rc = mb_kern_sgemm(0, 0, rows, D, F, 1.0f, b->h, F, b->w2, D, 1.0f, y, D, err))) return rc;
        } else {
            if ((rc = mb_kern_sgemm(0, 0, rows, F, D, 1.0f, x, D, b->wg, F, 0.0f, b->h, F, err))) return rc;
            if ((rc = mb_kern_sgemm(0, 0, rows, F, D, 1.0f, x, D, b->wu, F, 0.0f, b->u, F, err))) return rc;
            const float *u = last && cfg->fault == 2 ? NULL : b->u;
            if (last && cfg->fault == 1) {
#pragma omp parallel for schedule(static)
                for (int64_t r = 0; r < rows; r++) mul_row(b->h + r * F, b->h + r * F, b->u + r * F, F);
            } else {
#pragma omp parallel for schedule(static)
                for (int64_t r = 0; r < rows; r++) silu_mul_row(b->h + r * F, b->h + r * F, u ? u + r * F : NULL, F);
            }
            if ((rc = mb_kern_sgemm(0, 0, rows, D, F, 1.0f, b->h, F, b->wd, D, 0.0f, y, D, err))) return rc;
        }
    }
    return MB_OK;
}

int mb_kern_mlp_run(const mb_kern_mlp *cfg, mb_kern_mlp_plan plan, mb_kern_mlp_bufs *b, mb_err *err)
{
    if (!mb_kern_blas_load()) return mb_err_set(err, MB_ERUN, "no BLAS for the MLP's GEMMs: %s", mb_kern_blas_desc());
    const int t = threads_of(cfg);
    mb_kern_set_threads(t);
    mb_kern_blas_set_threads(t);
    return plan == MB_KERN_MLP_FUSED ? fused(cfg, b, err) : eager(cfg, b, err);
}

/* ---- the float64 check ---- */

/* the activation's largest slope: gelu' <= 1.129 (at x = sqrt 2), silu' <= 1.0998 */
#define ACT_SLOPE 1.13

double mb_kern_mlp_check(const mb_kern_mlp *cfg, const mb_kern_mlp_bufs *b, int rows, int cols, uint64_t seed)
{
    const int64_t T = cfg->tokens, D = cfg->d_model, F = cfg->d_ff;
    const double u = ldexp(1.0, -24), g1 = (double)(D + 2) * u, g2 = (double)(F + 2) * u;
    const int llama = cfg->kind == MB_KERN_MLP_LLAMA;
    double *h = malloc((size_t)F * sizeof *h), *eh = malloc((size_t)F * sizeof *eh);
    double worst = 0;
    uint64_t s = seed;
    if (!h || !eh) {
        free(h), free(eh);
        return INFINITY;
    }
    for (int t = 0; t < rows && worst < INFINITY; t++) {
        const int64_t i = t == 0 ? 0 : t == 1 ? T - 1 : (int64_t)(next_u64(&s) % (uint64_t)T);
        const float *x = b->x + i * D;
        /* the hidden row in float64 and the bound on its f32 error */
        for (int64_t k = 0; k < F; k++) {
            const float *w = llama ? b->wg : b->w1;
            double a = llama ? 0 : b->b1[k], ma = llama ? 0 : fabs(b->b1[k]);
            for (int64_t p = 0; p < D; p++) {
                a += (double)x[p] * w[p * F + k];
                ma += fabs((double)x[p] * w[p * F + k]);
            }
            double act = mb_op_apply_f64(llama ? MB_OP_SILU : MB_OP_GELU, a, 0);
            if (!llama) {
                h[k] = act;
                eh[k] = ACT_SLOPE * g1 * ma + 4 * u * fabs(act);
                continue;
            }
            double v = 0, mv = 0;
            for (int64_t p = 0; p < D; p++) {
                v += (double)x[p] * b->wu[p * F + k];
                mv += fabs((double)x[p] * b->wu[p * F + k]);
            }
            h[k] = act * v;
            eh[k] = fabs(v) * (ACT_SLOPE * g1 * ma + 4 * u * fabs(act)) + (fabs(act) + ACT_SLOPE * g1 * ma) * g1 * mv +
                    2 * u * fabs(h[k]);
        }
        for (int c = 0; c < cols; c++) {
            const int64_t j = c == 0 ? 0 : c == 1 ? D - 1 : (int64_t)(next_u64(&s) % (uint64_t)D);
            const float *w = llama ? b->wd : b->w2;
            double ref = llama ? 0 : b->b2[j], mag = llama ? 0 : fabs(b->b2[j]), prop = 0;
            for (int64_t k = 0; k < F; k++) {
                ref += h[k] * w[k * D + j];
                mag += fabs(h[k] * w[k * D + j]);
                prop += eh[k] * fabs(w[k * D + j]);
            }
            const double got = b->y[i * D + j];
            if (!isfinite(got)) {
                worst = INFINITY;
                break;
            }
            const double bound = g2 * mag + prop + u * fabs(ref) + 1e-30;
            const double e = fabs(got - ref) / bound;
            if (e > worst) worst = e;
        }
    }
    free(h), free(eh);
    return worst;
}
