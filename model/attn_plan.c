/* attn_plan.c — the planner of attention's backward: store P (standard,
 * autograd's), recompute S and P from q, k and the saved log-sum-exp
 * (unfused) or FlashAttention (fused recompute), chosen by the time
 * objective under a budget of saved memory; the frontier of saved memory
 * against time; where a plan's time per token doubles. Costs nothing itself:
 * the plans' kernels, times and bytes are attention.c's.
 *
 * The time objective is the one `membound plan --objective time` uses for
 * the elementwise variants: the modelled time of forward and backward, so
 * recomputing costs the extra QK^T FLOPs, the exponentials and the S and P
 * traffic again (attention.c), and storing P costs its bytes in memory.
 * The budget bounds what one attention keeps from forward to backward (its
 * saved_bytes); a network of L layers keeps L of them, so a budget for the
 * whole network is divided by L before it is given here. */
#include "model_int.h"
#include "mb_attention.h"

#include <math.h>
#include <string.h>

int mb_attn_kept(const mb_attn *a, mb_attn_plan_id p, mb_attn_tensor *out)
{
    const double s = (double)mb_dtype_bytes(a->dtype);
    const double BH = (double)a->batch * (double)a->heads, N = (double)a->seq, d = (double)a->head_dim;
    const mb_attn_tensor lse = {"lse", "[batch, heads, seq]", "f32", BH * N * 4};
    switch (p) {
    case MB_ATTN_STANDARD:
        out[0] = (mb_attn_tensor){"P", "[batch, heads, seq, seq]", mb_dtype_name(a->dtype), BH * N * N * s};
        return 1;
    case MB_ATTN_RECOMPUTE:
        out[0] = lse;
        return 1;
    case MB_ATTN_FLASH:
    default:
        out[0] = (mb_attn_tensor){"o", "[batch, heads, seq, head_dim]", mb_dtype_name(a->dtype), BH * N * d * s};
        out[1] = lse;
        return 2;
    }
}

void mb_attn_choose(const mb_attn_est *e, const mb_device *d, double budget_bytes, unsigned mask,
                    mb_attn_choice *out)
{
    memset(out, 0, sizeof *out);
    out->plan = out->fastest = -1;
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
        const mb_attn_plan *pl = &e->plan[p];
        out->fit[p] = d->mem_gb > 0 && pl->peak_bytes > d->mem_gb * 1e9 ? MB_ATTN_OVER_MEMORY
                    : budget_bytes > 0 && pl->saved_bytes > budget_bytes ? MB_ATTN_OVER_BUDGET
                    : MB_ATTN_FITS;
        if (!(mask & (1u << p))) continue;
        /* least time; ties to the least saved bytes */
#define BETTER(q) ((q) < 0 || pl->time_s < e->plan[q].time_s || \
                   (pl->time_s == e->plan[q].time_s && pl->saved_bytes < e->plan[q].saved_bytes))
        if (BETTER(out->fastest)) out->fastest = p;
        if (out->fit[p] == MB_ATTN_FITS && BETTER(out->plan)) out->plan = p;
#undef BETTER
    }
}

int mb_attn_frontier(const mb_attn_est *e, unsigned mask, int *order)
{
    int n = 0;
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
        if (!(mask & (1u << p))) continue;
        const mb_attn_plan *a = &e->plan[p];
        int dominated = 0;
        for (int q = 0; q < MB_ATTN_N_PLANS && !dominated; q++) {
            if (q == p || !(mask & (1u << q))) continue;
            const mb_attn_plan *b = &e->plan[q];
            /* b saves no more and is faster, or the same on both axes and first */
            if (b->saved_bytes <= a->saved_bytes &&
                (b->time_s < a->time_s || (b->time_s == a->time_s && (b->saved_bytes < a->saved_bytes || q < p))))
                dominated = 1;
        }
        if (!dominated) order[n++] = p;
    }
    for (int i = 1; i < n; i++) /* by saved bytes, ascending */
        for (int j = i; j > 0 && e->plan[order[j]].saved_bytes < e->plan[order[j - 1]].saved_bytes; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    return n;
}

/* t / seq of plan p at seq n */
static int per_token(const mb_attn *a, const mb_device *d, mb_attn_plan_id p, int64_t n, double *out, mb_err *err)
{
    mb_attn t = *a;
    t.seq = n;
    mb_attn_est e;
    int rc = mb_attn_estimate(&t, d, &e, err);
    if (rc) return rc;
    *out = e.plan[p].time_s / (double)n;
    return MB_OK;
}

/* The grid's points: 2^(1/8) steps, an integer each, increasing. */
#define GRID_STEPS_PER_OCTAVE 8

int mb_attn_doubling_seq(const mb_attn *a, const mb_device *d, mb_attn_plan_id p, int64_t lo, int64_t hi,
                         mb_attn_doubling *out, mb_err *err)
{
    if (lo < 16 || hi <= lo)
        return mb_err_set(err, MB_EINPUT, "the doubling's seq range %lld..%lld: from 16 up, low below high",
                          (long long)lo, (long long)hi);
    enum { MAX_GRID = 64 * GRID_STEPS_PER_OCTAVE };
    int64_t seq[MAX_GRID];
    double tpt[MAX_GRID];
    int n = 0;
    for (int i = 0; n < MAX_GRID; i++) {
        int64_t v = (int64_t)llround((double)lo * pow(2.0, (double)i / GRID_STEPS_PER_OCTAVE));
        if (v > hi) v = hi;
        if (n > 0 && v <= seq[n - 1]) {
            if (v == hi) break;
            continue;
        }
        seq[n] = v;
        int rc = per_token(a, d, p, v, &tpt[n], err);
        if (rc) return rc;
        n++;
        if (v == hi) break;
    }
    int best = 0;
    for (int i = 1; i < n; i++)
        if (tpt[i] < tpt[best]) best = i;
    out->best_seq = seq[best];
    out->best_s_per_token = tpt[best];
    out->double_seq = 0;
    const double target = 2 * tpt[best];
    for (int i = best + 1; i < n; i++) {
        if (tpt[i] < target) continue;
        /* the shortest seq in (seq[i-1], seq[i]] reaching it: bisected,
         * t / seq taken as rising between two grid points */
        int64_t l = seq[i - 1], h = seq[i];
        while (h - l > 1) {
            int64_t m = l + (h - l) / 2;
            double v;
            int rc = per_token(a, d, p, m, &v, err);
            if (rc) return rc;
            if (v >= target) h = m;
            else l = m;
        }
        out->double_seq = h;
        break;
    }
    return MB_OK;
}
