/* attn_cpu.c — attention on the CPU, f32, two plans:
 *   standard  PyTorch eager's kernels as model/attention.c lists them:
 *             bmm q@k^T, mul scale, add mask (causal), softmax, bmm P@v;
 *             backward bmm dO@v^T, bmm P^T@dO, softmax bwd (one pass, as on a CPU),
 *             mul dS*scale, bmm dS@k, bmm q^T@dS. Every seq x seq tensor is
 *             written whole to memory, each by its own pass.
 *   flash     FlashAttention-2 (Dao, arXiv:2307.08691, Algorithm 1 forward,
 *             Algorithm 2 backward): the forward tiled over query tiles of
 *             Br rows and key tiles of Bc columns with the online softmax
 *             (running max and sum, O rescaled when the max grows), writing
 *             O and the f32 log-sum-exp; the backward a preprocessing pass
 *             (D = rowsum(dO o O), dq zeroed) and one kernel that recomputes
 *             S and P = exp(S - LSE) a tile pair at a time.
 * Every GEMM, the tiles' included, is OpenBLAS's through mb_kern_sgemm (as
 * PyTorch's CPU flash kernel calls its BLAS on tiles); the softmax parts are
 * plain C loops with vec_ops.h's exp for x <= 0. Tiles: mb_kern_attn_tiles_for.
 * Does not time (measure/) or check results (attn_ref.c). */
#include "attn_int.h"
#include "kernels.h"
#include "vec_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

mb_kern_attn_mutant mb_kern_attn_mutant_on = MB_KERN_ATTN_MUT_NONE;

static const char *const kernel_names[MB_KERN_ATTN_N_KERNELS] = {
    "bmm q@k^T", "mul scale", "add mask", "softmax", "bmm P@v", "bmm dO@v^T", "bmm P^T@dO",
    "softmax bwd", "mul dS*scale", "bmm dS@k", "bmm q^T@dS", "flash fwd", "flash bwd prep", "flash bwd",
    "mul dP*P", "flash bwd dq"};

const char *mb_kern_attn_kernel_name(mb_kern_attn_kernel k)
{
    return k >= 0 && k < MB_KERN_ATTN_N_KERNELS ? kernel_names[k] : "?";
}

const char *mb_kern_attn_plan_name(mb_kern_attn_plan p) { return p == MB_KERN_ATTN_FLASH ? "flash" : "standard"; }

static int plan_kernels(mb_kern_attn_plan p, int causal, int backward, int gpu, mb_kern_attn_kernel *ids)
{
    int n = 0;
    if (p == MB_KERN_ATTN_FLASH) {
        ids[n++] = MB_KERN_ATTN_FLASH_FWD;
        if (backward) ids[n++] = MB_KERN_ATTN_FLASH_PREP, ids[n++] = MB_KERN_ATTN_FLASH_BWD;
        if (backward && gpu) ids[n++] = MB_KERN_ATTN_FLASH_DQ;
        return n;
    }
    ids[n++] = MB_KERN_ATTN_QK;
    ids[n++] = MB_KERN_ATTN_SCALE;
    if (causal) ids[n++] = MB_KERN_ATTN_MASK;
    ids[n++] = MB_KERN_ATTN_SOFTMAX;
    ids[n++] = MB_KERN_ATTN_PV;
    if (backward) {
        ids[n++] = MB_KERN_ATTN_DP, ids[n++] = MB_KERN_ATTN_DV;
        if (gpu) ids[n++] = MB_KERN_ATTN_DPP;
        for (int k = MB_KERN_ATTN_SMBWD; k <= MB_KERN_ATTN_DK; k++) ids[n++] = (mb_kern_attn_kernel)k;
    }
    return n;
}

int mb_kern_attn_plan_kernels(mb_kern_attn_plan p, int causal, int backward, mb_kern_attn_kernel *ids)
{
    return plan_kernels(p, causal, backward, 0, ids);
}

int mb_kern_attn_plan_kernels_gpu(mb_kern_attn_plan p, int causal, int backward, mb_kern_attn_kernel *ids)
{
    return plan_kernels(p, causal, backward, 1, ids);
}

double mb_kern_attn_exec_scale(int64_t head_dim)
{
    return mb_kern_attn_mutant_on == MB_KERN_ATTN_MUT_SCALE ? 1.0 / (double)head_dim : 1.0 / sqrt((double)head_dim);
}

/* ---- tiles ------------------------------------------------------------------ */

/* f32 elements a forward / backward thread keeps live at tiles r x c */
static int64_t fwd_ws(int64_t r, int64_t c, int64_t d) { return 2 * r * d + 2 * c * d + r * c; }
static int64_t bwd_ws(int64_t r, int64_t c, int64_t d) { return 3 * r * d + 4 * c * d + 2 * r * c; }

/* Bc <= 512: PyTorch's CPU flash kernel takes 512 key columns too
 * (FlashAttentionKernel.cpp's kv_split_size), and beyond it the tiles a head
 * has at seq 1024-2048 are too few to share among the threads. */
#define BC_MAX 512
#define BR_MIN 8

void mb_kern_attn_tiles_for(const mb_kern_attn_dims *d, int64_t core_cache_bytes, mb_kern_attn_tiles *out)
{
    const int64_t budget = core_cache_bytes / 2 / (int64_t)sizeof(float);
    int64_t fr = BR_MIN, br = BR_MIN;
    while (2 * fr <= BC_MAX / 2 && fwd_ws(2 * fr, 4 * fr, d->head_dim) <= budget) fr *= 2;
    while (2 * br <= BC_MAX / 2 && bwd_ws(2 * br, 4 * br, d->head_dim) <= budget) br *= 2;
    out->fwd_r = fr < d->seq ? fr : d->seq;
    out->fwd_c = 2 * fr < d->seq ? 2 * fr : d->seq;
    out->bwd_r = br < d->seq ? br : d->seq;
    out->bwd_c = 2 * br < d->seq ? 2 * br : d->seq;
    out->cache_bytes = core_cache_bytes;
}

/* ---- storage ---------------------------------------------------------------- */

static int64_t align64(int64_t bytes) { return (bytes + 63) / 64 * 64; }

int64_t mb_kern_attn_bytes(const mb_kern_attn_dims *d, mb_kern_attn_plan p)
{
    const double lim = 4.611686018427388e18;
    const double BH = (double)d->batch * (double)d->heads, N = (double)d->seq, D = (double)d->head_dim;
    double nd = BH * N * D * 4, nn = BH * N * N * 4, b = 4 * nd + (d->backward ? 4 * nd : 0);
    if (p == MB_KERN_ATTN_STANDARD) b += (d->backward ? 3 : 2) * nn + (d->causal ? N * N * 4 : 0);
    else b += BH * N * 4 * (d->backward ? 2 : 1);
    if (!(b < lim) || !(nn < lim)) return -1;
    return (int64_t)b + 16 * 64;
}

static float *take(mb_kern_attn *a, double elems, int *fail)
{
    int64_t bytes = align64((int64_t)elems * (int64_t)sizeof(float));
    float *p = aligned_alloc(64, (size_t)bytes);
    if (!p) *fail = 1;
    else a->bytes += bytes;
    return p;
}

/* uniform in [lo, hi] from a splitmix64 stream */
static void fill(float *x, int64_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) {
        uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = lo + (hi - lo) * (float)((double)(z >> 40) / (double)(1ull << 24));
    }
}

static void set_nan(float *x, int64_t n)
{
    if (!x) return;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] = NAN;
}

int mb_kern_attn_alloc(const mb_kern_attn_dims *d, mb_kern_attn_plan p, uint64_t seed, mb_kern_attn *a,
                       mb_err *err)
{
    memset(a, 0, sizeof *a);
    if (d->batch < 1 || d->heads < 1 || d->seq < 1 || d->head_dim < 1)
        return mb_err_set(err, MB_EINPUT, "attention sizes must be at least 1 (batch %lld, heads %lld, seq %lld, "
                          "head_dim %lld)", (long long)d->batch, (long long)d->heads, (long long)d->seq,
                          (long long)d->head_dim);
    if (mb_kern_attn_bytes(d, p) < 0)
        return mb_err_set(err, MB_EINPUT, "attention of seq %lld needs more than 2^62 bytes", (long long)d->seq);
    a->d = *d;
    a->plan = p;
    mb_kern_attn_tiles_for(d, mb_kern_core_cache_bytes(), &a->tiles);
    const double nd = (double)d->batch * (double)d->heads * (double)d->seq * (double)d->head_dim;
    const double rows = (double)d->batch * (double)d->heads * (double)d->seq;
    int fail = 0;
    a->q = take(a, nd, &fail), a->k = take(a, nd, &fail), a->v = take(a, nd, &fail), a->o = take(a, nd, &fail);
    if (d->backward) {
        a->dout = take(a, nd, &fail), a->dq = take(a, nd, &fail);
        a->dk = take(a, nd, &fail), a->dv = take(a, nd, &fail);
    }
    if (p == MB_KERN_ATTN_FLASH) {
        a->lse = take(a, rows, &fail);
        if (d->backward) a->dsum = take(a, rows, &fail);
    } else {
        for (int i = 0; i < (d->backward ? 3 : 2); i++) a->nn[i] = take(a, rows * (double)d->seq, &fail);
        if (d->causal) a->mask = take(a, (double)d->seq * (double)d->seq, &fail);
    }
    if (fail) {
        int64_t want = mb_kern_attn_bytes(d, p);
        mb_kern_attn_free(a);
        return mb_err_set(err, MB_ERUN, "out of memory: attention (%s) at seq %lld needs %.3g GB",
                          mb_kern_attn_plan_name(p), (long long)d->seq, (double)want / 1e9);
    }
    const int64_t n = (int64_t)nd, N = d->seq;
    fill(a->q, n, seed, -2, 2);
    fill(a->k, n, seed ^ 0x1111, -2, 2);
    fill(a->v, n, seed ^ 0x2222, -1, 1);
    if (a->dout) fill(a->dout, n, seed ^ 0x3333, -1, 1);
    if (a->mask)
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < N; j++) a->mask[i * N + j] = mb_kern_attn_masked(i, j) ? -INFINITY : 0.0f;
    /* buffers: forward S 0, S*scale 1, +mask 0, P the other; backward dP 2,
     * dS 2 (in place), dS*scale the free one of 0 and 1 */
    a->s_buf = d->causal ? 0 : 1;
    a->p_buf = 1 - a->s_buf;
    a->dp_buf = 2;
    a->ds_buf = a->s_buf;
    a->nt_min_bytes = mb_kern_llc_bytes();
    mb_kern_attn_poison(a);
    return MB_OK;
}

void mb_kern_attn_free(mb_kern_attn *a)
{
    float **all[] = {&a->q, &a->k, &a->v, &a->o, &a->dout, &a->dq, &a->dk, &a->dv,
                     &a->lse, &a->dsum, &a->nn[0], &a->nn[1], &a->nn[2], &a->mask};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(*all[i]), *all[i] = NULL;
    a->bytes = 0;
}

void mb_kern_attn_poison(mb_kern_attn *a)
{
    const int64_t rows = a->d.batch * a->d.heads * a->d.seq, nd = rows * a->d.head_dim;
    set_nan(a->o, nd), set_nan(a->dq, nd), set_nan(a->dk, nd), set_nan(a->dv, nd);
    set_nan(a->lse, rows), set_nan(a->dsum, rows);
    for (int i = 0; i < 3; i++) set_nan(a->nn[i], rows * a->d.seq);
}

/* ---- row helpers -------------------------------------------------------------- */

/* Below this exp(x) is not a normal f32 (the least, 2^-126, is exp(-87.34)):
 * taken as 0, a change below 1.2e-38 of a softmax's sum of at least 1. Left
 * to the exp, the masked -inf scores (clamped to -104 there) underflow into
 * denormals and microcode assists: the causal softmax's exp took 25% of the
 * standard plan at b1 h8 s2048 d64 (perf), the plan 346 ms against 201 ms
 * not causal. */
#define EXP_ZERO_BELOW (-87.0f)

/* x[i] = exp(x[i] - m) for i < n (x[i] - m <= 0 but for rounding); returns
 * the sum */
static float exp_sub_sum(float *x, int64_t n, float m)
{
    int64_t i = 0;
    float sum = 0;
#ifdef MB_VW
    const vf vm = V_SET(m), lo = V_SET(EXP_ZERO_BELOW), zero = V_SET(0.0f);
    vf acc = zero;
    for (; i + MB_VW <= n; i += MB_VW) {
        vf u = V_SUB(V_LD(x + i), vm);
        vf e = V_GT_SELECTV(lo, u, zero, MB_V_EXP_NONPOS(V_MAX(u, lo)));
        V_ST(x + i, e);
        acc = V_ADD(acc, e);
    }
    float lanes[MB_VW];
    V_ST(lanes, acc);
    for (int t = 0; t < MB_VW; t++) sum += lanes[t];
#endif
    for (; i < n; i++) sum += x[i] = x[i] - m < EXP_ZERO_BELOW ? 0.0f : expf(x[i] - m);
    return sum;
}

/* sum of x y over the row in four vector accumulators: one scalar chain (an
 * add's latency an element) made the softmax backward 56 ms against 33
 * modelled at b1 h8 s2048 d64 on one thread */
static float row_dot(const float *x, const float *y, int64_t n)
{
    float s = 0;
    int64_t i = 0;
#ifdef MB_VW
    vf s0 = V_SET(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (; i + 4 * MB_VW <= n; i += 4 * MB_VW) {
        s0 = V_ADD(V_MUL(V_LD(x + i), V_LD(y + i)), s0);
        s1 = V_ADD(V_MUL(V_LD(x + i + MB_VW), V_LD(y + i + MB_VW)), s1);
        s2 = V_ADD(V_MUL(V_LD(x + i + 2 * MB_VW), V_LD(y + i + 2 * MB_VW)), s2);
        s3 = V_ADD(V_MUL(V_LD(x + i + 3 * MB_VW), V_LD(y + i + 3 * MB_VW)), s3);
    }
    for (; i + MB_VW <= n; i += MB_VW) s0 = V_ADD(V_MUL(V_LD(x + i), V_LD(y + i)), s0);
    float lanes[MB_VW];
    V_ST(lanes, V_ADD(V_ADD(s0, s1), V_ADD(s2, s3)));
    for (int t = 0; t < MB_VW; t++) s += lanes[t];
#endif
    for (; i < n; i++) s += x[i] * y[i];
    return s;
}

/* the row's largest value (NaNs passed over, as x > m ? x : m does); four
 * vector accumulators: one scalar chain was 97% of the flash forward's own
 * time (vmaxss's latency, perf, seq 1024, one thread) */
static float row_max(const float *x, int64_t n)
{
    float m = -INFINITY;
    int64_t i = 0;
#ifdef MB_VW
    vf m0 = V_SET(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (; i + 4 * MB_VW <= n; i += 4 * MB_VW) {
        m0 = V_MAX(V_LD(x + i), m0), m1 = V_MAX(V_LD(x + i + MB_VW), m1);
        m2 = V_MAX(V_LD(x + i + 2 * MB_VW), m2), m3 = V_MAX(V_LD(x + i + 3 * MB_VW), m3);
    }
    for (; i + MB_VW <= n; i += MB_VW) m0 = V_MAX(V_LD(x + i), m0);
    float lanes[MB_VW];
    V_ST(lanes, V_MAX(V_MAX(m0, m1), V_MAX(m2, m3)));
    for (int t = 0; t < MB_VW; t++) m = lanes[t] > m ? lanes[t] : m;
#endif
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* ---- standard --------------------------------------------------------------- */

static int64_t nn_elems(const mb_kern_attn *a) { return a->d.batch * a->d.heads * a->d.seq * a->d.seq; }
static int use_nt(const mb_kern_attn *a) { return nn_elems(a) * 4 >= a->nt_min_bytes && a->d.seq % 16 == 0; }

/* one GEMM a (batch, head): the products shared among the threads, OpenBLAS
 * on one thread in each, when there are at least as many as threads (on a
 * shared host OpenBLAS's own threads wait for each other at every panel: 2
 * vCPUs, load 8, 8 products of 512 x 512 x 64 took 24 ms on two of its
 * threads against 8 ms on one); else one product at a time on all of
 * OpenBLAS's threads */
static int bmm(const mb_kern_attn *a, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
               int64_t lda, int64_t sa, const float *B, int64_t ldb, int64_t sb, float *C, int64_t ldc, int64_t sc,
               mb_err *err)
{
    const int64_t BH = a->d.batch * a->d.heads;
    if (BH >= mb_kern_threads() && mb_kern_threads() > 1) {
        int failed = 0;
        mb_kern_blas_set_threads(1);
#pragma omp parallel for schedule(dynamic) reduction(| : failed)
        for (int64_t h = 0; h < BH; h++)
            failed |= mb_kern_sgemm(ta, tb, m, n, k, alpha, A + h * sa, lda, B + h * sb, ldb, 0.0f, C + h * sc, ldc,
                                    NULL) != MB_OK;
        mb_kern_blas_set_threads(0);
        return failed ? mb_err_set(err, MB_ERUN, "a GEMM of attention failed (%s)", mb_kern_blas_desc()) : MB_OK;
    }
    mb_kern_blas_set_threads(0);
    for (int64_t h = 0; h < BH; h++) {
        int rc = mb_kern_sgemm(ta, tb, m, n, k, alpha, A + h * sa, lda, B + h * sb, ldb, 0.0f, C + h * sc, ldc, err);
        if (rc) return rc;
    }
    return MB_OK;
}

/* The elementwise N x N kernels, a row at a time: y = x f (SCALE), x + mask
 * (ADD), z (x - f) (SMBWD: the softmax backward's P (dP - rowsum(dP P))).
 * Rows go to memory with non-temporal stores when nt (the N x N tensors are
 * past the cache: each is written once, as the model counts it, with no
 * read for ownership; vector rows start 64-byte aligned as N % 16 == 0). */
typedef enum row_op { ROW_SCALE, ROW_ADD, ROW_SMBWD } row_op;

static void row_apply(row_op op, float *y, const float *x, const float *z, float f, int64_t n, int nt)
{
    int64_t i = 0;
#ifdef MB_VW
    if (nt) {
        const vf vfac = V_SET(f);
        for (; i + MB_VW <= n; i += MB_VW) {
            vf u = V_LD(x + i), r;
            switch (op) {
            case ROW_SCALE: r = V_MUL(u, vfac); break;
            case ROW_ADD: r = V_ADD(u, V_LD(z + i)); break;
            default: r = V_MUL(V_LD(z + i), V_SUB(u, vfac)); break;
            }
            V_STREAM(y + i, r);
        }
    }
#else
    (void)nt;
#endif
    switch (op) {
    case ROW_SCALE: for (; i < n; i++) y[i] = x[i] * f; break;
    case ROW_ADD: for (; i < n; i++) y[i] = x[i] + z[i]; break;
    default: for (; i < n; i++) y[i] = z[i] * (x[i] - f); break;
    }
}

/* one row op over every row of every head; the mask's row is row r % N */
static void nn_rows(const mb_kern_attn *a, row_op op, float *out, const float *x, const float *z, float f)
{
    const int64_t rows = a->d.batch * a->d.heads * a->d.seq, N = a->d.seq;
    const int nt = use_nt(a);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++)
        row_apply(op, out + r * N, x + r * N, z ? z + (op == ROW_ADD ? r % N : r) * N : NULL, f, N, nt);
}

/* PyTorch's CPU softmax: max, exp(x - max) and its sum, times 1 / sum; the
 * row stays in the core's cache between the passes */
static void std_softmax(const mb_kern_attn *a, float *out, const float *in)
{
    const int64_t rows = a->d.batch * a->d.heads * a->d.seq, N = a->d.seq;
    const int nt = use_nt(a);
#pragma omp parallel
    {
        float *tmp = aligned_alloc(64, (size_t)align64(N * 4));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            const float *x = in + r * N;
            float *y = out + r * N, *t = tmp ? tmp : y;
            /* the next row on its way while this one computes (38 -> 35 ms at b1
             * h8 s2048 d64, one thread; modelled 22, memory alone) */
            if (r + 1 < rows)
                for (int64_t j = 0; j < N; j += 16) __builtin_prefetch(x + N + j);
            memcpy(t, x, (size_t)N * 4);
            float sum = exp_sub_sum(t, N, row_max(x, N));
            row_apply(ROW_SCALE, y, t, NULL, 1.0f / sum, N, nt && tmp);
        }
        free(tmp);
    }
}

/* dS = G - P rowsum(G), G = dP o P (SoftMax.cpp's softmax_backward: grad
 * times output less output times the row's sum of that) */
static void std_softmax_bwd(const mb_kern_attn *a, float *ds, const float *dp, const float *p)
{
    const int64_t rows = a->d.batch * a->d.heads * a->d.seq, N = a->d.seq;
    const int nt = use_nt(a);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++)
        row_apply(ROW_SMBWD, ds + r * N, dp + r * N, p + r * N, row_dot(dp + r * N, p + r * N, N), N, nt);
}

static int std_kernel(mb_kern_attn *a, mb_kern_attn_kernel id, mb_err *err)
{
    const int64_t N = a->d.seq, d = a->d.head_dim, nn = N * N, nd = N * d;
    const float scale = (float)mb_kern_attn_exec_scale(d);
    float **b = a->nn;
    switch (id) {
    case MB_KERN_ATTN_QK: return bmm(a, 0, 1, N, N, d, 1.0f, a->q, d, nd, a->k, d, nd, b[0], N, nn, err);
    case MB_KERN_ATTN_SCALE: nn_rows(a, ROW_SCALE, b[1], b[0], NULL, scale); return MB_OK;
    case MB_KERN_ATTN_MASK: nn_rows(a, ROW_ADD, b[0], b[1], a->mask, 0); return MB_OK;
    case MB_KERN_ATTN_SOFTMAX: std_softmax(a, b[a->p_buf], b[a->s_buf]); return MB_OK;
    case MB_KERN_ATTN_PV: return bmm(a, 0, 0, N, d, N, 1.0f, b[a->p_buf], N, nn, a->v, d, nd, a->o, d, nd, err);
    case MB_KERN_ATTN_DP: return bmm(a, 0, 1, N, N, d, 1.0f, a->dout, d, nd, a->v, d, nd, b[a->dp_buf], N, nn, err);
    case MB_KERN_ATTN_DV: return bmm(a, 1, 0, N, d, N, 1.0f, b[a->p_buf], N, nn, a->dout, d, nd, a->dv, d, nd, err);
    case MB_KERN_ATTN_SMBWD: std_softmax_bwd(a, b[a->dp_buf], b[a->dp_buf], b[a->p_buf]); return MB_OK;
    case MB_KERN_ATTN_DSSCALE: nn_rows(a, ROW_SCALE, b[a->ds_buf], b[a->dp_buf], NULL, scale); return MB_OK;
    case MB_KERN_ATTN_DQ: return bmm(a, 0, 0, N, d, N, 1.0f, b[a->ds_buf], N, nn, a->k, d, nd, a->dq, d, nd, err);
    case MB_KERN_ATTN_DK: return bmm(a, 1, 0, N, d, N, 1.0f, b[a->ds_buf], N, nn, a->q, d, nd, a->dk, d, nd, err);
    default: return mb_err_set(err, MB_EINPUT, "kernel '%s' is not the standard plan's", mb_kern_attn_kernel_name(id));
    }
}

/* ---- flash ------------------------------------------------------------------ */

/* Forward, FlashAttention-2's Algorithm 1: a task a (batch, head, query
 * tile), OpenBLAS on one thread inside the region. O is accumulated in
 * place (its tile stays in the core's cache) and divided by the row sums at
 * the end. */
static int flash_fwd(mb_kern_attn *a, mb_err *err)
{
    const int64_t N = a->d.seq, d = a->d.head_dim, BH = a->d.batch * a->d.heads;
    const int64_t Br = a->tiles.fwd_r, Bc = a->tiles.fwd_c, Tr = (N + Br - 1) / Br;
    const float scale = (float)mb_kern_attn_exec_scale(d);
    const int causal = a->d.causal, rescale = mb_kern_attn_mutant_on != MB_KERN_ATTN_MUT_NO_RESCALE;
    int failed = 0;
    mb_kern_blas_set_threads(1);
#pragma omp parallel reduction(| : failed)
    {
        float *S = aligned_alloc(64, (size_t)align64(Br * Bc * 4));
        float *m = malloc((size_t)Br * 4), *l = malloc((size_t)Br * 4);
        failed = !S || !m || !l;
#pragma omp for schedule(dynamic)
        for (int64_t t = 0; t < BH * Tr; t++) {
            if (failed) continue;
            const int64_t bh = t / Tr, i0 = (t % Tr) * Br, r = N - i0 < Br ? N - i0 : Br;
            const float *Q = a->q + (bh * N + i0) * d, *K = a->k + bh * N * d, *V = a->v + bh * N * d;
            float *O = a->o + (bh * N + i0) * d;
            for (int64_t i = 0; i < r; i++) m[i] = -INFINITY, l[i] = 0;
            memset(O, 0, (size_t)(r * d) * 4);
            const int64_t jend = causal && i0 + r < N ? i0 + r : N;
            for (int64_t j0 = 0; j0 < jend; j0 += Bc) {
                const int64_t c = jend - j0 < Bc ? jend - j0 : Bc;
                if (mb_kern_sgemm(0, 1, r, c, d, scale, Q, d, K + j0 * d, d, 0.0f, S, c, NULL)) {
                    failed = 1;
                    break;
                }
                if (causal && j0 + c - 1 > i0)
                    for (int64_t i = 0; i < r; i++)
                        for (int64_t j = 0; j < c; j++)
                            if (mb_kern_attn_masked(i0 + i, j0 + j)) S[i * c + j] = -INFINITY;
                for (int64_t i = 0; i < r; i++) {
                    float *row = S + i * c, mx = row_max(row, c), mnew = mx > m[i] ? mx : m[i];
                    float sum = exp_sub_sum(row, c, mnew), alpha = expf(m[i] - mnew);
                    l[i] = l[i] * alpha + sum;
                    if (alpha != 1.0f && rescale)
                        for (int64_t x = 0; x < d; x++) O[i * d + x] *= alpha;
                    m[i] = mnew;
                }
                mb_kern_sgemm(0, 0, r, d, c, 1.0f, S, c, V + j0 * d, d, 1.0f, O, d, NULL);
            }
            for (int64_t i = 0; i < r; i++) {
                const float inv = 1.0f / l[i];
                for (int64_t x = 0; x < d; x++) O[i * d + x] *= inv;
                a->lse[bh * N + i0 + i] = m[i] + logf(l[i]);
            }
        }
        free(S), free(m), free(l);
    }
    mb_kern_blas_set_threads(0);
    return failed ? mb_err_set(err, MB_ERUN, "flash forward: out of memory for its tiles or no BLAS (%s)",
                               mb_kern_blas_desc())
                  : MB_OK;
}

/* D = rowsum(dO o O) (f32), dq zeroed: FlashAttention-2's preprocessing */
static void flash_prep(mb_kern_attn *a)
{
    const int64_t rows = a->d.batch * a->d.heads * a->d.seq, d = a->d.head_dim;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = a->dout + r * d, *y = a->o + r * d;
        float s = 0;
        for (int64_t c = 0; c < d; c++) s += x[c] * y[c];
        a->dsum[r] = s;
        memset(a->dq + r * d, 0, (size_t)d * 4);
    }
}

/* Backward, FlashAttention-2's Algorithm 2: a task a (batch, head), so that
 * its dq rows are one thread's (no atomics); within it the key tiles
 * outside, the query tiles inside, as the paper's. */
static int flash_bwd(mb_kern_attn *a, mb_err *err)
{
    const int64_t N = a->d.seq, d = a->d.head_dim, BH = a->d.batch * a->d.heads;
    const int64_t Br = a->tiles.bwd_r, Bc = a->tiles.bwd_c;
    const float scale = (float)mb_kern_attn_exec_scale(d);
    const int causal = a->d.causal;
    int failed = 0;
    mb_kern_blas_set_threads(1);
#pragma omp parallel reduction(| : failed)
    {
        float *P = aligned_alloc(64, (size_t)align64(Br * Bc * 4)), *dS = aligned_alloc(64, (size_t)align64(Br * Bc * 4));
        failed = !P || !dS;
#pragma omp for schedule(dynamic)
        for (int64_t bh = 0; bh < BH; bh++) {
            if (failed) continue;
            const float *Q = a->q + bh * N * d, *K = a->k + bh * N * d, *V = a->v + bh * N * d;
            const float *dO = a->dout + bh * N * d, *L = a->lse + bh * N, *D = a->dsum + bh * N;
            float *dQ = a->dq + bh * N * d, *dK = a->dk + bh * N * d, *dV = a->dv + bh * N * d;
            for (int64_t j0 = 0; j0 < N; j0 += Bc) {
                const int64_t c = N - j0 < Bc ? N - j0 : Bc;
                memset(dK + j0 * d, 0, (size_t)(c * d) * 4);
                memset(dV + j0 * d, 0, (size_t)(c * d) * 4);
                for (int64_t i0 = causal ? j0 / Br * Br : 0; i0 < N; i0 += Br) {
                    const int64_t r = N - i0 < Br ? N - i0 : Br;
                    const float *Qi = Q + i0 * d, *dOi = dO + i0 * d;
                    int rc = mb_kern_sgemm(0, 1, r, c, d, scale, Qi, d, K + j0 * d, d, 0.0f, P, c, NULL);
                    for (int64_t i = 0; i < r; i++) {
                        float *row = P + i * c;
                        exp_sub_sum(row, c, L[i0 + i]);
                        if (causal && j0 + c - 1 > i0 + i)
                            for (int64_t j = 0; j < c; j++)
                                if (mb_kern_attn_masked(i0 + i, j0 + j)) row[j] = 0;
                    }
                    rc |= mb_kern_sgemm(1, 0, c, d, r, 1.0f, P, c, dOi, d, 1.0f, dV + j0 * d, d, NULL);
                    rc |= mb_kern_sgemm(0, 1, r, c, d, 1.0f, dOi, d, V + j0 * d, d, 0.0f, dS, c, NULL);
                    for (int64_t i = 0; i < r; i++) {
                        const float Di = D[i0 + i];
                        float *ds = dS + i * c;
                        const float *p = P + i * c;
                        for (int64_t j = 0; j < c; j++) ds[j] = p[j] * (ds[j] - Di);
                    }
                    rc |= mb_kern_sgemm(0, 0, r, d, c, scale, dS, c, K + j0 * d, d, 1.0f, dQ + i0 * d, d, NULL);
                    rc |= mb_kern_sgemm(1, 0, c, d, r, scale, dS, c, Qi, d, 1.0f, dK + j0 * d, d, NULL);
                    if (rc) {
                        failed = 1;
                        break;
                    }
                }
            }
        }
        free(P), free(dS);
    }
    mb_kern_blas_set_threads(0);
    return failed ? mb_err_set(err, MB_ERUN, "flash backward: out of memory for its tiles or no BLAS (%s)",
                               mb_kern_blas_desc())
                  : MB_OK;
}

/* ---- dispatch ---------------------------------------------------------------- */

int mb_kern_attn_run_kernel(mb_kern_attn *a, mb_kern_attn_kernel id, mb_err *err)
{
    mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
    int n = mb_kern_attn_plan_kernels(a->plan, a->d.causal, a->d.backward, ids), ok = 0;
    for (int i = 0; i < n; i++) ok |= ids[i] == id;
    if (!ok)
        return mb_err_set(err, MB_EINPUT, "kernel '%s' is not of the %s plan%s", mb_kern_attn_kernel_name(id),
                          mb_kern_attn_plan_name(a->plan), a->d.backward ? "" : " (forward only)");
    if (!mb_kern_blas_load()) return mb_err_set(err, MB_ERUN, "no BLAS for attention's GEMMs: %s", mb_kern_blas_desc());
    if (a->plan == MB_KERN_ATTN_STANDARD) return std_kernel(a, id, err);
    if (id == MB_KERN_ATTN_FLASH_FWD) return flash_fwd(a, err);
    if (id == MB_KERN_ATTN_FLASH_PREP) {
        flash_prep(a);
        return MB_OK;
    }
    return flash_bwd(a, err);
}

int mb_kern_attn_run(mb_kern_attn *a, mb_err *err)
{
    mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
    int n = mb_kern_attn_plan_kernels(a->plan, a->d.causal, a->d.backward, ids);
    for (int i = 0; i < n; i++) {
        int rc = mb_kern_attn_run_kernel(a, ids[i], err);
        if (rc) return rc;
    }
    return MB_OK;
}
