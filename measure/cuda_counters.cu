/* cuda_counters.cu — the CUDA backend's DRAM byte counts: CUPTI opened once
 * per process, the L2 drain's own traffic counted once and subtracted, the
 * sanity gate (the copy kernel's counted bytes and bandwidth) that decides
 * whether counts are trusted, the row gate (a one-pass softmax row kernel's
 * counted bytes) that decides it for 2-D rows, and each row's counted runs
 * after its timing,
 * with the above-peak rule (count_check.c). Host code only; it does not time
 * rows (cuda_session.cu, cuda_ops.cu) or talk to CUPTI directly
 * (cupti_ranges.cpp behind mb_cupti.h). */
#include "count_check.h"
#include "cuda_int.h"
#include "mb_cuda_check.cuh" /* CUDA_TRY */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S (*gs) /* the session, through the handle gs in scope (cuda_int.h) */

/* Counted plans must move at least this fraction of the drain (2x L2). */
#define MB_COUNT_MIN_FRACTION 0.05
/* Per-kernel counts from this size up. */
#define MB_COUNT_PER_KERNEL_MIN_N ((int64_t)1 << 20)

typedef struct count_arg {
    mb_gpu_session *gs;
    const mb_meas_config *c;
    mb_kern_cuda_plan *cp; /* NULL: no plan kernels (the drain-only range) */
    int nk;
    int only;  /* >= 0: launch only this kernel of the plan */
    int drain; /* append the drain sweep (user range) */
    mb_err *err;
} count_arg;

/* count_prepare and count_launch say why they failed in a note: the CUPTI
 * wrapper then reports only "prepare failed" / "launch failed" in err. */
static int count_prepare(void *a)
{
    count_arg *A = (count_arg *)a;
    if (mb_gpu_clean_l2(A->gs, A->err) == MB_OK) return 0;
    mb_meas_note(A->c, MB_MEAS_NOTE, "counters: L2 clean before the range failed: %s", A->err->msg);
    return 1;
}

static int count_launch(void *a)
{
    count_arg *A = (count_arg *)a;
    mb_gpu_session *gs = A->gs;
    mb_err *err = A->err;
    int rc = MB_OK;
    if (A->cp && A->only >= 0) rc = mb_kern_cuda_launch(A->cp, A->only, S.stream, err);
    if (A->cp && A->only < 0) rc = mb_kern_cuda_launch_plan(A->cp, S.stream, err);
    /* the drain: every dirty line the plan left in L2 is written back inside
     * the range; its own traffic (2x L2 of reads, all misses: the prepare
     * step touched 4x L2 of other data since) is measured once per session
     * by a drain-only range and subtracted */
    if (rc == MB_OK && A->drain)
        rc = mb_kern_cuda_read_sweep(S.drain, S.l2x2_bytes, S.sink, S.dev.sm_count, S.stream, err);
    if (rc == MB_OK) rc = CUDA_CHECK(cudaStreamSynchronize(S.stream));
    if (rc == MB_OK) return 0;
    mb_meas_note(A->c, MB_MEAS_NOTE, "counters: launch inside the counted range failed: %s", err->msg);
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Counts the drain alone (prepare, then only the 2x L2 read sweep in a user
 * range), three times; keeps the median read and write bytes in
 * S.drain_read_bytes / S.drain_write_bytes, the baseline every plan range
 * subtracts. Nominally 2x L2 read, ~0 written; measured, because the plan
 * signal at small n (0.25-4 MB at 2^16..2^20 f32) is a few % of it. */
static int count_drain(mb_gpu_session *gs, const mb_meas_config *c, mb_err *err)
{
    double rd[3], wr[3];
    for (int i = 0; i < 3; i++) {
        count_arg A = {gs, c, NULL, 0, -1, 1, err};
        mb_cupti_work w = {count_prepare, count_launch, &A, 1};
        mb_cupti_range r;
        if (mb_cupti_count_range(S.cupti, "drain", &w, &r, err) != MB_OK) return MB_ERUN;
        rd[i] = r.dram_read_bytes;
        wr[i] = r.dram_write_bytes;
    }
    qsort(rd, 3, sizeof rd[0], cmp_double);
    qsort(wr, 3, sizeof wr[0], cmp_double);
    S.drain_read_bytes = rd[1];
    S.drain_write_bytes = wr[1];
    mb_meas_note(c, MB_MEAS_NOTE,
                 "counters: drain-only range (2x L2 = %.1f MB read sweep): counted read %.4g B (%+.2f%% of "
                 "nominal), write %.4g B; subtracted from every plan range", S.l2x2_bytes / 1e6, rd[1], 100 * (rd[1] - (double)S.l2x2_bytes) / (double)S.l2x2_bytes, wr[1]);
    return MB_OK;
}

/* Counts plan cp: one user range over the plan plus the drain (row totals,
 * the measured drain-only range subtracted). */
static int count_plan(mb_gpu_session *gs, const mb_meas_config *c, mb_kern_cuda_plan *cp, int nk, double *read, double *write,
                      mb_err *err)
{
    count_arg A = {gs, c, cp, nk, -1, 1, err};
    mb_cupti_work w = {count_prepare, count_launch, &A, nk + 1};
    mb_cupti_range r;
    if (mb_cupti_count_range(S.cupti, "plan", &w, &r, err) != MB_OK) return MB_ERUN;
    *read = r.dram_read_bytes - S.drain_read_bytes;
    if (*read < 0) *read = 0;
    *write = r.dram_write_bytes - S.drain_write_bytes;
    if (*write < 0) *write = 0;
    return MB_OK;
}

/* One auto range per kernel of cp into kr, kw (nk entries each): in one run
 * in the plan's natural cache state, or with c->cupti_kernel_clean one run
 * per kernel after a clean flush each (the plan's earlier kernels' outputs
 * already in place from the timed runs), as Nsight Compute's
 * --cache-control all does. */
static int count_kernels(mb_gpu_session *gs, const mb_meas_config *c, mb_kern_cuda_plan *cp, int nk, double *kr, double *kw,
                         mb_err *err)
{
    mb_cupti_range *kr_ = (mb_cupti_range *)calloc((size_t)nk, sizeof *kr_);
    if (!kr_) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK;
    if (c->cupti_kernel_clean) {
        for (int k = 0; k < nk && rc == MB_OK; k++) {
            count_arg B = {gs, c, cp, nk, k, 0, err};
            mb_cupti_work wk = {count_prepare, count_launch, &B, 1};
            int got = 0;
            rc = mb_cupti_count_kernels(S.cupti, &wk, &kr_[k], 1, &got, err);
        }
    } else {
        count_arg B = {gs, c, cp, nk, -1, 0, err};
        mb_cupti_work wk = {count_prepare, count_launch, &B, nk};
        int got = 0;
        rc = mb_cupti_count_kernels(S.cupti, &wk, kr_, nk, &got, err);
    }
    for (int k = 0; rc == MB_OK && k < nk; k++) kr[k] = kr_[k].dram_read_bytes, kw[k] = kr_[k].dram_write_bytes;
    free(kr_);
    return rc;
}

/* The model's bytes of plan p at n, the lecture's count (every tensor read
 * and written once per kernel that touches it), for the sanity gate: at
 * >= 8x L2 no tensor can be served from L2, so that is what DRAM moves. */
static void plan_bytes(const mb_plan *p, int64_t n, double *read, double *write)
{
    *read = *write = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        for (int i = 0; i < K->n_reads; i++) *read += (double)mb_tensor_bytes(p->g, K->reads[i], n);
        for (int i = 0; i < K->n_writes; i++) *write += (double)mb_tensor_bytes(p->g, K->writes[i], n);
    }
}

/* A counted row's bytes against its model columns (count_check.c): the plan
 * row with no carry (its range ends with the drain), a kernel row with one
 * L2 (its dirty lines are written back in the next kernel's range). */
static void judge_count(const mb_gpu_session *gs, mb_meas_record *r, double carry_bytes)
{
    mb_dtype dt = MB_F32;
    (void)mb_dtype_parse(r->dtype, &dt); /* the row's own dtype name: always parses */
    const int64_t tensor_bytes = r->n * (int64_t)mb_dtype_bytes(dt);
    mb_count_verdict v = mb_meas_count_vs_model(
        (double)r->dram_read_bytes, (double)r->dram_write_bytes, (double)r->model_dram_read_bytes,
        (double)r->model_dram_write_bytes, (double)tensor_bytes, (double)S.dev.l2_bytes, carry_bytes, MB_COUNT_TOL,
        &r->count_err);
    snprintf(r->count_check, sizeof r->count_check, "%s", mb_meas_count_verdict_name(v));
}

/* Median time of n_samples cold runs of the hand copy kernel, x -> y, n f32. */
static int time_copy(mb_gpu_session *gs, void *x, void *y, int64_t n, int samples, double *median_s, mb_err *err)
{
    cudaEvent_t e0, e1;
    CUDA_TRY(cudaEventCreate(&e0));
    if (CUDA_CHECK(cudaEventCreate(&e1)) != MB_OK) {
        (void)cudaEventDestroy(e0); /* clean-up of a failed path: the first error is the one reported */
        return MB_ERUN;
    }
    double *t = (double *)malloc(sizeof(double) * (size_t)samples);
    int rc = t ? MB_OK : mb_err_set(err, MB_ERUN, "out of memory");
    for (int s = 0; s < samples && rc == MB_OK; s++) {
        if ((rc = mb_gpu_clean_l2(gs, err)) != MB_OK) break;
        float ms = 0;
        rc = CUDA_CHECK(cudaEventRecord(e0, S.stream));
        if (rc == MB_OK) rc = mb_kern_cuda_copy(x, y, MB_F32, n, S.dev.sm_count, S.stream, err);
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventRecord(e1, S.stream));
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventSynchronize(e1));
        if (rc == MB_OK) rc = CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rc == MB_OK) t[s] = ms * 1e-3;
    }
    if (rc == MB_OK) {
        mb_meas_stats st;
        mb_meas_stats_compute(t, samples, &st);
        *median_s = st.median_s;
    }
    free(t);
    /* clean-up: a failure here can only repeat an earlier (sticky) error,
     * which the next checked call reports */
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    return rc;
}

/* The row gate, after the copy gate: softmax_op fused f32 at (n / 1024) x
 * 1024 (4 KiB rows, one pass on any GPU: the row kept on chip) must count
 * n x 4 bytes read and n x 4 written, each within 2%, as the model says. A
 * row kernel that re-read its row, or a count that missed the stage, would
 * be off by 100% and more. Off: every 2-D row's counts are untrusted. Its
 * result is appended to S.gate. */
static int row_gate(mb_gpu_session *gs, const mb_meas_config *c, int64_t n, mb_err *err)
{
    const mb_shape sh = {2, n / 1024, 1024, 0};
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_cuda_plan *cp = NULL;
    mb_device spec;
    memset(&spec, 0, sizeof spec);
    spec.onchip_kib = mb_kern_cuda_onchip_kib(&S.dev);
    spec.sm_count = S.dev.sm_count;
    spec.max_threads_per_sm = S.dev.max_threads_per_sm;
    int rc = mb_parse_variant("name softmax_op\ninput x [rows, cols]\ny = softmax(x, -1)\noutput y\n", "<row gate>",
                              MB_F32, &g, err);
    if (rc == MB_OK) rc = mb_plan_build(g, MB_PLAN_FUSED, &p, err);
    if (rc == MB_OK) rc = mb_kern_cuda_plan_new_shape(p, sh, &spec, S.dev.sm_count, 0, &cp, err);
    mb_kern_tensors t;
    memset(&t, 0, sizeof t);
    if (rc == MB_OK) rc = mb_kern_tensors_alloc_shape(p, sh, 0, &t, err);
    if (rc == MB_OK) rc = mb_kern_cuda_upload_inputs(cp, &t, err);
    double rd = 0, wr = 0;
    if (rc == MB_OK) rc = count_plan(gs, c, cp, 1, &rd, &wr, err);
    if (rc == MB_OK) {
        const double want = (double)sh.rows * (double)sh.cols * 4, l2 = (double)S.dev.l2_bytes;
        double er = 0, ew = 0;
        int ok = mb_meas_count_vs_model(rd, 0, want, 0, want, l2, 0, MB_COUNT_GATE_TOL, &er) == MB_COUNT_OK &&
                 mb_meas_count_vs_model(0, wr, 0, want, want, l2, 0, MB_COUNT_GATE_TOL, &ew) == MB_COUNT_OK;
        S.row_gate = ok ? 1 : -1;
        size_t used = strlen(S.gate);
        snprintf(S.gate + used, sizeof S.gate - used,
                 "; rows: softmax_op fused f32 %lldx%lld (%s): counted read %.4g B (%+.2f%%), write %.4g B (%+.2f%%), "
                 "model %.4g B each: %s",
                 (long long)sh.rows, (long long)sh.cols, mb_kern_cuda_plan_desc(cp, 0), rd, 100 * er, wr, 100 * ew,
                 want, ok ? "trusted" : "UNTRUSTED");
        if (!ok)
            snprintf(S.row_gate_why, sizeof S.row_gate_why, "untrusted: row gate (softmax_op one pass) off by more "
                                                            "than 2%%");
        mb_meas_note(c, ok ? MB_MEAS_NOTE : MB_MEAS_WARNING, "counters: row gate: softmax_op fused %lldx%lld: read "
                     "%+.2f%%, write %+.2f%% against the model: %s", (long long)sh.rows, (long long)sh.cols, 100 * er,
                     100 * ew, ok ? "trusted" : "2-D rows' counts UNTRUSTED");
    }
    mb_kern_tensors_free(&t);
    mb_kern_cuda_plan_free(cp);
    mb_plan_free(p);
    mb_graph_free(g);
    return rc;
}

/* The sanity gate: the copy plan's counted DRAM bytes at a size >= 8x L2 must
 * be 2 n sizeof(f32) within 2% (read and write each within 2% of n x 4), and
 * its achieved bandwidth must not exceed the driver's peak. */
static int sanity_gate(mb_gpu_session *gs, const mb_meas_config *c, mb_err *err)
{
    int64_t n = (int64_t)1 << 24;
    while (n * 4 < 8 * S.dev.l2_bytes) n <<= 1;
    size_t free_b = 0, total_b = 0;
    CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    while (n > ((int64_t)1 << 22) && (double)(2 * n * 4) > 0.5 * (double)free_b) n >>= 1;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_cuda_plan *cp = NULL;
    int rc = mb_parse_variant("name copy\ninput x\ny = copy(x)\noutput y\n", "<sanity gate>", MB_F32, &g, err);
    if (rc == MB_OK) rc = mb_plan_build(g, MB_PLAN_EAGER, &p, err);
    if (rc == MB_OK) rc = mb_kern_cuda_plan_new(p, n, S.dev.sm_count, 0, &cp, err);
    mb_kern_tensors t;
    memset(&t, 0, sizeof t);
    if (rc == MB_OK) {
        /* input: the harness's usual non-zero values (the copy moves bits) */
        rc = mb_kern_tensors_alloc(p, n, 0, &t, err);
        if (rc == MB_OK) rc = mb_kern_cuda_upload_inputs(cp, &t, err);
        if (rc == MB_OK) rc = mb_kern_cuda_launch_plan(cp, S.stream, err);
        if (rc == MB_OK) rc = CUDA_CHECK(cudaStreamSynchronize(S.stream));
        double rd = 0, wr = 0, med = 0;
        if (rc == MB_OK) rc = count_plan(gs, c, cp, 1, &rd, &wr, err);
        if (rc == MB_OK) {
            /* timing: the same kernel through the generic path */
            void *dx = NULL, *dy = NULL;
            rc = CUDA_CHECK(cudaMalloc(&dx, (size_t)n * 4));
            if (rc == MB_OK) rc = CUDA_CHECK(cudaMalloc(&dy, (size_t)n * 4));
            if (rc == MB_OK) rc = mb_kern_cuda_fill(dx, MB_F32, 1.5f, n, S.dev.sm_count, S.stream, err);
            if (rc == MB_OK) rc = time_copy(gs, dx, dy, n, 10, &med, err);
            /* clean-up (cudaFree(NULL) is a no-op): a failure can only repeat
             * a sticky error, which the next checked call reports */
            (void)cudaFree(dx);
            (void)cudaFree(dy);
        }
        if (rc == MB_OK) {
            /* the rows' rules (count_check.c), reads and writes each held to
             * the gate's tolerance; the model's bytes from the plan */
            double want_r = 0, want_w = 0, er = 0, ew = 0;
            plan_bytes(p, n, &want_r, &want_w);
            const double tensor = (double)mb_tensor_bytes(p->g, p->g->inputs[0], n), l2 = (double)S.dev.l2_bytes;
            int ok_bytes =
                mb_meas_count_vs_model(rd, 0, want_r, 0, tensor, l2, 0, MB_COUNT_GATE_TOL, &er) == MB_COUNT_OK &&
                mb_meas_count_vs_model(0, wr, 0, want_w, tensor, l2, 0, MB_COUNT_GATE_TOL, &ew) == MB_COUNT_OK;
            double gbs = (want_r + want_w) / med / 1e9;
            /* at >= 8x L2 the above-peak rule's one-L2 allowance is <= 1/16 of the bytes */
            int ok_bw = !mb_meas_above_peak(want_r, want_w, l2, 0, med, S.dev.peak_bandwidth_gbs, 0.0, NULL);
            snprintf(S.gate, sizeof S.gate,
                     "copy f32 n=%lld: counted read %.4g B (%+.2f%%), write %.4g B (%+.2f%%), model %.4g B and "
                     "%.4g B; %.0f GB/s vs peak %.0f GB/s: %s",
                     (long long)n, rd, 100 * er, wr, 100 * ew, want_r, want_w, gbs, S.dev.peak_bandwidth_gbs,
                     ok_bytes && ok_bw ? "trusted" : "UNTRUSTED");
            if (ok_bytes && ok_bw) {
                S.cnt = MB_GPU_CNT_TRUSTED;
                snprintf(S.cnt_text, sizeof S.cnt_text, "cupti");
            } else {
                S.cnt = MB_GPU_CNT_UNTRUSTED;
                snprintf(S.cnt_text, sizeof S.cnt_text, "untrusted: sanity gate %s",
                         !ok_bytes ? "copy bytes off by more than 2%" : "copy above peak bandwidth");
            }
            mb_meas_note(c, ok_bytes && ok_bw ? MB_MEAS_NOTE : MB_MEAS_WARNING, "counters: sanity gate: %s",
                         S.gate);
            if (ok_bytes && ok_bw) {
                mb_err re;
                if (row_gate(gs, c, n, &re) != MB_OK) { /* 2-D rows' counts stay unjudged, said so */
                    S.row_gate = -1;
                    snprintf(S.row_gate_why, sizeof S.row_gate_why, "untrusted: row gate did not run");
                    mb_meas_note(c, MB_MEAS_WARNING, "counters: row gate did not run: %s", re.msg);
                }
            }
        }
    }
    mb_kern_tensors_free(&t);
    mb_kern_cuda_plan_free(cp);
    mb_plan_free(p);
    mb_graph_free(g);
    return rc;
}

/* Opens CUPTI, counts the drain alone and runs the gate, once per process.
 * Failures leave counters unavailable with one note; timing goes on. */
void mb_gpu_counters_open(mb_gpu_session *gs, const mb_meas_config *c)
{
    if (S.cnt != MB_GPU_CNT_NOT_TRIED) return;
    S.cnt = MB_GPU_CNT_UNAVAILABLE;
    if (c->cupti_disabled) {
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: disabled by MB_CUPTI=0");
        mb_meas_note(c, MB_MEAS_NOTE,
                     "counters: unavailable (disabled by MB_CUPTI=0): continuing with timing only");
        return;
    }
    mb_err e;
    char reason[140];
    if (mb_cupti_open(&S.cupti, &e) != MB_OK) {
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: %s", mb_cupti_reason(&e, reason, sizeof reason));
        mb_meas_note(c, MB_MEAS_NOTE, "counters: unavailable (%s): continuing with timing only", e.msg);
        return;
    }
    cudaError_t ce = cudaMalloc(&S.drain, (size_t)S.l2x2_bytes);
    if (ce == cudaSuccess) ce = cudaMemset(S.drain, 0x3d, (size_t)S.l2x2_bytes);
    if (ce == cudaSuccess) ce = cudaDeviceSynchronize(); /* legacy-stream memset vs the timing stream */
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: cudaMalloc of the L2 drain buffer failed");
        mb_meas_note(c, MB_MEAS_NOTE,
                     "counters: unavailable (cudaMalloc of the L2 drain buffer: %s): continuing with timing only",
                     cudaGetErrorString(ce));
        return;
    }
    S.cnt = MB_GPU_CNT_UNTRUSTED; /* until the gate says otherwise */
    snprintf(S.cnt_text, sizeof S.cnt_text, "untrusted: sanity gate did not run");
    if (count_drain(gs, c, &e) != MB_OK || sanity_gate(gs, c, &e) != MB_OK) {
        S.cnt = MB_GPU_CNT_UNAVAILABLE;
        snprintf(S.cnt_text, sizeof S.cnt_text, "unavailable: %s", mb_cupti_reason(&e, reason, sizeof reason));
        mb_meas_note(c, MB_MEAS_NOTE,
                     "counters: unavailable (drain baseline or sanity gate: %s): continuing with timing only",
                     e.msg);
    }
}

/* Achieved bandwidth above the driver's peak is a bug: says so loudly.
 * read / write are bytes that reach DRAM eventually (counted with the drain,
 * or modelled); mb_meas_above_peak (count_check.c) allows for the up to one
 * L2 of dirty lines a timed sample leaves unwritten, and for one L2 of
 * cached inputs when the samples were warm. Returns 1 when even that floor
 * over time_s exceeds peak x (1 + slack). */
int mb_gpu_above_peak(mb_gpu_session *gs, const mb_meas_config *c, const char *what, const mb_meas_record *row, double read,
                      double write, int warm, double time_s, double slack)
{
    double gbs = 0;
    if (!mb_meas_above_peak(read, write, (double)S.dev.l2_bytes, warm, time_s, S.dev.peak_bandwidth_gbs, slack,
                            &gbs))
        return 0;
    mb_meas_note(c, MB_MEAS_WARNING,
                 "%s %s %s n=%lld: %s %.0f GB/s (less one L2 of write-back%s) exceeds the peak %.0f GB/s: "
                 "the timing or the flush is wrong",
                 row->variant, row->plan, row->dtype, (long long)row->n, what, gbs,
                 warm ? " and of cached reads" : "", S.dev.peak_bandwidth_gbs);
    return 1;
}

/* Counts one row after its timing: separate runs, never timed. A plan whose
 * traffic is under 5% of the subtracted 2x L2 drain is below what the range
 * can resolve: no count, the row says so and its DRAM columns stay empty
 * (the report treats it as uncounted). */
void mb_gpu_count_row(mb_gpu_session *gs, const mb_meas_config *c, mb_kern_cuda_plan *cp, int nk, mb_meas_record *row,
                      mb_meas_record *per_kernel)
{
    if (!c->counters || (S.cnt != MB_GPU_CNT_TRUSTED && S.cnt != MB_GPU_CNT_UNTRUSTED)) return;
    const double plan_bytes = (double)(row->read_bytes + row->write_bytes);
    if (plan_bytes < MB_COUNT_MIN_FRACTION * (double)S.l2x2_bytes) {
        snprintf(row->counters, sizeof row->counters,
                 "below resolution: %.3g MB moved < %.0f%% of the %.0f MB L2 drain subtracted from each count",
                 plan_bytes / 1e6, 100 * MB_COUNT_MIN_FRACTION, S.l2x2_bytes / 1e6);
        for (int k = 0; per_kernel && k < nk; k++)
            memcpy(per_kernel[k].counters, row->counters, sizeof row->counters);
        return;
    }
    double rd = 0, wr = 0;
    mb_err ce;
    const double t_count = mb_meas_now_s();
    int crc = count_plan(gs, c, cp, nk, &rd, &wr, &ce);
    char reason[140];
    if (crc != MB_OK) {
        snprintf(row->counters, sizeof row->counters, "unavailable: %s", mb_cupti_reason(&ce, reason, sizeof reason));
        mb_meas_note(c, MB_MEAS_NOTE, "counters: %s %s %s n=%lld: %s: timing only for this row", row->variant,
                     row->plan, row->dtype, (long long)row->n, ce.msg);
    } else {
        row->dram_read_bytes = llround(rd);
        row->dram_write_bytes = llround(wr);
        if (mb_gpu_above_peak(gs, c, "counted DRAM bytes over the fastest sample:", row, rd, wr, !c->cold,
                              row->time_s_min, 0.0))
            snprintf(row->counters, sizeof row->counters, "untrusted: counted bytes / time above peak");
        if (row->cols > 0 && S.row_gate < 0) /* a 2-D row after a failed row gate */
            snprintf(row->counters, sizeof row->counters, "%s", S.row_gate_why);
        judge_count(gs, row, 0);
        if (!strcmp(row->count_check, "off"))
            mb_meas_note(c, MB_MEAS_WARNING,
                         "%s %s %s n=%lld: counted %.4g B, the model %.4g B (%+.1f%%, more than %.0f%% off)",
                         row->variant, row->plan, row->dtype, (long long)row->n, rd + wr,
                         (double)(row->model_dram_read_bytes + row->model_dram_write_bytes), 100 * row->count_err,
                         100 * MB_COUNT_TOL);
    }
    /* per-kernel counts only when per-kernel rows were asked for, and from
     * 2^20 elements up (each costs a run with a context sync per kernel;
     * below, the plan row suffices); a failure costs those rows their
     * counts, and they say why */
    if (per_kernel && row->n < MB_COUNT_PER_KERNEL_MIN_N) {
        for (int k = 0; k < nk; k++)
            snprintf(per_kernel[k].counters, sizeof per_kernel[k].counters,
                     "unavailable: per-kernel counts start at n = 2^20");
    } else if (per_kernel) {
        double *kr = (double *)calloc((size_t)nk + 1, sizeof(double));
        double *kw = (double *)calloc((size_t)nk + 1, sizeof(double));
        int krc = kr && kw ? count_kernels(gs, c, cp, nk, kr, kw, &ce) : mb_err_set(&ce, MB_ERUN, "out of memory");
        if (krc != MB_OK)
            mb_meas_note(c, MB_MEAS_NOTE, "counters: %s %s %s n=%lld, per kernel: %s", row->variant, row->plan,
                         row->dtype, (long long)row->n, ce.msg);
        for (int k = 0; k < nk; k++) {
            mb_meas_record *pk = &per_kernel[k];
            if (krc != MB_OK) {
                snprintf(pk->counters, sizeof pk->counters, "failed: %s", mb_cupti_reason(&ce, reason, sizeof reason));
                continue;
            }
            pk->dram_read_bytes = llround(kr[k]);
            pk->dram_write_bytes = llround(kw[k]);
            snprintf(pk->counters, sizeof pk->counters, "%s", crc == MB_OK ? row->counters : S.cnt_text);
            judge_count(gs, pk, (double)S.dev.l2_bytes);
        }
        free(kr);
        free(kw);
    }
    S.count_s += mb_meas_now_s() - t_count;
    S.count_rows++;
}
