/* cupti_ranges.cpp — the CUPTI range-profiler wrapper behind measure/mb_cupti.h:
 * DRAM bytes read and written and GPU time per kernel (auto range) or per group
 * of kernels (user range), CUDA 13 Range Profiler + Profiler Host API.
 * C++ only because cupti_profiler_host.h includes <string>; the code is plain C
 * style and exports a C interface. It does not flush caches, time with events
 * or decide whether counts are trustworthy.
 *
 * Call order (CUPTI 13.0 headers; reference: shared/reference/cupti.md §1):
 * open:  driver + context check → cuptiProfilerInitialize →
 *        cuptiProfilerDeviceSupported → cuptiDeviceGetChipName →
 *        cuptiProfilerGetCounterAvailability (privilege probe) →
 *        cuptiProfilerHostInitialize → ConfigAddMetrics → GetConfigImage →
 *        GetNumOfPasses (must be 1)
 * count: cuptiRangeProfilerEnable → GetCounterDataSize →
 *        CounterDataImageInitialize → SetConfig (user replay) → {prepare, Start, [Push],
 *        launch, [Pop], Stop} until all passes submitted → DecodeData →
 *        GetCounterDataInfo → per range GetRangeInfo + EvaluateToGpuValues →
 *        cuptiRangeProfilerDisable
 * close: cuptiProfilerHostDeinitialize → free the config and counter
 *        availability images → cuptiProfilerDeInitialize */
#include "mb_cupti.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static const char *const metric_names[] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__time_duration.sum",
};
enum { N_METRICS = 3, MAX_PASSES = 4 };

/* Buffer lifetimes: CUPTI is handed pointers, not copies, and its headers do
 * not say when it stops using them, so every buffer lives as long as the
 * object it was handed to, as in NVIDIA's range_profiling sample (main()
 * holds the counter availability and config images in locals from
 * GetCounterAvailability to the end, past the host object's TearDown):
 * avail (cuptiProfilerHostInitialize) and config (SetConfig of every count)
 * until mb_cupti_close, after the host object is deinitialised; a count's
 * counter data image until that count's cuptiRangeProfilerDisable (run_end).
 * The Range Profiler API has no scratch buffer (the old Profiling API's
 * counterDataScratchBuffer has no counterpart in cupti_range_profiler.h). */
struct mb_cupti {
    CUcontext ctx;
    int device;
    char chip[64];
    uint8_t *avail; /* counter availability image, handed to the host object */
    size_t avail_size;
    CUpti_Profiler_Host_Object *host;
    uint8_t *config;
    size_t config_size;
    int profiler_initialized;
};

/* ---- error lines ---------------------------------------------------------- */

static const char *code_name(CUptiResult r)
{
    const char *s = NULL;
    if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI_ERROR_?";
    return s;
}

/* Reads "RmProfilingAdminOnly: N" from the driver's parameters, -1 if absent. */
static int profiling_admin_only(void)
{
    FILE *fp = fopen("/proc/driver/nvidia/params", "r");
    if (!fp) return -1;
    char line[256];
    int v = -1;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "RmProfilingAdminOnly: %d", &v) == 1) break;
    fclose(fp);
    return v;
}

static const char *fix_for(CUptiResult r, char *buf, size_t n)
{
    switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: {
        int admin = profiling_admin_only();
        snprintf(buf, n,
                 "run as root or with CAP_SYS_ADMIN (CAP_PERFMON from driver R565), or put "
                 "'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d, rebuild "
                 "the initramfs and reboot (RmProfilingAdminOnly: %s); see "
                 "https://developer.nvidia.com/ERR_NVGPUCTRPERM",
                 admin < 0 ? "unknown" : admin ? "1" : "0");
        return buf;
    }
    case CUPTI_ERROR_NOT_INITIALIZED:
        return "libnvperf_host.so could not be loaded or the driver is older than CUPTI 13 needs: "
               "rebuild so the binary carries a DT_RPATH to the CUPTI library folder, or set "
               "LD_LIBRARY_PATH to it; update the driver";
    case CUPTI_ERROR_HARDWARE_BUSY:
        return "another profiler holds the counters (ncu, nsys --gpu-metrics, DCGM profiling): "
               "stop it, or 'dcgmi profile --pause' for the run";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return "the hypervisor does not expose performance counters to this VM: use a "
               "profiling-enabled vGPU profile, passthrough or bare metal";
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
        return "DRAM counters are shared units under MIG: use a full GPU";
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
        return "another library in this process already uses the legacy CUPTI event/metric API";
    case CUPTI_ERROR_INVALID_METRIC_NAME:
        return "this chip's metric database lacks a DRAM byte metric";
    case CUPTI_ERROR_UNKNOWN:
        return "check that the NVIDIA driver works (nvidia-smi)";
    default:
        return "";
    }
}

/* "<NAME> (<code>) at <call>: <message>[; fix: ...]" */
static int cupti_fail(mb_err *err, const char *call, CUptiResult r)
{
    const char *msg = NULL;
    if (cuptiGetErrorMessage(r, &msg) != CUPTI_SUCCESS || !msg) msg = "";
    char fixbuf[400];
    const char *fix = fix_for(r, fixbuf, sizeof fixbuf);
    char clean[256];
    snprintf(clean, sizeof clean, "%s", msg);
    for (char *p = clean; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    return mb_err_set(err, MB_ERUN, "%s (%d) at %s: %s%s%s", code_name(r), (int)r, call, clean,
                      *fix ? "; fix: " : "", fix);
}

#define CUPTI_TRY(call, params)                                                    \
    do {                                                                           \
        CUptiResult r_ = call(&(params));                                          \
        if (r_ != CUPTI_SUCCESS) return cupti_fail(err, #call, r_);                \
    } while (0)

/* ---- host side: configuration image -------------------------------------- */

static void host_free(CUpti_Profiler_Host_Object *host)
{
    if (!host) return;
    CUpti_Profiler_Host_Deinitialize_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = host;
    (void)cuptiProfilerHostDeinitialize(&p); /* teardown: nothing to do on failure */
}

/* Builds the host object and config image for the three metrics. avail may be
 * NULL (host-only check). */
static int host_config(const char *chip, const uint8_t *avail, CUpti_Profiler_Host_Object **host_out,
                       uint8_t **config_out, size_t *config_size, int *passes, mb_err *err)
{
    *host_out = NULL;
    *config_out = NULL;
    CUpti_Profiler_Host_Initialize_Params hi;
    memset(&hi, 0, sizeof hi);
    hi.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    hi.pChipName = chip;
    hi.pCounterAvailabilityImage = avail;
    CUPTI_TRY(cuptiProfilerHostInitialize, hi);
    CUpti_Profiler_Host_Object *host = hi.pHostObject;

    int rc = MB_OK;
    uint8_t *config = NULL;
    do {
        CUpti_Profiler_Host_ConfigAddMetrics_Params am;
        memset(&am, 0, sizeof am);
        am.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
        am.pHostObject = host;
        am.ppMetricNames = (const char **)metric_names;
        am.numMetrics = N_METRICS;
        CUptiResult r = cuptiProfilerHostConfigAddMetrics(&am);
        if (r != CUPTI_SUCCESS) { rc = cupti_fail(err, "cuptiProfilerHostConfigAddMetrics", r); break; }

        CUpti_Profiler_Host_GetConfigImageSize_Params cs;
        memset(&cs, 0, sizeof cs);
        cs.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
        cs.pHostObject = host;
        r = cuptiProfilerHostGetConfigImageSize(&cs);
        if (r != CUPTI_SUCCESS) { rc = cupti_fail(err, "cuptiProfilerHostGetConfigImageSize", r); break; }

        config = (uint8_t *)malloc(cs.configImageSize ? cs.configImageSize : 1); /* malloc: 16-byte aligned */
        if (!config) { rc = mb_err_set(err, MB_ERUN, "out of memory at config image"); break; }
        CUpti_Profiler_Host_GetConfigImage_Params ci;
        memset(&ci, 0, sizeof ci);
        ci.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
        ci.pHostObject = host;
        ci.configImageSize = cs.configImageSize;
        ci.pConfigImage = config;
        r = cuptiProfilerHostGetConfigImage(&ci);
        if (r != CUPTI_SUCCESS) { rc = cupti_fail(err, "cuptiProfilerHostGetConfigImage", r); break; }

        CUpti_Profiler_Host_GetNumOfPasses_Params np;
        memset(&np, 0, sizeof np);
        np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
        np.configImageSize = cs.configImageSize;
        np.pConfigImage = config;
        r = cuptiProfilerHostGetNumOfPasses(&np);
        if (r != CUPTI_SUCCESS) { rc = cupti_fail(err, "cuptiProfilerHostGetNumOfPasses", r); break; }
        *passes = (int)np.numOfPasses;
        *config_size = cs.configImageSize;
    } while (0);

    if (rc != MB_OK) {
        host_free(host); /* before the image it was handed */
        free(config);
        return rc;
    }
    *host_out = host;
    *config_out = config;
    return MB_OK;
}

extern "C" int mb_cupti_host_passes(const char *chip, int *passes, mb_err *err)
{
    CUpti_Profiler_Host_Object *host = NULL;
    uint8_t *config = NULL;
    size_t size = 0;
    *passes = 0;
    int rc = host_config(chip, NULL, &host, &config, &size, passes, err);
    if (rc != MB_OK) return rc;
    host_free(host);
    free(config);
    return MB_OK;
}

/* ---- driver gate ---------------------------------------------------------- */

typedef CUresult (*pfn_ctx_get_current)(CUcontext *);

/* The current context, through the runtime's driver entry point (the binary
 * does not link libcuda, so it loads where no driver is installed). */
static int current_context(CUcontext *ctx, int *device, mb_err *err)
{
    int count = 0;
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        return mb_err_set(err, MB_ERUN, "%s at cudaGetDeviceCount: %s; fix: install the NVIDIA driver "
                          "and check nvidia-smi", cudaGetErrorName(ce), cudaGetErrorString(ce));
    }
    if (count < 1) return mb_err_set(err, MB_ERUN, "no CUDA device at cudaGetDeviceCount: 0 devices");
    ce = cudaGetDevice(device);
    if (ce == cudaSuccess) ce = cudaFree(0); /* makes the primary context current */
    if (ce != cudaSuccess)
        return mb_err_set(err, MB_ERUN, "%s at cudaFree(0): %s", cudaGetErrorName(ce), cudaGetErrorString(ce));
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    ce = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q);
    if (ce != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)
        return mb_err_set(err, MB_ERUN, "driver entry point missing at cudaGetDriverEntryPointByVersion: "
                          "cuCtxGetCurrent (%s)", cudaGetErrorName(ce));
    *ctx = NULL;
    CUresult cr = ((pfn_ctx_get_current)fn)(ctx);
    if (cr != CUDA_SUCCESS || !*ctx)
        return mb_err_set(err, MB_ERUN, "no current context at cuCtxGetCurrent: driver error %d", (int)cr);
    return MB_OK;
}

/* ---- session -------------------------------------------------------------- */

static const char *support_name(CUpti_Profiler_Support_Level l)
{
    switch (l) {
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED: return "supported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED: return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED: return "unsupported";
    default: return "unknown";
    }
}

static int device_supported(int device, mb_err *err)
{
    CUpti_Profiler_DeviceSupported_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
    p.cuDevice = (CUdevice)device;
    p.api = CUPTI_PROFILER_RANGE_PROFILING;
    CUPTI_TRY(cuptiProfilerDeviceSupported, p);
    if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return MB_OK;
    struct { const char *name; CUpti_Profiler_Support_Level level; const char *fix; } flags[] = {
        {"architecture", p.architecture, "needs compute capability 7.0 or newer"},
        {"vGpu", p.vGpu, "the hypervisor does not expose counters: use a profiling-enabled vGPU or bare metal"},
        {"sli", p.sli, "disable SLI"},
        {"confidentialCompute", p.confidentialCompute, "confidential computing forbids counters"},
        {"cmp", p.cmp, "mining processors have no counters"},
        {"wsl", p.wsl, "WSL driver lacks counter support"},
    };
    char list[256] = "";
    const char *fix = "";
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (flags[i].level == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) continue;
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s=%s", len ? " " : "", flags[i].name,
                 support_name(flags[i].level));
        if (!*fix) fix = flags[i].fix;
    }
    return mb_err_set(err, MB_ERUN, "device not supported (%s) at cuptiProfilerDeviceSupported: "
                      "range profiling is %s%s%s", list, support_name(p.isSupported),
                      *fix ? "; fix: " : "", fix);
}

static int open_session(mb_cupti *s, mb_err *err)
{
    if (current_context(&s->ctx, &s->device, err) != MB_OK) return MB_ERUN;

    CUpti_Profiler_Initialize_Params ip;
    memset(&ip, 0, sizeof ip);
    ip.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    CUPTI_TRY(cuptiProfilerInitialize, ip);
    s->profiler_initialized = 1;

    if (device_supported(s->device, err) != MB_OK) return MB_ERUN;

    CUpti_Device_GetChipName_Params cn;
    memset(&cn, 0, sizeof cn);
    cn.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    cn.deviceIndex = (size_t)s->device;
    CUPTI_TRY(cuptiDeviceGetChipName, cn);
    snprintf(s->chip, sizeof s->chip, "%s", cn.pChipName ? cn.pChipName : "?");

    /* Privilege probe: fails with INSUFFICIENT_PRIVILEGES where counters are
     * admin-only (Enable and SetConfig would still succeed). */
    CUpti_Profiler_GetCounterAvailability_Params ca;
    memset(&ca, 0, sizeof ca);
    ca.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
    ca.ctx = s->ctx;
    CUPTI_TRY(cuptiProfilerGetCounterAvailability, ca);
    s->avail_size = ca.counterAvailabilityImageSize;
    s->avail = (uint8_t *)calloc(s->avail_size ? s->avail_size : 1, 1);
    if (!s->avail) return mb_err_set(err, MB_ERUN, "out of memory at counter availability image");
    ca.pCounterAvailabilityImage = s->avail;
    CUPTI_TRY(cuptiProfilerGetCounterAvailability, ca); /* freed by mb_cupti_close, as on every failure */

    int passes = 0;
    int rc = host_config(s->chip, s->avail, &s->host, &s->config, &s->config_size, &passes, err);
    if (rc != MB_OK) return rc;
    if (passes != 1)
        return mb_err_set(err, MB_ERUN, "%d passes at cuptiProfilerHostGetNumOfPasses: the DRAM byte "
                          "metrics must fit one pass on %s (replay would re-run kernels)", passes, s->chip);
    return MB_OK;
}

extern "C" void mb_cupti_close(mb_cupti *s)
{
    if (!s) return;
    host_free(s->host); /* first: it may still point into avail and config */
    free(s->config);
    free(s->avail);
    if (s->profiler_initialized) {
        CUpti_Profiler_DeInitialize_Params p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE;
        (void)cuptiProfilerDeInitialize(&p); /* teardown: nothing to do on failure */
    }
    free(s);
}

extern "C" int mb_cupti_open(mb_cupti **out, mb_err *err)
{
    *out = NULL;
    mb_cupti *s = (mb_cupti *)calloc(1, sizeof *s);
    if (!s) return mb_err_set(err, MB_ERUN, "out of memory at mb_cupti_open");
    if (open_session(s, err) != MB_OK) {
        mb_cupti_close(s);
        return MB_ERUN;
    }
    *out = s;
    return MB_OK;
}

extern "C" const char *mb_cupti_chip(const mb_cupti *s) { return s ? s->chip : ""; }

/* ---- counting ------------------------------------------------------------- */

typedef struct run_state {
    CUpti_RangeProfiler_Object *obj;
    uint8_t *image;
    size_t image_size;
} run_state;

static void run_end(run_state *st)
{
    if (st->obj) {
        CUpti_RangeProfiler_Disable_Params p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
        p.pRangeProfilerObject = st->obj;
        (void)cuptiRangeProfilerDisable(&p); /* teardown: nothing to do on failure */
        st->obj = NULL;
    }
    free(st->image);
    st->image = NULL;
}

/* Enable, size and initialise the counter data image, set the config. */
static int run_setup(mb_cupti *s, run_state *st, CUpti_ProfilerRange mode, size_t max_ranges, mb_err *err)
{
    CUpti_RangeProfiler_Enable_Params en;
    memset(&en, 0, sizeof en);
    en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    en.ctx = s->ctx;
    CUPTI_TRY(cuptiRangeProfilerEnable, en);
    st->obj = en.pRangeProfilerObject;

    CUpti_RangeProfiler_GetCounterDataSize_Params ds;
    memset(&ds, 0, sizeof ds);
    ds.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    ds.pRangeProfilerObject = st->obj;
    ds.pMetricNames = (const char **)metric_names;
    ds.numMetrics = N_METRICS;
    ds.maxNumOfRanges = max_ranges;
    ds.maxNumRangeTreeNodes = (uint32_t)max_ranges;
    CUPTI_TRY(cuptiRangeProfilerGetCounterDataSize, ds);

    st->image_size = ds.counterDataSize;
    st->image = (uint8_t *)calloc(st->image_size ? st->image_size : 1, 1);
    if (!st->image) return mb_err_set(err, MB_ERUN, "out of memory at counter data image");
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params ii;
    memset(&ii, 0, sizeof ii);
    ii.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    ii.pRangeProfilerObject = st->obj;
    ii.counterDataSize = st->image_size;
    ii.pCounterData = st->image;
    CUPTI_TRY(cuptiRangeProfilerCounterDataImageInitialize, ii);

    CUpti_RangeProfiler_SetConfig_Params sc;
    memset(&sc, 0, sizeof sc);
    sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    sc.pRangeProfilerObject = st->obj;
    sc.configSize = s->config_size;
    sc.pConfig = s->config;
    sc.counterDataImageSize = st->image_size;
    sc.pCounterDataImage = st->image;
    sc.range = mode;
    /* User replay in both modes (cupti.md §1.3: auto range takes kernel or
     * user replay, user range only user replay). The configuration is one
     * pass (checked at open), so nothing is replayed: one Start..Stop
     * submits everything, and kernel replay's save/restore of device memory
     * around each kernel is never armed. */
    sc.replayMode = CUPTI_UserReplay;
    sc.maxRangesPerPass = max_ranges;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    CUPTI_TRY(cuptiRangeProfilerSetConfig, sc);
    return MB_OK;
}

/* One profiling window per pass until every pass is submitted. */
static int run_passes(run_state *st, CUpti_ProfilerRange mode, const char *name, const mb_cupti_work *w,
                      mb_err *err)
{
    for (int pass = 0; pass < MAX_PASSES; pass++) {
        if (w->prepare && w->prepare(w->arg) != 0)
            return mb_err_set(err, MB_ERUN, "prepare failed at pass %d (L2 clean before the range)", pass);
        CUpti_RangeProfiler_Start_Params sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
        sp.pRangeProfilerObject = st->obj;
        CUPTI_TRY(cuptiRangeProfilerStart, sp);

        int launch_rc = 0;
        CUptiResult push_rc = CUPTI_SUCCESS;
        if (mode == CUPTI_UserRange) {
            CUpti_RangeProfiler_PushRange_Params pp;
            memset(&pp, 0, sizeof pp);
            pp.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
            pp.pRangeProfilerObject = st->obj;
            pp.pRangeName = name;
            push_rc = cuptiRangeProfilerPushRange(&pp);
        }
        if (push_rc == CUPTI_SUCCESS) {
            launch_rc = w->launch(w->arg);
            if (mode == CUPTI_UserRange) {
                CUpti_RangeProfiler_PopRange_Params pr;
                memset(&pr, 0, sizeof pr);
                pr.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
                pr.pRangeProfilerObject = st->obj;
                push_rc = cuptiRangeProfilerPopRange(&pr);
            }
        }
        CUpti_RangeProfiler_Stop_Params so;
        memset(&so, 0, sizeof so);
        so.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
        so.pRangeProfilerObject = st->obj;
        CUptiResult stop_rc = cuptiRangeProfilerStop(&so);
        if (push_rc != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerPushRange/PopRange", push_rc);
        if (launch_rc != 0) return mb_err_set(err, MB_ERUN, "launch failed inside the counted range");
        if (stop_rc != CUPTI_SUCCESS) return cupti_fail(err, "cuptiRangeProfilerStop", stop_rc);
        if (so.isAllPassSubmitted) {
            if (pass > 0)
                return mb_err_set(err, MB_ERUN, "%d passes at cuptiRangeProfilerStop: expected one",
                                  pass + 1);
            return MB_OK;
        }
    }
    return mb_err_set(err, MB_ERUN, "passes not done after %d at cuptiRangeProfilerStop", MAX_PASSES);
}

static int run_decode(mb_cupti *s, run_state *st, mb_cupti_range *out, int max_out, int *n_out, mb_err *err)
{
    CUpti_RangeProfiler_DecodeData_Params dd;
    memset(&dd, 0, sizeof dd);
    dd.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dd.pRangeProfilerObject = st->obj;
    CUPTI_TRY(cuptiRangeProfilerDecodeData, dd);
    if (dd.numOfRangeDropped)
        return mb_err_set(err, MB_ERUN, "%zu ranges dropped at cuptiRangeProfilerDecodeData",
                          dd.numOfRangeDropped);

    CUpti_RangeProfiler_GetCounterDataInfo_Params di;
    memset(&di, 0, sizeof di);
    di.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    di.pCounterDataImage = st->image;
    di.counterDataImageSize = st->image_size;
    CUPTI_TRY(cuptiRangeProfilerGetCounterDataInfo, di);

    int n = 0;
    for (size_t i = 0; i < di.numTotalRanges && n < max_out; i++, n++) {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri;
        memset(&ri, 0, sizeof ri);
        ri.structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE;
        ri.pCounterDataImage = st->image;
        ri.counterDataImageSize = st->image_size;
        ri.rangeIndex = i;
        ri.rangeDelimiter = "/";
        CUPTI_TRY(cuptiRangeProfilerCounterDataGetRangeInfo, ri);

        double v[N_METRICS] = {0, 0, 0};
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev;
        memset(&ev, 0, sizeof ev);
        ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
        ev.pHostObject = s->host;
        ev.pCounterDataImage = st->image;
        ev.counterDataImageSize = st->image_size;
        ev.rangeIndex = i;
        ev.ppMetricNames = (const char **)metric_names;
        ev.numMetrics = N_METRICS;
        ev.pMetricValues = v;
        CUPTI_TRY(cuptiProfilerHostEvaluateToGpuValues, ev);
        for (int m = 0; m < N_METRICS; m++)
            if (!std::isfinite(v[m]) || v[m] < 0)
                return mb_err_set(err, MB_ERUN, "non-finite %s at cuptiProfilerHostEvaluateToGpuValues "
                                  "(range %zu): %g; fix: counters of shared units read NaN under MIG "
                                  "or vGPU: use a full GPU", metric_names[m], i, v[m]);
        snprintf(out[n].name, sizeof out[n].name, "%s", ri.rangeName ? ri.rangeName : "");
        out[n].dram_read_bytes = v[0];
        out[n].dram_write_bytes = v[1];
        out[n].gpu_time_s = v[2] * 1e-9;
    }
    *n_out = n;
    if ((size_t)n < di.numTotalRanges)
        return mb_err_set(err, MB_ERUN, "%zu ranges at cuptiRangeProfilerGetCounterDataInfo: room for %d",
                          di.numTotalRanges, max_out);
    return MB_OK;
}

static int count(mb_cupti *s, CUpti_ProfilerRange mode, const char *name, const mb_cupti_work *w,
                 mb_cupti_range *out, int max_out, int *n_out, mb_err *err)
{
    *n_out = 0;
    if (!s || !w || !w->launch || w->n_launches < 1)
        return mb_err_set(err, MB_ERUN, "bad arguments at mb_cupti count");
    size_t max_ranges = mode == CUPTI_AutoRange ? (size_t)w->n_launches : 1;
    run_state st = {NULL, NULL, 0};
    int rc = run_setup(s, &st, mode, max_ranges, err);
    if (rc == MB_OK) rc = run_passes(&st, mode, name, w, err);
    if (rc == MB_OK) rc = run_decode(s, &st, out, max_out, n_out, err);
    run_end(&st);
    if (rc == MB_OK && (size_t)*n_out != max_ranges)
        rc = mb_err_set(err, MB_ERUN, "%d ranges counted at cuptiRangeProfilerGetCounterDataInfo: "
                        "expected %zu", *n_out, max_ranges);
    return rc;
}

extern "C" int mb_cupti_count_kernels(mb_cupti *s, const mb_cupti_work *w, mb_cupti_range *out,
                                      int max_out, int *n_out, mb_err *err)
{
    return count(s, CUPTI_AutoRange, NULL, w, out, max_out, n_out, err);
}

extern "C" int mb_cupti_count_range(mb_cupti *s, const char *name, const mb_cupti_work *w,
                                    mb_cupti_range *out, mb_err *err)
{
    int n = 0;
    return count(s, CUPTI_UserRange, name && *name ? name : "plan", w, out, 1, &n, err);
}
