/* mb_test_calib.h — a calibration-like CPU measurement for tests that need
 * a spec a real `calibrate` could have written (the caches' tests): every
 * bandwidth copy_gbs, op rates 1, 2, 3 ... Gelem/s, an 8 MiB cache, one
 * thread. Tests override the fields they check, then call
 * mb_cal_to_device. Needs measure.h. */
#ifndef MB_TEST_CALIB_H
#define MB_TEST_CALIB_H

#include <string.h>

static void mb_test_calib(mb_cal_result *c, double copy_gbs)
{
    memset(c, 0, sizeof *c);
    c->copy_gbs = copy_gbs;
    c->copy_plain_gbs = c->read_gbs = c->write_gbs = c->write_plain_gbs = copy_gbs;
    c->fp32_tflops = 0.1;
    for (int op = 0; op < MB_OP_COUNT; op++) c->op_geps[op] = 1.0 + op;
    c->pass_overhead_us = 3;
    c->llc_bytes = 8 << 20;
    c->stream_n = 1 << 24;
    c->threads = 1;
    c->mem_gb = 8;
}

#endif
