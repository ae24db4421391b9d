/* reference.c — the float64 reference of a plan's graph (mb_ops.h's f64
 * definitions, element by element) and the checks built on it: result error
 * against a run, and the finite-difference gradient check of backward plans.
 * Does not run the executors or time anything. */
#include "kernels_int.h"
#include "mb_child.h"
#include "mb_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* One thread's share of a check: what mb_kern_check counts. */
typedef struct cmp_acc {
    double max_err, inacc_max;
    int64_t bad, poisoned, inaccurate, range, first;
    int node;
    double got, want;
} cmp_acc;

/* Per-thread scratch of compare_all. */
typedef struct cmp_scratch {
    double *vals, *mags;
    mb_kern_f32_elem f32;
    int64_t f32_at; /* element f32 holds, -1: none */
} cmp_scratch;

/* Bad elements of one thread after which the others are counted bad without
 * the f32 judgement: the row has failed, and a large failing plan would
 * spend minutes carrying bounds through every element. */
#define JUDGE_BAD_MAX 256

/* Judges result r of t's plan at element i (the reference already in
 * s->vals and s->mags) into acc. */
static void compare_elem(const mb_kern_tensors *t, const ref_order *ro, const double *scale, float pv,
                         double tolv, int r, int64_t i, cmp_scratch *s, cmp_acc *acc)
{
    const mb_plan *p = t->plan;
    int node = p->results[r];
    mb_dtype dt = p->g->nodes[node].dtype;
    float got = mb_load_f32(t->data[node], i, dt);
    int is_poison = 0;
    if (dt == MB_F32) is_poison = got == pv;
    else if (dt == MB_BF16) is_poison = ((const uint16_t *)t->data[node])[i] == mb_f32_to_bf16(pv);
    else is_poison = ((const uint16_t *)t->data[node])[i] == mb_f32_to_f16(pv);
    double want = s->vals[node];
    double den = fmax(1e-3 * scale[r], s->mags[node]);
    double e = elem_err((double)got, want, den);
    if (is_poison && fabs(want - (double)pv) > 1e-3 * fabs((double)pv)) {
        acc->poisoned++;
        e = INFINITY;
    } else if (!(e <= tolv) && acc->bad < JUDGE_BAD_MAX) { /* what correct f32 evaluation gives? */
        if (s->f32_at != i) {
            mb_kern_f32_bound(p->g, ro->order, ro->cnt, s->vals, &s->f32);
            s->f32_at = i;
        }
        den = fabs(want) > den ? fabs(want) : den;
        int v = mb_kern_f32_judge(&s->f32, node, dt, (double)got, want, den, tolv);
        if (v != MB_KERN_F32_OFF) {
            acc->inaccurate++;
            if (v == MB_KERN_F32_RANGE) { /* no finite error: left out of max_rel_err */
                acc->range++;
                return;
            }
            if (e > acc->inacc_max) acc->inacc_max = e;
            if (e > acc->max_err) acc->max_err = e;
            return;
        }
    }
    if (e > acc->max_err) acc->max_err = e;
    if (!(e <= tolv)) {
        if (acc->first < 0 || i < acc->first) {
            acc->first = i;
            acc->node = node;
            acc->got = got;
            acc->want = want;
        }
        acc->bad++;
    }
}

/* Every element of every result of t's plan against the reference, into
 * out. MB_ERUN when memory runs out. */
/* compare_all's code for a check cut short by an interrupt */
#define MB_EINTR_CHECK (-2)

static int compare_all(const mb_kern_tensors *t, const ref_order *ro, const double *scale,
                       unsigned poison_rep, mb_kern_check *out)
{
    const mb_plan *p = t->plan;
    const int nn = p->g->n_nodes;
    const float pv = mb_kern_poison_value(poison_rep);
    const double tolv = out->tol;
    cmp_acc all = {0, 0, 0, 0, 0, 0, -1, -1, 0, 0};
    int fail_alloc = 0;
#pragma omp parallel
    {
        cmp_scratch s = {malloc((size_t)nn * sizeof(double)), malloc((size_t)nn * sizeof(double)),
                         {malloc((size_t)nn * sizeof(double)), malloc((size_t)nn * sizeof(float)), 0},
                         -1};
        int ok = s.vals && s.mags && s.f32.err && s.f32.v32;
        cmp_acc my = {0, 0, 0, 0, 0, 0, -1, -1, 0, 0};
        int stop = 0;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < t->n; i++) {
            /* every 2^14 elements (~1-5 ms of one core) asks whether the
             * process was interrupted: then the rest is skipped */
            if (!ok || stop || ((i & 0x3fff) == 0 && (stop = mb_intr_pending() != 0))) continue;
            reference_elem(t, ro, i, s.vals);
            magnitudes(p->g, ro->order, ro->cnt, s.vals, s.mags);
            for (int r = 0; r < p->n_results; r++) compare_elem(t, ro, scale, pv, tolv, r, i, &s, &my);
        }
#pragma omp critical(mb_ref_merge)
        {
            if (my.max_err > all.max_err) all.max_err = my.max_err;
            if (my.inacc_max > all.inacc_max) all.inacc_max = my.inacc_max;
            all.bad += my.bad;
            all.poisoned += my.poisoned;
            all.inaccurate += my.inaccurate;
            all.range += my.range;
            if (my.first >= 0 && (all.first < 0 || my.first < all.first)) {
                all.first = my.first;
                all.node = my.node;
                all.got = my.got;
                all.want = my.want;
            }
            if (!ok) fail_alloc = 1;
        }
        free(s.vals);
        free(s.mags);
        free(s.f32.err);
        free(s.f32.v32);
    }
    if (fail_alloc) return MB_ERUN;
    if (mb_intr_pending()) return MB_EINTR_CHECK;
    out->max_rel_err = all.max_err;
    out->bad = all.bad;
    out->poisoned = all.poisoned;
    out->inaccurate = all.inaccurate;
    out->out_of_range = all.range;
    out->inaccurate_max_err = all.inacc_max;
    out->first_bad = all.first;
    out->first_bad_node = all.node;
    out->first_got = all.got;
    out->first_want = all.want;
    return MB_OK;
}

int mb_kern_verify(const mb_kern_tensors *t, unsigned poison_rep, double tol,
                   mb_kern_check *out, mb_err *err)
{
    const mb_plan *p = t->plan;
    const mb_graph *g = p->g;
    if (g->has_row_ops) return mb_kern_rows_verify(t, poison_rep, tol, out, err);
    int nn = g->n_nodes;
    memset(out, 0, sizeof *out);
    out->first_bad = -1;
    out->first_bad_node = -1;
    out->tol = mb_kern_check_tol(p, tol);
    int64_t n = t->n;
    for (int r = 0; r < p->n_results; r++) {
        int node = p->results[r];
        if (!t->data[node])
            return mb_err_set(err, MB_EINPUT, "result node %d has no storage", node);
    }
    ref_order ro;
    if (ref_order_make(g, &ro)) return mb_err_set(err, MB_ERUN, "out of memory");
    /* scale of each result from a strided sample: the denominator floor (the
     * values its dtype can hold: 1e-3 of an exp(700) would hide every error) */
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
                if (v <= mb_kern_dtype_max(g->nodes[p->results[r]].dtype)) { /* where f32 holds it */
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
    int rc = compare_all(t, &ro, scale, poison_rep, out);
    free(scale);
    free(ro.order);
    if (rc == MB_EINTR_CHECK) return mb_err_set(err, MB_ERUN, "interrupted");
    if (rc) return mb_err_set(err, MB_ERUN, "out of memory");
    out->passed = out->bad == 0 && out->poisoned == 0;
    return MB_OK;
}

mb_kern_accuracy mb_kern_check_accuracy(const mb_kern_check *ck)
{
    if (!ck->passed) return MB_KERN_ACC_FAILED;
    return ck->inaccurate > 0 ? MB_KERN_ACC_INACCURATE : MB_KERN_ACC_OK;
}

const char *mb_kern_accuracy_name(mb_kern_accuracy a)
{
    switch (a) {
    case MB_KERN_ACC_OK: return "ok";
    case MB_KERN_ACC_INACCURATE: return "inaccurate";
    case MB_KERN_ACC_FAILED: break;
    }
    return "failed";
}

void mb_kern_check_note(const mb_kern_check *ck, char *buf, size_t bufsz)
{
    if (!bufsz) return;
    buf[0] = '\0';
    if (mb_kern_check_accuracy(ck) != MB_KERN_ACC_INACCURATE) return;
    int64_t cond = ck->inaccurate - ck->out_of_range;
    if (cond > 0)
        snprintf(buf, bufsz, "inaccurate: the input range makes this expression ill-conditioned in "
                 "f32 (%lld elements off float64 by up to %.3g > tol %.3g, as far as the f32 "
                 "rounding of its ops carried through it allows%s)", (long long)cond,
                 ck->inaccurate_max_err, ck->tol,
                 ck->out_of_range ? "; more where f32 overflows or underflows" : "");
    else
        snprintf(buf, bufsz, "inaccurate: float32 overflows or underflows where float64 does not "
                 "(%lld elements; as correct f32 evaluation gives them)", (long long)ck->out_of_range);
}

/* 1 when every forward output at an element (vals) lies in its dtype's
 * range: where one overflows f32, float64's finite differences and
 * gradients (inf - inf) judge nothing an f32 kernel computes. */
static int forward_in_range(const mb_graph *g, const double *vals)
{
    for (int o = 0; o < g->n_outputs; o++) {
        int v = g->outputs[o];
        if (!(fabs(vals[v]) <= mb_kern_dtype_max(g->nodes[v].dtype))) return 0;
    }
    return 1;
}

int mb_kern_gradcheck(const mb_kern_tensors *t, int n_points, double *max_err, int *passed,
                      mb_err *err)
{
    const mb_graph *g = t->plan->g;
    if (!g->has_backward)
        return mb_err_set(err, MB_EINPUT, "%s has no backward pass to check", g->name);
    if (g->has_row_ops) return mb_kern_rows_gradcheck(t, n_points, max_err, passed, err);
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
        if (!forward_in_range(g, base)) continue;
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
