/* kernels_attn.c — attention on the CPU (kernels/attn_cpu.c) against the
 * float64 reference and finite differences (kernels/attn_ref.c): both plans,
 * causal and not, forward and backward, at a seq that is not a multiple of
 * the tiles, every element and sampled rows; the checks catch a wrong
 * scale, a wrong mask and a missing rescale of the online softmax
 * (attn_int.h's mutants) and an output left unwritten; the tile rule; the
 * kernels named and ordered as model/attention.c's. */
#include "attn_int.h"
#include "kernels.h"
#include "mb_attention.h"
#include "cpu_spec.h"
#include "mb_test.h"
#include "attn_names.h"

#include <stdlib.h>

/* a cache this small gives tiles of 16 x 32 (forward) and 8 x 16 (backward)
 * at head_dim 16: seq 77 has 5 query tiles, the last of 13 rows */
#define SMALL_CACHE (16 * 1024)

/* runs plan p at d with small tiles (the mutant set first: the standard
 * plan's mask is built at allocation) and checks it; full_limit as verify */
static mb_kern_attn_check run(mb_kern_attn_plan p, mb_kern_attn_dims d, mb_kern_attn_mutant mut, double full_limit,
                              int small_tiles)
{
    mb_kern_attn a;
    mb_kern_attn_check ck;
    mb_err e;
    memset(&ck, 0, sizeof ck);
    mb_kern_attn_mutant_on = mut;
    int rc = mb_kern_attn_alloc(&d, p, 42, &a, &e);
    CHECK(rc == MB_OK);
    if (rc) {
        fprintf(stderr, "%s\n", e.msg);
        mb_kern_attn_mutant_on = MB_KERN_ATTN_MUT_NONE;
        return ck;
    }
    if (small_tiles) mb_kern_attn_tiles_for(&d, SMALL_CACHE, &a.tiles);
    CHECK(mb_kern_attn_run(&a, &e) == MB_OK);
    mb_kern_attn_mutant_on = MB_KERN_ATTN_MUT_NONE;
    CHECK(mb_kern_attn_verify(&a, full_limit, 48, 30, 7, &ck, &e) == MB_OK);
    printf("%-8s %s%s%s mut %d seq %lld: o %.3g lse %.3g dq %.3g dk %.3g dv %.3g fd %.3g (%d points) tol %.2g/%.2g %s%s\n",
           mb_kern_attn_plan_name(p), d.causal ? "causal " : "", d.backward ? "bwd" : "fwd", ck.full ? " full" : " sampled",
           (int)mut, (long long)d.seq, ck.o_err, ck.lse_err, ck.dq_err, ck.dk_err, ck.dv_err, ck.fd_err, ck.fd_points,
           ck.tol_fwd, ck.tol_bwd, ck.passed ? "passed" : "FAILED", ck.nonfinite ? " (non-finite)" : "");
    mb_kern_attn_free(&a);
    return ck;
}

static void tiles(void)
{
    mb_kern_attn_dims d = {1, 8, 4096, 64, 0, 0};
    mb_kern_attn_tiles t;
    mb_kern_attn_tiles_for(&d, 2 << 20, &t); /* a 2 MiB L2: 1 MiB, 262144 f32, a thread */
    CHECK_EQ_I64(t.fwd_r, 256); CHECK_EQ_I64(t.fwd_c, 512);   /* 2*256*64 + 2*512*64 + 256*512 = 229376 */
    CHECK_EQ_I64(t.bwd_r, 128); CHECK_EQ_I64(t.bwd_c, 256);   /* 3*128*64 + 4*256*64 + 2*128*256 = 155648 */
    mb_kern_attn_tiles_for(&d, 256 << 10, &t);                /* 256 KiB: 32768 f32 */
    CHECK_EQ_I64(t.fwd_r, 64); CHECK_EQ_I64(t.fwd_c, 128);    /* 8192 + 16384 + 8192 = 32768 */
    d.seq = 100;
    mb_kern_attn_tiles_for(&d, 2 << 20, &t); /* clipped to seq */
    CHECK_EQ_I64(t.fwd_r, 100); CHECK_EQ_I64(t.fwd_c, 100);
    d.head_dim = 16, d.seq = 77;
    mb_kern_attn_tiles_for(&d, SMALL_CACHE, &t);
    CHECK_EQ_I64(t.fwd_r, 16); CHECK_EQ_I64(t.fwd_c, 32); CHECK_EQ_I64(t.bwd_r, 8); CHECK_EQ_I64(t.bwd_c, 16);
}

/* the kernels in model/attention.c's names and order on a CPU spec, f32: no
 * "flash bwd dq" (dq is the f32 accumulator itself) and the softmax backward
 * one kernel, as PyTorch's on a CPU */
static void names(void)
{
    mb_device dev;
    mb_err e;
    CHECK(mb_device_load_ini_text(MB_TEST_CPU_SPEC, "kernels_attn", &dev, &e) == MB_OK);
    check_attn_names(&dev, 0);
}

int main(void)
{
    tiles();
    names();
    mb_kern_attn_dims d = {2, 3, 77, 16, 0, 1};
    mb_kern_attn a;
    mb_err e;
    CHECK(mb_kern_attn_alloc(&(mb_kern_attn_dims){1, 1, 0, 16, 0, 0}, MB_KERN_ATTN_FLASH, 1, &a, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "at least 1") != NULL);
    if (!mb_kern_blas_load()) {
        CHECK(mb_kern_attn_alloc(&d, MB_KERN_ATTN_FLASH, 1, &a, &e) == MB_OK);
        CHECK(mb_kern_attn_run(&a, &e) == MB_ERUN);
        mb_kern_attn_free(&a);
        printf("no OpenBLAS: %s\n", mb_kern_blas_desc());
        return mb_test_skip();
    }
    mb_kern_set_threads(2);
    const double FULL = 1e12, SAMPLED = 0;
    for (int p = 0; p < 2; p++)
        for (int causal = 0; causal < 2; causal++)
            for (int bwd = 0; bwd < 2; bwd++) {
                d.causal = causal, d.backward = bwd;
                mb_kern_attn_check ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_NONE, FULL, 1);
                CHECK(ck.passed && ck.full);
                /* well inside the bound: the bound is not so loose it hides a bug */
                CHECK(ck.o_err < 0.05);
                if (bwd) CHECK(ck.fd_points == 30 && ck.fd_err >= 0 && ck.fd_err < 0.1);
                /* a wrong scale: caught by the reference, and backward by finite differences */
                ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_SCALE, FULL, 1);
                CHECK(!ck.passed && ck.o_err > 10);
                if (bwd) CHECK(ck.fd_err > 10);
                /* a wrong mask */
                if (causal) {
                    ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_MASK, FULL, 1);
                    CHECK(!ck.passed && ck.o_err > 10);
                    if (bwd) CHECK(ck.fd_err > 10);
                }
                /* the online softmax without its rescale: flash fails, standard has none */
                ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_NO_RESCALE, FULL, 1);
                if (p == MB_KERN_ATTN_FLASH) CHECK(!ck.passed && ck.o_err > 10);
                else CHECK(ck.passed);
            }

    /* sampled rows at a larger seq (not a multiple of the tiles), this
     * machine's tiles for flash: passes, and each mutant is still caught */
    mb_kern_attn_dims big = {1, 2, 1100, 32, 1, 1};
    for (int p = 0; p < 2; p++) {
        mb_kern_attn_check ck = run((mb_kern_attn_plan)p, big, MB_KERN_ATTN_MUT_NONE, SAMPLED, 0);
        CHECK(ck.passed && !ck.full && ck.rows_checked >= 40);
        CHECK(run((mb_kern_attn_plan)p, big, MB_KERN_ATTN_MUT_SCALE, SAMPLED, 0).passed == 0);
        CHECK(run((mb_kern_attn_plan)p, big, MB_KERN_ATTN_MUT_MASK, SAMPLED, 0).passed == 0);
    }
    big.causal = 0;
    CHECK(run(MB_KERN_ATTN_FLASH, big, MB_KERN_ATTN_MUT_NO_RESCALE, SAMPLED, 1).passed == 0);

    /* both plans give the same o */
    d.causal = 1, d.backward = 0;
    mb_kern_attn s, f;
    CHECK(mb_kern_attn_alloc(&d, MB_KERN_ATTN_STANDARD, 9, &s, &e) == MB_OK);
    CHECK(mb_kern_attn_alloc(&d, MB_KERN_ATTN_FLASH, 9, &f, &e) == MB_OK);
    CHECK(mb_kern_attn_run(&s, &e) == MB_OK && mb_kern_attn_run(&f, &e) == MB_OK);
    double worst = 0;
    for (int64_t i = 0; i < d.batch * d.heads * d.seq * d.head_dim; i++) worst = fmax(worst, fabs(s.o[i] - f.o[i]));
    CHECK(worst < 1e-5);
    mb_kern_attn_free(&s), mb_kern_attn_free(&f);

    /* an output left unwritten (the backward not run) fails, non-finite */
    d.backward = 1;
    CHECK(mb_kern_attn_alloc(&d, MB_KERN_ATTN_FLASH, 3, &a, &e) == MB_OK);
    CHECK(mb_kern_attn_run_kernel(&a, MB_KERN_ATTN_FLASH_FWD, &e) == MB_OK);
    CHECK(mb_kern_attn_run_kernel(&a, MB_KERN_ATTN_QK, &e) == MB_EINPUT); /* not flash's */
    mb_kern_attn_check ck;
    CHECK(mb_kern_attn_verify(&a, FULL, 16, 4, 1, &ck, &e) == MB_OK);
    CHECK(!ck.passed && ck.nonfinite > 0);
    mb_kern_attn_free(&a);
    return mb_test_done();
}
