/* fuzz_import.c — libFuzzer target: any bytes as an ncu CSV or a PyTorch
 * trace (the first byte chooses), matched as the fixtures are (marks, or
 * sin2_plus_cos2 eager at 2^20 without them). An import that succeeds has
 * rows with a positive median time and byte counts that are counts (or -1,
 * none): a total that wrapped past 2^63 is a finding. */
#define _GNU_SOURCE
#include "import.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("import", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (size < 1) return 0;
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data + 1, size - 1, 0) != (ssize_t)(size - 1)) abort();
    mb_imp_options o;
    mb_imp_options_init(&o);
    o.format = data[0] & 1 ? MB_IMP_TORCH_TRACE : MB_IMP_NCU;
    o.device = "h200";
    int64_t n = 1 << 20;
    if (data[0] & 2) {
        o.variant = "sin2_plus_cos2";
        o.n_plans = 1;
        o.plans[0] = MB_PLAN_EAGER;
        o.sizes = &n;
        o.n_sizes = 1;
    }
    o.warmup = (data[0] >> 2) & 3;
    mb_imp_result res;
    mb_err e;
    if (mb_imp_run(path, &o, &res, &e) == MB_OK) {
        for (int i = 0; i < res.rows.n; i++)
            if (!(res.rows.rows[i].time_s_median > 0) || res.rows.rows[i].dram_read_bytes < -1 ||
                res.rows.rows[i].dram_write_bytes < -1)
                abort();
        mb_imp_result_free(&res);
    }
    return 0;
}
