/* test_model_gemm.c — the model of a GEMM (model/gemm.c) against counts
 * made by hand: FLOPs and bytes of square, skinny and batched products,
 * tile and wave quantization, the tiled traffic beyond the L2, the bound of
 * a 4096^3 GEMM and of a GEMV on the H100, the ridge, a CPU spec's measured
 * rate and the errors. h100-sxm: 132 SMs, 50 MiB L2, 2680 GB/s measured
 * (0.80 x 3350), FP32 66.9 and BF16 989.4 TFLOP/s (794.5 a measured GEMM), 3 us a launch. */
#include "membound_model.h"
#include "mb_test.h"

#include <string.h>

static mb_device dev(const char *name)
{
    mb_device d;
    mb_err e;
    memset(&d, 0, sizeof d);
    if (mb_device_find(name, &d, &e)) fprintf(stderr, "%s\n", e.msg);
    return d;
}

static mb_gemm_est est(const mb_device *d, int64_t m, int64_t n, int64_t k, int64_t batch, mb_dtype t, int tm,
                       int tn)
{
    mb_gemm g = {m, n, k, batch, t, tm, tn};
    mb_gemm_est e;
    mb_err err;
    memset(&e, 0, sizeof e);
    int rc = mb_gemm_estimate(&g, d, &e, &err);
    if (rc) fprintf(stderr, "gemm %lldx%lldx%lld: %s\n", (long long)m, (long long)n, (long long)k, err.msg);
    CHECK(rc == MB_OK);
    return e;
}

int main(void)
{
    const mb_device h100 = dev("h100-sxm");
    CHECK(!strcmp(h100.name, "h100-sxm"));

    /* 4096^3 bf16 at 128x128: 32 x 32 = 1024 tiles, 8 waves of 132 (the
     * last 100 of 132: eff_wave 1024 / 1056); A + B = 64 MiB exceed the L2,
     * but a band of 11 tile rows (11.5 MB) stays beside B (33.5 MB): every
     * operand once */
    mb_gemm_est e = est(&h100, 4096, 4096, 4096, 1, MB_BF16, 128, 128);
    CHECK_NEAR(e.flops, 137438953472.0, 1e-12);
    CHECK_NEAR(e.min_bytes, 100663296.0, 1e-12);
    CHECK_EQ_I64(e.tiles, 1024);
    CHECK_EQ_I64(e.waves, 8);
    CHECK_NEAR(e.eff_wave, 1024.0 / 1056.0, 1e-12);
    CHECK_NEAR(e.eff_tile, 1.0, 1e-12);
    CHECK_EQ_I64(e.band_rows, 11);
    CHECK_EQ_I64(e.band_cols, 12);
    CHECK_NEAR(e.dram_read_bytes + e.dram_write_bytes, 100663296.0, 1e-12);
    /* at the measured large-GEMM rate (794.5 TF, MAMF), not the datasheet's 989.4 */
    CHECK_NEAR(e.peak_flops_s, 794.5e12, 1e-12);
    CHECK(!strcmp(e.peak_key, "bf16_gemm_tflops"));
    CHECK_NEAR(e.compute_s, 137438953472.0 / (794.5e12 * 1024.0 / 1056.0), 1e-9);
    CHECK_NEAR(e.mem_s, 100663296.0 / 2680e9, 1e-9);
    CHECK_NEAR(e.time_s, 3e-6 + e.compute_s, 1e-9);
    CHECK(e.bound == MB_BOUND_COMPUTE);
    /* the model's own tile is never slower than a fixed one */
    mb_gemm_est best = est(&h100, 4096, 4096, 4096, 1, MB_BF16, 0, 0);
    for (int i = 0; i < MB_GEMM_N_TILES; i++)
        CHECK(best.time_s <= est(&h100, 4096, 4096, 4096, 1, MB_BF16, mb_gemm_tiles[i][0], mb_gemm_tiles[i][1]).time_s);
    CHECK(best.bound == MB_BOUND_COMPUTE);

    /* 4096^3 f32: the plain FP32 peak (PyTorch leaves TF32 off), compute-bound */
    e = est(&h100, 4096, 4096, 4096, 1, MB_F32, 0, 0);
    CHECK(!strcmp(e.peak_key, "fp32_tflops"));
    CHECK_NEAR(e.peak_flops_s, 66.9e12, 1e-12);
    CHECK(e.bound == MB_BOUND_COMPUTE);

    /* GEMV: [4096, 4096] @ [4096, 1] f32 reads A once (64 MiB), B and C
     * 16 KiB each: 0.5 FLOP/B, far under the ridge; memory-bound. The
     * narrow side takes a tile one column wide (FP32 on the CUDA cores). */
    e = est(&h100, 4096, 1, 4096, 1, MB_F32, 0, 0);
    CHECK_NEAR(e.flops, 33554432.0, 1e-12);
    CHECK_NEAR(e.dram_read_bytes, 67108864.0 + 16384.0, 1e-12);
    CHECK_NEAR(e.dram_write_bytes, 16384.0, 1e-12);
    CHECK_EQ_I64(e.tile_n, 1);
    CHECK_NEAR(e.intensity, 33554432.0 / 67141632.0, 1e-12);
    CHECK_NEAR(e.mem_s, 67141632.0 / 2680e9, 1e-9);
    CHECK(e.bound == MB_BOUND_MEMORY);
    /* in bf16 the tensor cores' 8-wide tile: eff_tile 1/8; still memory-bound */
    e = est(&h100, 4096, 1, 4096, 1, MB_BF16, 0, 0);
    CHECK_EQ_I64(e.tile_n, 8);
    CHECK_NEAR(e.eff_tile, 1.0 / 8.0, 1e-12);
    CHECK_NEAR(e.dram_read_bytes + e.dram_write_bytes, 2.0 * (4096.0 * 4096 + 4096 + 4096), 1e-12);
    CHECK(e.bound == MB_BOUND_MEMORY);

    /* wave quantization: 1536 x 1408 at 128x128 is 12 x 11 = 132 tiles, one
     * full wave; 896 x 2432 is 7 x 19 = 133 tiles, one more than a wave:
     * 2 waves for 0.8% more work, ~2x the time */
    mb_gemm_est w1 = est(&h100, 1536, 1408, 4096, 1, MB_BF16, 128, 128);
    mb_gemm_est w2 = est(&h100, 896, 2432, 4096, 1, MB_BF16, 128, 128);
    CHECK_EQ_I64(w1.tiles, 132);
    CHECK_EQ_I64(w1.waves, 1);
    CHECK_NEAR(w1.eff_wave, 1.0, 1e-12);
    CHECK_EQ_I64(w2.tiles, 133);
    CHECK_EQ_I64(w2.waves, 2);
    CHECK_NEAR(w2.eff_wave, 133.0 / 264.0, 1e-12);
    CHECK(w1.bound == MB_BOUND_COMPUTE && w2.bound == MB_BOUND_COMPUTE);
    CHECK_NEAR(w2.compute_s / w1.compute_s, 2.0 * (896.0 * 2432) / (1536.0 * 1408) * 132 / 133, 1e-9);
    CHECK(w2.compute_s / w1.compute_s > 1.95 && w2.compute_s / w1.compute_s < 2.05);

    /* tile quantization: 129 x 129 at 128x128 pads to 256 x 256 */
    e = est(&h100, 129, 129, 4096, 1, MB_BF16, 128, 128);
    CHECK_EQ_I64(e.tiles, 4);
    CHECK_NEAR(e.eff_tile, 129.0 * 129.0 / (256.0 * 256.0), 1e-12);

    /* batched: 64 products of 512 x 512 x 64 in f16 are 64 x 16 tiles at
     * 128x128 (8 waves, the last 100 of 132), each product's bytes once */
    e = est(&h100, 512, 512, 64, 64, MB_F16, 128, 128);
    CHECK_NEAR(e.flops, 2.0 * 512 * 512 * 64 * 64, 1e-12);
    CHECK_NEAR(e.min_bytes, 64.0 * 2 * (512.0 * 64 + 64.0 * 512 + 512.0 * 512), 1e-12);
    CHECK_NEAR(e.dram_read_bytes + e.dram_write_bytes, e.min_bytes, 1e-12);
    CHECK_EQ_I64(e.tiles, 1024);
    CHECK_EQ_I64(e.waves, 8);
    CHECK(!strcmp(e.peak_key, "bf16_gemm_tflops")); /* h100: FP16 as BF16 */
    /* a row without a measured GEMM rate takes the datasheet's dense peak */
    const mb_device pcie = dev("h100-pcie");
    CHECK(pcie.bf16_gemm_tflops == 0);
    e = est(&pcie, 4096, 4096, 4096, 1, MB_BF16, 128, 128);
    CHECK(!strcmp(e.peak_key, "bf16_tflops"));
    CHECK_NEAR(e.peak_flops_s, pcie.bf16_tflops * 1e12, 1e-12);

    /* beyond the L2: 8192^3 bf16 at 128x128, 64 x 64 tiles, waves of 11 x 12:
     * A's band (11 x 128 x 8192 x 2 = 23 MB) and a wave's B panels (25 MB)
     * fit the 52.4 MB L2: A once; B (134 MB) does not: once a band, 6 times */
    e = est(&h100, 8192, 8192, 8192, 1, MB_BF16, 128, 128);
    const double op = 2.0 * 8192 * 8192;
    CHECK_NEAR(e.a_reads, 1.0, 1e-12);
    CHECK_NEAR(e.b_reads, 6.0, 1e-12);
    CHECK_NEAR(e.dram_read_bytes, 7.0 * op, 1e-12);
    CHECK_NEAR(e.dram_write_bytes, op, 1e-12);
    CHECK(e.bound == MB_BOUND_COMPUTE);
    /* a GPU with a 4 MiB L2 (t4, f16 at 65 TF): the band does not fit
     * either: A once a wave too */
    const mb_device t4 = dev("t4");
    e = est(&t4, 8192, 8192, 8192, 1, MB_F16, 128, 128);
    CHECK(!strcmp(e.peak_key, "f16_tflops"));
    CHECK_NEAR(e.peak_flops_s, 65e12, 1e-12);
    CHECK_EQ_I64(e.band_rows, 6);
    CHECK_EQ_I64(e.band_cols, 6);
    CHECK_NEAR(e.a_reads, 11.0, 1e-12); /* ceil(64 / 6) */
    CHECK_NEAR(e.b_reads, 11.0, 1e-12);

    /* the ridge and the square crossover: bf16 794.5e12 / 2680e9 FLOP/B,
     * met by an n^3 product of least traffic at n = 1.5 x 2 x ridge */
    CHECK_NEAR(mb_gemm_ridge(&h100, MB_BF16), 794.5e12 / 2680e9, 1e-12);
    CHECK_NEAR(mb_gemm_ridge(&h100, MB_F32), 66.9e12 / 2680e9, 1e-12);
    e = est(&h100, 2048, 2048, 2048, 1, MB_BF16, 0, 0);
    CHECK_NEAR(e.square_crossover, 3.0 * 794.5e12 / 2680e9, 1e-12);
    /* either side of the ridge (296 FLOP/B): 2048^3 (683 FLOP/B at least
     * traffic) compute-bound; 4096 x 4096 x 64 (62 FLOP/B) memory-bound */
    CHECK(e.bound == MB_BOUND_COMPUTE);
    e = est(&h100, 4096, 4096, 64, 1, MB_BF16, 0, 0);
    CHECK_NEAR(e.intensity, 2.0 * 4096 * 4096 * 64 / (2.0 * (2 * 4096.0 * 64 + 4096.0 * 4096)), 1e-12);
    CHECK(e.bound == MB_BOUND_MEMORY);

    /* no rate: bf16 on a V100 is an error naming the key */
    const mb_device v100 = dev("v100");
    mb_gemm g = {1024, 1024, 1024, 1, MB_BF16, 0, 0};
    mb_err err;
    CHECK(mb_gemm_estimate(&g, &v100, &e, &err) == MB_EINPUT);
    CHECK(strstr(err.msg, "bf16_tflops") != NULL);
    g.dtype = MB_F16;
    CHECK(mb_gemm_estimate(&g, &v100, &e, &err) == MB_OK && !strcmp(e.peak_key, "f16_tflops"));
    /* bad sizes and tiles */
    mb_gemm bad = {0, 4, 4, 1, MB_F32, 0, 0};
    CHECK(mb_gemm_estimate(&bad, &h100, &e, &err) == MB_EINPUT);
    mb_gemm huge = {(int64_t)1 << 40, (int64_t)1 << 40, 4, 1, MB_F32, 0, 0};
    CHECK(mb_gemm_estimate(&huge, &h100, &e, &err) == MB_EINPUT);
    mb_gemm tile = {64, 64, 64, 1, MB_F32, 96, 96};
    CHECK(mb_gemm_estimate(&tile, &h100, &e, &err) == MB_EINPUT && strstr(err.msg, "96x96"));

    /* a CPU spec: no tiles; OpenBLAS's blocking (gemm.c): register tiles of
     * 16 x 4, C's passes per K block of 448 beyond the L2, A's packed panel
     * spilled beyond the L2; the kernel's rate is gemm_gflops less the
     * calibration shape's memory time, else the FMA peak */
    mb_device cpu = h100;
    snprintf(cpu.kind, sizeof cpu.kind, "cpu");
    cpu.fp32_tflops = 0.4;
    cpu.launch_overhead_us = 10;
    cpu.cache_mb = 32;
    cpu.cache_resident_mb = 0;
    cpu.sm_count = 1;
    cpu.onchip_kib = 2048;
    mb_device_set(&cpu, MB_DK_mem_bandwidth_gbs, 10);
    mb_device_set(&cpu, MB_DK_measured_bandwidth_gbs, 10);
    CHECK_NEAR(mb_device_bandwidth_gbs(&cpu, NULL), 10, 1e-12);
    const double F1024 = 2.0 * 1024 * 1024 * 1024;
    /* 1024^3: C (4 MiB) beyond the 2 MiB L2 crosses DRAM 1 + 2 x 3 times (K
     * blocks 448, 288, 288); A's panel, 448 x 1024 x 4 B, fits: no spill.
     * Reads A + B + 3 C, writes 4 C: 37748736 B, 3.77 ms at 10 GB/s */
    e = est(&cpu, 1024, 1024, 1024, 1, MB_F32, 0, 0);
    CHECK(!strcmp(e.peak_key, "fp32_tflops") && !e.tiled);
    CHECK(e.k_blocks == 3 && e.c_passes == 7 && e.pack_spill_bytes == 0);
    CHECK_NEAR(e.dram_read_bytes, 4.0 * 1048576 * 5, 1e-12);
    CHECK_NEAR(e.dram_write_bytes, 4.0 * 1048576 * 4, 1e-12);
    /* the FMA peak's 5.37 ms less 3.78 ms leaves less than half: the rate whole */
    CHECK_NEAR(e.kernel_flops_s, 0.4e12, 1e-12);
    CHECK_NEAR(e.time_s, 10e-6 + F1024 / 0.4e12 + 37748736 / 10e9, 1e-9);
    /* with gemm_gflops the calibration's own shape takes its calibrated time */
    mb_device_set(&cpu, MB_DK_gemm_gflops, 100);
    e = est(&cpu, 1024, 1024, 1024, 1, MB_BF16, 0, 0);
    CHECK(!strcmp(e.peak_key, "gemm_gflops"));
    CHECK_NEAR(e.kernel_flops_s, F1024 / (F1024 / 100e9 - 37748736 / 10e9 - 10e-6), 1e-9);
    CHECK_NEAR(e.time_s, F1024 / 100e9, 1e-9);
    /* skinny K: one K block; C (64 MiB) zeroed, read, written */
    e = est(&cpu, 4096, 4096, 64, 1, MB_F32, 0, 0);
    CHECK(e.k_blocks == 1 && e.c_passes == 3 && e.efficiency == 1);
    CHECK_NEAR(e.dram_read_bytes, 2097152.0 + 67108864, 1e-12);
    CHECK_NEAR(e.dram_write_bytes, 2.0 * 67108864, 1e-12);
    CHECK_NEAR(e.time_s, 10e-6 + 2.0 * 4096 * 4096 * 64 / e.kernel_flops_s + (2097152.0 + 3 * 67108864) / 10e9,
               1e-9);
    /* a GEMV: one lane of 16 busy; A's panel (448 x 8192 x 4 B) spills: A
     * read, its packed copy read for ownership and written back */
    e = est(&cpu, 8192, 1, 8192, 1, MB_F32, 0, 0);
    CHECK_NEAR(e.efficiency, 1.0 / 16, 1e-15);
    CHECK(e.c_passes == 1);
    CHECK_NEAR(e.pack_spill_bytes, 2.0 * 4 * 8192 * 8192, 1e-12);
    CHECK_NEAR(e.dram_read_bytes, 2.0 * 268435456 + 32768, 1e-12);
    CHECK_NEAR(e.dram_write_bytes, 268435456.0 + 32768, 1e-12);
    CHECK(e.bound == MB_BOUND_MEMORY);
    /* partial register tiles: 6 x 20 on 8 x 32 */
    e = est(&cpu, 6, 20, 100, 1, MB_F32, 0, 0);
    CHECK_NEAR(e.efficiency, 120.0 / 256, 1e-15);
    /* K blocks as level3.c splits k: Q while 2Q remain, then halves rounded to 16 */
    const int64_t ks[][2] = {{64, 1}, {448, 1}, {449, 2}, {512, 2}, {896, 2}, {897, 3}, {4096, 10}};
    for (int i = 0; i < 7; i++) CHECK(est(&cpu, 4096, 4096, ks[i][0], 1, MB_F32, 0, 0).k_blocks == ks[i][1]);
    /* a batch: a call per product, bytes x batch */
    mb_gemm_est one = est(&cpu, 512, 512, 64, 1, MB_F32, 0, 0);
    e = est(&cpu, 512, 512, 64, 32, MB_F32, 0, 0);
    CHECK_NEAR(e.launch_s, 32 * 10e-6, 1e-12);
    CHECK_NEAR(e.dram_read_bytes + e.dram_write_bytes, 32 * (one.dram_read_bytes + one.dram_write_bytes), 1e-12);
    CHECK_NEAR(e.time_s, 32 * one.time_s, 1e-9);
    /* C within the L2 crosses DRAM once: 512 x 512 x 4 B = 1 MiB */
    CHECK(one.c_passes == 1);
    return mb_test_done();
}
