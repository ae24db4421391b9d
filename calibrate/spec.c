/* spec.c — what a calibration gives: the rules that refuse figures that
 * cannot be true, and the device spec written from them. Does not probe
 * (the other files of calibrate/) or write a file (the CLI does). */
#include "cal_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int mb_cal_refused(const mb_cal_result *c, const mb_cal_figure *figs, int nf, int quick,
                        char *why, size_t whysz)
{
    for (int i = 0; i < nf; i++)
        if (figs[i].contended > 0 && 2 * figs[i].contended >= figs[i].ns) {
            snprintf(why, whysz, "the process did not get its cores during the %s probe (%d of %d "
                     "samples contended after %d retries each: other processes or steal)",
                     figs[i].name, figs[i].contended, figs[i].ns, CAL_RETRIES);
            return 1;
        }
    return mb_cal_implausible(c, quick, why, whysz);
}

int mb_cal_implausible(const mb_cal_result *c, int quick, char *why, size_t whysz)
{
    /* a GEMM runs FMAs: faster than the FMA chains' peak (10% for the two
     * figures' spread) it cannot be */
    if (c->dev.gemm_gflops > 1.1 * c->fp32_tflops * 1e3) {
        snprintf(why, whysz, "the f32 GEMM's %.4g GFLOP/s is above the FMA peak's %.4g: the peak probe did not "
                 "get its cores", c->dev.gemm_gflops, c->fp32_tflops * 1e3);
        return 1;
    }
    const double bw[] = {c->copy_gbs, c->copy_plain_gbs, c->read_gbs, c->write_gbs, c->write_plain_gbs};
    double bmin = bw[0], bmax = bw[0];
    for (int i = 1; i < 5; i++) bmin = fmin(bmin, bw[i]), bmax = fmax(bmax, bw[i]);
    if (!(bmin > 0) || bmax > 10 * bmin) {
        snprintf(why, whysz, "bandwidths disagree by more than 10x (copy %.3g, plain copy %.3g, read "
                 "%.3g, write %.3g, plain write %.3g GB/s)", bw[0], bw[1], bw[2], bw[3], bw[4]);
        return 1;
    }
    /* a copy reads copy_gbs / 2 of its requested bytes while writing the
     * rest: a stream that only reads is no slower on any machine we know; at
     * under half that, the read probe lost its cores (its threads wait on
     * each other: a 2-vCPU guest under load read 7-17 GB/s with 2 threads
     * against 37 with 1), and the model's reductions would take it */
    if (c->read_gbs < c->copy_gbs / 4) {
        snprintf(why, whysz, "the read probe's %.3g GB/s is under half the %.3g GB/s a copy reads while it "
                 "writes (copy %.3g GB/s): the probe did not get its cores", c->read_gbs, c->copy_gbs / 2,
                 c->copy_gbs);
        return 1;
    }
    double omin = INFINITY, omax = 0;
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++)
        if (!MB_OP_IS_ROW((mb_op)op) && !MB_OP_IS_COLUMN((mb_op)op))
            omin = fmin(omin, c->op_geps[op]), omax = fmax(omax, c->op_geps[op]);
    if (!(omin > 0) || omax < 1.5 * omin) {
        snprintf(why, whysz, "every op rate within 1.5x of the others (%.3g..%.3g Gelem/s, from add "
                 "to gelu): that is the timing, not the ops", omin, omax);
        return 1;
    }
    /* a cheap op on L1-resident tiles cannot be slower than a copy from DRAM */
    static const mb_op cheap[] = {MB_OP_COPY, MB_OP_ADD, MB_OP_MUL};
    double copy_geps = c->copy_gbs / (2.0 * sizeof(float));
    for (int i = 0; i < 3 && !quick; i++)
        if (c->op_geps[cheap[i]] < copy_geps) {
            snprintf(why, whysz, "op %s at %.3g Gelem/s in L1 is slower than a copy from memory "
                     "(%.3g Gelem/s)", mb_op_name(cheap[i]), c->op_geps[cheap[i]], copy_geps);
            return 1;
        }
    /* the chains built but gave no rate: their medians did not separate
     * (the deep add chain no slower than the shallow), and compiled kernels
     * would be modelled at the interpreter's rates */
    if (c->compiled_chains >= 2 && c->compiled_ops == 0) {
        snprintf(why, whysz, "%d compiled probe chains ran, but none gave an op rate (the chain of "
                 "%d adds no slower than the one of %d: timing noise)", c->compiled_chains,
                 CHAIN_DEEP, CHAIN_SHALLOW);
        return 1;
    }
    /* a link of a compiled chain is at least one vector instruction an
     * element: no faster than twice the FMA peak's lanes (fp32_tflops counts
     * two flops a lane; Zen 4 issues two FADD beside its two FMA pipes) */
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++)
        if (c->fp32_tflops > 0 && c->op_compiled_geps[op] > c->fp32_tflops * 1e3) {
            snprintf(why, whysz, "compiled %s at %.4g Gelem/s, beyond twice the FMA peak's %.4g G lanes/s: "
                     "its chain's time is within the timing's noise", mb_op_name((mb_op)op),
                     c->op_compiled_geps[op], c->fp32_tflops * 1e3 / 2);
            return 1;
        }
    if (!(c->fp32_tflops > 0) || !isfinite(c->copy_gbs)) {
        snprintf(why, whysz, "a non-positive FMA rate or bandwidth");
        return 1;
    }
    return 0;
}

/* One key's detail line. */
static void detail(mb_cal_result *c, mb_dk_id k, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void detail(mb_cal_result *c, mb_dk_id k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail[k], sizeof c->detail[k], fmt, ap);
    va_end(ap);
}

void mb_cal_details(mb_cal_result *c)
{
    detail(c, MB_DK_mem_bandwidth_gbs, "the best of copy, read and write (write %.2f GB/s non-temporal, "
           "%.2f plain)", c->write_gbs, c->write_plain_gbs);
    detail(c, MB_DK_measured_bandwidth_gbs, "copy with non-temporal stores (%.2f GB/s with plain stores)",
           c->copy_plain_gbs);
    detail(c, MB_DK_read_bandwidth_gbs, "a read-only sum, all threads");
    detail(c, MB_DK_read_stream_penalty, "from y = a + b + c + d, fused (gain %.3f)", c->read_stream_gain);
    detail(c, MB_DK_read_stream_gain, "from y = a + b + c + d, fused (penalty %.3f)", c->read_stream_penalty);
    detail(c, MB_DK_serial_fraction, "rounds' quartiles %.2f-%.2f (probe y = sin(x))", c->serial_fraction_q1,
           c->serial_fraction_q3);
    if (c->has_serial_fraction_compiled)
        detail(c, MB_DK_serial_fraction_compiled, "rounds' quartiles %.2f-%.2f (probe y = x * sin(x), compiled)",
               c->serial_fraction_compiled_q1, c->serial_fraction_compiled_q3);
    else
        detail(c, MB_DK_serial_fraction_compiled, "no compiled kernels");
    if (c->has_serial_fraction_rows)
        detail(c, MB_DK_serial_fraction_rows, "rounds' quartiles %.2f-%.2f (probe y = log_softmax(x, -1), "
               "compiled, rows in the L1)", c->serial_fraction_rows_q1, c->serial_fraction_rows_q3);
    if (c->has_serial_fraction_rows_l2)
        detail(c, MB_DK_serial_fraction_rows_l2, "rounds' quartiles %.2f-%.2f (rows of twice the %.0f KiB L1)",
               c->serial_fraction_rows_l2_q1, c->serial_fraction_rows_l2_q3, (double)c->l1_bytes / 1024.0);
    detail(c, MB_DK_cache_bandwidth_gbs, "a copy with both arrays in the last-level cache (plain stores)");
    detail(c, MB_DK_cache_mb, "%s", c->llc_from_knee ? "the measured knee" : "as the system reports it");
    detail(c, MB_DK_cache_retained_mb, "%s", c->llc_retained_bytes >= 1024
           ? "fitted to the warm copy sweep between the knee and the DRAM point (share = this / working set)"
           : "none: no size between the knee and the DRAM point, or no knee");
    detail(c, MB_DK_fp32_tflops, "FMA chains, register resident, all threads");
    detail(c, MB_DK_launch_overhead_us, "one executor pass over a tiny array (fork and join)");
    detail(c, MB_DK_exp_nonpos_gain, "softmax's exp over the exp op's tile rate, alternating samples");
    detail(c, MB_DK_first_touch_gbs, "above the mmap threshold; %.2f us per %d KiB page (transparent huge pages: "
           "%s)", c->touch_us_per_page, c->touch_page_kib, c->touch_thp[0] ? c->touch_thp : "unknown");
}

void mb_cal_to_device(const mb_cal_result *c, const char *command_line, mb_device *d)
{
    *d = c->dev; /* the keys probes set themselves */
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    snprintf(d->name, sizeof d->name, "local-cpu");
    snprintf(d->label, sizeof d->label, "%.100s (%d threads)",
             pv.cpu_model[0] ? pv.cpu_model : "CPU", c->threads);
    snprintf(d->kind, sizeof d->kind, "cpu");
    double best = c->copy_gbs;
    if (c->read_gbs > best) best = c->read_gbs;
    if (c->write_gbs > best) best = c->write_gbs;
    d->mem_bandwidth_gbs = best;
    d->measured_bandwidth_gbs = c->copy_gbs;
    d->read_bandwidth_gbs = c->read_gbs;
    d->read_stream_penalty = c->read_stream_penalty;
    d->read_stream_gain = c->read_stream_gain;
    d->serial_fraction = c->serial_fraction;
    if (c->has_serial_fraction_compiled)
        mb_device_set(d, MB_DK_serial_fraction_compiled, c->serial_fraction_compiled);
    if (c->has_serial_fraction_rows) mb_device_set(d, MB_DK_serial_fraction_rows, c->serial_fraction_rows);
    if (c->has_serial_fraction_rows_l2)
        mb_device_set(d, MB_DK_serial_fraction_rows_l2, c->serial_fraction_rows_l2);
    d->l1_kib = (double)c->l1_bytes / 1024.0;
    /* x86 caches allocate on ordinary stores: a store to a line not held
     * reads it first (2-vCPU EPYC guest, one thread, after a 64 MiB flush:
     * writing 1 MiB took 25.8 us, reading it 25.4 us, writing it again
     * warm 10.9 us); the executors stream tensors above the cache instead */
    d->write_allocate = 1;
    /* and stream a written tensor of the cache's size (kernels.h's nt_min_bytes) */
    d->stream_at_cache_size = 1;
    d->cache_bandwidth_gbs = c->cache_gbs;
    d->cache_mb = (double)c->llc_bytes / 1048576.0;
    /* nothing below the key's range (1 KiB): a fit of 0 is no share */
    d->cache_retained_mb = c->llc_retained_bytes >= 1024 ? (double)c->llc_retained_bytes / 1048576.0 : 0;
    /* rows in flight: one per thread, each in its core's own cache */
    d->onchip_kib = (double)mb_kern_core_cache_bytes() / 1024.0;
    d->sm_count = c->threads;
    d->fp32_tflops = c->fp32_tflops;
    d->bf16_tflops = c->fp32_tflops;
    d->launch_overhead_us = c->pass_overhead_us;
    d->mem_gb = c->mem_gb;
    for (int op = 0; op < MB_OP_COUNT; op++) d->op_geps[op] = c->op_geps[op];
    d->op_sincos_geps = c->sincos_geps;
    for (int op = 0; op < MB_OP_COUNT; op++) d->op_compiled_geps[op] = c->op_compiled_geps[op];
    d->op_sincos_compiled_geps = c->sincos_compiled_geps;
    d->exp_nonpos_gain = c->exp_nonpos_gain;
    d->host_ref_copy_gbs = c->ref_copy_gbs;
    d->host_ref_sin_geps = c->ref_op_geps[0];
    d->host_ref_sigmoid_geps = c->ref_op_geps[1];
    d->first_touch_gbs = c->first_touch_gbs;
    d->alloc_mmap_threshold_mb = c->alloc_mmap_threshold_mb;
    char llc[96], compiled[224] = "";
    if (c->has_serial_fraction_compiled)
        snprintf(compiled, sizeof compiled, ", compiled y = x * sin(x) (%.2f-%.2f)",
                 c->serial_fraction_compiled_q1, c->serial_fraction_compiled_q3);
    if (c->has_serial_fraction_rows) {
        size_t len = strlen(compiled);
        snprintf(compiled + len, sizeof compiled - len, ", compiled rows y = log_softmax(x, -1) (%.2f-%.2f",
                 c->serial_fraction_rows_q1, c->serial_fraction_rows_q3);
        len = strlen(compiled);
        if (c->has_serial_fraction_rows_l2)
            snprintf(compiled + len, sizeof compiled - len, "; beyond L1 %.2f-%.2f",
                     c->serial_fraction_rows_l2_q1, c->serial_fraction_rows_l2_q3);
        len = strlen(compiled);
        snprintf(compiled + len, sizeof compiled - len, ")");
    }
    if (c->llc_from_knee)
        snprintf(llc, sizeof llc, "LLC %.0f MiB from a measured knee (system reports %.0f MiB)",
                 (double)c->llc_bytes / 1048576.0, (double)c->llc_reported_bytes / 1048576.0);
    else
        snprintf(llc, sizeof llc, "LLC %.0f MiB as the system reports (no knee measured)",
                 (double)c->llc_bytes / 1048576.0);
    snprintf(d->source, sizeof d->source,
             "%.60s; %d threads, %lld-element f32 arrays; %s; bandwidth = medians over "
             "interleaved rounds (requested bytes, CV <= %.0f%%): copy %.2f GB/s non-temporal "
             "(%.2f plain), read %.2f, write %.2f non-temporal (%.2f plain); op rates: "
             "executor tiles in L1 (%s, CV <= %.0f%%), %d in compiled chains (%d chains built); "
             "overlap from y = sin(x) (rounds' quartiles %.2f-%.2f)%s, stream penalty from "
             "y = a+b+c+d",
             command_line ? command_line : "membound calibrate", c->threads,
             (long long)c->stream_n, llc, 100 * c->bw_spread, c->copy_gbs, c->copy_plain_gbs,
             c->read_gbs, c->write_gbs, c->write_plain_gbs, mb_kern_vector_isa(),
             100 * c->op_spread, c->compiled_ops, c->compiled_chains, c->serial_fraction_q1,
             c->serial_fraction_q3, compiled);
    snprintf(d->measured_at, sizeof d->measured_at, "%s %s", pv.host, pv.date);
}
