/* cpu_run.c — the CPU backend of the protocol (protocol.c): allocate and
 * first-touch the tensors, evict the last-level cache (a read sweep of 2x
 * LLC, outside the timed region), time one pass kernel by kernel (batched
 * when warm and shorter than 1 ms), watch contention per sample. Does not
 * decide how many samples or check results itself, nor parse options or
 * write CSV. */
#include "protocol_int.h"
#include "mb_child.h"

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
    /* in blocks of 2^20 that each ask whether we were interrupted: a 2x LLC
     * buffer is 600 MiB where a VM reports a 300 MiB L3 (2 s to first-touch
     * on the 2-vCPU test host) */
    const int64_t blk = (int64_t)1 << 20, nb = (n + blk - 1) / blk;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nb; k++) {
        if (mb_intr_pending()) continue;
        for (int64_t i = k * blk; i < n && i < (k + 1) * blk; i++) b[i] = 1.0f + (float)(i & 1023) * 0.001f;
    }
    if (mb_intr_pending()) return mb_err_set(err, MB_ERUN, "interrupted");
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

/* The CPU backend's state for one row. */
typedef struct cpu_state {
    mb_kern_tensors t;
    mb_meas_flusher fl;
    double *stamps;  /* n_kernels + 1 clock readings of one pass */
    double first_s;  /* the first warm-up run's time */
    int inner;       /* passes per sample (0 until the first sample) */
    int fresh;       /* 1: outputs hold the poison of rep 0 (alloc) and nothing ran */
} cpu_state;

/* Runs every kernel once; stamps[k+1] - stamps[k] is kernel k's time. */
static int timed_pass(cpu_state *B, mb_kern_exec e, mb_err *err)
{
    B->fresh = 0;
    B->stamps[0] = mb_meas_now_s();
    for (int k = 0; k < B->t.plan->n_kernels; k++) {
        int rc = mb_kern_run_kernel(&B->t, k, e, err);
        if (rc) return rc;
        B->stamps[k + 1] = mb_meas_now_s();
    }
    return MB_OK;
}

static void cpu_label(char *buf, size_t bufsz)
{
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    snprintf(buf, bufsz, "%s", pv.cpu_model[0] ? pv.cpu_model : "cpu");
}

static int cpu_prepare(mb_meas_row_run *r, mb_err *err)
{
    const mb_meas_config *c = r->c;
    mb_kern_set_threads(c->threads);
    cpu_label(r->row->device, sizeof r->row->device);
    snprintf(r->row->backend, sizeof r->row->backend, "cpu");
    snprintf(r->row->counters, sizeof r->row->counters, "none-cpu");
    r->row->dram_read_bytes = r->row->dram_write_bytes = -1;
    cpu_state *B = calloc(1, sizeof *B);
    if (!B) return mb_err_set(err, MB_ERUN, "out of memory");
    r->be = B;
    int rc = mb_kern_tensors_alloc_shape(r->p, mb_meas_record_shape(r->row), c->llc_bytes, &B->t, err);
    if (rc) return rc;
    if (c->nt_min_bytes > 0) B->t.nt_min_bytes = c->nt_min_bytes;
    B->fresh = 1;
    r->host = &B->t;
    if (mb_intr_pending()) return mb_err_set(err, MB_ERUN, "interrupted"); /* the fill stopped early */
    if (c->cold && (rc = mb_meas_flusher_init(&B->fl, c->llc_bytes, err))) return rc;
    B->stamps = malloc((size_t)(r->p->n_kernels + 1) * sizeof(double));
    if (!B->stamps) return mb_err_set(err, MB_ERUN, "out of memory");
    return MB_OK;
}

static int cpu_poison(mb_meas_row_run *r, unsigned rep, mb_err *err)
{
    cpu_state *B = r->be;
    if (B->fresh && rep == 0) return MB_OK; /* alloc poisoned them with rep 0 */
    mb_kern_poison(&B->t, rep);
    return MB_OK;
}

static int cpu_warm(mb_meas_row_run *r, mb_err *err)
{
    cpu_state *B = r->be;
    int rc = timed_pass(B, (mb_kern_exec)r->c->exec, err);
    if (rc == MB_OK && B->first_s == 0) B->first_s = B->stamps[r->p->n_kernels] - B->stamps[0];
    return rc;
}

static int cpu_flush(mb_meas_row_run *r, mb_err *err)
{
    mb_meas_flush_cpu(&((cpu_state *)r->be)->fl);
    return MB_OK;
}

static int cpu_sample(mb_meas_row_run *r, mb_meas_sample *s, mb_err *err)
{
    cpu_state *B = r->be;
    const mb_meas_config *c = r->c;
    const int nk = r->p->n_kernels;
    /* cache-resident runs shorter than 1 ms are batched when not cold */
    if (!B->inner) {
        B->inner = 1;
        if (!c->cold && B->first_s < 1e-3)
            B->inner = (int)(1e-3 / (B->first_s > 1e-7 ? B->first_s : 1e-7)) + 1;
    }
    double tot = 0.0;
    mb_meas_contention cs;
    mb_meas_contention_begin(&cs);
    double w0 = mb_meas_now_s();
    for (int i = 0; i < B->inner; i++) {
        int rc = timed_pass(B, (mb_kern_exec)c->exec, err);
        if (rc) return rc;
        tot += B->stamps[nk] - B->stamps[0];
        for (int k = 0; k < nk; k++) s->kernel_s[k] += (B->stamps[k + 1] - B->stamps[k]) / B->inner;
    }
    s->contended = mb_meas_contention_end(&cs, mb_meas_now_s() - w0, mb_kern_threads(),
                                          c->contention_frac);
    s->total_s = tot / B->inner;
    return MB_OK;
}

static int cpu_check(mb_meas_row_run *r, unsigned rep, mb_kern_check *ck, mb_err *err)
{
    return mb_kern_verify(r->host, rep, r->c->tol, ck, err);
}

static void cpu_release(mb_meas_row_run *r, int rc)
{
    cpu_state *B = r->be;
    if (!B) return;
    free(B->stamps);
    mb_meas_flusher_free(&B->fl);
    mb_kern_tensors_free(&B->t);
    free(B);
    r->be = NULL;
}

const mb_meas_ops mb_meas_cpu_ops = {
    .name = "cpu",
    .early_rep = 0, /* the poison mb_kern_tensors_alloc writes */
    .final_rep = 1,
    .early_check_max_n = 0, /* every n: the check costs about one pass */
    .prepare = cpu_prepare,
    .poison = cpu_poison,
    .warm = cpu_warm,
    .flush = cpu_flush,
    .sample = cpu_sample,
    .check = cpu_check,
    .release = cpu_release,
};
