/* cuda.c — `membound calibrate --backend cuda`: the GPU's bandwidths, launch
 * overhead, kernel floor, FMA peak and per-op rates from probe kernels
 * (kernels/probes.cu) timed by the CUDA backend's session (measure.h's GPU
 * probes), into a device spec. Plain C; it does not time anything itself
 * (measure/ does), measure variants or write the spec file (the CLI does). */
#include "cal_int.h"
#include "kernels_cuda.h"
#include "mb_gemm.h"
#include "meas_gemm.h"

#include <stdio.h>
#include <string.h>

typedef struct probe_arg {
    const mb_meas_gpu *g;
    void *x, *y;
    int64_t n; /* f32 elements */
    int iters, count;
    mb_op op;
    double work; /* flops or elements of one launch */
} probe_arg;

static int probe_copy(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    const mb_meas_gpu *g = A->g;
    return mb_kern_cuda_copy(A->x, A->y, MB_F32, A->n, g->dev->sm_count, g->stream, err);
}
static int probe_read(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    const mb_meas_gpu *g = A->g;
    return mb_kern_cuda_read_sweep(A->x, A->n * 4, g->sink, g->dev->sm_count, g->stream, err);
}
static int probe_write(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    const mb_meas_gpu *g = A->g;
    return mb_kern_cuda_fill(A->y, MB_F32, 1.25f, A->n, g->dev->sm_count, g->stream, err);
}
static int probe_empty(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    const mb_meas_gpu *g = A->g;
    for (int i = 0; i < A->count; i++)
        if (mb_kern_cuda_empty(g->stream, err) != MB_OK) return MB_ERUN;
    return MB_OK;
}
static int probe_fma(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    const mb_meas_gpu *g = A->g;
    return mb_kern_cuda_fma(A->iters, g->sink, g->dev->sm_count, g->stream, &A->work, err);
}
static int probe_op(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    const mb_meas_gpu *g = A->g;
    return mb_kern_cuda_op_rate(A->op, A->iters, g->sink, g->dev->sm_count, g->stream, &A->work, err);
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

/* The bf16 GEMM's probe: a square product of this side through cuBLASLt, as
 * large as stas00 ml-engineering's MAMF search finds its best shapes
 * (products of 2048-10240 a side on A100 and H100). */
#define MB_CAL_GPU_GEMM_N 4096

/* bf16_gemm_tflops: the MB_CAL_GPU_GEMM_N^3 bf16 product timed through
 * cuBLASLt (measure/cuda_gemm.cu: L2 cleaned, median of 20, checked against
 * float64) over the model's tile and wave efficiency at that shape on d (so
 * the model gives the measured time back there). 0 and why in why when the
 * product cannot run, fails its check or beats the datasheet's dense peak
 * (peak_tflops, 0: none known) by 10%: the spec then keeps the table's
 * figure. */
static double probe_gemm(const mb_meas_config *c, const mb_device *d, double peak_tflops, char *why, size_t whysz)
{
    const mb_gemm g = {MB_CAL_GPU_GEMM_N, MB_CAL_GPU_GEMM_N, MB_CAL_GPU_GEMM_N, 1, MB_BF16, 0, 0};
    mb_meas_gemm_result r;
    mb_gemm_est e;
    mb_err err;
    if (mb_meas_cuda_gemm(c, &g, MB_MEAS_GEMM_NONE, 20, &r, &err) != MB_OK) {
        snprintf(why, whysz, "%.120s", err.msg);
        return 0;
    }
    if (!r.verified) {
        snprintf(why, whysz, "the product failed its float64 check (error %.2g, bound %.2g)", r.max_rel_err, r.tol);
        return 0;
    }
    if (mb_gemm_estimate(&g, d, &e, &err) != MB_OK || !(e.efficiency > 0)) {
        snprintf(why, whysz, "%.120s", err.msg);
        return 0;
    }
    const double rate = r.gflops_median / 1e3 / e.efficiency;
    if (peak_tflops > 0 && rate > 1.1 * peak_tflops) {
        snprintf(why, whysz, "%.0f TFLOP/s exceeds the dense bf16 peak %.0f by more than 10%%", rate, peak_tflops);
        return 0;
    }
    snprintf(why, whysz, "%d^3 through cuBLASLt, %.0f TFLOP/s at %.2f of the tiles' and waves' efficiency",
             MB_CAL_GPU_GEMM_N, r.gflops_median / 1e3, e.efficiency);
    return rate;
}

/* GPU calibration for `membound calibrate --backend cuda`: a spec INI's
 * device from the driver (name, SMs, L2, memory, peak bandwidth) and
 * measured copy / read / write bandwidth (f32 arrays >= 8x L2, cold, median
 * of 10), launch overhead (a batch of empty kernels queued behind the
 * blocking kernel, GPU side), fp32 FMA peak and
 * per-op rates (register-resident), the bf16 GEMM's rate (probe_gemm: the
 * table's, else none, when it cannot run). bf16_tflops and sfu_tops come
 * from the device table when it lists this GPU, else fp32 / 0 (said in
 * source).
 * summary gets the figures for the user. MB_ERUN when no GPU or a CUDA call
 * fails. */
int mb_cal_cuda(const mb_meas_config *c, mb_device *out, char *summary, size_t summarysz,
                                      mb_err *err)
{
    memset(out, 0, sizeof *out);
    if (summary && summarysz) summary[0] = '\0';
    mb_meas_gpu gpu;
    if (mb_meas_gpu_open(c, &gpu, err) != MB_OK) return MB_ERUN;
    const mb_meas_gpu *g = &gpu;
    const mb_kern_cuda_device *dev = g->dev;
    int64_t n = (int64_t)1 << 24;
    while (n * 4 < 8 * dev->l2_bytes) n <<= 1;
    probe_arg A;
    memset(&A, 0, sizeof A);
    A.g = g;
    A.n = n;
    if (mb_meas_gpu_alloc(n * 4, &A.x, err) != MB_OK) return MB_ERUN;
    int rc = MB_OK;
    if (mb_meas_gpu_alloc(n * 4, &A.y, err) != MB_OK) {
        mb_meas_gpu_free(A.x);
        return MB_ERUN;
    }
    double t_copy = 0, t_read = 0, t_write = 0, t_empty = 0, t_fma = 0;
    if (rc == MB_OK) rc = mb_kern_cuda_fill(A.x, MB_F32, 0.75f, n, g->dev->sm_count, g->stream, err);
    if (rc == MB_OK) rc = mb_meas_gpu_time(c, probe_copy, &A, 10, 1, &t_copy, err);
    if (rc == MB_OK) rc = mb_meas_gpu_time(c, probe_read, &A, 10, 1, &t_read, err);
    if (rc == MB_OK) rc = mb_meas_gpu_time(c, probe_write, &A, 10, 1, &t_write, err);
    /* launch overhead: a batch of empty kernels queued behind the block (so
     * the GPU runs them back to back: GPU-side cost per launch), at most
     * MB_MEAS_GPU_MAX_QUEUED so the launch queue never fills (a full queue
     * stalls the host until the block times out), median of 20 */
    A.count = MB_MEAS_GPU_MAX_QUEUED;
    const int empty_blocked = mb_meas_gpu_blocked();
    if (rc == MB_OK) rc = mb_meas_gpu_time(c, probe_empty, &A, 20, 0, &t_empty, err);
    /* the kernel floor: one empty kernel alone between the events, as
     * measure's event timing sees a plan's first kernel (launch, run-down,
     * the events' resolution), median of 20 */
    double t_floor = 0;
    A.count = 1;
    if (rc == MB_OK) rc = mb_meas_gpu_time(c, probe_empty, &A, 20, 0, &t_floor, err);
    A.count = MB_MEAS_GPU_MAX_QUEUED;
    A.iters = 4096;
    if (rc == MB_OK) rc = mb_meas_gpu_time(c, probe_fma, &A, 5, 0, &t_fma, err);
    double fma_flops = A.work;
    for (int op = MB_OP_ADD; rc == MB_OK && op < MB_OP_COUNT; op++) {
        double t_op = 0;
        A.op = (mb_op)op;
        A.iters = 256;
        rc = mb_meas_gpu_time(c, probe_op, &A, 5, 0, &t_op, err);
        if (rc == MB_OK && t_op > 0) out->op_geps[op] = A.work / t_op / 1e9;
    }
    mb_meas_gpu_free(A.x);
    mb_meas_gpu_free(A.y);
    if (rc != MB_OK) return rc;

    double bytes = (double)n * 4;
    double copy_gbs = 2 * bytes / t_copy / 1e9, read_gbs = bytes / t_read / 1e9, write_gbs = bytes / t_write / 1e9;
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    const mb_device *tab = table_match(dev->name);
    snprintf(out->name, sizeof out->name, "local-gpu");
    snprintf(out->label, sizeof out->label, "%.80s (%d SMs, L2 %.0f MiB, measured)", dev->name, g->dev->sm_count,
             dev->l2_bytes / 1048576.0);
    snprintf(out->kind, sizeof out->kind, "gpu");
    out->mem_bandwidth_gbs = dev->peak_bandwidth_gbs > 0 ? dev->peak_bandwidth_gbs : copy_gbs;
    out->measured_bandwidth_gbs = copy_gbs;
    out->cache_mb = dev->l2_bytes / 1048576.0;
    /* what one SM holds a row in (the model's one pass against multi-pass,
     * as the device table counts it): shared memory + registers per SM */
    out->onchip_kib = mb_kern_cuda_onchip_kib(dev);
    out->register_kib = 4.0 * (double)dev->regs_per_sm / 1024.0; /* what a row held in registers alone gets */
    out->sm_count = g->dev->sm_count;
    out->max_threads_per_sm = dev->max_threads_per_sm; /* rows in flight of multi-pass row kernels */
    out->fp32_tflops = fma_flops / t_fma / 1e12;
    out->bf16_tflops = tab ? tab->bf16_tflops : out->fp32_tflops;
    out->sfu_tops = tab ? tab->sfu_tops : 0;
    out->launch_overhead_us = t_empty / A.count * 1e6;
    mb_device_set(out, MB_DK_kernel_floor_us, t_floor * 1e6);
    out->mem_gb = dev->mem_bytes / 1e9;
    char gemm_why[192];
    out->bf16_gemm_tflops = probe_gemm(c, out, tab ? tab->bf16_tflops : 0, gemm_why, sizeof gemm_why);
    const int gemm_measured = out->bf16_gemm_tflops > 0;
    if (!gemm_measured) out->bf16_gemm_tflops = tab ? tab->bf16_gemm_tflops : 0;
    snprintf(out->source, sizeof out->source,
             "membound calibrate --backend cuda on %.60s (%s), driver %d.%d: peak = 2 x %d MHz x %d bit; "
             "copy %.0f, read %.0f, write %.0f GB/s (f32 n=%lld, cold, median of 10); launch = %d empty "
             "kernels%s; kernel floor = one empty kernel between events; fp32 = FMA chains; op rates register-resident; bf16 GEMM %s; bf16_tflops %s%.24s",
             dev->name, g->pci, dev->driver_version / 1000, dev->driver_version % 1000 / 10,
             dev->mem_clock_khz / 1000, dev->bus_width_bits, copy_gbs, read_gbs, write_gbs, (long long)n, A.count,
             empty_blocked && mb_meas_gpu_blocked() ? " behind a blocking kernel" : " back to back (host launch rate included)",
             gemm_measured ? "measured" : tab && tab->bf16_gemm_tflops > 0 ? "from the table (probe failed)" : "none (probe failed)",
             tab ? "and sfu_tops from table entry " : "= fp32 (GPU not in the table)", tab ? tab->name : "");
    snprintf(out->measured_at, sizeof out->measured_at, "%s %s", pv.host, pv.date);
    if (!summary || !summarysz) return MB_OK;
    /* how each figure came out: the summary's key lines (summary.c) */
    static char detail[MB_DK_COUNT][160];
    memset(detail, 0, sizeof detail);
    snprintf(detail[MB_DK_mem_bandwidth_gbs], sizeof detail[0], "peak from the driver: 2 x %d MHz x %d bit",
             dev->mem_clock_khz / 1000, dev->bus_width_bits);
    snprintf(detail[MB_DK_measured_bandwidth_gbs], sizeof detail[0],
             "copy, %.0f%% of peak (read %.0f, write %.0f GB/s; f32 n = %lld, cold, median of 10)",
             100 * copy_gbs / out->mem_bandwidth_gbs, read_gbs, write_gbs, (long long)n);
    snprintf(detail[MB_DK_launch_overhead_us], sizeof detail[0], "%d empty kernels%s", A.count,
             empty_blocked && mb_meas_gpu_blocked() ? " behind a blocking kernel (GPU side)"
                                                    : " back to back (host launch rate included)");
    snprintf(detail[MB_DK_kernel_floor_us], sizeof detail[0], "one empty kernel between events, median of 20");
    snprintf(detail[MB_DK_fp32_tflops], sizeof detail[0], "FMA chains, register resident");
    snprintf(detail[MB_DK_bf16_gemm_tflops], sizeof detail[0], "%s%.150s", gemm_measured ? "" : "not measured: ",
             gemm_why);
    FILE *fp = fmemopen(summary, summarysz, "w");
    if (!fp) {
        summary[0] = '\0';
        return MB_OK;
    }
    mb_cal_print_gpu(fp, out, (const char(*)[160])detail);
    fclose(fp);
    return MB_OK;
}
