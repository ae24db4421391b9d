/* cuda_backend.cu — the harness's CUDA backend: a plan's kernels timed with
 * events (blocking kernel ahead of the measured launches, L2 flushed between
 * samples outside the timed region, median of >= 10 samples with a
 * noise-based stop), checked against the float64 reference, and counted with
 * CUPTI in separate runs once a sanity gate (the copy kernel's DRAM bytes)
 * has passed; GPU calibration into a device spec; provenance lines.
 * Host code only: the kernels live in kernels/ (the .cu files). It does not choose
 * variants or sizes, and writes no files (the CLI does). */
#include "cuda_backend.h"
#include "count_check.h"
#include "kernels_cuda.h"
#include "mb_cuda_check.cuh" /* CUDA_TRY */
#include "mb_cupti.h"
#include "mb_ops.h"
#include "measure.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- notes ------------------------------------------------------------------ */

static void note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("membound: note: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- clocks: NVML when the driver ships it, else measured / attributes ------- */

typedef struct nvml_dev_st *nvml_dev;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_pci_fn)(const char *, nvml_dev *);
typedef int (*nvml_clock_fn)(nvml_dev, int, unsigned int *);
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

static struct {
    int tried, ok;
    nvml_dev dev;
    nvml_clock_fn clock;
} nvml;

static void nvml_open(const char *pci_bus_id)
{
    if (nvml.tried) return;
    nvml.tried = 1;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_by_pci_fn by_pci = (nvml_by_pci_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml.clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
    if (!init || !by_pci || !nvml.clock || init() != 0 || by_pci(pci_bus_id, &nvml.dev) != 0) return;
    nvml.ok = 1;
}

typedef struct clocks {
    double sm_mhz, mem_mhz;
    const char *source; /* "nvml" or "clock64" (memory clock then: peak attribute) */
} clocks;

/* ---- the session: one device per process ----------------------------------- */

enum { CNT_NOT_TRIED = 0, CNT_TRUSTED, CNT_UNTRUSTED, CNT_UNAVAILABLE };

static struct session {
    int state; /* 0 not opened, 1 ready, -1 failed (why) */
    char why[512];
    mb_kern_cuda_device dev;
    char pci[32];
    cudaStream_t stream;
    void *flush;       /* 2x L2, memset before every timed sample and counted range */
    void *clean;       /* 2x L2, read after the memset (leaves L2 holding clean lines) */
    void *drain;       /* 2x L2, read at the end of a counted plan range */
    int64_t l2x2_bytes;
    double drain_read_bytes, drain_write_bytes; /* counted drain-only range (subtracted) */
    float *sink;
    volatile int *flag; /* host-mapped: releases the blocking kernel */
    int *flag_dev;
    volatile int *timed_out;
    int *timed_out_dev;
    int use_block;
    unsigned flush_seq;
    int sampled_noted;
    /* counters */
    int cnt;
    char cnt_text[160]; /* the CSV's counters column for trusted/untrusted/unavailable */
    char gate[320];     /* the sanity gate's result, for provenance */
    mb_cupti *cupti;
    double count_s;     /* wall time spent in counted runs (CUPTI overhead included) */
    int count_rows;
    /* clocks seen at row starts and ends */
    double sm_min, sm_max, mem_min, mem_max;
    const char *clock_source;
    int rows;
} S;

static int clocks_read(clocks *c)
{
    memset(c, 0, sizeof *c);
    if (nvml.ok) {
        unsigned sm = 0, mem = 0;
        if (nvml.clock(nvml.dev, NVML_CLOCK_SM, &sm) == 0 && nvml.clock(nvml.dev, NVML_CLOCK_MEM, &mem) == 0) {
            c->sm_mhz = sm;
            c->mem_mhz = mem;
            c->source = "nvml";
            return MB_OK;
        }
    }
    mb_err e;
    double mhz = 0;
    if (mb_kern_cuda_sm_clock_mhz(S.stream, &mhz, &e) != MB_OK) return MB_ERUN;
    c->sm_mhz = mhz;
    c->mem_mhz = S.dev.mem_clock_khz / 1e3;
    c->source = "clock64";
    return MB_OK;
}

static void clocks_note(const clocks *c)
{
    if (c->sm_mhz <= 0) return;
    if (!S.sm_max) S.sm_min = S.sm_max = c->sm_mhz, S.mem_min = S.mem_max = c->mem_mhz;
    if (c->sm_mhz < S.sm_min) S.sm_min = c->sm_mhz;
    if (c->sm_mhz > S.sm_max) S.sm_max = c->sm_mhz;
    if (c->mem_mhz < S.mem_min) S.mem_min = c->mem_mhz;
    if (c->mem_mhz > S.mem_max) S.mem_max = c->mem_mhz;
    S.clock_source = c->source;
}

static int session_setup(mb_err *err)
{
    int ordinal = 0;
    const char *env = getenv("MB_CUDA_DEVICE");
    if (env && *env) ordinal = atoi(env);
    if (mb_kern_cuda_open(ordinal, &S.dev, err) != MB_OK) return MB_ERUN;
    CUDA_TRY(cudaDeviceGetPCIBusId(S.pci, sizeof S.pci, ordinal));
    CUDA_TRY(cudaStreamCreateWithFlags(&S.stream, cudaStreamNonBlocking));
    S.l2x2_bytes = 2 * (S.dev.l2_bytes > 0 ? S.dev.l2_bytes : (int64_t)64 << 20);
    S.l2x2_bytes = (S.l2x2_bytes + 255) & ~(int64_t)255;
    CUDA_TRY(cudaMalloc(&S.flush, (size_t)S.l2x2_bytes));
    CUDA_TRY(cudaMalloc(&S.clean, (size_t)S.l2x2_bytes));
    CUDA_TRY(cudaMalloc((void **)&S.sink, 256));
    CUDA_TRY(cudaMemset(S.sink, 0, 256));
    /* non-zero contents: no zero-page or compression shortcut can apply */
    CUDA_TRY(cudaMemset(S.flush, 0x5a, (size_t)S.l2x2_bytes));
    CUDA_TRY(cudaMemset(S.clean, 0x3c, (size_t)S.l2x2_bytes));
    /* the memsets ran on the legacy stream, which does not order the
     * non-blocking timing stream: wait for them here */
    CUDA_TRY(cudaDeviceSynchronize());
    CUDA_TRY(cudaHostAlloc((void **)&S.flag, 2 * sizeof(int), cudaHostAllocMapped));
    S.timed_out = S.flag + 1;
    CUDA_TRY(cudaHostGetDevicePointer((void **)&S.flag_dev, (void *)S.flag, 0));
    S.timed_out_dev = S.flag_dev + 1;
    const char *nb = getenv("MB_CUDA_NO_BLOCK");
    S.use_block = !(nb && *nb && *nb != '0');
    nvml_open(S.pci);
    clocks c;
    if (clocks_read(&c) == MB_OK) clocks_note(&c);
    return MB_OK;
}

/* Opens the device once per process; a failure is kept (S.why) and
 * reported again by every later call. */
static int session_open(mb_err *err)
{
    if (S.state == 1) return MB_OK;
    if (S.state == -1) return mb_err_set(err, MB_ERUN, "%s", S.why);
    S.state = -1;
    mb_err e;
    e.msg[0] = '\0';
    if (session_setup(&e) != MB_OK) {
        snprintf(S.why, sizeof S.why, "%s", e.msg);
        return mb_err_set(err, MB_ERUN, "%s", e.msg);
    }
    S.state = 1;
    note("cuda: %s (%s), cc %d.%d, %d SMs, L2 %.1f MiB, %.1f GB, peak %.0f GB/s (2 x %d MHz x %d bit), "
         "driver %d.%d, runtime %d.%d",
         S.dev.name, S.pci, S.dev.cc_major, S.dev.cc_minor, S.dev.sm_count, S.dev.l2_bytes / 1048576.0,
         S.dev.mem_bytes / 1e9, S.dev.peak_bandwidth_gbs, S.dev.mem_clock_khz / 1000, S.dev.bus_width_bits,
         S.dev.driver_version / 1000, S.dev.driver_version % 1000 / 10, S.dev.runtime_version / 1000,
         S.dev.runtime_version % 1000 / 10);
    return MB_OK;
}

/* The dirty half of the flush: a memset of 2x L2 (varying byte, so no write
 * can be elided) and a reset of persisting lines, then waits. Leaves ~L2 of
 * dirty lines behind: always followed by clean_l2's read sweep. */
static int flush_l2(mb_err *err)
{
    S.flush_seq++;
    CUDA_TRY(cudaMemsetAsync(S.flush, 0x40 + (int)(S.flush_seq & 0x3f), (size_t)S.l2x2_bytes, S.stream));
    if (S.dev.persisting_l2_max_bytes > 0 && cudaCtxResetPersistingL2Cache() != cudaSuccess)
        (void)cudaGetLastError(); /* not supported here: nothing can persist, nothing to reset */
    CUDA_TRY(cudaStreamSynchronize(S.stream));
    return MB_OK;
}

/* The flush before every timed sample and every counted range, outside the
 * timed / counted region: the memset flush (evicts L2, leaves dirty lines),
 * then a read sweep of another 2x L2 buffer, which writes those dirty lines
 * back here and leaves L2 holding only clean lines. With the memset alone,
 * ~L2 of dirty lines would be written back inside the next timed kernel
 * (60 MB on an H200: tens of us, the size of a 2^22..2^26 sample). Same
 * protocol as bench/torch_gpu.py's Flusher (write 2x L2, read another 2x L2). */
static int clean_l2(mb_err *err)
{
    if (flush_l2(err) != MB_OK) return MB_ERUN;
    if (mb_kern_cuda_read_sweep(S.clean, S.l2x2_bytes, S.sink, S.dev.sm_count, S.stream, err) != MB_OK)
        return MB_ERUN;
    CUDA_TRY(cudaStreamSynchronize(S.stream));
    return MB_OK;
}

/* ---- one timed sample ------------------------------------------------------- */

/* Launches queued behind the blocking kernel at most (kernels; each comes
 * with an event record): the launch queue holds ~32 entries (nvbench's
 * blocking_kernel note), and a launch that finds it full stalls the host
 * until the block times out. Plans with more kernels are timed without the
 * block (their launches then overlap the running kernels anyway). */
#define MB_BLOCK_MAX_LAUNCHES 12

/* The events and the plan's kernels of one sample, on S.stream. */
static int timed_enqueue(mb_kern_cuda_plan *cp, cudaEvent_t *ev, int nk, mb_err *err)
{
    CUDA_TRY(cudaEventRecord(ev[0], S.stream));
    for (int k = 0; k < nk; k++) {
        if (mb_kern_cuda_launch(cp, k, S.stream, err) != MB_OK) return MB_ERUN;
        CUDA_TRY(cudaEventRecord(ev[k + 1], S.stream));
    }
    return MB_OK;
}

/* Enqueues the blocking kernel (when enabled), the events and the plan's
 * kernels, releases the block and waits. ms[k] gets kernel k's time, *total
 * the plan's. *valid is 0 when the block timed out (the sample then holds
 * launch latency and is dropped). */
static int timed_sample(mb_kern_cuda_plan *cp, cudaEvent_t *ev, int nk, double *ms, double *total, int *valid,
                        mb_err *err)
{
    *valid = 1;
    const int block = S.use_block && nk <= MB_BLOCK_MAX_LAUNCHES;
    if (block) {
        *S.flag = 0;
        *S.timed_out = 0;
        __sync_synchronize();
        if (mb_kern_cuda_block(S.flag_dev, 1.0, S.timed_out_dev, S.stream, err) != MB_OK) return MB_ERUN;
    }
    const int rc = timed_enqueue(cp, ev, nk, err);
    /* released on every path: a block left holding spins to its 1 s time-out */
    __sync_synchronize();
    *S.flag = 1;
    if (rc != MB_OK) return rc;
    CUDA_TRY(cudaEventSynchronize(ev[nk]));
    if (block && *S.timed_out) {
        *valid = 0;
        S.use_block = 0;
        note("cuda: the blocking kernel timed out (launches took over 1 s to enqueue); "
             "timing continues without it (launch latency now included)");
    }
    float f = 0;
    for (int k = 0; k < nk; k++) {
        CUDA_TRY(cudaEventElapsedTime(&f, ev[k], ev[k + 1]));
        ms[k] = f;
    }
    CUDA_TRY(cudaEventElapsedTime(&f, ev[0], ev[nk]));
    *total = f;
    return MB_OK;
}

/* ---- counters --------------------------------------------------------------- */

typedef struct count_arg {
    mb_kern_cuda_plan *cp; /* NULL: no plan kernels (the drain-only range) */
    int nk;
    int only;  /* >= 0: launch only this kernel of the plan */
    int drain; /* append the drain sweep (user range) */
    mb_err *err;
} count_arg;

/* count_prepare and count_launch say why they failed on stderr: the CUPTI
 * wrapper then reports only "prepare failed" / "launch failed" in err. */
static int count_prepare(void *a)
{
    count_arg *A = (count_arg *)a;
    if (clean_l2(A->err) == MB_OK) return 0;
    note("counters: L2 clean before the range failed: %s", A->err->msg);
    return 1;
}

static int count_launch(void *a)
{
    count_arg *A = (count_arg *)a;
    mb_err *err = A->err;
    int rc = MB_OK;
    if (A->cp && A->only >= 0) rc = mb_kern_cuda_launch(A->cp, A->only, S.stream, err);
    if (A->cp && A->only < 0) rc = mb_kern_cuda_launch_plan(A->cp, S.stream, err);
    /* the drain: every dirty line the plan left in L2 is written back inside
     * the range; its own traffic (2x L2 of reads, all misses: the prepare
     * step touched 4x L2 of other data since) is measured once per session
     * by a drain-only range and subtracted */
    if (rc == MB_OK && A->drain)
        rc = mb_kern_cuda_read_sweep(S.drain, S.l2x2_bytes, S.sink, S.dev.sm_count, S.stream, err);
    if (rc == MB_OK) rc = CUDA_CHECK(cudaStreamSynchronize(S.stream));
    if (rc == MB_OK) return 0;
    note("counters: launch inside the counted range failed: %s", err->msg);
    return 1;
}

/* MB_CUPTI_KERNEL_CLEAN=1: per-kernel counts start from a clean L2 each
 * (one counted run per kernel, the plan's earlier kernels' outputs already
 * in place from the timed runs), as Nsight Compute's --cache-control all
 * does; default: one run, each kernel in the plan's natural cache state. */
static int kernel_clean_mode(void)
{
    const char *e = getenv("MB_CUPTI_KERNEL_CLEAN");
    return e && *e && strcmp(e, "0") != 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Counts the drain alone (prepare, then only the 2x L2 read sweep in a user
 * range), three times; keeps the median read and write bytes in
 * S.drain_read_bytes / S.drain_write_bytes, the baseline every plan range
 * subtracts. Nominally 2x L2 read, ~0 written; measured, because the plan
 * signal at small n (0.25-4 MB at 2^16..2^20 f32) is a few % of it. */
static int count_drain(mb_err *err)
{
    double rd[3], wr[3];
    for (int i = 0; i < 3; i++) {
        count_arg A = {NULL, 0, -1, 1, err};
        mb_cupti_work w = {count_prepare, count_launch, &A, 1};
        mb_cupti_range r;
        if (mb_cupti_count_range(S.cupti, "drain", &w, &r, err) != MB_OK) return MB_ERUN;
        rd[i] = r.dram_read_bytes;
        wr[i] = r.dram_write_bytes;
    }
    qsort(rd, 3, sizeof rd[0], cmp_double);
    qsort(wr, 3, sizeof wr[0], cmp_double);
    S.drain_read_bytes = rd[1];
    S.drain_write_bytes = wr[1];
    note("counters: drain-only range (2x L2 = %.1f MB read sweep): counted read %.4g B (%+.2f%% of nominal), "
         "write %.4g B; subtracted from every plan range",
         S.l2x2_bytes / 1e6, rd[1], 100 * (rd[1] - (double)S.l2x2_bytes) / (double)S.l2x2_bytes, wr[1]);
    return MB_OK;
}

/* Counts plan cp: one user range over the plan plus the drain (row totals,
 * the measured drain-only range subtracted); then, when kr and kw are
 * non-NULL (nk entries each), one auto range per kernel: in one run in the
 * plan's natural cache state, or with MB_CUPTI_KERNEL_CLEAN=1 one run per
 * kernel after a clean flush each. */
static int count_plan(mb_kern_cuda_plan *cp, int nk, double *read, double *write, double *kr, double *kw,
                      mb_err *err)
{
    count_arg A = {cp, nk, -1, 1, err};
    mb_cupti_work w = {count_prepare, count_launch, &A, nk + 1};
    mb_cupti_range r;
    if (mb_cupti_count_range(S.cupti, "plan", &w, &r, err) != MB_OK) return MB_ERUN;
    *read = r.dram_read_bytes - S.drain_read_bytes;
    if (*read < 0) *read = 0;
    *write = r.dram_write_bytes - S.drain_write_bytes;
    if (*write < 0) *write = 0;
    if (!kr || !kw) return MB_OK;
    mb_cupti_range *kr_ = (mb_cupti_range *)calloc((size_t)nk, sizeof *kr_);
    if (!kr_) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK;
    if (kernel_clean_mode()) {
        for (int k = 0; k < nk && rc == MB_OK; k++) {
            count_arg B = {cp, nk, k, 0, err};
            mb_cupti_work wk = {count_prepare, count_launch, &B, 1};
            int got = 0;
            rc = mb_cupti_count_kernels(S.cupti, &wk, &kr_[k], 1, &got, err);
        }
    } else {
        count_arg B = {cp, nk, -1, 0, err};
        mb_cupti_work wk = {count_prepare, count_launch, &B, nk};
        int got = 0;
        rc = mb_cupti_count_kernels(S.cupti, &wk, kr_, nk, &got, err);
    }
    for (int k = 0; rc == MB_OK && k < nk; k++) kr[k] = kr_[k].dram_read_bytes, kw[k] = kr_[k].dram_write_bytes;
    free(kr_);
    return rc;
}

/* Median time of n_samples cold runs of the hand copy kernel, x -> y, n f32. */
static int time_copy(void *x, void *y, int64_t n, int samples, double *median_s, mb_err *err)
{
    cudaEvent_t e0, e1;
    CUDA_TRY(cudaEventCreate(&e0));
    if (CUDA_CHECK(cudaEventCreate(&e1)) != MB_OK) {
        (void)cudaEventDestroy(e0); /* clean-up of a failed path: the first error is the one reported */
        return MB_ERUN;
    }
    double *t = (double *)malloc(sizeof(double) * (size_t)samples);
    int rc = t ? MB_OK : mb_err_set(err, MB_ERUN, "out of memory");
    for (int s = 0; s < samples && rc == MB_OK; s++) {
        if ((rc = clean_l2(err)) != MB_OK) break;
        float ms = 0;
        rc = CUDA_CHECK(cudaEventRecord(e0, S.stream));
        if (rc == MB_OK) rc = mb_kern_cuda_copy(x, y, MB_F32, n, S.dev.sm_count, S.stream, err);
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventRecord(e1, S.stream));
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventSynchronize(e1));
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rc == MB_OK) t[s] = ms * 1e-3;
    }
    if (rc == MB_OK) {
        mb_meas_stats st;
        mb_meas_stats_compute(t, samples, &st);
        *median_s = st.median_s;
    }
    free(t);
    /* clean-up: a failure here can only repeat an earlier (sticky) error,
     * which the next checked call reports */
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    return rc;
}

/* The sanity gate: the copy plan's counted DRAM bytes at a size >= 8x L2 must
 * be 2 n sizeof(f32) within 2% (read and write each within 2% of n x 4), and
 * its achieved bandwidth must not exceed the driver's peak. */
static int sanity_gate(mb_err *err)
{
    int64_t n = (int64_t)1 << 24;
    while (n * 4 < 8 * S.dev.l2_bytes) n <<= 1;
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    while (n > ((int64_t)1 << 22) && (double)(2 * n * 4) > 0.5 * (double)free_b) n >>= 1;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_cuda_plan *cp = NULL;
    int rc = mb_parse_variant("name copy\ninput x\ny = copy(x)\noutput y\n", "<sanity gate>", MB_F32, &g, err);
    if (rc == MB_OK) rc = mb_plan_build(g, MB_PLAN_EAGER, &p, err);
    if (rc == MB_OK) rc = mb_kern_cuda_plan_new(p, n, S.dev.sm_count, 0, &cp, err);
    mb_kern_tensors t;
    memset(&t, 0, sizeof t);
    if (rc == MB_OK) {
        /* input: the harness's usual non-zero values (the copy moves bits) */
        rc = mb_kern_tensors_alloc(p, n, 0, &t, err);
        if (rc == MB_OK) rc = mb_kern_cuda_upload_inputs(cp, &t, err);
        if (rc == MB_OK) rc = mb_kern_cuda_launch_plan(cp, S.stream, err);
        if (rc == MB_OK) rc = CUDA_CHECK(cudaStreamSynchronize(S.stream));
        double rd = 0, wr = 0, med = 0;
        if (rc == MB_OK) rc = count_plan(cp, 1, &rd, &wr, NULL, NULL, err);
        if (rc == MB_OK) {
            /* timing: the same kernel through the generic path */
            void *dx = NULL, *dy = NULL;
            rc = CUDA_CHECK(cudaMalloc(&dx, (size_t)n * 4));
            if (rc == MB_OK) rc = CUDA_CHECK(cudaMalloc(&dy, (size_t)n * 4));
            if (rc == MB_OK) rc = mb_kern_cuda_fill(dx, MB_F32, 1.5f, n, S.dev.sm_count, S.stream, err);
            if (rc == MB_OK) rc = time_copy(dx, dy, n, 10, &med, err);
            /* clean-up (cudaFree(NULL) is a no-op): a failure can only repeat
             * a sticky error, which the next checked call reports */
            (void)cudaFree(dx);
            (void)cudaFree(dy);
        }
        if (rc == MB_OK) {
            double want = (double)n * 4.0;
            double er = (rd - want) / want, ew = (wr - want) / want, et = (rd + wr - 2 * want) / (2 * want);
            double gbs = 2 * want / med / 1e9;
            int ok_bytes = fabs(er) <= 0.02 && fabs(ew) <= 0.02 && fabs(et) <= 0.02;
            /* the rows' rule (count_check.c); at >= 8x L2 its one-L2 allowance is <= 1/16 of the bytes */
            int ok_bw = !mb_meas_above_peak(want, want, (double)S.dev.l2_bytes, 0, med, S.dev.peak_bandwidth_gbs, 0.0,
                                            NULL);
            snprintf(S.gate, sizeof S.gate,
                     "copy f32 n=%lld: counted read %.4g B (%+.2f%%), write %.4g B (%+.2f%%), model %.4g B each; "
                     "%.0f GB/s vs peak %.0f GB/s: %s",
                     (long long)n, rd, 100 * er, wr, 100 * ew, want, gbs, S.dev.peak_bandwidth_gbs,
                     ok_bytes && ok_bw ? "trusted" : "UNTRUSTED");
            if (ok_bytes && ok_bw) {
                S.cnt = CNT_TRUSTED;
                snprintf(S.cnt_text, sizeof S.cnt_text, "cupti");
            } else {
                S.cnt = CNT_UNTRUSTED;
                snprintf(S.cnt_text, sizeof S.cnt_text, "untrusted: sanity gate %s",
                         !ok_bytes ? "copy bytes off by more than 2%" : "copy above peak bandwidth");
            }
            fprintf(stderr, "membound: %s: counters: sanity gate: %s\n", ok_bytes && ok_bw ? "note" : "warning",
                    S.gate);
        }
    }
    mb_kern_tensors_free(&t);
    mb_kern_cuda_plan_free(cp);
    mb_plan_free(p);
    mb_graph_free(g);
    return rc;
}

/* Opens CUPTI and runs the gate, once. Failures leave counters unavailable
 * with one line on stderr; timing goes on. */
static void counters_open(void)
{
    if (S.cnt != CNT_NOT_TRIED) return;
    S.cnt = CNT_UNAVAILABLE;
    const char *env = getenv("MB_CUPTI");
    if (env && !strcmp(env, "0")) {
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: disabled by MB_CUPTI=0");
        note("counters: unavailable (disabled by MB_CUPTI=0): continuing with timing only");
        return;
    }
    mb_err e;
    char reason[140];
    if (mb_cupti_open(&S.cupti, &e) != MB_OK) {
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: %s", mb_cupti_reason(&e, reason, sizeof reason));
        fprintf(stderr, "membound: note: counters: unavailable (%s): continuing with timing only\n", e.msg);
        return;
    }
    cudaError_t ce = cudaMalloc(&S.drain, (size_t)S.l2x2_bytes);
    if (ce == cudaSuccess) ce = cudaMemset(S.drain, 0x3d, (size_t)S.l2x2_bytes);
    if (ce == cudaSuccess) ce = cudaDeviceSynchronize(); /* legacy-stream memset vs the timing stream */
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: cudaMalloc of the L2 drain buffer failed");
        note("counters: unavailable (cudaMalloc of the L2 drain buffer: %s): continuing with timing only",
             cudaGetErrorString(ce));
        return;
    }
    S.cnt = CNT_UNTRUSTED; /* until the gate says otherwise */
    snprintf(S.cnt_text, sizeof S.cnt_text, "untrusted: sanity gate did not run");
    if (count_drain(&e) != MB_OK || sanity_gate(&e) != MB_OK) {
        S.cnt = CNT_UNAVAILABLE;
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: %s", mb_cupti_reason(&e, reason, sizeof reason));
        fprintf(stderr, "membound: note: counters: unavailable (drain baseline or sanity gate: %s): continuing "
                "with timing only\n", e.msg);
    }
}

/* ---- public: availability, run ------------------------------------------------ */

extern "C" int mb_meas_cuda_available(char *why, size_t whysz)
{
    if (S.state == -1) {
        if (why && whysz) snprintf(why, whysz, "%s", S.why);
        return 0;
    }
    return mb_kern_cuda_device_count(why, whysz) > 0;
}

static void note_check(const mb_graph *g, const mb_kern_check *ck, const char *when, char *why, size_t whysz)
{
    if (!why || !whysz || why[0]) return;
    if (ck->poisoned)
        snprintf(why, whysz, "%s: %lld elements never written (still poisoned)", when, (long long)ck->poisoned);
    else
        snprintf(why, whysz, "%s: %lld elements off, first at [%lld] of %s: got %.9g, want %.9g "
                 "(max rel err %.3g > tol %.3g)", when, (long long)ck->bad, (long long)ck->first_bad,
                 ck->first_bad_node >= 0 && g->nodes[ck->first_bad_node].name[0] ? g->nodes[ck->first_bad_node].name
                                                                                  : "a result",
                 ck->first_got, ck->first_want, ck->max_rel_err, ck->tol);
}

/* Backward plans: the GPU's input gradients against the CPU executor's on the
 * same inputs (n <= 2^22, where the CPU pass is cheap). *max_err gets the
 * largest |gpu - cpu| / max(|cpu|, 1e-3 max|cpu|). */
static int compare_cpu_grads(const mb_plan *p, mb_kern_tensors *t, double tol, double *max_err, int *ok,
                             mb_err *err)
{
    const mb_graph *g = p->g;
    int first = g->n_outputs; /* results: forward outputs, then input gradients */
    *max_err = 0;
    *ok = 1;
    int ng = p->n_results - first;
    if (ng <= 0) return MB_OK;
    void **gpu = (void **)calloc((size_t)ng, sizeof(void *));
    if (!gpu) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK;
    for (int r = 0; r < ng && rc == MB_OK; r++) {
        int node = p->results[first + r];
        size_t b = (size_t)t->n * mb_dtype_bytes(g->nodes[node].dtype);
        gpu[r] = malloc(b);
        if (!gpu[r]) rc = mb_err_set(err, MB_ERUN, "out of memory");
        else memcpy(gpu[r], t->data[node], b);
    }
    if (rc == MB_OK) rc = mb_kern_run_plan(t, MB_KERN_EXEC_AUTO, err);
    for (int r = 0; r < ng && rc == MB_OK; r++) {
        int node = p->results[first + r];
        mb_dtype dt = g->nodes[node].dtype;
        double scale = 0;
        for (int64_t i = 0; i < t->n; i++) {
            double c = fabs((double)mb_load_f32(t->data[node], i, dt));
            if (c > scale) scale = c;
        }
        double floor_ = 1e-3 * scale > 1e-30 ? 1e-3 * scale : 1e-30;
        for (int64_t i = 0; i < t->n; i++) {
            double c = mb_load_f32(t->data[node], i, dt), q = mb_load_f32(gpu[r], i, dt);
            double e = fabs(q - c) / (fabs(c) > floor_ ? fabs(c) : floor_);
            if (!(e <= tol)) *ok = 0; /* NaN fails too */
            if (e > *max_err || e != e) *max_err = e;
        }
    }
    for (int r = 0; r < ng; r++) free(gpu[r]);
    free(gpu);
    return rc;
}

/* Above MB_VERIFY_FULL_MAX elements the check compares a sample instead of
 * every element (a float64 pass over 2^28 elements costs seconds of host time
 * per row, the sweep's largest cost): the first and last 4096 elements (the
 * vector tail, grid-stride ends) and MB_VERIFY_SAMPLE elements in between,
 * one per stride-sized stretch at an offset that varies from stretch to
 * stretch (so every lane and vector position is hit). CUDA backend only; the
 * CPU backend checks every element. */
#define MB_VERIFY_FULL_MAX ((int64_t)1 << 24)
#define MB_VERIFY_SAMPLE ((int64_t)1 << 20)
#define MB_VERIFY_EDGE 4096

/* mb_kern_verify over t, or over the sample above when t->n is larger than
 * MB_VERIFY_FULL_MAX (ck->first_bad is then an index of t). *checked gets
 * the number of elements compared. */
static int verify_results(const mb_plan *p, const mb_kern_tensors *t, unsigned rep, double tol, mb_kern_check *ck,
                          int64_t *checked, mb_err *err)
{
    const int64_t n = t->n;
    if (n <= MB_VERIFY_FULL_MAX) {
        *checked = n;
        return mb_kern_verify(t, rep, tol, ck, err);
    }
    const int64_t mid = MB_VERIFY_SAMPLE, m = 2 * MB_VERIFY_EDGE + mid;
    const int64_t stride = (n - 2 * MB_VERIFY_EDGE) / mid; /* >= 15 above 2^24 */
    int64_t *idx = (int64_t *)malloc(sizeof(int64_t) * (size_t)m);
    if (!idx) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int64_t j = 0; j < MB_VERIFY_EDGE; j++) idx[j] = j;
    for (int64_t k = 0; k < mid; k++) idx[MB_VERIFY_EDGE + k] = MB_VERIFY_EDGE + k * stride + (k * 40503) % stride;
    for (int64_t j = 0; j < MB_VERIFY_EDGE; j++) idx[MB_VERIFY_EDGE + mid + j] = n - MB_VERIFY_EDGE + j;
    mb_kern_tensors sub;
    memset(&sub, 0, sizeof sub);
    int rc = mb_kern_tensors_alloc(p, m, 0, &sub, err);
    if (rc == MB_OK) {
        for (int i = 0; i < p->g->n_nodes; i++) {
            if (!sub.data[i] || !t->data[i]) continue;
            const size_t eb = (size_t)mb_dtype_bytes(p->g->nodes[i].dtype);
            const char *src = (const char *)t->data[i];
            char *dst = (char *)sub.data[i];
            for (int64_t j = 0; j < m; j++) memcpy(dst + (size_t)j * eb, src + (size_t)idx[j] * eb, eb);
        }
        rc = mb_kern_verify(&sub, rep, tol, ck, err);
        if (rc == MB_OK && ck->first_bad >= 0 && ck->first_bad < m) ck->first_bad = idx[ck->first_bad];
    }
    mb_kern_tensors_free(&sub);
    free(idx);
    *checked = m;
    return rc;
}

/* Achieved bandwidth above the driver's peak is a bug: says so loudly.
 * read / write are bytes that reach DRAM eventually (counted with the drain,
 * or modelled); mb_meas_above_peak (count_check.c) allows for the up to one
 * L2 of dirty lines a timed sample leaves unwritten, and for one L2 of
 * cached inputs when the samples were warm. Returns 1 when even that floor
 * over time_s exceeds peak x (1 + slack). */
static int above_peak(const char *what, const mb_meas_record *row, double read, double write, int warm,
                      double time_s, double slack)
{
    double gbs = 0;
    if (!mb_meas_above_peak(read, write, (double)S.dev.l2_bytes, warm, time_s, S.dev.peak_bandwidth_gbs, slack,
                            &gbs))
        return 0;
    fprintf(stderr, "membound: warning: %s %s %s n=%lld: %s %.0f GB/s (less one L2 of write-back%s) exceeds "
            "the peak %.0f GB/s: the timing or the flush is wrong\n", row->variant, row->plan, row->dtype,
            (long long)row->n, what, gbs, warm ? " and of cached reads" : "", S.dev.peak_bandwidth_gbs);
    return 1;
}

/* MB_CUDA_ONCE=1: each plan runs exactly once (one timed, checked run, no
 * warm-up, no blocking kernel, no counters), for external profilers such as
 * ncu that replay every launch (scripts/gpu-ncu.sh). */
static int once_mode(void)
{
    const char *e = getenv("MB_CUDA_ONCE");
    return e && *e && strcmp(e, "0") != 0;
}

static int impl_flags(void)
{
    const char *e = getenv("MB_CUDA_IMPL");
    if (!e || !*e || !strcmp(e, "auto")) return 0;
    if (!strcmp(e, "eval")) return MB_KERN_CUDA_ALL_EVAL;
    if (!strcmp(e, "nohand")) return MB_KERN_CUDA_NO_HAND;
    return 0;
}

/* Counted plans must move at least this fraction of the drain (2x L2). */
#define MB_COUNT_MIN_FRACTION 0.05
/* Per-kernel counts from this size up. */
#define MB_COUNT_PER_KERNEL_MIN_N ((int64_t)1 << 20)

extern "C" int mb_meas_cuda_run(const mb_plan *p, int64_t n, const mb_meas_config *c, mb_meas_record *row,
                                mb_meas_record *per_kernel, char *why, size_t whysz, mb_err *err)
{
    if (why && whysz) why[0] = '\0';
    if (session_open(err) != MB_OK) return MB_ERUN;
    int nk = p->n_kernels;
    snprintf(row->device, sizeof row->device, "%.120s", S.dev.name);
    snprintf(row->backend, sizeof row->backend, "cuda");
    row->dram_read_bytes = row->dram_write_bytes = -1;
    const int once = once_mode();
    if (once) S.use_block = 0;
    if (c->counters && !once) counters_open();
    snprintf(row->counters, sizeof row->counters, "%s",
             once ? "unavailable: MB_CUDA_ONCE (external profiler run)"
                  : !c->counters ? "unavailable: not requested" : S.cnt_text);

    /* room on the device: the plan's tensors plus a margin */
    int64_t need = mb_kern_cuda_plan_bytes(p, n);
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    if (need < 0 || (double)need > (double)free_b - 256e6)
        return mb_err_set(err, MB_ERUN, "%s %s at n = %lld needs %.3g GB of device memory, %.3g GB free",
                          p->g->name, mb_plan_name(p->kind), (long long)n, (double)need / 1e9, (double)free_b / 1e9);

    mb_kern_cuda_plan *cp = NULL;
    mb_kern_tensors t;
    memset(&t, 0, sizeof t);
    cudaEvent_t *ev = NULL;
    double *samples = NULL, *ksamples = NULL, *ms = NULL, *tmp = NULL, *kr = NULL, *kw = NULL;
    int cap = c->max_reps > 10 ? c->max_reps : 10;
    int rc = mb_kern_cuda_plan_new(p, n, S.dev.sm_count, impl_flags(), &cp, err);
    if (rc == MB_OK) rc = mb_kern_tensors_alloc(p, n, 0, &t, err);
    if (rc == MB_OK) rc = mb_kern_cuda_upload_inputs(cp, &t, err);
    if (rc != MB_OK) goto done;
    ev = (cudaEvent_t *)calloc((size_t)nk + 1, sizeof *ev);
    samples = (double *)malloc(sizeof(double) * (size_t)(cap + 1));
    ksamples = (double *)malloc(sizeof(double) * (size_t)(cap + 1) * (size_t)(nk ? nk : 1));
    ms = (double *)malloc(sizeof(double) * (size_t)(nk + 1));
    tmp = (double *)malloc(sizeof(double) * (size_t)(cap + 1));
    kr = (double *)calloc((size_t)nk + 1, sizeof(double));
    kw = (double *)calloc((size_t)nk + 1, sizeof(double));
    if (!ev || !samples || !ksamples || !ms || !tmp || !kr || !kw) {
        rc = mb_err_set(err, MB_ERUN, "out of memory");
        goto done;
    }
    for (int k = 0; k <= nk; k++)
        if ((rc = CUDA_CHECK(cudaEventCreate(&ev[k]))) != MB_OK) goto done;

    {
        clocks before, after;
        int have_before = clocks_read(&before) == MB_OK;
        if (have_before) clocks_note(&before);

        /* warm-up, un-blocked (module loading must not happen behind the
         * blocking kernel); the first run writes over poison and is checked */
        int passed = 1;
        double max_err = 0;
        mb_kern_check ck;
        unsigned rep = 2;
        const int n_warm = once ? 0 : c->warmup > 0 ? c->warmup : 1;
        if (c->check && n_warm && n <= ((int64_t)1 << 22) && (rc = mb_kern_cuda_poison(cp, rep, S.stream, err)) != MB_OK)
            goto done;
        for (int w = 0; w < n_warm; w++)
            if ((rc = mb_kern_cuda_launch_plan(cp, S.stream, err)) != MB_OK) goto done;
        {
            cudaError_t e = cudaStreamSynchronize(S.stream);
            if (e != cudaSuccess) {
                rc = mb_err_set(err, MB_ERUN, "warm-up of %s %s: %s (%s)", p->g->name, mb_plan_name(p->kind),
                                cudaGetErrorName(e), cudaGetErrorString(e));
                goto done;
            }
        }
        /* the early check covers every element too; above 2^22 elements it
         * is left to the final one (a float64 pass over 2^28 elements costs
         * seconds of host time per row, the sweep's largest cost) */
        const int early = c->check && n_warm && n <= ((int64_t)1 << 22);
        if (early) {
            if ((rc = mb_kern_cuda_download_results(cp, &t, err)) != MB_OK) goto done;
            if ((rc = mb_kern_verify(&t, rep, c->tol, &ck, err)) != MB_OK) goto done;
            max_err = ck.max_rel_err;
            if (!ck.passed) passed = 0, note_check(p->g, &ck, "first run", why, whysz);
        }

        /* timed samples: cold (flushed) unless c->cold == 0 */
        int ns = 0;
        double t_begin = mb_meas_now_s();
        for (;;) {
            int last = once || mb_meas_should_stop(c, samples, ns, mb_meas_now_s() - t_begin) || ns >= cap;
            if (last && c->check) {
                rep = 3;
                if ((rc = mb_kern_cuda_poison(cp, rep, S.stream, err)) != MB_OK) goto done;
            }
            if (c->cold && (rc = clean_l2(err)) != MB_OK) goto done;
            double total = 0;
            int valid = 1;
            if ((rc = timed_sample(cp, ev, nk, ms, &total, &valid, err)) != MB_OK) goto done;
            if (valid) {
                for (int k = 0; k < nk; k++) ksamples[(size_t)k * (cap + 1) + ns] = ms[k] * 1e-3;
                samples[ns++] = total * 1e-3;
            }
            if (last && valid) break;
        }
        if (c->check) {
            if ((rc = mb_kern_cuda_download_results(cp, &t, err)) != MB_OK) goto done;
            int64_t checked = 0;
            if ((rc = verify_results(p, &t, rep, c->tol, &ck, &checked, err)) != MB_OK) goto done;
            if (checked < n && !S.sampled_noted) {
                S.sampled_noted = 1;
                note("cuda: above n = 2^24 the check compares %lld sampled elements per result (head, tail and "
                     "one per stride), not every element", (long long)checked);
            }
            if (ck.max_rel_err > max_err) max_err = ck.max_rel_err;
            if (!ck.passed) passed = 0, note_check(p->g, &ck, "last sample", why, whysz);
            if (p->g->has_backward) {
                double gerr = 0;
                int gok = 0;
                if ((rc = mb_kern_gradcheck(&t, c->gradcheck_points > 0 ? c->gradcheck_points : 64, &gerr, &gok,
                                            err)) != MB_OK)
                    goto done;
                if (!gok) {
                    passed = 0;
                    if (why && whysz && !why[0])
                        snprintf(why, whysz, "finite-difference gradient check failed (%.3g x tolerance)", gerr);
                }
                if (n <= ((int64_t)1 << 22)) {
                    double cerr = 0;
                    int cok = 1;
                    double tol = c->tol > 0 ? c->tol : mb_kern_default_tol(p->g->nodes[p->results[0]].dtype);
                    if ((rc = compare_cpu_grads(p, &t, tol, &cerr, &cok, err)) != MB_OK) goto done;
                    if (!cok) {
                        passed = 0;
                        if (why && whysz && !why[0])
                            snprintf(why, whysz, "input gradients differ from the CPU backend's: max rel err %.3g "
                                     "> tol %.3g", cerr, tol);
                    }
                }
            }
        }
        if (clocks_read(&after) == MB_OK) {
            clocks_note(&after);
            if (have_before && after.sm_mhz < 0.75 * S.sm_max)
                note("cuda: %s %s %s n=%lld: SM clock %.0f MHz before, %.0f after (max seen %.0f): throttled",
                     row->variant, row->plan, row->dtype, (long long)n, before.sm_mhz, after.sm_mhz, S.sm_max);
        }

        mb_meas_row_finish(row, samples, ns, c->check, max_err, passed, per_kernel, nk, ksamples,
                           (size_t)(cap + 1), tmp);
        above_peak("model DRAM bytes over the fastest sample:", row, (double)row->model_dram_read_bytes,
                   (double)row->model_dram_write_bytes, !c->cold, row->time_s_min, 0.05);

        /* counters: separate runs, after timing. A plan whose traffic is
         * under 5% of the subtracted 2x L2 drain is below what the
         * range can resolve: no count, the row says so and its DRAM
         * columns stay empty (the report treats it as uncounted). */
        const double plan_bytes = (double)(row->read_bytes + row->write_bytes);
        const int below = plan_bytes < MB_COUNT_MIN_FRACTION * (double)S.l2x2_bytes;
        if (c->counters && !once && (S.cnt == CNT_TRUSTED || S.cnt == CNT_UNTRUSTED) && below) {
            snprintf(row->counters, sizeof row->counters,
                     "below resolution: %.3g MB moved < %.0f%% of the %.0f MB L2 drain subtracted from each count",
                     plan_bytes / 1e6, 100 * MB_COUNT_MIN_FRACTION, S.l2x2_bytes / 1e6);
            for (int k = 0; per_kernel && k < nk; k++)
                memcpy(per_kernel[k].counters, row->counters, sizeof row->counters);
        } else if (c->counters && !once && (S.cnt == CNT_TRUSTED || S.cnt == CNT_UNTRUSTED)) {
            double rd = 0, wr = 0;
            mb_err ce;
            double t_count = mb_meas_now_s();
            /* per-kernel counts only when per-kernel rows were asked for,
             * and from 2^20 elements up (each costs a run with a context
             * sync per kernel; below, the plan row suffices) */
            const int per_k = per_kernel && n >= MB_COUNT_PER_KERNEL_MIN_N;
            int crc = count_plan(cp, nk, &rd, &wr, per_k ? kr : NULL, per_k ? kw : NULL, &ce);
            S.count_s += mb_meas_now_s() - t_count;
            S.count_rows++;
            if (crc != MB_OK) {
                char reason[140];
                snprintf(row->counters, sizeof row->counters, "unavailable: %s",
                         mb_cupti_reason(&ce, reason, sizeof reason));
                fprintf(stderr, "membound: note: counters: %s %s %s n=%lld: %s: timing only for this row\n",
                        row->variant, row->plan, row->dtype, (long long)n, ce.msg);
            } else {
                row->dram_read_bytes = llround(rd);
                row->dram_write_bytes = llround(wr);
                if (above_peak("counted DRAM bytes over the fastest sample:", row, rd, wr, !c->cold,
                               row->time_s_min, 0.0))
                    snprintf(row->counters, sizeof row->counters, "untrusted: counted bytes / time above peak");
                for (int k = 0; per_k && k < nk; k++) {
                    per_kernel[k].dram_read_bytes = llround(kr[k]);
                    per_kernel[k].dram_write_bytes = llround(kw[k]);
                    memcpy(per_kernel[k].counters, row->counters, sizeof row->counters);
                }
                for (int k = 0; per_kernel && !per_k && k < nk; k++)
                    snprintf(per_kernel[k].counters, sizeof per_kernel[k].counters,
                             "unavailable: per-kernel counts start at n = 2^20");
            }
        }
        S.rows++;
    }
    rc = MB_OK;
done:
    if (ev)
        for (int k = 0; k <= nk; k++)
            if (ev[k]) (void)cudaEventDestroy(ev[k]); /* clean-up: the sticky check below covers it */
    free(ev);
    free(samples);
    free(ksamples);
    free(ms);
    free(tmp);
    free(kr);
    free(kw);
    mb_kern_tensors_free(&t);
    mb_kern_cuda_plan_free(cp);
    if (rc != MB_OK) {
        cudaError_t sticky = cudaDeviceSynchronize();
        if (sticky != cudaSuccess) { /* a sticky error ends GPU work for this process */
            S.state = -1;
            snprintf(S.why, sizeof S.why, "CUDA context unusable after an error: %s", cudaGetErrorString(sticky));
        }
    }
    return rc;
}

/* ---- provenance -------------------------------------------------------------- */

/* Lines "key: value\n" describing the GPU, clocks seen, counters and the
 * timing method, for the CSV's '#' lines. Empty when no GPU was opened. */
extern "C" void mb_meas_cuda_provenance(char *buf, size_t bufsz)
{
    if (!buf || !bufsz) return;
    buf[0] = '\0';
    if (S.state != 1) return;
    snprintf(buf, bufsz,
             "gpu: %s (%s) cc %d.%d %d SMs L2 %.1f MiB %.1f GB\n"
             "gpu_driver: %d.%d; cuda_runtime: %d.%d\n"
             "gpu_peak_bandwidth_gbs: %.0f (2 x %d MHz x %d bit)\n"
             "gpu_clocks_mhz: sm %.0f..%.0f mem %.0f..%.0f (%s; peak sm %d)\n"
             "gpu_timing: events%s; cold samples after a %.0f MiB memset + persisting-L2 reset + read sweep "
             "of another buffer of that size\n"
             "counters: %s%s%s\n"
             "counter_collection_s: %.2f over %d rows (user range + auto range each)\n",
             S.dev.name, S.pci, S.dev.cc_major, S.dev.cc_minor, S.dev.sm_count, S.dev.l2_bytes / 1048576.0,
             S.dev.mem_bytes / 1e9, S.dev.driver_version / 1000, S.dev.driver_version % 1000 / 10,
             S.dev.runtime_version / 1000, S.dev.runtime_version % 1000 / 10, S.dev.peak_bandwidth_gbs,
             S.dev.mem_clock_khz / 1000, S.dev.bus_width_bits, S.sm_min, S.sm_max, S.mem_min, S.mem_max,
             S.clock_source ? S.clock_source : "none", S.dev.sm_clock_khz / 1000,
             S.use_block ? " behind a blocking kernel" : "", S.l2x2_bytes / 1048576.0,
             S.cnt == CNT_NOT_TRIED ? "not requested" : S.cnt_text, S.gate[0] ? "; sanity gate: " : "", S.gate,
             S.count_s, S.count_rows);
}

/* ---- calibration ------------------------------------------------------------- */

/* Median seconds of `samples` runs of fn(arg) between events (cold: after
 * the clean flush). fn enqueues at most MB_BLOCK_MAX_LAUNCHES launches: they
 * are queued behind the blocking kernel when it is enabled. A sample whose
 * block timed out holds host launch latency: it is dropped, the block is
 * turned off (said once) and the sample taken again without it. */
typedef int (*probe_fn)(void *arg, mb_err *err);

static int time_probe(probe_fn fn, void *arg, int samples, int cold, double *median_s, mb_err *err)
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
        if (cold && (rc = clean_l2(err)) != MB_OK) break;
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
            note("cuda: the blocking kernel timed out in calibration (launches took over 1 s to enqueue); "
                 "sample dropped, timing continues without it (launch latency now included)");
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
    void *x, *y;
    int64_t n; /* f32 elements */
    int iters, count;
    mb_op op;
    double work; /* flops or elements of one launch */
} probe_arg;

static int probe_copy(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    return mb_kern_cuda_copy(A->x, A->y, MB_F32, A->n, S.dev.sm_count, S.stream, err);
}
static int probe_read(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    return mb_kern_cuda_read_sweep(A->x, A->n * 4, S.sink, S.dev.sm_count, S.stream, err);
}
static int probe_write(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    return mb_kern_cuda_fill(A->y, MB_F32, 1.25f, A->n, S.dev.sm_count, S.stream, err);
}
static int probe_empty(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    for (int i = 0; i < A->count; i++)
        if (mb_kern_cuda_empty(S.stream, err) != MB_OK) return MB_ERUN;
    return MB_OK;
}
static int probe_fma(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
    return mb_kern_cuda_fma(A->iters, S.sink, S.dev.sm_count, S.stream, &A->work, err);
}
static int probe_op(void *a, mb_err *err)
{
    probe_arg *A = (probe_arg *)a;
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
 * Prints a summary on stdout. MB_ERUN when no GPU or a CUDA call fails. */
extern "C" int mb_meas_cuda_calibrate(mb_device *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    if (session_open(err) != MB_OK) return MB_ERUN;
    int64_t n = (int64_t)1 << 24;
    while (n * 4 < 8 * S.dev.l2_bytes) n <<= 1;
    probe_arg A;
    memset(&A, 0, sizeof A);
    A.n = n;
    CUDA_TRY(cudaMalloc(&A.x, (size_t)n * 4));
    int rc = MB_OK;
    if (CUDA_CHECK(cudaMalloc(&A.y, (size_t)n * 4)) != MB_OK) {
        (void)cudaFree(A.x); /* clean-up of a failed path: the first error is the one reported */
        return MB_ERUN;
    }
    double t_copy = 0, t_read = 0, t_write = 0, t_empty = 0, t_fma = 0;
    if (rc == MB_OK) rc = mb_kern_cuda_fill(A.x, MB_F32, 0.75f, n, S.dev.sm_count, S.stream, err);
    if (rc == MB_OK) rc = time_probe(probe_copy, &A, 10, 1, &t_copy, err);
    if (rc == MB_OK) rc = time_probe(probe_read, &A, 10, 1, &t_read, err);
    if (rc == MB_OK) rc = time_probe(probe_write, &A, 10, 1, &t_write, err);
    /* launch overhead: a batch of empty kernels queued behind the block (so
     * the GPU runs them back to back: GPU-side cost per launch), at most
     * MB_BLOCK_MAX_LAUNCHES so the launch queue never fills (a full queue
     * stalls the host until the block times out), median of 20 */
    A.count = MB_BLOCK_MAX_LAUNCHES;
    const int empty_blocked = S.use_block;
    if (rc == MB_OK) rc = time_probe(probe_empty, &A, 20, 0, &t_empty, err);
    A.iters = 4096;
    if (rc == MB_OK) rc = time_probe(probe_fma, &A, 5, 0, &t_fma, err);
    double fma_flops = A.work;
    for (int op = MB_OP_ADD; rc == MB_OK && op < MB_OP_COUNT; op++) {
        double t_op = 0;
        A.op = (mb_op)op;
        A.iters = 256;
        rc = time_probe(probe_op, &A, 5, 0, &t_op, err);
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
    out->fp32_tflops = fma_flops / t_fma / 1e12;
    out->bf16_tflops = tab ? tab->bf16_tflops : out->fp32_tflops;
    out->sfu_tops = tab ? tab->sfu_tops : 0;
    out->launch_overhead_us = t_empty / A.count * 1e6;
    out->mem_gb = S.dev.mem_bytes / 1e9;
    snprintf(out->source, sizeof out->source,
             "membound calibrate --backend cuda on %.60s (%s), driver %d.%d: peak = 2 x %d MHz x %d bit; "
             "copy %.0f, read %.0f, write %.0f GB/s (f32 n=%lld, cold, median of 10); launch = %d empty "
             "kernels%s; fp32 = FMA chains; op rates register-resident; bf16_tflops %s%.24s",
             S.dev.name, S.pci, S.dev.driver_version / 1000, S.dev.driver_version % 1000 / 10,
             S.dev.mem_clock_khz / 1000, S.dev.bus_width_bits, copy_gbs, read_gbs, write_gbs, (long long)n, A.count,
             empty_blocked && S.use_block ? " behind a blocking kernel" : " back to back (host launch rate included)",
             tab ? "and sfu_tops from table entry " : "= fp32 (GPU not in the table)", tab ? tab->name : "");
    snprintf(out->measured_at, sizeof out->measured_at, "%s %s", pv.host, pv.date);
    printf("%s\n", out->label);
    printf("  peak %.0f GB/s (driver), copy %.0f GB/s (%.0f%%), read %.0f GB/s, write %.0f GB/s\n",
           out->mem_bandwidth_gbs, copy_gbs, 100 * copy_gbs / out->mem_bandwidth_gbs, read_gbs, write_gbs);
    printf("  fp32 FMA %.1f TFLOP/s, launch overhead %.2f us per kernel (GPU side)\n", out->fp32_tflops,
           out->launch_overhead_us);
    printf("  op rates (1e9 elements/s, register-resident):\n");
    for (int op = MB_OP_ADD; op < MB_OP_COUNT; op++)
        printf("    %-10s %9.1f%s", mb_op_name((mb_op)op), out->op_geps[op], (op - MB_OP_ADD) % 4 == 3 ? "\n" : "");
    printf("\n");
    return MB_OK;
}
