/* plan_build.c — which plans a graph has, and building one by kind: the
 * fixed groupings (plan.c) or the optimal plan (plan_optimal.c, itself built
 * on plan.c's saved-set grouping). Sits above both so that neither calls
 * the other back. Does not group nodes or choose a saved set itself. */
#include "model_int.h"

#include <stdio.h>
#include <string.h>

/* 1 when g has a softmax, as the library op or written out as
 * sum(exp(a - amax(a))): what the online plan changes. */
static int has_softmax(const mb_graph *g)
{
    for (int i = 0; i < g->n_forward; i++) {
        const mb_node *s = &g->nodes[i];
        if (s->op == MB_OP_SOFTMAX || s->op == MB_OP_LOG_SOFTMAX) return 1;
        if (s->op != MB_OP_SUM || s->arg[0] < 0 || g->nodes[s->arg[0]].op != MB_OP_EXP) continue;
        int d = g->nodes[s->arg[0]].arg[0];
        if (d < 0 || g->nodes[d].op != MB_OP_SUB || g->nodes[d].arg[1] < 0) continue;
        const mb_node *m = &g->nodes[g->nodes[d].arg[1]];
        if (m->op == MB_OP_AMAX && m->arg[0] == g->nodes[d].arg[0]) return 1;
    }
    return 0;
}

int mb_plan_supported(const mb_graph *g, mb_plan_kind k)
{
    switch (k) {
    case MB_PLAN_EAGER: return 1;
    case MB_PLAN_FUSED: return !g->has_backward;
    case MB_PLAN_STORE:
    case MB_PLAN_RECOMPUTE: return g->has_backward;
    case MB_PLAN_OPTIMAL: return g->has_backward && mb_plan_optimal_available();
    case MB_PLAN_ONLINE: return !g->has_backward && has_softmax(g);
    default: return 0;
    }
}

int mb_plan_build(const mb_graph *g, mb_plan_kind k, mb_plan **out, mb_err *err)
{
    *out = NULL;
    if (k == MB_PLAN_OPTIMAL && g->has_backward && !mb_plan_optimal_available())
        return mb_err_set(err, MB_EINPUT, "plan 'optimal' needs igraph (libigraph-dev), which this "
                          "build lacks: install it and rebuild");
    if (k >= MB_PLAN_COUNT || !mb_plan_supported(g, k)) {
        char list[128] = "";
        for (int i = 0; i < MB_PLAN_COUNT; i++)
            if (mb_plan_supported(g, (mb_plan_kind)i)) {
                if (list[0]) strcat(list, ", ");
                strcat(list, mb_plan_name((mb_plan_kind)i));
            }
        return mb_err_set(err, MB_EINPUT, "variant '%s' has no plan '%s' (plans: %s)", g->name,
                          mb_plan_name(k), list);
    }
    if (k == MB_PLAN_OPTIMAL) return mb_plan_build_optimal(g, MB_OBJECTIVE_BYTES, 0, NULL, out, err);
    return mb_plan_build_fixed(g, k, out, err);
}
