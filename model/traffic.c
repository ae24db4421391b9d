/* traffic.c — bytes and roofline time of a plan on a device.
 *
 * Lecture count: each kernel's reads and writes by the traffic rule.
 * Cache-aware DRAM count (cold start): a read hits the last-level cache when
 * the distinct bytes touched since that tensor's last use (including the
 * other tensors the current kernel streams at the same time), plus its own
 * size, fit in the cache; the first touch of a tensor always misses; every
 * write reaches DRAM eventually (write-back caches evict dirty lines). On a
 * write-allocate device (a calibrated CPU) a store to a tensor the cache does
 * not hold reads it first, unless the tensor is larger than the cache (the
 * executors stream those), and the last kernel's writes are still in the
 * cache when the plan ends: their write-back falls after the timed plan.
 * 2-vCPU EPYC guest, the 4 lecture variants x plans at 2^18-2^22 f32, one
 * run: model - measured from -48% to +30% with neither rule, -26% to +30%
 * with both; 2^25 (streamed) unchanged. Leaving every written tensor that
 * still fits pending, not only the last kernel's, made eager chains 40% too
 * fast.
 * Beyond the cache a re-read is not all lost: where the spec has
 * cache_retained_mb (R, fitted by calibrate), one D bytes back still hits
 * for min(1, R / D) of its bytes (mb_cache_share; docs/model.md, "Between
 * 1x and 4x the cache").
 *
 * Time per kernel: launch_overhead + max(memory, compute)
 *                  + serial_fraction x min(memory, compute)
 * (serial_fraction_compiled for a compiled kernel of one read and one write,
 * serial_fraction_rows for a compiled row kernel in one pass, where the spec
 * has them: serial_fraction_of).
 * Memory is DRAM bytes / bandwidth (measured when the spec has it, else
 * datasheet), or, when the spec gives a read bandwidth and that takes
 * longer, DRAM read bytes / (read_bandwidth x (1 + read_stream_gain x
 * (reads - 1)) / (1 + read_stream_penalty x (reads - 1))), and never less than all its bytes (the lecture's count)
 * over the cache's own bandwidth when the spec gives one: a two-level
 * roofline, so cache-resident sizes are not free. Compute is the sum of n / rate over ops with a measured
 * rate (calibrated specs), plus max(flops / (FP32 peak / 2), SFU ops / SFU
 * peak) for the rest (the ops' flops are FP32 instructions; the peak counts
 * an FMA as two). It counts what the executor evaluates: a node equal to an
 * earlier one of its kernel once, and a sin and a cos of one operand as one
 * sincos at the measured sincos rate when the spec has one (2-vCPU Zen 4
 * guest, SLEEF u10 AVX-512, one thread, L1-resident: sin 2.72, cos 2.10,
 * sincos 2.01-2.07 Gelem/s, so sin + cos take 1.7x one sincos), and, in a
 * kernel the CPU executor interprets, the copy of each output out of its tile
 * buffer (and of each 16-bit read into one) at the measured copy rate (five
 * runs of bench/cpu_validate.sh re-modelled: 148 -> 151 of 171 steady rows
 * within 25%, the eager plans' -20..-30% rows closer). A raw copy (one copy
 * into its own dtype) is the loop calibrate's bandwidth probes time: its
 * memory term is all of its cost (seven runs re-modelled: copy at 2^25 from
 * +9..+44% to +4..+34%, 207 -> 209 of 227 steady rows within 25%).
 *
 * On a GPU thousands of warps hide one term behind the other: the table's
 * specs leave serial_fraction and the stream penalty at 0. On a CPU the same
 * cores issue the loads and do the math, and fewer read streams keep the
 * prefetchers busy: `membound calibrate` measures both from probe kernels
 * (2-vCPU EPYC guest, n = 2^25 f32: serial_fraction ~0.4, penalty ~0.12;
 * with max() alone the lecture's kernels came out 13-34% fast).
 *
 * With a framework's allocations (mb_estimate_plan_fw, --framework pytorch)
 * each kernel adds the first touch of the fresh pages of its outputs above
 * the mmap threshold (alloc_time_s has the rule and the figures). */
#include "model_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

const char *mb_framework_name(mb_framework f)
{
    return f == MB_FW_PYTORCH ? "pytorch" : "none";
}

int mb_framework_parse(const char *s, mb_framework *out)
{
    if (s && !strcmp(s, "none")) { *out = MB_FW_NONE; return MB_OK; }
    if (s && !strcmp(s, "pytorch")) { *out = MB_FW_PYTORCH; return MB_OK; }
    return MB_EINPUT;
}

const char *mb_phase_name(mb_phase ph)
{
    return ph == MB_PHASE_FORWARD ? "forward" : ph == MB_PHASE_BACKWARD ? "backward" : "all";
}

int mb_phase_parse(const char *s, mb_phase *out)
{
    for (int ph = 0; ph < MB_PHASE_COUNT; ph++)
        if (s && !strcmp(s, mb_phase_name((mb_phase)ph))) { *out = (mb_phase)ph; return MB_OK; }
    return MB_EINPUT;
}

/* The lecture's count of kernel K at shape s on d (the traffic rule): each
 * distinct tensor it reads and writes once, and a row kernel that does not
 * fit d's on-chip storage its re-reads in every pass after the first. */
static void lecture_bytes(const mb_graph *g, const mb_kernel *K, mb_shape s, const mb_device *d, mb_framework fw,
                          mb_cost *c)
{
    for (int r = 0; r < K->n_reads; r++) c->read_bytes += mb_tensor_bytes_at(g, K->reads[r], s);
    for (int w = 0; w < K->n_writes; w++) c->write_bytes += mb_tensor_bytes_at(g, K->writes[w], s);
    c->passes = 1;
    const int torch_norm = mb_kernel_reread_rows(K, d, fw); /* PyTorch's layer_norm: no row on chip */
    if (!torch_norm && (K->passes <= 1 || mb_kernel_onepass_max_cols(K, d) >= s.cols)) return;
    c->passes = torch_norm ? 2 : K->passes;
    for (int r = 0; r < K->n_reads; r++)
        c->read_bytes += (int64_t)(mb_kernel_read_passes_on(g, K, r, d, fw) - 1) * mb_tensor_bytes_at(g, K->reads[r], s);
}

/* Adds kernel cost c into the plan's total t. */
static void add_cost(mb_cost *t, const mb_cost *c)
{
    t->read_bytes += c->read_bytes;
    t->write_bytes += c->write_bytes;
    t->dram_read_bytes += c->dram_read_bytes;
    t->dram_write_bytes += c->dram_write_bytes;
    t->flops += c->flops;
    t->sfu_ops += c->sfu_ops;
    t->mem_s += c->mem_s;
    t->compute_s += c->compute_s;
    t->launch_s += c->launch_s;
    t->alloc_s += c->alloc_s;
    t->time_s += c->time_s;
    t->host_s += c->host_s;
}

/* The host's timeline over the timed kernels of p (docs/model.md, "The
 * host"): the host issues kernel k host_s after k - 1 (I_k), the device
 * starts it at max(I_k, E_{k-1}) and ends it time_s later (E_k). The device
 * is busy ahead_s with the flush when the host starts (E_{-1}); the region
 * the events time opens when the device reaches it, at max(0, ahead_s).
 * Sets each kernel's start_s and waits_on_host; returns the region's end. */
static double timeline(const mb_plan *p, const mb_device *d, double ahead_s, mb_cost *per_kernel)
{
    double issue = 0, end = ahead_s, open = ahead_s;
    int seen_fwd = 0, seen_bwd = 0, called_bwd = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        mb_cost *c = &per_kernel[k];
        if (!c->timed) continue;
        int *seen = p->kernels[k].is_backward ? &seen_bwd : &seen_fwd;
        c->host_s = mb_kernel_host_s(p, k, !*seen, d);
        *seen |= !p->kernels[k].engine; /* the phase's call comes after the engine's cast */
        if (p->kernels[k].is_backward && !called_bwd) { /* y.backward(dy) enters the engine first */
            c->host_s += mb_host_backward_call_s(d);
            called_bwd = 1;
        }
        issue += c->host_s;
        c->waits_on_host = issue > end;
        double start = c->waits_on_host ? issue : end;
        c->start_s = start - open;
        end = start + c->time_s;
    }
    return end - open;
}

/* The estimate of plan p at size n (rank 1 or 2) on d, with framework fw's
 * allocations in the time (MB_FW_NONE: none), in three steps: the lecture's
 * bytes, the cache-aware DRAM bytes (dram.c), each kernel's time
 * (roofline.c). */
static int estimate(const mb_plan *p, mb_shape n, const mb_device *d, const mb_timing *tm, mb_estimate *out,
                    mb_err *err)
{
    const mb_framework fw = tm ? tm->fw : MB_FW_NONE;
    const mb_phase phase = tm ? tm->phase : MB_PHASE_ALL;
    const int gpu = strcmp(d->kind, "cpu") != 0;
    const int host = fw == MB_FW_PYTORCH && gpu; /* the host's timeline */
    memset(out, 0, sizeof *out);
    if (tm && !(tm->flush_mb >= 0 && tm->flush_mb <= 1e9))
        return mb_err_set(err, MB_EINPUT, "flush of %g MB is out of range [0, 1e9]", tm->flush_mb);
    if (n.rows < 1 || n.cols < 1 || n.rows > MB_N_MAX / n.cols)
        return mb_err_set(err, MB_EINPUT, "n = %lld x %lld is out of range [1, 2^44]", (long long)n.rows,
                          (long long)n.cols);
    if (fw == MB_FW_PYTORCH && !gpu && !(d->first_touch_gbs > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no first_touch_gbs: the framework's "
                          "allocations cannot be modelled (membound calibrate measures it)", d->name);
    const mb_graph *g = p->g;
    n = mb_graph_shape_at(g, n);
    n.blocks = mb_device_partial_blocks(d, n.rows);
    int rc0 = mb_graph_check_shape(g, n, err);
    if (rc0) return rc0;
    if (g->rank != (n.rank == 2 ? 2 : 1) && g->has_row_ops)
        return mb_err_set(err, MB_EINPUT, "variant '%s' is %d-D: give %s", g->name, g->rank,
                          g->rank == 2 ? "a shape, --shape ROWSxCOLS" : "--n");
    out->bandwidth_gbs = mb_device_bandwidth_gbs(d, &out->bandwidth_source);
    if (!(out->bandwidth_gbs > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no bandwidth", d->name);
    out->per_kernel = calloc((size_t)(p->n_kernels ? p->n_kernels : 1), sizeof(mb_cost));
    int64_t *rfo = calloc((size_t)(p->n_kernels ? p->n_kernels : 1), sizeof(int64_t)); /* line fills */
    if (!out->per_kernel || !rfo) {
        free(rfo);
        mb_estimate_free(out);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    out->n_kernels = p->n_kernels;
    for (int k = 0; k < p->n_kernels; k++) lecture_bytes(g, &p->kernels[k], n, d, fw, &out->per_kernel[k]);
    if (mb_dram_bytes(p, n, d, fw, out->per_kernel, rfo) != 0) {
        free(rfo);
        mb_estimate_free(out);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    double mem_bound_s = 0, compute_bound_s = 0;
    int first = 1, n_timed = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        mb_cost *c = &out->per_kernel[k];
        assert(c->read_bytes >= 0 && c->write_bytes >= 0 && c->dram_read_bytes >= 0 && c->dram_write_bytes >= 0);
        assert(c->dram_write_bytes <= c->write_bytes);
        c->timed = phase == MB_PHASE_ALL || (phase == MB_PHASE_BACKWARD) == (p->kernels[k].is_backward != 0);
        mb_kernel_time(p, k, c->timed && first, n, d, fw, out->bandwidth_gbs, rfo[k], c);
        if (!c->timed) continue;
        first = 0;
        n_timed++;
        add_cost(&out->total, c);
        if (c->compute_s > c->mem_s) compute_bound_s += c->compute_s;
        else mem_bound_s += c->mem_s;
    }
    free(rfo);
    if (n_timed == 0) {
        mb_estimate_free(out);
        return mb_err_set(err, MB_EINPUT, "plan %s of '%s' has no %s kernels", mb_plan_name(p->kind), g->name,
                          mb_phase_name(phase));
    }
    /* the plan is bound by whichever term contributes most of its time */
    out->total.bound = mb_bound_of(out->total.launch_s, mem_bound_s, compute_bound_s);
    out->total.timed = 1;
    if (host) { /* the host issues each kernel: the timeline's end */
        double ahead_s = tm->flush_mb * 1e6 / (out->bandwidth_gbs * 1e9);
        double device_s = out->total.time_s;
        out->total.time_s = timeline(p, d, ahead_s, out->per_kernel);
        out->total.host_s = 0;
        for (int k = 0; k < p->n_kernels; k++) out->total.host_s += out->per_kernel[k].timed ? out->per_kernel[k].host_s : 0;
        /* the plan waits on the host when the host's issue, less the
         * flush's head start, outlasts the device's own work (max(sum h,
         * sum g), the reference's rule) */
        out->total.waits_on_host = out->total.host_s - ahead_s > device_s;
        assert(out->total.time_s >= device_s * (1 - 1e-12));
    }
    for (int s = 0; s < p->n_saved; s++) out->saved_bytes += mb_tensor_bytes_at(g, p->saved[s], n);
    return MB_OK;
}

int mb_estimate_plan(const mb_plan *p, int64_t n, const mb_device *d, mb_estimate *out, mb_err *err)
{
    return estimate(p, mb_shape_1d(n), d, NULL, out, err);
}

int mb_estimate_plan_shape(const mb_plan *p, mb_shape s, const mb_device *d, mb_estimate *out, mb_err *err)
{
    return estimate(p, s, d, NULL, out, err);
}

int mb_estimate_plan_fw(const mb_plan *p, int64_t n, const mb_device *d, mb_framework fw,
                        mb_estimate *out, mb_err *err)
{
    mb_timing t = {.fw = fw};
    return estimate(p, mb_shape_1d(n), d, &t, out, err);
}

int mb_estimate_plan_timed(const mb_plan *p, mb_shape s, const mb_device *d, const mb_timing *t,
                           mb_estimate *out, mb_err *err)
{
    return estimate(p, s, d, t, out, err);
}

void mb_estimate_free(mb_estimate *e)
{
    free(e->per_kernel);
    e->per_kernel = NULL;
}
