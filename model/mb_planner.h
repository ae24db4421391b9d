/* mb_planner.h — the optimal recompute plan (a minimum cut of the joint
 * forward-backward graph) and the memory-traffic frontier. Needs igraph
 * (mb_plan_optimal_available says whether this build has it). Does not
 * cost plans itself (mb_traffic.h). */
#ifndef MB_PLANNER_H
#define MB_PLANNER_H

#include "mb_traffic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the optimal recompute plan and the memory-traffic frontier ---------- */

/* 1 when this build has igraph, which the optimal plan and the frontier need;
 * without it they fail with MB_EINPUT saying so. */
int mb_plan_optimal_available(void);

/* What the optimal plan minimises: the lecture's bytes (forward writes plus
 * backward reads), or the roofline time of both kernels on a device. */
typedef enum mb_objective { MB_OBJECTIVE_BYTES = 0, MB_OBJECTIVE_TIME } mb_objective;
const char *mb_objective_name(mb_objective o);          /* "bytes", "time" */
int mb_objective_parse(const char *s, mb_objective *out); /* MB_OK or MB_EINPUT */

/* Builds a plan of the optimal plan's shape (kind MB_PLAN_OPTIMAL): one fused
 * forward kernel that also writes the forward tensors saved[] (node ids
 * < g->n_forward), one fused backward kernel that reads them and recomputes
 * every other forward tensor it needs. A saved tensor the backward does not
 * read is not written. MB_EINPUT when g has no backward, an id is not a
 * forward node, or the backward needs an input that is not saved. */
int mb_plan_build_saving(const mb_graph *g, const int *saved, int n_saved, mb_plan **out,
                         mb_err *err);

/* Builds the optimal plan for g. MB_OBJECTIVE_BYTES: the saved set of least
 * traffic, ties to the least saved bytes, then the least recomputed flops; n
 * and d are not used (may be 0, NULL). MB_OBJECTIVE_TIME: of the minimum
 * cuts that weigh recomputation's compute time against bytes / bandwidth of
 * d (weights 0, 1/16 ... 4096), the plan of least modelled time at n on d.
 * mb_plan_build(g, MB_PLAN_OPTIMAL) is the bytes objective. */
int mb_plan_build_optimal(const mb_graph *g, mb_objective obj, int64_t n, const mb_device *d,
                          mb_plan **out, mb_err *err);
/* The same at a shape (rank 2: a [rows, 1] row statistic costs rows, a full
 * tensor rows x cols; mb_plan_build_optimal plans a 2-D graph at its own
 * 'shape'). */
int mb_plan_build_optimal_shape(const mb_graph *g, mb_objective obj, mb_shape s, const mb_device *d,
                                mb_plan **out, mb_err *err);

/* Flops + SFU ops per element that plan p, built from g, spends evaluating
 * forward tensors again in its backward kernel (0 for store). */
double mb_plan_recompute_ops_pe(const mb_plan *p, const mb_graph *g);

/* One point of the frontier: a saved set, the activation memory it keeps
 * between forward and backward, and the traffic of its plan. */
typedef struct mb_frontier_point {
    int64_t saved_bytes;     /* at n elements: what the plan keeps alive */
    int64_t traffic_bytes;   /* read + write bytes of both kernels at n */
    double recompute_ops_pe; /* flops + SFU ops per element the backward
                                spends recomputing */
    int *saved, n_saved;     /* forward node ids, ascending; owned */
} mb_frontier_point;

typedef struct mb_frontier {
    mb_frontier_point *points; /* by saved_bytes ascending, traffic descending */
    int n_points;
    int64_t n;
} mb_frontier;

/* The memory-traffic frontier of g at n: for a budget B of saved bytes the
 * least traffic is that of the last point with saved_bytes <= B (none below
 * the first point: no smaller set feeds the backward). The points are the
 * vertices of the frontier's lower convex hull, each a minimum cut of
 * traffic + w x saved bytes for some w >= 0 (parametric cuts, found
 * exactly); a budget strictly between two of them may admit a set the hull
 * does not list. out->points is allocated; free with mb_frontier_free. */
int mb_frontier_build(const mb_graph *g, int64_t n, mb_frontier *out, mb_err *err);
/* The same at shape s (points' bytes at s; out->n its elements). */
int mb_frontier_build_shape(const mb_graph *g, mb_shape s, mb_frontier *out, mb_err *err);
void mb_frontier_free(mb_frontier *f);

#ifdef __cplusplus
}
#endif
#endif
