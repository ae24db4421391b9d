/* cpu_run.c — the timing protocol on the CPU: allocate and first-touch,
 * check once early, warm up, sample (evicting the LLC before each sample,
 * outside the timed region) until the noise criterion stops, then poison,
 * run a last timed sample and check it. Does not parse options or write CSV. */
#include "measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mb_meas_flusher_init(mb_meas_flusher *f, int64_t llc_bytes, mb_err *err)
{
    memset(f, 0, sizeof *f);
    if (llc_bytes <= 0) llc_bytes = mb_kern_llc_bytes();
    f->n = 2 * llc_bytes / (int64_t)sizeof(float);
    f->buf = aligned_alloc(64, (size_t)f->n * sizeof(float));
    if (!f->buf) return mb_err_set(err, MB_ERUN, "cannot allocate the cache flush buffer");
    float *b = f->buf;
    int64_t n = f->n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) b[i] = 1.0f + (float)(i & 1023) * 0.001f; /* non-zero */
    return MB_OK;
}

void mb_meas_flush_cpu(mb_meas_flusher *f)
{
    /* a read sweep of 2x LLC: evicts the measured tensors and leaves only clean
     * lines behind, so no write-back of the flush lands in the timed region */
    const float *b = f->buf;
    int64_t n = f->n;
    float s = 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (int64_t i = 0; i < n; i += 16) s += b[i];
    f->sink = s;
}

void mb_meas_flusher_free(mb_meas_flusher *f)
{
    free(f->buf);
    memset(f, 0, sizeof *f);
}

/* Runs every kernel once; stamps[k+1] - stamps[k] is kernel k's time. */
static int timed_pass(mb_kern_tensors *t, mb_kern_exec e, double *stamps, mb_err *err)
{
    stamps[0] = mb_meas_now_s();
    for (int k = 0; k < t->plan->n_kernels; k++) {
        int rc = mb_kern_run_kernel(t, k, e, err);
        if (rc) return rc;
        stamps[k + 1] = mb_meas_now_s();
    }
    return MB_OK;
}

static void cpu_label(char *buf, size_t bufsz)
{
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    snprintf(buf, bufsz, "%s", pv.cpu_model[0] ? pv.cpu_model : "cpu");
}

/* Notes the first failure of a check into why. */
static void note_check(const mb_graph *g, const mb_kern_check *ck, const char *when, char *why,
                       size_t whysz)
{
    if (!why || !whysz || why[0]) return;
    if (ck->poisoned)
        snprintf(why, whysz, "%s: %lld elements never written (still poisoned)", when,
                 (long long)ck->poisoned);
    else
        snprintf(why, whysz, "%s: %lld elements off, first at [%lld] of %s: got %.9g, want %.9g "
                 "(max rel err %.3g > tol %.3g)", when, (long long)ck->bad, (long long)ck->first_bad,
                 ck->first_bad_node >= 0 && g->nodes[ck->first_bad_node].name[0]
                     ? g->nodes[ck->first_bad_node].name : "a result",
                 ck->first_got, ck->first_want, ck->max_rel_err, ck->tol);
}

int mb_meas_cpu_run(const mb_plan *p, int64_t n, const mb_meas_config *c, mb_meas_record *row,
                    mb_meas_record *per_kernel, char *why, size_t whysz, mb_err *err)
{
    if (why && whysz) why[0] = '\0';
    mb_kern_set_threads(c->threads);
    int nk = p->n_kernels;
    cpu_label(row->device, sizeof row->device);
    snprintf(row->backend, sizeof row->backend, "cpu");
    snprintf(row->counters, sizeof row->counters, "none-cpu");
    row->dram_read_bytes = row->dram_write_bytes = -1;

    mb_kern_tensors t;
    int rc = mb_kern_tensors_alloc(p, n, c->llc_bytes, &t, err);
    if (rc) return rc;
    mb_meas_flusher fl = {0};
    if (c->cold && (rc = mb_meas_flusher_init(&fl, c->llc_bytes, err))) {
        mb_kern_tensors_free(&t);
        return rc;
    }
    int cap = c->max_reps > 10 ? c->max_reps : 10;
    double *samples = malloc((size_t)(cap + 1) * sizeof(double));
    double *ksamples = malloc((size_t)(cap + 1) * (size_t)(nk ? nk : 1) * sizeof(double));
    double *stamps = malloc((size_t)(nk + 1) * sizeof(double));
    double *tmp = malloc((size_t)(cap + 1) * sizeof(double));
    if (!samples || !ksamples || !stamps || !tmp) {
        rc = mb_err_set(err, MB_ERUN, "out of memory");
        goto done;
    }

    /* early check: first run on poisoned outputs (alloc poisons with rep 0) */
    int passed = 1;
    double max_err = 0.0;
    mb_kern_check ck;
    if ((rc = timed_pass(&t, c->exec, stamps, err))) goto done;
    double first_s = stamps[nk] - stamps[0];
    if (c->check) {
        if ((rc = mb_kern_verify(&t, 0, c->tol, &ck, err))) goto done;
        max_err = ck.max_rel_err;
        if (!ck.passed) passed = 0, note_check(p->g, &ck, "first run", why, whysz);
    }
    for (int w = 1; w < c->warmup; w++)
        if ((rc = timed_pass(&t, c->exec, stamps, err))) goto done;

    /* cache-resident runs shorter than 1 ms are batched when not cold */
    int inner = 1;
    if (!c->cold && first_s < 1e-3) inner = (int)(1e-3 / (first_s > 1e-7 ? first_s : 1e-7)) + 1;

    int ns = 0, contended = 0;
    double t_begin = mb_meas_now_s();
    for (;;) {
        if (c->stop && *c->stop) {
            rc = mb_err_set(err, MB_ERUN, "interrupted");
            goto done;
        }
        int last = mb_meas_should_stop(c, samples, ns, mb_meas_now_s() - t_begin) || ns >= cap;
        if (last && c->check) mb_kern_poison(&t, 1); /* the final sample writes over rep 1 */
        if (c->cold) mb_meas_flush_cpu(&fl);
        double tot = 0.0;
        for (int k = 0; k < nk; k++) ksamples[(size_t)k * (cap + 1) + ns] = 0.0;
        mb_meas_contention cs;
        mb_meas_contention_begin(&cs);
        double w0 = mb_meas_now_s();
        for (int r = 0; r < inner; r++) {
            if ((rc = timed_pass(&t, c->exec, stamps, err))) goto done;
            tot += stamps[nk] - stamps[0];
            for (int k = 0; k < nk; k++)
                ksamples[(size_t)k * (cap + 1) + ns] += (stamps[k + 1] - stamps[k]) / inner;
        }
        contended += mb_meas_contention_end(&cs, mb_meas_now_s() - w0, mb_kern_threads(),
                                            c->contention_frac);
        samples[ns++] = tot / inner;
        if (last) break;
    }
    if (c->check) {
        if ((rc = mb_kern_verify(&t, 1, c->tol, &ck, err))) goto done;
        if (ck.max_rel_err > max_err) max_err = ck.max_rel_err;
        if (!ck.passed) passed = 0, note_check(p->g, &ck, "last sample", why, whysz);
        if (p->g->has_backward) {
            double gerr = 0;
            int gok = 0;
            if ((rc = mb_kern_gradcheck(&t, c->gradcheck_points > 0 ? c->gradcheck_points : 64,
                                        &gerr, &gok, err)))
                goto done;
            if (!gok) {
                passed = 0;
                if (why && whysz && !why[0])
                    snprintf(why, whysz, "finite-difference gradient check failed (%.3g x tolerance)",
                             gerr);
            }
        }
    }
    mb_meas_row_finish(row, samples, ns, c->check, max_err, passed, per_kernel, nk, ksamples,
                       (size_t)(cap + 1), tmp);
    row->contended = contended;
    for (int k = 0; per_kernel && k < nk; k++) per_kernel[k].contended = contended;
    rc = MB_OK;
done:
    free(samples);
    free(ksamples);
    free(stamps);
    free(tmp);
    if (c->cold) mb_meas_flusher_free(&fl);
    mb_kern_tensors_free(&t);
    return rc;
}
