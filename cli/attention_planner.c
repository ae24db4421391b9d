/* attention_planner.c — `membound attention --plan`, `--mem-budget` and
 * `--seq-sweep`: the backward's choice among store P, recompute and
 * FlashAttention with what each keeps, and the sweep across devices of the
 * longest sequence and where time per token doubles. Prints only: the
 * choice, the frontier and the doubling are model/attn_plan.c's. */
#include "attention_out.h"
#include "cli_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mb_cli_attn_parse_bytes(const char *opt, const char *s, double *out)
{
    int64_t v;
    mb_err e;
    if (!mb_size_parse(s, &v, &e)) { /* 2^30, 1G, 1Gi: as --n and --dims read sizes */
        *out = (double)v;
        return 0;
    }
    errno = 0;
    char *end;
    double x = strtod(s, &end);
    if (end == s || errno || !isfinite(x) || x <= 0)
        return mb_cli_fail(2, "%s '%s': expected bytes (1073741824, 2^30, 1GiB, 40GB, 512MB)", opt, s);
    static const struct { const char *unit; double scale; } units[] = {
        {"B", 1},          {"kB", 1e3},      {"KB", 1e3},      {"MB", 1e6},        {"GB", 1e9},
        {"TB", 1e12},      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"TiB", 1099511627776.0}};
    while (isspace((unsigned char)*end)) end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            *out = x * units[i].scale;
            return 0;
        }
    return mb_cli_fail(2, "%s '%s': unknown unit '%s' (B, kB, MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB)",
                       opt, s, end);
}

static const char *fit_name(mb_attn_fit f)
{
    return f == MB_ATTN_OVER_MEMORY ? "over memory" : f == MB_ATTN_OVER_BUDGET ? "over budget" : "fits";
}

static const char *plan_or_none(int p) { return p < 0 ? "none" : mb_attn_plan_name((mb_attn_plan_id)p); }

/* "flash: the least time of the plans that fit; ..." into buf */
static void reason(const mb_attn_est *e, const mb_attn_choice *c, double budget, char *buf, size_t size)
{
    char t1[32], t2[32], b1[32], b2[32];
    if (c->plan < 0) {
        size_t n = (size_t)snprintf(buf, size, "none: no plan of the choice fits (");
        int first = 1;
        for (int p = 0; p < MB_ATTN_N_PLANS && n < size; p++) {
            if (c->fit[p] == MB_ATTN_FITS) continue;
            n += (size_t)snprintf(buf + n, size - n, "%s%s %s", first ? "" : ", ", mb_attn_plan_name((mb_attn_plan_id)p),
                                  fit_name(c->fit[p]));
            first = 0;
        }
        if (n < size) snprintf(buf + n, size - n, ")");
        return;
    }
    const mb_attn_plan *ch = &e->plan[c->plan];
    if (c->plan == c->fastest) {
        snprintf(buf, size, "%s: the least time of the plans (%s), and it fits", mb_attn_plan_name(ch->id),
                 mb_cli_fmt_time(ch->time_s, t1, sizeof t1));
        return;
    }
    const mb_attn_plan *f = &e->plan[c->fastest];
    if (c->fit[c->fastest] == MB_ATTN_OVER_BUDGET)
        snprintf(buf, size, "%s: %s takes less time (%s against %s) but keeps %s for backward, over the budget "
                 "of %s", mb_attn_plan_name(ch->id), mb_attn_plan_name(f->id), mb_cli_fmt_time(f->time_s, t1, sizeof t1),
                 mb_cli_fmt_time(ch->time_s, t2, sizeof t2), mb_cli_fmt_bytes(f->saved_bytes, b1, sizeof b1),
                 mb_cli_fmt_bytes(budget, b2, sizeof b2));
    else
        snprintf(buf, size, "%s: %s takes less time (%s against %s) but its peak, %s, is over the device's "
                 "memory", mb_attn_plan_name(ch->id), mb_attn_plan_name(f->id), mb_cli_fmt_time(f->time_s, t1, sizeof t1),
                 mb_cli_fmt_time(ch->time_s, t2, sizeof t2), mb_cli_fmt_bytes(f->peak_bytes, b1, sizeof b1));
}

static void frontier_line(const mb_attn_est *e, unsigned mask, const char *what)
{
    int order[MB_ATTN_N_PLANS], n = mb_attn_frontier(e, mask, order);
    char b[32], t[32];
    printf("%s", what);
    for (int i = 0; i < n; i++) {
        const mb_attn_plan *p = &e->plan[order[i]];
        printf("%s%s (%s, %s)", i ? " -> " : " ", mb_attn_plan_name(p->id), mb_cli_fmt_bytes(p->saved_bytes, b, sizeof b),
               mb_cli_fmt_time(p->time_s, t, sizeof t));
    }
    printf("\n");
}

void mb_cli_attn_plan_print(const mb_attn *a, const mb_device *d, const mb_attn_est *e, double budget_bytes)
{
    static const int order[MB_ATTN_N_PLANS] = {MB_ATTN_STANDARD, MB_ATTN_RECOMPUTE, MB_ATTN_FLASH};
    char b1[32], b2[32], b3[32], b4[32], t1[32];
    printf("planner on %s: the backward's choice by modelled time, forward and backward; budget for the\n"
           "memory kept from forward to backward: %s\n\n",
           d->name, budget_bytes > 0 ? mb_cli_fmt_bytes(budget_bytes, b1, sizeof b1) : "none");
    printf("%-10s %10s %11s %10s %11s %11s %10s  %s\n", "plan", "time", "DRAM", "GFLOP", "saved", "peak", "max N",
           "fits");
    mb_attn_choice c;
    mb_attn_choose(e, d, budget_bytes, MB_ATTN_ALL_PLANS, &c);
    for (int i = 0; i < MB_ATTN_N_PLANS; i++) {
        const mb_attn_plan *p = &e->plan[order[i]];
        char n1[32];
        if (p->max_seq > 0) snprintf(n1, sizeof n1, "%lld", (long long)p->max_seq);
        else snprintf(n1, sizeof n1, "-");
        printf("%-10s %10s %11s %10.4g %11s %11s %10s  %s\n", mb_attn_plan_name(p->id),
               mb_cli_fmt_time(p->time_s, t1, sizeof t1),
               mb_cli_fmt_bytes(p->dram_read_bytes + p->dram_write_bytes, b1, sizeof b1), p->flops / 1e9,
               mb_cli_fmt_bytes(p->saved_bytes, b2, sizeof b2), mb_cli_fmt_bytes(p->peak_bytes, b3, sizeof b3), n1,
               fit_name(c.fit[p->id]));
    }
    printf("\nkept for backward beyond q, k and v (every plan keeps those):\n");
    for (int i = 0; i < MB_ATTN_N_PLANS; i++) {
        mb_attn_tensor t[MB_ATTN_MAX_KEPT];
        int n = mb_attn_kept(a, (mb_attn_plan_id)order[i], t);
        printf("  %-10s", mb_attn_plan_name((mb_attn_plan_id)order[i]));
        for (int j = 0; j < n; j++)
            printf("%s%s %s %s, %s", j ? "; " : " ", t[j].name, t[j].shape, t[j].dtype,
                   mb_cli_fmt_bytes(t[j].bytes, b1, sizeof b1));
        printf("\n");
    }
    const mb_attn_plan *s = &e->plan[MB_ATTN_STANDARD], *r = &e->plan[MB_ATTN_RECOMPUTE];
    double exps_s = 0, exps_r = 0;
    for (int i = 0; i < s->n_kernels; i++) exps_s += s->k[i].exps;
    for (int i = 0; i < r->n_kernels; i++) exps_r += r->k[i].exps;
    const double dt = r->time_s - s->time_s;
    printf("\nrecompute against storing P: %+.4g GFLOP (QK^T again), %+.4g G exps, %s more DRAM traffic\n"
           "(S and P again), %s%s (%+.1f%%), for %s less kept\n",
           (r->flops - s->flops) / 1e9, (exps_r - exps_s) / 1e9,
           mb_cli_fmt_bytes(r->dram_read_bytes + r->dram_write_bytes - s->dram_read_bytes - s->dram_write_bytes, b1,
                            sizeof b1),
           dt < 0 ? "-" : "+", mb_cli_fmt_time(fabs(dt), t1, sizeof t1), 100 * dt / s->time_s,
           mb_cli_fmt_bytes(s->saved_bytes - r->saved_bytes, b4, sizeof b4));
    frontier_line(e, MB_ATTN_ALL_PLANS, "frontier (least time within each budget of kept memory):");
    frontier_line(e, MB_ATTN_UNFUSED_PLANS, "  unfused kernels only (no FlashAttention):");
    mb_attn_choice all, unf;
    char why[512];
    mb_attn_choose(e, d, budget_bytes, MB_ATTN_ALL_PLANS, &all);
    mb_attn_choose(e, d, budget_bytes, MB_ATTN_UNFUSED_PLANS, &unf);
    reason(e, &all, budget_bytes, why, sizeof why);
    printf("\nchoice: %s\n", why);
    reason(e, &unf, budget_bytes, why, sizeof why);
    printf("unfused kernels only: %s\n\n", why);
}

void mb_cli_attn_plan_header(double budget_bytes)
{
    char b[32];
    printf("\nplanner (forward and backward, by modelled time; budget for kept memory: %s)\n",
           budget_bytes > 0 ? mb_cli_fmt_bytes(budget_bytes, b, sizeof b) : "none");
    printf("%-16s %10s %10s %10s %-9s %-9s\n", "device", "standard", "recompute", "flash", "choice", "unfused");
}

void mb_cli_attn_plan_row(const mb_device *d, const mb_attn_est *e, double budget_bytes)
{
    mb_attn_choice all, unf;
    mb_attn_choose(e, d, budget_bytes, MB_ATTN_ALL_PLANS, &all);
    mb_attn_choose(e, d, budget_bytes, MB_ATTN_UNFUSED_PLANS, &unf);
    char t1[32], t2[32], t3[32];
    printf("%-16s %10s %10s %10s %-9s %-9s\n", d->name, mb_cli_fmt_time(e->plan[MB_ATTN_STANDARD].time_s, t1, sizeof t1),
           mb_cli_fmt_time(e->plan[MB_ATTN_RECOMPUTE].time_s, t2, sizeof t2),
           mb_cli_fmt_time(e->plan[MB_ATTN_FLASH].time_s, t3, sizeof t3), plan_or_none(all.plan),
           plan_or_none(unf.plan));
}

static json_t *frontier_json(const mb_attn_est *e, unsigned mask)
{
    int order[MB_ATTN_N_PLANS], n = mb_attn_frontier(e, mask, order);
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(arr, json_string(mb_attn_plan_name((mb_attn_plan_id)order[i])));
    return arr;
}

static json_t *choice_json(const mb_attn_est *e, const mb_attn_choice *c, double budget)
{
    char why[512];
    reason(e, c, budget, why, sizeof why);
    return json_pack("{s:o, s:s, s:s}", "plan", c->plan < 0 ? json_null() : json_string(plan_or_none(c->plan)),
                     "fastest", plan_or_none(c->fastest), "why", why);
}

json_t *mb_cli_attn_plan_json(const mb_attn *a, const mb_device *d, const mb_attn_est *e, double budget_bytes)
{
    mb_attn_choice all, unf;
    mb_attn_choose(e, d, budget_bytes, MB_ATTN_ALL_PLANS, &all);
    mb_attn_choose(e, d, budget_bytes, MB_ATTN_UNFUSED_PLANS, &unf);
    json_t *plans = json_object();
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
        mb_attn_tensor t[MB_ATTN_MAX_KEPT];
        int n = mb_attn_kept(a, (mb_attn_plan_id)p, t);
        json_t *kept = json_array();
        for (int j = 0; j < n; j++)
            json_array_append_new(kept, json_pack("{s:s, s:s, s:s, s:f}", "name", t[j].name, "shape", t[j].shape,
                                                  "dtype", t[j].dtype, "bytes", t[j].bytes));
        const mb_attn_plan *pl = &e->plan[p];
        json_object_set_new(plans, mb_attn_plan_name((mb_attn_plan_id)p),
                            json_pack("{s:f, s:f, s:f, s:s, s:o}", "time_s", pl->time_s, "saved_bytes", pl->saved_bytes,
                                      "peak_bytes", pl->peak_bytes, "fit", fit_name(all.fit[p]), "kept", kept));
    }
    const mb_attn_plan *s = &e->plan[MB_ATTN_STANDARD], *r = &e->plan[MB_ATTN_RECOMPUTE];
    json_t *extra = json_pack("{s:f, s:f, s:f, s:f}", "flops", r->flops - s->flops, "dram_bytes",
                              r->dram_read_bytes + r->dram_write_bytes - s->dram_read_bytes - s->dram_write_bytes,
                              "time_s", r->time_s - s->time_s, "saved_bytes_less", s->saved_bytes - r->saved_bytes);
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "objective", "time", "budget_bytes",
                     budget_bytes > 0 ? json_real(budget_bytes) : json_null(), "plans", plans, "recompute_extra", extra,
                     "choice", choice_json(e, &all, budget_bytes), "unfused_choice", choice_json(e, &unf, budget_bytes),
                     "frontier", frontier_json(e, MB_ATTN_ALL_PLANS), "unfused_frontier",
                     frontier_json(e, MB_ATTN_UNFUSED_PLANS));
}

/* ---- --seq-sweep ------------------------------------------------------------ */

static const int sweep_order[MB_ATTN_N_PLANS] = {MB_ATTN_STANDARD, MB_ATTN_RECOMPUTE, MB_ATTN_FLASH};

typedef struct sweep_row {
    int64_t max_seq[MB_ATTN_N_PLANS];
    mb_attn_doubling dbl[MB_ATTN_N_PLANS];
} sweep_row;

static int sweep_device(const mb_attn *a, const mb_device *d, sweep_row *r, mb_err *err)
{
    /* within the model's 2^62 elements a seq x seq tensor */
    int64_t hi = MB_CLI_ATTN_SWEEP_HI;
    const double bh = (double)a->batch * (double)a->heads;
    while (hi > 2 * MB_CLI_ATTN_SWEEP_LO && bh * (double)hi * (double)hi > 4.611686018427388e18) hi /= 2;
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
        r->max_seq[p] = d->mem_gb > 0 ? mb_attn_max_seq(a, (mb_attn_plan_id)p, d->mem_gb * 1e9) : 0;
        int rc = mb_attn_doubling_seq(a, d, (mb_attn_plan_id)p, MB_CLI_ATTN_SWEEP_LO, hi, &r->dbl[p], err);
        if (rc) return rc;
    }
    return MB_OK;
}

static const char *sweep_definition =
    "time per token, t(seq) / seq (forward and backward, the model's), is least at best_seq; double_seq is the "
    "shortest longer seq where it is twice that: from there the seq^2 work costs each token as much again as "
    "everything else did at best";

int mb_cli_attn_sweep(const mb_attn *a0, const mb_device *dv, const int *ok, int nd, int json)
{
    mb_attn a = *a0;
    a.backward = 1;
    a.seq = MB_CLI_ATTN_SWEEP_LO;
    sweep_row *rows = calloc((size_t)nd, sizeof *rows);
    if (!rows) return mb_cli_fail(1, "out of memory");
    for (int i = 0; i < nd; i++) {
        mb_err e;
        if (ok[i] && sweep_device(&a, &dv[i], &rows[i], &e)) {
            free(rows);
            return mb_cli_fail_err(2, &e);
        }
    }
    if (json) {
        json_t *res = json_array();
        for (int i = 0; i < nd; i++) {
            if (!ok[i]) continue;
            json_t *o = json_pack("{s:s, s:o}", "device", dv[i].name, "mem_gb",
                                  dv[i].mem_gb > 0 ? json_real(dv[i].mem_gb) : json_null());
            for (int p = 0; p < MB_ATTN_N_PLANS; p++) {
                const mb_attn_doubling *db = &rows[i].dbl[p];
                json_object_set_new(
                    o, mb_attn_plan_name((mb_attn_plan_id)p),
                    json_pack("{s:o, s:I, s:f, s:o}", "max_seq",
                              rows[i].max_seq[p] > 0 ? json_integer((json_int_t)rows[i].max_seq[p]) : json_null(),
                              "best_seq", (json_int_t)db->best_seq, "best_s_per_token", db->best_s_per_token,
                              "double_seq", db->double_seq > 0 ? json_integer((json_int_t)db->double_seq) : json_null()));
            }
            json_array_append_new(res, o);
        }
        json_t *root = json_pack("{s:{s:I, s:I, s:I, s:s, s:b, s:b}, s:s, s:[I, I], s:o}", "attention", "batch",
                                 (json_int_t)a.batch, "heads", (json_int_t)a.heads, "head_dim", (json_int_t)a.head_dim,
                                 "dtype", mb_dtype_name(a.dtype), "causal", a.causal, "backward", 1, "doubling",
                                 sweep_definition, "seq_range", (json_int_t)MB_CLI_ATTN_SWEEP_LO,
                                 (json_int_t)MB_CLI_ATTN_SWEEP_HI, "results", res);
        char *txt = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
        puts(txt);
        free(txt);
        json_decref(root);
        free(rows);
        return 0;
    }
    printf("attention forward and backward, batch %lld, heads %lld, head_dim %lld, %s%s, across devices\n\n",
           (long long)a.batch, (long long)a.heads, (long long)a.head_dim, mb_dtype_name(a.dtype),
           a.causal ? ", causal" : "");
    printf("%-16s %6s | %-29s | %s\n", "", "", "longest seq that fits", "seq where time per token doubles (best seq)");
    printf("%-16s %6s | %9s %9s %9s | %14s %14s %14s\n", "device", "mem GB", "standard", "recompute", "flash",
           "standard", "recompute", "flash");
    for (int i = 0; i < nd; i++) {
        if (!ok[i]) continue;
        char mem[16], n[3][16], dbl[3][32];
        if (dv[i].mem_gb > 0) snprintf(mem, sizeof mem, "%.0f", dv[i].mem_gb);
        else snprintf(mem, sizeof mem, "-");
        for (int k = 0; k < MB_ATTN_N_PLANS; k++) {
            int p = sweep_order[k];
            const mb_attn_doubling *db = &rows[i].dbl[p];
            if (rows[i].max_seq[p] > 0) snprintf(n[k], sizeof n[k], "%lld", (long long)rows[i].max_seq[p]);
            else snprintf(n[k], sizeof n[k], "-");
            if (db->double_seq > 0)
                snprintf(dbl[k], sizeof dbl[k], "%lld (%lld)", (long long)db->double_seq, (long long)db->best_seq);
            else
                snprintf(dbl[k], sizeof dbl[k], "- (%lld)", (long long)db->best_seq);
        }
        printf("%-16s %6s | %9s %9s %9s | %14s %14s %14s\n", dv[i].name, mem, n[0], n[1], n[2], dbl[0], dbl[1], dbl[2]);
    }
    printf("\nlongest seq: the peak of forward and backward within mem_gb (standard and recompute: three\n"
           "seq x seq tensors live in the backward).\n"
           "doubling: time per token, t(seq) / seq (forward and backward, the model's), is least at the best\n"
           "seq; the doubling seq is the shortest longer seq where it is twice that: from there the seq^2\n"
           "work costs each token as much again as everything else did at best. Searched over seq\n"
           "%lld..%lld (less where a seq x seq tensor passes 2^62 elements) on a 2^(1/8) grid,\n"
           "bisected; '-': not within it.\n",
           (long long)MB_CLI_ATTN_SWEEP_LO, (long long)MB_CLI_ATTN_SWEEP_HI);
    free(rows);
    return 0;
}
