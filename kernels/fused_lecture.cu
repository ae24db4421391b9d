/* fused_lecture.cu — hand-written fused kernels for the lecture's variants.
 *   copy_kernel                    y = x, raw 16-byte moves (any dtype)
 *   sin2_plus_cos2                 y = sin(x)**2 + cos(x)**2, one pass (2n)
 *   gelu_tanh                      y = 0.5x(1 + tanh(0.7978845608(x + 0.044715x**3))) (2n)
 *   sigmoid3_store_fwd             s1, s2, s3 = sigmoid chain of x, all written (4n)
 *   sigmoid3_store_bwd             gx from g, s1, s2, s3 (5n)
 *   sigmoid3_recompute_fwd         y = sigmoid(sigmoid(sigmoid(x))) (2n)
 *   sigmoid3_recompute_bwd         gx from g, x, recomputing s1, s2, s3 (3n)
 * f32 / bf16 / f16 storage; 16-byte loads and stores; grid-stride loop over
 * vectors plus a scalar tail. The math is the model's node list written out
 * op by op with mb_ops.h (same order, so results match the evaluator's bit
 * for bit). CPU reference: mb_kern_reference_elem (reference.c).
 * It does not decide when these run: cuda_plan.cu matches plan kernels to
 * them by their node lists. */
#include "kernels_cuda_int.cuh"

#include <stdio.h>

#define F(op, a, b) mb_op_apply_f32(op, (a), (b))

/* ---- per-element math: one functor per kernel ------------------------------ */

struct sin2_plus_cos2_f {
    enum { NIN = 1, NOUT = 1 };
    __device__ static void apply(const float *in, float *out)
    {
        const float x = in[0];
        const float a = F(MB_OP_POW, F(MB_OP_SIN, x, 0.0f), 2.0f);
        const float b = F(MB_OP_POW, F(MB_OP_COS, x, 0.0f), 2.0f);
        out[0] = F(MB_OP_ADD, a, b);
    }
};

struct gelu_tanh_f {
    enum { NIN = 1, NOUT = 1 };
    __device__ static void apply(const float *in, float *out)
    {
        const float x = in[0];
        const float h = F(MB_OP_MUL, 0.5f, x);
        const float c = F(MB_OP_MUL, 0.044715f, F(MB_OP_POW, x, 3.0f));
        const float u = F(MB_OP_MUL, 0.7978845608f, F(MB_OP_ADD, x, c));
        out[0] = F(MB_OP_MUL, h, F(MB_OP_ADD, 1.0f, F(MB_OP_TANH, u, 0.0f)));
    }
};

/* d sigmoid from its output s, as autodiff writes it: g * (s * (1 - s)). */
__device__ __forceinline__ float sigmoid_bwd(float g, float s)
{
    return F(MB_OP_MUL, g, F(MB_OP_MUL, s, F(MB_OP_SUB, 1.0f, s)));
}

struct sigmoid3_store_fwd_f { /* in: x; out: s1, s2, s3 */
    enum { NIN = 1, NOUT = 3 };
    __device__ static void apply(const float *in, float *out)
    {
        out[0] = F(MB_OP_SIGMOID, in[0], 0.0f);
        out[1] = F(MB_OP_SIGMOID, out[0], 0.0f);
        out[2] = F(MB_OP_SIGMOID, out[1], 0.0f);
    }
};

struct sigmoid3_store_bwd_f { /* in: g, s1, s2, s3; out: gx */
    enum { NIN = 4, NOUT = 1 };
    __device__ static void apply(const float *in, float *out)
    {
        const float g3 = sigmoid_bwd(in[0], in[3]);
        const float g2 = sigmoid_bwd(g3, in[2]);
        out[0] = sigmoid_bwd(g2, in[1]);
    }
};

struct sigmoid3_recompute_fwd_f { /* in: x; out: y */
    enum { NIN = 1, NOUT = 1 };
    __device__ static void apply(const float *in, float *out)
    {
        out[0] = F(MB_OP_SIGMOID, F(MB_OP_SIGMOID, F(MB_OP_SIGMOID, in[0], 0.0f), 0.0f), 0.0f);
    }
};

struct sigmoid3_recompute_bwd_f { /* in: g, x; out: gx */
    enum { NIN = 2, NOUT = 1 };
    __device__ static void apply(const float *in, float *out)
    {
        const float s1 = F(MB_OP_SIGMOID, in[1], 0.0f);
        const float s2 = F(MB_OP_SIGMOID, s1, 0.0f);
        const float s3 = F(MB_OP_SIGMOID, s2, 0.0f);
        out[0] = sigmoid_bwd(sigmoid_bwd(sigmoid_bwd(in[0], s3), s2), s1);
    }
};

/* ---- kernels -------------------------------------------------------------- */

typedef struct hand_ptrs {
    const void *in[4];
    void *out[4];
} hand_ptrs;

/* Byte-exact copy: 16-byte vectors, then the tail element by element. */
template <int DT>
__global__ void __launch_bounds__(MB_CUDA_THREADS)
    copy_kernel(const void *__restrict__ x, void *__restrict__ y, int64_t n)
{
    constexpr int V = mb_cuda_st<DT>::V;
    const int64_t nv = n / V;
    const int64_t stride = mb_cuda_stride();
    const uint4 *__restrict__ src = reinterpret_cast<const uint4 *>(x);
    uint4 *__restrict__ dst = reinterpret_cast<uint4 *>(y);
    for (int64_t i = mb_cuda_tid(); i < nv; i += stride) dst[i] = __ldg(src + i);
    const int64_t t = nv * V + mb_cuda_tid();
    if (t < n) {
        if (DT == MB_F32) reinterpret_cast<uint32_t *>(y)[t] = reinterpret_cast<const uint32_t *>(x)[t];
        else reinterpret_cast<uint16_t *>(y)[t] = reinterpret_cast<const uint16_t *>(x)[t];
    }
}

/* Functor Fn over NIN input and NOUT output tensors of storage type DT. */
template <int DT, class Fn>
__global__ void __launch_bounds__(MB_CUDA_THREADS) hand_kernel(const hand_ptrs P, int64_t n)
{
    constexpr int V = mb_cuda_st<DT>::V;
    constexpr int NIN = Fn::NIN, NOUT = Fn::NOUT;
    const int64_t nv = n / V;
    const int64_t stride = mb_cuda_stride();
    for (int64_t i = mb_cuda_tid(); i < nv; i += stride) {
        float in[NIN][V], out[NOUT][V];
#pragma unroll
        for (int r = 0; r < NIN; r++) mb_cuda_ld16<DT>(P.in[r], i, in[r]);
#pragma unroll
        for (int j = 0; j < V; j++) {
            float a[NIN], b[NOUT];
#pragma unroll
            for (int r = 0; r < NIN; r++) a[r] = in[r][j];
            Fn::apply(a, b);
#pragma unroll
            for (int w = 0; w < NOUT; w++) out[w][j] = b[w];
        }
#pragma unroll
        for (int w = 0; w < NOUT; w++) mb_cuda_st16<DT>(P.out[w], i, out[w]);
    }
    const int64_t t = nv * V + mb_cuda_tid();
    if (t < n) {
        float a[NIN], b[NOUT];
#pragma unroll
        for (int r = 0; r < NIN; r++) a[r] = mb_cuda_ld1<DT>(P.in[r], t);
        Fn::apply(a, b);
#pragma unroll
        for (int w = 0; w < NOUT; w++) mb_cuda_st1<DT>(P.out[w], t, b[w]);
    }
}

/* ---- launchers ------------------------------------------------------------ */

template <int DT>
static cudaError_t launch_copy(const hand_ptrs &P, int64_t n, int sm_count, cudaStream_t s, int *grid_out)
{
    static int blocks_per_sm = 0;
    cudaError_t e = mb_cuda_occupancy(copy_kernel<DT>, &blocks_per_sm);
    if (e != cudaSuccess) return e;
    const int grid = mb_cuda_grid(blocks_per_sm, (n + mb_cuda_st<DT>::V - 1) / mb_cuda_st<DT>::V, sm_count);
    copy_kernel<DT><<<grid, MB_CUDA_THREADS, 0, s>>>(P.in[0], P.out[0], n);
    *grid_out = grid;
    return cudaGetLastError();
}

template <int DT, class Fn>
static cudaError_t launch_hand(const hand_ptrs &P, int64_t n, int sm_count, cudaStream_t s, int *grid_out)
{
    static int blocks_per_sm = 0;
    cudaError_t e = mb_cuda_occupancy(hand_kernel<DT, Fn>, &blocks_per_sm);
    if (e != cudaSuccess) return e;
    const int grid = mb_cuda_grid(blocks_per_sm, (n + mb_cuda_st<DT>::V - 1) / mb_cuda_st<DT>::V, sm_count);
    hand_kernel<DT, Fn><<<grid, MB_CUDA_THREADS, 0, s>>>(P, n);
    *grid_out = grid;
    return cudaGetLastError();
}

/* ---- dispatch ------------------------------------------------------------- */

/* Each hand_kernel and its id: one list, read by the dispatch and by
 * mb_cuda_hand_symbol (copy_kernel is the one kernel not in it). */
#define MB_HAND_FUNCTORS(X)                                         \
    X(MB_HAND_SIN2_PLUS_COS2, sin2_plus_cos2_f)                     \
    X(MB_HAND_GELU_TANH, gelu_tanh_f)                               \
    X(MB_HAND_SIGMOID3_STORE_FWD, sigmoid3_store_fwd_f)             \
    X(MB_HAND_SIGMOID3_STORE_BWD, sigmoid3_store_bwd_f)             \
    X(MB_HAND_SIGMOID3_RECOMPUTE_FWD, sigmoid3_recompute_fwd_f)     \
    X(MB_HAND_SIGMOID3_RECOMPUTE_BWD, sigmoid3_recompute_bwd_f)

template <int DT>
static cudaError_t launch_dt(mb_hand_id id, const hand_ptrs &P, int64_t n, int sm, cudaStream_t s, int *g)
{
    switch (id) {
    case MB_HAND_COPY: return launch_copy<DT>(P, n, sm, s, g);
#define MB_CASE(ID, FN) \
    case ID: return launch_hand<DT, FN>(P, n, sm, s, g);
        MB_HAND_FUNCTORS(MB_CASE)
#undef MB_CASE
    default: return cudaErrorNotSupported;
    }
}

cudaError_t mb_cuda_hand_launch(mb_hand_id id, mb_dtype dt, const void *const *in, void *const *out,
                                int64_t n, int sm_count, cudaStream_t s, int *grid_out)
{
    hand_ptrs P;
    for (int i = 0; i < 4; i++) {
        P.in[i] = in[i];
        P.out[i] = out[i];
    }
    int g = 0;
    cudaError_t e;
    switch (dt) {
    case MB_F32: e = launch_dt<MB_F32>(id, P, n, sm_count, s, &g); break;
    case MB_BF16: e = launch_dt<MB_BF16>(id, P, n, sm_count, s, &g); break;
    case MB_F16: e = launch_dt<MB_F16>(id, P, n, sm_count, s, &g); break;
    default: e = cudaErrorNotSupported; break;
    }
    if (grid_out) *grid_out = g;
    return e;
}

int mb_cuda_hand_symbol(mb_hand_id id, mb_dtype dt, char *buf, size_t size)
{
    if ((int)dt < 0 || dt >= MB_DTYPE_COUNT) return -1;
    int w = -1;
    switch (id) {
    case MB_HAND_COPY: w = snprintf(buf, size, "copy_kernel<%d>", (int)dt); break;
#define MB_CASE(ID, FN) \
    case ID: w = snprintf(buf, size, "hand_kernel<%d, %s>", (int)dt, #FN); break;
        MB_HAND_FUNCTORS(MB_CASE)
#undef MB_CASE
    default: break;
    }
    return w > 0 && (size_t)w < size ? 0 : -1;
}
