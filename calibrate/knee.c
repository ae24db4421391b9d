/* knee.c — the last-level cache as the memory system shows it: warm
 * copy bandwidth against working-set size, and the size where it falls from
 * the cache plateau to the DRAM rate. A guest's CPUID or sysfs may report a
 * cache the process does not get (a KVM guest here reports 508 MiB through
 * sysconf with no sysfs cache entries; its copy bandwidth falls at tens of
 * MiB). Does not decide what the model uses (cpu.c does). */
#include "cal_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Sizes scanned: working sets (both arrays) from 1 MiB, doubling, up to 4x
 * the reported cache, at least 64 MiB and at most 512 MiB (2 x 256 MiB of
 * first touch, ~0.3 s on this guest). */
#define KNEE_MIN_BYTES ((int64_t)1 << 20)
#define KNEE_FLOOR_BYTES ((int64_t)64 << 20)
#define KNEE_CAP_BYTES ((int64_t)512 << 20)
#define KNEE_MAX_POINTS 16
/* A cache less than 1.5x faster than DRAM is no knee (nothing the model
 * needs to know); the cache ends where the bandwidth falls below 5/3 of the
 * DRAM rate. The 2-vCPU EPYC guest, warm copy, 2 threads: ~130-150 GB/s up
 * to 16 MiB, 95-135 at 32 MiB (1.8-2.2x DRAM), 61-88 at 64 MiB (1.2-1.55x:
 * a copy twice the cache's size still hits in part), 45-60 from 128 MiB:
 * 32 MiB, its L3. A 1.25x margin took the 64 MiB point always, 1.5x in 6
 * of 48 calibrations; 5/3 lies between the two points' ranges. */
#define KNEE_MIN_RATIO 1.5
#define KNEE_DRAM_MARGIN (5.0 / 3.0)
/* The sweep runs this many times, interleaved, and each size keeps the
 * median of its rounds: the host's bandwidth moves between two sizes'
 * samples. With one sweep and the 1.5x margin, 6 of 48 calibrations on the
 * guest above put the knee at 16 or 64 MiB (and the model's 2^22 eager rows
 * moved with it: -29..-19% at 64 MiB, -22..+1% at 32). */
#define KNEE_ROUNDS 3

/* inner warm copies of n floats, each thread over its own static chunk (so it
 * stays in that core's caches), in one parallel region: a fork per copy
 * would cost more than the copy itself at 1 MiB. Vectorised for this
 * machine (measure/CMakeLists.txt), like the executors' copy: a scalar loop
 * runs at a core's instruction rate, the same from L2 as from DRAM, and
 * shows no knee at all. */
static void copy_warm(float *restrict b, const float *restrict a, int64_t n, int inner)
{
#pragma omp parallel
    for (int r = 0; r < inner; r++) {
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < n; i++) b[i] = a[i];
    }
}

/* Median bandwidth (GB/s, read + write bytes) of a warm copy of n floats;
 * each sample repeats the copy for at least 1 ms and is taken again (up to
 * 4 times) while the process does not get its cores; *contended counts the
 * samples kept although contended. */
typedef struct warm_copy {
    float *b;
    const float *a;
    int64_t n;
    int inner;
} warm_copy;

static void warm_copy_once(void *p)
{
    warm_copy *w = p;
    copy_warm(w->b, w->a, w->n, w->inner);
}

static double warm_copy_gbs(float *b, const float *a, int64_t n, int samples, int *contended)
{
    double s[9];
    if (samples > 9) samples = 9;
    copy_warm(b, a, n, 1);
    double t0 = mb_meas_now_s();
    copy_warm(b, a, n, 4);
    double one = (mb_meas_now_s() - t0) / 4;
    warm_copy wc = {b, a, n, one >= 1e-3 ? 1 : (int)(1e-3 / (one > 1e-7 ? one : 1e-7)) + 1};
    mb_meas_sampler sm = {warm_copy_once, &wc, NULL, NULL, 1, mb_kern_threads(), 4};
    for (int k = 0; k < samples; k++) {
        int bad = 0;
        s[k] = mb_meas_sample_s(&sm, &bad, NULL) / wc.inner;
        *contended += bad;
    }
    mb_meas_stats st;
    mb_meas_stats_compute(s, samples, &st);
    return 2.0 * (double)n * sizeof(float) / st.median_s / 1e9;
}

int mb_cal_knee_pick(const double *gbs, int np)
{
    if (np < 2) return -1;
    /* DRAM: the largest size; the cache: the best of the others */
    double hi = 0, lo = gbs[np - 1];
    for (int i = 0; i + 1 < np; i++) hi = fmax(hi, gbs[i]);
    if (!(hi > KNEE_MIN_RATIO * lo)) return -1;
    /* walking down from the largest size, the first one still above the
     * DRAM rate by KNEE_DRAM_MARGIN (the smaller caches' plateaus above it
     * do not matter) */
    int k = np - 1;
    while (k > 0 && gbs[k] < KNEE_DRAM_MARGIN * lo) k--;
    return k;
}

double mb_cal_retained_bytes(const double *gbs, int np, int knee)
{
    if (knee < 0 || np < 3) return 0;
    double plateau = 0, dram = gbs[np - 1];
    for (int i = 0; i + 1 < np; i++) plateau = fmax(plateau, gbs[i]);
    if (!(plateau > dram && dram > 0)) return 0;
    double num = 0, den = 0;
    for (int i = knee + 1; i + 1 < np; i++) {
        double w = (double)(KNEE_MIN_BYTES << i);
        double h = (1 / dram - 1 / gbs[i]) / (1 / dram - 1 / plateau);
        h = fmin(1, fmax(0, h));
        num += h / w;
        den += 1 / (w * w);
    }
    return den > 0 ? num / den : 0;
}

int mb_cal_cache_knee(int64_t reported_bytes, int quick, int64_t *knee_bytes, int *from_knee,
                       int64_t *retained_bytes, char *desc, size_t descsz, mb_err *err)
{
    *from_knee = 0;
    *retained_bytes = 0;
    int64_t max_ws = 4 * reported_bytes;
    if (max_ws < KNEE_FLOOR_BYTES) max_ws = KNEE_FLOOR_BYTES;
    if (max_ws > KNEE_CAP_BYTES) max_ws = KNEE_CAP_BYTES;
    int64_t nmax = max_ws / 2 / (int64_t)sizeof(float);
    float *a = aligned_alloc(64, (size_t)nmax * sizeof(float));
    float *b = aligned_alloc(64, (size_t)nmax * sizeof(float));
    if (!a || !b) {
        free(a);
        free(b);
        return mb_err_set(err, MB_ERUN, "cannot allocate 2 x %.0f MiB for the cache knee",
                          (double)nmax * 4 / 1048576.0);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nmax; i++) a[i] = 1.0f + (float)(i & 255), b[i] = 0.0f;
    double gbs[KNEE_MAX_POINTS], round_gbs[KNEE_MAX_POINTS][KNEE_ROUNDS];
    int64_t ws[KNEE_MAX_POINTS];
    int np = 0;
    while (np < KNEE_MAX_POINTS && (KNEE_MIN_BYTES << np) <= max_ws) ws[np] = KNEE_MIN_BYTES << np, np++;
    const int rounds = quick ? 1 : KNEE_ROUNDS;
    int samples = 3, contended = 0, clean[KNEE_MAX_POINTS] = {0};
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < np; i++) {
            int c0 = contended;
            double v = warm_copy_gbs(b, a, ws[i] / 2 / (int64_t)sizeof(float), samples, &contended);
            /* a point most of whose samples were contended is left out */
            if (2 * (contended - c0) <= samples) round_gbs[i][clean[i]++] = v;
        }
    free(a);
    free(b);
    /* every size needs a clean round (the largest is the DRAM rate), and a
     * third of the samples contended is a busy machine */
    int holes = 0;
    for (int i = 0; i < np; i++) holes += clean[i] == 0;
    if (holes || 3 * contended > samples * rounds * np)
        return mb_err_set(err, MB_ERUN, "the process did not get its cores during the cache-knee "
                          "probe (%d of %d samples contended after 4 retries each, %d of %d sizes "
                          "without a clean sweep: other processes or steal)", contended,
                          samples * rounds * np, holes, np);
    for (int i = 0; i < np; i++) {
        mb_meas_stats st;
        mb_meas_stats_compute(round_gbs[i], clean[i], &st);
        gbs[i] = st.median_s; /* the median of the clean rounds' rates */
    }
    double hi = 0, lo = gbs[np - 1];
    for (int i = 0; i + 1 < np; i++) hi = fmax(hi, gbs[i]);
    int k = mb_cal_knee_pick(gbs, np);
    if (k < 0) {
        *knee_bytes = reported_bytes;
        snprintf(desc, descsz, "reported %.0f MiB (no knee in warm copy bandwidth up to %.0f MiB: "
                 "%.1f GB/s at 1 MiB, %.1f at %.0f MiB)", (double)reported_bytes / 1048576.0,
                 (double)max_ws / 1048576.0, gbs[0], lo, (double)max_ws / 1048576.0);
        return MB_OK;
    }
    *knee_bytes = ws[k];
    *from_knee = 1;
    *retained_bytes = (int64_t)llround(mb_cal_retained_bytes(gbs, np, k));
    snprintf(desc, descsz, "measured knee %.0f MiB (warm copy %.1f GB/s in cache, %.1f GB/s at "
             "%.0f MiB, %.1f at 2x the knee; %.0f MiB of a larger stream still served; the system "
             "reports %.0f MiB)", (double)ws[k] / 1048576.0, hi, lo, (double)max_ws / 1048576.0,
             k + 2 < np ? gbs[k + 1] : lo, (double)*retained_bytes / 1048576.0,
             (double)reported_bytes / 1048576.0);
    return MB_OK;
}
