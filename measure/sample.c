/* sample.c — the one sample timer of every calibration probe, the cache
 * knee and the host reference: calls of a function timed, taken again while
 * the process did not get its cores. Does not choose what is probed
 * (calibrate/) or keep figures (calibrate/figure.c). */
#include "measure.h"

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
