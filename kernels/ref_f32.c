/* ref_f32.c — the float32 side of the reference check: what correct f32
 * evaluation of a graph can give at one element. The graph evaluated in f32
 * (an overflow there is expected where float64 stays finite), and a bound on
 * how far any correct f32 evaluation may land from the float64 value: every
 * op's own rounding (a few units in the last place, subnormal spacing
 * included) carried through the graph by evaluating each op in float64 at
 * its operands moved by their bounds (the data's condition number, at first
 * order and beyond). Does not loop over elements: reference.c does. */
#include "kernels_int.h"
#include "mb_ops.h"

#include <float.h>
#include <math.h>

/* Unit roundoff, largest finite value and half the subnormal spacing of dtype t. */
static void dtype_limits(mb_dtype t, double *u, double *max, double *tiny)
{
    switch (t) {
    case MB_F16: *u = 0x1p-11; *max = 65504.0; *tiny = 0x1p-25; return;
    case MB_BF16: *u = 0x1p-8; *max = 0x1.fep127; *tiny = 0x1p-134; return;
    case MB_F32:
    case MB_DTYPE_COUNT: break;
    }
    *u = 0x1p-24;
    *max = FLT_MAX;
    *tiny = 0x1p-150;
}

double mb_kern_dtype_max(mb_dtype t)
{
    double u, max, tiny;
    dtype_limits(t, &u, &max, &tiny);
    return max;
}

/* Units of roundoff an op's own f32 result may carry: 0 for the exact ones,
 * 2 for arithmetic (x**3 and 1/sqrt round twice), 8 for library functions
 * (SLEEF's u10 is 1 ulp; gelu, silu and the gradients compose several). */
static double op_ulps(mb_op op)
{
    switch (op) {
    case MB_OP_NEG: case MB_OP_ABS: case MB_OP_COPY: case MB_OP_RELU: case MB_OP_STEP:
    case MB_OP_SIGN: case MB_OP_EQ:
        return 0.0;
    default: break;
    }
    return mb_op_info_of(op)->cls == MB_COST_SFU || op == MB_OP_POW ? 8.0 : 2.0;
}

/* How far op's float64 value v at (a, b) moves when a moves by up to ea and
 * b by up to eb: the largest change over a grid of the box (ends and halves),
 * infinity where the box reaches a pole, leaves the domain or spans a period. */
static double carried(mb_op op, double a, double ea, double b, double eb, double v)
{
    if (ea == 0.0 && eb == 0.0) return 0.0;
    if (!isfinite(ea) || !isfinite(eb)) return INFINITY;
    int arity = mb_op_arity(op);
    if (op == MB_OP_DIV && fabs(b) <= eb) return INFINITY;
    if (arity == 1 && (mb_op_info_of(op)->flags & MB_OPF_POSITIVE) && fabs(a) <= ea) return INFINITY;
    if ((op == MB_OP_SIN || op == MB_OP_COS) && ea >= 1.0) return 1.0 + fabs(v);
    if (op == MB_OP_TAN && (ea >= 0.5 || cos(a - ea) * cos(a) <= 0.0 || cos(a + ea) * cos(a) <= 0.0))
        return INFINITY;
    static const double steps[] = {-1.0, -0.5, 0.0, 0.5, 1.0};
    double worst = 0.0;
    for (int sa = 0; sa < 5; sa++)
        for (int sb = 0; sb < (arity == 2 ? 5 : 1); sb++) {
            double bb = arity == 2 ? b + steps[sb] * eb : b;
            double d = fabs(mb_op_apply_f64(op, a + steps[sa] * ea, bb) - v);
            if (isnan(d)) return INFINITY;
            if (d > worst) worst = d;
        }
    return worst;
}

/* Operand k of node nd: its float64 value, f32 value and error bound. */
static void operand(const mb_node *nd, int k, const double *vals, const mb_kern_f32_elem *e,
                    double *v, float *v32, double *err)
{
    if (nd->arg[k] >= 0) {
        *v = vals[nd->arg[k]];
        *v32 = e->v32[nd->arg[k]];
        *err = e->err[nd->arg[k]];
        return;
    }
    *v = nd->scalar[k];
    *v32 = (float)nd->scalar[k];
    *err = fabs(nd->scalar[k] - (double)*v32); /* the literal rounded to f32 */
}

void mb_kern_f32_bound(const mb_graph *g, const int *order, int cnt, const double *vals,
                       mb_kern_f32_elem *e)
{
    e->out_of_range = 0;
    for (int k = 0; k < cnt; k++) {
        int i = order[k];
        const mb_node *nd = &g->nodes[i];
        double u, max, tiny;
        dtype_limits(nd->dtype, &u, &max, &tiny);
        double v = vals[i];
        if (nd->op == MB_OP_INPUT) { /* stored values, exact as loaded */
            e->v32[i] = (float)v;
            e->err[i] = 0.0;
            continue;
        }
        double a, ea, b = 0.0, eb = 0.0;
        float a32, b32 = 0.0f;
        operand(nd, 0, vals, e, &a, &a32, &ea);
        if (mb_op_arity(nd->op) >= 2) operand(nd, 1, vals, e, &b, &b32, &eb);
        e->v32[i] = mb_op_apply_f32(nd->op, a32, b32);
        double ulps = op_ulps(nd->op);
        if (nd->op == MB_OP_COPY && g->nodes[nd->arg[0]].dtype != nd->dtype) ulps = 1.0; /* a cast rounds */
        e->err[i] = carried(nd->op, a, ea, b, eb, v) + ulps * (u * fabs(v) + tiny);
        if (!(fabs(v) <= max)) { /* beyond the range (or NaN): no bound */
            e->err[i] = INFINITY;
            e->out_of_range = 1;
        } else if (v != 0.0 && fabs(v) < tiny / u && ulps > 0) {
            e->out_of_range = 1; /* subnormal: a few bits left */
        }
    }
}

/* 1 when x and y are both NaN or the same infinity. */
static int same_non_finite(double x, double y)
{
    return (isnan(x) && isnan(y)) || (isinf(x) && x == y);
}

int mb_kern_f32_judge(const mb_kern_f32_elem *e, int node, mb_dtype dt, double got, double want,
                      double den, double tol)
{
    /* the f32 evaluation, stored as the result is */
    float r32 = e->v32[node];
    if (dt == MB_F16) r32 = mb_f16_to_f32(mb_f32_to_f16(r32));
    else if (dt == MB_BF16) r32 = mb_bf16_to_f32(mb_f32_to_bf16(r32));
    int range = e->out_of_range || !isfinite(got) || !isfinite(r32) ? MB_KERN_F32_RANGE : MB_KERN_F32_COND;
    if (!isfinite(got) || !isfinite(want))
        return same_non_finite(got, r32) || (isfinite(want) && isinf(e->err[node])) ? range : MB_KERN_F32_OFF;
    if (isfinite(r32) && fabs(got - (double)r32) <= tol * den) return range;
    return fabs(got - want) <= tol * den + 2.0 * e->err[node] ? range : MB_KERN_F32_OFF;
}
