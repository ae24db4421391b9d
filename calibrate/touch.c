/* touch.c — calibrate's first-touch probe: what writing a fresh
 * allocation costs over writing preallocated memory, the figure the model
 * adds per freshly allocated output for a framework's eager mode
 * (--framework pytorch; model/roofline.c, alloc_time_s, has the rule).
 *
 * Fresh: posix_memalign(64) as PyTorch's CPU allocator calls it, one pass of
 * ordinary stores on all threads (as PyTorch's kernels store), free. Reference:
 * the same bytes written with non-temporal stores into a buffer allocated
 * once, as the executors write a tensor above the cache: the model's base
 * time for that write. The difference per byte, at sizes on both sides of
 * glibc's mmap threshold (its dynamic ceiling, 32 MiB on 64-bit): above it
 * every call maps fresh pages (faulted, zeroed, unmapped at free); below it
 * glibc hands back the chunk the previous call freed. Each figure is the
 * minimum over its rounds, not the median: a fault costs more, never less,
 * while other processes hold the cores or the memory bus (2-vCPU guest at load
 * 8: 4.4-8.4 us per 4 KiB page between rounds, the minima closer together),
 * and PyTorch's own first touch, which the figure predicts, is measured the
 * same way (bench/cpu_peers.py). The cost per page is reported beside the
 * cost per byte: with base pages they scale alike (the model's rule, per
 * byte); with transparent huge pages 'always' a fault makes 2 MiB at once.
 * Does not model, and writes no file. */
#define _POSIX_C_SOURCE 200809L
#include "cal_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* MiB; the first TOUCH_BELOW are at or below the threshold. The largest
 * above is 4x the threshold: PyTorch's copy demo at 2^25 f32 writes 128 MiB. */
static const double touch_mib[MB_CAL_TOUCH_SIZES] = {8, 16, 24, 48, 64, 128};
#define TOUCH_BELOW 3
/* A size whose cost per byte is below this share of the fresh mappings'
 * is served from the heap (the threshold lies above it). */
#define TOUCH_CHEAP 0.25

typedef struct touch_ctx {
    mb_cal_stream_ctx sc; /* sc.b: the preallocated buffer (reference) */
    int64_t n;             /* f32 elements written per call */
    int failed;            /* a fresh allocation failed */
} touch_ctx;

static void touch_fresh(void *p)
{
    touch_ctx *c = p;
    void *b = NULL;
    if (posix_memalign(&b, 64, (size_t)c->n * sizeof(float)) != 0) { c->failed = 1; return; }
    mb_cal_stream_ctx w = {NULL, b, c->n, 0};
    mb_cal_write_plain(&w);
    c->sc.sink = ((volatile float *)b)[c->n - 1];
    free(b);
}

static void touch_pre(void *p)
{
    touch_ctx *c = p;
    mb_cal_stream_ctx w = {NULL, c->sc.b, c->n, 0};
    mb_cal_write_nt(&w);
}

/* The bracketed choice of /sys/kernel/mm/transparent_hugepage/enabled
 * ("always", "madvise", "never") into buf; "" when unreadable. */
static void thp_mode(char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return;
    char line[256];
    if (fgets(line, sizeof line, f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && (size_t)(b - a - 1) < size) {
            memcpy(buf, a + 1, (size_t)(b - a - 1));
            buf[b - a - 1] = '\0';
        }
    }
    fclose(f);
}

static double min_s(const mb_cal_figure *f)
{
    mb_meas_stats st;
    mb_meas_stats_compute(f->s, f->ns, &st);
    return st.min_s;
}

int mb_cal_first_touch_probe(int threads, int quick, mb_cal_result *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    mb_kern_set_threads(threads);
    out->threads = mb_kern_threads();
    return mb_cal_first_touch(out, quick, err);
}

int mb_cal_first_touch(mb_cal_result *out, int quick, mb_err *err)
{
    const int rounds = quick ? CAL_ROUNDS_QUICK : CAL_ROUNDS;
    const int64_t n_max = (int64_t)(touch_mib[MB_CAL_TOUCH_SIZES - 1] * 1048576.0 / sizeof(float));
    float *pre = NULL;
    if (posix_memalign((void **)&pre, 64, (size_t)n_max * sizeof(float)) != 0)
        return mb_err_set(err, MB_ERUN, "out of memory (first-touch probe, %.0f MiB)",
                          touch_mib[MB_CAL_TOUCH_SIZES - 1]);
    touch_ctx ctx[MB_CAL_TOUCH_SIZES];
    mb_cal_figure f[2 * MB_CAL_TOUCH_SIZES] = {{0}};
    for (int i = 0; i < MB_CAL_TOUCH_SIZES; i++) {
        ctx[i] = (touch_ctx){{NULL, pre, n_max, 0}, (int64_t)(touch_mib[i] * 1048576.0 / sizeof(float)), 0};
        double bytes = (double)ctx[i].n * sizeof(float);
        f[2 * i] = (mb_cal_figure){"first touch (fresh)", touch_fresh, &ctx[i], bytes, 1, {0}, 0, 0, 0, NULL};
        f[2 * i + 1] = (mb_cal_figure){"first touch (preallocated)", touch_pre, &ctx[i], bytes, 1, {0}, 0, 0, 0, NULL};
    }
    /* in size order, so each size below the threshold first raises glibc's
     * dynamic threshold to itself (its warm-up frees a mapped chunk) */
    for (int i = 0; i < 2 * MB_CAL_TOUCH_SIZES; i++) mb_cal_figure_warm(&f[i]);
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 2 * MB_CAL_TOUCH_SIZES; i++) mb_cal_figure_sample(&f[i], out->threads);
    free(pre);
    for (int i = 0; i < MB_CAL_TOUCH_SIZES; i++)
        if (ctx[i].failed) return mb_err_set(err, MB_ERUN, "out of memory (first-touch probe)");
    /* seconds per byte over the reference, per size: the rounds' minima */
    double above[MB_CAL_TOUCH_SIZES];
    int na = 0;
    out->touch_samples = out->touch_contended = 0;
    for (int i = 0; i < MB_CAL_TOUCH_SIZES; i++) {
        double extra = min_s(&f[2 * i]) - min_s(&f[2 * i + 1]);
        out->touch_mib[i] = touch_mib[i];
        out->touch_s_per_gb[i] = extra / f[2 * i].work * 1e9;
        if (i >= TOUCH_BELOW) above[na++] = out->touch_s_per_gb[i];
        out->touch_samples += f[2 * i].ns;
        out->touch_contended += f[2 * i].contended;
    }
    /* the median of the sizes above: fresh mappings cost the same per byte */
    for (int i = 1; i < na; i++)
        for (int j = i; j > 0 && above[j] < above[j - 1]; j--) {
            double t = above[j]; above[j] = above[j - 1]; above[j - 1] = t;
        }
    double s_per_gb = na % 2 ? above[na / 2] : 0.5 * (above[na / 2 - 1] + above[na / 2]);
    /* no measurable cost (huge pages, or noise): the range's fastest figure */
    out->first_touch_gbs = s_per_gb > 1e-5 ? 1.0 / s_per_gb : 1e5;
    thp_mode(out->touch_thp, sizeof out->touch_thp);
    long psz = sysconf(_SC_PAGESIZE);
    out->touch_page_kib = !strcmp(out->touch_thp, "always") ? 2048 : psz > 0 ? (int)(psz / 1024) : 4;
    out->touch_us_per_page = (s_per_gb > 0 ? s_per_gb : 0) * 1e-9 * out->touch_page_kib * 1024.0 * 1e6;
    /* the threshold: the first size below glibc's ceiling that is not served
     * cheaply (a request of the threshold or more is mapped), the ceiling
     * when none is; glibc's 128 KiB start when the smallest is not */
    out->alloc_mmap_threshold_mb = MB_ALLOC_MMAP_MAX_MB;
    for (int i = 0; i < TOUCH_BELOW; i++)
        if (!(out->touch_s_per_gb[i] < TOUCH_CHEAP * s_per_gb)) {
            out->alloc_mmap_threshold_mb = i ? touch_mib[i] : 0.125;
            break;
        }
    return MB_OK;
}
