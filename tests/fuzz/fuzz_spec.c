/* fuzz_spec.c — libFuzzer target: any bytes as a device spec file. A spec
 * that loads must have the numbers the model divides by. */
#define _GNU_SOURCE
#include "membound_model.h"

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
        fd = memfd_create("spec.ini", 0);
        if (fd < 0) abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    mb_device d;
    mb_err e;
    if (mb_device_load_ini(path, &d, &e) == MB_OK) {
        if (!(d.mem_bandwidth_gbs > 0) || !(d.cache_mb > 0) || !(d.fp32_tflops > 0)) abort();
    }
    return 0;
}
