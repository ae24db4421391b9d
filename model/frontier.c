/* frontier.c — the memory-traffic frontier of a variant with a backward
 * pass: for each budget of activation memory (bytes saved from forward to
 * backward), the least traffic and the set that achieves it.
 *
 * Parametric minimum cuts (Eisner's recursion for a bicriteria hull): the
 * two ends are the cut of least traffic (ties: least memory) and of least
 * memory (ties: least traffic); between two hull vertices P1 (more memory)
 * and P2, the cut minimising (m1 - m2) x traffic + (t2 - t1) x memory either
 * finds a point strictly below the line P1-P2, a new vertex to recurse on, or
 * proves there is none. Points are costed from the plans themselves
 * (per element, integers, so exact), never from the cut's value. A Pareto
 * point inside the hull (on an edge or above it) is not found: the brute-force
 * test counts how often that happens. Does not print or plot (cli/). */
#include "plan_optimal_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    mb_frontier_point *v;
    int n, cap;
} points;

typedef struct {
    const mb_graph *g;
    const mb_cut_problem *cp;
    double sum_flops;
    points pts;
} fctx;

/* Solves one weighted cut (ties broken by the fewest recomputed flops) and
 * costs its plan per element into *pt (pt->saved owned by the caller). */
static int solve_point(fctx *F, double w_traffic, double w_mem, mb_frontier_point *pt, mb_err *err)
{
    double k = F->sum_flops + 1;
    int *set = NULL, n_set = 0;
    int rc = mb_cut_solve(F->cp, k * w_traffic, k * w_mem, F->cp->flops_pe, &set, &n_set, err);
    mb_plan *p = NULL;
    if (!rc) rc = mb_plan_build_saving(F->g, set, n_set, &p, err);
    free(set);
    if (rc) return rc;
    memset(pt, 0, sizeof *pt);
    pt->saved_bytes = mb_plan_saved_bytes(p, F->cp->shape);
    pt->traffic_bytes = mb_plan_traffic_bytes(p, F->cp->shape);
    pt->recompute_ops_pe = mb_plan_recompute_ops_pe(p, F->g);
    /* the set the plan really reads: a cut never saves what the backward
     * does not read, but the plan is the authority */
    pt->saved = malloc(((size_t)p->n_saved + 1) * sizeof(int));
    if (!pt->saved) { mb_plan_free(p); return mb_err_set(err, MB_ERUN, "out of memory"); }
    pt->n_saved = 0;
    for (int v = 0; v < F->g->n_forward; v++)
        for (int i = 0; i < p->n_saved; i++)
            if (p->saved[i] == v) pt->saved[pt->n_saved++] = v;
    mb_plan_free(p);
    return MB_OK;
}

static int keep(fctx *F, mb_frontier_point *pt, mb_err *err)
{
    if (F->pts.n == F->pts.cap) {
        int cap = F->pts.cap ? 2 * F->pts.cap : 8;
        mb_frontier_point *nv = realloc(F->pts.v, (size_t)cap * sizeof *nv);
        if (!nv) { free(pt->saved); return mb_err_set(err, MB_ERUN, "out of memory"); }
        F->pts.v = nv;
        F->pts.cap = cap;
    }
    F->pts.v[F->pts.n++] = *pt;
    return MB_OK;
}

/* Vertices strictly between a (less memory, more traffic) and b. */
static int between(fctx *F, mb_frontier_point a, mb_frontier_point b, mb_err *err)
{
    int64_t w_traffic = b.saved_bytes - a.saved_bytes, w_mem = a.traffic_bytes - b.traffic_bytes;
    if (w_traffic <= 0 || w_mem <= 0) return MB_OK;
    mb_frontier_point c;
    int rc = solve_point(F, (double)w_traffic, (double)w_mem, &c, err);
    if (rc) return rc;
    /* 128-bit: at 2^28 elements both products pass 2^63 */
    __extension__ typedef __int128 wide;
    wide line = (wide)w_traffic * a.traffic_bytes + (wide)w_mem * a.saved_bytes;
    if ((wide)w_traffic * c.traffic_bytes + (wide)w_mem * c.saved_bytes >= line) {
        free(c.saved);
        return MB_OK;
    }
    if ((rc = between(F, a, c, err))) { free(c.saved); return rc; }
    if ((rc = keep(F, &c, err))) return rc;
    return between(F, c, b, err);
}

int mb_frontier_build(const mb_graph *g, int64_t n, mb_frontier *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 1 || n > MB_N_MAX) return mb_err_set(err, MB_EINPUT, "n = %lld is out of range", (long long)n);
    return mb_frontier_build_shape(g, mb_plan_shape_of_n(g, n), out, err);
}

int mb_frontier_build_shape(const mb_graph *g, mb_shape s, mb_frontier *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    int64_t n = mb_shape_elems(s);
    if (n < 1 || n > MB_N_MAX) return mb_err_set(err, MB_EINPUT, "n = %lld is out of range", (long long)n);
    mb_cut_problem cp;
    int rc = mb_cut_problem_init(&cp, g, s, err);
    if (rc) return rc;
    fctx F = {g, &cp, 0, {0}};
    double sum_mem = 0, sum_traffic = 0;
    for (int v = 0; v < cp.nf; v++) {
        F.sum_flops += cp.flops_pe[v];
        sum_mem += cp.mem_pe[v];
        sum_traffic += cp.traffic_pe[v];
    }
    mb_frontier_point lo, hi; /* least memory; least traffic */
    rc = solve_point(&F, 1, sum_traffic + 1, &lo, err);
    if (!rc && (rc = solve_point(&F, sum_mem + 1, 1, &hi, err))) free(lo.saved);
    if (!rc) {
        if (lo.saved_bytes == hi.saved_bytes && lo.traffic_bytes == hi.traffic_bytes) {
            free(hi.saved);
            rc = keep(&F, &lo, err);
        } else if (!(rc = keep(&F, &lo, err))) {
            if ((rc = between(&F, F.pts.v[0], hi, err))) free(hi.saved);
            else rc = keep(&F, &hi, err);
        }
    }
    mb_cut_problem_free(&cp);
    out->points = F.pts.v;
    out->n_points = F.pts.n;
    out->n = n;
    if (rc) { mb_frontier_free(out); return rc; }
    return MB_OK;
}

void mb_frontier_free(mb_frontier *f)
{
    for (int i = 0; i < f->n_points; i++) free(f->points[i].saved);
    free(f->points);
    memset(f, 0, sizeof *f);
}
