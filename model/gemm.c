/* gemm.c — the model of one (batched) matrix multiply C = A @ B on a device.
 * Does not parse `@` (the language) nor run a GEMM (calibrate/ times the
 * BLAS's; bench/cpu_gemm.py holds the model against it).
 *
 * Work: 2 m n k FLOPs a product (one FMA is 2), batch products.
 *
 * Rate (mb_gemm_peak_flops): a GPU runs f32 at its plain FP32 peak —
 * PyTorch's torch.backends.cuda.matmul.allow_tf32 is False from 1.12 on, so
 * an f32 mm/bmm is an IEEE FP32 SGEMM, not TF32 on the tensor cores
 * (PyTorch's CUDA semantics notes, "TensorFloat-32 (TF32) on Ampere (and
 * later) devices"; turned off after the discussion in pytorch/pytorch#67384)
 * — and bf16 and f16 at the rate a large tensor-core GEMM reaches: the
 * device's bf16_gemm_tflops, measured through PyTorch's matmul at its best
 * shape (the maximum achievable: stas00 ml-engineering's MAMF table, 78-87%
 * of the datasheet on NVIDIA parts, as clocks fall under the tensor cores'
 * power), else the datasheet's dense peak bf16_tflops; f16 at f16_tflops
 * where the table gives one (V100 and T4 have FP16 tensor cores and no
 * BF16). Tile and wave quantization below take their share of it. A CPU spec
 * runs every dtype at gemm_gflops, the f32 GEMM calibrate measured through
 * the BLAS (cblas_sgemm: Debian's OpenBLAS exports no bf16 GEMM, so 16-bit
 * products are widened to f32 first), else at its FMA peak.
 *
 * Tile and wave quantization (NVIDIA, "Matrix Multiplication Background
 * User's Guide", DU-09799-001, sec. 3.1 and 3.2 [G9]): cuBLAS splits C into
 * thread-block tiles Mt x Nt from the guide's list (mb_gemm_tiles); the
 * tiles that overhang C's edges compute padding (tile quantization:
 * eff_tile = m n / (ceil(m/Mt) Mt ceil(n/Nt) Nt)), and the tiles run in
 * waves of one tile per SM (the guide's illustration: one 256x128 block per
 * SM), so a last, partial wave costs a whole one (wave quantization:
 * eff_wave = tiles / (ceil(tiles / SMs) SMs); 133 tiles on 132 SMs take 2
 * waves). The math runs at peak x eff_tile x eff_wave. A side of C narrower
 * than 64 (a GEMV, a skinny product) takes a tile that narrow, rounded up to
 * the instruction's width: 8 for the tensor cores' mma.m16n8k16 (PTX ISA;
 * cuBLAS swaps operands, so the 8 applies to either side), 1 for FP32 on the
 * CUDA cores (a thread per output). With no tile given the model takes the
 * list's tile of least time; on a tie the one of fewer DRAM bytes, then of
 * less compute (a memory-bound product's), then the larger (larger tiles
 * reuse more, the guide says). Not modelled: how much
 * less efficient a small tile's inner loop is (the guide gives no figure),
 * several blocks per SM, split-K, and a small K's prologue and epilogue;
 * small shapes pay the launch and the waves they leave empty.
 *
 * DRAM bytes from the tiling (gemm-attention-host.md 3.3, derived): C is
 * written once (PyTorch's mm has beta = 0: C is not read). A tile reads its
 * A panel (Mt x k) and its B panel (k x Nt); whether a re-read reaches DRAM
 * is the cache-aware rule of dram.c applied to the tiles' order. The tiles
 * of a wave form a block of a tile rows x b tile columns (a = the square
 * root of the SMs, b the rest, each at most the product's): CUTLASS's
 * threadblock swizzle maps consecutive blocks onto a compact 2-D region "to
 * maximize reuse of data held in the last level cache" (CUTLASS,
 * media/docs/efficient_gemm.md, "Threadblock Rasterization"); the waves
 * sweep along n within the band of a tile rows. Then A and B are read once
 * when they fit the last-level cache together (mb_device_cache_bytes: the
 * resident figure where the spec has one); else A once when its band's
 * panels (a Mt x k) stay cached beside one wave's B panels (b Nt x k) — a
 * tile row's reuse stays in the L2 — else once a wave, ceil(tiles_n / b)
 * times; and B once when it fits beside a band's A panels, else once a
 * band, ceil(tiles_m / a) times (h100-sxm, bf16, 8192^3 at 128x128: 11 x 12
 * tiles a wave, A once, B 6 times: 1.07 GB against 0.40 GB least). A
 * product whose tiles all run in one wave reads each operand once (the
 * re-reads are concurrent).
 *
 * A CPU spec: OpenBLAS's GotoBLAS blocking (Goto and van de Geijn, "Anatomy
 * of High-Performance Matrix Multiplication", ACM TOMS 34(3), 2008; OpenBLAS
 * 0.3.21 driver/level3/level3.c and param.h's SKYLAKEX sizes, mb_gemm.h's
 * MB_GEMM_CPU_*). A row-major C = A B is, to OpenBLAS, the column-major
 * C^T = B^T A^T: its register tile is 16 of C's columns by 4 of its rows,
 * its K block Q = 448, and it packs A in panels of Q x (all of A's rows).
 * Three rules, each a serial phase of the one sgemm call:
 *   register tiles: the kernel computes whole 16 x 4 tiles, so the math
 *     runs at the kernel's rate x m n / (ceil(n/16) 16 ceil(m/4) 4) (eff_tile;
 *     a GEMV, n = 1, at 1/16: one lane of sixteen);
 *   C's passes: with beta = 0 OpenBLAS first zeroes C (its BETA pass) and
 *     its kernel then adds into C once per K block (level3.c's split of k:
 *     blocks of Q while 2Q remain, the rest in two halves rounded to 16):
 *     C crosses DRAM 1 + 2 x blocks times (written, then read and written a
 *     block) when it is larger than the threads' L2 (onchip_kib x sm_count),
 *     once otherwise;
 *   packing: A and B are read from DRAM once each; the packed copy of A, a
 *     Q x m panel, stays in the L2 when it fits (onchip_kib x sm_count), and
 *     when it does not its writes reach DRAM (written back, and read for
 *     ownership first: 2 x the A panel's bytes, every K block: 2 |A|).
 *     The last-level cache is not credited: a VM's reported LLC is not the
 *     size that holds (calibrate's knee is that).
 * The three run one after the other on each thread (pack, then the kernel,
 * then the next block), so time = launch + compute + memory, not their
 * maximum; the kernel's rate is calibrate's gemm_gflops with this model's
 * memory time at its declared shape (MB_GEMM_CPU_CAL_N^3) taken out of the
 * calibrated time. The BLAS moves f32 (4 B) whatever the dtype: bf16 and f16
 * run widened to f32, and the widening is not counted.
 *
 * Time (GPU): launch + max(compute, memory), the roofline (a GPU hides one behind
 * the other); the
 * ridge is peak / bandwidth, and a square product of least traffic,
 * 2 n^3 / (3 n^2 s) FLOP/B, meets it at n = 1.5 s ridge (h100-sxm bf16:
 * 794.5e12 / 2680e9 = 296 FLOP/B, n = 889). */
#include "model_int.h"
#include "mb_gemm.h"

#include <math.h>
#include <string.h>

const int mb_gemm_tiles[MB_GEMM_N_TILES][2] = {
    {256, 128}, {128, 256}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128}, {64, 64},
};

static int is_cpu(const mb_device *d) { return !strcmp(d->kind, "cpu"); }

double mb_gemm_peak_flops(const mb_device *d, mb_dtype dtype, const char **key)
{
    const char *k = "fp32_tflops";
    double v = d->fp32_tflops * 1e12;
    if (is_cpu(d)) {
        if (d->gemm_gflops > 0) k = "gemm_gflops", v = d->gemm_gflops * 1e9;
    } else if (dtype == MB_F16 && d->f16_tflops > 0) {
        k = "f16_tflops", v = d->f16_tflops * 1e12;
    } else if (dtype == MB_BF16 || dtype == MB_F16) {
        if (d->bf16_gemm_tflops > 0) k = "bf16_gemm_tflops", v = d->bf16_gemm_tflops * 1e12;
        else k = "bf16_tflops", v = d->bf16_tflops * 1e12;
    }
    if (key) *key = k;
    return v > 0 ? v : 0;
}

int mb_gemm_peak_measured(const char *key)
{
    return key && (!strcmp(key, "bf16_gemm_tflops") || !strcmp(key, "gemm_gflops"));
}

double mb_gemm_ridge(const mb_device *d, mb_dtype dtype)
{
    double peak = mb_gemm_peak_flops(d, dtype, NULL);
    return peak > 0 ? peak / (mb_device_bandwidth_gbs(d, NULL) * 1e9) : 0;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* A side of C narrower than 64 takes a tile side that narrow, rounded up to
 * the instruction's width g. */
static int narrow(int side, int64_t dim, int g)
{
    if (dim >= 64 || dim >= side) return side;
    return (int)(ceil_div(dim, g) * g);
}

/* OpenBLAS's split of k into K blocks (level3.c): Q while 2Q or more
 * remain, the rest (between Q and 2Q) in halves rounded up to 16, the last
 * (at most Q) whole */
static int64_t cpu_k_blocks(int64_t k)
{
    int64_t blocks = 0;
    for (int64_t left = k; left > 0; blocks++) {
        int64_t l = left;
        if (l >= 2 * MB_GEMM_CPU_Q) l = MB_GEMM_CPU_Q;
        else if (l > MB_GEMM_CPU_Q) l = (l / 2 + MB_GEMM_CPU_MR - 1) / MB_GEMM_CPU_MR * MB_GEMM_CPU_MR;
        left -= l;
    }
    return blocks;
}

typedef struct cpu_cost {
    double eff_reg, c_passes, spill_bytes, read_bytes, write_bytes;
    int64_t k_blocks;
} cpu_cost;

/* The blocking's rules (the header comment) for one product of m x n x k,
 * f32, on a spec whose threads hold l2_bytes of L2 together. */
static cpu_cost cpu_cost_of(int64_t m, int64_t n, int64_t k, double l2_bytes)
{
    const double s = 4, M = (double)m, N = (double)n, K = (double)k;
    cpu_cost c;
    c.eff_reg = M * N / ((double)(ceil_div(n, MB_GEMM_CPU_MR) * MB_GEMM_CPU_MR) *
                         (double)(ceil_div(m, MB_GEMM_CPU_NR) * MB_GEMM_CPU_NR));
    c.k_blocks = cpu_k_blocks(k);
    const double c_bytes = s * M * N;
    c.c_passes = c_bytes > l2_bytes ? 1.0 + 2.0 * (double)c.k_blocks : 1.0;
    const double q = K < MB_GEMM_CPU_Q ? K : MB_GEMM_CPU_Q;
    c.spill_bytes = s * q * M > l2_bytes ? 2.0 * s * M * K : 0.0;
    /* reads: A, B, C's re-reads, the packed panel's reads for ownership;
     * writes: C's, the packed panel's */
    const double c_reads = c.c_passes > 1 ? (double)c.k_blocks : 0.0;
    c.read_bytes = s * M * K + s * K * N + c_reads * c_bytes + c.spill_bytes / 2;
    c.write_bytes = (c.c_passes - c_reads) * c_bytes + c.spill_bytes / 2;
    return c;
}

/* The kernel's own rate: calibrate's gemm_gflops is a whole sgemm of
 * MB_GEMM_CPU_CAL_N^3 on sm_count threads; its memory time (the rules above
 * at that shape) and the launch come out of its time. When they would leave
 * less than half of it (a spec whose bandwidth is far too low for its rate),
 * the rate is taken whole. */
static double cpu_kernel_rate(const mb_device *d, double peak, double bw_gbs, double l2_bytes)
{
    const int64_t n = MB_GEMM_CPU_CAL_N;
    const double flops = 2.0 * (double)n * n * n, t = flops / peak;
    const cpu_cost c = cpu_cost_of(n, n, n, l2_bytes);
    const double rest = t - (c.read_bytes + c.write_bytes) / (bw_gbs * 1e9) - d->launch_overhead_us * 1e-6;
    return rest >= 0.5 * t ? flops / rest : peak;
}

/* The estimate at tile mt x nt (a GPU spec) or untiled (a CPU spec). */
static void estimate_at(const mb_gemm *g, const mb_device *d, double peak, int mt, int nt, mb_gemm_est *e)
{
    const double s = (double)mb_dtype_bytes(g->dtype);
    const double M = (double)g->m, N = (double)g->n, K = (double)g->k, batch = (double)g->batch;
    e->a_bytes = s * M * K;
    e->b_bytes = s * K * N;
    e->c_bytes = s * M * N;
    e->min_bytes = batch * (e->a_bytes + e->b_bytes + e->c_bytes);
    e->a_reads = e->b_reads = 1;
    e->efficiency = e->eff_tile = e->eff_wave = 1;
    e->tiled = !is_cpu(d);
    e->tile_m = e->tile_n = 0;
    e->tiles = e->waves = e->wave_tiles = e->band_rows = e->band_cols = 0;
    if (e->tiled) {
        const int gw = g->dtype == MB_F32 ? 1 : 8;
        mt = narrow(mt, g->m, gw);
        nt = narrow(nt, g->n, gw);
        const int64_t tm = ceil_div(g->m, mt), tn = ceil_div(g->n, nt), per = tm * tn;
        const int64_t W = d->sm_count >= 1 ? (int64_t)d->sm_count : 1;
        e->tile_m = mt;
        e->tile_n = nt;
        e->tiles = per * g->batch;
        e->wave_tiles = W;
        e->waves = ceil_div(e->tiles, W);
        e->eff_tile = M * N / ((double)tm * mt * (double)tn * nt);
        e->eff_wave = (double)e->tiles / ((double)e->waves * (double)W);
        e->efficiency = e->eff_tile * e->eff_wave;
        /* the tiles in flight: a block of a tile rows x b tile columns
         * (CUTLASS's threadblock swizzle), the wave sweeping along n within
         * its band of a tile rows */
        int64_t a = (int64_t)floor(sqrt((double)W)), b;
        if (a < 1) a = 1;
        if (a > tm) a = tm;
        b = W / a < tn ? W / a : tn;
        if (b < 1) b = 1;
        a = W / b < tm ? W / b : tm;
        if (a < 1) a = 1;
        e->band_rows = a, e->band_cols = b;
        const double cache = mb_device_cache_bytes(d);
        if (e->a_bytes + e->b_bytes > cache) {
            /* A's band stays cached while the waves sweep along n, when it
             * fits beside one wave's B panels; else each wave reads it again */
            if (s * K * ((double)a * mt + (double)b * nt) > cache) e->a_reads = (double)ceil_div(tn, b);
            /* B once when it fits beside a band's A panels; else once a band */
            if (e->b_bytes + s * K * (double)a * mt > cache) e->b_reads = (double)ceil_div(tm, a);
        }
    }
    if (!e->tiled) {
        const double threads = d->sm_count >= 1 ? d->sm_count : 1;
        const double l2 = d->onchip_kib * 1024.0 * threads;
        const cpu_cost c = cpu_cost_of(g->m, g->n, g->k, l2);
        e->kernel_flops_s = cpu_kernel_rate(d, peak, e->bandwidth_gbs, l2);
        e->eff_tile = e->efficiency = c.eff_reg;
        e->k_blocks = c.k_blocks;
        e->c_passes = c.c_passes;
        e->pack_spill_bytes = batch * c.spill_bytes;
        e->a_reads = 1 + c.spill_bytes / 2 / (4.0 * M * K);
        e->dram_read_bytes = batch * c.read_bytes;
        e->dram_write_bytes = batch * c.write_bytes;
        e->compute_s = e->flops / (e->kernel_flops_s * e->efficiency);
        e->mem_s = (e->dram_read_bytes + e->dram_write_bytes) / (e->bandwidth_gbs * 1e9);
        e->launch_s = d->launch_overhead_us * 1e-6 * batch; /* a call per product */
        e->time_s = e->launch_s + e->compute_s + e->mem_s;
        e->bound = mb_bound_of(e->launch_s, e->mem_s, e->compute_s);
        e->intensity = e->flops / (e->dram_read_bytes + e->dram_write_bytes);
        return;
    }
    e->dram_read_bytes = batch * (e->a_reads * e->a_bytes + e->b_reads * e->b_bytes);
    e->dram_write_bytes = batch * e->c_bytes;
    e->compute_s = e->flops / (peak * e->efficiency);
    e->mem_s = (e->dram_read_bytes + e->dram_write_bytes) / (e->bandwidth_gbs * 1e9);
    e->launch_s = d->launch_overhead_us * 1e-6;
    e->time_s = e->launch_s + fmax(e->compute_s, e->mem_s);
    e->bound = mb_bound_of(e->launch_s, e->mem_s, e->compute_s);
    e->intensity = e->flops / (e->dram_read_bytes + e->dram_write_bytes);
}

int mb_gemm_estimate(const mb_gemm *g, const mb_device *d, mb_gemm_est *out, mb_err *err)
{
    if (g->m < 1 || g->n < 1 || g->k < 1 || g->batch < 1)
        return mb_err_set(err, MB_EINPUT, "a GEMM's m, n, k and batch are at least 1 (got %lldx%lldx%lld, batch %lld)",
                          (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch);
    const double lim = 4.611686018427388e18; /* 2^62 elements */
    const double M = (double)g->m, N = (double)g->n, K = (double)g->k, B = (double)g->batch;
    if (B * M * K > lim || B * K * N > lim || B * M * N > lim)
        return mb_err_set(err, MB_EINPUT, "a GEMM of %lldx%lldx%lld, batch %lld, has an operand beyond 2^62 elements",
                          (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch);
    int fixed = g->tile_m || g->tile_n;
    if (fixed) {
        int ok = 0;
        for (int i = 0; i < MB_GEMM_N_TILES; i++)
            ok |= mb_gemm_tiles[i][0] == g->tile_m && mb_gemm_tiles[i][1] == g->tile_n;
        if (!ok)
            return mb_err_set(err, MB_EINPUT, "tile %dx%d is not one of the guide's (256x128, 128x256, 128x128, "
                              "256x64, 64x256, 128x64, 64x128, 64x64)", g->tile_m, g->tile_n);
    }
    const char *key = NULL;
    double peak = mb_gemm_peak_flops(d, g->dtype, &key);
    if (!(peak > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no %s GEMM rate (%s is 0)", d->name,
                          mb_dtype_name(g->dtype), key);
    mb_gemm_est e, best;
    memset(&e, 0, sizeof e);
    e.flops = 2.0 * M * N * K * B;
    e.peak_flops_s = peak;
    e.peak_key = key;
    e.bandwidth_gbs = mb_device_bandwidth_gbs(d, &e.bandwidth_source);
    e.ridge = peak / (e.bandwidth_gbs * 1e9);
    e.square_crossover = 1.5 * (double)mb_dtype_bytes(g->dtype) * e.ridge;
    best = e;
    if (fixed || is_cpu(d)) {
        estimate_at(g, d, peak, g->tile_m, g->tile_n, &best);
    } else {
        for (int i = 0; i < MB_GEMM_N_TILES; i++) {
            estimate_at(g, d, peak, mb_gemm_tiles[i][0], mb_gemm_tiles[i][1], &e);
            const double bytes = e.dram_read_bytes + e.dram_write_bytes;
            const double best_bytes = best.dram_read_bytes + best.dram_write_bytes;
            const int same_time = e.time_s <= best.time_s * (1 + 1e-12);
            if (i == 0 || e.time_s < best.time_s * (1 - 1e-12) || (same_time && bytes < best_bytes) ||
                (same_time && bytes == best_bytes && e.compute_s < best.compute_s * (1 - 1e-12)))
                best = e;
        }
    }
    *out = best;
    return MB_OK;
}
