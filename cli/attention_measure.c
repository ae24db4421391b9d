/* attention_measure.c — `membound attention --measure`: standard and flash
 * run on this CPU (measure/attn_run.c) at the given shape, beside the model
 * (model/attention.c) on this CPU's calibrated spec, per plan and per
 * kernel, with the float64 check's verdict and the load average. Prints;
 * does not time or model itself. */
#include "attention_measure.h"
#include "cli_common.h"
#include "cpu_spec.h"
#include "measure.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the plans run here: standard and flash (MB_ATTN_STANDARD, MB_ATTN_FLASH),
 * the two with a CPU executor; recompute is the planner's alone */
#define N_RUN 2

/* the model kernel named name in p, or NULL */
static const mb_attn_kernel *model_kernel(const mb_attn_plan *p, const char *name)
{
    for (int i = 0; i < p->n_kernels; i++)
        if (!strcmp(p->k[i].name, name)) return &p->k[i];
    return NULL;
}

static const char *verdict(const mb_meas_attn_result *r) { return r->verified ? "passed" : "FAILED"; }

static void print_text(const mb_attn *a, const mb_device *dev, const char *desc, const mb_attn_est *est,
                       const mb_meas_attn_result *res, const double *load0, const double *load1)
{
    char t1[32], t2[32], t3[32];
    printf("attention batch %lld, heads %lld, seq %lld, head_dim %lld, f32%s, %s: measured on this CPU (%d threads)\n"
           "against the model on %s\n",
           (long long)a->batch, (long long)a->heads, (long long)a->seq, (long long)a->head_dim,
           a->causal ? ", causal" : "", a->backward ? "forward and backward" : "forward", res[0].threads, desc);
    const mb_meas_attn_result *f = &res[MB_ATTN_FLASH];
    printf("flash tiles here: Br %lld x Bc %lld forward, %lld x %lld backward (half of the core's %lld KiB cache);\n"
           "the model's: Br %lld x Bc %lld (onchip_kib %.0f). GEMMs: %s\n\n",
           (long long)f->tile_r, (long long)f->tile_c, (long long)f->bwd_tile_r, (long long)f->bwd_tile_c,
           (long long)(f->core_cache_bytes / 1024), (long long)est->block_r, (long long)est->block_c,
           dev->onchip_kib, f->blas);
    printf("%-9s %-15s %-5s %10s %10s %10s %7s\n", "plan", "kernel", "phase", "model", "median", "min", "mod/med");
    for (int p = 0; p < N_RUN; p++) {
        const mb_attn_plan *mp = &est->plan[p];
        const mb_meas_attn_result *r = &res[p];
        for (int i = 0; i < mp->n_kernels; i++) {
            const mb_attn_kernel *k = &mp->k[i];
            int m = -1;
            for (int j = 0; j < r->n_kernels; j++)
                if (!strcmp(r->kernel[j], k->name)) m = j;
            if (m < 0)
                printf("%-9s %-15s %-5s %10s %10s %10s %7s\n", mb_attn_plan_name(mp->id), k->name,
                       k->backward ? "bwd" : "fwd", mb_cli_fmt_time(k->time_s, t1, sizeof t1), "-", "-", "-");
            else
                printf("%-9s %-15s %-5s %10s %10s %10s %7.2f\n", mb_attn_plan_name(mp->id), k->name,
                       k->backward ? "bwd" : "fwd", mb_cli_fmt_time(k->time_s, t1, sizeof t1),
                       mb_cli_fmt_time(r->kernel_median_s[m], t2, sizeof t2),
                       mb_cli_fmt_time(r->kernel_min_s[m], t3, sizeof t3), k->time_s / r->kernel_median_s[m]);
        }
        for (int j = 0; j < r->n_kernels; j++)
            if (!model_kernel(mp, r->kernel[j]))
                printf("%-9s %-15s %-5s %10s %10s %10s %7s\n", mb_attn_plan_name(mp->id), r->kernel[j],
                       r->backward[j] ? "bwd" : "fwd", "-", mb_cli_fmt_time(r->kernel_median_s[j], t2, sizeof t2),
                       mb_cli_fmt_time(r->kernel_min_s[j], t3, sizeof t3), "-");
        printf("%-9s %-15s %-5s %10s %10s %10s %7.2f  %d samples%s, check %s\n", mb_attn_plan_name(mp->id), "total", "",
               mb_cli_fmt_time(mp->time_s, t1, sizeof t1), mb_cli_fmt_time(r->median_s, t2, sizeof t2),
               mb_cli_fmt_time(r->min_s, t3, sizeof t3), mp->time_s / r->median_s, r->reps,
               r->contended ? " (some contended)" : "", verdict(r));
    }
    printf("\nstandard / flash measured: %.2fx (model %.2fx)\n", res[0].median_s / res[1].median_s,
           est->plan[0].time_s / est->plan[1].time_s);
    for (int p = 0; p < N_RUN; p++) {
        const mb_meas_attn_result *r = &res[p];
        printf("check %-8s %s: %s, largest error %.3g of its f32 bound (%.2g forward, %.2g backward)", mb_attn_plan_name(p),
               verdict(r), r->full ? "every element" : "sampled rows", r->err, r->tol_fwd, r->tol_bwd);
        if (r->fd_err >= 0) printf("; finite differences at %d points %.3g of theirs", r->fd_points, r->fd_err);
        printf("\n");
    }
    const double spec_g = est->peak_flops_s / 1e9;
    printf("host GEMM rate beside the runs (1024^3 cblas_sgemm, best of 3): standard %.0f / %.0f, flash %.0f / %.0f\n"
           "GFLOP/s before / after, against the spec's %.0f (%s): the model assumes the spec's rates\n",
           res[0].host_gemm_gflops_before, res[0].host_gemm_gflops_after, res[1].host_gemm_gflops_before,
           res[1].host_gemm_gflops_after, spec_g, est->peak_key);
    printf("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after (this host's %d threads share it)\n", load0[0],
           load0[1], load0[2], load1[0], load1[1], load1[2], res[0].threads);
}

static json_t *result_json(const mb_attn_plan *mp, const mb_meas_attn_result *r)
{
    json_t *ks = json_array();
    for (int j = 0; j < r->n_kernels; j++) {
        const mb_attn_kernel *k = model_kernel(mp, r->kernel[j]);
        json_array_append_new(ks, json_pack("{s:s, s:s, s:o, s:f, s:f}", "name", r->kernel[j], "phase",
                                            r->backward[j] ? "backward" : "forward", "model_time_s",
                                            k ? json_real(k->time_s) : json_null(), "median_s", r->kernel_median_s[j],
                                            "min_s", r->kernel_min_s[j]));
    }
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:b, s:I, s:f, s:f}", "plan",
                          mb_attn_plan_name(mp->id), "model_time_s", mp->time_s, "median_s", r->median_s, "min_s",
                          r->min_s, "p90_s", r->p90_s, "cv", r->cv, "fwd_median_s", r->fwd_median_s, "bwd_median_s",
                          r->bwd_median_s, "model_over_measured", mp->time_s / r->median_s, "reps", r->reps,
                          "contended", r->contended, "verified", r->verified, "bytes", (json_int_t)r->bytes,
                          "host_gemm_gflops_before", r->host_gemm_gflops_before, "host_gemm_gflops_after",
                          r->host_gemm_gflops_after);
    json_object_set_new(o, "check", json_pack("{s:b, s:I, s:f, s:f, s:f, s:o, s:i}", "full", r->full, "rows",
                                              (json_int_t)r->rows_checked, "err_over_bound", isfinite(r->err) ? r->err : 1e300,
                                              "tol_fwd", r->tol_fwd, "tol_bwd", r->tol_bwd, "fd_err_over_bound",
                                              r->fd_err >= 0 ? json_real(r->fd_err) : json_null(), "fd_points",
                                              r->fd_points));
    if (mp->id == MB_ATTN_FLASH)
        json_object_set_new(o, "tiles", json_pack("{s:I, s:I, s:I, s:I, s:I}", "fwd_r", (json_int_t)r->tile_r, "fwd_c",
                                                  (json_int_t)r->tile_c, "bwd_r", (json_int_t)r->bwd_tile_r, "bwd_c",
                                                  (json_int_t)r->bwd_tile_c, "core_cache_bytes",
                                                  (json_int_t)r->core_cache_bytes));
    json_object_set_new(o, "kernels", ks);
    return o;
}

static void print_json(const mb_attn *a, const mb_device *dev, const char *desc, const mb_meas_attn_result *res,
                       const mb_attn_est *est, const double *load0, const double *load1)
{
    json_t *arr = json_array();
    for (int p = 0; p < N_RUN; p++) json_array_append_new(arr, result_json(&est->plan[p], &res[p]));
    json_t *root = json_pack("{s:{s:I, s:I, s:I, s:I, s:s, s:b, s:b}, s:s, s:s, s:i, s:s, s:[f,f,f], s:[f,f,f], s:o}",
                             "attention", "batch", (json_int_t)a->batch, "heads", (json_int_t)a->heads, "seq",
                             (json_int_t)a->seq, "head_dim", (json_int_t)a->head_dim, "dtype", "f32", "causal",
                             a->causal, "backward", a->backward, "device", dev->name, "device_desc", desc, "threads",
                             res[0].threads, "blas", res[0].blas, "load_before", load0[0], load0[1], load0[2],
                             "load_after", load1[0], load1[1], load1[2], "results", arr);
    json_object_set_new(root, "spec_gemm_gflops", json_real(est->peak_flops_s / 1e9));
    char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    puts(txt);
    free(txt);
    json_decref(root);
}

int mb_cli_attention_measure(const mb_attn *a, const mb_cli_attn_measure_opts *o)
{
    if (a->dtype != MB_F32)
        return mb_cli_fail(2, "--measure runs f32 only on the CPU (got --dtype %s)", mb_dtype_name(a->dtype));
    mb_device dev;
    char desc[1600];
    int rc = mb_cli_cpu_spec(o->device, o->threads, o->quiet, !o->quiet && !o->json,
                             "membound attention --measure (in-process calibration)", &dev, desc, sizeof desc);
    if (rc) return rc;
    mb_attn_est est;
    mb_err e;
    if (mb_attn_estimate(a, &dev, &est, &e) != MB_OK) return mb_cli_fail_err(2, &e);
    mb_meas_attn_req req;
    mb_meas_attn_req_default(&req);
    req.a = *a;
    req.threads = o->threads;
    if (o->min_time_s > 0) req.min_time_s = o->min_time_s;
    req.llc_bytes = dev.cache_mb > 0 ? (int64_t)(dev.cache_mb * 1048576.0) : 0;
    /* refuse what does not fit before anything runs */
    const int64_t avail = mb_meas_host_memory_bytes("MemAvailable");
    for (int p = 0; p < N_RUN; p++) {
        int64_t need = mb_meas_attn_need_bytes(a, (mb_attn_plan_id)p, req.llc_bytes);
        if (need < 0 || (avail > 0 && need > avail))
            return mb_cli_fail(2, "attention %s at seq %lld needs %.3g GB of memory, this host has %.3g GB available: "
                                  "use a smaller seq, batch or heads", mb_attn_plan_name(p), (long long)a->seq,
                               need < 0 ? INFINITY : (double)need / 1e9, (double)avail / 1e9);
    }
    double load0[3] = {0, 0, 0}, load1[3] = {0, 0, 0};
    if (getloadavg(load0, 3) != 3) load0[0] = load0[1] = load0[2] = NAN;
    mb_meas_attn_result res[N_RUN];
    for (int p = 0; p < N_RUN; p++) {
        req.plan = (mb_attn_plan_id)p;
        if (!o->quiet && !o->json) mb_cli_note("running %s", mb_attn_plan_name(p));
        if ((rc = mb_meas_attn_run(&req, &res[p], &e))) return mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e);
    }
    if (getloadavg(load1, 3) != 3) load1[0] = load1[1] = load1[2] = NAN;
    if (o->json) print_json(a, &dev, desc, res, &est, load0, load1);
    else print_text(a, &dev, desc, &est, res, load0, load1);
    for (int p = 0; p < N_RUN; p++)
        if (!res[p].verified)
            return mb_cli_fail(1, "attention %s failed its float64 check: its times are not of a correct run",
                               mb_attn_plan_name(p));
    return 0;
}
