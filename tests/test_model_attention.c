/* test_model_attention.c — the model of attention (model/attention.c)
 * against counts made by hand: the kernels, FLOPs and seq x seq bytes of
 * the standard plan, FlashAttention's tiles, bytes and its never writing S
 * or P, causal halving, the cache rule and Theorem 2's count without a
 * cache, the longest sequence per GPU, and the errors. h100-sxm: 132 SMs,
 * 50 MiB L2, 2680 GB/s measured, BF16 989.4 TFLOP/s (794.5 a measured
 * GEMM), SFU 132 x 16 x 1.83 G/s, onchip 484 KiB, 80 GB, 3 us a launch. */
#include "membound_model.h"
#include "cpu_spec.h"
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

static mb_attn_est est(const mb_device *d, int64_t b, int64_t h, int64_t n, int64_t hd, mb_dtype t, int causal,
                       int backward)
{
    mb_attn a = {b, h, n, hd, t, causal, backward};
    mb_attn_est e;
    mb_err err;
    memset(&e, 0, sizeof e);
    int rc = mb_attn_estimate(&a, d, &e, &err);
    if (rc) fprintf(stderr, "attention: %s\n", err.msg);
    CHECK(rc == MB_OK);
    return e;
}

static const mb_attn_kernel *kernel(const mb_attn_plan *p, const char *name)
{
    for (int i = 0; i < p->n_kernels; i++)
        if (!strcmp(p->k[i].name, name)) return &p->k[i];
    fprintf(stderr, "no kernel '%s'\n", name);
    return NULL;
}

static int expect_err(const mb_attn *a, const mb_device *d, const char *needle)
{
    mb_attn_est e;
    mb_err err;
    int rc = mb_attn_estimate(a, d, &e, &err);
    if (rc != MB_EINPUT || !strstr(err.msg, needle)) {
        fprintf(stderr, "expected an error with '%s', got rc %d '%s'\n", needle, rc, rc ? err.msg : "");
        return 0;
    }
    return 1;
}

/* On a CPU spec the softmax kernels are the language's (below), and
 * FlashAttention takes PyTorch's CPU kernel's splits, 512 key
 * columns and 256 query rows from seq 768 (64 from 192, else 32), not the
 * GPU rule's ceil(M / 4d) columns (2048 for a 2 MiB core cache at d 64: one
 * key tile, so a causal mask skipped nothing and causal flash cost what the
 * full one did, 1.51x the CPU run at seq 2048). */
static void cpu_tiles(void)
{
    mb_device cpu;
    mb_err e;
    CHECK(mb_device_load_ini_text(MB_TEST_CPU_SPEC, "test_model_attention", &cpu, &e) == MB_OK);
    mb_attn_est full = est(&cpu, 1, 8, 2048, 64, MB_F32, 0, 1), causal = est(&cpu, 1, 8, 2048, 64, MB_F32, 1, 1);
    CHECK_EQ_I64(full.block_r, 256);
    CHECK_EQ_I64(full.block_c, 512);
    CHECK_EQ_I64(full.tile_pairs, 8 * 4);
    /* query tile i reaches key tile (256 i + 255) / 512: 1+1+2+2+3+3+4+4 */
    CHECK_EQ_I64(causal.tile_pairs, 20);
    CHECK(causal.plan[MB_ATTN_FLASH].time_s < 0.7 * full.plan[MB_ATTN_FLASH].time_s);
    /* the softmax and its backward as `membound model` costs softmax(x, -1)
     * at [BH N, N] on the spec (its calibrated overlap of memory and exps) */
    mb_graph *g = NULL;
    mb_plan *pl = NULL;
    mb_estimate me;
    memset(&me, 0, sizeof me);
    CHECK(mb_parse_variant("input x [rows, cols]\ny = softmax(x, -1)\noutput y\nbackward\n", "t", MB_F32, &g, &e) ==
          MB_OK);
    CHECK(g && mb_plan_build_on(g, MB_PLAN_EAGER, &cpu, &pl, &e) == MB_OK);
    mb_shape sh = {2, 8 * 2048, 2048, 0};
    CHECK(pl && mb_estimate_plan_shape(pl, sh, &cpu, &me, &e) == MB_OK);
    if (pl && me.per_kernel) {
        for (int i = 0; i < pl->n_kernels; i++) {
            const mb_attn_kernel *k = kernel(&full.plan[MB_ATTN_STANDARD], pl->kernels[i].is_backward ? "softmax bwd" : "softmax");
            if (k) CHECK_NEAR(k->time_s, me.per_kernel[i].time_s, 1e-12);
            if (k) CHECK_NEAR(k->dram_read_bytes, (double)me.per_kernel[i].dram_read_bytes, 1e-12);
        }
        CHECK(pl->n_kernels == 2);
    }
    mb_estimate_free(&me);
    mb_plan_free(pl);
    mb_graph_free(g);
    /* beyond the language's shapes (2^40 elements) the rows scale the cost */
    mb_attn_est h1 = est(&cpu, 1, 1, (int64_t)1 << 21, 64, MB_F32, 0, 0);
    mb_attn_est h4 = est(&cpu, 1, 4, (int64_t)1 << 21, 64, MB_F32, 0, 0);
    const mb_attn_kernel *s1 = kernel(&h1.plan[MB_ATTN_STANDARD], "softmax");
    const mb_attn_kernel *s4 = kernel(&h4.plan[MB_ATTN_STANDARD], "softmax");
    if (s1 && s4) CHECK_NEAR(s4->time_s - s4->launch_s, 4 * (s1->time_s - s1->launch_s), 1e-9);
    mb_attn_est small = est(&cpu, 1, 8, 512, 64, MB_F32, 0, 0), tiny = est(&cpu, 1, 8, 100, 64, MB_F32, 0, 0);
    CHECK_EQ_I64(small.block_r, 64);
    CHECK_EQ_I64(tiny.block_r, 32);
    CHECK_EQ_I64(tiny.block_c, 100);
}

int main(void)
{
    const mb_device h100 = dev("h100-sxm");
    CHECK(!strcmp(h100.name, "h100-sxm"));

    /* batch 1, heads 2, seq 1024, head_dim 64, bf16: BH = 2, one N x N
     * tensor 2 x 1024^2 x 2 B = 4194304 B, one head's Q 1024 x 64 x 2 =
     * 131072 B */
    mb_attn_est e = est(&h100, 1, 2, 1024, 64, MB_BF16, 0, 0);
    const mb_attn_plan *sp = &e.plan[MB_ATTN_STANDARD], *fp = &e.plan[MB_ATTN_FLASH];
    CHECK_NEAR(e.model_flops, 4.0 * 2 * 1024 * 1024 * 64, 1e-12); /* 536870912 */
    /* standard forward: bmm, mul, softmax, bmm; S, S x scale, P written */
    CHECK_EQ_I64(sp->n_kernels, 4);
    CHECK(!strcmp(sp->k[0].name, "bmm q@k^T") && !strcmp(sp->k[1].name, "mul scale") &&
          !strcmp(sp->k[2].name, "softmax") && !strcmp(sp->k[3].name, "bmm P@v"));
    CHECK_NEAR(sp->flops, 536870912.0, 1e-12);
    CHECK_NEAR(sp->k[0].flops, 268435456.0, 1e-12);
    CHECK_NEAR(sp->nn_write_bytes, 3 * 4194304.0, 1e-12);
    CHECK_NEAR(sp->k[1].dram_read_bytes, 4194304.0, 1e-12);
    CHECK_NEAR(sp->k[1].dram_write_bytes, 4194304.0, 1e-12);
    /* a row of 2 KiB fits the softmax's 48 KiB: one read, one write; an exp an entry */
    CHECK_NEAR(sp->k[2].dram_read_bytes, 4194304.0, 1e-12);
    CHECK_NEAR(sp->k[2].exps, 2.0 * 1024 * 1024, 1e-12);
    CHECK_NEAR(sp->k[2].compute_s, 2.0 * 1024 * 1024 / (132 * 16 * 1.83e9), 1e-9);
    CHECK_NEAR(sp->k[1].time_s, 3e-6 + 2 * 4194304.0 / 2680e9, 1e-9);
    /* P@v reads P and v, writes o: the GEMM model's least traffic here */
    CHECK_NEAR(sp->k[3].dram_read_bytes, 4194304.0 + 2 * 131072.0, 1e-12);
    CHECK_NEAR(sp->k[3].dram_write_bytes, 2 * 131072.0, 1e-12);
    CHECK_NEAR(sp->saved_bytes, 4194304.0, 1e-12);
    CHECK_NEAR(sp->time_s, sp->k[0].time_s + sp->k[1].time_s + sp->k[2].time_s + sp->k[3].time_s, 1e-12);

    /* flash tiles: M = 484 KiB / 2 B = 247808 elements, Bc = ceil(247808 /
     * 256) = 968, Br = min(968, 64) = 64: 16 x 2 tiles, 32 pairs */
    CHECK_EQ_I64(e.block_c, 968);
    CHECK_EQ_I64(e.block_r, 64);
    CHECK_EQ_I64(e.tiles_r, 16);
    CHECK_EQ_I64(e.tiles_c, 2);
    CHECK_EQ_I64(e.tile_pairs, 32);
    CHECK_EQ_I64(fp->n_kernels, 1);
    CHECK_NEAR(fp->flops, 536870912.0, 1e-12);
    /* never S or P: reads Q once and K, V once (2 heads in flight, 0.5 MiB),
     * writes O and the f32 LSE */
    CHECK_NEAR(fp->nn_write_bytes, 0, 0);
    CHECK_EQ_I64(e.heads_in_flight, 2);
    CHECK_NEAR(e.kv_reads, 1, 0);
    CHECK_NEAR(fp->dram_read_bytes, 2 * 3 * 131072.0, 1e-12);
    CHECK_NEAR(fp->dram_write_bytes, 2 * (131072.0 + 4 * 1024), 1e-12);
    CHECK_NEAR(fp->saved_bytes, 2 * (131072.0 + 4 * 1024), 1e-12);
    /* Theorem 2's count: Q, O, LSE once, K and V 16 times a head */
    CHECK_NEAR(e.io_nocache_bytes, 2 * (2 * 131072.0 + 16 * 2 * 131072.0 + 4096), 1e-12);
    /* compute: matmuls at the measured BF16 GEMM rate and exps at the SFU's,
     * over the wave efficiency of 32 blocks on 132 SMs */
    CHECK_NEAR(fp->k[0].compute_s, (536870912.0 / 794.5e12 + 2.0 * 1024 * 1024 / (132 * 16 * 1.83e9)) * 132 / 32,
               1e-9);
    CHECK_NEAR(fp->time_s, 3e-6 + fp->k[0].compute_s, 1e-9);
    CHECK(fp->bound == MB_BOUND_COMPUTE);
    /* flash moves far fewer bytes */
    CHECK(fp->dram_read_bytes + fp->dram_write_bytes < (sp->dram_read_bytes + sp->dram_write_bytes) / 10);

    /* causal: the papers' count halves; the standard plan adds the mask
     * (2 MiB, read once: 6 MiB fit the cache) and computes the whole
     * products; flash skips the tiles above the diagonal: query tiles 0..14
     * end before column 968 (one key tile, 968 columns), tile 15 takes both:
     * 17 pairs, 15 x 64 x 968 + 64 x 1024 = 994816 entries */
    mb_attn_est c = est(&h100, 1, 2, 1024, 64, MB_BF16, 1, 0);
    CHECK_NEAR(c.model_flops, 268435456.0, 1e-12);
    CHECK_EQ_I64(c.plan[MB_ATTN_STANDARD].n_kernels, 5);
    CHECK(!strcmp(c.plan[MB_ATTN_STANDARD].k[2].name, "add mask"));
    CHECK_NEAR(c.plan[MB_ATTN_STANDARD].k[2].dram_read_bytes, 4194304.0 + 2097152.0, 1e-12);
    CHECK_NEAR(c.plan[MB_ATTN_STANDARD].flops, 536870912.0, 1e-12);
    CHECK_NEAR(c.plan[MB_ATTN_STANDARD].nn_write_bytes, 4 * 4194304.0, 1e-12);
    CHECK_EQ_I64(c.tile_pairs, 17);
    CHECK_NEAR(c.plan[MB_ATTN_FLASH].flops, 4.0 * 64 * 994816 * 2, 1e-12);
    CHECK_NEAR(c.plan[MB_ATTN_FLASH].k[0].exps, 994816.0 * 2, 1e-12);
    CHECK(c.plan[MB_ATTN_FLASH].time_s < fp->time_s);
    /* seq 4096, one head: 64 query tiles of 64 rows, tile i takes
     * min(4096, 968 ceil((64 i + 64) / 968)) columns: 10341376 entries, 0.616
     * of 4096^2 (the wide key tiles keep the diagonal's share large) */
    mb_attn_est c4 = est(&h100, 1, 1, 4096, 64, MB_BF16, 1, 0);
    CHECK_NEAR(c4.plan[MB_ATTN_FLASH].flops, 4.0 * 64 * 10341376, 1e-12);

    /* backward: four more bmms (8 N^2 d BH) and dP, dP x P, dS, dS x scale
     * written; flash's three kernels, 10 N^2 d BH, still no N x N bytes */
    mb_attn_est b = est(&h100, 1, 2, 1024, 64, MB_BF16, 0, 1);
    sp = &b.plan[MB_ATTN_STANDARD], fp = &b.plan[MB_ATTN_FLASH];
    CHECK_NEAR(b.model_flops, 536870912.0 * 3.5, 1e-12);
    CHECK_EQ_I64(sp->n_kernels, 11);
    CHECK_NEAR(sp->flops, 3 * 536870912.0, 1e-12);
    CHECK_NEAR(sp->nn_write_bytes, 7 * 4194304.0, 1e-12);
    CHECK_NEAR(kernel(sp, "mul dP*P")->dram_read_bytes, 2 * 4194304.0, 1e-12);
    CHECK_NEAR(kernel(sp, "softmax bwd")->dram_read_bytes, 2 * 4194304.0, 1e-12);
    CHECK(sp->bwd_time_s > sp->fwd_time_s);
    CHECK_EQ_I64(fp->n_kernels, 4);
    CHECK_NEAR(fp->nn_write_bytes, 0, 0);
    CHECK_NEAR(kernel(fp, "flash bwd")->flops, 10.0 * 64 * 1024 * 1024 * 2, 1e-12);
    /* prep: dO and O read, D (f32) and the zeroed f32 accumulator written */
    CHECK_NEAR(kernel(fp, "flash bwd prep")->dram_read_bytes, 2 * 2 * 131072.0, 1e-12);
    CHECK_NEAR(kernel(fp, "flash bwd prep")->dram_write_bytes, 2 * (4096 + 4.0 * 1024 * 64), 1e-12);
    /* main: K, V once; q, dO (2 x 128 B), LSE, D (8 B), accumulator (256 B)
     * a row, once (2 heads of 776 B a row fit the cache); dk, dv and the
     * accumulator written */
    CHECK_NEAR(kernel(fp, "flash bwd")->dram_read_bytes, 2 * (2 * 131072.0 + 1024 * (256 + 8 + 256)), 1e-12);
    CHECK_NEAR(kernel(fp, "flash bwd")->dram_write_bytes, 2 * (2 * 131072.0 + 1024 * 256), 1e-12);
    CHECK_NEAR(kernel(fp, "flash bwd dq")->dram_read_bytes, 2 * 4.0 * 1024 * 64, 1e-12);
    CHECK_NEAR(kernel(fp, "flash bwd dq")->dram_write_bytes, 2 * 131072.0, 1e-12);

    /* no cache: K and V once per query tile, Theorem 2's count; on-chip
     * memory below 4 d^2 sizes Br = M / 4d, so doubling it halves the K, V
     * passes: 16 KiB of bf16 is M = 8192, Bc = Br = 32; 32 KiB, 64 */
    mb_device small = h100;
    small.cache_mb = 1.0 / 1024; /* 1 KiB */
    small.cache_resident_mb = 0;
    small.onchip_kib = 16;
    mb_attn_est s1 = est(&small, 1, 1, 4096, 64, MB_BF16, 0, 0);
    CHECK_EQ_I64(s1.block_r, 32);
    CHECK_EQ_I64(s1.block_c, 32);
    CHECK_NEAR(s1.kv_reads, 128, 1e-12);
    const double q1 = 4096.0 * 64 * 2;
    CHECK_NEAR(s1.plan[MB_ATTN_FLASH].dram_read_bytes, q1 + 128 * 2 * q1, 1e-12);
    CHECK_NEAR(s1.io_nocache_bytes, s1.plan[MB_ATTN_FLASH].dram_read_bytes + s1.plan[MB_ATTN_FLASH].dram_write_bytes,
               1e-12);
    /* causal at square 32 x 32 tiles: query tile i takes key tiles 0..i,
     * 128 x 129 / 2 = 8256 pairs of 1024 entries */
    mb_attn_est s1c = est(&small, 1, 1, 4096, 64, MB_BF16, 1, 0);
    CHECK_EQ_I64(s1c.tile_pairs, 8256);
    CHECK_NEAR(s1c.plan[MB_ATTN_FLASH].flops, 4.0 * 64 * 8256 * 1024, 1e-12);
    CHECK_NEAR(s1c.io_nocache_bytes, 2 * q1 + 2 * 64 * 2 * 32.0 * 8256 + 4 * 4096, 1e-12);
    small.onchip_kib = 32;
    mb_attn_est s2 = est(&small, 1, 1, 4096, 64, MB_BF16, 0, 0);
    CHECK_EQ_I64(s2.block_r, 64);
    CHECK_NEAR(s2.kv_reads, 64, 1e-12);
    /* and the standard softmax's rows beyond its shared memory (f32, 16384
     * columns = 64 KiB) with the rows in flight (132 x 8) beyond a 1 KiB
     * cache: twice */
    mb_attn_est s3 = est(&small, 1, 1, 16384, 64, MB_F32, 0, 0);
    CHECK_NEAR(kernel(&s3.plan[MB_ATTN_STANDARD], "softmax")->dram_read_bytes, 2 * 16384.0 * 16384 * 4, 1e-12);
    mb_attn_est s4 = est(&h100, 1, 1, 16384, 64, MB_F32, 0, 0); /* 1056 rows x 64 KiB = 66 MiB > 50 MiB */
    CHECK_NEAR(kernel(&s4.plan[MB_ATTN_STANDARD], "softmax")->dram_read_bytes, 2 * 16384.0 * 16384 * 4, 1e-12);
    /* SoftMax.cu's shared-memory kernel takes f32 rows of fewer than
     * (49152 - 128) / 4 = 12256 columns: 12255 read once, 12256 twice (the
     * 1 KiB cache) */
    mb_attn_est s5 = est(&small, 1, 1, 12255, 64, MB_F32, 0, 0);
    CHECK_NEAR(kernel(&s5.plan[MB_ATTN_STANDARD], "softmax")->dram_read_bytes, 12255.0 * 12255 * 4, 1e-12);
    s5 = est(&small, 1, 1, 12256, 64, MB_F32, 0, 0);
    CHECK_NEAR(kernel(&s5.plan[MB_ATTN_STANDARD], "softmax")->dram_read_bytes, 2 * 12256.0 * 12256 * 4, 1e-12);
    /* on the H100 1056 rows of 48 KiB (49.5 MiB) fit the 50 MiB: once */
    s5 = est(&h100, 1, 1, 12288, 64, MB_F32, 0, 0);
    CHECK_NEAR(kernel(&s5.plan[MB_ATTN_STANDARD], "softmax")->dram_read_bytes, 12288.0 * 12288 * 4, 1e-12);

    /* the longest sequence, batch 8, heads 16, head_dim 128, bf16 (BH = 128):
     * standard forward holds q, k, v, o (131072 N B) and two N x N tensors
     * (512 N^2 B): on 80 GB N^2 + 256 N <= 156250000, N = 12372 (12373 gives
     * 156258617); on the 40 GB A100 N^2 + 256 N <= 78125000, N = 8711.
     * Causal adds the 2 N^2 B mask: 514 N^2 + 131072 N <= 8e10, N = 12348.
     * The backward's three N x N tensors and five of N d: 768 N^2 + 163840 N
     * <= 8e10, N = 10100. Flash: 131584 N <= 8e10, N = 607976. */
    const mb_device a40 = dev("a100-40gb");
    CHECK_NEAR(a40.mem_gb, 40, 0);
    CHECK_NEAR(h100.mem_gb, 80, 0);
    mb_attn_est m = est(&h100, 8, 16, 4096, 128, MB_BF16, 0, 0);
    CHECK_EQ_I64(m.plan[MB_ATTN_STANDARD].max_seq, 12372);
    CHECK_EQ_I64(m.plan[MB_ATTN_FLASH].max_seq, 607976);
    CHECK_EQ_I64(est(&a40, 8, 16, 4096, 128, MB_BF16, 0, 0).plan[MB_ATTN_STANDARD].max_seq, 8711);
    CHECK_EQ_I64(est(&a40, 8, 16, 4096, 128, MB_BF16, 0, 0).plan[MB_ATTN_FLASH].max_seq, 303988);
    CHECK_EQ_I64(est(&h100, 8, 16, 4096, 128, MB_BF16, 1, 0).plan[MB_ATTN_STANDARD].max_seq, 12348);
    CHECK_EQ_I64(est(&h100, 8, 16, 4096, 128, MB_BF16, 0, 1).plan[MB_ATTN_STANDARD].max_seq, 10100);
    /* P at that shape: 128 x 4096^2 x 2 B = 4.29 GB saved, against O + LSE */
    CHECK_NEAR(m.plan[MB_ATTN_STANDARD].saved_bytes, 128.0 * 4096 * 4096 * 2, 1e-12);
    CHECK_NEAR(m.plan[MB_ATTN_FLASH].saved_bytes, 128.0 * 4096 * (128 * 2 + 4), 1e-12);
    /* a spec without mem_gb: no longest sequence */
    mb_device nomem = h100;
    nomem.mem_gb = 0;
    CHECK_EQ_I64(est(&nomem, 1, 1, 1024, 64, MB_BF16, 0, 0).plan[MB_ATTN_STANDARD].max_seq, 0);

    /* a spec's kernel_floor_us: the plan's first kernel pays it, the others
     * the launch interval */
    mb_device floor10 = h100;
    floor10.kernel_floor_us = 10;
    mb_attn_est fl = est(&floor10, 1, 2, 1024, 64, MB_BF16, 0, 0), f0 = est(&h100, 1, 2, 1024, 64, MB_BF16, 0, 0);
    CHECK_NEAR(fl.plan[MB_ATTN_FLASH].time_s, f0.plan[MB_ATTN_FLASH].time_s + 7e-6, 1e-9);
    CHECK_NEAR(fl.plan[MB_ATTN_STANDARD].time_s, f0.plan[MB_ATTN_STANDARD].time_s + 7e-6, 1e-9);

    /* f32 on a GPU runs at the FP32 peak, as gemm.c says */
    mb_attn_est f = est(&h100, 1, 1, 1024, 64, MB_F32, 0, 0);
    CHECK(!strcmp(f.peak_key, "fp32_tflops"));
    CHECK_NEAR(f.peak_flops_s, 66.9e12, 1e-12);

    /* errors */
    mb_attn bad = {1, 1, 0, 64, MB_BF16, 0, 0};
    CHECK(expect_err(&bad, &h100, "at least 1"));
    bad = (mb_attn){1, 1, (int64_t)1 << 32, 64, MB_BF16, 0, 0};
    CHECK(expect_err(&bad, &h100, "beyond 2^62"));
    bad = (mb_attn){1, 1, 1024, 64, MB_BF16, 0, 0};
    const mb_device v100 = dev("v100");
    CHECK(expect_err(&bad, &v100, "no bf16 GEMM rate"));
    mb_device noch = h100;
    noch.onchip_kib = 0;
    CHECK(expect_err(&bad, &noch, "onchip_kib"));
    noch.onchip_kib = 0.0625; /* 64 B: 32 bf16 elements < head_dim 64 */
    CHECK(expect_err(&bad, &noch, "exceeds"));
    cpu_tiles();
    return mb_test_done();
}
