/* attn_cuda.cu — attention on a GPU, f32, [batch, heads, seq, head_dim]
 * contiguous, the two plans of attn_cpu.c with a GPU's kernels
 * (mb_kern_attn_plan_kernels_gpu, model/attention.c's names and order):
 *   standard  each kernel its own launch writing its seq x seq tensor whole:
 *             bmm q@k^T, mul scale, add mask (causal), softmax, bmm P@v;
 *             backward bmm dO@v^T, bmm P^T@dO, mul dP*P, softmax bwd
 *             (dS = G - P rowsum(G), G = dP o P), mul dS*scale, bmm dS@k,
 *             bmm q^T@dS. The batched GEMMs are this file's own tiled kernel
 *             (64 x 64 tiles of C, 16 deep, on CUDA cores), not cuBLAS.
 *   flash     FlashAttention-2 (Dao, arXiv:2307.08691): the forward a block a
 *             (batch x head, query tile), K and V tiles streamed through
 *             shared memory, the online softmax, O and the f32 log-sum-exp
 *             written; the backward a prep kernel (D = rowsum(dO o O), the
 *             f32 dq accumulator zeroed), a block a (batch x head, key tile)
 *             recomputing P from the log-sum-exp, dk and dv accumulated in
 *             shared memory, dq added into the accumulator with atomicAdd,
 *             and the dq kernel (the accumulator to dq: a copy in f32).
 * Plain FP32 on CUDA cores; every tile in at most 48 KiB of shared memory
 * (mb_kern_attn_cuda_tiles). attn_int.h's mutants break these kernels as
 * they break the CPU's. Does not time beyond cudaEvents around each kernel,
 * nor check results (attn_ref.c does, on the copies brought back). */
#include "attn_int.h"
#include "kernels_cuda_int.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tiles -------------------------------------------------------------------- */

/* Shared memory a block may take without opting in; every tile below fits. */
#define SMEM_MAX_BYTES (48 * 1024)
#define THREADS 256

/* Tiles are T x T (query rows by key columns), rows padded to head_dim + 1
 * floats so that threads reading different rows of a column hit different
 * banks. Forward: Q, K, V, O tiles, S, and the rows' max, sum and rescale;
 * backward: K, V, dK, dV, Q, dO tiles, P and dS, the rows' LSE and D. */
static int64_t fwd_smem_bytes(int64_t T, int64_t d) { return (4 * T * (d + 1) + T * T + 3 * T) * 4; }
static int64_t bwd_smem_bytes(int64_t T, int64_t d) { return (6 * T * (d + 1) + 2 * T * T + 2 * T) * 4; }

extern "C" int mb_kern_attn_cuda_tiles(int64_t head_dim, int *fwd_tile, int *bwd_tile)
{
    *fwd_tile = *bwd_tile = 0;
    for (int T = 64; T >= 8; T /= 2) {
        if (!*fwd_tile && fwd_smem_bytes(T, head_dim) <= SMEM_MAX_BYTES) *fwd_tile = T;
        if (!*bwd_tile && bwd_smem_bytes(T, head_dim) <= SMEM_MAX_BYTES) *bwd_tile = T;
    }
    return *fwd_tile && *bwd_tile;
}

/* ---- helpers ------------------------------------------------------------------ */

template <bool MAX> __device__ __forceinline__ float warp_reduce(float v)
{
#pragma unroll
    for (int o = 16; o; o >>= 1) {
        const float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? fmaxf(v, u) : v + u;
    }
    return v;
}

/* the max or sum of v over the block (THREADS threads); every thread gets it */
template <bool MAX> __device__ float block_reduce(float v)
{
    __shared__ float part[THREADS / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_reduce<MAX>(v);
    if (lane == 0) part[warp] = v;
    __syncthreads();
    v = lane < THREADS / 32 ? part[lane] : (MAX ? -INFINITY : 0.0f);
    v = warp_reduce<MAX>(v);
    __syncthreads(); /* part is free for the next call */
    return v;
}

/* key j is masked from query row i: causal and j > i + shift (shift 1: the mask mutant) */
__device__ __forceinline__ bool masked(int64_t i, int64_t j, int causal, int shift)
{
    return causal && j > i + shift;
}

/* ---- standard: batched GEMM --------------------------------------------------- */

#define GT 64 /* rows and columns of C a block computes */
#define GK 16 /* depth of a step */

/* C[b] = op(A[b]) op(B[b]) for b < batch, op(X) = X or X^T (TA, TB), row
 * major; A[b] at A + b sa. A block a 64 x 64 tile of C (grid: tiles x
 * batch, flattened), each thread 4 x 4 of it, 16 deep a step through shared
 * memory. */
template <int TA, int TB>
__global__ void __launch_bounds__(THREADS) bmm_kernel(int64_t m, int64_t n, int64_t k, const float *__restrict__ A,
                                                      int64_t lda, int64_t sa, const float *__restrict__ B,
                                                      int64_t ldb, int64_t sb, float *__restrict__ C, int64_t ldc,
                                                      int64_t sc)
{
    __shared__ float As[GK][GT + 4], Bs[GK][GT + 4];
    const int64_t tm = (m + GT - 1) / GT, tn = (n + GT - 1) / GT, blk = blockIdx.x;
    const int64_t b = blk / (tm * tn), i0 = blk / tn % tm * GT, j0 = blk % tn * GT;
    A += b * sa, B += b * sb, C += b * sc;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[4][4] = {};
    for (int64_t p0 = 0; p0 < k; p0 += GK) {
        for (int e = threadIdx.x; e < GK * GT; e += THREADS) {
            /* consecutive threads read consecutive addresses of A and B */
            const int ap = TA ? e / GT : e % GK, ai = TA ? e % GT : e / GK;
            const int64_t gi = i0 + ai, gp = p0 + ap;
            As[ap][ai] = gi < m && gp < k ? (TA ? A[gp * lda + gi] : A[gi * lda + gp]) : 0.0f;
            const int bp = TB ? e % GK : e / GT, bj = TB ? e / GK : e % GT;
            const int64_t gj = j0 + bj, gq = p0 + bp;
            Bs[bp][bj] = gj < n && gq < k ? (TB ? B[gj * ldb + gq] : B[gq * ldb + gj]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < GK; p++) {
            float a[4], c[4];
#pragma unroll
            for (int r = 0; r < 4; r++) a[r] = As[p][ty + 16 * r], c[r] = Bs[p][tx + 16 * r];
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int s = 0; s < 4; s++) acc[r][s] += a[r] * c[s];
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; r++)
#pragma unroll
        for (int s = 0; s < 4; s++) {
            const int64_t i = i0 + ty + 16 * r, j = j0 + tx + 16 * s;
            if (i < m && j < n) C[i * ldc + j] = acc[r][s];
        }
}

/* ---- standard: the seq x seq elementwise and row kernels ---------------------- */

enum { EW_SCALE, EW_MASK, EW_MUL };

/* y = x f (EW_SCALE), x + z[i % zn] (EW_MASK: the [seq, seq] mask broadcast
 * over the heads), x z (EW_MUL) over n elements */
template <int OP>
__global__ void __launch_bounds__(THREADS) ew_kernel(float *__restrict__ y, const float *__restrict__ x,
                                                     const float *__restrict__ z, float f, int64_t zn, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n; i += (int64_t)gridDim.x * THREADS)
        y[i] = OP == EW_SCALE ? x[i] * f : OP == EW_MASK ? x[i] + z[i % zn] : x[i] * z[i];
}

/* y = softmax(x) by rows of N, a block a row: the max, the sum of exp and the
 * write each read x (the second and third from L1 or L2) */
__global__ void __launch_bounds__(THREADS) softmax_kernel(float *__restrict__ y, const float *__restrict__ x,
                                                          int64_t N)
{
    x += blockIdx.x * N, y += blockIdx.x * N;
    float m = -INFINITY, s = 0;
    for (int64_t j = threadIdx.x; j < N; j += THREADS) m = fmaxf(m, x[j]);
    m = block_reduce<true>(m);
    for (int64_t j = threadIdx.x; j < N; j += THREADS) s += expf(x[j] - m);
    const float inv = 1.0f / block_reduce<false>(s);
    for (int64_t j = threadIdx.x; j < N; j += THREADS) y[j] = expf(x[j] - m) * inv;
}

/* ds = g - p rowsum(g) by rows of N (PyTorch's softmax backward on a GPU,
 * given g = dP o P), a block a row */
__global__ void __launch_bounds__(THREADS) softmax_bwd_kernel(float *__restrict__ ds, const float *__restrict__ g,
                                                              const float *__restrict__ p, int64_t N)
{
    const int64_t off = blockIdx.x * N;
    float s = 0;
    for (int64_t j = threadIdx.x; j < N; j += THREADS) s += g[off + j];
    s = block_reduce<false>(s);
    for (int64_t j = threadIdx.x; j < N; j += THREADS) ds[off + j] = g[off + j] - p[off + j] * s;
}

/* ---- flash -------------------------------------------------------------------- */

/* a tile of rows r0.. of an [N, d] head into shared memory (row stride
 * d + 1), zeros past N */
__device__ __forceinline__ void load_tile(float *__restrict__ dst, const float *__restrict__ src, int64_t r0,
                                          int T, int64_t N, int d)
{
    for (int e = threadIdx.x; e < T * d; e += THREADS) {
        const int r = e / d, c = e % d;
        dst[r * (d + 1) + c] = r0 + r < N ? src[(r0 + r) * d + c] : 0.0f;
    }
}

__device__ __forceinline__ float dot_rows(const float *x, const float *y, int d)
{
    float s = 0;
    for (int c = 0; c < d; c++) s += x[c] * y[c];
    return s;
}

/* Forward: a block a (batch x head, query tile of T rows), grid flattened
 * with the query tiles fastest. For each key tile up to the diagonal (all
 * of them not causal): S = scale Q K^T masked, then a warp a row takes the
 * tile's max, P = exp(S - m_new), the row sum l = l alpha + sum P with
 * alpha = exp(m_old - m_new), and O = O alpha + P V (alpha 1: the
 * no-rescale mutant). At the end o = O / l, lse = m + log l. */
__global__ void __launch_bounds__(THREADS) flash_fwd_kernel(const float *__restrict__ q, const float *__restrict__ k,
                                                            const float *__restrict__ v, float *__restrict__ o,
                                                            float *__restrict__ lse, int64_t N, int d, int T,
                                                            float scale, int causal, int shift, int rescale)
{
    extern __shared__ float sm[];
    const int ld = d + 1;
    float *Qs = sm, *Ks = Qs + T * ld, *Vs = Ks + T * ld, *Os = Vs + T * ld, *S = Os + T * ld;
    float *mrow = S + T * T, *lrow = mrow + T, *arow = lrow + T;
    const int64_t tiles = (N + T - 1) / T, bh = blockIdx.x / tiles, i0 = blockIdx.x % tiles * T;
    q += bh * N * d, k += bh * N * d, v += bh * N * d, o += bh * N * d, lse += bh * N;
    const int rows = (int)min((int64_t)T, N - i0), lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    load_tile(Qs, q, i0, T, N, d);
    for (int e = threadIdx.x; e < T * ld; e += THREADS) Os[e] = 0;
    if (threadIdx.x < T) mrow[threadIdx.x] = -INFINITY, lrow[threadIdx.x] = 0;
    const int64_t jend = causal ? min(N, i0 + rows + shift) : N;
    for (int64_t j0 = 0; j0 < jend; j0 += T) {
        __syncthreads(); /* the last tile's K, V and P are used */
        load_tile(Ks, k, j0, T, N, d);
        load_tile(Vs, v, j0, T, N, d);
        __syncthreads();
        for (int e = threadIdx.x; e < T * T; e += THREADS) {
            const int i = e / T, j = e % T;
            const int64_t gi = i0 + i, gj = j0 + j;
            S[e] = gi < N && gj < N && !masked(gi, gj, causal, shift) ? dot_rows(Qs + i * ld, Ks + j * ld, d) * scale
                                                                      : -INFINITY;
        }
        __syncthreads();
        for (int i = warp; i < T; i += THREADS / 32) {
            float *row = S + i * T, mx = -INFINITY, sum = 0;
            for (int j = lane; j < T; j += 32) mx = fmaxf(mx, row[j]);
            const float mold = mrow[i], mnew = fmaxf(mold, warp_reduce<true>(mx));
            for (int j = lane; j < T; j += 32) {
                const float p = mnew == -INFINITY ? 0.0f : expf(row[j] - mnew); /* a padding row: all -inf */
                row[j] = p, sum += p;
            }
            sum = warp_reduce<false>(sum);
            if (lane == 0) {
                const float alpha = mnew == -INFINITY ? 1.0f : expf(mold - mnew);
                lrow[i] = lrow[i] * alpha + sum;
                mrow[i] = mnew;
                arow[i] = rescale ? alpha : 1.0f;
            }
        }
        __syncthreads();
        for (int e = threadIdx.x; e < T * d; e += THREADS) {
            const int i = e / d, c = e % d;
            float acc = 0;
            for (int j = 0; j < T; j++) acc += S[i * T + j] * Vs[j * ld + c];
            Os[i * ld + c] = Os[i * ld + c] * arow[i] + acc;
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < rows * d; e += THREADS) {
        const int i = e / d, c = e % d;
        o[(i0 + i) * d + c] = Os[i * ld + c] / lrow[i];
    }
    if (threadIdx.x < rows) lse[i0 + threadIdx.x] = mrow[threadIdx.x] + logf(lrow[threadIdx.x]);
}

/* Backward prep: D = rowsum(dO o O) a warp a row; the row's dq accumulator zeroed */
__global__ void __launch_bounds__(THREADS) flash_prep_kernel(const float *__restrict__ dout,
                                                             const float *__restrict__ o, float *__restrict__ dsum,
                                                             float *__restrict__ dq_acc, int64_t rows, int d)
{
    const int64_t r = blockIdx.x * (int64_t)(THREADS / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    float s = 0;
    for (int c = lane; c < d; c += 32) s += dout[r * d + c] * o[r * d + c], dq_acc[r * d + c] = 0;
    s = warp_reduce<false>(s);
    if (lane == 0) dsum[r] = s;
}

/* Backward: a block a (batch x head, key tile of T columns), key tiles
 * fastest. K and V stay in shared memory; for each query tile from the
 * diagonal (all of them not causal): P = exp(scale Q K^T - LSE) masked,
 * dS = P (dO V^T - D); dV += P^T dO and dK += scale dS^T Q in shared
 * memory; dq += scale dS K with atomicAdd into the f32 accumulator. */
__global__ void __launch_bounds__(THREADS) flash_bwd_kernel(
    const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v,
    const float *__restrict__ dout, const float *__restrict__ lse, const float *__restrict__ dsum,
    float *__restrict__ dq_acc, float *__restrict__ dk, float *__restrict__ dv, int64_t N, int d, int T, float scale,
    int causal, int shift)
{
    extern __shared__ float sm[];
    const int ld = d + 1;
    float *Ks = sm, *Vs = Ks + T * ld, *dKs = Vs + T * ld, *dVs = dKs + T * ld, *Qs = dVs + T * ld,
          *dOs = Qs + T * ld, *P = dOs + T * ld, *dS = P + T * T, *L = dS + T * T, *D = L + T;
    const int64_t tiles = (N + T - 1) / T, bh = blockIdx.x / tiles, j0 = blockIdx.x % tiles * T;
    const int64_t off = bh * N * d;
    q += off, k += off, v += off, dout += off, dq_acc += off, dk += off, dv += off, lse += bh * N, dsum += bh * N;
    load_tile(Ks, k, j0, T, N, d);
    load_tile(Vs, v, j0, T, N, d);
    for (int e = threadIdx.x; e < T * ld; e += THREADS) dKs[e] = dVs[e] = 0;
    /* the first row that sees key j0: j0 <= i + shift */
    const int64_t istart = causal ? max((int64_t)0, j0 - shift) / T * T : 0;
    for (int64_t i0 = istart; i0 < N; i0 += T) {
        __syncthreads(); /* the last tile's Q, dO, P and dS are used */
        load_tile(Qs, q, i0, T, N, d);
        load_tile(dOs, dout, i0, T, N, d);
        if (threadIdx.x < T) {
            const int64_t gi = i0 + threadIdx.x;
            L[threadIdx.x] = gi < N ? lse[gi] : 0.0f;
            D[threadIdx.x] = gi < N ? dsum[gi] : 0.0f;
        }
        __syncthreads();
        for (int e = threadIdx.x; e < T * T; e += THREADS) {
            const int i = e / T, j = e % T;
            const int64_t gi = i0 + i, gj = j0 + j;
            float p = 0, ds = 0;
            if (gi < N && gj < N && !masked(gi, gj, causal, shift)) {
                p = expf(dot_rows(Qs + i * ld, Ks + j * ld, d) * scale - L[i]);
                ds = p * (dot_rows(dOs + i * ld, Vs + j * ld, d) - D[i]);
            }
            P[e] = p, dS[e] = ds;
        }
        __syncthreads();
        for (int e = threadIdx.x; e < T * d; e += THREADS) {
            const int j = e / d, c = e % d;
            float av = 0, ak = 0;
            for (int i = 0; i < T; i++) av += P[i * T + j] * dOs[i * ld + c], ak += dS[i * T + j] * Qs[i * ld + c];
            dVs[j * ld + c] += av;
            dKs[j * ld + c] += scale * ak;
        }
        for (int e = threadIdx.x; e < T * d; e += THREADS) {
            const int i = e / d, c = e % d;
            if (i0 + i >= N) continue;
            float aq = 0;
            for (int j = 0; j < T; j++) aq += dS[i * T + j] * Ks[j * ld + c];
            atomicAdd(dq_acc + (i0 + i) * d + c, scale * aq);
        }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < T * d; e += THREADS) {
        const int j = e / d, c = e % d;
        if (j0 + j < N) dk[(j0 + j) * d + c] = dKs[j * ld + c], dv[(j0 + j) * d + c] = dVs[j * ld + c];
    }
}

/* Backward dq: dq from the f32 accumulator (FlashAttention-2 converts it to
 * the inputs' dtype; in f32 a copy) */
__global__ void __launch_bounds__(THREADS) flash_dq_kernel(float *__restrict__ dq, const float *__restrict__ acc,
                                                           int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n; i += (int64_t)gridDim.x * THREADS)
        dq[i] = acc[i];
}

/* ---- host --------------------------------------------------------------------- */

struct mb_kern_attn_cuda {
    mb_kern_attn_dims d;
    mb_kern_attn_plan plan;
    float *q, *k, *v, *o, *dout, *dq, *dk, *dv; /* dout.. with backward */
    float *lse, *dsum, *dq_acc;                 /* flash */
    float *nn[3], *mask;                        /* standard, as mb_kern_attn's */
    int s_buf, p_buf, fwd_tile, bwd_tile, grid_max;
    int64_t bytes;
};

extern "C" void mb_kern_attn_cuda_free(mb_kern_attn_cuda *g)
{
    if (!g) return;
    float *all[] = {g->q, g->k, g->v, g->o, g->dout, g->dq, g->dk, g->dv, g->lse,
                    g->dsum, g->dq_acc, g->nn[0], g->nn[1], g->nn[2], g->mask};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) (void)cudaFree(all[i]);
    free(g);
}

/* cudaMalloc'd f32 elements at *p (none when elems is 0); poisoned with
 * 0xff bytes (a NaN) so that an element no kernel writes fails the check */
static int take(mb_kern_attn_cuda *g, float **p, int64_t elems, mb_err *err)
{
    if (elems <= 0) return MB_OK;
    const int64_t bytes = elems * 4;
    cudaError_t e = cudaMalloc((void **)p, (size_t)bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return mb_err_set(err, MB_ERUN, "out of GPU memory: attention (%s) at seq %lld took %.3g GB, wants %.3g more",
                          mb_kern_attn_plan_name(g->plan), (long long)g->d.seq, (double)g->bytes / 1e9,
                          (double)bytes / 1e9);
    }
    CUDA_TRY(e);
    g->bytes += bytes;
    return CUDA_CHECK(cudaMemset(*p, 0xff, (size_t)bytes));
}

static int upload(float *dst, const float *src, int64_t elems, mb_err *err)
{
    return dst && src ? CUDA_CHECK(cudaMemcpy(dst, src, (size_t)elems * 4, cudaMemcpyHostToDevice)) : MB_OK;
}

extern "C" int mb_kern_attn_cuda_new(const mb_kern_attn *a, mb_kern_attn_cuda **out, mb_err *err)
{
    *out = NULL;
    char why[256];
    if (mb_kern_cuda_device_count(why, sizeof why) < 1)
        return mb_err_set(err, MB_ERUN, "attention on a GPU: %s", why);
    const mb_kern_attn_dims *d = &a->d;
    int ft, bt;
    mb_kern_attn_cuda_tiles(d->head_dim, &ft, &bt);
    if (a->plan == MB_KERN_ATTN_FLASH && (!ft || (d->backward && !bt)))
        return mb_err_set(err, MB_EINPUT, "flash attention on a GPU: head_dim %lld leaves no tile of 8 rows within "
                          "48 KiB of shared memory", (long long)d->head_dim);
    if (d->seq > INT32_MAX || d->head_dim > INT32_MAX)
        return mb_err_set(err, MB_EINPUT, "attention on a GPU: seq %lld or head_dim %lld beyond 2^31",
                          (long long)d->seq, (long long)d->head_dim);
    mb_kern_attn_cuda *g = (mb_kern_attn_cuda *)calloc(1, sizeof *g);
    if (!g) return mb_err_set(err, MB_ERUN, "out of memory");
    g->d = *d, g->plan = a->plan, g->fwd_tile = ft, g->bwd_tile = bt;
    g->s_buf = a->s_buf, g->p_buf = a->p_buf;
    int dev = 0, sms = 0;
    int rc = CUDA_CHECK(cudaGetDevice(&dev));
    if (!rc) rc = CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    g->grid_max = 8 * (sms > 0 ? sms : 1); /* grid-stride kernels: 8 blocks of 256 an SM */
    const int64_t rows = d->batch * d->heads * d->seq, nd = rows * d->head_dim, bwd = d->backward;
    const int flash = a->plan == MB_KERN_ATTN_FLASH;
    if (!rc) rc = take(g, &g->q, nd, err);
    if (!rc) rc = take(g, &g->k, nd, err);
    if (!rc) rc = take(g, &g->v, nd, err);
    if (!rc) rc = take(g, &g->o, nd, err);
    if (!rc) rc = take(g, &g->dout, bwd ? nd : 0, err);
    if (!rc) rc = take(g, &g->dq, bwd ? nd : 0, err);
    if (!rc) rc = take(g, &g->dk, bwd ? nd : 0, err);
    if (!rc) rc = take(g, &g->dv, bwd ? nd : 0, err);
    if (!rc) rc = take(g, &g->lse, flash ? rows : 0, err);
    if (!rc) rc = take(g, &g->dsum, flash && bwd ? rows : 0, err);
    if (!rc) rc = take(g, &g->dq_acc, flash && bwd ? nd : 0, err);
    for (int i = 0; i < 3 && !rc; i++) rc = take(g, &g->nn[i], !flash && i < 2 + bwd ? rows * d->seq : 0, err);
    if (!rc) rc = take(g, &g->mask, !flash && d->causal ? d->seq * d->seq : 0, err);
    if (!rc) rc = upload(g->q, a->q, nd, err);
    if (!rc) rc = upload(g->k, a->k, nd, err);
    if (!rc) rc = upload(g->v, a->v, nd, err);
    if (!rc) rc = upload(g->dout, a->dout, nd, err);
    if (!rc) rc = upload(g->mask, a->mask, d->seq * d->seq, err);
    if (rc) {
        mb_kern_attn_cuda_free(g);
        return rc;
    }
    *out = g;
    return MB_OK;
}

extern "C" int64_t mb_kern_attn_cuda_bytes(const mb_kern_attn_cuda *g) { return g->bytes; }

template <int TA, int TB>
static cudaError_t bmm(const mb_kern_attn_cuda *g, int64_t m, int64_t n, int64_t k, const float *A, int64_t lda,
                       int64_t sa, const float *B, int64_t ldb, int64_t sb, float *C, int64_t ldc, int64_t sc,
                       cudaStream_t s)
{
    const int64_t blocks = (m + GT - 1) / GT * ((n + GT - 1) / GT) * g->d.batch * g->d.heads;
    if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
    bmm_kernel<TA, TB><<<(unsigned)blocks, THREADS, 0, s>>>(m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc);
    return cudaGetLastError();
}

template <int OP>
static cudaError_t ew(const mb_kern_attn_cuda *g, float *y, const float *x, const float *z, float f, cudaStream_t s)
{
    const int64_t n = g->d.batch * g->d.heads * g->d.seq * g->d.seq, want = (n + THREADS - 1) / THREADS;
    ew_kernel<OP><<<(unsigned)(want < g->grid_max ? want : g->grid_max), THREADS, 0, s>>>(y, x, z, f,
                                                                                        g->d.seq * g->d.seq, n);
    return cudaGetLastError();
}

/* the kernel's launch; cudaErrorInvalidConfiguration for a grid too large */
static cudaError_t launch(mb_kern_attn_cuda *g, mb_kern_attn_kernel id, cudaStream_t s)
{
    const int64_t N = g->d.seq, d = g->d.head_dim, nn = N * N, nd = N * d, BH = g->d.batch * g->d.heads;
    const int64_t rows = BH * N;
    const float scale = (float)mb_kern_attn_exec_scale(d);
    const int shift = mb_kern_attn_mutant_on == MB_KERN_ATTN_MUT_MASK ? 1 : 0;
    const int rescale = mb_kern_attn_mutant_on != MB_KERN_ATTN_MUT_NO_RESCALE;
    float **b = g->nn, *S = b[g->s_buf], *P = b[g->p_buf];
    if (rows > INT32_MAX) return cudaErrorInvalidConfiguration;
    switch (id) {
    case MB_KERN_ATTN_QK: return bmm<0, 1>(g, N, N, d, g->q, d, nd, g->k, d, nd, b[0], N, nn, s);
    case MB_KERN_ATTN_SCALE: return ew<EW_SCALE>(g, b[1], b[0], NULL, scale, s);
    case MB_KERN_ATTN_MASK: return ew<EW_MASK>(g, b[0], b[1], g->mask, 0, s);
    case MB_KERN_ATTN_SOFTMAX:
        softmax_kernel<<<(unsigned)rows, THREADS, 0, s>>>(P, S, N);
        return cudaGetLastError();
    case MB_KERN_ATTN_PV: return bmm<0, 0>(g, N, d, N, P, N, nn, g->v, d, nd, g->o, d, nd, s);
    case MB_KERN_ATTN_DP: return bmm<0, 1>(g, N, N, d, g->dout, d, nd, g->v, d, nd, b[2], N, nn, s);
    case MB_KERN_ATTN_DV: return bmm<1, 0>(g, N, d, N, P, N, nn, g->dout, d, nd, g->dv, d, nd, s);
    case MB_KERN_ATTN_DPP: return ew<EW_MUL>(g, S, b[2], P, 0, s); /* G = dP o P into S's buffer */
    case MB_KERN_ATTN_SMBWD:
        softmax_bwd_kernel<<<(unsigned)rows, THREADS, 0, s>>>(b[2], S, P, N); /* dS over dP */
        return cudaGetLastError();
    case MB_KERN_ATTN_DSSCALE: return ew<EW_SCALE>(g, S, b[2], NULL, scale, s);
    case MB_KERN_ATTN_DQ: return bmm<0, 0>(g, N, d, N, S, N, nn, g->k, d, nd, g->dq, d, nd, s);
    case MB_KERN_ATTN_DK: return bmm<1, 0>(g, N, d, N, S, N, nn, g->q, d, nd, g->dk, d, nd, s);
    case MB_KERN_ATTN_FLASH_FWD: {
        const int T = g->fwd_tile;
        const int64_t blocks = (N + T - 1) / T * BH;
        if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
        flash_fwd_kernel<<<(unsigned)blocks, THREADS, (size_t)fwd_smem_bytes(T, d), s>>>(
            g->q, g->k, g->v, g->o, g->lse, N, (int)d, T, scale, g->d.causal, shift, rescale);
        return cudaGetLastError();
    }
    case MB_KERN_ATTN_FLASH_PREP:
        flash_prep_kernel<<<(unsigned)((rows + THREADS / 32 - 1) / (THREADS / 32)), THREADS, 0, s>>>(
            g->dout, g->o, g->dsum, g->dq_acc, rows, (int)d);
        return cudaGetLastError();
    case MB_KERN_ATTN_FLASH_BWD: {
        const int T = g->bwd_tile;
        const int64_t blocks = (N + T - 1) / T * BH;
        if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
        flash_bwd_kernel<<<(unsigned)blocks, THREADS, (size_t)bwd_smem_bytes(T, d), s>>>(
            g->q, g->k, g->v, g->dout, g->lse, g->dsum, g->dq_acc, g->dk, g->dv, N, (int)d, T, scale, g->d.causal,
            shift);
        return cudaGetLastError();
    }
    case MB_KERN_ATTN_FLASH_DQ: {
        const int64_t want = (rows * d + THREADS - 1) / THREADS;
        flash_dq_kernel<<<(unsigned)(want < g->grid_max ? want : g->grid_max), THREADS, 0, s>>>(g->dq, g->dq_acc,
                                                                                             rows * d);
        return cudaGetLastError();
    }
    default: return cudaErrorInvalidValue;
    }
}

extern "C" int mb_kern_attn_cuda_launch(mb_kern_attn_cuda *g, mb_kern_attn_kernel id, void *stream, mb_err *err)
{
    mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
    int n = mb_kern_attn_plan_kernels_gpu(g->plan, g->d.causal, g->d.backward, ids), ok = 0;
    for (int i = 0; i < n; i++) ok |= ids[i] == id;
    if (!ok)
        return mb_err_set(err, MB_EINPUT, "kernel '%s' is not of the %s plan on a GPU%s",
                          mb_kern_attn_kernel_name(id), mb_kern_attn_plan_name(g->plan),
                          g->d.backward ? "" : " (forward only)");
    cudaError_t e = launch(g, id, (cudaStream_t)stream);
    if (e == cudaSuccess) return MB_OK;
    (void)cudaGetLastError();
    return mb_err_set(err, MB_ERUN, "attention kernel '%s' (%s, batch %lld heads %lld seq %lld head_dim %lld): %s (%s)",
                      mb_kern_attn_kernel_name(id), mb_kern_attn_plan_name(g->plan), (long long)g->d.batch,
                      (long long)g->d.heads, (long long)g->d.seq, (long long)g->d.head_dim, cudaGetErrorName(e),
                      cudaGetErrorString(e));
}

extern "C" int mb_kern_attn_cuda_run(mb_kern_attn_cuda *g, void *stream, mb_err *err)
{
    mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
    int n = mb_kern_attn_plan_kernels_gpu(g->plan, g->d.causal, g->d.backward, ids);
    for (int i = 0; i < n; i++) {
        int rc = mb_kern_attn_cuda_launch(g, ids[i], stream, err);
        if (rc) return rc;
    }
    return MB_OK;
}

extern "C" int mb_kern_attn_cuda_time(mb_kern_attn_cuda *g, double *kernel_s, mb_err *err)
{
    mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
    const int n = mb_kern_attn_plan_kernels_gpu(g->plan, g->d.causal, g->d.backward, ids);
    cudaEvent_t ev[MB_KERN_ATTN_N_KERNELS + 1];
    int made = 0, rc = MB_OK;
    while (made <= n && !rc)
        if (!(rc = CUDA_CHECK(cudaEventCreate(&ev[made])))) made++;
    if (!rc) rc = CUDA_CHECK(cudaEventRecord(ev[0], 0));
    for (int i = 0; i < n && !rc; i++) {
        rc = mb_kern_attn_cuda_launch(g, ids[i], NULL, err);
        if (!rc) rc = CUDA_CHECK(cudaEventRecord(ev[i + 1], 0));
    }
    if (!rc) rc = CUDA_CHECK(cudaEventSynchronize(ev[n]));
    for (int i = 0; i < n && !rc; i++) {
        float ms = 0;
        rc = CUDA_CHECK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
        kernel_s[i] = ms * 1e-3;
    }
    for (int i = 0; i < made; i++) (void)cudaEventDestroy(ev[i]);
    return rc;
}

static int download(float *dst, const float *src, int64_t elems, mb_err *err)
{
    return dst && src ? CUDA_CHECK(cudaMemcpy(dst, src, (size_t)elems * 4, cudaMemcpyDeviceToHost)) : MB_OK;
}

extern "C" int mb_kern_attn_cuda_download(const mb_kern_attn_cuda *g, mb_kern_attn *a, mb_err *err)
{
    if (a->plan != g->plan || memcmp(&a->d, &g->d, sizeof a->d))
        return mb_err_set(err, MB_EINPUT, "attention download: the host run is not the one uploaded");
    const int64_t rows = g->d.batch * g->d.heads * g->d.seq, nd = rows * g->d.head_dim;
    CUDA_TRY(cudaDeviceSynchronize());
    int rc = download(a->o, g->o, nd, err);
    if (!rc) rc = download(a->lse, g->lse, rows, err);
    if (!rc) rc = download(a->dsum, g->dsum, rows, err);
    if (!rc) rc = download(a->dq, g->dq, nd, err);
    if (!rc) rc = download(a->dk, g->dk, nd, err);
    if (!rc) rc = download(a->dv, g->dv, nd, err);
    return rc;
}
