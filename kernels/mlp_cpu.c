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

/* Floats ahead of its loads the bias + GELU row loop prefetches (1 KiB). A
 * row of the hidden tensor streams from memory under an erf GELU of tens of
 * instructions a vector: without it the loads wait in turn, and GPT-2's
 * fused bias + GELU in place ran 14.2 ms against 11.8 for eager's memcpy
 * (which streams the row ahead) then GELU on the copy; 9.9 ms with it
 * (2048 x 3072, two threads; 64 floats ahead 11.3, 1024 10.4). SiLU's rows
 * (Llama) ran the same with and without it (129.8-131.7 ms, three A/B
 * runs), so they have none. */
#define MLP_PREFETCH_FLOATS 256

/* v[i] = gelu(v[i] + bias[i]) over one row of n (bias may be NULL) */
static void bias_gelu_row(float *v, const float *bias, int64_t n, int skip_act)
{
    int64_t i = 0;
#ifdef MB_VW
    if (!skip_act)
        for (; i + MB_VW <= n; i += MB_VW) {
            __builtin_prefetch(v + i + MLP_PREFETCH_FLOATS, 1);
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

/* zeroed with memset, not calloc: the pages are touched here, not in the
 * first timed run */
static float *zeroed(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    if (p) memset(p, 0, (size_t)n * sizeof *p);
    return p;
}

void mb_kern_mlp_free(mb_kern_mlp_bufs *b)
{
    float **all[] = {&b->x,  &b->w1,  &b->b1,  &b->w2,  &b->b2,  &b->wg,  &b->wu,  &b->wd,  &b->h,
                     &b->u,  &b->g,   &b->p,   &b->y,   &b->dy,  &b->dx,  &b->dw1, &b->db1, &b->dw2,
                     &b->db2, &b->dwg, &b->dwu, &b->dwd, &b->dh,  &b->du};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

double mb_kern_mlp_bytes(const mb_kern_mlp *cfg)
{
    const double T = (double)cfg->tokens, D = (double)cfg->d_model, F = (double)cfg->d_ff;
    const int llama = cfg->kind == MB_KERN_MLP_LLAMA;
    /* as mb_kern_mlp_alloc: x, y; the weights (and biases); h, g (u, p);
     * with backward dy, dx, the weights' gradients and dh (du) */
    const double weights = (llama ? 3 : 2) * D * F + (llama ? 0 : F + D);
    double n = 2 * T * D + weights + (llama ? 4 : 2) * T * F;
    if (cfg->backward) n += 2 * T * D + weights + (llama ? 2 : 1) * T * F;
    return 4 * n;
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
             (b->wd = filled(F * D, s_ff, &s)) && (b->u = zeroed(T * F)) && (b->p = zeroed(T * F));
    } else {
        ok = ok && (b->w1 = filled(D * F, s_in, &s)) && (b->b1 = filled(F, s_in, &s)) &&
             (b->w2 = filled(F * D, s_ff, &s)) && (b->b2 = filled(D, s_ff, &s));
    }
    ok = ok && (b->h = zeroed(T * F)) && (b->g = zeroed(T * F)) && (b->y = zeroed(T * D));
    if (ok && cfg->backward) {
        ok = (b->dy = filled(T * D, 1.0, &s)) && (b->dx = zeroed(T * D)) && (b->dh = zeroed(T * F));
        if (cfg->kind == MB_KERN_MLP_LLAMA)
            ok = ok && (b->du = zeroed(T * F)) && (b->dwg = zeroed(D * F)) && (b->dwu = zeroed(D * F)) &&
                 (b->dwd = zeroed(F * D));
        else
            ok = ok && (b->dw1 = zeroed(D * F)) && (b->db1 = zeroed(F)) && (b->dw2 = zeroed(F * D)) &&
                 (b->db2 = zeroed(D));
    }
    if (!ok) {
        mb_kern_mlp_free(b);
        return mb_err_set(err, MB_ERUN, "out of memory for an MLP of %lld tokens, %lld x %lld", (long long)T,
                          (long long)D, (long long)F);
    }
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
    /* mm(x, wg); mm(x, wu); silu into g; g * u into p; mm(p, wd) */
    if ((rc = mb_kern_sgemm(0, 0, T, F, D, 1.0f, b->x, D, b->wg, F, 0.0f, b->h, F, err))) return rc;
    if ((rc = mb_kern_sgemm(0, 0, T, F, D, 1.0f, b->x, D, b->wu, F, 0.0f, b->u, F, err))) return rc;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < T; r++) silu_mul_row(b->g + r * F, b->h + r * F, NULL, F);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < T; r++) mul_row(b->p + r * F, b->g + r * F, b->u + r * F, F);
    return mb_kern_sgemm(0, 0, T, D, F, 1.0f, b->p, F, b->wd, D, 0.0f, b->y, D, err);
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

/* ---- the backward ---- */

/* dh[i] *= gelu'(h[i]) over one row (GeluBackward) */
static void gelu_bwd_row(float *dh, const float *h, int64_t n)
{
    int64_t i = 0;
#ifdef MB_VW
    for (; i + MB_VW <= n; i += MB_VW) V_ST(dh + i, V_MUL(V_LD(dh + i), MB_V_GELU_GRAD(V_LD(h + i))));
#endif
    for (; i < n; i++) dh[i] *= mb_op_apply_f32(MB_OP_GELU_GRAD, h[i], 0);
}

/* dh[i] *= silu'(h[i]) over one row (SiluBackward) */
static void silu_bwd_row(float *dh, const float *h, int64_t n)
{
    int64_t i = 0;
#ifdef MB_VW
    for (; i + MB_VW <= n; i += MB_VW) V_ST(dh + i, V_MUL(V_LD(dh + i), MB_V_SILU_GRAD(V_LD(h + i))));
#endif
    for (; i < n; i++) dh[i] *= mb_op_apply_f32(MB_OP_SILU_GRAD, h[i], 0);
}

/* out[j] (+)= sum over rows of a[r n + j]: a bias's gradient */
static void colsum(float *out, const float *a, int64_t rows, int64_t n, int accumulate)
{
#pragma omp parallel for schedule(static)
    for (int64_t j0 = 0; j0 < n; j0 += 64) {
        const int64_t j1 = j0 + 64 < n ? j0 + 64 : n;
        float acc[64];
        for (int64_t j = j0; j < j1; j++) acc[j - j0] = accumulate ? out[j] : 0.0f;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = j0; j < j1; j++) acc[j - j0] += a[r * n + j];
        for (int64_t j = j0; j < j1; j++) out[j] = acc[j - j0];
    }
}

/* the hidden gradient's GEMM (dy w2^T, dy wd^T) for rows [r0, r0 + rows) */
static int hidden_grad_gemm(const mb_kern_mlp *cfg, mb_kern_mlp_bufs *b, int64_t r0, int64_t rows, mb_err *err)
{
    const int64_t D = cfg->d_model, F = cfg->d_ff;
    const float *w = cfg->kind == MB_KERN_MLP_LLAMA ? b->wd : b->w2;
    return mb_kern_sgemm(0, 1, rows, F, D, 1.0f, b->dy + r0 * D, D, w, D, 0.0f, b->dh + r0 * F, F, err);
}

/* Llama's MulBackward and SiluBackward on one row of the hidden gradient
 * dh (holding dp = dy wd^T): du = dp * g, then dh = dp * u * silu'(h) */
static void llama_bwd_row(const mb_kern_mlp_bufs *b, int64_t r, int64_t F, int skip_silu, int skip_a)
{
    float *dh = b->dh + r * F, *du = b->du + r * F;
    const float *g = b->g + r * F, *u = b->u + r * F, *h = b->h + r * F;
    for (int64_t i = 0; i < F; i++) du[i] = skip_a ? dh[i] : dh[i] * g[i];
    mul_row(dh, dh, u, F);
    if (!skip_silu) silu_bwd_row(dh, h, F);
}

int mb_kern_mlp_backward(const mb_kern_mlp *cfg, mb_kern_mlp_plan plan, mb_kern_mlp_bufs *b, mb_err *err)
{
    if (!b->dy || !b->dh)
        return mb_err_set(err, MB_EINPUT, "the MLP's backward needs its tensors: allocate with cfg->backward = 1");
    if (!mb_kern_blas_load()) return mb_err_set(err, MB_ERUN, "no BLAS for the MLP's GEMMs: %s", mb_kern_blas_desc());
    const int t = threads_of(cfg);
    mb_kern_set_threads(t);
    mb_kern_blas_set_threads(t);
    const int64_t T = cfg->tokens, D = cfg->d_model, F = cfg->d_ff;
    const int llama = cfg->kind == MB_KERN_MLP_LLAMA;
    int rc;
    if (plan == MB_KERN_MLP_FUSED) {
        /* each panel's hidden gradient final while in cache; db1 summed there */
        const int64_t P = mb_kern_mlp_panel_rows(cfg);
        for (int64_t r0 = 0; r0 < T; r0 += P) {
            const int64_t rows = T - r0 < P ? T - r0 : P;
            const int last = r0 + rows == T;
            if ((rc = hidden_grad_gemm(cfg, b, r0, rows, err))) return rc;
            if (llama) {
#pragma omp parallel for schedule(static)
                for (int64_t r = r0; r < r0 + rows; r++) llama_bwd_row(b, r, F, last && cfg->fault == 1, last && cfg->fault == 2);
            } else {
                if (!(last && cfg->fault == 1)) {
#pragma omp parallel for schedule(static)
                    for (int64_t r = r0; r < r0 + rows; r++) gelu_bwd_row(b->dh + r * F, b->h + r * F, F);
                }
                if (!(last && cfg->fault == 2)) colsum(b->db1, b->dh + r0 * F, rows, F, r0 > 0);
            }
        }
    } else {
        if ((rc = hidden_grad_gemm(cfg, b, 0, T, err))) return rc;
        if (llama) { /* MulBackward's two products, then SiluBackward: three passes */
#pragma omp parallel for schedule(static)
            for (int64_t r = 0; r < T; r++) mul_row(b->du + r * F, b->dh + r * F, b->g + r * F, F);
#pragma omp parallel for schedule(static)
            for (int64_t r = 0; r < T; r++) mul_row(b->dh + r * F, b->dh + r * F, b->u + r * F, F);
#pragma omp parallel for schedule(static)
            for (int64_t r = 0; r < T; r++) silu_bwd_row(b->dh + r * F, b->h + r * F, F);
        } else {
#pragma omp parallel for schedule(static)
            for (int64_t r = 0; r < T; r++) gelu_bwd_row(b->dh + r * F, b->h + r * F, F);
            colsum(b->db1, b->dh, T, F, 0);
        }
    }
    /* the weights' and the input's gradients, the same in both plans */
    if (llama) {
        if ((rc = mb_kern_sgemm(1, 0, F, D, T, 1.0f, b->p, F, b->dy, D, 0.0f, b->dwd, D, err))) return rc;
        if ((rc = mb_kern_sgemm(1, 0, D, F, T, 1.0f, b->x, D, b->dh, F, 0.0f, b->dwg, F, err))) return rc;
        if ((rc = mb_kern_sgemm(1, 0, D, F, T, 1.0f, b->x, D, b->du, F, 0.0f, b->dwu, F, err))) return rc;
        if ((rc = mb_kern_sgemm(0, 1, T, D, F, 1.0f, b->dh, F, b->wg, F, 0.0f, b->dx, D, err))) return rc;
        return mb_kern_sgemm(0, 1, T, D, F, 1.0f, b->du, F, b->wu, F, 1.0f, b->dx, D, err);
    }
    colsum(b->db2, b->dy, T, D, 0);
    if ((rc = mb_kern_sgemm(1, 0, F, D, T, 1.0f, b->g, F, b->dy, D, 0.0f, b->dw2, D, err))) return rc;
    if ((rc = mb_kern_sgemm(1, 0, D, F, T, 1.0f, b->x, D, b->dh, F, 0.0f, b->dw1, F, err))) return rc;
    return mb_kern_sgemm(0, 1, T, D, F, 1.0f, b->dh, F, b->w1, F, 0.0f, b->dx, D, err);
}

double mb_kern_mlp_backward_flops(const mb_kern_mlp *cfg) { return 2 * mb_kern_mlp_flops(cfg); }

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

/* ---- the backward's float64 check ---- */

/* the slope of the activation's derivative: |gelu''| <= 2 phi(0) = 0.798,
 * |silu''| <= 0.5 */
#define ACT_CURVE 1.0

/* One hidden entry (token t, column k) in float64: the values the backward
 * uses and the bound on each one's f32 error. */
typedef struct hid {
    double a, ea;   /* GPT-2: g = gelu(h); Llama: p = silu(h) u (the next GEMM's input) */
    double dh, edh; /* the pre-activation's gradient (Llama: d h = dp u silu'(h)) */
    double du, edu; /* Llama: d u = dp silu(h) */
} hid;

static void hid_at(const mb_kern_mlp *cfg, const mb_kern_mlp_bufs *b, int64_t t, int64_t k, hid *o)
{
    const int64_t D = cfg->d_model, F = cfg->d_ff;
    const double u = ldexp(1.0, -24), gD = (double)(D + 2) * u;
    const int llama = cfg->kind == MB_KERN_MLP_LLAMA;
    const float *x = b->x + t * D, *dy = b->dy + t * D, *w = llama ? b->wg : b->w1, *w2 = llama ? b->wd : b->w2;
    double h = llama ? 0 : b->b1[k], mh = llama ? 0 : fabs(b->b1[k]), v = 0, mv = 0, dp = 0, mdp = 0;
    for (int64_t p = 0; p < D; p++) {
        h += (double)x[p] * w[p * F + k], mh += fabs((double)x[p] * w[p * F + k]);
        dp += (double)dy[p] * w2[k * D + p], mdp += fabs((double)dy[p] * w2[k * D + p]);
        if (llama) v += (double)x[p] * b->wu[p * F + k], mv += fabs((double)x[p] * b->wu[p * F + k]);
    }
    const double eh = gD * mh, edp = gD * mdp, ev = gD * mv;
    const double act = mb_op_apply_f64(llama ? MB_OP_SILU : MB_OP_GELU, h, 0);
    const double eact = ACT_SLOPE * eh + 4 * u * fabs(act);
    const double d1 = mb_op_apply_f64(llama ? MB_OP_SILU_GRAD : MB_OP_GELU_GRAD, h, 0);
    const double ed1 = ACT_CURVE * eh + 4 * u * fabs(d1);
    if (!llama) {
        o->a = act, o->ea = eact;
        o->dh = dp * d1, o->edh = fabs(d1) * edp + fabs(dp) * ed1 + u * fabs(o->dh);
        o->du = o->edu = 0;
        return;
    }
    o->a = act * v, o->ea = fabs(v) * eact + fabs(act) * ev + u * fabs(o->a);
    o->du = dp * act, o->edu = fabs(act) * edp + fabs(dp) * eact + u * fabs(o->du);
    const double da = dp * v, eda = fabs(v) * edp + fabs(dp) * ev + u * fabs(da);
    o->dh = da * d1, o->edh = fabs(d1) * eda + fabs(da) * ed1 + u * fabs(o->dh);
}

static double ratio(double got, double ref, double bound)
{
    if (!isfinite(got)) return INFINITY;
    return fabs(got - ref) / (bound + 1e-30);
}

double mb_kern_mlp_check_backward(const mb_kern_mlp *cfg, const mb_kern_mlp_bufs *b, int samples, uint64_t seed)
{
    if (!b->dy || !b->dh) return INFINITY;
    const int64_t T = cfg->tokens, D = cfg->d_model, F = cfg->d_ff;
    const double u = ldexp(1.0, -24), gT = (double)(T + 2) * u, gF = (double)(2 * F + 2) * u;
    const int llama = cfg->kind == MB_KERN_MLP_LLAMA;
    hid *row = malloc((size_t)F * sizeof *row);
    if (!row) return INFINITY;
    double worst = 0;
    uint64_t s = seed;
    for (int n = 0; n < samples; n++) {
        const int64_t t = n == 0 ? 0 : n == 1 ? T - 1 : (int64_t)(next_u64(&s) % (uint64_t)T);
        const int64_t k = n == 0 ? 0 : n == 1 ? F - 1 : (int64_t)(next_u64(&s) % (uint64_t)F);
        const int64_t p = n == 0 ? 0 : n == 1 ? D - 1 : (int64_t)(next_u64(&s) % (uint64_t)D);
        /* dx[t, p]: over the hidden row of token t */
        double ref = 0, mag = 0, prop = 0;
        for (int64_t j = 0; j < F; j++) {
            hid_at(cfg, b, t, j, &row[j]);
            const double wg = llama ? b->wg[p * F + j] : b->w1[p * F + j];
            ref += row[j].dh * wg, mag += fabs(row[j].dh * wg), prop += fabs(wg) * row[j].edh;
            if (llama) {
                const double wu = b->wu[p * F + j];
                ref += row[j].du * wu, mag += fabs(row[j].du * wu), prop += fabs(wu) * row[j].edu;
            }
        }
        worst = fmax(worst, ratio(b->dx[t * D + p], ref, gF * mag + prop + u * fabs(ref)));
        /* the weights' gradients at (p, k) and (k, p); db1[k], db2[p] */
        double w1 = 0, m1 = 0, e1 = 0, wu = 0, mu = 0, eu = 0, w2 = 0, m2 = 0, e2 = 0, b1 = 0, mb1 = 0, eb1 = 0, b2 = 0,
               mb2 = 0;
        for (int64_t r = 0; r < T; r++) {
            hid h;
            hid_at(cfg, b, r, k, &h);
            const double xr = b->x[r * D + p], dyr = b->dy[r * D + p];
            w1 += xr * h.dh, m1 += fabs(xr * h.dh), e1 += fabs(xr) * h.edh;
            wu += xr * h.du, mu += fabs(xr * h.du), eu += fabs(xr) * h.edu;
            w2 += h.a * dyr, m2 += fabs(h.a * dyr), e2 += fabs(dyr) * h.ea;
            b1 += h.dh, mb1 += fabs(h.dh), eb1 += h.edh;
            b2 += dyr, mb2 += fabs(dyr);
        }
        if (llama) {
            worst = fmax(worst, ratio(b->dwg[p * F + k], w1, gT * m1 + e1 + u * fabs(w1)));
            worst = fmax(worst, ratio(b->dwu[p * F + k], wu, gT * mu + eu + u * fabs(wu)));
            worst = fmax(worst, ratio(b->dwd[k * D + p], w2, gT * m2 + e2 + u * fabs(w2)));
        } else {
            worst = fmax(worst, ratio(b->dw1[p * F + k], w1, gT * m1 + e1 + u * fabs(w1)));
            worst = fmax(worst, ratio(b->dw2[k * D + p], w2, gT * m2 + e2 + u * fabs(w2)));
            worst = fmax(worst, ratio(b->db1[k], b1, gT * mb1 + eb1 + u * fabs(b1)));
            worst = fmax(worst, ratio(b->db2[p], b2, gT * mb2 + u * fabs(b2)));
        }
    }
    free(row);
    return worst;
}
