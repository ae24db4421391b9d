/* protocol.c — the timing protocol, once for every backend: warm-up, the
 * check of the first run on poisoned outputs, samples until the noise rule
 * stops, the last sample on fresh poison and its check, the gradient check,
 * the row's statistics; and the backend switch. The backends (cpu_run.c,
 * cuda_ops.cu) only prepare, poison, flush, time one sample and bring
 * results back. Does not time anything itself, nor write CSV. */
#include "protocol_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Keeps the first inaccurate check's note (mb_kern_check_note) in note. */
static void note_inaccurate(const mb_kern_check *ck, char *note, size_t notesz)
{
    if (!note[0]) mb_kern_check_note(ck, note, notesz);
}

static void set_why(char *why, size_t whysz, const char *msg)
{
    if (why && whysz && !why[0]) snprintf(why, whysz, "%s", msg);
}

static void fill_times(mb_meas_record *r, const double *samples, int ns)
{
    mb_meas_stats st;
    mb_meas_stats_compute(samples, ns, &st);
    r->reps = ns;
    r->time_s_median = st.median_s;
    r->time_s_min = st.min_s;
    r->time_s_p90 = st.p90_s;
    r->time_cv = st.cv;
    r->time_s_upper_mode = st.upper_mode_s;
    r->time_s_lower_mode = st.lower_mode_s;
    r->upper_mode_share = st.upper_mode_share > 0 ? st.upper_mode_share : NAN;
}

/* Finishes a row from its ns samples and its check, then each per-kernel
 * record from its own samples (kernel k's at ksamples[k * stride ...]):
 * the row's device, backend, counters and check, no counted bytes (-1). */
static void row_finish(mb_meas_record *row, const double *samples, int ns, int checked,
                       double max_err, int passed, mb_meas_record *per_kernel, int nk,
                       const double *ksamples, size_t stride)
{
    fill_times(row, samples, ns);
    row->max_rel_err = checked ? max_err : NAN;
    row->verified = checked ? passed : 0;
    for (int k = 0; per_kernel && k < nk; k++) {
        mb_meas_record *pk = &per_kernel[k];
        memcpy(pk->device, row->device, sizeof pk->device);
        memcpy(pk->backend, row->backend, sizeof pk->backend);
        memcpy(pk->counters, row->counters, sizeof pk->counters);
        pk->dram_read_bytes = pk->dram_write_bytes = -1;
        fill_times(pk, ksamples + (size_t)k * stride, ns);
        pk->max_rel_err = row->max_rel_err;
        pk->verified = row->verified;
    }
}

/* The accuracy column of row and its kernels (MB_MEAS_CSV_ACCURACY_COLUMN)
 * after its checks; a passed row's note goes to why. */
static void row_accuracy(mb_meas_record *row, mb_meas_record *per_kernel, int nk, int checked,
                         int passed, const char *note, char *why, size_t whysz)
{
    mb_kern_accuracy a = !passed ? MB_KERN_ACC_FAILED : note[0] ? MB_KERN_ACC_INACCURATE : MB_KERN_ACC_OK;
    snprintf(row->accuracy, sizeof row->accuracy, "%s", checked ? mb_kern_accuracy_name(a) : "");
    for (int k = 0; per_kernel && k < nk; k++) memcpy(per_kernel[k].accuracy, row->accuracy, sizeof row->accuracy);
    if (checked && passed && note[0]) set_why(why, whysz, note);
}

/* The host reference's columns: the median of the row's reference copies
 * and op probes, and their ratios to the calibrated figures (NAN: none). */
static void host_finish(mb_meas_record *row, mb_meas_record *per_kernel, int nk, const double *refs,
                        int n_ref, const mb_meas_hostref *hr,
                        double ops_geps[][MB_MEAS_HOSTREF_MAX], const int *n_op)
{
    row->host_copy_gbs = mb_meas_median_rate(refs, n_ref);
    row->host_copy_ratio = hr->calibrated_gbs > 0 ? row->host_copy_gbs / hr->calibrated_gbs : NAN;
    /* the op ratio farthest from 1 either way */
    row->host_op_ratio = NAN;
    for (int o = 0; o < MB_MEAS_HOSTREF_N_OPS; o++) {
        double geps = mb_meas_median_rate(ops_geps[o], n_op[o]);
        if (!(geps > 0 && hr->calibrated_op_geps[o] > 0)) continue;
        double ratio = geps / hr->calibrated_op_geps[o];
        if (isnan(row->host_op_ratio) || fabs(log(ratio)) > fabs(log(row->host_op_ratio)))
            row->host_op_ratio = ratio;
    }
    for (int k = 0; per_kernel && k < nk; k++) {
        per_kernel[k].host_copy_gbs = row->host_copy_gbs;
        per_kernel[k].host_copy_ratio = row->host_copy_ratio;
        per_kernel[k].host_op_ratio = row->host_op_ratio;
    }
}

/* The checks of the last sample: results, then for backward plans the
 * finite-difference gradient check and the backend's own. */
static int final_checks(const mb_meas_ops *ops, mb_meas_row_run *r, double *max_err, int *passed,
                        char *why, size_t whysz, char *note, size_t notesz, mb_err *err)
{
    const mb_meas_config *c = r->c;
    mb_kern_check ck;
    int rc = ops->check(r, ops->final_rep, &ck, err);
    if (rc) return rc;
    if (ck.max_rel_err > *max_err) *max_err = ck.max_rel_err;
    if (!ck.passed) *passed = 0, note_check(r->p->g, &ck, "last sample", why, whysz);
    note_inaccurate(&ck, note, notesz);
    if (!r->p->g->has_backward) return MB_OK;
    double gerr = 0;
    int ok = 0;
    rc = mb_kern_gradcheck(r->host, c->gradcheck_points > 0 ? c->gradcheck_points : 64, &gerr, &ok, err);
    if (rc) return rc;
    if (!ok) {
        char msg[128];
        snprintf(msg, sizeof msg, "finite-difference gradient check failed (%.3g x tolerance)", gerr);
        *passed = 0;
        set_why(why, whysz, msg);
    }
    if (!ops->extra_check) return MB_OK;
    char msg[256] = "";
    ok = 1;
    if ((rc = ops->extra_check(r, &ok, msg, sizeof msg, err))) return rc;
    if (!ok) *passed = 0, set_why(why, whysz, msg);
    return MB_OK;
}

int mb_meas_protocol_run(const mb_meas_ops *ops, const mb_plan *p, int64_t n, const mb_meas_config *c,
                         mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                         mb_err *err)
{
    if (why && whysz) why[0] = '\0';
    const int nk = p->n_kernels;
    const int cap = c->max_reps > 10 ? c->max_reps : 10;
    const size_t stride = (size_t)cap + 1;
    mb_meas_row_run r = {p, n, c, row, per_kernel, NULL, 0, NULL};
    double *samples = malloc(stride * sizeof(double));
    double *ksamples = malloc(stride * (size_t)(nk ? nk : 1) * sizeof(double));
    double *kernel_s = calloc((size_t)nk + 1, sizeof(double));
    if (!samples || !ksamples || !kernel_s) {
        free(samples);
        free(ksamples);
        free(kernel_s);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    int rc = ops->prepare(&r, err);
    if (rc) goto done;
#define STOPPED() (c->stop && *c->stop ? (rc = mb_err_set(err, MB_ERUN, "interrupted")) : 0)
    /* an interrupt is acted on between every two steps (each long fill, pass
     * and check inside kernels/ also stops early, within milliseconds) */
    if (STOPPED()) goto done;

    /* warm-up; the first run writes over poison and is checked */
    int passed = 1;
    double max_err = 0.0;
    char note[256] = ""; /* an inaccurate check's (mb_kern_check_note) */
    const int n_warm = r.once ? 0 : c->warmup > 0 ? c->warmup : 1;
    const int early = c->check && n_warm > 0 && (ops->early_check_max_n <= 0 || n <= ops->early_check_max_n);
    if (early && (rc = ops->poison(&r, ops->early_rep, err))) goto done;
    for (int w = 0; w < n_warm; w++) {
        if (STOPPED() || (rc = ops->warm(&r, err))) goto done;
        if (w == 0 && early) {
            mb_kern_check ck;
            if ((rc = ops->check(&r, ops->early_rep, &ck, err))) goto done;
            max_err = ck.max_rel_err;
            if (!ck.passed) passed = 0, note_check(p->g, &ck, "first run", why, whysz);
            note_inaccurate(&ck, note, sizeof note);
        }
    }

    /* timed samples, each after a flush when cold; the last on fresh poison.
     * With a host reference (cold rows only: it evicts the cache), its copy
     * is timed before the flush of the first sample, of the last, of the
     * samples mb_meas_hostref_due names and of any sample
     * c->hostref->interval_s after the previous reference: the flush
     * still comes right before every sample, reference or not (a copy makes
     * the next one run up to ~10% faster than a read sweep does here) */
    int ns = 0, contended = 0, watched = 0, dropped = 0, n_ref = 0, n_op[MB_MEAS_HOSTREF_N_OPS] = {0};
    double refs[MB_MEAS_HOSTREF_MAX], ops_geps[MB_MEAS_HOSTREF_N_OPS][MB_MEAS_HOSTREF_MAX], t_ref = 0;
    mb_meas_hostref *hr = c->cold ? c->hostref : NULL;
    mb_meas_sample s;
    const double t_begin = mb_meas_now_s();
    for (;;) {
        if (STOPPED()) goto done;
        const int last = r.once || mb_meas_should_stop(c, samples, ns, mb_meas_now_s() - t_begin) ||
                         ns >= cap;
        if (hr && mb_meas_hostref_due(ns, last, mb_meas_now_s() - t_ref, hr->interval_s)) {
            double gbs = mb_meas_hostref_copy_gbs(hr);
            if (gbs > 0) refs[n_ref < MB_MEAS_HOSTREF_MAX ? n_ref++ : MB_MEAS_HOSTREF_MAX - 1] = gbs;
            for (int o = 0; o < MB_MEAS_HOSTREF_N_OPS; o++) {
                double geps = hr->calibrated_op_geps[o] > 0 ? mb_meas_hostref_op_geps(o) : 0;
                int *k = &n_op[o];
                if (geps > 0) ops_geps[o][*k < MB_MEAS_HOSTREF_MAX ? (*k)++ : MB_MEAS_HOSTREF_MAX - 1] = geps;
            }
            t_ref = mb_meas_now_s();
        }
        if (last && c->check && (rc = ops->poison(&r, ops->final_rep, err))) goto done;
        if (c->cold && (rc = ops->flush(&r, err))) goto done;
        if (STOPPED()) goto done;
        memset(kernel_s, 0, ((size_t)nk + 1) * sizeof(double));
        s = (mb_meas_sample){0.0, kernel_s, 1, -1};
        if ((rc = ops->sample(&r, &s, err))) goto done;
        if (!s.valid) {
            /* a backend drops a sample only now and then (a CUDA blocking
             * kernel that timed out); one that never gives a valid one is broken */
            if (++dropped > cap) {
                rc = mb_err_set(err, MB_ERUN, "%s backend: %d samples in a row not valid", ops->name, dropped);
                goto done;
            }
            continue;
        }
        dropped = 0;
        for (int k = 0; k < nk; k++) ksamples[(size_t)k * stride + (size_t)ns] = kernel_s[k];
        samples[ns++] = s.total_s;
        if (s.contended >= 0) watched = 1, contended += s.contended;
        if (last) break;
    }
    if (STOPPED() ||
        (c->check && (rc = final_checks(ops, &r, &max_err, &passed, why, whysz, note, sizeof note, err))))
        goto done;
    if (STOPPED()) goto done; /* a check cut short judges nothing */
    row_finish(row, samples, ns, c->check, max_err, passed, per_kernel, nk, ksamples, stride);
    row_accuracy(row, per_kernel, nk, c->check, passed, note, why, whysz);
    if (watched) {
        row->contended = contended;
        for (int k = 0; per_kernel && k < nk; k++) per_kernel[k].contended = contended;
    }
    if (n_ref) host_finish(row, per_kernel, nk, refs, n_ref, hr, ops_geps, n_op);
    if (ops->after_timing) rc = ops->after_timing(&r, err);
#undef STOPPED
done:
    ops->release(&r, rc);
    free(samples);
    free(ksamples);
    free(kernel_s);
    return rc;
}

/* ---- the backend switch ------------------------------------------------------ */

int mb_meas_cpu_run(const mb_plan *p, int64_t n, const mb_meas_config *c, mb_meas_record *row,
                    mb_meas_record *per_kernel, char *why, size_t whysz, mb_err *err)
{
    return mb_meas_protocol_run(&mb_meas_cpu_ops, p, n, c, row, per_kernel, why, whysz, err);
}

int mb_meas_cuda_run(const mb_plan *p, int64_t n, const mb_meas_config *c, mb_meas_record *row,
                     mb_meas_record *per_kernel, char *why, size_t whysz, mb_err *err)
{
    return mb_meas_protocol_run(&mb_meas_cuda_ops, p, n, c, row, per_kernel, why, whysz, err);
}

int mb_meas_run(mb_meas_backend b, const mb_plan *p, int64_t n, const mb_meas_config *c,
                mb_meas_record *row, mb_meas_record *per_kernel, char *why, size_t whysz,
                mb_err *err)
{
    if (b == MB_MEAS_CUDA) return mb_meas_cuda_run(p, n, c, row, per_kernel, why, whysz, err);
    if (b == MB_MEAS_CPU) return mb_meas_cpu_run(p, n, c, row, per_kernel, why, whysz, err);
    return mb_err_set(err, MB_EINPUT, "backend must be resolved before running");
}

int mb_meas_resolve_backend(mb_meas_backend want, mb_meas_backend *got, char *note, size_t notesz,
                            mb_err *err)
{
    char why[256] = "";
    if (note && notesz) note[0] = '\0';
    if (want == MB_MEAS_CPU) {
        *got = MB_MEAS_CPU;
        return MB_OK;
    }
    int ok = mb_meas_cuda_available(why, sizeof why);
    if (want == MB_MEAS_CUDA) {
        if (!ok) return mb_err_set(err, MB_ERUN, "--backend cuda: no usable GPU (%s)", why);
        *got = MB_MEAS_CUDA;
        return MB_OK;
    }
    *got = ok ? MB_MEAS_CUDA : MB_MEAS_CPU;
    if (note && notesz) {
        if (ok) snprintf(note, notesz, "backend auto: using cuda");
        else snprintf(note, notesz, "backend auto: using cpu (cuda: %s)", why);
    }
    return MB_OK;
}
