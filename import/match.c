/* match.c — launches to plan kernels, then to measurement rows. Launches
 * group by their "membound:VARIANT:PLAN:n=N:DTYPE" mark (NVTX range or
 * record_function; without marks, the whole file is one group of what the
 * user names). In a group, a launch whose name is no kernel of the plan, or
 * whose grid cannot cover n elements, is left out, one note per run of such
 * launches; the rest must be whole repetitions of the plan's kernel
 * sequence, each launch the op its position says (too few or too many is an
 * error, never forced). Repetitions after --warmup are the samples. Bytes
 * play no part in a match: they are compared with the model after it. Opens
 * and checks the file as text, but does not parse it (ncu.c, torch_trace.c)
 * nor write the rows (the CLI, through mb_imp_options.row, or the caller). */
#include "import_int.h"
#include "count_check.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void mb_imp_options_init(mb_imp_options *o)
{
    memset(o, 0, sizeof *o);
    o->format = MB_IMP_NCU;
    o->cache_all = 1;
    o->clock_base = 1;
    o->kernel_rows = 1;
}

typedef struct run {
    const mb_imp_options *o;
    const char *path;
    const imp_launches *L;
    mb_device dev;
    mb_imp_result *out;
    mb_graph **graphs;      /* one per distinct variant x dtype, owned */
    const char **exprs;
    int n_graphs;
    char unmarked_label[IMP_LABEL_MAX]; /* the group of a file without marks */
} run;

static void note(const run *r, const char *level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void note(const run *r, const char *level, const char *fmt, ...)
{
    if (!r->o->note) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->o->note(r->o->note_ctx, level, msg);
}

/* "path:LINE" or "path: event K" of launch x, into buf. */
static const char *where(const run *r, const imp_launch *x, char *buf, size_t size)
{
    if (x->event) snprintf(buf, size, "%s: trace event %d", r->path, x->event);
    else snprintf(buf, size, "%s:%d", r->path, x->line);
    return buf;
}

/* A group: its mark's fields and its launches' indices. */
typedef struct group {
    const char *label;      /* the mark (interned in the launches), or the run's unmarked label */
    char variant[MB_NAME_MAX];
    mb_plan_kind plan;
    mb_shape shape;         /* n=N (rank 1) or n=ROWSxCOLS (rank 2) */
    int64_t n;              /* its elements */
    mb_dtype dtype;
    int *idx, n_idx;
    int marked;             /* 1: from a mark (the user's options filter it) */
} group;

/* "membound:VARIANT:PLAN:n=N:DTYPE" into g (N as mb_shape_parse reads it:
 * 2^20, or 4096x1024 for a 2-D variant); MB_EINPUT (err) when it is not
 * one. VARIANT is a name, never a path: a mark selects a built-in variant
 * or the one --variant or --expr gives, and opens no file the data names. */
static int parse_label(const char *label, group *g, mb_err *err)
{
    char v[MB_NAME_MAX], pl[32], nn[40], dt[16];
    int end = 0;
    mb_err e;
    if (sscanf(label, "membound:%63[^:]:%31[^:]:n=%39[^:]:%15[^:]%n", v, pl, nn, dt, &end) != 4 ||
        label[end] || mb_plan_parse(pl, &g->plan) || mb_shape_parse(nn, &g->shape, &e) ||
        mb_dtype_parse(dt, &g->dtype))
        return mb_err_set(err, MB_EINPUT, "mark '%s': expected membound:VARIANT:PLAN:n=N:DTYPE (N as 2^20 or "
                          "ROWSxCOLS)", label);
    if (strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != strlen(v) || v[0] == '-')
        return mb_err_set(err, MB_EINPUT, "mark '%s': '%s' is no variant name: a mark selects a built-in variant "
                          "or the one --variant or --expr gives, never a file", label, v);
    g->n = mb_shape_elems(g->shape);
    snprintf(g->variant, sizeof g->variant, "%s", v);
    return MB_OK;
}

/* The graph of a group's variant at the group's rank (loaded once per
 * variant, dtype and rank): the user's --variant or --expr when given, else
 * the built-in the mark names (parse_label let no path through). */
static int graph_of(run *r, const group *gr, mb_graph **out, mb_err *err)
{
    const mb_imp_options *o = r->o;
    for (int i = 0; i < r->n_graphs; i++) {
        const mb_graph *c = r->graphs[i];
        if (c->n_inputs > 0 && c->nodes[c->inputs[0]].dtype == gr->dtype && c->rank == gr->shape.rank &&
            (o->variant || o->expr || !strcmp(c->name, gr->variant))) {
            *out = r->graphs[i];
            return MB_OK;
        }
    }
    void *p = realloc(r->graphs, (size_t)(r->n_graphs + 1) * sizeof *r->graphs);
    void *q = p ? realloc(r->exprs, (size_t)(r->n_graphs + 1) * sizeof *r->exprs) : NULL;
    if (p) r->graphs = p;
    if (!q) return mb_err_set(err, MB_ERUN, "out of memory");
    r->exprs = q;
    mb_graph *g = NULL;
    int rc = o->expr ? mb_parse_expr(o->expr, gr->dtype, &g, err)
                     : mb_variant_load(o->variant ? o->variant : gr->variant, gr->dtype, &g, err);
    if (!rc && g->rank != gr->shape.rank) rc = mb_graph_set_rank(g, gr->shape.rank, err);
    if (rc) {
        mb_graph_free(g);
        return rc;
    }
    r->exprs[r->n_graphs] = o->expr;
    r->graphs[r->n_graphs++] = g;
    *out = g;
    return MB_OK;
}

/* A row made: kept in b, or handed to the user's row callback. */
static int put_row(run *r, mb_meas_csv_rows *b, const mb_meas_record *row, int per_kernel, mb_err *err)
{
    if (r->o->row) return r->o->row(r->o->row_ctx, row, per_kernel, &r->out->texts, err);
    return mb_meas_csv_rows_add(b, row) ? mb_err_set(err, MB_ERUN, "out of memory") : MB_OK;
}

/* 1 when a grid of that many threads can be an elementwise kernel over n
 * elements: between 1 and 256 elements per thread, a block of rounding
 * allowed (PyTorch's vectorised kernels take 4 per thread in f32, 8 in
 * bf16; its unrolled ones 2 or 4; Inductor's pointwise kernels 8, at
 * XBLOCK 1024 over 128 threads); unknown grids pass. */
static int grid_fits(const imp_launch *x, int64_t n)
{
    double blocks = (double)x->grid[0] * (double)x->grid[1] * (double)x->grid[2];
    double per = (double)x->block[0] * (double)x->block[1] * (double)x->block[2];
    if (!(blocks > 0 && per > 0)) return 1;
    double threads = blocks * per;
    return threads <= (double)n + per && threads * 256.0 >= (double)n;
}

/* 1 when launch x can be some kernel of plan p. */
static int of_plan(const mb_plan *p, const char *name)
{
    for (int k = 0; k < p->n_kernels; k++)
        if (imp_kernel_matches(p->g, &p->kernels[k], p->kind != MB_PLAN_EAGER, name)) return 1;
    return 0;
}

/* The plan's kernel names, "sin, pow, cos, pow, add", into buf. */
static const char *kernel_list(const mb_plan *p, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int k = 0; k < p->n_kernels; k++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", k ? ", " : "", p->kernels[k].name);
    return buf;
}

/* Leaves out what is not the plan's (one note per run of one name); keeps
 * the rest in *kept (malloc'd) in order. */
static int keep_launches(run *r, const group *gr, const mb_plan *p, int **kept, int *n_kept, mb_err *err)
{
    int *k = malloc((size_t)(gr->n_idx ? gr->n_idx : 1) * sizeof *k);
    if (!k) return mb_err_set(err, MB_ERUN, "out of memory");
    int nk = 0;
    for (int i = 0; i < gr->n_idx;) {
        const imp_launch *x = &r->L->v[gr->idx[i]];
        int named = of_plan(p, x->name), fits = grid_fits(x, gr->n);
        if (named && fits) { k[nk++] = gr->idx[i++]; continue; }
        int j = i + 1;
        while (j < gr->n_idx && !strcmp(r->L->v[gr->idx[j]].name, x->name) &&
               !(of_plan(p, r->L->v[gr->idx[j]].name) && grid_fits(&r->L->v[gr->idx[j]], gr->n)))
            j++;
        char sn[96], at[600];
        note(r, "note", "%s: %d launch%s of '%s' (grid %lldx%lldx%lld, block %.0f) in %s %s: left out",
             where(r, x, at, sizeof at), j - i, j - i > 1 ? "es" : "", imp_short_name(x->name, sn, sizeof sn),
             (long long)x->grid[0], (long long)x->grid[1], (long long)x->grid[2], (double)x->block[0] * (double)x->block[1] * (double)x->block[2],
             gr->label,
             named ? "have a grid that cannot cover n" : "match no kernel of the plan");
        r->out->n_left_out += j - i;
        i = j;
    }
    *kept = k;
    *n_kept = nk;
    return MB_OK;
}

/* The kept launches as whole repetitions of the plan: MB_OK, or MB_EINPUT
 * saying what is missing or extra. */
static int check_sequence(run *r, const group *gr, const mb_plan *p, const int *kept, int nk, mb_err *err)
{
    int K = p->n_kernels, out = gr->n_idx - nk;
    char list[512], at[600], sn[96], left[96] = "";
    kernel_list(p, list, sizeof list);
    if (out)
        snprintf(left, sizeof left, " (%d other launch%s of the group left out: not the plan's ops, or a grid "
                 "for another n)", out, out == 1 ? "" : "es");
    if (nk < K)
        return mb_err_set(err, MB_EINPUT, "%s: %s: %d launch%s match the plan, which has %d kernels (%s): too few "
                          "kernels for the plan%s", r->path, gr->label, nk, nk == 1 ? "" : "es", K, list, left);
    if (nk % K)
        return mb_err_set(err, MB_EINPUT, "%s: %s: %d launches are not whole repetitions of the plan's %d kernels "
                          "(%s): %d repetition%s and %d kernel%s more: too many kernels for the plan (or some "
                          "missing)%s", r->path, gr->label, nk, K, list, nk / K, nk / K == 1 ? "" : "s", nk % K,
                          nk % K == 1 ? "" : "s", left);
    for (int i = 0; i < nk; i++) {
        const imp_launch *x = &r->L->v[kept[i]];
        const mb_kernel *k = &p->kernels[i % K];
        if (!imp_kernel_matches(p->g, k, p->kind != MB_PLAN_EAGER, x->name))
            return mb_err_set(err, MB_EINPUT, "%s: %s: launch '%s' where repetition %d of the plan (%s) has "
                              "kernel %d, '%s': not the plan's sequence", where(r, x, at, sizeof at), gr->label,
                              imp_short_name(x->name, sn, sizeof sn), i / K + 1, list, i % K + 1, k->name);
    }
    if (nk / K <= r->o->warmup)
        return mb_err_set(err, MB_EINPUT, "%s: %s: %d repetition%s of the plan, and --warmup %d leaves none",
                          r->path, gr->label, nk / K, nk / K == 1 ? "" : "s", r->o->warmup);
    return MB_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorted in place); NAN when any is NAN. */
static double median(double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (isnan(v[i])) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void set_times(mb_meas_record *row, double *samples, int ns)
{
    mb_meas_stats st;
    mb_meas_stats_compute(samples, ns, &st);
    row->reps = ns;
    row->time_s_median = st.median_s;
    row->time_s_min = st.min_s;
    row->time_s_p90 = st.p90_s;
    row->time_cv = st.cv;
    row->time_s_lower_mode = st.lower_mode_s;
    row->time_s_upper_mode = st.upper_mode_s;
    row->upper_mode_share = st.upper_mode_s > 0 ? st.upper_mode_share : NAN;
}

/* What an imported row says besides its numbers; bytes against the model. */
static void set_identity(const run *r, mb_meas_record *row, const char *kernel)
{
    int ncu = r->o->format == MB_IMP_NCU;
    snprintf(row->device, sizeof row->device, "%s", r->dev.name);
    snprintf(row->backend, sizeof row->backend, "%s", ncu ? "cuda-ncu" : "cuda-torch");
    snprintf(row->counters, sizeof row->counters, "%s",
             !ncu ? MB_MEAS_COUNTERS_TORCH : r->o->cache_all ? MB_MEAS_COUNTERS_NCU : MB_MEAS_COUNTERS_NCU_WARM);
    snprintf(row->kernel, sizeof row->kernel, "%s", kernel);
    row->verified = 1; /* the launches matched the plan; outputs unchecked (provenance says so) */
    row->accuracy[0] = '\0';
    row->max_rel_err = NAN;
    row->contended = -1;
    row->host_copy_gbs = row->host_copy_ratio = row->host_op_ratio = row->model_host_time_s = NAN;
    row->count_err = NAN;
    /* each kernel from a flushed cache: its cold count, the lecture's */
    int cold = ncu && r->o->cache_all;
    double model_r = (double)(cold ? row->read_bytes : row->model_dram_read_bytes);
    double model_w = (double)(cold ? row->write_bytes : row->model_dram_write_bytes);
    if (row->dram_read_bytes >= 0 && row->dram_write_bytes >= 0) {
        mb_dtype t = MB_F32;
        mb_dtype_parse(row->dtype, &t);
        double tensor = (double)row->n * (double)mb_dtype_bytes(t);
        /* flushed before each kernel, a tensor of any size is judged */
        double cache = cold ? tensor / (2 * MB_COUNT_JUDGED_L2X) : mb_device_cache_bytes(&r->dev);
        mb_count_verdict v = mb_meas_count_vs_model((double)row->dram_read_bytes, (double)row->dram_write_bytes,
                                                    model_r, model_w, tensor, cache, 0, MB_COUNT_TOL,
                                                    &row->count_err);
        snprintf(row->count_check, sizeof row->count_check, "%s", mb_meas_count_verdict_name(v));
    }
}

/* The rows of one matched group: totals (one sample per repetition after
 * the warm-up) and one row per plan kernel. */
static int group_rows(run *r, const group *gr, const mb_plan *p, const int *kept, int nk, mb_err *err)
{
    int K = p->n_kernels, W = r->o->warmup, R = nk / K, ns = R - W;
    mb_meas_record row, *pk = calloc((size_t)K, sizeof *pk);
    double *samples = calloc((size_t)ns, sizeof *samples), *tmp = calloc((size_t)ns, sizeof *tmp);
    int rc = !pk || !samples || !tmp ? mb_err_set(err, MB_ERUN, "out of memory") : MB_OK;
    if (!rc) rc = mb_meas_record_init_shape(&row, pk, p->g->name, p, gr->shape, &r->dev, err);
    int64_t tot_r = 0, tot_w = 0;
    for (int k = 0; k < K && !rc; k++) {
        double *kt = calloc((size_t)ns, sizeof *kt);
        if (!kt) { rc = mb_err_set(err, MB_ERUN, "out of memory"); break; }
        for (int s = 0; s < ns; s++) {
            kt[s] = r->L->v[kept[(W + s) * K + k]].time_s;
            samples[s] += kt[s];
        }
        set_times(&pk[k], kt, ns);
        free(kt);
        for (int s = 0; s < ns; s++) tmp[s] = r->L->v[kept[(W + s) * K + k]].dram_read_bytes;
        double mr = median(tmp, ns);
        for (int s = 0; s < ns; s++) tmp[s] = r->L->v[kept[(W + s) * K + k]].dram_write_bytes;
        double mw = median(tmp, ns);
        pk[k].dram_read_bytes = isnan(mr) || isnan(mw) ? -1 : llround(mr);
        pk[k].dram_write_bytes = isnan(mr) || isnan(mw) ? -1 : llround(mw);
        /* the readers bound each count by MB_IMP_BYTES_MAX (2^53); a plan of
           over 1023 such kernels could still pass 2^63: refused, not wrapped */
        if (tot_r >= 0 && pk[k].dram_read_bytes >= 0) {
            if (__builtin_add_overflow(tot_r, pk[k].dram_read_bytes, &tot_r) ||
                __builtin_add_overflow(tot_w, pk[k].dram_write_bytes, &tot_w)) {
                char at[600];
                rc = mb_err_set(err, MB_EINPUT, "%s: %s: the plan's DRAM bytes pass 2^63 at kernel %d (%s): no "
                                "plan moves that many", where(r, &r->L->v[kept[W * K + k]], at, sizeof at),
                                gr->label, k + 1, p->kernels[k].name);
                break;
            }
        } else {
            tot_r = tot_w = -1;
        }
        set_identity(r, &pk[k], p->kernels[k].name);
        if (r->o->kernel_rows) rc = put_row(r, &r->out->kernel_rows, &pk[k], 1, err);
    }
    if (!rc) {
        set_times(&row, samples, ns);
        row.dram_read_bytes = tot_r;
        row.dram_write_bytes = tot_w;
        set_identity(r, &row, "");
        rc = put_row(r, &r->out->rows, &row, 0, err);
        r->out->n_rows++;
        r->out->n_matched += nk;
        note(r, "note", "%s: %s: %d launches, %d repetition%s of %s/%s (%d kernel%s), %d timed after --warmup %d",
             r->path, gr->label, nk, R, R == 1 ? "" : "s", p->g->name, mb_plan_name(p->kind), K, K == 1 ? "" : "s",
             ns, W);
    }
    free(pk);
    free(samples);
    free(tmp);
    return rc;
}

/* 1 when the user's options leave group gr out. */
static int filtered(const run *r, const group *gr, const mb_graph *g)
{
    const mb_imp_options *o = r->o;
    if (!gr->marked) return 0;
    int plan_ok = o->n_plans == 0, size_ok = o->n_sizes == 0;
    for (int i = 0; i < o->n_plans; i++) plan_ok |= o->plans[i] == gr->plan;
    for (int i = 0; i < o->n_sizes; i++) size_ok |= o->sizes[i] == gr->n;
    return !plan_ok || !size_ok || (o->has_dtype && o->dtype != gr->dtype) ||
           ((o->variant || o->expr) && g && strcmp(g->name, gr->variant) != 0);
}

/* err's message prefixed with "path: GROUP: " (the model's errors name no file). */
static int in_group(const run *r, const group *gr, int rc, mb_err *err)
{
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return mb_err_set(err, rc, "%s: %s: %s", r->path, gr->label, msg);
}

static int match_group(run *r, group *gr, mb_err *err)
{
    mb_graph *g = NULL;
    int n_graphs = r->n_graphs;
    int rc = graph_of(r, gr, &g, err);
    if (rc) return in_group(r, gr, rc, err);
    /* a variant's text in the texts as it is loaded: the rows carry it from the first on */
    if (r->n_graphs > n_graphs && (rc = mb_meas_csv_texts_add_variant(&r->out->texts, g, r->o->expr, err)))
        return rc;
    if (filtered(r, gr, g)) {
        note(r, "note", "%s: %s: %d launches left out (not the variant, plan, size or dtype asked for)", r->path,
             gr->label, gr->n_idx);
        r->out->n_left_out += gr->n_idx;
        return MB_OK;
    }
    snprintf(gr->variant, sizeof gr->variant, "%s", g->name);
    mb_plan *p = NULL;
    if ((rc = mb_plan_build(g, gr->plan, &p, err))) return in_group(r, gr, rc, err);
    int *kept = NULL, nk = 0;
    rc = keep_launches(r, gr, p, &kept, &nk, err);
    if (!rc) rc = check_sequence(r, gr, p, kept, nk, err);
    if (!rc) rc = group_rows(r, gr, p, kept, nk, err);
    free(kept);
    mb_plan_free(p);
    return rc;
}

/* A marked launch in the grouping's order: by mark, then by file order. */
typedef struct marked_launch {
    const char *label;
    int i;
} marked_launch;

static int by_label(const void *a, const void *b)
{
    const marked_launch *x = a, *y = b;
    int c = x->label == y->label ? 0 : strcmp(x->label, y->label); /* interned: one mark, one pointer */
    return c ? c : x->i - y->i;
}

static int by_first_launch(const void *a, const void *b)
{
    const group *x = a, *y = b;
    return x->idx[0] - y->idx[0];
}

/* Groups by mark, in order of first launch, each group's launches in file
 * order and contiguous in *idx (malloc'd, the caller frees it after the
 * groups); unmarked launches noted, left out. The launches sorted by mark
 * make the groups in O(n log n): a search of the groups so far for each
 * launch took 57 s for 10^5 launches under 5 * 10^4 marks. */
static int make_groups(run *r, group **out, int *n_out, int **idx_out, mb_err *err)
{
    const imp_launches *L = r->L;
    int marked = 0;
    for (int i = 0; i < L->n; i++) marked += L->v[i].label[0] != '\0';
    group *G = calloc((size_t)L->n + 1, sizeof *G);
    int *idx = malloc(((size_t)L->n + 1) * sizeof *idx);
    marked_launch *ml = malloc(((size_t)marked + 1) * sizeof *ml);
    if (!G || !idx || !ml) { free(G); free(idx); free(ml); return mb_err_set(err, MB_ERUN, "out of memory"); }
    int ng = 0;
    const mb_imp_options *o = r->o;
    if (!marked) {
        free(ml);
        if ((!o->variant && !o->expr) || o->n_plans != 1 || o->n_sizes != 1) {
            free(G); free(idx);
            return mb_err_set(err, MB_EINPUT, "%s: no membound: marks (NVTX ranges or record_function) in the "
                              "file: say what it ran with --variant (or --expr), one --plan and one --n", r->path);
        }
        group *g = &G[ng++];
        g->plan = o->plans[0];
        g->n = o->sizes[0];
        g->shape = mb_shape_1d(g->n);
        g->dtype = o->has_dtype ? o->dtype : MB_F32;
        snprintf(g->variant, sizeof g->variant, "%s", o->variant ? o->variant : "<expr>");
        g->label = r->unmarked_label;
        snprintf(r->unmarked_label, sizeof r->unmarked_label, "the file's launches as %s/%s, n=%lld", o->expr ? "--expr" : o->variant,
                 mb_plan_name(g->plan), (long long)g->n);
        g->idx = idx;
        for (int i = 0; i < L->n; i++) g->idx[g->n_idx++] = i;
        *out = G;
        *n_out = ng;
        *idx_out = idx;
        return MB_OK;
    }
    int nm = 0;
    for (int i = 0; i < L->n; i++)
        if (L->v[i].label[0]) ml[nm++] = (marked_launch){L->v[i].label, i};
    qsort(ml, (size_t)nm, sizeof *ml, by_label);
    for (int k = 0; k < nm; k++) { /* each run of one mark is a group */
        if (!k || (ml[k].label != ml[k - 1].label && strcmp(ml[k].label, ml[k - 1].label) != 0)) {
            group *g = &G[ng++];
            g->label = ml[k].label;
            g->marked = 1;
            g->idx = idx + k;
        }
        idx[k] = ml[k].i;
        G[ng - 1].n_idx++;
    }
    free(ml);
    qsort(G, (size_t)ng, sizeof *G, by_first_launch);
    for (int k = 0; k < ng; k++) { /* the first bad mark in file order is the one named */
        int rc = parse_label(G[k].label, &G[k], err);
        if (rc) {
            char at[600], msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            mb_err_set(err, rc, "%s: %s", where(r, &L->v[G[k].idx[0]], at, sizeof at), msg);
            free(G);
            free(idx);
            return rc;
        }
    }
    int unmarked = L->n - nm;
    if (unmarked) {
        note(r, "note", "%s: %d launch%s outside any membound: mark: left out", r->path, unmarked,
             unmarked == 1 ? "" : "es");
        r->out->n_left_out += unmarked;
    }
    *out = G;
    *n_out = ng;
    *idx_out = idx;
    return MB_OK;
}

/* The model device: the user's, else the file's GPU mapped to the table,
 * else h100-sxm (noted). */
static int pick_device(run *r, mb_err *err)
{
    const char *gpu = "";
    for (int i = 0; i < r->L->n && !gpu[0]; i++) gpu = r->L->v[i].gpu;
    if (r->o->device) return mb_device_find(r->o->device, &r->dev, err);
    const char *id = gpu[0] ? mb_imp_device_id(gpu) : NULL;
    if (!id) {
        note(r, "warning", "%s: %s: modelled on h100-sxm (give --device)", r->path,
             gpu[0] ? "the file's GPU is not in the device table" : "the file names no GPU");
        id = "h100-sxm";
    } else {
        note(r, "note", "%s: GPU '%s': the device table's %s", r->path, gpu, id);
    }
    return mb_device_find(id, &r->dev, err);
}

/* Provenance lines of the imported rows: what ran, where from, what the
 * numbers mean; the texts made before any row (the variants' texts are
 * added as the groups load them). */
static int provenance(run *r, mb_err *err)
{
    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, NULL);
    pv.cpu_model[0] = pv.host[0] = pv.compiler[0] = '\0'; /* this host did not run them */
    const char *gpu = "";
    for (int i = 0; i < r->L->n && !gpu[0]; i++) gpu = r->L->v[i].gpu;
    int ncu = r->o->format == MB_IMP_NCU;
    const char *base = strrchr(r->path, '/');
    snprintf(pv.settings, sizeof pv.settings, "%s",
             !ncu ? "torch profiler: kernel durations (CUPTI activity records), caches and clocks as the run had them"
             : r->o->cache_all && r->o->clock_base
                 ? "ncu --cache-control all --clock-control base: every kernel from a flushed cache at base clocks"
             : r->o->cache_all ? "ncu --cache-control all --clock-control none: every kernel from a flushed cache"
             : r->o->clock_base ? "ncu --cache-control none --clock-control base: caches as the run left them"
                                : "ncu --cache-control none --clock-control none");
    snprintf(pv.extra, sizeof pv.extra,
             "imported: %s from %s (%s)%s\ngpu: %s\nmodel_device: %s\n"
             "verified: imported rows: 1 means the launches matched the plan's kernels; outputs were not "
             "checked by membound\ntimes: %s\n%s%s",
             ncu ? "ncu" : "torch-trace", base ? base + 1 : r->path, r->L->note,
             r->o->settings_given ? "" : ncu ? "; ncu's defaults assumed (say otherwise with --cache-control, --clock-control)" : "",
             gpu[0] ? gpu : "unknown", r->dev.name,
             ncu ? "the sum of each repetition's kernel durations (gpu__time_duration), not event times"
                 : "the sum of each repetition's kernel durations, not event times",
             ncu && r->o->cache_all ? MB_MEAS_PROV_COLD_KERNELS ", read_bytes and write_bytes "
                                      "(ncu flushes the caches before every kernel)\n" : "",
             "");
    return mb_meas_csv_texts_init(&r->out->texts, &pv, &r->dev, NULL, NULL, 0, err);
}

int mb_imp_run(const char *path, const mb_imp_options *o, mb_imp_result *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    out->kernel_rows.per_kernel = 1;
    imp_launches L = {0};
    run r = {.o = o, .path = path, .L = &L, .out = out};
    /* the whole file checked as text first (mb_text_read's checks and
       messages, so the first bad byte is reported before any parse error),
       then read again in pieces: the text is never held whole */
    int fd = -1;
    int rc = mb_text_open(path, IMP_FILE_MAX_BYTES, &fd, err);
    if (!rc) rc = mb_text_check_fd(fd, path, IMP_FILE_MAX_BYTES, err);
    /* a UTF-8 byte order mark (an editor's, PowerShell's) is no part of the data */
    char head[3];
    ssize_t got = rc ? 0 : pread(fd, head, 3, 0);
    if (got < 0) rc = mb_err_set(err, MB_EINPUT, "%s: cannot read: %s", path, strerror(errno));
    off_t bom = got == 3 && !memcmp(head, "\xEF\xBB\xBF", 3) ? 3 : 0;
    if (!rc && lseek(fd, bom, SEEK_SET) != bom)
        rc = mb_err_set(err, MB_EINPUT, "%s: cannot read: %s", path, strerror(errno));
    if (!rc) rc = o->format == MB_IMP_NCU ? imp_read_ncu(fd, IMP_FILE_MAX_BYTES, path, &L, err)
                                          : imp_read_torch_trace(fd, IMP_FILE_MAX_BYTES, path, &L, err);
    if (fd >= 0) close(fd);
    out->n_launches = L.n;
    if (!rc && L.note[0] && strstr(L.note, "auto-scaled")) note(&r, "warning", "%s: %s", path, L.note);
    if (!rc) rc = pick_device(&r, err);
    group *G = NULL;
    int ng = 0, *idx = NULL;
    if (!rc) rc = make_groups(&r, &G, &ng, &idx, err);
    if (!rc) rc = provenance(&r, err);
    for (int i = 0; i < ng && !rc; i++) rc = match_group(&r, &G[i], err);
    if (!rc && out->n_rows == 0)
        rc = mb_err_set(err, MB_EINPUT, "%s: none of its %d launches matched a plan (see the notes)", path, L.n);
    free(idx);
    free(G);
    for (int i = 0; i < r.n_graphs; i++) mb_graph_free(r.graphs[i]);
    free(r.graphs);
    free(r.exprs);
    imp_launches_free(&L);
    if (rc) mb_imp_result_free(out);
    return rc;
}

void mb_imp_result_free(mb_imp_result *r)
{
    mb_meas_csv_rows_free(&r->rows);
    mb_meas_csv_rows_free(&r->kernel_rows);
    mb_meas_csv_texts_free(&r->texts);
}
