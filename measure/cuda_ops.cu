/* cuda_ops.cu — the CUDA backend's operations for the protocol
 * (protocol.c): a plan's tensors on the device, its kernels launched for
 * warm-up and timed between events (cuda_session.cu), results copied back
 * and checked (sampled above 2^24 elements; backward plans also against the
 * CPU backend's input gradients), then clocks, the above-peak warning and
 * the row's counted runs (cuda_counters.cu). Host code only; it does not
 * decide how many samples to take or when a row passes (protocol.c). */
#include "cuda_int.h"
#include "mb_cuda_check.cuh" /* CUDA_TRY */
#include "mb_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S (*gs) /* the session, through the handle gs in scope (cuda_int.h) */

/* Poison reps written on the device before the early check and before the
 * last sample (the host copies hold rep 0 from their allocation). */
#define MB_CUDA_EARLY_REP 2
#define MB_CUDA_FINAL_REP 3

/* The early check (first run) up to this size: it compares every element in
 * float64 on the host, seconds per row at 2^28; above, the final check alone. */
#define MB_CUDA_EARLY_CHECK_MAX_N ((int64_t)1 << 22)

/* The CPU backend's input gradients are compared up to this size (the CPU
 * pass is cheap there). */
#define MB_CUDA_CPU_GRADS_MAX_N ((int64_t)1 << 22)

/* The CUDA backend's state for one row. */
typedef struct cuda_state {
    mb_gpu_session *gs; /* the device session (mb_gpu_open) */
    mb_kern_cuda_plan *cp;
    mb_kern_tensors t; /* host: inputs uploaded from it, results copied back */
    cudaEvent_t *ev;   /* n_kernels + 1 */
    mb_gpu_clocks before;
    int have_before;
    mb_device spec; /* the running GPU's on-chip size and SMs: the one-pass choice of row kernels */
} cuda_state;

static int kernel_flags(mb_meas_cuda_impl impl)
{
    if (impl == MB_MEAS_CUDA_IMPL_EVAL) return MB_KERN_CUDA_ALL_EVAL;
    if (impl == MB_MEAS_CUDA_IMPL_NOHAND) return MB_KERN_CUDA_NO_HAND;
    return 0;
}

static int cuda_prepare(mb_meas_row_run *r, mb_err *err)
{
    const mb_meas_config *c = r->c;
    const mb_plan *p = r->p;
    mb_meas_record *row = r->row;
    mb_gpu_session *gs = mb_gpu_open(c, err);
    if (!gs) return MB_ERUN;
    const int nk = p->n_kernels;
    snprintf(row->device, sizeof row->device, "%.120s", S.dev.name);
    snprintf(row->backend, sizeof row->backend, "cuda");
    row->dram_read_bytes = row->dram_write_bytes = -1;
    r->once = c->cuda_once;
    if (r->once) S.use_block = 0;
    if (c->counters && !r->once) mb_gpu_counters_open(gs, c);
    snprintf(row->counters, sizeof row->counters, "%s",
             r->once ? "unavailable: MB_CUDA_ONCE (external profiler run)"
                     : !c->counters ? "unavailable: not requested" : S.cnt_text);

    /* room on the device: the plan's tensors plus a margin */
    const mb_shape shape = mb_meas_record_shape(row);
    int64_t need = mb_kern_cuda_plan_bytes_shape(p, shape);
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    if (need < 0 || (double)need > (double)free_b - (double)MB_MEAS_CUDA_MARGIN_BYTES)
        return mb_err_set(err, MB_ERUN, "%s %s at n = %lld needs %.3g GB of device memory, %.3g GB free",
                          p->g->name, mb_plan_name(p->kind), (long long)r->n, (double)need / 1e9,
                          (double)free_b / 1e9);

    cuda_state *B = (cuda_state *)calloc(1, sizeof *B);
    if (!B) return mb_err_set(err, MB_ERUN, "out of memory");
    r->be = B;
    B->gs = gs;
    /* row kernels keep a row on chip where the model does on this GPU: its
     * shared memory and registers per SM (the device table's onchip_kib) */
    snprintf(B->spec.name, sizeof B->spec.name, "local-gpu");
    B->spec.onchip_kib = mb_kern_cuda_onchip_kib(&S.dev);
    B->spec.sm_count = S.dev.sm_count;
    B->spec.max_threads_per_sm = S.dev.max_threads_per_sm;
    int rc = mb_kern_cuda_plan_new_shape(p, shape, &B->spec, S.dev.sm_count, kernel_flags(c->cuda_impl), &B->cp,
                                         err);
    for (int k = 0; rc == MB_OK && k < nk; k++)
        if (mb_kern_cuda_plan_short_of_chip(B->cp, k))
            mb_meas_note(c, MB_MEAS_WARNING,
                         "cuda: %s %s at %lldx%lld, kernel %s: the model keeps the row on chip (%.0f KiB an SM: "
                         "shared memory and registers), this kernel keeps it in one block's shared memory and so runs "
                         "multi-pass (%s): its counts and time are above the model's one pass",
                         p->g->name, mb_plan_name(p->kind), (long long)shape.rows, (long long)shape.cols,
                         p->kernels[k].name, B->spec.onchip_kib, mb_kern_cuda_plan_desc(B->cp, k));
    if (rc == MB_OK) rc = mb_kern_tensors_alloc_shape(p, shape, 0, &B->t, err);
    if (rc == MB_OK) rc = mb_kern_cuda_upload_inputs(B->cp, &B->t, err);
    if (rc != MB_OK) return rc;
    r->host = &B->t;
    B->ev = (cudaEvent_t *)calloc((size_t)nk + 1, sizeof *B->ev);
    if (!B->ev) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int k = 0; k <= nk; k++) CUDA_TRY(cudaEventCreate(&B->ev[k]));
    B->have_before = mb_gpu_clocks_read(gs, &B->before) == MB_OK;
    if (B->have_before) mb_gpu_clocks_seen(gs, &B->before);
    return MB_OK;
}

static int cuda_poison(mb_meas_row_run *r, unsigned rep, mb_err *err)
{
    const cuda_state *B = (const cuda_state *)r->be;
    return mb_kern_cuda_poison(B->cp, rep, B->gs->stream, err);
}

/* Un-blocked: module loading must not happen behind the blocking kernel. */
static int cuda_warm(mb_meas_row_run *r, mb_err *err)
{
    const cuda_state *B = (const cuda_state *)r->be;
    if (mb_kern_cuda_launch_plan(B->cp, B->gs->stream, err) != MB_OK) return MB_ERUN;
    cudaError_t e = cudaStreamSynchronize(B->gs->stream);
    if (e == cudaSuccess) return MB_OK;
    return mb_err_set(err, MB_ERUN, "warm-up of %s %s: %s (%s)", r->p->g->name, mb_plan_name(r->p->kind),
                      cudaGetErrorName(e), cudaGetErrorString(e));
}

static int cuda_flush(mb_meas_row_run *r, mb_err *err)
{
    return mb_gpu_clean_l2(((cuda_state *)r->be)->gs, err);
}

static int cuda_sample(mb_meas_row_run *r, mb_meas_sample *s, mb_err *err)
{
    cuda_state *B = (cuda_state *)r->be;
    return mb_gpu_timed_sample(B->gs, r->c, B->cp, B->ev, r->p->n_kernels, s->kernel_s, &s->total_s, &s->valid, err);
}

/* Backward plans: the GPU's input gradients against the CPU executor's on the
 * same inputs (n <= 2^22, where the CPU pass is cheap). *max_err gets the
 * largest |gpu - cpu| / max(|cpu|, 1e-3 max|cpu|). */
static int compare_cpu_grads(const mb_plan *p, mb_kern_tensors *t, double tol, double *max_err, int *ok,
                             mb_err *err)
{
    const mb_graph *g = p->g;
    int first = g->n_outputs; /* results: forward outputs, then input gradients */
    *max_err = 0;
    *ok = 1;
    int ng = p->n_results - first;
    if (ng <= 0) return MB_OK;
    void **gpu = (void **)calloc((size_t)ng, sizeof(void *));
    if (!gpu) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK;
    for (int r = 0; r < ng && rc == MB_OK; r++) {
        int node = p->results[first + r];
        size_t b = (size_t)t->n * mb_dtype_bytes(g->nodes[node].dtype);
        gpu[r] = malloc(b);
        if (!gpu[r]) rc = mb_err_set(err, MB_ERUN, "out of memory");
        else memcpy(gpu[r], t->data[node], b);
    }
    if (rc == MB_OK) rc = mb_kern_run_plan(t, MB_KERN_EXEC_AUTO, err);
    for (int r = 0; r < ng && rc == MB_OK; r++) {
        int node = p->results[first + r];
        mb_dtype dt = g->nodes[node].dtype;
        double scale = 0;
        for (int64_t i = 0; i < t->n; i++) {
            double c = fabs((double)mb_load_f32(t->data[node], i, dt));
            if (c > scale) scale = c;
        }
        double floor_ = 1e-3 * scale > 1e-30 ? 1e-3 * scale : 1e-30;
        for (int64_t i = 0; i < t->n; i++) {
            double c = mb_load_f32(t->data[node], i, dt), q = mb_load_f32(gpu[r], i, dt);
            double e = fabs(q - c) / (fabs(c) > floor_ ? fabs(c) : floor_);
            if (!(e <= tol)) *ok = 0; /* NaN fails too */
            if (e > *max_err || e != e) *max_err = e;
        }
    }
    for (int r = 0; r < ng; r++) free(gpu[r]);
    free(gpu);
    return rc;
}

/* Above MB_VERIFY_FULL_MAX elements the check compares a sample instead of
 * every element (a float64 pass over 2^28 elements costs seconds of host time
 * per row, the sweep's largest cost): the first and last 4096 elements (the
 * vector tail, grid-stride ends) and MB_VERIFY_SAMPLE elements in between,
 * one per stride-sized stretch at an offset that varies from stretch to
 * stretch (so every lane and vector position is hit). CUDA backend only; the
 * CPU backend checks every element. */
#define MB_VERIFY_FULL_MAX ((int64_t)1 << 24)
#define MB_VERIFY_SAMPLE ((int64_t)1 << 20)
#define MB_VERIFY_EDGE 4096

/* mb_kern_verify over t, or over the sample above when t->n is larger than
 * MB_VERIFY_FULL_MAX (ck->first_bad is then an index of t). *checked gets
 * the number of elements compared. */
/* Row plans above MB_VERIFY_FULL_MAX: whole rows, evenly spaced from the
 * first to the last (a row's statistics need all of it), about
 * MB_VERIFY_FULL_MAX elements in all, at least one row. */
static int verify_rows_sampled(const mb_plan *p, const mb_kern_tensors *t, unsigned rep, double tol,
                               mb_kern_check *ck, int64_t *checked, mb_err *err)
{
    const mb_graph *g = p->g;
    const int64_t R = t->shape.rows, C = t->shape.cols;
    int64_t k = MB_VERIFY_FULL_MAX / C;
    if (k < 1) k = 1;
    if (k > R) k = R;
    mb_kern_tensors sub;
    memset(&sub, 0, sizeof sub);
    mb_shape ss = {2, k, C, 0};
    int rc = mb_kern_tensors_alloc_shape(p, ss, 0, &sub, err);
    for (int i = 0; rc == MB_OK && i < g->n_nodes; i++) {
        if (!sub.data[i] || !t->data[i]) continue;
        const mb_node *nd = &g->nodes[i];
        const size_t eb = (size_t)mb_dtype_bytes(nd->dtype);
        if (nd->shape == MB_SHC_COL || nd->shape == MB_SHC_SCALAR) {
            memcpy(sub.data[i], t->data[i], eb * (size_t)mb_tensor_elems_at(g, i, ss));
            continue;
        }
        const int full = nd->shape == MB_SHC_FULL;
        for (int64_t j = 0; j < k; j++) {
            const int64_t r = k > 1 ? j * (R - 1) / (k - 1) : 0;
            const size_t len = full ? (size_t)C : 1;
            memcpy((char *)sub.data[i] + (size_t)j * len * eb, (const char *)t->data[i] + (size_t)r * len * eb,
                   len * eb);
        }
    }
    if (rc == MB_OK) rc = mb_kern_verify(&sub, rep, tol, ck, err);
    if (rc == MB_OK && ck->first_bad >= 0 && k > 1) /* an index of t */
        ck->first_bad = (ck->first_bad / C) * (R - 1) / (k - 1) * C + ck->first_bad % C;
    mb_kern_tensors_free(&sub);
    *checked = k * C;
    return rc;
}

static int verify_results(const mb_plan *p, const mb_kern_tensors *t, unsigned rep, double tol, mb_kern_check *ck,
                          int64_t *checked, mb_err *err)
{
    const int64_t n = t->n;
    if (p->g->has_row_ops && n > MB_VERIFY_FULL_MAX) return verify_rows_sampled(p, t, rep, tol, ck, checked, err);
    if (n <= MB_VERIFY_FULL_MAX) {
        *checked = n;
        return mb_kern_verify(t, rep, tol, ck, err);
    }
    const int64_t mid = MB_VERIFY_SAMPLE, m = 2 * MB_VERIFY_EDGE + mid;
    const int64_t stride = (n - 2 * MB_VERIFY_EDGE) / mid; /* >= 15 above 2^24 */
    int64_t *idx = (int64_t *)malloc(sizeof(int64_t) * (size_t)m);
    if (!idx) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int64_t j = 0; j < MB_VERIFY_EDGE; j++) idx[j] = j;
    for (int64_t k = 0; k < mid; k++) idx[MB_VERIFY_EDGE + k] = MB_VERIFY_EDGE + k * stride + (k * 40503) % stride;
    for (int64_t j = 0; j < MB_VERIFY_EDGE; j++) idx[MB_VERIFY_EDGE + mid + j] = n - MB_VERIFY_EDGE + j;
    mb_kern_tensors sub;
    memset(&sub, 0, sizeof sub);
    int rc = mb_kern_tensors_alloc(p, m, 0, &sub, err);
    if (rc == MB_OK) {
        for (int i = 0; i < p->g->n_nodes; i++) {
            if (!sub.data[i] || !t->data[i]) continue;
            const size_t eb = (size_t)mb_dtype_bytes(p->g->nodes[i].dtype);
            const char *src = (const char *)t->data[i];
            char *dst = (char *)sub.data[i];
            for (int64_t j = 0; j < m; j++) memcpy(dst + (size_t)j * eb, src + (size_t)idx[j] * eb, eb);
        }
        rc = mb_kern_verify(&sub, rep, tol, ck, err);
        if (rc == MB_OK && ck->first_bad >= 0 && ck->first_bad < m) ck->first_bad = idx[ck->first_bad];
    }
    mb_kern_tensors_free(&sub);
    free(idx);
    *checked = m;
    return rc;
}

static int cuda_check(mb_meas_row_run *r, unsigned rep, mb_kern_check *ck, mb_err *err)
{
    cuda_state *B = (cuda_state *)r->be;
    mb_gpu_session *gs = B->gs;
    if (mb_kern_cuda_download_results(B->cp, &B->t, err) != MB_OK) return MB_ERUN;
    int64_t checked = 0;
    if (verify_results(r->p, &B->t, rep, r->c->tol, ck, &checked, err) != MB_OK) return MB_ERUN;
    if (checked < r->n && !S.sampled_noted) {
        S.sampled_noted = 1;
        mb_meas_note(r->c, MB_MEAS_NOTE,
                     r->p->g->has_row_ops
                         ? "cuda: above n = 2^24 the check compares %lld elements per result (whole rows, evenly "
                           "spaced), not every element"
                         : "cuda: above n = 2^24 the check compares %lld sampled elements per result (head, tail and "
                           "one per stride), not every element",
                     (long long)checked);
    }
    return MB_OK;
}

/* Backward plans up to MB_CUDA_CPU_GRADS_MAX_N: the input gradients against
 * the CPU backend's. */
static int cuda_extra_check(mb_meas_row_run *r, int *ok, char *msg, size_t msgsz, mb_err *err)
{
    const mb_plan *p = r->p;
    if (r->n > MB_CUDA_CPU_GRADS_MAX_N) return MB_OK;
    double cerr = 0;
    const double tol = r->c->tol > 0 ? r->c->tol : mb_kern_default_tol(p->g->nodes[p->results[0]].dtype);
    if (compare_cpu_grads(p, r->host, tol, &cerr, ok, err) != MB_OK) return MB_ERUN;
    if (!*ok)
        snprintf(msg, msgsz, "input gradients differ from the CPU backend's: max rel err %.3g > tol %.3g", cerr,
                 tol);
    return MB_OK;
}

/* Clocks after the row (a throttled one is noted), the model's bytes over
 * the fastest sample against the peak, then the row's counted runs. */
static int cuda_after_timing(mb_meas_row_run *r, mb_err *err)
{
    cuda_state *B = (cuda_state *)r->be;
    mb_gpu_session *gs = B->gs;
    const mb_meas_config *c = r->c;
    mb_meas_record *row = r->row;
    mb_gpu_clocks after;
    if (mb_gpu_clocks_read(gs, &after) == MB_OK) {
        mb_gpu_clocks_seen(gs, &after);
        if (B->have_before && after.sm_mhz < 0.75 * S.sm_max)
            mb_meas_note(c, MB_MEAS_NOTE,
                         "cuda: %s %s %s n=%lld: SM clock %.0f MHz before, %.0f after (max seen %.0f): throttled",
                         row->variant, row->plan, row->dtype, (long long)r->n, B->before.sm_mhz, after.sm_mhz,
                         S.sm_max);
    }
    mb_gpu_above_peak(gs, c, "model DRAM bytes over the fastest sample:", row, (double)row->model_dram_read_bytes,
                      (double)row->model_dram_write_bytes, !c->cold, row->time_s_min, 0.05);
    if (!r->once) mb_gpu_count_row(gs, c, B->cp, r->p->n_kernels, row, r->per_kernel);
    S.rows++;
    return MB_OK;
}

static void cuda_release(mb_meas_row_run *r, int rc)
{
    cuda_state *B = (cuda_state *)r->be;
    if (!B) return;
    mb_gpu_session *gs = B->gs;
    if (B->ev)
        for (int k = 0; k <= r->p->n_kernels; k++)
            if (B->ev[k]) (void)cudaEventDestroy(B->ev[k]); /* clean-up: the sticky check below covers it */
    free(B->ev);
    mb_kern_tensors_free(&B->t);
    mb_kern_cuda_plan_free(B->cp);
    free(B);
    r->be = NULL;
    if (rc != MB_OK) {
        cudaError_t sticky = cudaDeviceSynchronize();
        if (sticky != cudaSuccess) { /* a sticky error ends GPU work for this process */
            S.state = -1;
            snprintf(S.why, sizeof S.why, "CUDA context unusable after an error: %s", cudaGetErrorString(sticky));
        }
    }
}

extern "C" const mb_meas_ops mb_meas_cuda_ops = {
    "cuda",
    MB_CUDA_EARLY_REP,
    MB_CUDA_FINAL_REP,
    MB_CUDA_EARLY_CHECK_MAX_N,
    cuda_prepare,
    cuda_poison,
    cuda_warm,
    cuda_flush,
    cuda_sample,
    cuda_check,
    cuda_extra_check,
    cuda_after_timing,
    cuda_release,
};
