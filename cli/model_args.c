/* model_args.c — shared option handling of `model` and `whatif`. */
#include "model_args.h"

#include "cli_common.h"

#include <stdlib.h>

enum { MB_ARG_PLAN = 1, MB_ARG_SIZES = 2, MB_ARG_DTYPE = 4, MB_ARG_FMT = 8 };

/* The option's spelling, for messages. */
static const char *spelling(int c)
{
    switch (c) {
    case 'p': return "--plan";
    case 'n': return "--n";
    case 's': return "--sizes";
    case 't': return "--dtype";
    case 'J': return "--json";
    case 'C': return "--csv";
    default: return "?";
    }
}

int mb_model_args_option(mb_model_args *a, int c, const char *arg)
{
    unsigned bit;
    switch (c) {
    case 'p': bit = MB_ARG_PLAN; break;
    case 'n': case 's': bit = MB_ARG_SIZES; break;
    case 't': bit = MB_ARG_DTYPE; break;
    case 'J': case 'C': bit = MB_ARG_FMT; break;
    default: return -1;
    }
    int slot = bit == MB_ARG_PLAN ? 0 : bit == MB_ARG_SIZES ? 1 : bit == MB_ARG_DTYPE ? 2 : 3;
    if (a->given & bit) {
        if (a->given_as[slot] == c) return mb_cli_fail(2, "%s given twice: give it once", spelling(c));
        return mb_cli_fail(2, "%s and %s cannot be combined: give one", spelling(a->given_as[slot]), spelling(c));
    }
    a->given |= bit;
    a->given_as[slot] = c;
    mb_err e;
    int rc = 0;
    switch (c) {
    case 'p':
        if (mb_plan_parse(arg, &a->plan) != MB_OK)
            return mb_cli_fail(2, "unknown plan '%s' (plans: eager, fused, store, recompute, optimal)", arg);
        a->plan_given = 1;
        return 0;
    case 'n':
        a->sizes = malloc(sizeof *a->sizes);
        if (!a->sizes) return mb_cli_fail(1, "out of memory");
        a->n_sizes = 1;
        return mb_cli_size(arg, &a->sizes[0]);
    case 's':
        if ((rc = mb_cli_parse_sizes(arg, &a->sizes, &a->n_sizes, &e))) return mb_cli_fail_err(rc, &e);
        return 0;
    case 't': return mb_cli_dtype(arg, &a->dtype);
    case 'J': a->fmt = MB_FMT_JSON; return 0;
    default: a->fmt = MB_FMT_CSV; return 0;
    }
}

int mb_model_args_load(mb_model_args *a, int argc, char **argv, int first, const char *expr)
{
    mb_err e;
    if (expr) {
        if (first < argc)
            return mb_cli_fail(2, "give either variants or --expr, not both ('%s')", argv[first]);
        a->graphs = calloc(1, sizeof *a->graphs);
        if (!a->graphs) return mb_cli_fail(1, "out of memory");
        int rc = mb_parse_expr(expr, a->dtype, &a->graphs[0], &e);
        if (rc) return mb_cli_fail_err(rc, &e);
        mb_cli_graph_warning(a->graphs[0]);
        a->n_graphs = 1;
    } else {
        char (*names)[MB_NAME_MAX];
        int count, rc = mb_cli_variant_names(argc, argv, first, &names, &count, &e);
        if (rc) return mb_cli_fail_err(rc, &e);
        a->graphs = calloc((size_t)count, sizeof *a->graphs);
        if (!a->graphs) { free(names); return mb_cli_fail(1, "out of memory"); }
        for (int i = 0; i < count; i++) {
            rc = mb_variant_load(names[i], a->dtype, &a->graphs[i], &e);
            if (rc) { free(names); return mb_cli_fail_err(rc, &e); }
            mb_cli_graph_warning(a->graphs[i]);
            a->n_graphs = i + 1;
        }
        free(names);
    }
    if (a->plan_given)
        for (int i = 0; i < a->n_graphs; i++)
            if (!mb_plan_supported(a->graphs[i], a->plan)) {
                mb_plan *p;
                int rc = mb_plan_build(a->graphs[i], a->plan, &p, &e); /* fails: names the valid plans */
                return mb_cli_fail_err(rc ? rc : 2, &e);
            }
    return 0;
}

int mb_model_args_sizes(const mb_model_args *a, const mb_graph *g, const int64_t **sizes, int64_t *one)
{
    if (a->sizes) { *sizes = a->sizes; return a->n_sizes; }
    *one = g->default_n ? g->default_n : ((int64_t)1 << 24);
    *sizes = one;
    return 1;
}

int mb_model_args_plans(const mb_model_args *a, const mb_graph *g, mb_plan_kind plans[MB_PLAN_COUNT])
{
    if (a->plan_given) { plans[0] = a->plan; return 1; }
    int n = 0;
    for (int k = 0; k < MB_PLAN_COUNT; k++)
        if (mb_plan_supported(g, (mb_plan_kind)k)) plans[n++] = (mb_plan_kind)k;
    return n;
}

void mb_model_args_free(mb_model_args *a)
{
    for (int i = 0; i < a->n_graphs; i++) mb_graph_free(a->graphs[i]);
    free(a->graphs);
    free(a->sizes);
}
