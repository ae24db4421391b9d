/* cpu_spec.h — a CPU spec for model tests, shaped like this project's 2-vCPU
 * guest on one thread (15 GB/s, a 64 MiB knee, 130 GFLOP/s GEMMs, a 2 MiB
 * core cache): what `membound calibrate` writes, the keys a CPU's model
 * rules read. Load with mb_device_load_ini_text. */
#ifndef MB_TEST_CPU_SPEC_H
#define MB_TEST_CPU_SPEC_H

#define MB_TEST_CPU_SPEC                                                                                  \
    "[device]\nname = cpu-like\nkind = cpu\nmem_bandwidth_gbs = 15\ncache_mb = 64\nfp32_tflops = 0.35\n" \
    "gemm_gflops = 130\nsm_count = 1\nlaunch_overhead_us = 1\nonchip_kib = 2048\nsource = tests/cpu_spec.h\n"

#endif
