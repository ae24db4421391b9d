/* rows_eval.cu — the row evaluator: runs any kernel of a plan with row
 * operations (sum, mean, amax, softmax, log_softmax, layer_norm, rms_norm
 * over the last dimension; elementwise ops broadcasting [rows, 1] and [cols]
 * operands) in one launch, from the program cuda_rows.cu lowers.
 *   row_eval_kernel<1>  a warp takes a row (rows up to MB_ROW_WARP_MAX_COLS
 *                       columns), 8 rows a block
 *   row_eval_kernel<0>  the block takes a row
 *   row_part_kernel<w>  either, for a kernel that sums a colsum's operand in
 *                       partial sums (a row group owning each row of them)
 * In each pass the group walks its row 4 columns per thread per iteration
 * (16-byte f32 / 8-byte bf16, f16 vectors when cols is a multiple of 4, else
 * element by element), runs the instructions of that pass in order, and at
 * the pass end combines the statistics of that pass across the group (warp
 * shuffles, then one partial per warp in shared memory): sums in f32 (bf16
 * and f16 inputs widen to f32), max, online softmax's (max, sum of exp)
 * pairs rescaled as they merge (Milakov & Gimelshein 2018), Welford's mean
 * and M2 merged by Chan's formula. One pass (the program's onepass): a read
 * used in several passes is loaded from memory in its first and kept in
 * shared memory, in its own storage type, for the later ones (the model's
 * live bytes per column); multi-pass re-reads it from memory each pass.
 * Values live in shared memory slots as in the fused evaluator (fused_eval.cu:
 * indexed at run time, so no registers; local memory only in sin and cos's
 * reduction of huge arguments, CUDA's Payne-Hanek path). Same math as the
 * CPU row executor (rows_cpu.c, mb_ops.h). It does not choose kernels
 * (cuda_plan.cu does) nor lower programs (cuda_rows.cu). */
#include "kernels_cuda_int.cuh"
#include "rows_math.cuh"

#include <math.h>

#define ROW_WARPS (MB_CUDA_THREADS / 32)

/* The staged row (shared memory), 4 columns at c, in dt: exact both ways
 * (the values came from dt). */
MB_HD static inline void stage_put(unsigned char *st, int dt, int64_t c, float4 v)
{
    if (dt == MB_F32) reinterpret_cast<float4 *>(st)[c >> 2] = v;
    else reinterpret_cast<uint2 *>(st)[c >> 2] = make_uint2(row_pack2(dt, v.x, v.y), row_pack2(dt, v.z, v.w));
}

MB_HD static inline float4 stage_get(const unsigned char *st, int dt, int64_t c)
{
    if (dt == MB_F32) return reinterpret_cast<const float4 *>(st)[c >> 2];
    const uint2 u = reinterpret_cast<const uint2 *>(st)[c >> 2];
    if (dt == MB_BF16)
        return make_float4(mb_bf16_to_f32((uint16_t)(u.x & 0xffffu)), mb_bf16_to_f32((uint16_t)(u.x >> 16)),
                           mb_bf16_to_f32((uint16_t)(u.y & 0xffffu)), mb_bf16_to_f32((uint16_t)(u.y >> 16)));
    return make_float4(mb_f16_to_f32((uint16_t)(u.x & 0xffffu)), mb_f16_to_f32((uint16_t)(u.x >> 16)),
                       mb_f16_to_f32((uint16_t)(u.y & 0xffffu)), mb_f16_to_f32((uint16_t)(u.y >> 16)));
}

/* ---- shared memory layout ------------------------------------------------------ */

struct row_smem {
    float4 *slot;          /* [n_slots][blockDim] */
    row_part *part;        /* [n_stats][blockDim] */
    row_part *scratch;     /* [ROW_WARPS] (one row a block) */
    float *res;            /* [groups][MB_ROW_MAX_STATS][2] */
    float *rv;             /* [groups][n_rv] */
    unsigned char *stage;  /* [groups][stage_bytes] */
};

__host__ __device__ static inline size_t row_align16(size_t b) { return (b + 15) / 16 * 16; }

/* Byte offsets of row_smem's arrays for a block of threads and groups. */
__host__ __device__ static inline size_t row_smem_layout(const mb_row_prog *P, int threads, int groups,
                                                         size_t off[6])
{
    size_t o = 0;
    off[0] = o; o += row_align16((size_t)P->n_slots * 16 * (size_t)threads);
    off[1] = o; o += row_align16((size_t)P->n_stats * sizeof(row_part) * (size_t)threads);
    off[2] = o; o += row_align16(ROW_WARPS * sizeof(row_part));
    off[3] = o; o += row_align16((size_t)groups * MB_ROW_MAX_STATS * 2 * sizeof(float));
    off[4] = o; o += row_align16((size_t)groups * (size_t)(P->n_rv > 0 ? P->n_rv : 1) * sizeof(float));
    off[5] = o; o += (size_t)groups * (size_t)(P->onepass ? P->stage_bytes : 0);
    return o;
}

/* ---- one row, in phases --------------------------------------------------------
 * The kernel runs each phase on every thread of a group with a barrier
 * between phases; the host emulator (mb_kern_cuda_row_emulate) runs them on
 * each lane in turn. Both run the same code. */

/* Group-wide barrier: a warp's own, or the block's. */
template <int WARP>
__device__ __forceinline__ void group_sync(void)
{
    if (WARP) __syncwarp();
    else __syncthreads();
}

/* Operand o of an instruction for 4 columns. */
MB_HD static inline float4 operand4(uint8_t o, float imm, const float4 *slot, int sstride, const float *rv)
{
    if (o == MB_ROW_IMM) return make_float4(imm, imm, imm, imm);
    if (o & MB_ROW_RV) {
        const float v = rv[o & 0x7f];
        return make_float4(v, v, v, v);
    }
    return slot[o * sstride];
}

MB_HD static inline float operand1(uint8_t o, float imm, const float *rv)
{
    return o == MB_ROW_IMM ? imm : rv[o & 0x7f];
}

/* A library op's output from its statistics (res of the row group). */
MB_HD static inline float lib1(const mb_row_ins &in, float x, float w, const float *res, float cols)
{
    switch (in.op) {
    case MB_OP_SOFTMAX: {
        const float m = res[2 * in.stat], s = in.stat2 != MB_ROW_IMM ? res[2 * in.stat2] : res[2 * in.stat + 1];
        return row_exp(x - m) * (1.0f / s);
    }
    case MB_OP_LOG_SOFTMAX: {
        const float m = res[2 * in.stat], s = in.stat2 != MB_ROW_IMM ? res[2 * in.stat2] : res[2 * in.stat + 1];
        return x - m - logf(s);
    }
    case MB_OP_LAYER_NORM: {
        const float mu = res[2 * in.stat], var = res[2 * in.stat + 1];
        return (x - mu) * (1.0f / sqrtf((var > 0.0f ? var : 0.0f) + in.eps)) * w;
    }
    case MB_OP_RMS_NORM: return x * (1.0f / sqrtf(res[2 * in.stat] / cols + in.eps)) * w;
    default: return x;
    }
}

/* A group's view of shared memory: this lane's slots and partials (stride
 * sstride between a lane's entries), the group's results, row values and
 * staged row. */
struct row_view {
    float4 *slot;
    row_part *part;
    int sstride;
    float *res, *rv;
    unsigned char *stage;
};

/* Phase 0, first lane: the row values read from memory. */
MB_HD static inline void row_load_rv(const mb_row_prog &P, const row_view &V, int64_t row)
{
    for (int r = 0; r < P.n_reads; r++) {
        const mb_row_io &io = P.reads[r];
        if (io.shape == MB_ROWT_ROW) V.rv[io.at & 0x7f] = mb_load_f32(io.p, row, (mb_dtype)io.dt);
        else if (io.shape == MB_ROWT_SCALAR) V.rv[io.at & 0x7f] = mb_load_f32(io.p, 0, (mb_dtype)io.dt);
    }
}

/* Pass start, first lane: row values computed in pass p. */
MB_HD static inline void row_eval_rv(const mb_row_prog &P, const row_view &V, int p)
{
    for (int k = 0; k < P.n_ins; k++) {
        const mb_row_ins &in = P.ins[k];
        if (in.kind == MB_ROWI_RV && (in.mask >> p & 1))
            V.rv[in.dst & 0x7f] = row_apply(in.op, operand1(in.a, in.imm_a, V.rv), operand1(in.b, in.imm_b, V.rv));
    }
}

/* Pass p, every lane: its partial statistics reset, then its columns
 * (lane, lane + G, ... in groups of 4): reads loaded (from the staged row
 * in a later pass of one pass), instructions run, full-row writes stored. */
template <int PART>
MB_HD static inline void row_columns(const mb_row_prog &P, const row_view &V, int64_t row, int p, int lane, int G)
{
    const uint32_t bit = 1u << p;
    const int sstride = V.sstride;
    for (int s = 0; s < P.n_stats; s++)
        if (P.stats[s].pass == p) V.part[s * sstride] = part_init(P.stats[s].kind);
    const int64_t cols = P.cols, base = row * cols;
    const int vec = (cols & 3) == 0;
    const float fcols = (float)cols;
    for (int64_t c = 4 * (int64_t)lane; P.has_cols && c < cols; c += 4 * (int64_t)G) {
        for (int r = 0; r < P.n_reads; r++) {
            const mb_row_io &io = P.reads[r];
            if (!MB_ROWT_HAS_COLS(io.shape) || !(io.mask & bit)) continue;
            float4 v;
            const int staged = P.onepass && io.staged;
            if (staged && (io.mask & (bit - 1))) { /* loaded in an earlier pass: from chip */
                v = stage_get(V.stage + io.stage_off, io.dt, c);
            } else {
                v = row_load4(io.p, io.dt, io.shape == MB_ROWT_FULL ? base : MB_ROWT_BASE(io, row, cols), c, cols,
                              io.shape == MB_ROWT_COL ? 1 : vec);
                if (staged) stage_put(V.stage + io.stage_off, io.dt, c, v);
            }
            V.slot[io.at * sstride] = v;
        }
        const int valid = cols - c < 4 ? (int)(cols - c) : 4;
        for (int k = 0; k < P.n_ins; k++) {
            const mb_row_ins &in = P.ins[k];
            if (!(in.mask & bit) || in.kind == MB_ROWI_RV) continue;
            const float4 a = operand4(in.a, in.imm_a, V.slot, sstride, V.rv);
            if (in.kind == MB_ROWI_ELEM) {
                V.slot[in.dst * sstride] = row_apply4(in.op, a, operand4(in.b, in.imm_b, V.slot, sstride, V.rv));
            } else if (in.kind == MB_ROWI_STAT) {
                const mb_row_stat &st = P.stats[in.stat];
                const float m = st.kind == MB_ROWS_SUMEXP ? V.res[2 * st.dep] : 0.0f;
                row_part q = V.part[in.stat * sstride];
                const float x[4] = {a.x, a.y, a.z, a.w};
ROW_UNROLL
                for (int j = 0; j < 4; j++) /* constant indices: x stays in registers */
                    if (j < valid) part_add(st.kind, q, x[j], m);
                V.part[in.stat * sstride] = q;
            } else {
                const float4 w = operand4(in.b, in.imm_b, V.slot, sstride, V.rv);
                V.slot[in.dst * sstride] = make_float4(lib1(in, a.x, w.x, V.res, fcols), lib1(in, a.y, w.y, V.res, fcols),
                                                       lib1(in, a.z, w.z, V.res, fcols), lib1(in, a.w, w.w, V.res, fcols));
            }
        }
        for (int w = 0; w < P.n_writes; w++) {
            const mb_row_io &io = P.writes[w];
            if (!MB_ROWT_HAS_COLS(io.shape) || !(io.mask & bit)) continue;
            if (PART && io.shape == MB_ROWT_PART) { /* f32: this group's row of the partial sums, its own */
#ifdef __CUDA_ARCH__ /* row % P.blocks is the group's index (row_part_kernel): no 64-bit division */
                const int64_t pb = (int64_t)(blockIdx.x * (blockDim.x / G) + threadIdx.x / G) * cols;
#else
                const int64_t pb = (row % P.blocks) * cols;
#endif
                float4 v = V.slot[io.at * sstride];
                if (row >= P.blocks) {
                    const float4 o = row_load4(io.p, io.dt, pb, c, cols, vec);
                    v = make_float4(v.x + o.x, v.y + o.y, v.z + o.z, v.w + o.w);
                }
                row_store4(const_cast<void *>(io.p), io.dt, pb, c, cols, vec, v);
                continue;
            }
            row_store4(const_cast<void *>(io.p), io.dt, io.shape == MB_ROWT_FULL ? base : MB_ROWT_BASE(io, row, cols),
                       c, cols, io.shape == MB_ROWT_COL ? 1 : vec, V.slot[io.at * sstride]);
        }
    }
}

/* Pass end, first lane: statistic s's merged partial q becomes its results
 * (and its row value). */
MB_HD static inline void row_finish_stat(const mb_row_prog &P, const row_view &V, int s, row_part q)
{
    const mb_row_stat &st = P.stats[s];
    float r0 = q.a, r1 = q.b;
    if (st.kind == MB_ROWS_WELFORD) r0 = q.b, r1 = q.a > 0.0f ? q.c / q.a : 0.0f;
    if (st.kind == MB_ROWS_SUM && st.mean) r0 = q.a / (float)P.cols;
    V.res[2 * s] = r0;
    V.res[2 * s + 1] = r1;
    if (st.rv != MB_ROW_IMM) V.rv[st.rv & 0x7f] = st.which ? r1 : r0;
}

/* Pass end, first lane: row values written in pass p. */
MB_HD static inline void row_store_rv(const mb_row_prog &P, const row_view &V, int64_t row, int p)
{
    for (int w = 0; w < P.n_writes; w++) {
        const mb_row_io &io = P.writes[w];
        if (MB_ROWT_HAS_COLS(io.shape) || !(io.mask >> p & 1)) continue;
        mb_store_f32(const_cast<void *>(io.p), io.shape == MB_ROWT_SCALAR ? 0 : row, (mb_dtype)io.dt,
                     V.rv[io.at & 0x7f]);
    }
}

template <int WARP, int PART>
__device__ void row_one(const mb_row_prog &P, const row_smem &M, int64_t row, int g, int lane, int G)
{
    row_view V;
    V.slot = M.slot + threadIdx.x;
    V.part = M.part + threadIdx.x;
    V.sstride = (int)blockDim.x;
    V.res = M.res + (size_t)g * MB_ROW_MAX_STATS * 2;
    V.rv = M.rv + (size_t)g * (P.n_rv > 0 ? P.n_rv : 1);
    V.stage = M.stage + (size_t)g * (size_t)P.stage_bytes;
    if (lane == 0) row_load_rv(P, V, row);
    for (int p = 0; p < P.passes; p++) {
        group_sync<WARP>(); /* the last pass's statistics and row values are in */
        if (lane == 0) row_eval_rv(P, V, p);
        group_sync<WARP>();
        row_columns<PART>(P, V, row, p, lane, G);
        /* the pass's statistics across the group */
        for (int s = 0; s < P.n_stats; s++) {
            const mb_row_stat &st = P.stats[s];
            if (st.pass != p) continue;
            row_part q = V.part[s * V.sstride];
            for (int off = 16; off > 0; off >>= 1) q = part_merge(st.kind, q, part_shfl(q, off));
            if (!WARP) {
                if (lane % 32 == 0) M.scratch[lane / 32] = q;
                __syncthreads();
                if (lane == 0)
                    for (int w = 1; w < G / 32; w++) q = part_merge(st.kind, q, M.scratch[w]);
                __syncthreads();
            }
            if (lane == 0) row_finish_stat(P, V, s, q);
        }
        group_sync<WARP>();
        if (lane == 0) row_store_rv(P, V, row, p);
    }
    group_sync<WARP>(); /* the next row reuses res, rv and the stage */
}

/* A row group's rows: the groups of the grid in turn; with partial sums
 * (PART) P.blocks groups, group b taking rows b, b + P.blocks, ... */
template <int WARP, int PART>
__device__ void row_eval_body(const mb_row_prog &P)
{
    extern __shared__ __align__(16) unsigned char row_smem_raw[];
    const int G = WARP ? 32 : (int)blockDim.x;
    const int groups = WARP ? (int)blockDim.x / 32 : 1;
    size_t off[6];
    row_smem_layout(&P, (int)blockDim.x, groups, off);
    row_smem M;
    M.slot = reinterpret_cast<float4 *>(row_smem_raw + off[0]);
    M.part = reinterpret_cast<row_part *>(row_smem_raw + off[1]);
    M.scratch = reinterpret_cast<row_part *>(row_smem_raw + off[2]);
    M.res = reinterpret_cast<float *>(row_smem_raw + off[3]);
    M.rv = reinterpret_cast<float *>(row_smem_raw + off[4]);
    M.stage = row_smem_raw + off[5];
    const int g = WARP ? (int)threadIdx.x / 32 : 0;
    const int lane = WARP ? (int)threadIdx.x % 32 : (int)threadIdx.x;
    const int64_t first = (int64_t)blockIdx.x * groups + g;
    const int64_t stride = PART ? P.blocks : (int64_t)gridDim.x * groups;
    if (PART && first >= P.blocks) return; /* a warp of the last block beyond them */
    for (int64_t row = first; row < P.rows; row += stride) row_one<WARP, PART>(P, M, row, g, lane, G);
}

/* The block form (a row a block, the multi-pass rows) at 8 blocks an SM:
 * 2048 threads, the model's rows in flight on CC 8.0/9.0/10.0 (SMs x
 * max_threads_per_sm / 256); ptxas gives it 32 registers without a spill
 * (44 unbounded held 5 blocks). The warp form spills at 32: unbounded. */
template <int WARP>
__global__ void __launch_bounds__(MB_CUDA_THREADS, WARP ? 1 : 2048 / MB_CUDA_THREADS) row_eval_kernel(const __grid_constant__ mb_row_prog P)
{
    row_eval_body<WARP, 0>(P);
}

/* A kernel with partial sums (P.blocks > 0): a block an SM at most (Liger's
 * grid of sm_count), so no occupancy bound on its registers. */
template <int WARP>
__global__ void __launch_bounds__(MB_CUDA_THREADS, 1) row_part_kernel(const __grid_constant__ mb_row_prog P)
{
    row_eval_body<WARP, 1>(P);
}

/* ---- host emulation ----------------------------------------------------------------- */

/* The host emulation (kernels_cuda_int.cuh; cuda_host_check.cu runs it). */
int mb_cuda_row_emulate(const mb_row_prog *P, int G)
{
    size_t off[6];
    const size_t bytes = row_smem_layout(P, G, 1, off);
    unsigned char *raw = (unsigned char *)calloc(1, bytes + 16);
    row_part *q = (row_part *)malloc(sizeof(row_part) * (size_t)G);
    if (!raw || !q) {
        free(raw);
        free(q);
        return -1;
    }
    row_view V;
    V.sstride = G;
    V.res = reinterpret_cast<float *>(raw + off[3]);
    V.rv = reinterpret_cast<float *>(raw + off[4]);
    V.stage = raw + off[5];
    float4 *slot0 = reinterpret_cast<float4 *>(raw + off[0]);
    row_part *part0 = reinterpret_cast<row_part *>(raw + off[1]);
    for (int64_t row = 0; row < P->rows; row++) {
        row_load_rv(*P, V, row);
        for (int p = 0; p < P->passes; p++) {
            row_eval_rv(*P, V, p);
            for (int lane = 0; lane < G; lane++) {
                V.slot = slot0 + lane;
                V.part = part0 + lane;
                if (P->blocks > 0) row_columns<1>(*P, V, row, p, lane, G);
                else row_columns<0>(*P, V, row, p, lane, G);
            }
            for (int s = 0; s < P->n_stats; s++) {
                const mb_row_stat &st = P->stats[s];
                if (st.pass != p) continue;
                for (int l = 0; l < G; l++) q[l] = part0[s * G + l];
                for (int off2 = 16; off2 > 0; off2 >>= 1) { /* every lane gets lane ^ off2's */
                    for (int w0 = 0; w0 < G; w0 += 32)
                        for (int l = w0; l < w0 + 32 && l < G; l++)
                            if (!((l - w0) & off2)) {
                                row_part a = q[l], b = q[l ^ off2];
                                q[l] = part_merge(st.kind, a, b);
                                q[l ^ off2] = part_merge(st.kind, b, a);
                            }
                }
                row_part t = q[0];
                for (int w = 32; w < G; w += 32) t = part_merge(st.kind, t, q[w]);
                row_finish_stat(*P, V, s, t);
            }
            row_store_rv(*P, V, row, p);
        }
    }
    free(raw);
    free(q);
    return 0;
}

/* ---- launcher -------------------------------------------------------------------- */

size_t mb_cuda_row_smem(const mb_row_prog *prog, int warp)
{
    size_t off[6];
    return row_smem_layout(prog, MB_CUDA_THREADS, warp ? ROW_WARPS : 1, off);
}

template <int WARP>
static cudaError_t launch_rows(const mb_row_prog *prog, int sm_count, cudaStream_t s, int *grid_out)
{
    const size_t smem = mb_cuda_row_smem(prog, WARP);
    void (*const kernel)(const mb_row_prog) = prog->blocks > 0 ? row_part_kernel<WARP> : row_eval_kernel<WARP>;
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    int b = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, MB_CUDA_THREADS, smem);
    if (e != cudaSuccess) return e;
    const int64_t per_block = WARP ? ROW_WARPS : 1;
    /* partial sums: one row group for each block of them (Liger's grid of sm_count) */
    const int64_t want = ((prog->blocks > 0 ? prog->blocks : prog->rows) + per_block - 1) / per_block;
    const int64_t full = (int64_t)(sm_count > 0 ? sm_count : 1) * (b > 0 ? b : 1);
    const int grid = (int)(want < full || prog->blocks > 0 ? (want < 1 ? 1 : want) : full);
    kernel<<<grid, MB_CUDA_THREADS, smem, s>>>(*prog);
    if (grid_out) *grid_out = grid;
    return cudaGetLastError();
}

cudaError_t mb_cuda_row_launch(const mb_row_prog *prog, int sm_count, cudaStream_t s, int *grid_out)
{
    if (prog->n_slots > MB_ROW_MAX_SLOTS || prog->n_stats > MB_ROW_MAX_STATS || prog->passes > 30)
        return cudaErrorInvalidValue;
    return prog->cols <= MB_ROW_WARP_MAX_COLS ? launch_rows<1>(prog, sm_count, s, grid_out)
                                              : launch_rows<0>(prog, sm_count, s, grid_out);
}
