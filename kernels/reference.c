/* reference.c — the float64 reference of a plan's graph (mb_ops.h's f64
 * definitions, element by element) and the checks built on it: result error
 * against a run, and the finite-difference gradient check of backward plans.
 * Does not run the executors or time anything. */
#include "kernels.h"
#include "mb_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double mb_kern_default_tol(mb_dtype t)
{
    switch (t) {
    case MB_F32: return 1e-4;
    case MB_F16: return 1e-2;
    case MB_BF16: return 6e-2;
    case MB_DTYPE_COUNT: break;
    }
    return 1e-4;
}

/* Evaluates nodes [0, upto) of g at one element; inputs already in vals. */
static void eval_nodes(const mb_graph *g, int upto, double *vals)
{
    for (int i = 0; i < upto; i++) {
        const mb_node *nd = &g->nodes[i];
        if (nd->op == MB_OP_INPUT) continue;
        double a = nd->arg[0] >= 0 ? vals[nd->arg[0]] : nd->scalar[0];
        double b = 0.0;
        if (mb_op_arity(nd->op) >= 2) b = nd->arg[1] >= 0 ? vals[nd->arg[1]] : nd->scalar[1];
        vals[i] = mb_op_apply_f64(nd->op, a, b);
    }
}

/* Topological order of all nodes (operands first). A plan's graph is not in
 * index order: recompute appends clones of forward nodes after the backward
 * nodes that use them. Returns the count written to order. */
static int topo_order(const mb_graph *g, int *order, unsigned char *state, int *stack)
{
    int cnt = 0;
    memset(state, 0, (size_t)g->n_nodes);
    for (int root = 0; root < g->n_nodes; root++) {
        if (state[root]) continue;
        int sp = 0;
        stack[sp++] = root;
        while (sp) {
            int v = stack[sp - 1];
            if (state[v] == 2) { sp--; continue; }
            state[v] = 1;
            int pushed = 0;
            const mb_node *nd = &g->nodes[v];
            int ar = nd->op == MB_OP_INPUT ? 0 : mb_op_arity(nd->op);
            for (int a = 0; a < ar; a++) {
                int u = nd->arg[a];
                if (u >= 0 && u < g->n_nodes && state[u] == 0) { stack[sp++] = u; pushed = 1; }
            }
            if (!pushed) { state[v] = 2; order[cnt++] = v; sp--; }
        }
    }
    return cnt;
}

/* Evaluates the nodes listed in order at one element; inputs already in vals. */
static void eval_order(const mb_graph *g, const int *order, int cnt, double *vals)
{
    for (int k = 0; k < cnt; k++) {
        int i = order[k];
        const mb_node *nd = &g->nodes[i];
        if (nd->op == MB_OP_INPUT) continue;
        double a = nd->arg[0] >= 0 ? vals[nd->arg[0]] : nd->scalar[0];
        double b = 0.0;
        if (mb_op_arity(nd->op) >= 2) b = nd->arg[1] >= 0 ? vals[nd->arg[1]] : nd->scalar[1];
        vals[i] = mb_op_apply_f64(nd->op, a, b);
    }
}

/* A graph's evaluation order, computed once per check. */
typedef struct ref_order {
    int *order;
    int cnt;
} ref_order;

static int ref_order_make(const mb_graph *g, ref_order *ro)
{
    int nn = g->n_nodes;
    ro->order = malloc((size_t)(nn + 1) * sizeof(int));
    int *stack = malloc((size_t)(nn * 3 + 1) * sizeof(int));
    unsigned char *state = malloc((size_t)nn + 1);
    if (!ro->order || !stack || !state) {
        free(ro->order);
        free(stack);
        free(state);
        ro->order = NULL;
        return MB_ERUN;
    }
    ro->cnt = topo_order(g, ro->order, state, stack);
    free(stack);
    free(state);
    return MB_OK;
}

static void load_inputs(const mb_kern_tensors *t, int64_t i, double *vals)
{
    const mb_graph *g = t->plan->g;
    for (int j = 0; j < g->n_nodes; j++) {
        vals[j] = 0.0;
        if (g->nodes[j].op == MB_OP_INPUT && t->data[j])
            vals[j] = (double)mb_load_f32(t->data[j], i, g->nodes[j].dtype);
    }
}

static void reference_elem(const mb_kern_tensors *t, const ref_order *ro, int64_t i, double *vals)
{
    load_inputs(t, i, vals);
    eval_order(t->plan->g, ro->order, ro->cnt, vals);
}

void mb_kern_reference_elem(const mb_kern_tensors *t, int64_t i, double *vals)
{
    ref_order ro;
    if (ref_order_make(t->plan->g, &ro)) {
        for (int j = 0; j < t->plan->g->n_nodes; j++) vals[j] = NAN;
        return;
    }
    reference_elem(t, &ro, i, vals);
    free(ro.order);
}

/* The magnitudes that went into each node at one element: the value with
 * every sum taken over absolute values (|a| + |b| for + and -, products and
 * quotients of magnitudes for * and /, |value| for the other ops). A result
 * that is zero in exact arithmetic (the gradient of sin^2 + cos^2: 2 sin cos
 * - 2 cos sin) keeps the size of the terms that cancelled, and the f32
 * rounding of those terms is judged against it, not against 1e-17. */
static void magnitudes(const mb_graph *g, const int *order, int cnt, const double *vals, double *m)
{
    for (int k = 0; k < cnt; k++) {
        int i = order[k];
        const mb_node *nd = &g->nodes[i];
        double v = fabs(vals[i]);
        if (nd->op == MB_OP_INPUT) {
            m[i] = v;
            continue;
        }
        double ma = nd->arg[0] >= 0 ? m[nd->arg[0]] : fabs(nd->scalar[0]);
        double mb = 0.0, b = 0.0;
        if (mb_op_arity(nd->op) >= 2) {
            mb = nd->arg[1] >= 0 ? m[nd->arg[1]] : fabs(nd->scalar[1]);
            b = nd->arg[1] >= 0 ? vals[nd->arg[1]] : nd->scalar[1];
        }
        switch (mb_op_info_of(nd->op)->mag) { /* op_table.h's mag column */
        case MB_MAG_SUM: m[i] = ma + mb; break;
        case MB_MAG_PROD: m[i] = ma * mb; break;
        case MB_MAG_QUOT: m[i] = b != 0.0 ? ma / fabs(b) : v; break;
        case MB_MAG_PASS: m[i] = ma; break;
        case MB_MAG_VALUE: m[i] = v; break;
        }
        if (!isfinite(m[i]) || m[i] < v) m[i] = v;
    }
}

/* Error of got against want with denominator floor; inf for a non-finite mismatch. */
static double elem_err(double got, double want, double floor_abs)
{
    if (isnan(want) || isnan(got)) return (isnan(want) && isnan(got)) ? 0.0 : INFINITY;
    if (isinf(want) || isinf(got)) return got == want ? 0.0 : INFINITY;
    double den = fabs(want) > floor_abs ? fabs(want) : floor_abs;
    if (den == 0.0) return got == 0.0 ? 0.0 : INFINITY;
    return fabs(got - want) / den;
}

int mb_kern_verify(const mb_kern_tensors *t, unsigned poison_rep, double tol,
                   mb_kern_check *out, mb_err *err)
{
    const mb_plan *p = t->plan;
    const mb_graph *g = p->g;
    int nn = g->n_nodes;
    memset(out, 0, sizeof *out);
    out->first_bad = -1;
    out->first_bad_node = -1;
    mb_dtype worst = MB_F32;
    for (int r = 0; r < p->n_results; r++) {
        mb_dtype dt = g->nodes[p->results[r]].dtype;
        if (mb_kern_default_tol(dt) > mb_kern_default_tol(worst)) worst = dt;
    }
    out->tol = tol > 0 ? tol : mb_kern_default_tol(worst);
    int64_t n = t->n;
    float pv = mb_kern_poison_value(poison_rep);
    for (int r = 0; r < p->n_results; r++) {
        int node = p->results[r];
        if (!t->data[node])
            return mb_err_set(err, MB_EINPUT, "result node %d has no storage", node);
    }
    ref_order ro;
    if (ref_order_make(g, &ro)) return mb_err_set(err, MB_ERUN, "out of memory");
    /* scale of each result from a strided sample: the denominator floor */
    double *scale = calloc((size_t)p->n_results + 1, sizeof(double));
    if (!scale) {
        free(ro.order);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    int64_t stride = n > 4096 ? n / 4096 : 1;
    int fail_alloc = 0;
#pragma omp parallel
    {
        double *vals = malloc((size_t)nn * sizeof(double));
        if (!vals) {
#pragma omp atomic write
            fail_alloc = 1;
        }
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i += stride) {
            if (!vals) continue;
            reference_elem(t, &ro, i, vals);
            for (int r = 0; r < p->n_results; r++) {
                double v = fabs(vals[p->results[r]]);
                if (isfinite(v)) {
#pragma omp critical(mb_ref_scale)
                    if (v > scale[r]) scale[r] = v;
                }
            }
        }
        free(vals);
    }
    if (fail_alloc) {
        free(scale);
        free(ro.order);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    double max_err = 0.0;
    int64_t bad = 0, poisoned = 0, first_bad = -1;
    int first_node = -1;
    double first_got = 0, first_want = 0;
    double tolv = out->tol;
#pragma omp parallel
    {
        double *vals = malloc((size_t)nn * sizeof(double));
        double *mags = malloc((size_t)nn * sizeof(double));
        double my_max = 0.0;
        int64_t my_bad = 0, my_poison = 0, my_first = -1;
        int my_node = -1;
        double my_got = 0, my_want = 0;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; i++) {
            if (!vals || !mags) continue;
            reference_elem(t, &ro, i, vals);
            magnitudes(g, ro.order, ro.cnt, vals, mags);
            for (int r = 0; r < p->n_results; r++) {
                int node = p->results[r];
                mb_dtype dt = g->nodes[node].dtype;
                float got = mb_load_f32(t->data[node], i, dt);
                int is_poison = 0;
                if (dt == MB_F32) is_poison = got == pv;
                else if (dt == MB_BF16) is_poison = ((const uint16_t *)t->data[node])[i] == mb_f32_to_bf16(pv);
                else is_poison = ((const uint16_t *)t->data[node])[i] == mb_f32_to_f16(pv);
                double e = elem_err((double)got, vals[node], fmax(1e-3 * scale[r], mags[node]));
                if (is_poison && fabs(vals[node] - (double)pv) > 1e-3 * fabs((double)pv)) {
                    my_poison++;
                    e = INFINITY;
                }
                if (e > my_max) my_max = e;
                if (!(e <= tolv)) {
                    if (my_first < 0 || i < my_first) {
                        my_first = i;
                        my_node = node;
                        my_got = got;
                        my_want = vals[node];
                    }
                    my_bad++;
                }
            }
        }
#pragma omp critical(mb_ref_merge)
        {
            if (my_max > max_err) max_err = my_max;
            bad += my_bad;
            poisoned += my_poison;
            if (my_first >= 0 && (first_bad < 0 || my_first < first_bad)) {
                first_bad = my_first;
                first_node = my_node;
                first_got = my_got;
                first_want = my_want;
            }
            if (!vals || !mags) fail_alloc = 1;
        }
        free(vals);
        free(mags);
    }
    free(scale);
    free(ro.order);
    if (fail_alloc) return mb_err_set(err, MB_ERUN, "out of memory");
    out->max_rel_err = max_err;
    out->bad = bad;
    out->poisoned = poisoned;
    out->first_bad = first_bad;
    out->first_bad_node = first_node;
    out->first_got = first_got;
    out->first_want = first_want;
    out->passed = bad == 0 && poisoned == 0;
    return MB_OK;
}

int mb_kern_gradcheck(const mb_kern_tensors *t, int n_points, double *max_err, int *passed,
                      mb_err *err)
{
    const mb_graph *g = t->plan->g;
    if (!g->has_backward)
        return mb_err_set(err, MB_EINPUT, "%s has no backward pass to check", g->name);
    int nn = g->n_nodes;
    double *base = malloc((size_t)nn * sizeof(double));
    double *pert = malloc((size_t)nn * sizeof(double));
    if (!base || !pert) {
        free(base);
        free(pert);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    ref_order ro;
    if (ref_order_make(g, &ro)) {
        free(base);
        free(pert);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    if (n_points < 1) n_points = 1;
    int64_t step = t->n / n_points > 0 ? t->n / n_points : 1;
    double worst = 0.0;
    for (int64_t i = 0; i < t->n; i += step) {
        reference_elem(t, &ro, i, base);
        for (int j = 0; j < g->n_inputs; j++) {
            int xin = g->inputs[j];
            if (g->grad_inputs[j] < 0) continue;
            double ana = base[g->grad_inputs[j]];
            double x0 = base[xin];
            double h = 1e-6 * (fabs(x0) > 1.0 ? fabs(x0) : 1.0);
            double f[2];
            for (int s = 0; s < 2; s++) {
                memcpy(pert, base, (size_t)nn * sizeof(double));
                pert[xin] = x0 + (s ? -h : h);
                eval_nodes(g, g->n_forward, pert);
                double acc = 0.0;
                for (int o = 0; o < g->n_outputs; o++)
                    acc += base[g->grad_outputs[o]] * pert[g->outputs[o]];
                f[s] = acc;
            }
            double num = (f[0] - f[1]) / (2.0 * h);
            double e = fabs(num - ana) / (1e-5 + 1e-3 * fabs(ana));
            if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
        }
    }
    free(base);
    free(pert);
    free(ro.order);
    *max_err = worst;
    *passed = worst <= 1.0;
    return MB_OK;
}
