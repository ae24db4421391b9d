/* plan_optimal_int.h — shared by plan_optimal.c and frontier.c only: the
 * joint forward-backward graph as a cut problem, its solver, and the traffic
 * and memory of a plan. Not part of the public API. */
#ifndef MB_PLAN_OPTIMAL_INT_H
#define MB_PLAN_OPTIMAL_INT_H

#include "model_int.h"

/* Per forward node v, per unit (below): traffic_pe[v] bytes if v is saved (the
 * backward reads it; the forward writes it unless it is an input or an
 * output, written anyway), mem_pe[v] bytes it keeps alive, flops_pe[v]
 * flops + SFU ops to recompute it, needed[v] = 1 when a backward node reads
 * it directly. With column reductions (plan.c's column kernel after the fused
 * backward one) a tensor both kernels read costs one read more if saved, and
 * xfer_pe[v] if recomputed. */
typedef struct mb_cut_problem {
    const mb_graph *g;
    mb_shape shape;     /* the shape the costs are at: a row
                           statistic [rows, 1] costs rows, a full tensor rows x cols */
    int64_t unit_elems; /* traffic_pe and mem_pe are bytes per unit_elems
                           elements of each tensor (the gcd of their sizes:
                           1 at rank 1), flops_pe per element */
    int nf;
    double *traffic_pe, *mem_pe, *flops_pe;
    double *xfer_pe;    /* bytes per unit moved when v is recomputed for the
                           column kernel (written by the fused backward kernel
                           that recomputes it, read by the column kernel) */
    char *needed;
} mb_cut_problem;

int mb_cut_problem_init(mb_cut_problem *cp, const mb_graph *g, mb_shape s, mb_err *err);
/* The shape a call that gives only n plans g at: [n] at rank 1; at rank 2
 * g's own 'shape' when it has n elements, else n rows of 1. */
mb_shape mb_plan_shape_of_n(const mb_graph *g, int64_t n);
void mb_cut_problem_free(mb_cut_problem *cp);

/* A minimum s-t cut of the joint graph where saving v costs
 * w_traffic x traffic_pe[v] + w_mem x mem_pe[v] and recomputing it costs
 * recompute[v] (NULL: free). *saved (malloc'd, ascending ids) is the set the
 * cut crosses. MB_EINPUT without igraph, MB_ERUN when igraph fails. */
int mb_cut_solve(const mb_cut_problem *cp, double w_traffic, double w_mem, const double *recompute,
                 int **saved, int *n_saved, mb_err *err);

/* Read + write bytes of all of p's kernels at shape s (the lecture's
 * count), and the bytes of the tensors p keeps from forward to backward. */
int64_t mb_plan_traffic_bytes(const mb_plan *p, mb_shape s);
int64_t mb_plan_saved_bytes(const mb_plan *p, mb_shape s);

#endif
