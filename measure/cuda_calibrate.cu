/* cuda_calibrate.cu — `membound calibrate --backend cuda`: the GPU's
 * bandwidths, launch overhead, FMA peak and per-op rates from probe kernels
 * (kernels/probes.cu) timed with events, into a device spec. Host code only;
 * it does not measure variants (the protocol does) or write the spec file
 * (the CLI does). */
#include "cuda_int.h"
#include "mb_cuda_check.cuh" /* CUDA_TRY */

#include <stdio.h>
#include <string.h>

#define S (*gs) /* the session, through the handle gs in scope (cuda_int.h) */

/* Median seconds of `samples` runs of fn(arg) between events (cold: after
 * the clean flush). fn enqueues at most MB_BLOCK_MAX_LAUNCHES launches: they
 * are queued behind the blocking kernel when it is enabled. A sample whose
 * block timed out holds host launch latency: it is dropped, the block is
 * turned off (said once) and the sample taken again without it. */
typedef int (*probe_fn)(void *arg, mb_err *err);

static int time_probe(mb_gpu_session *gs, const mb_meas_config *c, probe_fn fn, void *arg, int samples, int cold, double *median_s,
                      mb_err *err)
{
    cudaEvent_t e0, e1;
    CUDA_TRY(cudaEventCreate(&e0));
    if (CUDA_CHECK(cudaEventCreate(&e1)) != MB_OK) {
        (void)cudaEventDestroy(e0); /* clean-up of a failed path: the first error is the one reported */
        return MB_ERUN;
    }
    double t[64];
    if (samples > 64) samples = 64;
    int rc = fn(arg, err); /* warm-up, un-blocked (module loading) */
    if (rc == MB_OK) rc = CUDA_CHECK(cudaStreamSynchronize(S.stream));
    int s = 0, tries = 0;
    while (s < samples && rc == MB_OK && tries++ < 4 * samples) {
        if (cold && (rc = mb_gpu_clean_l2(gs, err)) != MB_OK) break;
        const int block = S.use_block;
        *S.flag = 0;
        *S.timed_out = 0;
        __sync_synchronize();
        if (block && (rc = mb_kern_cuda_block(S.flag_dev, 1.0, S.timed_out_dev, S.stream, err)) != MB_OK) break;
        rc = CUDA_CHECK(cudaEventRecord(e0, S.stream));
        if (rc == MB_OK) rc = fn(arg, err);
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventRecord(e1, S.stream));
        /* released on every path: a block left holding spins to its 1 s time-out */
        __sync_synchronize();
        *S.flag = 1;
        float ms = 0;
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventSynchronize(e1));
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rc != MB_OK) break;
        if (block && *S.timed_out) {
            S.use_block = 0;
            mb_meas_note(c, MB_MEAS_NOTE,
                         "cuda: the blocking kernel timed out in calibration (launches took over 1 s to "
                         "enqueue); sample dropped, timing continues without it (launch latency now included)");
            continue;
        }
        t[s++] = ms * 1e-3;
    }
    if (rc == MB_OK && s < samples) rc = mb_err_set(err, MB_ERUN, "probe timing: %d of %d samples valid", s, samples);
    if (rc == MB_OK) {
        mb_meas_stats st;
        mb_meas_stats_compute(t, samples, &st);
        *median_s = st.median_s;
    }
    /* clean-up: a failure here can only repeat an earlier (sticky) error */
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    return rc;
}

typedef struct probe_arg {
    mb_gpu_session *gs;
    void *x, *y;
    int64_t n; /* f32 elements */
    int iters, count;
    mb_op op;
    double work; /* flops or elements of one launch */
} probe_arg;

static int probe_copy(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    mb_gpu_session *gs = A->gs;
    return mb_kern_cuda_copy(A->x, A->y, MB_F32, A->n, S.dev.sm_count, S.stream, err);
}
static int probe_read(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    mb_gpu_session *gs = A->gs;
    return mb_kern_cuda_read_sweep(A->x, A->n * 4, S.sink, S.dev.sm_count, S.stream, err);
}
static int probe_write(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    mb_gpu_session *gs = A->gs;
    return mb_kern_cuda_fill(A->y, MB_F32, 1.25f, A->n, S.dev.sm_count, S.stream, err);
}
static int probe_empty(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    mb_gpu_session *gs = A->gs;
    for (int i = 0; i < A->count; i++)
        if (mb_kern_cuda_empty(S.stream, err) != MB_OK) return MB_ERUN;
    return MB_OK;
}
static int probe_fma(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    mb_gpu_session *gs = A->gs;
    return mb_kern_cuda_fma(A->iters, S.sink, S.dev.sm_count, S.stream, &A->work, err);
}
static int probe_op(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    mb_gpu_session *gs = A->gs;
    return mb_kern_cuda_op_rate(A->op, A->iters, S.sink, S.dev.sm_count, S.stream, &A->work, err);
}

/* The table entry whose label names this GPU (e.g. "NVIDIA H200"), or NULL. */
static const mb_device *table_match(const char *gpu)
{
    const mb_device *best = NULL;
    size_t best_len = 0;
    for (int i = 0; i < mb_device_count(); i++) {
        const mb_device *d = mb_device_at(i);
        if (strcmp(d->kind, "gpu") != 0) continue;
        /* the driver's name ("NVIDIA H200") is a prefix of the label ("NVIDIA H200 SXM 141GB") */
        size_t len = strlen(gpu);
        if (len > 0 && !strncmp(d->label, gpu, len) && (d->label[len] == ' ' || d->label[len] == '\0') &&
            len > best_len)
            best = d, best_len = len;
    }
    return best;
}

/* GPU calibration for `membound calibrate --backend cuda`: a spec INI's
 * device from the driver (name, SMs, L2, memory, peak bandwidth) and
 * measured copy / read / write bandwidth (f32 arrays >= 8x L2, cold, median
 * of 10), launch overhead (a batch of empty kernels queued behind the
 * blocking kernel, GPU side), fp32 FMA peak and
 * per-op rates (register-resident). bf16_tflops and sfu_tops come from the
 * device table when it lists this GPU, else fp32 / 0 (said in source).
 * summary gets the figures for the user. MB_ERUN when no GPU or a CUDA call
 * fails. */
extern "C" int mb_meas_cuda_calibrate(const mb_meas_config *c, mb_device *out, char *summary, size_t summarysz,
                                      mb_err *err)
{
    memset(out, 0, sizeof *out);
    if (summary && summarysz) summary[0] = '\0';
    mb_gpu_session *gs = mb_gpu_open(c, err);
    if (!gs) return MB_ERUN;
    int64_t n = (int64_t)1 << 24;
    while (n * 4 < 8 * S.dev.l2_bytes) n <<= 1;
    probe_arg A;
    memset(&A, 0, sizeof A);
    A.gs = gs;
    A.n = n;
    CUDA_TRY(cudaMalloc(&A.x, (size_t)n * 4));
    int rc = MB_OK;
    if (CUDA_CHECK(cudaMalloc(&A.y, (size_t)n * 4)) != MB_OK) {
        (void)cudaFree(A.x); /* clean-up of a failed path: the first error is the one reported */
        return MB_ERUN;
    }
    double t_copy = 0, t_read = 0, t_write = 0, t_empty = 0, t_fma = 0;
    if (rc == MB_OK) rc = mb_kern_cuda_fill(A.x, MB_F32, 0.75f, n, S.dev.sm_count, S.stream, err);
    if (rc == MB_OK) rc = time_probe(gs, c, probe_copy, &A, 10, 1, &t_copy, err);
    if (rc == MB_OK) rc = time_probe(gs, c, probe_read, &A, 10, 1, &t_read, err);
    if (rc == MB_OK) rc = time_probe(gs, c, probe_write, &A, 10, 1, &t_write, err);
    /* launch overhead: a batch of empty kernels queued behind the block (so
     * the GPU runs them back to back: GPU-side cost per launch), at most
     * MB_BLOCK_MAX_LAUNCHES so the launch queue never fills (a full queue
     * stalls the host until the block times out), median of 20 */
    A.count = MB_BLOCK_MAX_LAUNCHES;
    const int empty_blocked = S.use_block;
    if (rc == MB_OK) rc = time_probe(gs, c, probe_empty, &A, 20, 0, &t_empty, err);
    /* the kernel floor: one empty kernel alone between the events, as
     * measure's event timing sees a plan's first kernel (launch, run-down,
     * the events' resolution), median of 20 */
    double t_floor = 0;
    A.count = 1;
    if (rc == MB_OK) rc = time_probe(gs, c, probe_empty, &A, 20, 0, &t_floor, err);
    A.count = MB_BLOCK_MAX_LAUNCHES;
    A.iters = 4096;
    if (rc == MB_OK) rc = time_probe(gs, c, probe_fma, &A, 5, 0, &t_fma, err);
    double fma_flops = A.work;
    for (int op = MB_OP_ADD; rc == MB_OK && op < MB_OP_COUNT; op++) {
        double t_op = 0;
        A.op = (mb_op)op;
        A.iters = 256;
        rc = time_probe(gs, c, probe_op, &A, 5, 0, &t_op, err);
        if (rc == MB_OK && t_op > 0) out->op_geps[op] = A.work / t_op / 1e9;
    }
    /* clean-up: a failure can only repeat a sticky error, reported by the next checked call */
    (void)cudaFree(A.x);
    (void)cudaFree(A.y);
    if (rc != MB_OK) return rc;

    double bytes = (double)n * 4;
    double copy_gbs = 2 * bytes / t_copy / 1e9, read_gbs = bytes / t_read / 1e9, write_gbs = bytes / t_write / 1e9;
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    const mb_device *tab = table_match(S.dev.name);
    snprintf(out->name, sizeof out->name, "local-gpu");
    snprintf(out->label, sizeof out->label, "%.80s (%d SMs, L2 %.0f MiB, measured)", S.dev.name, S.dev.sm_count,
             S.dev.l2_bytes / 1048576.0);
    snprintf(out->kind, sizeof out->kind, "gpu");
    out->mem_bandwidth_gbs = S.dev.peak_bandwidth_gbs > 0 ? S.dev.peak_bandwidth_gbs : copy_gbs;
    out->measured_bandwidth_gbs = copy_gbs;
    out->cache_mb = S.dev.l2_bytes / 1048576.0;
    /* what one SM holds a row in (the model's one pass against multi-pass,
     * as the device table counts it): shared memory + registers per SM */
    out->onchip_kib = mb_kern_cuda_onchip_kib(&S.dev);
    out->sm_count = S.dev.sm_count;
    out->max_threads_per_sm = S.dev.max_threads_per_sm; /* rows in flight of multi-pass row kernels */
    out->fp32_tflops = fma_flops / t_fma / 1e12;
    out->bf16_tflops = tab ? tab->bf16_tflops : out->fp32_tflops;
    out->sfu_tops = tab ? tab->sfu_tops : 0;
    out->launch_overhead_us = t_empty / A.count * 1e6;
    mb_device_set(out, MB_DK_kernel_floor_us, t_floor * 1e6);
    out->mem_gb = S.dev.mem_bytes / 1e9;
    snprintf(out->source, sizeof out->source,
             "membound calibrate --backend cuda on %.60s (%s), driver %d.%d: peak = 2 x %d MHz x %d bit; "
             "copy %.0f, read %.0f, write %.0f GB/s (f32 n=%lld, cold, median of 10); launch = %d empty "
             "kernels%s; kernel floor = one empty kernel between events; fp32 = FMA chains; op rates register-resident; bf16_tflops %s%.24s",
             S.dev.name, S.pci, S.dev.driver_version / 1000, S.dev.driver_version % 1000 / 10,
             S.dev.mem_clock_khz / 1000, S.dev.bus_width_bits, copy_gbs, read_gbs, write_gbs, (long long)n, A.count,
             empty_blocked && S.use_block ? " behind a blocking kernel" : " back to back (host launch rate included)",
             tab ? "and sfu_tops from table entry " : "= fp32 (GPU not in the table)", tab ? tab->name : "");
    snprintf(out->measured_at, sizeof out->measured_at, "%s %s", pv.host, pv.date);
    if (!summary || !summarysz) return MB_OK;
    size_t used = 0;
    used += (size_t)snprintf(summary, summarysz,
                             "%s\n  peak %.0f GB/s (driver), copy %.0f GB/s (%.0f%%), read %.0f GB/s, write %.0f GB/s\n"
                             "  fp32 FMA %.1f TFLOP/s, launch overhead %.2f us per kernel (GPU side), kernel "
                             "floor %.2f us (one kernel between events)\n"
                             "  op rates (1e9 elements/s, register-resident):\n",
                             out->label, out->mem_bandwidth_gbs, copy_gbs, 100 * copy_gbs / out->mem_bandwidth_gbs,
                             read_gbs, write_gbs, out->fp32_tflops, out->launch_overhead_us,
                             out->kernel_floor_us);
    for (int op = MB_OP_ADD; op < MB_OP_COUNT && used < summarysz; op++)
        used += (size_t)snprintf(summary + used, summarysz - used, "    %-10s %9.1f%s", mb_op_name((mb_op)op),
                                 out->op_geps[op], (op - MB_OP_ADD) % 4 == 3 ? "\n" : "");
    if (used < summarysz) snprintf(summary + used, summarysz - used, "\n");
    return MB_OK;
}
