/* test_model_optimal.c — the optimal recompute plan and the memory-traffic
 * frontier against brute force: every subset of the forward tensors is
 * built as a plan (mb_plan_build_saving) and costed by the traffic rule here,
 * on the lecture's variants and on seeded random expressions (mixed f32 and
 * bf16 inputs); the lecture's case (sigmoid^3: x alone saved, 5n); the time
 * objective on a device that cannot afford recomputation; the optimal plan
 * run by the CPU executors and checked against finite differences; errors.
 * Skips (77) in a build without igraph, after checking it says so. */
#include "kernels.h"
#include "membound_model.h"
#include "mb_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Brute force limit: 2^14 plans per graph keeps the test under a few seconds. */
#define MAX_BRUTE_TENSORS 14

typedef struct {
    int64_t mem, traffic; /* bytes per element */
} point;

/* The shape plans are costed at: one element (1-D), or a ROWSxCOLS shape
 * where a [rows, 1] statistic is rows elements. */
static mb_shape cur_shape = {1, 1, 1, 0};

static int64_t bytes_at(const mb_plan *p, int t)
{
    return mb_tensor_elems_at(p->g, t, cur_shape) * (int64_t)mb_dtype_bytes(p->g->nodes[t].dtype);
}

static int64_t traffic_of(const mb_plan *p)
{
    int64_t b = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        for (int r = 0; r < p->kernels[k].n_reads; r++) b += bytes_at(p, p->kernels[k].reads[r]);
        for (int w = 0; w < p->kernels[k].n_writes; w++) b += bytes_at(p, p->kernels[k].writes[w]);
    }
    return b;
}

static int64_t mem_of(const mb_plan *p)
{
    int64_t b = 0;
    for (int i = 0; i < p->n_saved; i++) b += bytes_at(p, p->saved[i]);
    return b;
}

/* Every subset of the forward tensors that feeds the backward: its point.
 * Returns the number of valid subsets; *pts is malloc'd. */
static int brute(const mb_graph *g, point **pts, long *subsets)
{
    int nf = g->n_forward, n = 0;
    *pts = malloc(((size_t)1 << nf) * sizeof **pts);
    int set[32];
    for (unsigned long m = 0; m < (1ul << nf); m++) {
        int k = 0;
        for (int v = 0; v < nf; v++)
            if (m & (1ul << v)) set[k++] = v;
        mb_plan *p = NULL;
        mb_err e;
        int rc = mb_plan_build_saving(g, set, k, &p, &e);
        CHECK(rc == MB_OK || rc == MB_EINPUT);
        if (rc) continue;
        (*pts)[n++] = (point){mem_of(p), traffic_of(p)};
        mb_plan_free(p);
    }
    *subsets += 1l << nf;
    return n;
}

/* Pareto points of pts (least traffic for each memory), ascending memory. */
static int pareto(const point *pts, int n, point *out)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        int dominated = 0;
        for (int j = 0; j < n && !dominated; j++)
            dominated = pts[j].mem <= pts[i].mem && pts[j].traffic <= pts[i].traffic &&
                        (pts[j].mem < pts[i].mem || pts[j].traffic < pts[i].traffic);
        int dup = 0;
        for (int j = 0; j < m; j++) dup |= out[j].mem == pts[i].mem && out[j].traffic == pts[i].traffic;
        if (!dominated && !dup) {
            int at = m++;
            while (at > 0 && out[at - 1].mem > pts[i].mem) { out[at] = out[at - 1]; at--; }
            out[at] = pts[i];
        }
    }
    return m;
}

/* 1 when Pareto point i is a vertex of the lower convex hull of par[]. */
static int hull_vertex(const point *par, int m, int i)
{
    for (int a = 0; a < i; a++)
        for (int b = i + 1; b < m; b++) {
            /* on or above the segment a-b: not a vertex */
            __int128 lhs = (__int128)(par[i].traffic - par[a].traffic) * (par[b].mem - par[a].mem);
            __int128 rhs = (__int128)(par[b].traffic - par[a].traffic) * (par[i].mem - par[a].mem);
            if (lhs >= rhs) return 0;
        }
    return 1;
}

static long n_graphs, n_subsets, n_pareto, n_missed, n_row_graphs;
static int max_tensors;

/* The optimal plan and the frontier of g against brute force. */
static void against_brute_force(const mb_graph *g, const char *what)
{
    point *pts;
    int n = brute(g, &pts, &n_subsets);
    CHECK(n > 0);
    point best = pts[0];
    for (int i = 1; i < n; i++)
        if (pts[i].traffic < best.traffic || (pts[i].traffic == best.traffic && pts[i].mem < best.mem))
            best = pts[i];
    mb_plan *p = NULL;
    mb_err e;
    CHECK(mb_plan_build_optimal_shape(g, MB_OBJECTIVE_BYTES, cur_shape, NULL, &p, &e) == MB_OK);
    if (p) {
        if (traffic_of(p) != best.traffic || mem_of(p) != best.mem)
            fprintf(stderr, "%s: optimal %lld B/elem saving %lld, brute force %lld saving %lld\n", what,
                    (long long)traffic_of(p), (long long)mem_of(p), (long long)best.traffic,
                    (long long)best.mem);
        CHECK_EQ_I64(traffic_of(p), best.traffic);
        CHECK_EQ_I64(mem_of(p), best.mem);
        mb_plan_free(p);
    }

    point *par = malloc((size_t)n * sizeof *par);
    int m = pareto(pts, n, par);
    mb_frontier f;
    CHECK(mb_frontier_build_shape(g, cur_shape, &f, &e) == MB_OK);
    for (int i = 0; i < f.n_points; i++) { /* every point is Pareto-optimal */
        int found = 0;
        for (int j = 0; j < m; j++)
            found |= par[j].mem == f.points[i].saved_bytes && par[j].traffic == f.points[i].traffic_bytes;
        if (!found) fprintf(stderr, "%s: frontier point %d (%lld, %lld) is not Pareto-optimal\n", what, i,
                            (long long)f.points[i].saved_bytes, (long long)f.points[i].traffic_bytes);
        CHECK(found);
        if (i > 0) CHECK(f.points[i].saved_bytes > f.points[i - 1].saved_bytes &&
                         f.points[i].traffic_bytes < f.points[i - 1].traffic_bytes);
    }
    for (int j = 0; j < m; j++) { /* every hull vertex is listed */
        int found = 0;
        for (int i = 0; i < f.n_points; i++)
            found |= par[j].mem == f.points[i].saved_bytes && par[j].traffic == f.points[i].traffic_bytes;
        if (hull_vertex(par, m, j)) {
            if (!found) fprintf(stderr, "%s: hull vertex (%lld, %lld) missing\n", what,
                                (long long)par[j].mem, (long long)par[j].traffic);
            CHECK(found);
        } else {
            n_missed += !found;
        }
    }
    n_pareto += m;
    mb_frontier_free(&f);
    free(par);
    free(pts);
    n_graphs++;
    n_row_graphs += g->has_row_ops;
    if (g->n_forward > max_tensors) max_tensors = g->n_forward;
}

static mb_graph *parse(const char *text)
{
    mb_graph *g = NULL;
    mb_err e;
    if (mb_parse_variant(text, "<test>", MB_F32, &g, &e) != MB_OK) {
        fprintf(stderr, "%s\n  %s\n", text, e.msg);
        CHECK(0);
    }
    return g;
}

static void lecture_case(void)
{
    mb_graph *g = NULL;
    mb_err e;
    CHECK(mb_variant_load("sigmoid3", MB_F32, &g, &e) == MB_OK);
    mb_plan *p = NULL, *r = NULL;
    CHECK(mb_plan_build(g, MB_PLAN_OPTIMAL, &p, &e) == MB_OK);
    CHECK(mb_plan_build(g, MB_PLAN_RECOMPUTE, &r, &e) == MB_OK);
    CHECK_EQ_I64(p->kind, MB_PLAN_OPTIMAL);
    CHECK_EQ_I64(p->n_saved, 1);
    CHECK_EQ_I64(p->saved[0], g->inputs[0]);
    CHECK_EQ_I64(traffic_of(p), 5 * 4);
    /* the same kernels as the lecture's recompute plan, so the CUDA backend's
     * hand-written sigmoid^3 kernels match it */
    CHECK_EQ_I64(p->n_kernels, r->n_kernels);
    for (int k = 0; k < p->n_kernels && k < r->n_kernels; k++) {
        CHECK_EQ_I64(p->kernels[k].n_nodes, r->kernels[k].n_nodes);
        CHECK(!memcmp(p->kernels[k].reads, r->kernels[k].reads, (size_t)r->kernels[k].n_reads * sizeof(int)));
        CHECK(!memcmp(p->kernels[k].writes, r->kernels[k].writes, (size_t)r->kernels[k].n_writes * sizeof(int)));
    }
    mb_device d;
    CHECK(mb_device_find("h100-sxm", &d, &e) == MB_OK);
    mb_estimate est;
    CHECK(mb_estimate_plan(p, (int64_t)1 << 20, &d, &est, &e) == MB_OK);
    CHECK_EQ_I64(est.total.read_bytes + est.total.write_bytes, 5 * 4 * ((int64_t)1 << 20));
    CHECK_EQ_I64(est.saved_bytes, 4194304);
    mb_estimate_free(&est);
    mb_plan_free(p);
    mb_plan_free(r);

    /* the frontier of sigmoid^3 is one point: x alone is least in both */
    mb_frontier f;
    CHECK(mb_frontier_build(g, (int64_t)1 << 20, &f, &e) == MB_OK);
    CHECK_EQ_I64(f.n_points, 1);
    if (f.n_points == 1) {
        CHECK_EQ_I64(f.points[0].saved_bytes, 4194304);
        CHECK_EQ_I64(f.points[0].traffic_bytes, 5 * 4194304);
    }
    mb_frontier_free(&f);
    against_brute_force(g, "sigmoid3");
    mb_graph_free(g);
}

/* Two sums feed sin and cos: saving them (2 tensors, 4n) or the three inputs
 * (3 tensors, 3n) is a real trade of memory against traffic. */
static void a_real_trade(void)
{
    mb_graph *g = parse("input a\ninput b\ninput c\ny = sin(a + b + c) + cos(a - b - c)\noutput y\nbackward\n");
    mb_frontier f;
    mb_err e;
    CHECK(mb_frontier_build(g, 1, &f, &e) == MB_OK);
    CHECK_EQ_I64(f.n_points, 2);
    if (f.n_points == 2) {
        CHECK_EQ_I64(f.points[0].saved_bytes, 8);
        CHECK_EQ_I64(f.points[1].saved_bytes, 12);
        CHECK_EQ_I64(f.points[0].traffic_bytes - f.points[1].traffic_bytes, 4);
        CHECK_EQ_I64(f.points[1].n_saved, 3);
    }
    mb_frontier_free(&f);
    against_brute_force(g, "trade");
    mb_graph_free(g);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of p's saved tensors, comma-separated, in alphabetical order. */
static void saved_names(const mb_plan *p, char *out, size_t size)
{
    const char *names[32];
    int n = 0;
    for (int i = 0; i < p->n_saved && n < 32; i++) names[n++] = p->g->nodes[p->saved[i]].name;
    qsort(names, (size_t)n, sizeof names[0], by_name);
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n && len < size; i++) len += (size_t)snprintf(out + len, size - len, "%s%s", i ? "," : "", names[i]);
}

/* A [cols] tensor the column kernel reads (a weight's gradient sums over the
 * rows there, docs/model.md) costs a write and a read when the fused backward
 * recomputes it and hands it on: 2 x its bytes, the cut's xfer term. Two
 * graphs where that term decides, at 16x4 (R = 16 rows, C = 4 columns), both
 * with x [R, C] f32, w [cols] bf16 (2C bytes), s [cols] f32 (4C), and
 * u = exp(w + s) [cols] f32 (4C), which both backward kernels read (exp's
 * derivative reads its output: g x u in the fused one for x's gradient, and
 * colsum(g x x) x u in the column one):
 *  - saving u: the forward writes it, each backward kernel reads it: 3 x 4C;
 *  - recomputing u: the backward reads its operands w and s where nothing
 *    else saves them, then writes u for the column kernel, which reads it:
 *    2C + 4C + 2 x 4C, or 2C + 2 x 4C where s is saved anyway.
 * 1. y = x * u: nothing else reads w or s. Save u (12C) against recompute
 *    (14C): the optimal plan saves x and u, 2C = 8 bytes less than recompute
 *    (which saves the inputs x, w, s). A hand-off costed at 1 x 4C (or 0)
 *    would make recomputing look cheaper (10C) and pick the inputs.
 * 2. y = x * u + x * s: s's own product's gradient reads s in the fused
 *    backward, so s is saved whatever u is. Recompute (10C) against save
 *    (12C): the optimal plan saves x, w, s, 2C = 8 bytes less than store
 *    (x, s, u). A hand-off costed at 3 x 4C would make saving look cheaper.
 * Together they hold the term between 1.5 and 2.5 times a tensor's bytes. */
static void column_handoff(void)
{
    static const struct {
        const char *text, *saved, *other_saved;
        mb_plan_kind other;
    } cases[] = {
        {"input x [rows, cols]\ninput w [cols] bf16\ninput s [cols]\nu = exp(w + s)\ny = x * u\noutput y\nbackward\n",
         "u,x", "s,w,x", MB_PLAN_RECOMPUTE},
        {"input x [rows, cols]\ninput w [cols] bf16\ninput s [cols]\nu = exp(w + s)\ny = x * u + x * s\n"
         "output y\nbackward\n",
         "s,w,x", "s,u,x", MB_PLAN_STORE},
    };
    const int64_t C = 4;
    cur_shape = (mb_shape){2, 16, C, 0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mb_graph *g = parse(cases[i].text);
        if (!g) continue;
        mb_plan *p = NULL, *o = NULL;
        mb_err e;
        char got[128];
        CHECK(mb_plan_build_optimal_shape(g, MB_OBJECTIVE_BYTES, cur_shape, NULL, &p, &e) == MB_OK);
        CHECK(mb_plan_build(g, cases[i].other, &o, &e) == MB_OK);
        if (p && o) {
            saved_names(p, got, sizeof got);
            if (strcmp(got, cases[i].saved)) fprintf(stderr, "column hand-off %zu: saved %s\n", i + 1, got);
            CHECK(!strcmp(got, cases[i].saved));
            saved_names(o, got, sizeof got);
            CHECK(!strcmp(got, cases[i].other_saved));
            CHECK_EQ_I64(traffic_of(o) - traffic_of(p), 2 * C);
            /* kept bytes: w and s (6C) against u (4C) in 1; u (4C) against w (2C) in 2 */
            CHECK_EQ_I64(mem_of(o) - mem_of(p), 2 * C);
        }
        mb_plan_free(p);
        mb_plan_free(o);
        against_brute_force(g, i == 0 ? "column hand-off 1" : "column hand-off 2");
        mb_graph_free(g);
    }
    cur_shape = (mb_shape){1, 1, 1, 0};
}

static unsigned rng_state = 13;
static unsigned rnd(unsigned k)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 16) % k;
}

/* A random straight-line program over 1-3 inputs with shared temporaries. */
static void random_text(char *buf, size_t size)
{
    static const char *const un[] = {"sin", "cos", "exp", "tanh", "sigmoid", "relu", "sqrt", "abs"};
    static const char *const bin[] = {"+", "-", "*", "/"};
    int n_in = 1 + (int)rnd(4), n_st = 2 + (int)rnd(5);
    size_t len = (size_t)snprintf(buf, size, "name rand\n");
    char names[12][8];
    int n_names = 0;
    for (int i = 0; i < n_in; i++) {
        snprintf(names[n_names++], 8, "x%d", i);
        len += (size_t)snprintf(buf + len, size - len, "input x%d %s\n", i, rnd(3) ? "f32" : "bf16");
    }
    for (int s = 0; s < n_st; s++) {
        const char *a = names[rnd((unsigned)n_names)], *b = names[rnd((unsigned)n_names)];
        const char *u = un[rnd(8)], *o = bin[rnd(4)];
        char expr[96];
        switch (rnd(5)) {
        case 0: snprintf(expr, sizeof expr, "%s(%s)", u, a); break;
        case 1: snprintf(expr, sizeof expr, "%s %s %s", a, o, b); break;
        case 2: snprintf(expr, sizeof expr, "%s(%s %s %s)", u, a, o, b); break;
        case 3: snprintf(expr, sizeof expr, "%s + %s + %s", a, b, names[rnd((unsigned)n_names)]); break;
        default: snprintf(expr, sizeof expr, "%s(%s) %s %s", u, a, o, b); break;
        }
        const char *last = s == n_st - 1 ? "y" : NULL;
        char name[8];
        snprintf(name, sizeof name, "t%d", s);
        len += (size_t)snprintf(buf + len, size - len, "%s = %s\n", last ? last : name, expr);
        if (!last) snprintf(names[n_names++], 8, "%s", name);
    }
    snprintf(buf + len, size - len, "output y\nbackward\n");
}

/* Random sums of 2-4 of 3-5 inputs, each through a unary op: saving the
 * sums or the inputs trades memory against traffic. */
static void random_sums(char *buf, size_t size)
{
    static const char *const un[] = {"sin", "cos", "tanh", "sqrt"};
    int n_in = 3 + (int)rnd(3), n_sums = 1 + (int)rnd(3);
    size_t len = (size_t)snprintf(buf, size, "name sums\n");
    for (int i = 0; i < n_in; i++) len += (size_t)snprintf(buf + len, size - len, "input x%d\n", i);
    len += (size_t)snprintf(buf + len, size - len, "y = 0");
    for (int s = 0; s < n_sums; s++) {
        len += (size_t)snprintf(buf + len, size - len, " + %s(x%u", un[rnd(4)], rnd((unsigned)n_in));
        for (int k = 1 + (int)rnd(3); k > 0; k--)
            len += (size_t)snprintf(buf + len, size - len, " %c x%u", rnd(2) ? '+' : '-', rnd((unsigned)n_in));
        len += (size_t)snprintf(buf + len, size - len, ")");
    }
    snprintf(buf + len, size - len, "\noutput y\nbackward\n");
}

/* A random program over x [rows, cols] and r [rows, 1] with reductions
 * (sum, mean, amax, keepdim=True: row statistics), the library row ops and
 * broadcasts of row statistics against full tensors. */
static void random_rows_text(char *buf, size_t size)
{
    static const char *const un[] = {"exp", "tanh", "sigmoid", "sin"};
    static const char *const red[] = {"sum", "mean", "amax"};
    static const char *const lib[] = {"softmax", "log_softmax", "layer_norm", "rms_norm"};
    static const char *const bin[] = {"+", "-", "*"};
    int with_r = (int)rnd(2), n_st = 2 + (int)rnd(5);
    size_t len = (size_t)snprintf(buf, size, "name rows\ninput x [rows, cols]\n%s", with_r ? "input r [rows, 1]\n" : "");
    char names[12][8];
    int full[12], n_names = 0;
    snprintf(names[n_names], 8, "x");
    full[n_names++] = 1;
    if (with_r) { snprintf(names[n_names], 8, "r"); full[n_names++] = 0; }
    for (int s = 0; s < n_st; s++) {
        int ia = (int)rnd((unsigned)n_names), ib = (int)rnd((unsigned)n_names);
        const char *a = names[ia], *b = names[ib];
        char expr[96];
        int is_full = full[ia] || full[ib];
        switch (rnd(6)) {
        case 0: snprintf(expr, sizeof expr, "%s(%s)", un[rnd(4)], a); is_full = full[ia]; break;
        case 1: snprintf(expr, sizeof expr, "%s %s %s", a, bin[rnd(3)], b); break;
        case 2: case 3: /* a row statistic of a full tensor */
            while (!full[ia]) ia = (int)rnd((unsigned)n_names);
            snprintf(expr, sizeof expr, "%s.%s(-1, keepdim=True)", names[ia], red[rnd(3)]);
            is_full = 0;
            break;
        case 4:
            while (!full[ia]) ia = (int)rnd((unsigned)n_names);
            unsigned l = rnd(4);
            snprintf(expr, sizeof expr, "%s(%s%s)", lib[l], names[ia], l < 2 ? ", -1" : "");
            is_full = 1;
            break;
        default: snprintf(expr, sizeof expr, "%s(%s) %s %s", un[rnd(4)], a, bin[rnd(3)], b); is_full = full[ia] || full[ib]; break;
        }
        int last = s == n_st - 1;
        char name[8];
        snprintf(name, sizeof name, "t%d", s);
        len += (size_t)snprintf(buf + len, size - len, "%s = %s\n", last ? "y" : name, expr);
        if (!last) { snprintf(names[n_names], 8, "%s", name); full[n_names++] = is_full; }
    }
    snprintf(buf + len, size - len, "output y\nbackward\n");
}

/* A random program over x [rows, cols], a weight w [cols] (and a bias b
 * [cols]) whose gradients are sums over the rows (colsum): the weights
 * broadcast against full tensors, [cols] tensors computed from them (read by
 * the column kernel: the cut's extra costs), the norms with weights, row
 * statistics. */
static void random_cols_text(char *buf, size_t size)
{
    static const char *const un[] = {"exp", "tanh", "sigmoid", "sin"};
    static const char *const bin[] = {"+", "-", "*"};
    int with_b = (int)rnd(2), n_st = 2 + (int)rnd(5);
    size_t len = (size_t)snprintf(buf, size, "name cols\ninput x [rows, cols]\ninput w [cols]\n%s",
                                  with_b ? "input b [cols]\n" : "");
    char names[12][8];
    int kind[12], n_names = 0; /* 0 full, 1 [cols], 2 [rows, 1] */
    snprintf(names[n_names], 8, "x");
    kind[n_names++] = 0;
    snprintf(names[n_names], 8, "w");
    kind[n_names++] = 1;
    if (with_b) { snprintf(names[n_names], 8, "b"); kind[n_names++] = 1; }
    for (int s = 0; s < n_st; s++) {
        int ia = (int)rnd((unsigned)n_names), ib = (int)rnd((unsigned)n_names), ic = 1;
        while (kind[ic] != 1) ic = (int)rnd((unsigned)n_names);
        char expr[96];
        int k = kind[ia] == kind[ib] ? kind[ia] : 0;
        switch (rnd(6)) {
        case 0: snprintf(expr, sizeof expr, "%s(%s)", un[rnd(4)], names[ia]); k = kind[ia]; break;
        case 1: case 2: snprintf(expr, sizeof expr, "%s %s %s", names[ia], bin[rnd(3)], names[ib]); break;
        case 3: /* a row statistic of a full tensor */
            while (kind[ia] != 0) ia = (int)rnd((unsigned)n_names);
            snprintf(expr, sizeof expr, "%s.mean(-1, keepdim=True)", names[ia]);
            k = 2;
            break;
        case 4: /* a norm with a [cols] weight (and bias) */
            while (kind[ia] != 0) ia = (int)rnd((unsigned)n_names);
            if (rnd(2)) snprintf(expr, sizeof expr, "rms_norm(%s, %s)", names[ia], names[ic]);
            else snprintf(expr, sizeof expr, "layer_norm(%s, %s%s%s)", names[ia], names[ic], with_b ? ", " : "",
                          with_b ? "b" : "");
            k = 0;
            break;
        default: /* a full tensor times a weight, plus a bias */
            while (kind[ia] != 0) ia = (int)rnd((unsigned)n_names);
            snprintf(expr, sizeof expr, "%s * %s + %s", names[ia], names[ic], with_b ? "b" : "1.5");
            k = 0;
            break;
        }
        int last = s == n_st - 1;
        char name[8];
        snprintf(name, sizeof name, "t%d", s);
        len += (size_t)snprintf(buf + len, size - len, "%s = %s%s\n", last ? "y" : name, expr,
                                last && k != 0 ? " * x" : ""); /* the output full */
        if (!last) { snprintf(names[n_names], 8, "%s", name); kind[n_names++] = k; }
    }
    snprintf(buf + len, size - len, "output y\nbackward\n");
}

static long n_col_graphs;

/* 1 when g's backward sums a [cols] tensor over the rows (a colsum). */
static int has_colsum(const mb_graph *g)
{
    for (int i = g->n_forward; i < g->n_nodes; i++)
        if (g->nodes[i].op == MB_OP_COLSUM) return 1;
    return 0;
}

/* 160 random 2-D graphs from text_of (kept where want accepts them, if
 * given) against brute force, at two shapes: more rows than columns and
 * fewer, so that the row statistics' and the [cols] tensors' bytes against
 * the full tensors' change. Returns how many ran. */
static int random_2d_graphs(void (*text_of)(char *, size_t), int (*want)(const mb_graph *), const char *kind)
{
    static const mb_shape shapes[] = {{2, 16, 4, 0}, {2, 4, 64, 0}};
    int done = 0;
    for (int tries = 0; tries < 4000 && done < 160; tries++) {
        char text[1024];
        text_of(text, sizeof text);
        mb_graph *g = NULL;
        mb_err e;
        if (mb_parse_variant(text, "<random>", MB_F32, &g, &e) != MB_OK) continue;
        if ((!want || want(g)) && g->n_forward <= MAX_BRUTE_TENSORS) {
            char what[64];
            cur_shape = shapes[done % 2];
            snprintf(what, sizeof what, "random %s #%d (seed 13) at %lldx%lld", kind, tries,
                     (long long)cur_shape.rows, (long long)cur_shape.cols);
            against_brute_force(g, what);
            if (mb_t_fail) fprintf(stderr, "%s", text);
            done++;
        }
        mb_graph_free(g);
    }
    cur_shape = (mb_shape){1, 1, 1, 0};
    CHECK(done >= 120);
    return done;
}

/* Random graphs with [cols] weights (whose gradients sum over the rows). */
static void random_col_expressions(void) { n_col_graphs += random_2d_graphs(random_cols_text, has_colsum, "cols"); }

/* Random graphs with reductions and broadcasts. */
static void random_row_expressions(void) { random_2d_graphs(random_rows_text, NULL, "rows"); }

static void random_expressions(void)
{
    int done = 0;
    for (int tries = 0; tries < 4000 && done < 240; tries++) {
        char text[1024];
        if (tries % 2) random_sums(text, sizeof text);
        else random_text(text, sizeof text);
        mb_graph *g = NULL;
        mb_err e;
        /* an input that does not reach y has no gradient: not a case */
        if (mb_parse_variant(text, "<random>", MB_F32, &g, &e) != MB_OK) continue;
        if (g->n_forward <= MAX_BRUTE_TENSORS) {
            char what[64];
            snprintf(what, sizeof what, "random #%d (seed 13)", tries);
            against_brute_force(g, what);
            if (mb_t_fail) fprintf(stderr, "%s", text);
            done++;
        }
        mb_graph_free(g);
    }
    CHECK(done >= 200);
}

/* On a device whose compute is 10^4 times slower than an H100's, the time
 * objective saves what the backward reads instead of recomputing it; on the
 * H100 it keeps the bytes objective's plan. */
static void time_objective(void)
{
    mb_graph *g = NULL;
    mb_err e;
    CHECK(mb_variant_load("sigmoid3", MB_F32, &g, &e) == MB_OK);
    mb_device h100, slow;
    CHECK(mb_device_find("h100-sxm", &h100, &e) == MB_OK);
    slow = h100;
    slow.fp32_tflops /= 1e4;
    slow.sfu_tops = h100.sfu_tops > 0 ? h100.sfu_tops / 1e4 : h100.fp32_tflops / 16 / 1e4;
    const int64_t n = (int64_t)1 << 24;
    const mb_device *devs[2] = {&h100, &slow};
    for (int di = 0; di < 2; di++) {
        mb_plan *t = NULL, *b = NULL, *s = NULL, *r = NULL;
        CHECK(mb_plan_build_optimal(g, MB_OBJECTIVE_TIME, n, devs[di], &t, &e) == MB_OK);
        CHECK(mb_plan_build_optimal(g, MB_OBJECTIVE_BYTES, 0, NULL, &b, &e) == MB_OK);
        CHECK(mb_plan_build(g, MB_PLAN_STORE, &s, &e) == MB_OK);
        CHECK(mb_plan_build(g, MB_PLAN_RECOMPUTE, &r, &e) == MB_OK);
        mb_estimate et, eb, es, er;
        CHECK(mb_estimate_plan(t, n, devs[di], &et, &e) == MB_OK);
        CHECK(mb_estimate_plan(b, n, devs[di], &eb, &e) == MB_OK);
        CHECK(mb_estimate_plan(s, n, devs[di], &es, &e) == MB_OK);
        CHECK(mb_estimate_plan(r, n, devs[di], &er, &e) == MB_OK);
        CHECK(et.total.time_s <= eb.total.time_s && et.total.time_s <= es.total.time_s &&
              et.total.time_s <= er.total.time_s);
        if (di == 0) {
            CHECK_EQ_I64(t->n_saved, 1);
        } else {
            CHECK_EQ_I64(t->n_saved, 3); /* s1, s2, y: as the store plan */
            CHECK(et.total.time_s < eb.total.time_s);
        }
        mb_estimate_free(&et);
        mb_estimate_free(&eb);
        mb_estimate_free(&es);
        mb_estimate_free(&er);
        mb_plan_free(t);
        mb_plan_free(b);
        mb_plan_free(s);
        mb_plan_free(r);
    }
    mb_plan *p = NULL;
    CHECK(mb_plan_build_optimal(g, MB_OBJECTIVE_TIME, n, NULL, &p, &e) == MB_EINPUT);
    mb_graph_free(g);
}

/* Plans that save an intermediate run on the CPU executors, verify against
 * the float64 reference and pass finite differences. */
static void runs_for_real(void)
{
    static const char *const texts[] = {
        "input a\ninput b\ny = sin(a + b) * 3\noutput y\nbackward\n",
        "input a\ninput b\ninput c\ny = sigmoid(a + b + c) * 3 + a\noutput y\nbackward\n",
        "input a\ninput b\ninput c\nu = a + b\ny = sin(u + c) + tanh(u)\noutput y\nbackward\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        mb_graph *g = parse(texts[i]);
        mb_plan *p = NULL;
        mb_err e;
        CHECK(mb_plan_build(g, MB_PLAN_OPTIMAL, &p, &e) == MB_OK);
        int saves_intermediate = 0;
        for (int s = 0; s < p->n_saved; s++)
            saves_intermediate |= p->g->nodes[p->saved[s]].op != MB_OP_INPUT;
        CHECK(saves_intermediate);
        for (int ex = 0; ex < MB_KERN_EXEC_COUNT; ex++) {
            mb_kern_tensors t;
            CHECK(mb_kern_tensors_alloc(p, 3 * MB_KERN_TILE + 77, 0, &t, &e) == MB_OK);
            CHECK(mb_kern_run_plan(&t, (mb_kern_exec)ex, &e) == MB_OK);
            mb_kern_check ck;
            CHECK(mb_kern_verify(&t, 0, 0, &ck, &e) == MB_OK);
            if (!ck.passed) fprintf(stderr, "text %zu exec %d: max rel err %.3g (tol %.3g)\n", i, ex,
                                    ck.max_rel_err, ck.tol);
            CHECK(ck.passed);
            double gerr = 0;
            int gok = 0;
            CHECK(mb_kern_gradcheck(&t, 50, &gerr, &gok, &e) == MB_OK);
            if (!gok) fprintf(stderr, "text %zu exec %d: gradcheck %.3g x tol\n", i, ex, gerr);
            CHECK(gok);
            mb_kern_tensors_free(&t);
        }
        mb_plan_free(p);
        mb_graph_free(g);
    }
}

static void errors(void)
{
    mb_err e;
    mb_graph *fwd = parse("input x\ny = sin(x)\noutput y\n");
    mb_graph *g = parse("input x\ny = sin(x)\noutput y\nbackward\n");
    mb_plan *p = NULL;
    CHECK(mb_plan_build(fwd, MB_PLAN_OPTIMAL, &p, &e) == MB_EINPUT && strstr(e.msg, "eager, fused"));
    CHECK(mb_plan_build_saving(fwd, NULL, 0, &p, &e) == MB_EINPUT);
    CHECK(mb_plan_build_saving(g, NULL, 0, &p, &e) == MB_EINPUT && strstr(e.msg, "input 'x'"));
    int bad = g->n_forward;
    CHECK(mb_plan_build_saving(g, &bad, 1, &p, &e) == MB_EINPUT);
    mb_frontier f;
    CHECK(mb_frontier_build(fwd, 1, &f, &e) == MB_EINPUT);
    CHECK(mb_frontier_build(g, 0, &f, &e) == MB_EINPUT);
    mb_objective o;
    CHECK(mb_objective_parse("time", &o) == MB_OK && o == MB_OBJECTIVE_TIME);
    CHECK(mb_objective_parse("bytes", &o) == MB_OK && o == MB_OBJECTIVE_BYTES);
    CHECK(mb_objective_parse("speed", &o) == MB_EINPUT);
    mb_plan_kind k;
    CHECK(mb_plan_parse("optimal", &k) == MB_OK && k == MB_PLAN_OPTIMAL);
    mb_graph_free(fwd);
    mb_graph_free(g);
}

int main(void)
{
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME")); /* as the CLI does */
    if (!mb_plan_optimal_available()) {
        mb_graph *g = parse("input x\ny = sin(x)\noutput y\nbackward\n");
        mb_plan *p = NULL;
        mb_err e;
        CHECK(!mb_plan_supported(g, MB_PLAN_OPTIMAL));
        CHECK(mb_plan_build(g, MB_PLAN_OPTIMAL, &p, &e) == MB_EINPUT && strstr(e.msg, "igraph"));
        mb_graph_free(g);
        if (mb_t_fail) return mb_test_done();
        printf("built without igraph: skipped\n");
        return 77;
    }
    lecture_case();
    a_real_trade();
    column_handoff();
    mb_graph *g = NULL;
    mb_err e;
    CHECK(mb_parse_variant("name gelu_tanh_bwd\ninput x\ny = 0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))\n"
                           "output y\nbackward\n", "<test>", MB_F32, &g, &e) == MB_OK);
    if (g) against_brute_force(g, "gelu_tanh backward");
    mb_graph_free(g);
    random_expressions();
    random_row_expressions();
    random_col_expressions();
    printf("brute force: %ld graphs (%ld 2-D: reductions, broadcasts; %ld of them with [cols] weights' "
           "gradients), up to %d forward tensors, %ld subsets built; %ld Pareto points, %ld of them inside the "
           "hull (not listed)\n",
           n_graphs, n_row_graphs, n_col_graphs, max_tensors, n_subsets, n_pareto, n_missed);
    time_objective();
    runs_for_real();
    errors();
    return mb_test_done();
}
