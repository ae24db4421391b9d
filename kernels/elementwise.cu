/* elementwise.cu — generic per-op kernels: one launch per graph node, so any
 * eager plan runs as a framework's eager mode would.
 *   op_kernel<DT, OP>  y = op(a) or y = a op b, a and b tensors or scalars,
 *                      f32 / bf16 / f16 storage, 16-byte loads and stores,
 *                      grid-stride loop over vectors plus a scalar tail.
 * CPU reference: mb_kern_reference_elem (reference.c), same math (mb_ops.h).
 * It does not choose which kernel runs a plan node (cuda_plan.cu does). */
#include "kernels_cuda_int.cuh"

#include <stdio.h>

/* ---- kernels -------------------------------------------------------------- */

/* y = op(a, b); a == NULL: scalar sa; b == NULL: scalar sb (binary ops). The
 * NULL tests are uniform across the grid, so they cost a predicate, not a
 * divergent branch. */
template <int DT, int OP, int BINARY>
__global__ void __launch_bounds__(MB_CUDA_THREADS)
    op_kernel(const void *__restrict__ a, float sa, const void *__restrict__ b, float sb,
              void *__restrict__ y, int64_t n)
{
    constexpr int V = mb_cuda_st<DT>::V;
    const int64_t nv = n / V;
    const int64_t stride = mb_cuda_stride();
    for (int64_t i = mb_cuda_tid(); i < nv; i += stride) {
        float av[V], bv[V], yv[V];
        if (a) mb_cuda_ld16<DT>(a, i, av);
        else
#pragma unroll
            for (int j = 0; j < V; j++) av[j] = sa;
        if (BINARY) {
            if (b) mb_cuda_ld16<DT>(b, i, bv);
            else
#pragma unroll
                for (int j = 0; j < V; j++) bv[j] = sb;
        }
#pragma unroll
        for (int j = 0; j < V; j++) yv[j] = mb_op_apply_f32((mb_op)OP, av[j], BINARY ? bv[j] : 0.0f);
        mb_cuda_st16<DT>(y, i, yv);
    }
    const int64_t t = nv * V + mb_cuda_tid(); /* tail: fewer than V elements */
    if (t < n) {
        const float av = a ? mb_cuda_ld1<DT>(a, t) : sa;
        const float bv = BINARY ? (b ? mb_cuda_ld1<DT>(b, t) : sb) : 0.0f;
        mb_cuda_st1<DT>(y, t, mb_op_apply_f32((mb_op)OP, av, bv));
    }
}

/* ---- launchers ------------------------------------------------------------ */

template <int DT, int OP, int BINARY>
static cudaError_t launch_op(const void *a, float sa, const void *b, float sb, void *y, int64_t n,
                             int sm_count, cudaStream_t s, int *grid_out)
{
    constexpr int V = mb_cuda_st<DT>::V;
    static int blocks_per_sm = 0; /* occupancy of this instantiation, asked once */
    cudaError_t e = mb_cuda_occupancy(op_kernel<DT, OP, BINARY>, &blocks_per_sm);
    if (e != cudaSuccess) return e;
    const int grid = mb_cuda_grid(blocks_per_sm, (n + V - 1) / V, sm_count);
    op_kernel<DT, OP, BINARY><<<grid, MB_CUDA_THREADS, 0, s>>>(a, sa, b, sb, y, n);
    if (grid_out) *grid_out = grid;
    return cudaGetLastError();
}

/* ---- dispatch ------------------------------------------------------------- */

typedef cudaError_t (*op_launcher)(const void *, float, const void *, float, void *, int64_t, int,
                                   cudaStream_t, int *);

/* table[dtype][op], filled once from op_table.h's rows; binary[op] is the
 * BINARY argument of op's kernel. */
static op_launcher table[MB_DTYPE_COUNT][MB_OP_COUNT];
static unsigned char binary[MB_OP_COUNT];
static int table_ready;

static void table_init(void)
{
#define MB_ROW(E, name, arity, kind, spell, flops, sfu, cls, der, dop, saves, vform, flags, ...) \
    binary[MB_OP_##E] = (arity) == 2;                                     \
    if (!((flags) & MB_OPF_ROW)) {                                        \
        table[MB_F32][MB_OP_##E] = launch_op<MB_F32, MB_OP_##E, (arity) == 2>;   \
        table[MB_BF16][MB_OP_##E] = launch_op<MB_BF16, MB_OP_##E, (arity) == 2>; \
        table[MB_F16][MB_OP_##E] = launch_op<MB_F16, MB_OP_##E, (arity) == 2>;   \
    }
    /* every elementwise row of op_table.h, unary or binary by its arity; row
     * operations (reductions, softmax, the norms) have no CUDA kernel yet */
    MB_OP_TABLE(MB_ROW)
#undef MB_ROW
    table_ready = 1;
}

extern "C" int mb_kern_cuda_has_op(mb_op op)
{
    if (!table_ready) table_init();
    return (int)op > 0 && op < MB_OP_COUNT && table[MB_F32][op] && table[MB_BF16][op] && table[MB_F16][op];
}

cudaError_t mb_cuda_op_launch(mb_op op, mb_dtype dt, const void *a, float sa, const void *b, float sb,
                              void *y, int64_t n, int sm_count, cudaStream_t s, int *grid_out)
{
    if (!table_ready) table_init();
    if ((int)dt < 0 || dt >= MB_DTYPE_COUNT || (int)op < 0 || op >= MB_OP_COUNT || !table[dt][op])
        return cudaErrorNotSupported;
    return table[dt][op](a, sa, b, sb, y, n, sm_count, s, grid_out);
}

int mb_cuda_op_symbol(mb_op op, mb_dtype dt, int a_null, int b_null, char *buf, size_t size,
                      unsigned *null_params)
{
    if (!table_ready) table_init();
    if ((int)dt < 0 || dt >= MB_DTYPE_COUNT || (int)op < 0 || op >= MB_OP_COUNT || !table[dt][op]) return -1;
    /* op_kernel's template arguments <DT, OP, BINARY>, as the demangler
     * prints int arguments; its parameters (a, sa, b, sb, y, n): a is 0, b is 2 */
    int w = snprintf(buf, size, "op_kernel<%d, %d, %d>", (int)dt, (int)op, (int)binary[op]);
    *null_params = (a_null ? 1u << 0 : 0u) | (b_null && binary[op] ? 1u << 2 : 0u);
    return w > 0 && (size_t)w < size ? 0 : -1;
}
