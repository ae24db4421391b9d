/* cuda_attn.c — attention on a GPU (kernels/attn_cuda.cu) against the float64
 * reference and finite differences (kernels/attn_ref.c), with the bounds of
 * tests/kernels_attn.c: both plans, causal and not, forward and backward, at
 * batch 2, heads 3, seq 77 (not a multiple of any tile) and 256, head_dim 16
 * and 64, every element; the checks catch a wrong scale, a wrong mask and a
 * missing rescale (attn_int.h's mutants) and an output no kernel wrote; per-
 * kernel times from cudaEvents. Without a GPU: the tiles, the kernels named
 * and ordered as model/attention.c's on a GPU spec, the run refused with
 * the reason; then exits 77 (skipped). */
#include "attn_int.h"
#include "kernels_cuda.h"
#include "mb_attention.h"
#include "mb_test.h"
#include "attn_names.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double FULL = 1e12; /* every element compared */

/* the GPU plans' kernels against the model's on a GPU spec, in order */
static void names(void)
{
    mb_device dev;
    mb_err e;
    CHECK(mb_device_find("h100-sxm", &dev, &e) == MB_OK);
    check_attn_names(&dev, 1);
}

static void tiles(void)
{
    int f, b;
    CHECK(mb_kern_attn_cuda_tiles(16, &f, &b) && f == 64 && b == 32);
    CHECK(mb_kern_attn_cuda_tiles(64, &f, &b) && f == 32 && b == 16);
    CHECK(mb_kern_attn_cuda_tiles(128, &f, &b) && f == 16 && b == 8);
    CHECK(mb_kern_attn_cuda_tiles(252, &f, &b) && f == 8 && b == 8);
    CHECK(!mb_kern_attn_cuda_tiles(253, &f, &b) && f == 8 && b == 0); /* the forward still fits */
    CHECK(!mb_kern_attn_cuda_tiles(381, &f, &b) && f == 0);
}

/* runs plan p at d on the GPU (the mutant on while the run is uploaded and
 * launched: the standard plan's mask is built at allocation) and checks it */
static mb_kern_attn_check run(mb_kern_attn_plan p, mb_kern_attn_dims d, mb_kern_attn_mutant mut)
{
    mb_kern_attn a;
    mb_kern_attn_cuda *g = NULL;
    mb_kern_attn_check ck;
    mb_err e;
    memset(&ck, 0, sizeof ck);
    mb_kern_attn_mutant_on = mut;
    int rc = mb_kern_attn_alloc(&d, p, 42, &a, &e);
    if (!rc) rc = mb_kern_attn_cuda_new(&a, &g, &e);
    if (!rc) rc = mb_kern_attn_cuda_run(g, NULL, &e);
    if (!rc) rc = mb_kern_attn_cuda_download(g, &a, &e);
    mb_kern_attn_mutant_on = MB_KERN_ATTN_MUT_NONE;
    CHECK(rc == MB_OK);
    if (rc) fprintf(stderr, "%s\n", e.msg);
    if (!rc) CHECK(mb_kern_attn_verify(&a, FULL, 48, 30, 7, &ck, &e) == MB_OK);
    printf("%-8s %s%s mut %d b%lld h%lld s%lld d%lld: o %.3g lse %.3g dq %.3g dk %.3g dv %.3g fd %.3g (%d points) "
           "tol %.2g/%.2g %s%s\n",
           mb_kern_attn_plan_name(p), d.causal ? "causal " : "", d.backward ? "bwd" : "fwd", (int)mut,
           (long long)d.batch, (long long)d.heads, (long long)d.seq, (long long)d.head_dim, ck.o_err, ck.lse_err,
           ck.dq_err, ck.dk_err, ck.dv_err, ck.fd_err, ck.fd_points, ck.tol_fwd, ck.tol_bwd,
           ck.passed ? "passed" : "FAILED", ck.nonfinite ? " (non-finite)" : "");
    mb_kern_attn_cuda_free(g);
    mb_kern_attn_free(&a);
    return ck;
}

int main(void)
{
    names();
    tiles();
    mb_kern_attn_dims d = {2, 3, 77, 16, 1, 1};
    mb_kern_attn a;
    mb_kern_attn_cuda *g = NULL;
    mb_err e;
    char why[512];
    if (mb_kern_cuda_device_count(why, sizeof why) < 1) {
        for (int p = 0; p < 2; p++) {
            CHECK(mb_kern_attn_alloc(&d, (mb_kern_attn_plan)p, 1, &a, &e) == MB_OK);
            CHECK(mb_kern_attn_cuda_new(&a, &g, &e) == MB_ERUN && g == NULL);
            CHECK(strstr(e.msg, "attention on a GPU: ") != NULL);
            mb_kern_attn_free(&a);
        }
        printf("no GPU: %s (the run says: %s)\n", why, e.msg);
        return mb_test_skip();
    }

    const mb_kern_attn_dims shapes[] = {{2, 3, 77, 16, 0, 0}, {2, 3, 256, 64, 0, 0}, {2, 3, 77, 64, 0, 0},
                                        {2, 3, 256, 16, 0, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int p = 0; p < 2; p++)
            for (int causal = 0; causal < 2; causal++)
                for (int bwd = 0; bwd < 2; bwd++) {
                    d = shapes[s];
                    d.causal = causal, d.backward = bwd;
                    mb_kern_attn_check ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_NONE);
                    CHECK(ck.passed && ck.full);
                    CHECK(ck.o_err < 0.05); /* well inside the bound */
                    if (bwd) CHECK(ck.fd_points == 30 && ck.fd_err >= 0 && ck.fd_err < 0.1);
                    if (s != 0) continue;
                    /* the mutants, at seq 77 head_dim 16 (flash: two key tiles of 64) */
                    ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_SCALE);
                    CHECK(!ck.passed && ck.o_err > 10);
                    if (bwd) CHECK(ck.fd_err > 10);
                    if (causal) {
                        ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_MASK);
                        CHECK(!ck.passed && ck.o_err > 10);
                        if (bwd) CHECK(ck.fd_err > 10);
                    }
                    ck = run((mb_kern_attn_plan)p, d, MB_KERN_ATTN_MUT_NO_RESCALE);
                    if (p == MB_KERN_ATTN_FLASH) CHECK(!ck.passed && ck.o_err > 10);
                    else CHECK(ck.passed);
                }

    /* flash's forward only, on a run with backward: dq, dk, dv unwritten
     * (NaN) fail; a kernel not of the plan refused; per-kernel times */
    d = (mb_kern_attn_dims){2, 3, 77, 16, 1, 1};
    CHECK(mb_kern_attn_alloc(&d, MB_KERN_ATTN_FLASH, 3, &a, &e) == MB_OK);
    CHECK(mb_kern_attn_cuda_new(&a, &g, &e) == MB_OK);
    CHECK(mb_kern_attn_cuda_launch(g, MB_KERN_ATTN_FLASH_FWD, NULL, &e) == MB_OK);
    CHECK(mb_kern_attn_cuda_launch(g, MB_KERN_ATTN_QK, NULL, &e) == MB_EINPUT);
    CHECK(mb_kern_attn_cuda_download(g, &a, &e) == MB_OK);
    mb_kern_attn_check ck;
    CHECK(mb_kern_attn_verify(&a, FULL, 16, 4, 1, &ck, &e) == MB_OK);
    CHECK(!ck.passed && ck.nonfinite > 0 && ck.o_err <= 1);
    double t[MB_KERN_ATTN_N_KERNELS];
    CHECK(mb_kern_attn_cuda_time(g, t, &e) == MB_OK);
    mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
    const int n = mb_kern_attn_plan_kernels_gpu(MB_KERN_ATTN_FLASH, 1, 1, ids);
    for (int i = 0; i < n; i++) {
        printf("  %-16s %8.2f us\n", mb_kern_attn_kernel_name(ids[i]), t[i] * 1e6);
        CHECK(t[i] > 0 && t[i] < 1.0);
    }
    CHECK(mb_kern_attn_cuda_download(g, &a, &e) == MB_OK); /* the timed run is a whole run */
    CHECK(mb_kern_attn_verify(&a, FULL, 16, 4, 1, &ck, &e) == MB_OK && ck.passed);
    mb_kern_attn_cuda_free(g);
    mb_kern_attn_free(&a);
    return mb_test_done();
}
