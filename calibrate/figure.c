/* figure.c — calibrate's figures: warm-up, one sample a round (measure's
 * sample timer), the median rate. Does not choose what is probed: the other
 * files of calibrate/ do. */
#include "cal_int.h"

void mb_cal_figure_warm(mb_cal_figure *f)
{
    f->fn(f->ctx);
    double t0 = mb_meas_now_s();
    f->fn(f->ctx);
    double one = mb_meas_now_s() - t0;
    f->inner = one >= CAL_SAMPLE_S ? 1 : (int)(CAL_SAMPLE_S / (one > 1e-8 ? one : 1e-8)) + 1;
    if (f->inner > 1000000) f->inner = 1000000;
    f->ns = f->contended = f->retaken = 0;
}

void mb_cal_figure_sample(mb_cal_figure *f, int threads)
{
    mb_meas_sampler s = {f->fn, f->ctx, f->before, f->before ? f->ctx : NULL, f->inner, threads, CAL_RETRIES};
    int bad = 0;
    f->s[f->ns++] = mb_meas_sample_s(&s, &bad, &f->retaken);
    f->contended += bad;
}

double mb_cal_figure_median_s(const mb_cal_figure *f)
{
    mb_meas_stats st;
    mb_meas_stats_compute(f->s, f->ns, &st);
    return st.median_s;
}

double mb_cal_figure_rate(const mb_cal_figure *f, double *spread)
{
    mb_meas_stats st;
    mb_meas_stats_compute(f->s, f->ns, &st);
    if (spread && st.cv > *spread) *spread = st.cv;
    return f->work / st.median_s / 1e9;
}
