/* mb_gemm.h — the model of one matrix multiply C[m,n] = A[m,k] @ B[k,n]
 * (batched: batch independent products, as torch.bmm): FLOPs, the rate its
 * dtype runs at, tile and wave quantization, DRAM bytes from the tiling,
 * roofline time and the crossover. Does not parse the language's `@` (the
 * variant language) or run a GEMM (kernels/, calibrate/). */
#ifndef MB_GEMM_H
#define MB_GEMM_H

#include "mb_base.h"
#include "mb_device.h"
#include "mb_traffic.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One product: C[m,n] = A[m,k] @ B[k,n], batch times; A, B and C in dtype
 * (f32 accumulation). tile_m, tile_n: the output tile, 0 for the model's
 * choice (the one of least time among MB_GEMM_TILES; on a tie the one of
 * fewer DRAM bytes, then of less compute, then the larger). */
typedef struct mb_gemm {
    int64_t m, n, k, batch;
    mb_dtype dtype;
    int tile_m, tile_n;
} mb_gemm;

/* The output tiles a GPU GEMM chooses among: NVIDIA's "Matrix Multiplication
 * Background" guide's list of cuBLAS thread-block tiles, largest first. */
#define MB_GEMM_N_TILES 8
extern const int mb_gemm_tiles[MB_GEMM_N_TILES][2];

/* The shape calibrate times a CPU's gemm_gflops at (calibrate/cal_int.h's
 * MB_CAL_GEMM_N^3): the CPU model takes the blocking's traffic at this shape
 * out of the calibrated time to find the kernel's own rate. */
#define MB_GEMM_CPU_CAL_N 1024

/* OpenBLAS 0.3.21's SGEMM blocking on AVX-512 (param.h, SKYLAKEX, x86_64;
 * kernel/x86_64/KERNEL.SKYLAKEX: sgemm_kernel_16x4_skylakex_3.c): the
 * register tile (16 along C's columns, 4 along its rows, as a row-major
 * product is the column-major C^T = B^T A^T to OpenBLAS), the K block Q and
 * the block P of B's columns packed at a time. */
#define MB_GEMM_CPU_MR 16
#define MB_GEMM_CPU_NR 4
#define MB_GEMM_CPU_Q 448
#define MB_GEMM_CPU_P 448

/* What the model says of one product on one device. Units in the names;
 * bytes in B, rates in FLOP/s. */
typedef struct mb_gemm_est {
    double flops;             /* 2 m n k batch */
    double peak_flops_s;      /* the rate the dtype runs at on the device */
    const char *peak_key;     /* the device key it comes from (static) */
    int tiled;                /* 1: tile and wave quantization apply (a GPU spec) */
    int tile_m, tile_n;       /* the output tile (tiled) */
    int64_t tiles;            /* over the batch */
    int64_t wave_tiles;       /* tiles in flight at once: one per SM */
    int64_t waves;
    double eff_tile;          /* m n / the tiles' padded area */
    double eff_wave;          /* tiles / (waves x wave_tiles) */
    double efficiency;        /* their product: the share of the peak the math gets */
    double a_bytes, b_bytes, c_bytes; /* each operand once */
    double min_bytes;         /* A, B and C once: their sum x batch */
    int64_t band_rows, band_cols; /* the tiles of a wave: tile rows x tile columns */
    double a_reads, b_reads;  /* times A and B come from DRAM per product */
    double dram_read_bytes, dram_write_bytes;
    double intensity;         /* flops / DRAM bytes */
    double bandwidth_gbs;     /* what the memory term divides by */
    const char *bandwidth_source; /* "measured", "derived" or "datasheet" (static) */
    double ridge;             /* peak_flops_s / bandwidth: FLOP/B where compute and memory cross */
    double square_crossover;  /* the n of an n x n x n product whose least traffic meets the ridge */
    double compute_s, mem_s, launch_s, time_s;
    mb_bound bound;
    /* a CPU spec (tiled = 0) only: OpenBLAS's blocking (gemm.c) */
    double kernel_flops_s;    /* the kernel's rate: gemm_gflops less the calibration shape's traffic */
    int64_t k_blocks;         /* K blocks of Q: C is read and written once each */
    double c_passes;          /* times C crosses DRAM (the zeroing pass and the K blocks; 1 in cache) */
    double pack_spill_bytes;  /* A's packed panel written back and read for ownership when beyond the L2 */
} mb_gemm_est;

/* The rate dtype's GEMM runs at on d, FLOP/s, and the key it comes from in
 * *key (static; may be NULL). GPU: f32 at fp32_tflops (PyTorch leaves TF32
 * off for matmul), bf16 at bf16_gemm_tflops (a measured large GEMM) else
 * bf16_tflops, f16 at f16_tflops else as bf16. CPU: gemm_gflops (measured through the BLAS) for every dtype,
 * else fp32_tflops. 0 when the device has no such rate (bf16 on a V100). */
double mb_gemm_peak_flops(const mb_device *d, mb_dtype dtype, const char **key);

/* 1 when the rate of key (mb_gemm_peak_flops's) was measured (a large GEMM's
 * bf16_gemm_tflops, a CPU's calibrated gemm_gflops), 0 for a datasheet's
 * peak: tables that set devices side by side say which. */
int mb_gemm_peak_measured(const char *key);

/* The ridge of dtype's GEMM on d, FLOP per DRAM byte: its peak over the
 * bandwidth the model uses; 0 when there is no peak. */
double mb_gemm_ridge(const mb_device *d, mb_dtype dtype);

/* Estimates g on d into *out. MB_EINPUT (with the reason) for a size below
 * 1, a product beyond 2^62 elements, a tile not in MB_GEMM_TILES, or a device
 * without a rate for the dtype; *out is written only on success. */
int mb_gemm_estimate(const mb_gemm *g, const mb_device *d, mb_gemm_est *out, mb_err *err);

#ifdef __cplusplus
}
#endif

#endif
