/* ops.c — calibrate's op-rate probes: each op of op_table.h through the
 * executors' tile primitive, a sin and a cos together through the sincos
 * primitive, one executor pass of a copy plan, and each op inside compiled
 * kernels (chains). Each is a probe function figure.c times.
 * Does not decide what a rate means for the model (the spec does). */
#include "cal_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mb_cal_op_rate(void *p)
{
    mb_cal_op_ctx *c = p;
    c->elements = mb_meas_op_rate_run(c->op, c->rounds);
}

/* ---- tile probes: sin and cos together, softmax's exp against the exp op ---- */

enum { TILE_SINCOS, TILE_EXP, TILE_EXP_NONPOS };

typedef struct tile_ctx {
    int kind;
    int64_t rounds;
    double elements;
    float sum;
} tile_ctx;

/* rounds passes of the kind's primitive over one L1-resident tile a thread:
 * sin and cos of [0.5, 2], or exp of [-20, 0] (softmax's exp(x - max)). */
static void tile_probe(void *p)
{
    tile_ctx *c = p;
    const int64_t rounds = c->rounds;
    const int kind = c->kind;
    double elements = 0.0;
    float sum = 0.0f;
#pragma omp parallel reduction(+ : elements, sum)
    {
        float a[MB_KERN_TILE] __attribute__((aligned(64)));
        float o[MB_KERN_TILE] __attribute__((aligned(64)));
        float o2[MB_KERN_TILE] __attribute__((aligned(64)));
        for (int i = 0; i < MB_KERN_TILE; i++) {
            const float u = (float)((i * 7919) % 1000) / 1000.0f;
            a[i] = kind == TILE_SINCOS ? 0.5f + 1.5f * u : -20.0f * u;
        }
        for (int64_t k = 0; k < rounds; k++) {
            const int64_t at = k & (MB_KERN_TILE - 1);
            if (kind == TILE_SINCOS) mb_kern_sincos_apply(a, o, o2, MB_KERN_TILE), sum += o2[at];
            else if (kind == TILE_EXP_NONPOS) mb_kern_exp_nonpos_apply(a, o, MB_KERN_TILE);
            else mb_kern_op_apply(MB_OP_EXP, a, 0, NULL, 0, o, MB_KERN_TILE);
            sum += o[at];
        }
        elements += (double)rounds * MB_KERN_TILE;
    }
    c->elements = elements;
    c->sum = sum;
}

/* The median over interleaved samples of each kind in kinds[0..n) (n <= 2):
 * elements/s in 1e9 of kinds[0] (n == 1), or kinds[1]'s rate over kinds[0]'s
 * (n == 2); 0 for a sample that failed. */
static double tile_median(const int *kinds, int n, int quick)
{
    enum { REPS = 7 };
    double v[REPS];
    int reps = quick ? 3 : REPS;
    tile_ctx c[2];
    mb_meas_sampler s[2];
    for (int i = 0; i < n; i++) {
        c[i] = (tile_ctx){kinds[i], quick ? 20 : 200, 0, 0};
        s[i] = (mb_meas_sampler){tile_probe, &c[i], NULL, NULL, 1, mb_kern_threads(), CAL_RETRIES};
        tile_probe(&c[i]); /* warm-up */
    }
    for (int r = 0; r < reps; r++) {
        double dt[2] = {0, 0};
        int ok = 1;
        for (int i = 0; i < n; i++) {
            dt[i] = mb_meas_sample_s(&s[i], NULL, NULL);
            ok &= dt[i] > 0 && c[i].sum == c[i].sum;
        }
        v[r] = !ok ? 0.0 : n == 1 ? c[0].elements / dt[0] / 1e9 : dt[0] / dt[1];
    }
    mb_meas_stats st;
    mb_meas_stats_compute(v, reps, &st);
    return st.median_s;
}

double mb_cal_sincos_geps(int quick)
{
    const int kinds[1] = {TILE_SINCOS};
    return tile_median(kinds, 1, quick);
}

double mb_cal_exp_nonpos_gain(int quick)
{
    const int kinds[2] = {TILE_EXP, TILE_EXP_NONPOS};
    return tile_median(kinds, 2, quick);
}

/* ---- one executor pass -------------------------------------------------------- */

/* One executor pass of a plan: fork/join and per-pass setup (for a copy plan
 * over one tile per thread: the copy itself, a few ns per KiB in L1/L2). */
void mb_cal_pass(void *p)
{
    mb_cal_pass_ctx *c = p;
    mb_err e;
    (void)mb_kern_run_plan(&c->t, MB_KERN_EXEC_AUTO, &e);
}

void mb_cal_pass_free(mb_cal_pass_ctx *c)
{
    if (c->have_t) mb_kern_tensors_free(&c->t);
    mb_plan_free(c->p);
    mb_graph_free(c->g);
    memset(c, 0, sizeof *c);
}

int mb_cal_pass_init(mb_cal_pass_ctx *c, const char *expr, mb_plan_kind k, int64_t n, mb_err *err)
{
    memset(c, 0, sizeof *c);
    int rc = mb_parse_expr(expr, MB_F32, &c->g, err);
    if (!rc) rc = mb_plan_build(c->g, k, &c->p, err);
    if (!rc && (rc = mb_kern_tensors_alloc(c->p, n, 0, &c->t, err)) == MB_OK) c->have_t = 1;
    if (!rc) rc = mb_kern_run_plan(&c->t, MB_KERN_EXEC_AUTO, err);
    if (rc) mb_cal_pass_free(c);
    return rc;
}

/* ---- op rates inside compiled kernels ----------------------------------------- */

/* A compiled kernel keeps every value in a register: an op costs less than
 * through the interpreter's tile primitive, which loads and stores a tile
 * per op. Each op is timed as a chain of CHAIN_DEEP of it in one fused kernel
 * (every result the next one's operand: nothing in common), against a chain
 * of CHAIN_SHALLOW adds, which pays the same pass, load and store; L2-resident
 * (CHAIN_N elements a thread). The ops are op_table.h's rows with a chain
 * (probe_pre, probe_post). Chains the executor would not compile (no
 * compiler, no vector ISA) are left out, and the model keeps op_geps. */

int mb_cal_chain_expr(mb_op op, int depth, char *buf, size_t size)
{
    const mb_op_info *in = mb_op_info_of(op);
    if ((int)op <= 0 || op >= MB_OP_COUNT || !in->probe_pre || !size) return 0;
    size_t len = (size_t)snprintf(buf, size, "y = ");
    for (int k = 0; k < depth && len < size; k++) len += (size_t)snprintf(buf + len, size - len, "%s", in->probe_pre);
    if (len < size) len += (size_t)snprintf(buf + len, size - len, "x");
    for (int k = 0; k < depth && len < size; k++) len += (size_t)snprintf(buf + len, size - len, "%s", in->probe_post);
    return len < size;
}

/* depth statements a_k = sin(a_{k-1}) + cos(a_{k-1}), the last one y. */
static void sincos_chain_expr(int depth, char *buf, size_t size)
{
    size_t len = 0;
    char prev[16] = "x", cur[16];
    buf[0] = '\0';
    for (int k = 1; k <= depth && len < size; k++) {
        if (k == depth) snprintf(cur, sizeof cur, "y");
        else snprintf(cur, sizeof cur, "a%d", k);
        len += (size_t)snprintf(buf + len, size - len, "%s = sin(%s) + cos(%s)\n", cur, prev, prev);
        memcpy(prev, cur, sizeof prev);
    }
}

/* chains[i]: built and compiled, with the ops it should evaluate (the parser
 * folded nothing); else emptied. */
static int chain_ready(mb_cal_pass_ctx *c, const char *expr, int want_ops, int want_sincos, int64_t n)
{
    mb_err e;
    if (mb_cal_pass_init(c, expr, MB_PLAN_FUSED, n, &e)) return 0;
    mb_kern_eval_info info;
    if (c->p->n_kernels != 1 || mb_kern_kernel_info(&c->t, 0, &info, &e) || !info.compiled ||
        info.evaluated != want_ops || info.sincos != want_sincos) {
        mb_cal_pass_free(c);
        return 0;
    }
    return 1;
}

int mb_cal_chains_init(mb_cal_chains *ch, int64_t n)
{
    memset(ch, 0, sizeof *ch);
    ch->op[ch->n++] = MB_OP_ADD; /* the shallow chain */
    for (int op = 1; op < MB_OP_COUNT; op++)
        if (mb_op_info_of((mb_op)op)->probe_pre) ch->op[ch->n++] = (mb_op)op;
    ch->op[ch->n++] = MB_OP_COUNT; /* sincos */
    for (int i = 0; i < ch->n; i++) {
        char expr[1024];
        if (i > 0 && !ch->c[0].have_t) break;
        int sincos = ch->op[i] == MB_OP_COUNT;
        int depth = i == 0 ? CHAIN_SHALLOW : CHAIN_DEEP;
        if (sincos) sincos_chain_expr(depth, expr, sizeof expr);
        else if (!mb_cal_chain_expr(ch->op[i], depth, expr, sizeof expr)) continue;
        /* sincos chains add too */
        ch->ready += chain_ready(&ch->c[i], expr, sincos ? 2 * depth : depth, sincos ? depth : 0, n);
    }
    return ch->ready;
}

void mb_cal_chains_free(mb_cal_chains *ch)
{
    for (int i = 0; i < ch->n; i++) mb_cal_pass_free(&ch->c[i]);
}

/* Seconds per element and link of chain i in round r (t: that round's
 * samples), from the add chain less the shallow one (the add) and the
 * shallow time less its adds (what every chain pays besides its ops); 0 when
 * the round's add does not come out positive. */
static double link_s(const mb_cal_chains *ch, const double *t, int i, int64_t n)
{
    double add_s = (t[1] - t[0]) / (CHAIN_DEEP - CHAIN_SHALLOW) / (double)n; /* per element */
    if (!(add_s > 0)) return 0;
    double base_s = t[0] - CHAIN_SHALLOW * add_s * (double)n;
    if (base_s < 0) base_s = 0;
    double op_s = (t[i] - base_s) / (double)n / CHAIN_DEEP;
    if (ch->op[i] == MB_OP_COUNT) op_s -= add_s; /* the sincos links add */
    return op_s;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Each op's time a link, round by round from that round's samples of the
 * chains (a round takes them minutes apart at most seconds: a shared host's
 * drift between rounds cancels in the difference), and the median over the
 * rounds, a round that gave no positive time counting as the fastest. With
 * the medians of the chains differenced instead, the cheap ops (add, sub,
 * mul: a few tenths of a ns a link, within the chains' spread) came out at
 * 800-940 G/s on a 2-vCPU EPYC guest whose FMA peak issues 113 G lanes/s. A
 * rate that does not come out positive and finite stays 0: when the deep
 * add chain is no slower than the shallow one (timing noise), all do, and
 * mb_cal_implausible says so, as it does of a rate beyond the FMA issue's. */
void mb_cal_compiled_rates(const mb_cal_chains *ch, const mb_cal_figure *figs, int64_t n,
                                mb_cal_result *out)
{
    memset(out->op_compiled_geps, 0, sizeof out->op_compiled_geps);
    out->sincos_compiled_geps = 0;
    out->compiled_ops = 0;
    if (ch->ready < 2 || !ch->c[0].have_t || !ch->c[1].have_t) return;
    const mb_cal_figure *fig[MB_CAL_MAX_CHAINS] = {0};
    int rounds = CAL_ROUNDS;
    for (int i = 0, f = 0; i < ch->n; i++)
        if (ch->c[i].have_t) {
            fig[i] = &figs[f++];
            if (fig[i]->ns < rounds) rounds = fig[i]->ns;
        }
    if (rounds < 1) return;
    for (int i = 1; i < ch->n; i++) {
        if (!fig[i]) continue;
        double op_s[CAL_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            double t[MB_CAL_MAX_CHAINS] = {0};
            for (int j = 0; j < ch->n; j++)
                if (fig[j]) t[j] = fig[j]->s[r];
            op_s[r] = link_s(ch, t, i, n);
            if (!(op_s[r] > 0) || !isfinite(op_s[r])) op_s[r] = 0;
        }
        qsort(op_s, (size_t)rounds, sizeof op_s[0], cmp_double);
        const double med = rounds % 2 ? op_s[rounds / 2] : 0.5 * (op_s[rounds / 2 - 1] + op_s[rounds / 2]);
        if (!(med > 0)) continue;
        if (ch->op[i] == MB_OP_COUNT) out->sincos_compiled_geps = 1e-9 / med;
        else out->op_compiled_geps[ch->op[i]] = 1e-9 / med, out->compiled_ops++;
    }
    /* neg has no chain (op_table.h): -(-x) is x exactly and gcc -O3 makes a
     * chain of 12 negs a memcpy, whose "rate" was noise (150-3661 G/s on a
     * 2-vCPU Xeon guest; above twice the FMA issue the calibration was
     * refused). Compiled, a neg is one sign-bit XOR on a register or folds
     * into the op beside it: the add's rate, as relu's max takes it. */
    out->op_compiled_geps[MB_OP_NEG] = out->op_compiled_geps[MB_OP_ADD];
}
