/* attn_ref.c — the float64 check of attention runs (attn_cpu.c): a reference
 * row by row in double (s_j = scale q.k_j masked, the softmax, o = sum p v,
 * the log-sum-exp; backward dP, D = dO.o, dS = P (dP - D), dq, and dk, dv
 * summed over a head's rows), every element at small shapes, sampled rows
 * at large ones; and finite differences of the float64 forward loss
 * sum(do o o) against the run's gradients. The reference always uses the
 * true scale and mask (attn_int.h's mutants break the executors only).
 * Does not run or time the plans. */
#include "attn_int.h"
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mb_kern_attn_tol(const mb_kern_attn_dims *d, double smag, double *tol_fwd, double *tol_bwd)
{
    const double u = ldexp(1.0, -24), N = (double)d->seq, D = (double)d->head_dim;
    const double tiles = ceil(N / 8); /* the most key tiles a row's online softmax rescales over */
    double f = (2 * (D + 2) * smag + 2 * N + 2 * tiles + 16) * u;
    *tol_fwd = f;
    *tol_bwd = 2 * f + (2 * D + 2 * N) * u;
}

/* one head in double */
typedef struct head {
    int64_t N, d;
    double *q, *k, *v, *dout;
} head;

static int head_init(head *h, int64_t N, int64_t d, int backward)
{
    h->N = N, h->d = d;
    size_t b = (size_t)(N * d) * sizeof(double);
    h->q = malloc(b), h->k = malloc(b), h->v = malloc(b), h->dout = backward ? malloc(b) : NULL;
    return h->q && h->k && h->v && (!backward || h->dout);
}

static void head_load(const mb_kern_attn *a, int64_t bh, head *h)
{
    const int64_t n = h->N * h->d, off = bh * n;
    for (int64_t i = 0; i < n; i++) {
        h->q[i] = a->q[off + i], h->k[i] = a->k[off + i], h->v[i] = a->v[off + i];
        if (h->dout) h->dout[i] = a->dout[off + i];
    }
}

static void head_free(head *h) { free(h->q), free(h->k), free(h->v), free(h->dout); }

/* scratch and results of one row */
typedef struct row {
    double *p, *ds, *w;        /* N: P, dS, P (|dP| + |D|) as absolute sums */
    double *o, *omag, *dq, *dqmag; /* d */
    double lse, smag;
} row;

static int row_init(row *r, int64_t N, int64_t d)
{
    r->p = malloc((size_t)N * sizeof(double)), r->ds = malloc((size_t)N * sizeof(double));
    r->w = malloc((size_t)N * sizeof(double));
    r->o = malloc((size_t)(4 * d) * sizeof(double));
    if (!r->p || !r->ds || !r->w || !r->o) return 0;
    r->omag = r->o + d, r->dq = r->o + 2 * d, r->dqmag = r->o + 3 * d;
    return 1;
}

static void row_free(row *r) { free(r->p), free(r->ds), free(r->w), free(r->o); }

/* row i of head h; backward: dS, dq and their magnitudes too */
static void row_ref(const head *h, int64_t i, int causal, int backward, row *r)
{
    const int64_t N = h->N, d = h->d, jn = causal ? i + 1 : N;
    const double scale = 1.0 / sqrt((double)d), *qi = h->q + i * d;
    double m = -INFINITY;
    r->smag = 0;
    for (int64_t j = 0; j < jn; j++) {
        const double *kj = h->k + j * d;
        double s = 0, sa = 0;
        for (int64_t c = 0; c < d; c++) s += qi[c] * kj[c], sa += fabs(qi[c] * kj[c]);
        r->p[j] = s * scale;
        if (sa * scale > r->smag) r->smag = sa * scale;
        if (r->p[j] > m) m = r->p[j];
    }
    double z = 0;
    for (int64_t j = 0; j < jn; j++) z += r->p[j] = exp(r->p[j] - m);
    for (int64_t j = 0; j < jn; j++) r->p[j] /= z;
    for (int64_t j = jn; j < N; j++) r->p[j] = 0;
    r->lse = m + log(z);
    for (int64_t c = 0; c < d; c++) r->o[c] = r->omag[c] = 0;
    for (int64_t j = 0; j < jn; j++) {
        const double *vj = h->v + j * d, p = r->p[j];
        for (int64_t c = 0; c < d; c++) r->o[c] += p * vj[c], r->omag[c] += p * fabs(vj[c]);
    }
    if (!backward) return;
    const double *gi = h->dout + i * d;
    double D = 0, B = 0;
    for (int64_t c = 0; c < d; c++) D += gi[c] * r->o[c], B += fabs(gi[c] * r->o[c]);
    for (int64_t c = 0; c < d; c++) r->dq[c] = r->dqmag[c] = 0;
    for (int64_t j = 0; j < N; j++) {
        if (j >= jn) {
            r->ds[j] = r->w[j] = 0;
            continue;
        }
        const double *vj = h->v + j * d, *kj = h->k + j * d;
        double dp = 0, A = 0;
        for (int64_t c = 0; c < d; c++) dp += gi[c] * vj[c], A += fabs(gi[c] * vj[c]);
        r->ds[j] = r->p[j] * (dp - D);
        r->w[j] = r->p[j] * (A + B);
        for (int64_t c = 0; c < d; c++) r->dq[c] += scale * r->ds[j] * kj[c], r->dqmag[c] += scale * r->w[j] * fabs(kj[c]);
    }
}

static double elem_err(float got, double ref, double mag)
{
    if (!isfinite(got)) return INFINITY;
    return fabs((double)got - ref) / (mag > 1e-300 ? mag : 1e-300);
}

/* the rows of o, lse and dq checked: every row, or sample_rows of them */
static int64_t pick_rows(const mb_kern_attn *a, int full, int sample_rows, uint64_t seed, int64_t *bh, int64_t *ri)
{
    const int64_t BH = a->d.batch * a->d.heads, N = a->d.seq;
    if (full) {
        for (int64_t t = 0; t < BH * N; t++) bh[t] = t / N, ri[t] = t % N;
        return BH * N;
    }
    const int64_t edge[] = {0, 1, N - 1, a->tiles.fwd_r - 1, a->tiles.fwd_r, a->tiles.fwd_c - 1, a->tiles.fwd_c,
                            a->tiles.bwd_r, a->tiles.bwd_c, N / 2};
    int64_t n = 0;
    uint64_t s = seed;
    for (int k = 0; k < sample_rows; k++) {
        int64_t i;
        if (k < (int)(sizeof edge / sizeof edge[0])) i = edge[k];
        else {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            i = (int64_t)((s >> 33) % (uint64_t)N);
        }
        if (i < 0 || i >= N) continue;
        bh[n] = k % BH, ri[n] = i;
        n++;
    }
    return n;
}

typedef struct acc {
    double o, lse, dq, dk, dv, tf, tb;
    int64_t nonfinite;
} acc;

static void note(acc *x, double *field, double e)
{
    if (!isfinite(e)) x->nonfinite++;
    if (!(e <= *field)) *field = e;
}

/* dk and dv of head bh at the key rows keys[0..nk) against the float64 sums
 * over every query row */
static int check_cols(const mb_kern_attn *a, const head *h, int64_t bh, const int64_t *keys, int64_t nk, acc *x)
{
    const int64_t N = h->N, d = h->d;
    const double scale = 1.0 / sqrt((double)d);
    double *sum = calloc((size_t)(4 * nk * d), sizeof(double)), smag = 0;
    if (!sum) return 0;
    double *dk = sum, *dkm = sum + nk * d, *dv = sum + 2 * nk * d, *dvm = sum + 3 * nk * d;
    int ok = 1;
#pragma omp parallel reduction(max : smag) reduction(&& : ok)
    {
        row r;
        double *mine = calloc((size_t)(4 * nk * d), sizeof(double));
        ok = row_init(&r, N, d) && mine;
#pragma omp for schedule(dynamic, 16)
        for (int64_t i = 0; i < N; i++) {
            if (!ok) continue;
            row_ref(h, i, a->d.causal, 1, &r);
            if (r.smag > smag) smag = r.smag;
            const double *qi = h->q + i * d, *gi = h->dout + i * d;
            for (int64_t t = 0; t < nk; t++) {
                const int64_t j = keys[t];
                const double p = r.p[j], ds = r.ds[j] * scale, w = r.w[j] * scale;
                if (p == 0) continue;
                double *k1 = mine + t * d, *k2 = mine + (nk + t) * d, *v1 = mine + (2 * nk + t) * d,
                       *v2 = mine + (3 * nk + t) * d;
                for (int64_t c = 0; c < d; c++) {
                    k1[c] += ds * qi[c], k2[c] += w * fabs(qi[c]);
                    v1[c] += p * gi[c], v2[c] += p * fabs(gi[c]);
                }
            }
        }
        if (mine) {
#pragma omp critical
            for (int64_t t = 0; t < 4 * nk * d; t++) sum[t] += mine[t];
        }
        free(mine);
        row_free(&r);
    }
    if (!ok) {
        free(sum);
        return 0;
    }
    double tf, tb;
    mb_kern_attn_tol(&a->d, smag, &tf, &tb);
    if (tb > x->tb) x->tb = tb;
    for (int64_t t = 0; t < nk; t++)
        for (int64_t c = 0; c < d; c++) {
            const int64_t at = (bh * N + keys[t]) * d + c;
            note(x, &x->dk, elem_err(a->dk[at], dk[t * d + c], dkm[t * d + c]) / tb);
            note(x, &x->dv, elem_err(a->dv[at], dv[t * d + c], dvm[t * d + c]) / tb);
        }
    free(sum);
    return 1;
}

/* sum over rows rows[0..n) of head h of do . o in float64 */
static double loss(const head *h, int causal, int64_t i0, int64_t i1, row *r)
{
    double L = 0;
    for (int64_t i = i0; i < i1; i++) {
        row_ref(h, i, causal, 0, r);
        for (int64_t c = 0; c < h->d; c++) L += h->dout[i * h->d + c] * r->o[c];
    }
    return L;
}

/* finite differences at n points: of q (row-local) and, when a head's
 * forward is cheap, of k and v */
static int gradcheck(const mb_kern_attn *a, head *h, int n, uint64_t seed, mb_kern_attn_check *out)
{
    const int64_t BH = a->d.batch * a->d.heads, N = a->d.seq, d = a->d.head_dim;
    const int kv = (double)N * (double)N * (double)d <= 16777216.0;
    const double step = 1e-4;
    row r;
    if (!row_init(&r, N, d)) return 0;
    double *num = malloc((size_t)n * sizeof(double)), *got = malloc((size_t)n * sizeof(double));
    if (!num || !got) {
        free(num), free(got), row_free(&r);
        return 0;
    }
    uint64_t s = seed ^ 0xfdfdfd;
    int m = 0;
    int64_t loaded = -1;
    for (int t = 0; t < n; t++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const int64_t bh = (int64_t)((s >> 20) % (uint64_t)BH);
        const int64_t i = t == 0 ? 0 : t == 1 ? N - 1 : (int64_t)((s >> 33) % (uint64_t)N);
        const int64_t c = (int64_t)((s >> 8) % (uint64_t)d);
        const int which = kv ? t % 3 : 0; /* 0 q, 1 k, 2 v */
        if (bh != loaded) head_load(a, bh, h), loaded = bh;
        double *x = (which == 0 ? h->q : which == 1 ? h->k : h->v) + i * d + c, x0 = *x;
        const int64_t i0 = which == 0 ? i : 0, i1 = which == 0 ? i + 1 : N;
        *x = x0 + step;
        double lp = loss(h, a->d.causal, i0, i1, &r);
        *x = x0 - step;
        double lm = loss(h, a->d.causal, i0, i1, &r);
        *x = x0;
        const float *g = which == 0 ? a->dq : which == 1 ? a->dk : a->dv;
        num[m] = (lp - lm) / (2 * step);
        got[m] = g[(bh * N + i) * d + c];
        m++;
    }
    double gmax = 0, worst = 0;
    for (int t = 0; t < m; t++) gmax = fmax(gmax, fabs(num[t]));
    for (int t = 0; t < m; t++) {
        double e = isfinite(got[t]) ? fabs(num[t] - got[t]) / (1e-3 * (fabs(num[t]) + gmax) + 1e-300) : INFINITY;
        if (!(e <= worst)) worst = e;
    }
    out->fd_err = worst;
    out->fd_points = m;
    free(num), free(got), row_free(&r);
    return 1;
}

int mb_kern_attn_verify(const mb_kern_attn *a, double full_limit, int sample_rows, int fd_points, uint64_t seed,
                        mb_kern_attn_check *out, mb_err *err)
{
    const int64_t BH = a->d.batch * a->d.heads, N = a->d.seq, d = a->d.head_dim;
    const int bwd = a->d.backward, flash = a->plan == MB_KERN_ATTN_FLASH;
    memset(out, 0, sizeof *out);
    out->full = (double)BH * (double)N * (double)N * (double)d <= full_limit;
    if (sample_rows < 1) sample_rows = 1;
    const int64_t cap = out->full ? BH * N : sample_rows;
    int64_t *bh = malloc((size_t)cap * sizeof(int64_t)), *ri = malloc((size_t)cap * sizeof(int64_t));
    head h = {0, 0, NULL, NULL, NULL, NULL};
    row r;
    memset(&r, 0, sizeof r);
    int ok = bh && ri && head_init(&h, N, d, bwd) && row_init(&r, N, d);
    acc x = {0, 0, 0, 0, 0, 0, 0, 0};
    if (ok) {
        const int64_t n = pick_rows(a, out->full, sample_rows, seed, bh, ri);
        int64_t loaded = -1;
        for (int64_t t = 0; t < n; t++) {
            if (bh[t] != loaded) head_load(a, bh[t], &h), loaded = bh[t];
            row_ref(&h, ri[t], a->d.causal, bwd, &r);
            double tf, tb;
            mb_kern_attn_tol(&a->d, r.smag, &tf, &tb);
            x.tf = fmax(x.tf, tf), x.tb = fmax(x.tb, tb);
            const int64_t at = (bh[t] * N + ri[t]) * d;
            for (int64_t c = 0; c < d; c++) {
                note(&x, &x.o, elem_err(a->o[at + c], r.o[c], r.omag[c]) / tf);
                if (bwd) note(&x, &x.dq, elem_err(a->dq[at + c], r.dq[c], r.dqmag[c]) / tb);
            }
            if (flash) {
                const float L = a->lse[bh[t] * N + ri[t]];
                note(&x, &x.lse, elem_err(L, r.lse, fmax(1.0, fabs(r.lse))) / tf);
            }
        }
        out->rows_checked = n;
        if (bwd) {
            /* dk, dv: every head and key row, or sample_rows key rows of the last head */
            int64_t nk = out->full ? N : (sample_rows < N ? sample_rows : N);
            int64_t *keys = malloc((size_t)nk * sizeof(int64_t));
            ok = keys != NULL;
            if (ok && !out->full) {
                int64_t got = pick_rows(a, 0, (int)nk, seed ^ 0x77, bh, ri);
                for (int64_t t = 0; t < got; t++) keys[t] = ri[t];
                nk = got;
            } else if (ok)
                for (int64_t j = 0; j < N; j++) keys[j] = j;
            for (int64_t b = out->full ? 0 : BH - 1; ok && b < BH; b++) {
                head_load(a, b, &h);
                ok = check_cols(a, &h, b, keys, nk, &x);
            }
            free(keys);
            if (ok && fd_points > 0) ok = gradcheck(a, &h, fd_points, seed, out);
        }
    }
    free(bh), free(ri), head_free(&h), row_free(&r);
    if (!ok) return mb_err_set(err, MB_ERUN, "out of memory for attention's float64 check");
    out->o_err = x.o;
    out->lse_err = flash ? x.lse : -1;
    out->dq_err = bwd ? x.dq : -1;
    out->dk_err = bwd ? x.dk : -1;
    out->dv_err = bwd ? x.dv : -1;
    if (!bwd || fd_points <= 0) out->fd_err = -1;
    out->tol_fwd = x.tf;
    out->tol_bwd = x.tb;
    out->nonfinite = x.nonfinite;
    double worst = fmax(fmax(x.o, x.lse), fmax(x.dq, fmax(x.dk, x.dv)));
    out->passed = worst <= 1 && x.nonfinite == 0 && (out->fd_err < 0 || out->fd_err <= 1);
    return MB_OK;
}
