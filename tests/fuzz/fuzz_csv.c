/* fuzz_csv.c — libFuzzer target: any bytes as a measurement CSV, through
 * what `membound report` does with one: read, join with the model, fit,
 * verdicts, and (for one input in 64, the writers being file I/O) the
 * report's writers into a scratch folder. A set that was read must have rows;
 * fitted figures must be finite or say why they are not. */
#define _GNU_SOURCE
#include "membound_model.h"
#include "report.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64], out_dir[128];
    static unsigned calls;
    if (fd < 0) {
        fd = memfd_create("m.csv", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        snprintf(out_dir, sizeof out_dir, "/tmp/mb_fuzz_csv_%ld", (long)getpid());
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) abort();

    mb_rpt_set s;
    mb_rpt_set_init(&s);
    mb_err e;
    if (mb_rpt_read_csv(&s, path, &e) == MB_OK) {
        /* a file without rows is an error, not an empty set, unless it holds
         * per-kernel rows only (read, counted and noted; `report` refuses it) */
        if (s.n_rows <= 0 && s.n_kernel_rows_skipped <= 0) abort();
        if (mb_rpt_join(&s, NULL, &e) == MB_OK && mb_rpt_fit(&s, &e) == MB_OK) {
            for (int g = 0; g < s.n_groups; g++)
                if (s.groups[g].fitted && !(isfinite(s.groups[g].line.c0) && isfinite(s.groups[g].line.c1))) abort();
            if ((calls++ & 63) == 0) (void)mb_rpt_write(&s, NULL, out_dir, &e);
        }
    }
    mb_rpt_set_free(&s);
    return 0;
}
