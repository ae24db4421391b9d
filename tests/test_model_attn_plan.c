/* test_model_attn_plan.c — the recompute plan and the planner of attention's
 * backward (model/attention.c, model/attn_plan.c) against counts made by
 * hand: the recompute plan's kernels, its extra FLOPs, exponentials and
 * DRAM bytes over the standard plan's, causal and not; what each plan keeps;
 * the choice flipping with the budget and the device's memory; the
 * frontier; the doubling seq's definition. h100-sxm: 80 GB, 50 MiB L2;
 * a100-40gb: 40 GB. */
#include "membound_model.h"
#include "mb_test.h"

#include <string.h>

static mb_device dev(const char *name)
{
    mb_device d;
    mb_err e;
    memset(&d, 0, sizeof d);
    if (mb_device_find(name, &d, &e)) fprintf(stderr, "%s\n", e.msg);
    return d;
}

static mb_attn_est est(const mb_device *d, const mb_attn *a)
{
    mb_attn_est e;
    mb_err err;
    memset(&e, 0, sizeof e);
    int rc = mb_attn_estimate(a, d, &e, &err);
    if (rc) fprintf(stderr, "attention: %s\n", err.msg);
    CHECK(rc == MB_OK);
    return e;
}

static double sum(const mb_attn_plan *p, int what)
{
    double s = 0;
    for (int i = 0; i < p->n_kernels; i++)
        s += what == 0 ? p->k[i].exps : p->k[i].dram_read_bytes + p->k[i].dram_write_bytes;
    return s;
}

static const mb_attn_kernel *kernel(const mb_attn_plan *p, const char *name, int backward)
{
    for (int i = 0; i < p->n_kernels; i++)
        if (!strcmp(p->k[i].name, name) && p->k[i].backward == backward) return &p->k[i];
    fprintf(stderr, "no kernel '%s' (backward %d)\n", name, backward);
    return NULL;
}

/* the recompute plan at batch 1, heads 2, seq 1024, head_dim 64, bf16 */
static void recompute_by_hand(const mb_device *h100, int causal)
{
    const mb_attn a = {1, 2, 1024, 64, MB_BF16, causal, 1};
    const mb_attn_est e = est(h100, &a);
    const mb_attn_plan *s = &e.plan[MB_ATTN_STANDARD], *r = &e.plan[MB_ATTN_RECOMPUTE];
    const double nn = 2.0 * 1024 * 1024 * 2, nn1 = 1024.0 * 1024 * 2, lse = 2.0 * 1024 * 4;
    const double qk_bytes = 2 * (2.0 * 1024 * 64 * 2) + nn; /* q and k read, S written */
    CHECK(r->id == MB_ATTN_RECOMPUTE && !strcmp(mb_attn_plan_name(r->id), "recompute"));
    /* standard's kernels, and the backward's bmm q@k^T, mul scale, [add mask], P from lse */
    CHECK_EQ_I64(r->n_kernels, s->n_kernels + (causal ? 4 : 3));
    const mb_attn_kernel *qk = kernel(r, "bmm q@k^T", 1), *pl = kernel(r, "P from lse", 1);
    const mb_attn_kernel *sm = kernel(r, "softmax+lse", 0), *sc = kernel(r, "mul scale", 1);
    CHECK(qk && pl && sm && sc);
    if (!qk || !pl || !sm || !sc) return;
    CHECK_NEAR(qk->dram_read_bytes + qk->dram_write_bytes, qk_bytes, 1e-12);
    CHECK_NEAR(qk->flops, 2.0 * 2 * 1024 * 1024 * 64, 1e-12);
    CHECK_NEAR(sc->dram_read_bytes, nn, 1e-12);
    CHECK_NEAR(pl->dram_read_bytes, nn + lse, 1e-12);
    CHECK_NEAR(pl->dram_write_bytes, nn, 1e-12);
    CHECK_NEAR(pl->exps, 2.0 * 1024 * 1024, 1e-12);
    CHECK_NEAR(sm->dram_write_bytes, nn + lse, 1e-12); /* P and the f32 LSE */
    /* over the standard plan: QK^T again, an exp an entry again, and the
     * traffic of S (written, read and written scaled, masked), P (read to
     * make it, written) and the LSE (written in the forward, read) */
    CHECK_NEAR(r->flops - s->flops, 2.0 * 2 * 1024 * 1024 * 64, 1e-12);
    CHECK_NEAR(sum(r, 0) - sum(s, 0), 2.0 * 1024 * 1024, 1e-12);
    double extra = qk_bytes + 2 * nn /* mul scale */ + 2 * nn + lse /* P from lse */ + lse /* softmax's LSE */;
    if (causal) extra += 2 * nn + nn1; /* add mask: S in and out, the mask once (3 N^2 s fits the L2) */
    CHECK_NEAR((r->dram_read_bytes + r->dram_write_bytes) - (s->dram_read_bytes + s->dram_write_bytes), extra, 1e-12);
    CHECK_NEAR(r->nn_write_bytes - s->nn_write_bytes, (causal ? 4 : 3) * nn, 1e-12);
    /* each kernel is timed as the standard's are: the extra time is theirs */
    double extra_s = 0;
    for (int i = 0; i < r->n_kernels; i++) extra_s += r->k[i].time_s;
    for (int i = 0; i < s->n_kernels; i++) extra_s -= s->k[i].time_s;
    CHECK_NEAR(r->time_s - s->time_s, extra_s, 1e-9);
    CHECK(r->time_s > s->time_s);
    /* kept: P against the LSE against O and the LSE */
    CHECK_NEAR(s->saved_bytes, nn, 1e-12);
    CHECK_NEAR(r->saved_bytes, lse, 1e-12);
    CHECK_NEAR(e.plan[MB_ATTN_FLASH].saved_bytes, 2 * (1024.0 * 64 * 2) + lse, 1e-12);
    CHECK_NEAR(r->peak_bytes - s->peak_bytes, lse, 1e-12);
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
        mb_attn_tensor t[MB_ATTN_MAX_KEPT];
        int n = mb_attn_kept(&a, (mb_attn_plan_id)p, t);
        double b = 0;
        for (int j = 0; j < n; j++) b += t[j].bytes;
        CHECK_NEAR(b, e.plan[p].saved_bytes, 1e-12);
    }
}

static void kept_names(void)
{
    const mb_attn a = {1, 32, 8192, 128, MB_BF16, 0, 1};
    mb_attn_tensor t[MB_ATTN_MAX_KEPT];
    CHECK_EQ_I64(mb_attn_kept(&a, MB_ATTN_STANDARD, t), 1);
    CHECK(!strcmp(t[0].name, "P") && !strcmp(t[0].dtype, "bf16"));
    CHECK_NEAR(t[0].bytes, 32.0 * 8192 * 8192 * 2, 1e-12);
    CHECK_EQ_I64(mb_attn_kept(&a, MB_ATTN_RECOMPUTE, t), 1);
    CHECK(!strcmp(t[0].name, "lse") && !strcmp(t[0].dtype, "f32"));
    CHECK_NEAR(t[0].bytes, 32.0 * 8192 * 4, 1e-12);
    CHECK_EQ_I64(mb_attn_kept(&a, MB_ATTN_FLASH, t), 2);
    CHECK(!strcmp(t[0].name, "o") && !strcmp(t[1].name, "lse"));
    CHECK_NEAR(t[0].bytes, 32.0 * 8192 * 128 * 2, 1e-12);
}

static void choice_flips(const mb_device *h100, const mb_device *a100)
{
    /* Llama's head, seq 8192: flash is the fastest; unfused, storing P */
    const mb_attn a = {1, 32, 8192, 128, MB_BF16, 0, 1};
    const mb_attn_est e = est(h100, &a);
    const double P = 32.0 * 8192 * 8192 * 2, lse = 32.0 * 8192 * 4;
    mb_attn_choice c;
    mb_attn_choose(&e, h100, 0, MB_ATTN_ALL_PLANS, &c);
    CHECK_EQ_I64(c.plan, MB_ATTN_FLASH);
    mb_attn_choose(&e, h100, 0, MB_ATTN_UNFUSED_PLANS, &c);
    CHECK_EQ_I64(c.plan, MB_ATTN_STANDARD);
    /* a budget of P's bytes keeps standard; a byte less forces recompute */
    mb_attn_choose(&e, h100, P, MB_ATTN_UNFUSED_PLANS, &c);
    CHECK_EQ_I64(c.plan, MB_ATTN_STANDARD);
    mb_attn_choose(&e, h100, P - 1, MB_ATTN_UNFUSED_PLANS, &c);
    CHECK_EQ_I64(c.plan, MB_ATTN_RECOMPUTE);
    CHECK_EQ_I64(c.fastest, MB_ATTN_STANDARD);
    CHECK(c.fit[MB_ATTN_STANDARD] == MB_ATTN_OVER_BUDGET && c.fit[MB_ATTN_RECOMPUTE] == MB_ATTN_FITS);
    /* between the LSE and O + LSE, recompute of all three; below the LSE none */
    mb_attn_choose(&e, h100, 2 * lse, MB_ATTN_ALL_PLANS, &c);
    CHECK_EQ_I64(c.plan, MB_ATTN_RECOMPUTE);
    CHECK(c.fit[MB_ATTN_FLASH] == MB_ATTN_OVER_BUDGET);
    mb_attn_choose(&e, h100, lse - 1, MB_ATTN_ALL_PLANS, &c);
    CHECK_EQ_I64(c.plan, -1);
    CHECK_EQ_I64(c.fastest, MB_ATTN_FLASH);

    /* a small shape where the standard plan is the faster (flash's
     * exponentials at the SFU rate): the budget flips the choice to flash */
    const mb_attn s = {1, 2, 1024, 64, MB_BF16, 1, 1}; /* causal */
    const mb_attn_est es = est(h100, &s);
    CHECK(es.plan[MB_ATTN_STANDARD].time_s < es.plan[MB_ATTN_FLASH].time_s);
    CHECK(es.plan[MB_ATTN_FLASH].time_s < es.plan[MB_ATTN_RECOMPUTE].time_s);
    mb_attn_choose(&es, h100, 0, MB_ATTN_ALL_PLANS, &c);
    CHECK_EQ_I64(c.plan, MB_ATTN_STANDARD);
    mb_attn_choose(&es, h100, 1e6, MB_ATTN_ALL_PLANS, &c); /* P is 4.19 MB */
    CHECK_EQ_I64(c.plan, MB_ATTN_FLASH);

    /* the device's memory: seq 32768 needs three 68.7 GB seq x seq tensors */
    const mb_attn l = {1, 32, 32768, 128, MB_BF16, 0, 1};
    const mb_attn_est el = est(a100, &l);
    mb_attn_choose(&el, a100, 0, MB_ATTN_UNFUSED_PLANS, &c);
    CHECK_EQ_I64(c.plan, -1);
    CHECK(c.fit[MB_ATTN_STANDARD] == MB_ATTN_OVER_MEMORY && c.fit[MB_ATTN_RECOMPUTE] == MB_ATTN_OVER_MEMORY);
    mb_attn_choose(&el, a100, 0, MB_ATTN_ALL_PLANS, &c);
    CHECK_EQ_I64(c.plan, MB_ATTN_FLASH);

    /* the frontier: recompute then flash; unfused, recompute then standard */
    int ord[MB_ATTN_N_PLANS];
    CHECK_EQ_I64(mb_attn_frontier(&e, MB_ATTN_ALL_PLANS, ord), 2);
    CHECK(ord[0] == MB_ATTN_RECOMPUTE && ord[1] == MB_ATTN_FLASH);
    CHECK_EQ_I64(mb_attn_frontier(&e, MB_ATTN_UNFUSED_PLANS, ord), 2);
    CHECK(ord[0] == MB_ATTN_RECOMPUTE && ord[1] == MB_ATTN_STANDARD);
}

static double tpt(const mb_device *d, mb_attn a, mb_attn_plan_id p, int64_t n)
{
    a.seq = n;
    mb_attn_est e = est(d, &a);
    return e.plan[p].time_s / (double)n;
}

static void doubling(const mb_device *h100)
{
    const mb_attn a = {1, 32, 0, 128, MB_BF16, 0, 1};
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
        mb_attn_doubling db;
        mb_err err;
        CHECK(mb_attn_doubling_seq(&a, h100, (mb_attn_plan_id)p, 16, (int64_t)1 << 22, &db, &err) == MB_OK);
        CHECK(db.best_seq >= 16 && db.double_seq > db.best_seq);
        CHECK_NEAR(tpt(h100, a, (mb_attn_plan_id)p, db.best_seq), db.best_s_per_token, 1e-12);
        /* at the doubling seq twice the best; a token before it, not yet */
        CHECK(tpt(h100, a, (mb_attn_plan_id)p, db.double_seq) >= 2 * db.best_s_per_token);
        CHECK(tpt(h100, a, (mb_attn_plan_id)p, db.double_seq - 1) < 2 * db.best_s_per_token);
        /* the best is least over the powers of two */
        for (int64_t n = 16; n <= ((int64_t)1 << 22); n *= 2)
            CHECK(tpt(h100, a, (mb_attn_plan_id)p, n) >= db.best_s_per_token * (1 - 1e-12));
    }
    mb_attn_doubling db;
    mb_err err;
    CHECK(mb_attn_doubling_seq(&a, h100, MB_ATTN_FLASH, 8, 1024, &db, &err) == MB_EINPUT);
    /* nowhere within a short range: 0 */
    CHECK(mb_attn_doubling_seq(&a, h100, MB_ATTN_STANDARD, 16, 64, &db, &err) == MB_OK);
    CHECK_EQ_I64(db.double_seq, 0);
}

int main(void)
{
    const mb_device h100 = dev("h100-sxm"), a100 = dev("a100-40gb");
    CHECK(!strcmp(h100.name, "h100-sxm") && !strcmp(a100.name, "a100-40gb"));
    recompute_by_hand(&h100, 0);
    recompute_by_hand(&h100, 1);
    kept_names();
    choice_flips(&h100, &a100);
    doubling(&h100);
    return mb_test_done();
}
