/* mlp_measure.c — `membound mlp --measure`: GPT-2's and Llama's MLP run on
 * this CPU under the eager and fused plans (measure/gemm_run.c's
 * mb_meas_mlp_cpu: the forward, and with --backward the backward), beside
 * the model (model/mlp.c) on this CPU's spec, per plan and phase, with the
 * float64 checks' figures and the load average. Prints; does not time or
 * model itself, nor time single kernels (the executor runs a phase whole). */
#include "mlp_measure.h"
#include "cli_common.h"
#include "cpu_spec.h"
#include "measure.h"
#include "mb_mmvar.h"
#include "meas_gemm.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the plans run here: eager and fused (MB_MLP_EAGER, MB_MLP_FUSED), the two
 * with a CPU executor; liger is the model's alone */
#define N_RUN 2
/* samples a plan's phase takes at least, as gemm --measure's CPU default */
#define MIN_SAMPLES 5
/* rows of y (entries of each gradient) the float64 check recomputes: the
 * most mb_meas_mlp_cpu takes, d_model x d_ff float64 work each */
#define CHECK_ROWS 8

typedef struct plan_run {
    mb_meas_gemm_result ph[2]; /* forward, backward */
    int64_t panel_rows;        /* the fused plan's token panel */
} plan_run;

static const char *const phase_name[2] = {"forward", "backward"};

static double model_s(const mb_mlp_plan *mp, int ph) { return ph ? mp->bwd_time_s : mp->fwd_time_s; }

/* the phases' medians (or minima) summed: the plan's measured time */
static double sum_s(const plan_run *r, int nph, int minimum)
{
    double t = 0;
    for (int ph = 0; ph < nph; ph++) t += minimum ? r->ph[ph].min_s : r->ph[ph].median_s;
    return t;
}

static int all_verified(const plan_run *r, int nph)
{
    for (int ph = 0; ph < nph; ph++)
        if (!r->ph[ph].verified) return 0;
    return 1;
}

/* a check's figure for JSON, which holds no inf or NaN */
static double finite_or_big(double x) { return isfinite(x) ? x : 1e300; }

static void print_text(const mb_mlp *m, const char *desc, const mb_mlp_est *est, const plan_run *res, int64_t flush,
                       const double *load0, const double *load1)
{
    const int nph = m->backward ? 2 : 1, threads = res[0].ph[0].threads;
    char t1[32], t2[32], t3[32], b1[32];
    printf("mlp %s: tokens %lld, d_model %lld, d_ff %lld, f32, %s: measured on this CPU (%d thread%s)\n"
           "against the model on %s; its GEMMs at %.4g GFLOP/s (%s)\n",
           mb_mlp_layer_name(m->layer), (long long)m->tokens, (long long)m->d_model, (long long)m->d_ff,
           m->backward ? "forward and backward" : "forward", threads, threads == 1 ? "" : "s", desc,
           est->peak_flops_s / 1e9, est->peak_key);
    printf("GEMMs: %s\nfused panel: %lld of %lld tokens; %s of cache evicted before each sample\n\n", res[0].ph[0].blas,
           (long long)res[MB_MLP_FUSED].panel_rows, (long long)m->tokens,
           mb_cli_fmt_bytes((double)flush, b1, sizeof b1));
    printf("%-6s %-9s %10s %10s %10s %7s %8s %9s %s\n", "plan", "phase", "model", "median", "min", "mod/med",
           "GFLOP/s", "samples", "check (error / f32 bound)");
    for (int p = 0; p < N_RUN; p++) {
        const mb_mlp_plan *mp = &est->plan[p][0];
        for (int ph = 0; ph < nph; ph++) {
            const mb_meas_gemm_result *r = &res[p].ph[ph];
            char smp[24];
            snprintf(smp, sizeof smp, "%d%s", r->samples, r->contended ? "*" : "");
            printf("%-6s %-9s %10s %10s %10s %7.2f %8.1f %9s %.3g %s\n", mb_mlp_plan_name(mp->id), phase_name[ph],
                   mb_cli_fmt_time(model_s(mp, ph), t1, sizeof t1), mb_cli_fmt_time(r->median_s, t2, sizeof t2),
                   mb_cli_fmt_time(r->min_s, t3, sizeof t3), model_s(mp, ph) / r->median_s, r->gflops_median, smp,
                   r->max_rel_err, r->verified ? "passed" : "FAILED");
        }
        if (nph > 1)
            printf("%-6s %-9s %10s %10s %10s %7.2f\n", mb_mlp_plan_name(mp->id), "total",
                   mb_cli_fmt_time(mp->time_s, t1, sizeof t1), mb_cli_fmt_time(sum_s(&res[p], nph, 0), t2, sizeof t2),
                   mb_cli_fmt_time(sum_s(&res[p], nph, 1), t3, sizeof t3), mp->time_s / sum_s(&res[p], nph, 0));
    }
    printf("\nfused / eager measured: %.3f (model %.3f); a * after samples: some of them contended\n",
           sum_s(&res[MB_MLP_FUSED], nph, 0) / sum_s(&res[MB_MLP_EAGER], nph, 0),
           est->plan[MB_MLP_FUSED][0].time_s / est->plan[MB_MLP_EAGER][0].time_s);
    printf("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after (this host's threads share it)\n", load0[0],
           load0[1], load0[2], load1[0], load1[1], load1[2]);
}

static json_t *result_json(const mb_mlp_plan *mp, const plan_run *r, int nph)
{
    json_t *phases = json_array();
    for (int ph = 0; ph < nph; ph++) {
        const mb_meas_gemm_result *q = &r->ph[ph];
        json_array_append_new(phases, json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:b}", "phase",
                                                phase_name[ph], "model_time_s", model_s(mp, ph), "median_s",
                                                q->median_s, "min_s", q->min_s, "model_over_median",
                                                model_s(mp, ph) / q->median_s, "gflops", q->gflops_median, "samples",
                                                q->samples, "contended", q->contended, "err_over_bound",
                                                finite_or_big(q->max_rel_err), "verified", q->verified));
    }
    const double med = sum_s(r, nph, 0), mn = sum_s(r, nph, 1);
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:b, s:o}", "plan", mb_mlp_plan_name(mp->id),
                          "model_time_s", mp->time_s, "median_s", med, "min_s", mn, "model_over_median",
                          mp->time_s / med, "model_over_min", mp->time_s / mn, "verified", all_verified(r, nph),
                          "phases", phases);
    if (mp->id == MB_MLP_FUSED) json_object_set_new(o, "panel_rows", json_integer((json_int_t)r->panel_rows));
    return o;
}

static void print_json(const mb_mlp *m, const mb_device *dev, const char *desc, const mb_mlp_est *est,
                       const plan_run *res, int64_t flush, const double *load0, const double *load1)
{
    const int nph = m->backward ? 2 : 1;
    json_t *arr = json_array();
    for (int p = 0; p < N_RUN; p++) json_array_append_new(arr, result_json(&est->plan[p][0], &res[p], nph));
    json_t *root = json_pack("{s:{s:s, s:I, s:I, s:I, s:s, s:b}, s:s, s:s, s:i, s:s, s:I, s:f, s:[f,f,f], "
                             "s:[f,f,f], s:o}",
                             "mlp", "layer", mb_mlp_layer_name(m->layer), "tokens", (json_int_t)m->tokens, "d_model",
                             (json_int_t)m->d_model, "d_ff", (json_int_t)m->d_ff, "dtype", "f32", "backward",
                             m->backward, "device", dev->name, "device_desc", desc, "threads", res[0].ph[0].threads,
                             "blas", res[0].ph[0].blas, "flush_bytes", (json_int_t)flush, "spec_gemm_gflops",
                             est->peak_flops_s / 1e9, "load_before", load0[0], load0[1], load0[2], "load_after",
                             load1[0], load1[1], load1[2], "results", arr);
    char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    puts(txt);
    free(txt);
    json_decref(root);
}

/* The eager plan of m as the variant language writes it (its text is the
 * model's: mlp.c's addmm for nn.Linear and Conv1D, its gelu_new), run by
 * the layers' executor, its phases into r (their GEMM rates from the
 * model's FLOPs). */
static int eager_run(const mb_mlp *m, const mb_device *dev, const mb_mlp_est *est, const mb_meas_gemm_config *mc,
                     int64_t flush, plan_run *r, mb_err *e)
{
    static const char gpt2[] =
        "name gpt2_eager\ninput x [tokens, d_model]\ninput w1 [d_model, d_ff]\ninput b1 [d_ff]\n"
        "input w2 [d_ff, d_model]\ninput b2 [d_model]\na = addmm(b1, x, w1)\n"
        "h = 0.5*a*(1.0+tanh(0.7978845608*(a+0.044715*a**3)))\ny = addmm(b2, h, w2)\n";
    static const char llama[] =
        "name llama_eager\ninput x [tokens, d_model]\ninput wg [d_model, d_ff]\ninput wu [d_model, d_ff]\n"
        "input wd [d_ff, d_model]\ny = (silu(x @ wg) * (x @ wu)) @ wd\n";
    char text[1024], dims[160];
    snprintf(text, sizeof text, "%s%s", m->layer == MB_MLP_GPT2 ? gpt2 : llama, m->backward ? "backward\n" : "");
    snprintf(dims, sizeof dims, "tokens=%lld,d_model=%lld,d_ff=%lld", (long long)m->tokens, (long long)m->d_model,
             (long long)m->d_ff);
    mb_mmvar *v = NULL;
    mb_meas_mmvar_result *x = calloc(1, sizeof *x);
    int rc = x ? mb_mmvar_parse(text, "<mlp eager>", MB_F32, &v, e) : mb_err_set(e, MB_ERUN, "out of memory");
    if (!rc) rc = mb_mmvar_bind(v, dims, e);
    if (!rc) rc = mb_meas_mmvar_cpu(v, dev, mc, flush, x, e);
    for (int ph = 0; !rc && ph < (m->backward ? 2 : 1); ph++) {
        mb_meas_gemm_result *q = &r->ph[ph];
        q->samples = x->whole.samples;
        q->contended = x->whole.contended;
        q->median_s = ph ? x->bwd_median_s : x->fwd_median_s;
        q->min_s = ph ? x->bwd_min_s : x->fwd_min_s;
        double flops = 0;
        for (int i = 0; i < est->plan[MB_MLP_EAGER][0].n_kernels; i++) {
            const mb_mlp_kernel *k = &est->plan[MB_MLP_EAGER][0].k[i];
            if (k->gemm && k->backward == ph) flops += k->flops;
        }
        q->gflops_median = flops / q->median_s / 1e9;
        q->max_rel_err = x->whole.max_rel_err;
        q->tol = 1;
        q->verified = x->whole.verified;
        q->threads = x->whole.threads;
        snprintf(q->blas, sizeof q->blas, "%s", x->whole.blas);
    }
    mb_mmvar_free(v);
    free(x);
    return rc;
}

int mb_cli_mlp_measure(const mb_mlp *m, const mb_cli_mlp_measure_opts *o)
{
    if (m->layer != MB_MLP_GPT2 && m->layer != MB_MLP_LLAMA)
        return mb_cli_fail(2, "--measure runs the layers the CPU executor has, gpt2 and llama: not %s",
                           mb_mlp_layer_name(m->layer));
    if (m->dtype != MB_F32)
        return mb_cli_fail(2, "--measure runs f32 only on the CPU (got --dtype %s)", mb_dtype_name(m->dtype));
    mb_device dev;
    char desc[1600];
    int rc = mb_cli_cpu_spec(o->device, o->threads, 0, !o->json, "membound mlp --measure (in-process calibration)",
                             &dev, desc, sizeof desc);
    if (rc) return rc;
    mb_mlp_est est;
    mb_err e;
    if (mb_mlp_estimate(m, &dev, &est, &e) != MB_OK) return mb_cli_fail_err(2, &e);
    /* the spec's gemm_gflops is the rate of the threads it was calibrated on */
    int threads = o->threads;
    if (threads <= 0) threads = dev.sm_count >= 1 ? (int)dev.sm_count : 0;
    else if (dev.sm_count >= 1 && threads != (int)dev.sm_count)
        mb_cli_warn("--threads %d: the spec was calibrated on %d threads; its gemm_gflops is theirs", threads,
                    (int)dev.sm_count);
    const mb_meas_gemm_config mc = {.threads = threads, .min_s = o->min_s, .min_samples = MIN_SAMPLES,
                                    .check_samples = CHECK_ROWS};
    /* the spec's cache: the fused panel fills half of it, and it is evicted
     * before each sample (a guest may report a far larger L3) */
    const int64_t cache = (int64_t)mb_device_cache_bytes(&dev);
    int64_t flush = cache;
    if (flush <= 0) {
        mb_meas_config c;
        mb_meas_config_default(&c);
        flush = mb_meas_llc_bytes(&c);
    }
    mb_meas_mlp mm = {.kind = m->layer == MB_MLP_LLAMA ? MB_MEAS_MLP_LLAMA : MB_MEAS_MLP_GPT2, .tokens = m->tokens,
                      .d_model = m->d_model, .d_ff = m->d_ff, .cache_bytes = cache, .backward = m->backward,
                      .flush_bytes = flush, .fault = o->fault};
    if (mb_meas_mlp_admit(&mm, &e)) return mb_cli_fail_err(2, &e); /* before anything runs */
    double load0[3], load1[3];
    if (getloadavg(load0, 3) != 3) load0[0] = load0[1] = load0[2] = -1; /* -1: unknown (JSON has no NaN) */
    plan_run res[N_RUN];
    memset(res, 0, sizeof res);
    /* eager: the layer the model prices, written in the language and run by the
     * layers' executor (PyTorch's kernels: GPT-2's addmm and gelu_new's eight) */
    if (!o->json) mb_cli_note("running eager %s", m->backward ? "forward and backward" : "forward");
    if ((rc = eager_run(m, &dev, &est, &mc, flush, &res[MB_MLP_EAGER], &e)))
        return mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e);
    for (int ph = 0; ph < (m->backward ? 2 : 1); ph++) { /* fused: the MLP executor's epilogues */
        mm.plan = MB_MEAS_MLP_FUSED;
        mm.backward = ph;
        if (!o->json) mb_cli_note("running fused %s", phase_name[ph]);
        rc = mb_meas_mlp_cpu(&mm, &mc, &res[MB_MLP_FUSED].ph[ph], ph ? NULL : &res[MB_MLP_FUSED].panel_rows, &e);
        if (rc) return mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e);
    }
    if (getloadavg(load1, 3) != 3) load1[0] = load1[1] = load1[2] = -1;
    if (o->json) print_json(m, &dev, desc, &est, res, flush, load0, load1);
    else print_text(m, desc, &est, res, flush, load0, load1);
    for (int p = 0; p < N_RUN; p++)
        for (int ph = 0; ph < (m->backward ? 2 : 1); ph++)
            if (!res[p].ph[ph].verified)
                return mb_cli_fail(1, "mlp %s %s failed its float64 check: its times are not of a correct run",
                                   mb_mlp_plan_name((mb_mlp_plan_id)p), phase_name[ph]);
    return 0;
}

/* ---- a layer written with '@' (mlp --variant --measure) ------------------- */

/* the model's eager kernel matching a measured one by name and phase, in
 * order (each model kernel once); -1 none */
static int match(const mb_mlp_plan *mp, const char *name, int backward, char *used)
{
    for (int i = 0; i < mp->n_kernels; i++)
        if (mp->k[i].backward == backward && !used[i] && !strcmp(mp->k[i].name, name)) {
            used[i] = 1;
            return i;
        }
    return -1;
}

int mb_cli_mmvar_measure(const struct mb_mmvar *v, const mb_cli_mlp_measure_opts *o)
{
    mb_err e;
    if (mb_meas_mmvar_admit(v, 0, &e)) return mb_cli_fail_err(2, &e); /* before a calibration runs */
    mb_device dev;
    char desc[1600];
    int rc = mb_cli_cpu_spec(o->device, o->threads, 0, !o->json, "membound mlp --variant --measure (in-process "
                             "calibration)", &dev, desc, sizeof desc);
    if (rc) return rc;
    mb_mlp_est *est = calloc(1, sizeof *est);
    mb_meas_mmvar_result *res = calloc(1, sizeof *res);
    if (!est || !res) {
        free(est), free(res);
        return mb_cli_fail(1, "out of memory");
    }
    if ((rc = mb_mmvar_estimate(v, &dev, est, &e)) != MB_OK) {
        free(est), free(res);
        return mb_cli_fail_err(2, &e);
    }
    int threads = o->threads;
    if (threads <= 0) threads = dev.sm_count >= 1 ? (int)dev.sm_count : 0;
    const mb_meas_gemm_config mc = {.threads = threads, .min_s = o->min_s, .min_samples = MIN_SAMPLES,
                                    .check_samples = 16};
    int64_t flush = (int64_t)mb_device_cache_bytes(&dev);
    if (flush <= 0) {
        mb_meas_config c;
        mb_meas_config_default(&c);
        flush = mb_meas_llc_bytes(&c);
    }
    double load0[3], load1[3];
    if (getloadavg(load0, 3) != 3) load0[0] = load0[1] = load0[2] = -1;
    if (!o->json) mb_cli_note("running %s's eager forward", mb_mmvar_name(v));
    rc = mb_meas_mmvar_cpu(v, &dev, &mc, flush, res, &e);
    if (rc) {
        free(est), free(res);
        return mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e);
    }
    if (getloadavg(load1, 3) != 3) load1[0] = load1[1] = load1[2] = -1;
    const mb_mlp_plan *mp = &est->plan[MB_MLP_EAGER][0];
    char used[MB_MLP_MAX_KERNELS] = {0}, dt[512];
    int idx[MB_MEAS_MMVAR_MAX_KERNELS];
    for (int j = 0; j < res->n_kernels; j++) idx[j] = match(mp, res->k[j].name, res->k[j].backward, used);
    mb_mmvar_dims_text(v, dt, sizeof dt);
    const mb_meas_gemm_result *w = &res->whole;
    const int bwd = mb_mmvar_backward(v);
    if (o->json) {
        json_t *ks = json_array();
        for (int j = 0; j < res->n_kernels; j++) {
            const double m = idx[j] >= 0 ? mp->k[idx[j]].time_s : -1;
            json_array_append_new(ks, json_pack("{s:s, s:s, s:i, s:f, s:f, s:f}", "name", res->k[j].name, "phase",
                                                res->k[j].backward ? "backward" : "forward", "step", res->k[j].step,
                                                "model_time_s", m, "median_s", res->k[j].median_s, "min_s",
                                                res->k[j].min_s));
        }
        json_t *eager = json_pack("{s:s, s:b, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:b, s:s, s:o}",
                                  "plan", "eager", "backward", bwd, "model_time_s", mp->time_s, "median_s", w->median_s,
                                  "min_s", w->min_s, "model_over_median", mp->time_s / w->median_s,
                                  "model_fwd_time_s", mp->fwd_time_s, "fwd_median_s", res->fwd_median_s,
                                  "model_bwd_time_s", mp->bwd_time_s, "bwd_median_s", res->bwd_median_s, "samples",
                                  w->samples, "contended", w->contended, "err_over_bound", finite_or_big(w->max_rel_err),
                                  "verified", w->verified, "check", res->check, "kernels", ks);
        json_t *root = json_pack("{s:{s:s, s:s, s:s}, s:s, s:s, s:i, s:s, s:I, s:[f,f,f], s:[f,f,f], s:o}", "mlp",
                                 "variant", mb_mmvar_name(v), "dims", dt, "dtype", "f32", "device", dev.name,
                                 "device_desc", desc, "threads", w->threads, "blas", w->blas, "flush_bytes",
                                 (json_int_t)flush, "load_before", load0[0], load0[1], load0[2], "load_after", load1[0],
                                 load1[1], load1[2], "eager", eager);
        char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        puts(txt);
        free(txt);
        json_decref(root);
    } else {
        char t1[32], t2[32], t3[32];
        printf("mlp variant %s: %s, f32, eager %s: measured on this CPU (%d thread%s), kernel by kernel,\n"
               "against the model on %s\nGEMMs: %s\n\n", mb_mmvar_name(v), dt,
               bwd ? "forward and backward" : "forward", w->threads, w->threads == 1 ? "" : "s", desc, w->blas);
        printf("%-30s %-5s %10s %10s %10s %8s\n", "kernel", "phase", "model", "median", "min", "mod/med");
        for (int j = 0; j < res->n_kernels; j++) {
            const mb_meas_mmvar_kernel *k = &res->k[j];
            const char *ph = k->backward ? "bwd" : "fwd";
            if (idx[j] >= 0)
                printf("%-30s %-5s %10s %10s %10s %8.2f\n", k->name, ph,
                       mb_cli_fmt_time(mp->k[idx[j]].time_s, t1, sizeof t1), mb_cli_fmt_time(k->median_s, t2, sizeof t2),
                       mb_cli_fmt_time(k->min_s, t3, sizeof t3), mp->k[idx[j]].time_s / k->median_s);
            else
                printf("%-30s %-5s %10s %10s %10s %8s\n", k->name, ph, "-", mb_cli_fmt_time(k->median_s, t2, sizeof t2),
                       mb_cli_fmt_time(k->min_s, t3, sizeof t3), "-");
        }
        printf("%-30s %-5s %10s %10s %10s %8.2f\n", "forward (kernels summed)", "", 
               mb_cli_fmt_time(mp->fwd_time_s, t1, sizeof t1), mb_cli_fmt_time(res->fwd_median_s, t2, sizeof t2), "",
               mp->fwd_time_s / res->fwd_median_s);
        if (bwd)
            printf("%-30s %-5s %10s %10s %10s %8.2f\n", "backward (kernels summed)", "",
                   mb_cli_fmt_time(mp->bwd_time_s, t1, sizeof t1), mb_cli_fmt_time(res->bwd_median_s, t2, sizeof t2), "",
                   mp->bwd_time_s / res->bwd_median_s);
        printf("%-30s %-5s %10s %10s %10s %8.2f\n", "whole samples", "", mb_cli_fmt_time(mp->time_s, t1, sizeof t1),
               mb_cli_fmt_time(w->median_s, t2, sizeof t2), mb_cli_fmt_time(w->min_s, t3, sizeof t3),
               mp->time_s / w->median_s);
        printf("\n%d samples%s, %s of cache evicted before each; checks: products %.3g of the f32 bound, steps by "
               "float64: %s\n", w->samples, w->contended ? " (some contended)" : "",
               mb_cli_fmt_bytes((double)flush, t1, sizeof t1), w->max_rel_err, w->verified ? "passed" : res->check);
        printf("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after (this host's threads share it)\n", load0[0],
               load0[1], load0[2], load1[0], load1[1], load1[2]);
    }
    int ok = w->verified;
    free(est), free(res);
    if (!ok) return mb_cli_fail(1, "the layer failed its float64 check: its times are not of a correct run");
    return 0;
}

