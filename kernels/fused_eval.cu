/* fused_eval.cu — the fused-kernel evaluator: runs any kernel of any plan (its
 * node list lowered to a small program by cuda_plan.cu) in one launch.
 *   eval_kernel  per thread 4 consecutive elements per iteration: reads loaded
 *                into slots (16-byte f32 / 8-byte bf16, f16 vectors), the
 *                program run on float4 slots, writes stored from slots;
 *                mixed dtypes allowed (each read and write has its own).
 * CPU reference: mb_kern_reference_elem (reference.c), same math (mb_ops.h).
 * The program is a __grid_constant__ parameter: read from the constant bank,
 * uniform across the warp, so the op switch never diverges. Slots are indexed
 * at run time, so they cannot live in registers; they live in dynamic shared
 * memory, n_slots x 16 B per thread, slot s of thread t at [s * blockDim + t]
 * (a warp's float4 accesses are contiguous: no bank conflict). A local-memory
 * array would cost a 512-byte stack frame per thread whose lines can leave
 * L1 and reach L2 (and DRAM, as dirty write-backs the counters would see).
 * The block size shrinks when the slots would not fit 48 KiB per block.
 * It does not pick which kernels it runs (cuda_plan.cu does). */
#include "kernels_cuda_int.cuh"
#include "rows_math.cuh" /* row_load4, row_store4, row_apply4 */

/* 1 when row_apply4 has a case for op (the same walk of op_table.h). */
extern "C" int mb_kern_cuda_eval_has_op(mb_op op)
{
    if (MB_OP_IS_ROW(op)) return 0; /* no row operations in the evaluator */
    switch (op) {
#define MB_CASE(E, ...) case MB_OP_##E: return 1;
        MB_OP_TABLE(MB_CASE)
#undef MB_CASE
    default:
        return 0;
    }
}

/* ---- kernel --------------------------------------------------------------- */

/* Dynamic shared memory: P.n_slots x blockDim.x float4, slot-major. */
__global__ void __launch_bounds__(MB_CUDA_THREADS) eval_kernel(const __grid_constant__ mb_eval_prog P, int64_t n)
{
    extern __shared__ float4 eval_slots[];
    float4 *const slot = eval_slots + threadIdx.x;
    const int sstride = (int)blockDim.x; /* slot s of this thread: slot[s * sstride] */
    const int64_t groups = (n + 3) >> 2;
    const int64_t stride = mb_cuda_stride();
    for (int64_t g = mb_cuda_tid(); g < groups; g += stride) {
        const int64_t i0 = g << 2;
        for (int r = 0; r < P.n_reads; r++)
            slot[P.read_slot[r] * sstride] = row_load4(P.reads[r], P.read_dt[r], 0, i0, n, 1);
        for (int k = 0; k < P.n_ins; k++) {
            const mb_eval_ins in = P.ins[k];
            const float4 imm = make_float4(in.imm, in.imm, in.imm, in.imm);
            const float4 a = in.a == MB_EVAL_IMM ? imm : slot[in.a * sstride];
            const float4 b = in.b == MB_EVAL_IMM ? imm : slot[in.b * sstride];
            slot[in.dst * sstride] = row_apply4(in.op, a, b);
        }
        for (int w = 0; w < P.n_writes; w++)
            row_store4(P.writes[w], P.write_dt[w], 0, i0, n, 1, slot[P.write_slot[w] * sstride]);
    }
}

/* ---- launcher ------------------------------------------------------------- */

/* Shared memory per block the launch may use without an opt-in. */
#define MB_EVAL_SMEM_MAX (48 * 1024)

/* Threads per block for a program of n_slots slots: MB_CUDA_THREADS while
 * n_slots x 16 B x threads fits MB_EVAL_SMEM_MAX (up to 12 slots), else the
 * largest multiple of 32 that does (96 threads at 32 slots). */
static int eval_threads(int n_slots)
{
    const int per_thread = (n_slots > 0 ? n_slots : 1) * (int)sizeof(float4);
    int t = MB_EVAL_SMEM_MAX / per_thread / 32 * 32;
    if (t > MB_CUDA_THREADS) t = MB_CUDA_THREADS;
    return t < 32 ? 32 : t;
}

cudaError_t mb_cuda_eval_launch(const mb_eval_prog *prog, int64_t n, int sm_count, cudaStream_t s, int *grid_out)
{
    if (prog->n_slots < 0 || prog->n_slots > MB_EVAL_MAX_SLOTS) return cudaErrorInvalidValue;
    /* resident blocks per SM, per slot count (the shared memory differs) */
    static int blocks_per_sm[MB_EVAL_MAX_SLOTS + 1];
    const int slots = prog->n_slots > 0 ? prog->n_slots : 1;
    const int threads = eval_threads(slots);
    const size_t smem = (size_t)slots * sizeof(float4) * (size_t)threads;
    if (!blocks_per_sm[slots]) {
        int b = 0;
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, eval_kernel, threads, smem);
        if (e != cudaSuccess) return e;
        blocks_per_sm[slots] = b > 0 ? b : 1;
    }
    /* blocks: enough to fill the device, never more than the work needs */
    const int64_t groups = (n + 3) / 4;
    const int64_t want = (groups + threads - 1) / threads;
    const int64_t full = (int64_t)(sm_count > 0 ? sm_count : 1) * blocks_per_sm[slots];
    const int grid = (int)(want < full ? (want < 1 ? 1 : want) : full);
    eval_kernel<<<grid, threads, smem, s>>>(*prog, n);
    if (grid_out) *grid_out = grid;
    return cudaGetLastError();
}
