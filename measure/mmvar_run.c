/* mmvar_run.c — a layer written with '@' (model/mb_mmvar.h) run on the CPU:
 * its eager forward step by step, in the model's order of steps, and with
 * 'backward' autograd's backward, the steps in reverse: each product through
 * kernels/' BLAS (F.linear's bias first copied into C, then the product
 * added to it, beta 1, as PyTorch's CPU addmm does; in the backward dA =
 * dC B^T and dB = A^T dC, a bias's gradient summed over the rows), each step
 * between products through kernels/' executors at its own shape (its eager
 * plan on the spec, one kernel per op, as the model costs it: its backward
 * kernels read the gradients the later steps made), a tensor's second
 * gradient added to its first (autograd's add), a leaf read transposed by a
 * bmm copied into its layout (AccumulateGrad's copy_). Every kernel is timed
 * within each sample and the whole run sampled as gemm_run.c samples a GEMM,
 * a cache flush before each. Checked against float64 once before the
 * samples: each product on sampled entries (mb_kern_gemm_check), each step
 * by its own float64 reference from the inputs it was given, forward and
 * backward (mb_kern_verify). Does not model it nor print it. */
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
#define MAX_K MB_MEAS_MMVAR_MAX_KERNELS

/* what one kernel of the run does */
typedef enum kind {
    K_SEG,       /* kernel idx of its step's plan */
    K_PRODUCT,   /* the step's product (onto its bias when it has one) */
    K_BIAS_COPY, /* the bias into C's rows */
    K_DA,        /* dst = dC op(B)^T */
    K_DB,        /* dst = B's gradient in B's layout (as_kn: [k, n], for the copy after it) */
    K_BGRAD,     /* dst[n] = dC summed over the rows */
    K_ADD,       /* dst += src, n elements */
    K_COPY_T     /* dst [batch][n, k] = src [batch][k, n] transposed */
} kind;

typedef struct kern {
    kind kind;
    int step, idx, backward, as_kn, verify; /* verify: the step's last kernel (its check follows) */
    float *dst;
    const float *src;
    int64_t n;
    char name[48];
} kern;

typedef struct run {
    const mb_mmvar *v;
    int n_steps, backward;
    mb_mmvar_step st[MAX_STEPS];
    mb_plan *plan[MAX_STEPS];
    mb_kern_tensors kt[MAX_STEPS];
    int kt_ok[MAX_STEPS];
    float **buf;   /* per tensor of the layer: where its values are */
    float **grad;  /* per tensor: where its whole gradient is (backward) */
    float **owned; /* buffers allocated here, freed at the end */
    int n_owned, cap_owned;
    int n_k;
    kern k[MAX_K];
    double cur[MAX_K];
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

/* n floats, 64-byte aligned, kept in r->owned; NULL when out of memory */
static float *alloc_f32(run *r, int64_t n)
{
    if (r->n_owned == r->cap_owned) {
        int cap = r->cap_owned ? 2 * r->cap_owned : 64;
        float **o = realloc(r->owned, (size_t)cap * sizeof *o);
        if (!o) return NULL;
        r->owned = o, r->cap_owned = cap;
    }
    size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (p) r->owned[r->n_owned++] = p;
    return p;
}

static int add_k(run *r, kind kd, int step, int idx, int backward, const char *name, mb_err *err)
{
    if (r->n_k >= MAX_K) return mb_err_set(err, MB_EINPUT, "a layer of more than %d kernels", MAX_K);
    kern *k = &r->k[r->n_k++];
    memset(k, 0, sizeof *k);
    k->kind = kd, k->step = step, k->idx = idx, k->backward = backward;
    snprintf(k->name, sizeof k->name, "%s", name);
    return MB_OK;
}

/* ---- the kernels --------------------------------------------------------- */

/* C = A op(B) with beta (1: onto the bias copied into C) */
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

/* dA [m, k] = dC [m, n] op(B)^T */
static int grad_a(const run *r, const mb_mmvar_step *s, float *da, mb_err *err)
{
    const float *dc = r->grad[s->c], *b = r->buf[s->b];
    for (int64_t i = 0; i < s->batch; i++) {
        const int64_t ob = s->batch > 1 ? i * s->k * s->n : 0;
        int rc = mb_kern_sgemm(0, s->trans_b ? 0 : 1, s->m, s->k, s->n, 1.0f, dc + i * s->m * s->n, s->n, b + ob,
                               s->trans_b ? s->k : s->n, 0.0f, da + i * s->m * s->k, s->k, err);
        if (rc) return rc;
    }
    return MB_OK;
}

/* B's gradient: [k, n] = A^T dC, or in a transposed B's layout [n, k] =
 * dC^T A; as_kn: [k, n] whatever B's layout */
static int grad_b(const run *r, const mb_mmvar_step *s, float *db, int as_kn, mb_err *err)
{
    const float *dc = r->grad[s->c], *a = r->buf[s->a];
    for (int64_t i = 0; i < s->batch; i++) {
        const int64_t ob = s->batch > 1 ? i * s->k * s->n : 0;
        const float *ai = a + i * s->m * s->k, *dci = dc + i * s->m * s->n;
        int rc = !s->trans_b || as_kn
                     ? mb_kern_sgemm(1, 0, s->k, s->n, s->m, 1.0f, ai, s->k, dci, s->n, 0.0f, db + ob, s->n, err)
                     : mb_kern_sgemm(1, 0, s->n, s->k, s->m, 1.0f, dci, s->n, ai, s->k, 0.0f, db + ob, s->k, err);
        if (rc) return rc;
    }
    return MB_OK;
}

static int run_kernel(const run *r, int j, mb_err *err)
{
    const kern *k = &r->k[j];
    const mb_mmvar_step *s = &r->st[k->step];
    switch (k->kind) {
    case K_SEG: return mb_kern_run_kernel((mb_kern_tensors *)&r->kt[k->step], k->idx, MB_KERN_EXEC_AUTO, err);
    case K_PRODUCT: return product(r, s, s->bias >= 0 ? 1.0f : 0.0f, err);
    case K_BIAS_COPY: {
        const float *bias = r->buf[s->bias];
        float *c = r->buf[s->c];
        for (int64_t row = 0; row < s->batch * s->m; row++) memcpy(c + row * s->n, bias, (size_t)s->n * sizeof *c);
        return MB_OK;
    }
    case K_DA: return grad_a(r, s, k->dst, err);
    case K_DB: return grad_b(r, s, k->dst, k->as_kn, err);
    case K_BGRAD: {
        const float *dc = r->grad[s->c];
        memset(k->dst, 0, (size_t)s->n * sizeof *k->dst);
        for (int64_t row = 0; row < s->batch * s->m; row++)
            for (int64_t c = 0; c < s->n; c++) k->dst[c] += dc[row * s->n + c];
        return MB_OK;
    }
    case K_ADD:
        for (int64_t i = 0; i < k->n; i++) k->dst[i] += k->src[i];
        return MB_OK;
    case K_COPY_T: /* in 32 x 32 tiles, as a strided copy_ walks its blocks */
        for (int64_t b = 0; b < s->batch; b++) {
            const float *src = k->src + b * s->k * s->n;
            float *dst = k->dst + b * s->k * s->n;
            for (int64_t i0 = 0; i0 < s->k; i0 += 32)
                for (int64_t c0 = 0; c0 < s->n; c0 += 32)
                    for (int64_t i = i0; i < i0 + 32 && i < s->k; i++)
                        for (int64_t c = c0; c < c0 + 32 && c < s->n; c++) dst[c * s->k + i] = src[i * s->n + c];
        }
        return MB_OK;
    }
    return MB_OK;
}

/* the run, each kernel's seconds into r->cur */
static void run_fn(void *ctx)
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

/* ---- the run's plan ------------------------------------------------------ */

/* the forward: every step's plan and storage, every tensor's buffer, the
 * layer's inputs filled (x in [-1, 1], a weight scaled by 1/sqrt(k), a bias
 * by 0.1) */
static int setup_forward(run *r, const mb_device *d, mb_err *err)
{
    const mb_mmvar *v = r->v;
    uint64_t seed = 7;
    int rc = MB_OK;
    for (int i = 0; i < r->n_steps && !rc; i++) {
        mb_mmvar_step *s = &r->st[i];
        if ((rc = mb_mmvar_step_at(v, i, s, err))) break;
        if (s->is_gemm) {
            const int ops[3] = {s->a, s->b, s->bias};
            for (int o = 0; o < 3; o++) {
                int t = ops[o];
                if (t < 0 || r->buf[t]) continue;
                int64_t n = mb_mmvar_tensor_elems(v, t);
                if (!(r->buf[t] = alloc_f32(r, n))) return mb_err_set(err, MB_ERUN, "out of memory");
                fill(r->buf[t], n, o == 0 ? 1.0 : o == 1 ? 1.0 / sqrt((double)s->k) : 0.1, seed++);
            }
            int64_t n = mb_mmvar_tensor_elems(v, s->c);
            if (!(r->buf[s->c] = alloc_f32(r, n))) return mb_err_set(err, MB_ERUN, "out of memory");
            fill(r->buf[s->c], n, 1e30, 99); /* a poison the product overwrites */
            if (s->bias >= 0 && (rc = add_k(r, K_BIAS_COPY, i, 0, 0, "addmm bias copy", err))) break;
            rc = add_k(r, K_PRODUCT, i, 0, 0, s->name, err);
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
        for (int k = 0; k < r->plan[i]->n_kernels && !rc; k++)
            if (!r->plan[i]->kernels[k].is_backward) {
                rc = add_k(r, K_SEG, i, k, 0, r->plan[i]->kernels[k].name, err);
                /* a step with a backward is checked after it */
                r->k[r->n_k - 1].verify = !r->backward || !g->has_backward;
            }
    }
    /* the last kernel of each step's forward carries its check (forward only) */
    for (int j = 0; j + 1 < r->n_k; j++)
        if (r->k[j].verify && r->k[j + 1].kind == K_SEG && r->k[j + 1].step == r->k[j].step) r->k[j].verify = 0;
    return rc;
}

/* a gradient of tensor t in buffer g: its first is kept, later ones added */
static int contribute(run *r, int t, float *g, int step, mb_err *err)
{
    if (!mb_mmvar_tensor_grad(r->v, t) || !g) return MB_OK;
    if (!r->grad[t]) {
        r->grad[t] = g;
        return MB_OK;
    }
    char nm[48];
    mb_mmvar_grad_name(r->v, t, 1, nm, sizeof nm);
    int rc = add_k(r, K_ADD, step, 0, 1, nm, err);
    if (!rc) r->k[r->n_k - 1].dst = r->grad[t], r->k[r->n_k - 1].src = g, r->k[r->n_k - 1].n = mb_mmvar_tensor_elems(r->v, t);
    return rc;
}

/* autograd's backward, the steps in reverse: each reads its outputs' whole
 * gradients (the later steps all ran), its inputs' gradients joined */
static int setup_backward(run *r, mb_err *err)
{
    const mb_mmvar *v = r->v;
    const int nt = mb_mmvar_n_tensors(v);
    int rc = MB_OK;
    for (int t = 0; t < nt; t++) { /* the outputs' incoming gradients */
        if (!mb_mmvar_is_output(v, t) || !mb_mmvar_tensor_grad(v, t)) continue;
        for (int i = 0; i < r->n_steps; i++)
            for (int j = 0; !r->st[i].is_gemm && j < r->st[i].n_out; j++)
                if (r->st[i].out[j] == t) r->grad[t] = r->kt[i].data[r->plan[i]->g->grad_outputs[j]];
        if (!r->grad[t]) { /* a product's: filled here */
            int64_t n = mb_mmvar_tensor_elems(v, t);
            if (!(r->grad[t] = alloc_f32(r, n))) return mb_err_set(err, MB_ERUN, "out of memory");
            fill(r->grad[t], n, 1.0, 1234);
        }
    }
    for (int i = r->n_steps - 1; i >= 0 && !rc; i--) {
        const mb_mmvar_step *s = &r->st[i];
        if (s->is_gemm) {
            if (!r->grad[s->c]) continue; /* no gradient reaches it */
            float *da = NULL, *db = NULL, *dbias = NULL;
            const int ga = mb_mmvar_tensor_grad(v, s->a), gb = mb_mmvar_tensor_grad(v, s->b);
            if (ga) {
                if (!(da = alloc_f32(r, mb_mmvar_tensor_elems(v, s->a)))) return mb_err_set(err, MB_ERUN, "out of memory");
                if ((rc = add_k(r, K_DA, i, 0, 1, s->name_da, err))) break;
                r->k[r->n_k - 1].dst = da;
            }
            /* bmm's gradient of a transposed leaf comes as [k, n], AccumulateGrad copies it */
            const int copy = gb && s->batch > 1 && s->trans_b && mb_mmvar_tensor_input(v, s->b);
            float *kn = NULL;
            if (gb) {
                int64_t n = mb_mmvar_tensor_elems(v, s->b);
                if (!(db = alloc_f32(r, n)) || (copy && !(kn = alloc_f32(r, n))))
                    return mb_err_set(err, MB_ERUN, "out of memory");
                if ((rc = add_k(r, K_DB, i, 0, 1, s->name_db, err))) break;
                r->k[r->n_k - 1].dst = copy ? kn : db;
                r->k[r->n_k - 1].as_kn = copy;
            }
            if (s->bias >= 0 && mb_mmvar_tensor_grad(v, s->bias)) {
                if (!(dbias = alloc_f32(r, s->n))) return mb_err_set(err, MB_ERUN, "out of memory");
                if ((rc = add_k(r, K_BGRAD, i, 0, 1, s->name_bias, err))) break;
                r->k[r->n_k - 1].dst = dbias;
            }
            if (copy) {
                char nm[48];
                mb_mmvar_grad_name(v, s->b, 0, nm, sizeof nm);
                if ((rc = add_k(r, K_COPY_T, i, 0, 1, nm, err))) break;
                r->k[r->n_k - 1].dst = db, r->k[r->n_k - 1].src = kn;
            }
            if ((rc = contribute(r, s->a, da, i, err)) || (rc = contribute(r, s->b, db, i, err))) break;
            if (s->bias >= 0) rc = contribute(r, s->bias, dbias, i, err);
            continue;
        }
        const mb_plan *pl = r->plan[i];
        const mb_graph *g = pl->g;
        if (!g->has_backward) continue;
        for (int j = 0; j < s->n_out; j++) { /* the whole gradient of what it made, or none: zeros */
            int node = g->grad_outputs[j];
            if (r->grad[s->out[j]]) r->kt[i].data[node] = r->grad[s->out[j]];
            else memset(r->kt[i].data[node], 0, (size_t)mb_mmvar_tensor_elems(v, s->out[j]) * sizeof(float));
        }
        int first = r->n_k;
        for (int k = 0; k < pl->n_kernels && !rc; k++)
            if (pl->kernels[k].is_backward) rc = add_k(r, K_SEG, i, k, 1, pl->kernels[k].name, err);
        if (r->n_k > first) r->k[r->n_k - 1].verify = 1;
        for (int j = 0; j < s->n_in && !rc; j++)
            if (g->grad_inputs[j] >= 0) rc = contribute(r, s->in[j], r->kt[i].data[g->grad_inputs[j]], i, err);
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
    for (int i = 0; i < r->n_owned; i++) free(r->owned[i]);
    free(r->owned);
    free(r->buf);
    free(r->grad);
}

/* ---- the check ----------------------------------------------------------- */

/* the first product off float64: what the result says */
static void fail_product(mb_meas_mmvar_result *out, const char *name, double x)
{
    if (!out->whole.verified) return;
    out->whole.verified = 0;
    snprintf(out->check, sizeof out->check, "%s: sampled entries %.3g times the f32 bound off float64", name, x);
}

/* worst sampled error over the f32 bound of C = op(A) op(B) (first and last batch) */
static double gemm_err(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t batch, const float *a, int64_t lda,
                       int64_t sa, const float *b, int64_t ldb, int64_t sb, const float *c, int64_t sc, int samples)
{
    double worst = 0;
    for (int64_t i = 0; i < batch; i += batch > 1 ? batch - 1 : 1) {
        double e = mb_kern_gemm_check(ta, tb, m, n, k, 1.0, a + i * sa, lda, b + i * sb, ldb, c + i * sc, n, samples,
                                      11 + (uint64_t)i) / mb_kern_gemm_tol(k);
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

/* the run once, each product and step checked */
static int check(run *r, mb_meas_mmvar_result *out, int samples, mb_err *err)
{
    int rc = MB_OK;
    out->whole.verified = 1;
    out->whole.max_rel_err = 0;
    out->whole.tol = 1;
    for (int j = 0; j < r->n_k && !rc; j++) {
        const kern *k = &r->k[j];
        const mb_mmvar_step *s = &r->st[k->step];
        const int64_t w = s->batch > 1 ? s->k * s->n : 0; /* B's stride a batch */
        double e = -1;
        if (k->kind == K_PRODUCT && s->bias >= 0) { /* the product alone (beta 0) checked, then onto its bias */
            if ((rc = product(r, s, 0.0f, err))) break;
            e = gemm_err(0, s->trans_b, s->m, s->n, s->k, s->batch, r->buf[s->a], s->k, s->m * s->k, r->buf[s->b],
                         s->trans_b ? s->k : s->n, w, r->buf[s->c], s->m * s->n, samples);
            if ((rc = run_kernel(r, j - 1, err))) break; /* the bias copy again */
        }
        if (k->kind == K_BIAS_COPY) continue; /* run with its product */
        if ((rc = run_kernel(r, j, err))) break;
        if (k->kind == K_PRODUCT && s->bias < 0)
            e = gemm_err(0, s->trans_b, s->m, s->n, s->k, s->batch, r->buf[s->a], s->k, s->m * s->k, r->buf[s->b],
                         s->trans_b ? s->k : s->n, w, r->buf[s->c], s->m * s->n, samples);
        else if (k->kind == K_DA)
            e = gemm_err(0, s->trans_b ? 0 : 1, s->m, s->k, s->n, s->batch, r->grad[s->c], s->n, s->m * s->n,
                         r->buf[s->b], s->trans_b ? s->k : s->n, w, k->dst, s->m * s->k, samples);
        else if (k->kind == K_DB && (!s->trans_b || k->as_kn))
            e = gemm_err(1, 0, s->k, s->n, s->m, s->batch, r->buf[s->a], s->k, s->m * s->k, r->grad[s->c], s->n,
                         s->m * s->n, k->dst, w, samples);
        else if (k->kind == K_DB)
            e = gemm_err(1, 0, s->n, s->k, s->m, s->batch, r->grad[s->c], s->n, s->m * s->n, r->buf[s->a], s->k,
                         s->m * s->k, k->dst, w, samples);
        if (e >= 0 || e != e) {
            if (!(e <= out->whole.max_rel_err)) out->whole.max_rel_err = e;
            if (!(e <= 1)) fail_product(out, k->name, e);
        }
        if (k->verify) {
            mb_kern_check ck;
            if ((rc = mb_kern_verify(&r->kt[k->step], 0, 0, &ck, err))) break;
            if (!ck.passed && out->whole.verified) {
                out->whole.verified = 0;
                snprintf(out->check, sizeof out->check, "the step making %s: %lld elements off float64 (first: %g, "
                         "want %g)", mb_mmvar_tensor_label(r->v, s->out[0]), (long long)ck.bad + (long long)ck.poisoned,
                         ck.first_got, ck.first_want);
            }
        }
    }
    return rc;
}

/* ---- the run ------------------------------------------------------------- */

int mb_meas_mmvar_admit(const mb_mmvar *v, int64_t flush_bytes, mb_err *err)
{
    const int nt = mb_mmvar_n_tensors(v);
    for (int t = 0; t < nt; t++)
        if (mb_mmvar_tensor_dtype(v, t) != MB_F32)
            return mb_err_set(err, MB_EINPUT, "--measure runs f32 layers only on the CPU ('%s' is %s)",
                              mb_mmvar_tensor_label(v, t), mb_dtype_name(mb_mmvar_tensor_dtype(v, t)));
    /* every tensor twice (a step's own storage of what it reads, and its
     * temporaries), its gradient twice with a backward, and the flush buffer */
    double need = 2.0 * (double)(flush_bytes > 0 ? flush_bytes : 0);
    for (int t = 0; t < nt; t++) need += (mb_mmvar_backward(v) ? 4.0 : 2.0) * 4.0 * (double)mb_mmvar_tensor_elems(v, t);
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
    int rc = mb_meas_mmvar_admit(v, flush_bytes, err);
    if (rc) return rc;
    run *r = calloc(1, sizeof *r);
    if (!r) return mb_err_set(err, MB_ERUN, "out of memory");
    r->v = v;
    r->err = err;
    r->backward = mb_mmvar_backward(v);
    r->n_steps = mb_mmvar_n_steps(v);
    memset(out, 0, sizeof *out);
    int threads = c->threads > 0 ? c->threads : mb_kern_threads();
    mb_kern_set_threads(threads);
    mb_kern_blas_set_threads(threads);
    out->whole.threads = threads;
    snprintf(out->whole.blas, sizeof out->whole.blas, "%s", mb_kern_blas_desc());
    mb_meas_flusher fl;
    memset(&fl, 0, sizeof fl);
    double *all = NULL, *t = NULL;
    const int nt = mb_mmvar_n_tensors(v);
    r->buf = calloc((size_t)nt, sizeof *r->buf);
    r->grad = calloc((size_t)nt, sizeof *r->grad);
    if (!r->buf || !r->grad) rc = mb_err_set(err, MB_ERUN, "out of memory");
    if (!rc && r->n_steps > MAX_STEPS) rc = mb_err_set(err, MB_EINPUT, "a layer of more than %d steps", MAX_STEPS);
    if (!rc) rc = setup_forward(r, d, err);
    if (!rc && r->backward) rc = setup_backward(r, err);
    if (!rc && flush_bytes > 0) rc = mb_meas_flusher_init(&fl, flush_bytes, err);
    if (!rc) rc = check(r, out, c->check_samples > 0 ? c->check_samples : 16, err);
    /* samples: the whole run each, every kernel within it; a row: the
     * whole, the forward's kernels summed, the backward's, each kernel */
    const int cols = r->n_k + 3;
    int cap = 64, n = 0;
    all = malloc((size_t)cap * (size_t)cols * sizeof *all);
    if (!rc && !all) rc = mb_err_set(err, MB_ERUN, "out of memory for the samples");
    mb_meas_sampler sm = {.fn = run_fn, .ctx = r, .before = flush_bytes > 0 ? flush_fn : NULL, .before_ctx = &fl,
                          .calls = 1, .threads = threads, .retries = 2};
    double total = 0;
    while (!rc && (n < (c->min_samples > 1 ? c->min_samples : 1) || total < c->min_s)) {
        if (n == cap) {
            double *u = realloc(all, (size_t)(cap *= 2) * (size_t)cols * sizeof *all);
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
        double *row = all + (size_t)n * (size_t)cols;
        row[0] = s, row[1] = row[2] = 0;
        for (int j = 0; j < r->n_k; j++) row[r->k[j].backward ? 2 : 1] += r->cur[j];
        memcpy(row + 3, r->cur, (size_t)r->n_k * sizeof *r->cur);
        total += s;
        out->whole.contended += bad;
        n++;
    }
    if (!rc && !(t = malloc((size_t)n * sizeof *t))) rc = mb_err_set(err, MB_ERUN, "out of memory");
    for (int j = 0; !rc && j < cols; j++) {
        for (int i = 0; i < n; i++) t[i] = all[(size_t)i * (size_t)cols + (size_t)j];
        double med = median(t, n), mn = t[0];
        if (j == 0) out->whole.samples = n, out->whole.median_s = med, out->whole.min_s = mn;
        else if (j == 1) out->fwd_median_s = med, out->fwd_min_s = mn;
        else if (j == 2) out->bwd_median_s = med, out->bwd_min_s = mn;
        else {
            mb_meas_mmvar_kernel *k = &out->k[j - 3];
            snprintf(k->name, sizeof k->name, "%s", r->k[j - 3].name);
            k->step = r->k[j - 3].step;
            k->backward = r->k[j - 3].backward;
            k->median_s = med;
            k->min_s = mn;
            out->n_kernels = j - 2;
        }
    }
    free(t);
    free(all);
    mb_meas_flusher_free(&fl);
    teardown(r);
    free(r);
    return rc;
}
