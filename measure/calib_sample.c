/* calib_sample.c — the one sample timer of every calibration probe (and of the
 * cache knee and the host reference), and calibrate's figures: warm-up, one
 * sample a round, the median rate. Does not choose what is probed: the
 * calib_*.c files do. */
#include "calib_int.h"

double mb_meas_sample_s(const mb_meas_sampler *s, int *contended, int *retaken)
{
    int calls = s->calls > 0 ? s->calls : 1;
    for (int a = 0;; a++) {
        if (s->before) s->before(s->before_ctx);
        mb_meas_contention cs;
        mb_meas_contention_begin(&cs);
        double t0 = mb_meas_now_s();
        for (int i = 0; i < calls; i++) s->fn(s->ctx);
        double w = mb_meas_now_s() - t0;
        int bad = mb_meas_contention_end(&cs, w, s->threads, 0);
        if (!bad || a >= s->retries) {
            if (contended) *contended = bad;
            return w / calls;
        }
        if (retaken) ++*retaken;
    }
}

void mb_meas_figure_warm(mb_meas_figure *f)
{
    f->fn(f->ctx);
    double t0 = mb_meas_now_s();
    f->fn(f->ctx);
    double one = mb_meas_now_s() - t0;
    f->inner = one >= CAL_SAMPLE_S ? 1 : (int)(CAL_SAMPLE_S / (one > 1e-8 ? one : 1e-8)) + 1;
    if (f->inner > 1000000) f->inner = 1000000;
    f->ns = f->contended = f->retaken = 0;
}

void mb_meas_figure_sample(mb_meas_figure *f, int threads)
{
    mb_meas_sampler s = {f->fn, f->ctx, NULL, NULL, f->inner, threads, CAL_RETRIES};
    int bad = 0;
    f->s[f->ns++] = mb_meas_sample_s(&s, &bad, &f->retaken);
    f->contended += bad;
}

double mb_meas_figure_median_s(const mb_meas_figure *f)
{
    mb_meas_stats st;
    mb_meas_stats_compute(f->s, f->ns, &st);
    return st.median_s;
}

double mb_meas_figure_rate(const mb_meas_figure *f, double *spread)
{
    mb_meas_stats st;
    mb_meas_stats_compute(f->s, f->ns, &st);
    if (spread && st.cv > *spread) *spread = st.cv;
    return f->work / st.median_s / 1e9;
}
