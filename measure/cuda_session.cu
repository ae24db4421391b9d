/* cuda_session.cu — the CUDA backend's device session: one GPU per process
 * (c->cuda_device), its clocks (NVML when the driver has it), the L2 flush
 * before every timed sample and counted range, the blocking kernel and one
 * event-timed sample, availability and provenance lines. Host code only;
 * it does not run the protocol (protocol.c, cuda_ops.cu), count bytes
 * (cuda_counters.cu) or calibrate (calibrate/cuda.c, through the probe timing below). */
#include "cuda_int.h"
#include "mb_cuda_check.cuh" /* CUDA_TRY */

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static mb_gpu_session session; /* the process's one; others reach it by mb_gpu_open */
#define S (*gs) /* the session, through the handle gs in scope (cuda_int.h) */

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

int mb_gpu_clocks_read(mb_gpu_session *gs, mb_gpu_clocks *c)
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

void mb_gpu_clocks_seen(mb_gpu_session *gs, const mb_gpu_clocks *c)
{
    if (c->sm_mhz <= 0) return;
    if (!S.sm_max) S.sm_min = S.sm_max = c->sm_mhz, S.mem_min = S.mem_max = c->mem_mhz;
    if (c->sm_mhz < S.sm_min) S.sm_min = c->sm_mhz;
    if (c->sm_mhz > S.sm_max) S.sm_max = c->sm_mhz;
    if (c->mem_mhz < S.mem_min) S.mem_min = c->mem_mhz;
    if (c->mem_mhz > S.mem_max) S.mem_max = c->mem_mhz;
    S.clock_source = c->source;
}

/* ---- the session ------------------------------------------------------------ */

static int session_setup(mb_gpu_session *gs, const mb_meas_config *cfg, mb_err *err)
{
    const int ordinal = cfg->cuda_device;
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
    S.use_block = cfg->cuda_block;
    nvml_open(S.pci);
    mb_gpu_clocks c;
    if (mb_gpu_clocks_read(gs, &c) == MB_OK) mb_gpu_clocks_seen(gs, &c);
    return MB_OK;
}

mb_gpu_session *mb_gpu_open(const mb_meas_config *c, mb_err *err)
{
    mb_gpu_session *gs = &session;
    if (S.state == 1) return gs;
    if (S.state == -1) {
        mb_err_set(err, MB_ERUN, "%s", S.why);
        return NULL;
    }
    S.state = -1;
    mb_err e;
    e.msg[0] = '\0';
    if (session_setup(gs, c, &e) != MB_OK) {
        snprintf(S.why, sizeof S.why, "%s", e.msg);
        mb_err_set(err, MB_ERUN, "%s", e.msg);
        return NULL;
    }
    S.state = 1;
    mb_meas_note(c, MB_MEAS_NOTE,
                 "cuda: %s (%s), cc %d.%d, %d SMs, L2 %.1f MiB, %.1f GB, peak %.0f GB/s (2 x %d MHz x %d bit), "
                 "driver %d.%d, runtime %d.%d",
                 S.dev.name, S.pci, S.dev.cc_major, S.dev.cc_minor, S.dev.sm_count, S.dev.l2_bytes / 1048576.0,
                 S.dev.mem_bytes / 1e9, S.dev.peak_bandwidth_gbs, S.dev.mem_clock_khz / 1000, S.dev.bus_width_bits,
                 S.dev.driver_version / 1000, S.dev.driver_version % 1000 / 10, S.dev.runtime_version / 1000,
                 S.dev.runtime_version % 1000 / 10);
    return gs;
}

/* The dirty half of the flush: a memset of 2x L2 (varying byte, so no write
 * can be elided), then waits. No persisting-L2 reset: no access-policy
 * window is ever set, so no line persists. Leaves ~L2 of
 * dirty lines behind: always followed by mb_gpu_clean_l2's read sweep. */
static int flush_l2(mb_gpu_session *gs, mb_err *err)
{
    S.flush_seq++;
    CUDA_TRY(cudaMemsetAsync(S.flush, 0x40 + (int)(S.flush_seq & 0x3f), (size_t)S.l2x2_bytes, S.stream));
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
int mb_gpu_clean_l2(mb_gpu_session *gs, mb_err *err)
{
    if (flush_l2(gs, err) != MB_OK) return MB_ERUN;
    if (mb_kern_cuda_read_sweep(S.clean, S.l2x2_bytes, S.sink, S.dev.sm_count, S.stream, err) != MB_OK)
        return MB_ERUN;
    CUDA_TRY(cudaStreamSynchronize(S.stream));
    return MB_OK;
}

/* ---- one timed sample ------------------------------------------------------- */

/* The events and the plan's kernels of one sample, on S.stream. */
static int timed_enqueue(mb_gpu_session *gs, mb_kern_cuda_plan *cp, cudaEvent_t *ev, int nk, mb_err *err)
{
    CUDA_TRY(cudaEventRecord(ev[0], S.stream));
    for (int k = 0; k < nk; k++) {
        if (mb_kern_cuda_launch(cp, k, S.stream, err) != MB_OK) return MB_ERUN;
        CUDA_TRY(cudaEventRecord(ev[k + 1], S.stream));
    }
    return MB_OK;
}

/* Enqueues the blocking kernel (when enabled), the events and the plan's
 * kernels, releases the block and waits. *valid is 0 when the block timed
 * out (the sample then holds launch latency and is dropped). */
int mb_gpu_timed_sample(mb_gpu_session *gs, const mb_meas_config *c, mb_kern_cuda_plan *cp, cudaEvent_t *ev, int nk,
                        double *kernel_s, double *total_s, int *valid, mb_err *err)
{
    *valid = 1;
    const int block = S.use_block && nk <= MB_BLOCK_MAX_LAUNCHES;
    if (block) {
        *S.flag = 0;
        *S.timed_out = 0;
        __sync_synchronize();
        if (mb_kern_cuda_block(S.flag_dev, 1.0, S.timed_out_dev, S.stream, err) != MB_OK) return MB_ERUN;
    }
    const int rc = timed_enqueue(gs, cp, ev, nk, err);
    /* released on every path: a block left holding spins to its 1 s time-out */
    __sync_synchronize();
    *S.flag = 1;
    if (rc != MB_OK) return rc;
    CUDA_TRY(cudaEventSynchronize(ev[nk]));
    if (block && *S.timed_out) {
        *valid = 0;
        S.use_block = 0;
        mb_meas_note(c, MB_MEAS_NOTE, "cuda: the blocking kernel timed out (launches took over 1 s to enqueue); "
                     "timing continues without it (launch latency now included)");
    }
    float f = 0;
    for (int k = 0; k < nk; k++) {
        CUDA_TRY(cudaEventElapsedTime(&f, ev[k], ev[k + 1]));
        kernel_s[k] = f * 1e-3;
    }
    CUDA_TRY(cudaEventElapsedTime(&f, ev[0], ev[nk]));
    *total_s = f * 1e-3;
    return MB_OK;
}

/* ---- availability, provenance ------------------------------------------------- */

/* ---- GPU probes (calibrate --backend cuda) ------------------------------------ */

extern "C" int mb_meas_gpu_open(const mb_meas_config *c, mb_meas_gpu *g, mb_err *err)
{
    mb_gpu_session *gs = mb_gpu_open(c, err);
    if (!gs) return MB_ERUN;
    g->dev = &S.dev;
    g->pci = S.pci;
    g->stream = S.stream;
    g->sink = S.sink;
    return MB_OK;
}

extern "C" int mb_meas_gpu_alloc(int64_t bytes, void **out, mb_err *err)
{
    *out = NULL;
    CUDA_TRY(cudaMalloc(out, (size_t)bytes));
    return MB_OK;
}

extern "C" void mb_meas_gpu_free(void *p)
{
    (void)cudaFree(p); /* clean-up: a failure can only repeat a sticky error */
}

extern "C" int mb_meas_gpu_blocked(void)
{
    return session.state == 1 && session.use_block;
}

extern "C" int mb_meas_gpu_time(const mb_meas_config *c, int (*fn)(void *arg, mb_err *err), void *arg, int samples,
                                int cold, double *median_s, mb_err *err)
{
    mb_gpu_session *gs = mb_gpu_open(c, err);
    if (!gs) return MB_ERUN;
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


extern "C" int mb_meas_cuda_available(char *why, size_t whysz)
{
    const mb_gpu_session *gs = &session;
    if (S.state == -1) {
        if (why && whysz) snprintf(why, whysz, "%s", S.why);
        return 0;
    }
    return mb_kern_cuda_device_count(why, whysz) > 0;
}

extern "C" int mb_meas_cuda_plan_memory(const mb_meas_config *c, const mb_plan *p, int64_t n, int64_t *need_bytes,
                                        int64_t *free_bytes, int64_t *total_bytes, mb_err *err)
{
    *need_bytes = *free_bytes = *total_bytes = 0;
    if (!mb_gpu_open(c, err)) return MB_ERUN;
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    *need_bytes = mb_kern_cuda_plan_bytes(p, n);
    *free_bytes = (int64_t)free_b;
    *total_bytes = (int64_t)total_b;
    return MB_OK;
}

/* Lines "key: value\n" describing the GPU, clocks seen, counters and the
 * timing method, for the CSV's '#' lines. Empty when no GPU was opened. */
extern "C" void mb_meas_cuda_provenance(char *buf, size_t bufsz)
{
    if (!buf || !bufsz) return;
    buf[0] = '\0';
    const mb_gpu_session *gs = &session;
    if (S.state != 1) return;
    snprintf(buf, bufsz,
             "gpu: %s (%s) cc %d.%d %d SMs L2 %.1f MiB %.1f GB\n"
             "gpu_driver: %d.%d; cuda_runtime: %d.%d\n"
             "gpu_peak_bandwidth_gbs: %.0f (2 x %d MHz x %d bit)\n"
             "gpu_clocks_mhz: sm %.0f..%.0f mem %.0f..%.0f (%s; peak sm %d)\n"
             "gpu_timing: events%s; cold samples after a %.0f MiB memset + read sweep "
             "of another buffer of that size\n"
             "counters: %s%s%s\n"
             "counter_collection_s: %.2f over %d rows (user range + auto range each)\n",
             S.dev.name, S.pci, S.dev.cc_major, S.dev.cc_minor, S.dev.sm_count, S.dev.l2_bytes / 1048576.0,
             S.dev.mem_bytes / 1e9, S.dev.driver_version / 1000, S.dev.driver_version % 1000 / 10,
             S.dev.runtime_version / 1000, S.dev.runtime_version % 1000 / 10, S.dev.peak_bandwidth_gbs,
             S.dev.mem_clock_khz / 1000, S.dev.bus_width_bits, S.sm_min, S.sm_max, S.mem_min, S.mem_max,
             S.clock_source ? S.clock_source : "none", S.dev.sm_clock_khz / 1000,
             S.use_block ? " behind a blocking kernel" : "", S.l2x2_bytes / 1048576.0,
             S.cnt == MB_GPU_CNT_NOT_TRIED ? "not requested" : S.cnt_text, S.gate[0] ? "; sanity gate: " : "", S.gate,
             S.count_s, S.count_rows);
}

