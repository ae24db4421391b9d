/* attn_run.c — attention's CPU plans timed (meas_attn.h): allocation
 * against the host's memory, a warm-up run checked against float64, then
 * samples of the plan's kernels in order, each kernel and the whole timed
 * with one clock (mb_meas_now_s), the last-level cache evicted before each
 * sample outside the timed region, contention noted as measure's samples do.
 * Does not model or print. */
#include "kernels.h"
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mb_meas_attn_req_default(mb_meas_attn_req *r)
{
    memset(r, 0, sizeof *r);
    r->a.batch = r->a.heads = 1;
    r->a.dtype = MB_F32;
    r->plan = MB_ATTN_FLASH;
    r->min_time_s = 1.0;
    r->min_reps = 3;
    r->max_reps = 50;
    r->cold = 1;
    r->check_rows = 64;
    r->fd_points = 12;
}

static mb_kern_attn_dims dims_of(const mb_attn *a)
{
    mb_kern_attn_dims d = {a->batch, a->heads, a->seq, a->head_dim, a->causal, a->backward};
    return d;
}

static mb_kern_attn_plan kplan(mb_attn_plan_id p) { return p == MB_ATTN_FLASH ? MB_KERN_ATTN_FLASH : MB_KERN_ATTN_STANDARD; }

int64_t mb_meas_attn_need_bytes(const mb_attn *a, mb_attn_plan_id p, int64_t llc_bytes)
{
    mb_kern_attn_dims d = dims_of(a);
    int64_t b = mb_kern_attn_bytes(&d, kplan(p));
    if (b < 0) return -1;
    return b + 2 * (llc_bytes > 0 ? llc_bytes : mb_kern_llc_bytes());
}

/* calibrate's GEMM probe (calibrate/gemm.c: MB_CAL_GEMM_N, one product,
 * all threads) timed now: the best of three, GFLOP/s; 0 when memory runs out */
#define HOST_GEMM_N 1024
static double host_gemm_gflops(void)
{
    const int64_t n = HOST_GEMM_N;
    float *a = aligned_alloc(64, (size_t)(n * n) * 4), *b = aligned_alloc(64, (size_t)(n * n) * 4),
          *c = aligned_alloc(64, (size_t)(n * n) * 4);
    double best = 0;
    if (a && b && c) {
        for (int64_t i = 0; i < n * n; i++) a[i] = 1.0f + (float)(i % 97) * 0.01f, b[i] = 0.5f - (float)(i % 89) * 0.005f;
        mb_kern_blas_set_threads(0);
        for (int t = 0; t < 4; t++) {
            double t0 = mb_meas_now_s();
            mb_kern_sgemm(0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, NULL);
            double g = 2.0 * (double)n * (double)n * (double)n / (mb_meas_now_s() - t0) / 1e9;
            if (t > 0 && g > best) best = g; /* the first warms OpenBLAS's buffers */
        }
    }
    free(a), free(b), free(c);
    return best;
}

int mb_meas_attn_run(const mb_meas_attn_req *r, mb_meas_attn_result *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    if (r->a.dtype != MB_F32)
        return mb_err_set(err, MB_EINPUT, "attention runs on the CPU in f32 only (got %s)", mb_dtype_name(r->a.dtype));
    if (!mb_kern_blas_load())
        return mb_err_set(err, MB_ERUN, "attention's GEMMs need OpenBLAS: %s", mb_kern_blas_desc());
    mb_kern_set_threads(r->threads);
    out->threads = mb_kern_threads();
    snprintf(out->blas, sizeof out->blas, "%s", mb_kern_blas_desc());
    const int64_t llc = r->llc_bytes > 0 ? r->llc_bytes : mb_kern_llc_bytes();
    const int64_t need = mb_meas_attn_need_bytes(&r->a, r->plan, r->cold ? llc : 0);
    const int64_t avail = mb_meas_host_memory_bytes("MemAvailable");
    const char *pname = mb_attn_plan_name(r->plan);
    if (need < 0 || (avail > 0 && need > avail))
        return mb_err_set(err, MB_EINPUT, "attention %s at batch %lld, heads %lld, seq %lld, head_dim %lld needs %.3g GB "
                          "of memory, this host has %.3g GB available: use a smaller seq, batch or heads",
                          pname, (long long)r->a.batch, (long long)r->a.heads, (long long)r->a.seq,
                          (long long)r->a.head_dim, need < 0 ? INFINITY : (double)need / 1e9, (double)avail / 1e9);
    mb_kern_attn_dims d = dims_of(&r->a);
    mb_kern_attn a;
    int rc = mb_kern_attn_alloc(&d, kplan(r->plan), 0x5eed, &a, err);
    if (rc) return rc;
    /* outputs past the spec's cache are streamed, as measure's config takes
     * it from the model's spec (a guest may report a far larger L3) */
    if (r->llc_bytes > 0) a.nt_min_bytes = r->llc_bytes;
    out->bytes = a.bytes;
    out->tile_r = a.tiles.fwd_r, out->tile_c = a.tiles.fwd_c;
    out->bwd_tile_r = a.tiles.bwd_r, out->bwd_tile_c = a.tiles.bwd_c;
    out->core_cache_bytes = a.tiles.cache_bytes;
    mb_kern_attn_kernel ids[MB_KERN_ATTN_N_KERNELS];
    const int nk = mb_kern_attn_plan_kernels(a.plan, d.causal, d.backward, ids);
    out->n_kernels = nk;
    for (int k = 0; k < nk; k++) {
        out->kernel[k] = mb_kern_attn_kernel_name(ids[k]);
        out->backward[k] = ids[k] >= MB_KERN_ATTN_DP && ids[k] != MB_KERN_ATTN_FLASH_FWD;
    }
    mb_meas_flusher fl;
    memset(&fl, 0, sizeof fl);
    double *samples = calloc((size_t)(r->max_reps > 0 ? r->max_reps : 1) * (size_t)(nk + 1), sizeof(double));
    if (!samples) rc = mb_err_set(err, MB_ERUN, "out of memory");
    if (!rc && r->cold) rc = mb_meas_flusher_init(&fl, llc, err);
    /* warm-up (pages touched, OpenBLAS's buffers made), checked */
    if (!rc) rc = mb_kern_attn_run(&a, err);
    mb_kern_attn_check ck;
    if (!rc) rc = mb_kern_attn_verify(&a, 134217728.0, r->check_rows, r->fd_points, 11, &ck, err);
    if (!rc) {
        out->verified = ck.passed;
        out->full = ck.full;
        out->rows_checked = ck.rows_checked;
        out->err = fmax(fmax(ck.o_err, ck.lse_err), fmax(ck.dq_err, fmax(ck.dk_err, ck.dv_err)));
        if (ck.nonfinite) out->err = INFINITY;
        out->tol_fwd = ck.tol_fwd, out->tol_bwd = ck.tol_bwd;
        out->fd_err = ck.fd_err, out->fd_points = ck.fd_points;
    }
    if (!rc) out->host_gemm_gflops_before = host_gemm_gflops();
    const int max_reps = r->max_reps > 0 ? r->max_reps : 1;
    double sampled = 0;
    int n = 0;
    while (!rc && n < max_reps && (n < r->min_reps || sampled < r->min_time_s)) {
        if (r->cold) mb_meas_flush_cpu(&fl);
        mb_meas_contention cs;
        mb_meas_contention_begin(&cs);
        double *row = samples + (size_t)n * (size_t)(nk + 1), t0 = mb_meas_now_s(), t = t0;
        for (int k = 0; k < nk && !rc; k++) {
            rc = mb_kern_attn_run_kernel(&a, ids[k], err);
            double now = mb_meas_now_s();
            row[k] = now - t;
            t = now;
        }
        row[nk] = t - t0;
        sampled += row[nk];
        out->contended += mb_meas_contention_end(&cs, row[nk], out->threads, 0);
        n++;
    }
    if (!rc) out->host_gemm_gflops_after = host_gemm_gflops();
    if (!rc) {
        double *col = malloc((size_t)n * sizeof(double));
        if (!col) rc = mb_err_set(err, MB_ERUN, "out of memory");
        for (int k = 0; col && k <= nk; k++) {
            for (int i = 0; i < n; i++) col[i] = samples[(size_t)i * (size_t)(nk + 1) + (size_t)k];
            mb_meas_stats st;
            mb_meas_stats_compute(col, n, &st);
            if (k < nk) {
                out->kernel_median_s[k] = st.median_s, out->kernel_min_s[k] = st.min_s;
                *(out->backward[k] ? &out->bwd_median_s : &out->fwd_median_s) += st.median_s;
            } else {
                out->median_s = st.median_s, out->min_s = st.min_s, out->p90_s = st.p90_s, out->cv = st.cv;
            }
        }
        out->reps = n;
        free(col);
    }
    free(samples);
    mb_meas_flusher_free(&fl);
    mb_kern_attn_free(&a);
    return rc;
}
