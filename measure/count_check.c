/* count_check.c — the above-peak test for a GPU row's counted (or modelled)
 * DRAM bytes over its fastest timed sample. Why the allowance: the counted
 * range ends with a drain sweep that writes back every dirty line the plan
 * left in L2; a timed sample stops at the plan's last kernel, with up to one
 * L2 of those lines still dirty. Copy f32 at n = 2^22 on an H200 (L2 50-60
 * MB by cudaDevAttrL2CacheSize; shared/reference/gpu-specs.md) moves 16.8 MB
 * read + 16.8 MB written, all of the written lines fit in L2, so the counted
 * 33.6 MB over a 6 us sample would read 5.6 TB/s against the 4.8 TB/s peak
 * while the window itself need only have moved the 16.8 MB read (2.8 TB/s). It does not read counters or
 * print anything (cuda_counters.cu does). */
#include "count_check.h"

#include <math.h>

static double min_d(double a, double b)
{
    return a < b ? a : b;
}

double mb_meas_timed_bytes_floor(double read_bytes, double write_bytes, double cache_bytes, int warm)
{
    double r = read_bytes > 0 ? read_bytes : 0, w = write_bytes > 0 ? write_bytes : 0;
    double c = cache_bytes > 0 ? cache_bytes : 0;
    double floor_bytes = r + w - min_d(w, c);
    if (warm) floor_bytes -= min_d(r, c);
    return floor_bytes > 0 ? floor_bytes : 0;
}

int mb_meas_above_peak(double read_bytes, double write_bytes, double cache_bytes, int warm, double time_s,
                       double peak_gbs, double slack, double *gbs_out)
{
    if (gbs_out) *gbs_out = 0;
    if (!(time_s > 0) || !(peak_gbs > 0)) return 0;
    double bytes = mb_meas_timed_bytes_floor(read_bytes, write_bytes, cache_bytes, warm);
    if (!(bytes > 0)) return 0;
    double gbs = bytes / time_s / 1e9;
    if (gbs_out) *gbs_out = gbs;
    return gbs > peak_gbs * (1 + slack);
}

const char *mb_meas_count_verdict_name(mb_count_verdict v)
{
    switch (v) {
    case MB_COUNT_BELOW_L2: return "below 4x L2";
    case MB_COUNT_OK: return "ok";
    case MB_COUNT_OFF: return "off";
    default: return "";
    }
}

mb_count_verdict mb_meas_count_vs_model(double counted_read, double counted_write, double model_read,
                                        double model_write, double tensor_bytes, double cache_bytes,
                                        double carry_bytes, double tol, double *err_rel)
{
    if (err_rel) *err_rel = NAN;
    double counted = counted_read + counted_write, model = model_read + model_write;
    if (!(counted_read >= 0) || !(counted_write >= 0) || !(model > 0)) return MB_COUNT_NOT_COUNTED;
    if (err_rel) *err_rel = counted / model - 1;
    if (!(cache_bytes > 0) || !(tensor_bytes >= MB_COUNT_JUDGED_L2X * cache_bytes)) return MB_COUNT_BELOW_L2;
    double allowed = tol * model + (carry_bytes > 0 ? carry_bytes : 0);
    return fabs(counted - model) > allowed ? MB_COUNT_OFF : MB_COUNT_OK;
}
