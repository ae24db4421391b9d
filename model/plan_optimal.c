/* plan_optimal.c — the optimal recompute plan: which forward tensors the
 * forward kernel saves for the backward, and which the backward recomputes,
 * chosen as a minimum s-t cut of the joint forward-backward graph (the
 * formulation of PyTorch's min-cut partitioner; max-flow by igraph).
 *
 * Cut graph: each forward tensor v is split into v_in -> v_out, capacity the
 * cost of saving v: the backward reads it (bytes(v)) and the forward writes
 * it, unless it is an input or an output, written anyway (bytes(v)). Data
 * edges u_out -> v_in, source -> each input's v_in, and v_out -> sink for
 * each tensor a backward node reads, are unbounded. A finite cut crosses only
 * split edges: the saved set; the backward recomputes every tensor it needs
 * on the sink side. Every other byte (inputs read by the forward, outputs
 * written, the incoming gradient read, input gradients written) is the same
 * for every set, so the least cut is the least traffic: sigmoid^3 saves x
 * alone and moves 5n, as the lecture's recompute plan. Recomputation costs
 * no bytes; its compute enters as a capacity source -> v_in (a recomputed
 * tensor has v_in on the sink side). The lecture's count only decides the
 * bytes objective; the time objective prices compute against bandwidth.
 * Column reductions (a [cols] weight's gradient) run in a column kernel after
 * the fused backward one (plan.c): a tensor read by both kernels costs one
 * more read when saved; one the column kernel reads costs a write and a read
 * when recomputed (the backward kernel recomputes it and hands it on), a
 * capacity source -> v_in beside its compute.
 * Does not build kernels (plan.c) or the frontier (frontier.c). */
#include "plan_optimal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef MB_HAVE_IGRAPH
#include <igraph.h>
#endif

int mb_plan_optimal_available(void)
{
#ifdef MB_HAVE_IGRAPH
    return 1;
#else
    return 0;
#endif
}

const char *mb_objective_name(mb_objective o)
{
    return o == MB_OBJECTIVE_TIME ? "time" : o == MB_OBJECTIVE_BYTES ? "bytes" : "?";
}

int mb_objective_parse(const char *s, mb_objective *out)
{
    if (!strcmp(s, "bytes")) { *out = MB_OBJECTIVE_BYTES; return MB_OK; }
    if (!strcmp(s, "time")) { *out = MB_OBJECTIVE_TIME; return MB_OK; }
    return MB_EINPUT;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

mb_shape mb_plan_shape_of_n(const mb_graph *g, int64_t n)
{
    if (g->has_gcol && g->dim_size[0] > 0) { /* its bound sizes: a GCOL tensor's rows need them */
        mb_shape s = {2, 1, g->dim_size[g->n_dims - 1], 0};
        for (int d = 0; d + 1 < g->n_dims; d++) s.rows *= g->dim_size[d];
        if (n <= 0 || mb_shape_elems(s) == n) return s;
    }
    if (g->rank != 2) return mb_shape_1d(n > 0 ? n : 1);
    if (g->default_shape.rank == 2 && (n <= 0 || mb_shape_elems(g->default_shape) == n)) return g->default_shape;
    return (mb_shape){2, n > 0 ? n : 1, 1, 0};
}

int mb_cut_problem_init(mb_cut_problem *cp, const mb_graph *g, mb_shape s, mb_err *err)
{
    memset(cp, 0, sizeof *cp);
    s = mb_graph_shape_at(g, s);
    cp->shape = s;
    int rc0 = mb_graph_check_shape(g, s, err);
    if (rc0) return rc0;
    if (!g->has_backward)
        return mb_err_set(err, MB_EINPUT, "variant '%s' has no backward pass: nothing to save", g->name);
    if (!mb_plan_optimal_available())
        return mb_err_set(err, MB_EINPUT, "plan 'optimal' and the frontier need igraph "
                          "(libigraph-dev), which this build lacks: install it and rebuild");
    int nf = g->n_forward;
    cp->g = g;
    cp->nf = nf;
    cp->traffic_pe = calloc((size_t)nf + 1, sizeof(double));
    cp->mem_pe = calloc((size_t)nf + 1, sizeof(double));
    cp->flops_pe = calloc((size_t)nf + 1, sizeof(double));
    cp->xfer_pe = calloc((size_t)nf + 1, sizeof(double));
    cp->needed = calloc((size_t)nf + 1, 1);
    /* the unit: gcd of the tensors' sizes (n at rank 1; gcd(rows, cols) with
     * row statistics or weights), so that every cost is a whole number of
     * bytes and the cut's lexicographic weights stay exact */
    cp->unit_elems = mb_shape_elems(s);
    for (int v = 0; v < nf; v++) cp->unit_elems = gcd64(cp->unit_elems, mb_tensor_elems_at(g, v, s));
    if (cp->unit_elems < 1) cp->unit_elems = 1;
    if (!cp->traffic_pe || !cp->mem_pe || !cp->flops_pe || !cp->xfer_pe || !cp->needed) {
        mb_cut_problem_free(cp);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    char *written = calloc((size_t)nf + 1, 1); /* inputs and outputs: no extra write */
    char *side = malloc((size_t)g->n_nodes + 1); /* backward nodes of the column kernel */
    char *by = calloc((size_t)nf + 1, 1);        /* bit 0: the fused backward reads it, bit 1: the column kernel */
    if (!written || !side || !by) {
        free(written); free(side); free(by);
        mb_cut_problem_free(cp);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    mb_graph_column_side(g, side);
    for (int i = nf; i < g->n_nodes; i++)
        for (int a = 0; a < 2; a++) {
            int t = g->nodes[i].arg[a];
            if (t >= 0 && t < nf) by[t] |= (char)(side[i] ? 2 : 1);
        }
    for (int k = 0; k < g->n_inputs; k++) written[g->inputs[k]] = 1;
    for (int k = 0; k < g->n_outputs; k++) written[g->outputs[k]] = 1;
    for (int v = 0; v < nf; v++) {
        double b = (double)(mb_tensor_elems_at(g, v, s) / cp->unit_elems * (int64_t)mb_dtype_bytes(g->nodes[v].dtype));
        mb_op_cost c = mb_node_cost(g, v);
        cp->mem_pe[v] = b;
        cp->traffic_pe[v] = (written[v] ? b : 2 * b) + (by[v] == 3 ? b : 0);
        cp->flops_pe[v] = g->nodes[v].op == MB_OP_INPUT ? 0 : c.flops + c.sfu_ops;
        cp->xfer_pe[v] = (by[v] & 2) && g->nodes[v].op != MB_OP_INPUT ? 2 * b : 0;
        cp->needed[v] = by[v] != 0;
    }
    free(written);
    free(side);
    free(by);
    return MB_OK;
}

void mb_cut_problem_free(mb_cut_problem *cp)
{
    free(cp->traffic_pe);
    free(cp->mem_pe);
    free(cp->flops_pe);
    free(cp->xfer_pe);
    free(cp->needed);
    memset(cp, 0, sizeof *cp);
}

#ifdef MB_HAVE_IGRAPH
/* igraph's default handler aborts; a library must return instead. */
static int cut_igraph(const mb_cut_problem *cp, const double *cap_save, const double *cap_recompute,
                      char *source_side)
{
    const mb_graph *g = cp->g;
    int nf = cp->nf, src = 2 * nf, snk = 2 * nf + 1;
    double finite = 1;
    for (int v = 0; v < nf; v++) finite += cap_save[v] + (cap_recompute ? cap_recompute[v] : 0);
    /* an unbounded edge: more than every finite edge together, so a minimum
     * cut never crosses one (cutting every input's split edge is finite) */
    const double inf = 2 * finite;

    igraph_error_handler_t *old = igraph_set_error_handler(igraph_error_handler_ignore);
    igraph_vector_int_t edges, part;
    igraph_vector_t caps;
    igraph_t graph;
    int have_graph = 0, rc = MB_ERUN;
    if (igraph_vector_int_init(&edges, 0) != IGRAPH_SUCCESS) goto out0;
    if (igraph_vector_init(&caps, 0) != IGRAPH_SUCCESS) goto out1;
    if (igraph_vector_int_init(&part, 0) != IGRAPH_SUCCESS) goto out2;
#define EDGE(a, b, c)                                                                          \
    do {                                                                                       \
        if (igraph_vector_int_push_back(&edges, (a)) || igraph_vector_int_push_back(&edges, (b)) || \
            igraph_vector_push_back(&caps, (c)))                                               \
            goto out3;                                                                         \
    } while (0)
    for (int v = 0; v < nf; v++) {
        EDGE(2 * v, 2 * v + 1, cap_save[v]);
        if (g->nodes[v].op == MB_OP_INPUT) EDGE(src, 2 * v, inf);
        else if (cap_recompute && cap_recompute[v] > 0) EDGE(src, 2 * v, cap_recompute[v]);
        if (cp->needed[v]) EDGE(2 * v + 1, snk, inf);
        for (int a = 0; a < 2; a++) {
            int u = g->nodes[v].arg[a];
            if (u >= 0) EDGE(2 * u + 1, 2 * v, inf);
        }
    }
#undef EDGE
    if (igraph_create(&graph, &edges, 2 * nf + 2, IGRAPH_DIRECTED) != IGRAPH_SUCCESS) goto out3;
    have_graph = 1;
    igraph_real_t value = 0;
    if (igraph_st_mincut(&graph, &value, NULL, &part, NULL, src, snk, &caps) != IGRAPH_SUCCESS)
        goto out3;
    if (!(value < finite)) goto out3; /* cannot happen: the inputs' edges are a finite cut */
    memset(source_side, 0, (size_t)(2 * nf + 2));
    for (igraph_integer_t i = 0; i < igraph_vector_int_size(&part); i++) {
        igraph_integer_t x = VECTOR(part)[i];
        if (x >= 0 && x < 2 * nf + 2) source_side[x] = 1;
    }
    rc = MB_OK;
out3:
    if (have_graph) igraph_destroy(&graph);
    igraph_vector_int_destroy(&part);
out2:
    igraph_vector_destroy(&caps);
out1:
    igraph_vector_int_destroy(&edges);
out0:
    igraph_set_error_handler(old);
    return rc;
}
#endif

int mb_cut_solve(const mb_cut_problem *cp, double w_traffic, double w_mem, const double *recompute,
                 int **saved, int *n_saved, mb_err *err)
{
    *saved = NULL;
    *n_saved = 0;
#ifdef MB_HAVE_IGRAPH
    int nf = cp->nf;
    double *cap = malloc(((size_t)nf + 1) * sizeof *cap);
    char *side = malloc((size_t)(2 * nf + 2));
    int *set = malloc(((size_t)nf + 1) * sizeof *set);
    if (!cap || !side || !set) {
        free(cap); free(side); free(set);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    double *rec = malloc(((size_t)nf + 1) * sizeof *rec);
    if (!rec) {
        free(cap); free(side); free(set);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    for (int v = 0; v < nf; v++) {
        cap[v] = w_traffic * cp->traffic_pe[v] + w_mem * cp->mem_pe[v];
        rec[v] = (recompute ? recompute[v] : 0) + w_traffic * cp->xfer_pe[v];
    }
    int rc = cut_igraph(cp, cap, rec, side);
    free(cap);
    free(rec);
    if (rc) {
        free(side); free(set);
        return mb_err_set(err, MB_ERUN, "igraph: minimum cut of '%s' failed", cp->g->name);
    }
    int n = 0;
    for (int v = 0; v < nf; v++)
        if (side[2 * v] && !side[2 * v + 1]) set[n++] = v;
    free(side);
    *saved = set;
    *n_saved = n;
    return MB_OK;
#else
    (void)cp; (void)w_traffic; (void)w_mem; (void)recompute;
    return mb_err_set(err, MB_EINPUT, "plan 'optimal' and the frontier need igraph "
                      "(libigraph-dev), which this build lacks: install it and rebuild");
#endif
}

static int64_t bytes_at(const mb_graph *g, int t, mb_shape s)
{
    return mb_tensor_elems_at(g, t, s) * (int64_t)mb_dtype_bytes(g->nodes[t].dtype);
}

int64_t mb_plan_traffic_bytes(const mb_plan *p, mb_shape s)
{
    int64_t bytes = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        for (int r = 0; r < K->n_reads; r++) bytes += bytes_at(p->g, K->reads[r], s);
        for (int w = 0; w < K->n_writes; w++) bytes += bytes_at(p->g, K->writes[w], s);
    }
    return bytes;
}

int64_t mb_plan_saved_bytes(const mb_plan *p, mb_shape s)
{
    int64_t bytes = 0;
    for (int i = 0; i < p->n_saved; i++) bytes += bytes_at(p->g, p->saved[i], s);
    return bytes;
}

double mb_plan_recompute_ops_pe(const mb_plan *p, const mb_graph *g)
{
    double f = 0;
    for (int i = g->n_nodes; i < p->g->n_nodes; i++) {
        if (p->g->nodes[i].shape == MB_SHC_PART) continue; /* a split colsum (--colsum partial), not a clone */
        mb_op_cost c = mb_node_cost(p->g, i);
        f += c.flops + c.sfu_ops;
    }
    return f;
}

/* Least traffic, then least saved bytes, then least recomputed flops: one
 * cut with the three weighed lexicographically (per-element integers, so
 * the sums stay exact in a double up to thousands of tensors). */
static int cut_bytes(const mb_cut_problem *cp, int **saved, int *n_saved, mb_err *err)
{
    double sum_mem = 0, sum_flops = 0;
    for (int v = 0; v < cp->nf; v++) {
        sum_mem += cp->mem_pe[v];
        sum_flops += cp->flops_pe[v];
    }
    double w_mem = sum_flops + 1, w_traffic = w_mem * (sum_mem + 1);
    return mb_cut_solve(cp, w_traffic, w_mem, cp->flops_pe, saved, n_saved, err);
}

/* Seconds to compute node v per element on d, alone: at the measured op rate
 * when calibrated, else its FP32 instructions at half the peak (an FMA is two
 * flops) or its SFU ops, whichever is longer (roofline.c's rule). */
static double node_compute_s(const mb_graph *g, int v, const mb_device *d)
{
    mb_op_cost c = mb_node_cost(g, v);
    if (d->op_geps[g->nodes[v].op] > 0) return 1.0 / (d->op_geps[g->nodes[v].op] * 1e9);
    double lanes = d->fp32_tflops * 1e12 / 2;
    double sfu = d->sfu_tops > 0 ? d->sfu_tops * 1e12 : d->fp32_tflops * 1e12 / 16.0;
    return fmax(lanes > 0 ? c.flops / lanes : 0, sfu > 0 ? c.sfu_ops / sfu : 0);
}

/* Time objective: cuts that price recomputing v at weight x its compute
 * seconds x bandwidth (bytes it could have moved meanwhile), for weights
 * from 0 (pure bytes) to 4096 (saving almost anything beats recomputing);
 * each candidate is costed by the full roofline model (max of memory and
 * compute per kernel, cache, launch) and the fastest kept. */
static int build_time(const mb_graph *g, const mb_cut_problem *cp, const mb_device *d,
                      mb_plan **out, mb_err *err)
{
    static const double weights[] = {1.0 / 16, 0.25, 1, 4, 16, 64, 256, 1024, 4096};
    double *recompute = calloc((size_t)cp->nf + 1, sizeof *recompute);
    if (!recompute) return mb_err_set(err, MB_ERUN, "out of memory");
    double bw = mb_device_bandwidth_gbs(d, NULL) * 1e9;
    mb_plan *best = NULL;
    double best_s = INFINITY;
    int rc = MB_OK;
    for (int w = -1; w < (int)(sizeof weights / sizeof weights[0]) && !rc; w++) {
        int *set = NULL, n_set = 0;
        if (w < 0) {
            rc = cut_bytes(cp, &set, &n_set, err);
        } else {
            for (int v = 0; v < cp->nf; v++)
                recompute[v] = g->nodes[v].op == MB_OP_INPUT ? 0 : weights[w] * node_compute_s(g, v, d) * bw *
                               (double)(mb_shape_elems(cp->shape) / cp->unit_elems);
            rc = mb_cut_solve(cp, 1, 0, recompute, &set, &n_set, err);
        }
        mb_plan *p = NULL;
        if (!rc) rc = mb_plan_build_saving(g, set, n_set, &p, err);
        free(set);
        mb_estimate e;
        if (!rc) rc = cp->shape.rank == 2 ? mb_estimate_plan_shape(p, cp->shape, d, &e, err)
                                          : mb_estimate_plan(p, mb_shape_elems(cp->shape), d, &e, err);
        if (rc) { mb_plan_free(p); break; }
        if (e.total.time_s < best_s) {
            best_s = e.total.time_s;
            mb_plan_free(best);
            best = p;
        } else {
            mb_plan_free(p);
        }
        mb_estimate_free(&e);
    }
    free(recompute);
    if (rc) { mb_plan_free(best); return rc; }
    *out = best;
    return MB_OK;
}

int mb_plan_build_optimal(const mb_graph *g, mb_objective obj, int64_t n, const mb_device *d,
                          mb_plan **out, mb_err *err)
{
    return mb_plan_build_optimal_shape(g, obj, mb_plan_shape_of_n(g, n), d, out, err);
}

int mb_plan_build_optimal_shape(const mb_graph *g, mb_objective obj, mb_shape s, const mb_device *d,
                                mb_plan **out, mb_err *err)
{
    *out = NULL;
    if (obj == MB_OBJECTIVE_TIME && !d)
        return mb_err_set(err, MB_EINPUT, "the time objective needs a device");
    mb_cut_problem cp;
    int rc = mb_cut_problem_init(&cp, g, s, err);
    if (rc) return rc;
    if (obj == MB_OBJECTIVE_TIME) {
        rc = build_time(g, &cp, d, out, err);
    } else {
        int *set = NULL, n_set = 0;
        rc = cut_bytes(&cp, &set, &n_set, err);
        if (!rc) rc = mb_plan_build_saving(g, set, n_set, out, err);
        free(set);
    }
    mb_cut_problem_free(&cp);
    return rc;
}
