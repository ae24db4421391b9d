/* attn_names.h — a test's check that an executor's kernel list for both
 * attention plans, causal and not, with backward, is the model's on device
 * d, name for name and in order (gpu: the CUDA executors' lists, else the
 * CPU's). Include after mb_test.h. */
#ifndef MB_TEST_ATTN_NAMES_H
#define MB_TEST_ATTN_NAMES_H

#include "kernels.h"
#include "membound_model.h"

#include <stdio.h>
#include <string.h>

static void check_attn_names(const mb_device *d, int gpu)
{
    mb_err e;
    for (int causal = 0; causal < 2; causal++) {
        mb_attn m = {2, 4, 1024, 64, MB_F32, causal, 1};
        mb_attn_est est;
        CHECK(mb_attn_estimate(&m, d, &est, &e) == MB_OK);
        for (int p = 0; p < 2; p++) {
            mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
            const int n = gpu ? mb_kern_attn_plan_kernels_gpu((mb_kern_attn_plan)p, causal, 1, ids)
                              : mb_kern_attn_plan_kernels((mb_kern_attn_plan)p, causal, 1, ids);
            const mb_attn_plan *mp = &est.plan[p == 0 ? MB_ATTN_STANDARD : MB_ATTN_FLASH];
            CHECK_EQ_I64(n, mp->n_kernels);
            for (int i = 0; i < n && i < mp->n_kernels; i++) {
                const int same = !strcmp(mb_kern_attn_kernel_name(ids[i]), mp->k[i].name);
                CHECK(same);
                if (!same)
                    printf("%s kernel %d: '%s', the model's '%s'\n", gpu ? "GPU" : "CPU", i,
                           mb_kern_attn_kernel_name(ids[i]), mp->k[i].name);
            }
        }
    }
}

#endif
