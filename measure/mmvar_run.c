/* mmvar_run.c — a layer written with '@' (model/mb_mmvar.h) run on the CPU:
 * its eager forward step by step, in the model's order of steps: each
 * product through kernels/' BLAS (F.linear's bias first copied into C, then
 * the product added to it, beta 1, as PyTorch's CPU addmm does), each step
 * between products through kernels/' executors at its own shape (its eager
 * plan on the spec, one kernel per op, as the model costs it), every kernel
 * timed within each sample and the whole forward sampled as gemm_run.c
 * samples a GEMM, a cache flush before each. Checked against float64 once
 * before the samples: each product on sampled entries (mb_kern_gemm_check),
 * each step by its own float64 reference from the inputs it was given
 * (mb_kern_verify). Does not model it nor print it. */
#include "measure.h"
#include "meas_admit.h"
#include "meas_gemm.h"
#include "kernels.h"
#include "mb_mmvar.h"
#include "mb_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 160

typedef struct run {
    const mb_mmvar *v;
    int n_steps;
    mb_mmvar_step st[MAX_STEPS];
    mb_plan *plan[MAX_STEPS];
    mb_kern_tensors kt[MAX_STEPS];
    int kt_ok[MAX_STEPS];
    float **buf;   /* per tensor of the layer: where its values are */
    char *owned;   /* 1: buf allocated here */
    int n_k;
    int kstep[MB_MEAS_MMVAR_MAX_KERNELS], kidx[MB_MEAS_MMVAR_MAX_KERNELS]; /* kidx -1: the product, -2: a bias copy */
    double cur[MB_MEAS_MMVAR_MAX_KERNELS];
    mb_err *err;
    int failed;
} run;

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* values in [-scale, scale] */
static void fill(float *x, int64_t n, double scale, uint64_t seed)
{
    uint64_t s = seed;
    for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * ((double)(next_u64(&s) >> 11) * 0x1p-52 * 2.0 - 1.0));
}

static float *alloc_f32(int64_t n)
{
    size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* product i with beta (1: onto the bias copied into C) */
static int product(const run *r, const mb_mmvar_step *s, float beta, mb_err *err)
{
    const float *a = r->buf[s->a], *b = r->buf[s->b];
    float *c = r->buf[s->c];
    for (int64_t i = 0; i < s->batch; i++) {
        const int64_t ob = s->batch > 1 ? i * s->k * s->n : 0; /* a weight is shared by the rows */
        int rc = mb_kern_sgemm(0, s->trans_b, s->m, s->n, s->k, 1.0f, a + i * s->m * s->k, s->k, b + ob,
                               s->trans_b ? s->k : s->n, beta, c + i * s->m * s->n, s->n, err);
        if (rc) return rc;
    }
    return MB_OK;
}

static void bias_copy(const run *r, const mb_mmvar_step *s)
{
    const float *bias = r->buf[s->bias];
    float *c = r->buf[s->c];
    for (int64_t row = 0; row < s->batch * s->m; row++) memcpy(c + row * s->n, bias, (size_t)s->n * sizeof *c);
}

/* kernel j of the forward */
static int run_kernel(const run *r, int j, mb_err *err)
{
    const mb_mmvar_step *s = &r->st[r->kstep[j]];
    if (r->kidx[j] == -2) {
        bias_copy(r, s);
        return MB_OK;
    }
    if (r->kidx[j] == -1) return product(r, s, s->bias >= 0 ? 1.0f : 0.0f, err);
    return mb_kern_run_kernel((mb_kern_tensors *)&r->kt[r->kstep[j]], r->kidx[j], MB_KERN_EXEC_AUTO, err);
}

/* the forward, each kernel's seconds into r->cur */
static void forward_fn(void *ctx)
{
    run *r = ctx;
    for (int j = 0; j < r->n_k && !r->failed; j++) {
        double t0 = mb_meas_now_s();
        if (run_kernel(r, j, r->err)) r->failed = 1;
        r->cur[j] = mb_meas_now_s() - t0;
    }
}

static void flush_fn(void *f) { mb_meas_flush_cpu(f); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* the steps' plans and storage; every tensor's buffer, the layer's inputs
 * filled (x in [-1, 1], a weight scaled by 1/sqrt(k), a bias by 0.1) */
static int setup(run *r, const mb_device *d, mb_err *err)
{
    const mb_mmvar *v = r->v;
    const int nt = mb_mmvar_n_tensors(v);
    r->n_steps = mb_mmvar_n_steps(v);
    if (r->n_steps > MAX_STEPS) return mb_err_set(err, MB_EINPUT, "a layer of more than %d steps", MAX_STEPS);
    r->buf = calloc((size_t)nt, sizeof *r->buf);
    r->owned = calloc((size_t)nt, 1);
    if (!r->buf || !r->owned) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK;
    uint64_t seed = 7;
    for (int i = 0; i < r->n_steps && !rc; i++) {
        mb_mmvar_step *s = &r->st[i];
        if ((rc = mb_mmvar_step_at(v, i, s, err))) break;
        if (s->is_gemm) {
            const int ops[3] = {s->a, s->b, s->bias};
            for (int o = 0; o < 3; o++) {
                int t = ops[o];
                if (t < 0 || r->buf[t]) continue;
                int64_t n = mb_mmvar_tensor_elems(v, t);
                if (!(r->buf[t] = alloc_f32(n))) return mb_err_set(err, MB_ERUN, "out of memory");
                r->owned[t] = 1;
                fill(r->buf[t], n, o == 0 ? 1.0 : o == 1 ? 1.0 / sqrt((double)s->k) : 0.1, seed++);
            }
            int64_t n = mb_mmvar_tensor_elems(v, s->c);
            if (!(r->buf[s->c] = alloc_f32(n))) return mb_err_set(err, MB_ERUN, "out of memory");
            r->owned[s->c] = 1;
            fill(r->buf[s->c], n, 1e30, 99); /* a poison the product overwrites */
            if (r->n_k + 2 > MB_MEAS_MMVAR_MAX_KERNELS) return mb_err_set(err, MB_EINPUT, "a layer of too many kernels");
            if (s->bias >= 0) r->kstep[r->n_k] = i, r->kidx[r->n_k++] = -2;
            r->kstep[r->n_k] = i, r->kidx[r->n_k++] = -1;
            continue;
        }
        if ((rc = mb_plan_build_on(s->g, MB_PLAN_EAGER, d, &r->plan[i], err))) break;
        if ((rc = mb_kern_tensors_alloc_shape(r->plan[i], s->shape, 0, &r->kt[i], err))) break;
        r->kt_ok[i] = 1;
        const mb_graph *g = r->plan[i]->g;
        for (int j = 0; j < s->n_in; j++) { /* what the steps before made: read where it is */
            int t = s->in[j], node = g->inputs[j];
            if (r->buf[t]) r->kt[i].data[node] = r->buf[t];
            else r->buf[t] = r->kt[i].data[node]; /* a layer's input first read here: as this step filled it */
        }
        for (int j = 0; j < s->n_out; j++) r->buf[s->out[j]] = r->kt[i].data[g->outputs[j]];
        for (int k = 0; k < r->plan[i]->n_kernels; k++) {
            if (r->plan[i]->kernels[k].is_backward) continue;
            if (r->n_k + 1 > MB_MEAS_MMVAR_MAX_KERNELS) return mb_err_set(err, MB_EINPUT, "a layer of too many kernels");
            r->kstep[r->n_k] = i, r->kidx[r->n_k++] = k;
        }
    }
    return rc;
}

static void teardown(run *r)
{
    for (int i = 0; i < r->n_steps; i++) {
        if (r->kt_ok[i]) mb_kern_tensors_free(&r->kt[i]); /* its own storage (alloc_base), not what data points to */
        mb_plan_free(r->plan[i]);
        mb_graph_free(r->st[i].g);
    }
    for (int t = 0; r->buf && t < mb_mmvar_n_tensors(r->v); t++)
        if (r->owned[t]) free(r->buf[t]);
    free(r->buf);
    free(r->owned);
}

/* the forward once, each product and step checked */
static int check(run *r, mb_meas_mmvar_result *out, int samples, mb_err *err)
{
    int rc = MB_OK;
    out->whole.verified = 1;
    out->whole.max_rel_err = 0;
    out->whole.tol = 1;
    for (int j = 0; j < r->n_k && !rc; j++) {
        const mb_mmvar_step *s = &r->st[r->kstep[j]];
        if (r->kidx[j] == -2) continue; /* the bias: added below */
        if (r->kidx[j] >= 0) {
            if ((rc = run_kernel(r, j, err))) break;
            int last = j + 1 >= r->n_k || r->kstep[j + 1] != r->kstep[j];
            if (!last) continue;
            mb_kern_check ck;
            if ((rc = mb_kern_verify(&r->kt[r->kstep[j]], 0, 0, &ck, err))) break;
            if (!ck.passed && out->whole.verified) {
                out->whole.verified = 0;
                snprintf(out->check, sizeof out->check, "the step making %s: %lld elements off float64 (first: %g, "
                         "want %g)", mb_mmvar_tensor_label(r->v, s->out[0]), (long long)ck.bad + (long long)ck.poisoned,
                         ck.first_got, ck.first_want);
            }
            continue;
        }
        /* the product alone (beta 0), checked, then onto its bias */
        if ((rc = product(r, s, 0.0f, err))) break;
        double worst = 0;
        for (int64_t b = 0; b < s->batch; b += s->batch > 1 ? s->batch - 1 : 1) {
            const int64_t ob = s->batch > 1 ? b * s->k * s->n : 0;
            double e = mb_kern_gemm_check(0, s->trans_b, s->m, s->n, s->k, 1.0, r->buf[s->a] + b * s->m * s->k, s->k,
                                          r->buf[s->b] + ob, s->trans_b ? s->k : s->n, r->buf[s->c] + b * s->m * s->n,
                                          s->n, samples, 11 + (uint64_t)b);
            double rel = e / mb_kern_gemm_tol(s->k);
            if (!(rel <= worst)) worst = rel;
        }
        if (!(worst <= out->whole.max_rel_err)) out->whole.max_rel_err = worst;
        if (!(worst <= 1) && out->whole.verified) {
            out->whole.verified = 0;
            snprintf(out->check, sizeof out->check, "%s: sampled entries %.3g times the f32 bound off float64",
                     s->name, worst);
        }
        if (s->bias >= 0) {
            bias_copy(r, s);
            if ((rc = product(r, s, 1.0f, err))) break;
        }
    }
    return rc;
}

int mb_meas_mmvar_admit(const mb_mmvar *v, int64_t flush_bytes, mb_err *err)
{
    const int nt = mb_mmvar_n_tensors(v);
    for (int t = 0; t < nt; t++)
        if (mb_mmvar_tensor_dtype(v, t) != MB_F32)
            return mb_err_set(err, MB_EINPUT, "--measure runs f32 layers only on the CPU ('%s' is %s)",
                              mb_mmvar_tensor_label(v, t), mb_dtype_name(mb_mmvar_tensor_dtype(v, t)));
    /* every tensor twice (a step's own storage of what it reads, and its
     * temporaries) and the flush buffer */
    double need = 2.0 * (double)(flush_bytes > 0 ? flush_bytes : 0);
    for (int t = 0; t < nt; t++) need += 2.0 * 4.0 * (double)mb_mmvar_tensor_elems(v, t);
    const int64_t avail = mb_meas_host_memory_bytes("MemAvailable");
    if (avail > 0 && need > (double)avail)
        return mb_err_set(err, MB_EINPUT, "layer '%s' at its sizes needs about %.3g GB of memory, this host has %.3g "
                          "GB available: give smaller --dims", mb_mmvar_name(v), need / 1e9, (double)avail / 1e9);
    return MB_OK;
}

int mb_meas_mmvar_cpu(const mb_mmvar *v, const mb_device *d, const mb_meas_gemm_config *c, int64_t flush_bytes,
                      mb_meas_mmvar_result *out, mb_err *err)
{
    if (!mb_kern_blas_load()) return mb_err_set(err, MB_ERUN, "no BLAS for the layer's GEMMs: %s", mb_kern_blas_desc());
    int rc0 = mb_meas_mmvar_admit(v, flush_bytes, err);
    if (rc0) return rc0;
    run *r = calloc(1, sizeof *r);
    if (!r) return mb_err_set(err, MB_ERUN, "out of memory");
    r->v = v;
    r->err = err;
    memset(out, 0, sizeof *out);
    int threads = c->threads > 0 ? c->threads : mb_kern_threads();
    mb_kern_set_threads(threads);
    mb_kern_blas_set_threads(threads);
    out->whole.threads = threads;
    snprintf(out->whole.blas, sizeof out->whole.blas, "%s", mb_kern_blas_desc());
    mb_meas_flusher fl;
    memset(&fl, 0, sizeof fl);
    double *all = NULL, *t = NULL;
    int rc = setup(r, d, err);
    if (!rc && flush_bytes > 0) rc = mb_meas_flusher_init(&fl, flush_bytes, err);
    if (!rc) rc = check(r, out, c->check_samples > 0 ? c->check_samples : 16, err);
    /* samples: the whole forward each, every kernel within it */
    int cap = 64, n = 0;
    all = malloc((size_t)cap * (size_t)(r->n_k + 1) * sizeof *all);
    if (!rc && !all) rc = mb_err_set(err, MB_ERUN, "out of memory for the samples");
    mb_meas_sampler sm = {.fn = forward_fn, .ctx = r, .before = flush_bytes > 0 ? flush_fn : NULL, .before_ctx = &fl,
                          .calls = 1, .threads = threads, .retries = 2};
    double total = 0;
    while (!rc && (n < (c->min_samples > 1 ? c->min_samples : 1) || total < c->min_s)) {
        if (n == cap) {
            double *u = realloc(all, (size_t)(cap *= 2) * (size_t)(r->n_k + 1) * sizeof *all);
            if (!u) {
                rc = mb_err_set(err, MB_ERUN, "out of memory for the samples");
                break;
            }
            all = u;
        }
        int bad = 0;
        double s = mb_meas_sample_s(&sm, &bad, NULL);
        if (r->failed) {
            rc = MB_ERUN;
            break;
        }
        double *row = all + (size_t)n * (size_t)(r->n_k + 1);
        row[0] = s;
        memcpy(row + 1, r->cur, (size_t)r->n_k * sizeof *r->cur);
        total += s;
        out->whole.contended += bad;
        n++;
    }
    if (!rc && !(t = malloc((size_t)n * sizeof *t))) rc = mb_err_set(err, MB_ERUN, "out of memory");
    for (int j = 0; !rc && j <= r->n_k; j++) {
        for (int i = 0; i < n; i++) t[i] = all[(size_t)i * (size_t)(r->n_k + 1) + (size_t)j];
        double med = median(t, n), mn = t[0];
        if (j == 0) {
            out->whole.samples = n;
            out->whole.median_s = med;
            out->whole.min_s = mn;
            continue;
        }
        mb_meas_mmvar_kernel *k = &out->k[j - 1];
        const mb_mmvar_step *s = &r->st[r->kstep[j - 1]];
        if (r->kidx[j - 1] == -2) snprintf(k->name, sizeof k->name, "addmm bias copy");
        else if (r->kidx[j - 1] == -1) snprintf(k->name, sizeof k->name, "%s", s->name);
        else snprintf(k->name, sizeof k->name, "%s", r->plan[r->kstep[j - 1]]->kernels[r->kidx[j - 1]].name);
        k->step = r->kstep[j - 1];
        k->median_s = med;
        k->min_s = mn;
        out->n_kernels = j;
    }
    free(t);
    free(all);
    mb_meas_flusher_free(&fl);
    teardown(r);
    free(r);
    return rc;
}
