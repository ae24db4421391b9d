/* cols_eval.cu — the column evaluator: runs a kernel of a plan with a sum
 * over the rows (colsum: a [cols] weight's or bias's gradient, PyTorch's
 * sum(dim=0) and GammaBetaBackward) in one launch, from the program
 * cuda_cols.cu lowers (kernels_cuda_int.cuh says the layout).
 *   col_eval_kernel  a block: 128 columns x the rows of one split; a warp
 *                    reads 512 contiguous bytes of a row (f32) per load
 * Each full-row read is loaded once; the colsums are f32 over 256 rows of a
 * lane, then double (the CPU column kernels' numerics, rows_cols_cpu.c); the
 * splits' sums meet in a small workspace, added in split order by the last
 * block of the column tile, which then runs the nodes after the sums.
 * Values live in shared memory slots as in the row evaluator (indexed at run
 * time, so no registers; local memory only in sin and cos's reduction of huge
 * arguments, CUDA's Payne-Hanek path). It does not lower programs
 * (cuda_cols.cu) nor choose kernels (cuda_plan.cu). */
#include "kernels_cuda_int.cuh"
#include "rows_math.cuh"

#include <stdlib.h>

#ifdef __CUDA_ARCH__
#define COL_LDCG(p) __ldcg(p) /* the other blocks' sums: from L2, not a stale L1 line */
#else
#define COL_LDCG(p) (*(p))
#endif

/* ---- one lane's work, host and device ------------------------------------ */

/* A lane's view of shared memory: its slots, its f32 and double sums (stride
 * sstride between a lane's entries). */
struct col_view {
    float4 *slot;
    float4 *accf;
    double *accd; /* [n_sums][4 x sstride]: a lane's 4 columns */
    int sstride;
};

MB_HD static inline float4 col_operand(uint8_t o, float imm, const col_view &V)
{
    if (o == MB_COL_IMM) return make_float4(imm, imm, imm, imm);
    return V.slot[o * V.sstride];
}

MB_HD static inline float4 col_load(const mb_col_io &io, int64_t r, int64_t c, int64_t cols)
{
    switch (io.shape) {
    case MB_ROWT_FULL: return row_load4(io.p, io.dt, r * cols, c, cols, (cols & 3) == 0);
    case MB_ROWT_COL: return row_load4(io.p, io.dt, 0, c, cols, 1);
    case MB_ROWT_GCOL: return row_load4(io.p, io.dt, MB_ROWT_BASE(io, r, cols), c, cols, (cols & 3) == 0);
    default: {
        const float v = mb_load_f32(io.p, io.shape == MB_ROWT_ROW ? r : 0, (mb_dtype)io.dt);
        return make_float4(v, v, v, v);
    }
    }
}

MB_HD static inline void col_fold(const mb_col_prog &P, const col_view &V)
{
    for (int s = 0; s < P.n_sums; s++) {
        float4 &f = V.accf[s * V.sstride];
        double *d = V.accd + (size_t)s * 4 * V.sstride;
        d[0] += f.x, d[V.sstride] += f.y, d[2 * V.sstride] += f.z, d[3 * V.sstride] += f.w;
        f = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

/* Rows phase of lane (columns c..c+3) over rows r0 + rl, r0 + rl + step, ...
 * below r1: its sums start at 0 and end in V.accd. */
MB_HD static inline void col_rows(const mb_col_prog &P, const col_view &V, int64_t c, int64_t r0, int64_t r1,
                                  int64_t step, int first_tile_lane)
{
    for (int s = 0; s < P.n_sums; s++) {
        V.accf[s * V.sstride] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int j = 0; j < 4; j++) V.accd[(size_t)(s * 4 + j) * V.sstride] = 0.0;
    }
    const int64_t cols = P.cols;
    int n = 0;
    for (int64_t r = r0; r < r1; r += step) {
        for (int q = 0; q < P.n_reads; q++)
            if (P.reads[q].phase & 1) V.slot[P.reads[q].slot * V.sstride] = col_load(P.reads[q], r, c, cols);
        for (int k = 0; k < P.n_row_ins; k++) {
            const mb_col_ins &in = P.row_ins[k];
            const float4 a = col_operand(in.a, in.imm_a, V);
            if (in.kind == MB_COLI_SUM) {
                float4 &f = V.accf[in.sum * V.sstride];
                f = make_float4(f.x + a.x, f.y + a.y, f.z + a.z, f.w + a.w);
            } else {
                V.slot[in.dst * V.sstride] = row_apply4(in.op, a, col_operand(in.b, in.imm_b, V));
            }
        }
        for (int w = 0; w < P.n_writes; w++) {
            const mb_col_io &io = P.writes[w];
            if (io.phase) continue;
            if (io.shape == MB_ROWT_FULL)
                row_store4(const_cast<void *>(io.p), io.dt, r * cols, c, cols, (cols & 3) == 0,
                           V.slot[io.slot * V.sstride]);
            else if (first_tile_lane) /* a [rows] value: one lane of the grid writes it */
                mb_store_f32(const_cast<void *>(io.p), r, (mb_dtype)io.dt, V.slot[io.slot * V.sstride].x);
        }
        if (++n == MB_COL_BLOCK_ROWS) {
            col_fold(P, V);
            n = 0;
        }
    }
    col_fold(P, V);
}

/* A block's sums of columns c..c+3 (row lanes 0..lanes-1 of V, stride
 * MB_COL_LANES lanes apart, added in order) into split `split` of work. */
MB_HD static inline void col_block_sums(const mb_col_prog &P, const col_view &V, int64_t c, int split, int lanes)
{
    for (int s = 0; s < P.n_sums; s++)
        for (int j = 0; j < 4 && c + j < P.cols; j++) {
            double t = 0.0;
            for (int l = 0; l < lanes; l++) t += V.accd[(size_t)(s * 4 + j) * V.sstride + (size_t)l * MB_COL_LANES];
            P.work[((size_t)split * P.n_sums + s) * (size_t)P.cols + (size_t)(c + j)] = t;
        }
}

/* Post phase of columns c..c+3: the sums over every split, the nodes after
 * them, the [cols] writes. */
MB_HD static inline void col_post(const mb_col_prog &P, const col_view &V, int64_t c)
{
    for (int q = 0; q < P.n_reads; q++)
        if (P.reads[q].phase & 2) V.slot[P.reads[q].slot * V.sstride] = col_load(P.reads[q], 0, c, P.cols);
    for (int k = 0; k < P.n_post_ins; k++) {
        const mb_col_ins &in = P.post_ins[k];
        if (in.kind == MB_COLI_TOTAL) {
            float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
ROW_UNROLL
            for (int j = 0; j < 4; j++) { /* constant indices: v stays in registers */
                double t = 0.0;
                for (int sp = 0; sp < P.splits && c + j < P.cols; sp++)
                    t += COL_LDCG(&P.work[((size_t)sp * P.n_sums + in.sum) * (size_t)P.cols + (size_t)(c + j)]);
                v[j] = (float)t;
            }
            V.slot[in.dst * V.sstride] = make_float4(v[0], v[1], v[2], v[3]);
        } else {
            V.slot[in.dst * V.sstride] =
                row_apply4(in.op, col_operand(in.a, in.imm_a, V), col_operand(in.b, in.imm_b, V));
        }
    }
    for (int w = 0; w < P.n_writes; w++) {
        const mb_col_io &io = P.writes[w];
        if (io.phase) row_store4(const_cast<void *>(io.p), io.dt, 0, c, P.cols, 1, V.slot[io.slot * V.sstride]);
    }
}

/* ---- shared memory layout ------------------------------------------------- */

__host__ __device__ static inline size_t col_smem_layout(const mb_col_prog *P, int threads, size_t off[3])
{
    size_t o = 0;
    off[0] = o; o += (size_t)P->n_slots * 16 * (size_t)threads;
    off[1] = o; o += (size_t)P->n_sums * 16 * (size_t)threads;
    off[2] = o; o += (size_t)P->n_sums * 32 * (size_t)threads;
    return o + 16; /* the last-block flag */
}

MB_HD static inline col_view col_view_at(unsigned char *raw, const size_t off[3], int threads, int lane)
{
    col_view V;
    V.slot = reinterpret_cast<float4 *>(raw + off[0]) + lane;
    V.accf = reinterpret_cast<float4 *>(raw + off[1]) + lane;
    V.accd = reinterpret_cast<double *>(raw + off[2]) + lane;
    V.sstride = threads;
    return V;
}

/* ---- the kernel ------------------------------------------------------------- */

__global__ void __launch_bounds__(MB_CUDA_THREADS) col_eval_kernel(const __grid_constant__ mb_col_prog P)
{
    extern __shared__ __align__(16) unsigned char col_smem_raw[];
    size_t off[3];
    const size_t bytes = col_smem_layout(&P, (int)blockDim.x, off);
    int *last = reinterpret_cast<int *>(col_smem_raw + bytes - 16);
    const int cl = (int)threadIdx.x % MB_COL_LANES, rl = (int)threadIdx.x / MB_COL_LANES;
    const int64_t c = ((int64_t)blockIdx.x * MB_COL_LANES + cl) * 4;
    const int split = (int)blockIdx.y;
    const col_view V = col_view_at(col_smem_raw, off, (int)blockDim.x, (int)threadIdx.x);
    const int64_t r0 = (int64_t)split * P.split_rows;
    const int64_t r1 = r0 + P.split_rows < P.rows ? r0 + P.split_rows : P.rows;
    if (P.n_row_ins > 0 && c < P.cols)
        col_rows(P, V, c, r0 + rl, r1, MB_COL_ROW_LANES, blockIdx.x == 0 && cl == 0);
    if (P.n_sums == 0) { /* [cols] values only: one split */
        if (rl == 0 && c < P.cols) col_post(P, V, c);
        return;
    }
    __syncthreads();
    if (rl == 0 && c < P.cols) col_block_sums(P, V, c, split, MB_COL_ROW_LANES);
    __threadfence(); /* this block's sums, before its arrival is counted */
    __syncthreads();
    if (threadIdx.x == 0) *last = atomicAdd(&P.arrived[blockIdx.x], 1u) == (unsigned)P.splits - 1;
    __syncthreads();
    if (!*last) return;
    __threadfence(); /* the other blocks' sums, after their arrivals */
    if (rl == 0 && c < P.cols) col_post(P, V, c);
    if (threadIdx.x == 0) P.arrived[blockIdx.x] = 0; /* ready for the next launch */
}

/* ---- host emulation ----------------------------------------------------------- */

int mb_cuda_col_emulate(const mb_col_prog *P)
{
    size_t off[3];
    const int T = MB_CUDA_THREADS;
    const size_t bytes = col_smem_layout(P, T, off);
    unsigned char *raw = (unsigned char *)calloc(1, bytes + 16);
    if (!raw) return -1;
    for (int tile = 0; tile < P->tiles; tile++) {
        for (int split = 0; split < P->splits; split++) {
            const int64_t r0 = (int64_t)split * P->split_rows;
            const int64_t r1 = r0 + P->split_rows < P->rows ? r0 + P->split_rows : P->rows;
            for (int t = 0; t < T && P->n_row_ins > 0; t++) {
                const int cl = t % MB_COL_LANES, rl = t / MB_COL_LANES;
                const int64_t c = ((int64_t)tile * MB_COL_LANES + cl) * 4;
                if (c < P->cols)
                    col_rows(*P, col_view_at(raw, off, T, t), c, r0 + rl, r1, MB_COL_ROW_LANES, tile == 0 && cl == 0);
            }
            for (int cl = 0; cl < MB_COL_LANES && P->n_sums > 0; cl++) {
                const int64_t c = ((int64_t)tile * MB_COL_LANES + cl) * 4;
                if (c < P->cols) col_block_sums(*P, col_view_at(raw, off, T, cl), c, split, MB_COL_ROW_LANES);
            }
        }
        for (int cl = 0; cl < MB_COL_LANES; cl++) { /* the last block of the tile */
            const int64_t c = ((int64_t)tile * MB_COL_LANES + cl) * 4;
            if (c < P->cols) col_post(*P, col_view_at(raw, off, T, cl), c);
        }
    }
    free(raw);
    return 0;
}

/* ---- launcher ------------------------------------------------------------------- */

size_t mb_cuda_col_smem(const mb_col_prog *P)
{
    size_t off[3];
    return col_smem_layout(P, MB_CUDA_THREADS, off);
}

cudaError_t mb_cuda_col_launch(const mb_col_prog *P, cudaStream_t s, int *grid_out)
{
    if (P->n_slots > MB_COL_MAX_SLOTS || P->n_sums > MB_COL_MAX_SUMS || P->splits < 1 || P->tiles < 1 ||
        (P->n_sums > 0 && (!P->work || !P->arrived)))
        return cudaErrorInvalidValue;
    const size_t smem = mb_cuda_col_smem(P);
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(col_eval_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    const dim3 grid((unsigned)P->tiles, (unsigned)P->splits);
    col_eval_kernel<<<grid, MB_CUDA_THREADS, smem, s>>>(*P);
    if (grid_out) *grid_out = P->tiles * P->splits;
    return cudaGetLastError();
}
