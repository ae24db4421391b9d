/* model_args.c — shared option handling of `model`, `whatif` and `plan`. */
#include "model_args.h"

#include "cli_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MB_ARG_PLAN = 1, MB_ARG_SIZES = 2, MB_ARG_DTYPE = 4, MB_ARG_FMT = 8, MB_ARG_FW = 16, MB_ARG_COLSUM = 32 };

/* The option's spelling, for messages. */
static const char *spelling(int c)
{
    switch (c) {
    case 'p': return "--plan";
    case 'n': return "--n";
    case 's': return "--sizes";
    case 'S': return "--shape";
    case MB_OPT_DIMS: return "--dims";
    case 't': return "--dtype";
    case 'J': return "--json";
    case 'C': return "--csv";
    case 'F': return "--framework";
    case MB_OPT_COLSUM: return "--colsum";
    default: return "?";
    }
}

int mb_model_args_option(mb_model_args *a, int c, const char *arg)
{
    unsigned bit;
    switch (c) {
    case 1: return mb_cli_inputs_add(&a->inputs, 0, arg);
    case 'e': return mb_cli_inputs_add(&a->inputs, 1, arg);
    case 'p': bit = MB_ARG_PLAN; break;
    case 'n': case 's': case 'S': case MB_OPT_DIMS: bit = MB_ARG_SIZES; break;
    case 't': bit = MB_ARG_DTYPE; break;
    case 'J': case 'C': bit = MB_ARG_FMT; break;
    case 'F': bit = MB_ARG_FW; break;
    case MB_OPT_COLSUM: bit = MB_ARG_COLSUM; break;
    default: return -1;
    }
    int slot = bit == MB_ARG_PLAN ? 0 : bit == MB_ARG_SIZES ? 1 : bit == MB_ARG_DTYPE ? 2 :
               bit == MB_ARG_FMT ? 3 : bit == MB_ARG_FW ? 4 : 5;
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
        if ((rc = mb_cli_plans(arg, a->plans, &a->n_plans))) return rc;
        a->plan_given = 1;
        return 0;
    case 'n': {
        int64_t n;
        if ((rc = mb_cli_size(arg, &n))) return rc;
        if (!(a->sizes = malloc(sizeof *a->sizes))) return mb_cli_fail(1, "out of memory");
        a->sizes[0] = mb_shape_1d(n);
        a->n_sizes = 1;
        return 0;
    }
    case 'S':
    case 's':
        if ((rc = mb_cli_parse_shapes(arg, &a->sizes, &a->n_sizes, &e))) return mb_cli_fail_err(rc, &e);
        if (c == 'S' && a->sizes[0].rank != 2)
            return mb_cli_fail(2, "--shape '%s': expected ROWSxCOLS, e.g. 4096x1024 (1-D sizes: --n)", arg);
        return 0;
    case MB_OPT_DIMS:
        if (!(a->dims = strdup(arg))) return mb_cli_fail(1, "out of memory");
        return 0;
    case 't':
        if ((rc = mb_cli_dtypes(arg, a->dtypes, &a->n_dtypes))) return rc;
        a->dtype = a->dtypes[0];
        return 0;
    case 'J': a->fmt = MB_FMT_JSON; return 0;
    case 'F':
        if (mb_framework_parse(arg, &a->framework) != MB_OK)
            return mb_cli_fail(2, "--framework '%s': expected none or pytorch", arg);
        return 0;
    case MB_OPT_COLSUM:
        if (mb_colsum_parse(arg, &a->colsum) != MB_OK)
            return mb_cli_fail(2, "--colsum '%s': expected written, partial or reread", arg);
        a->colsum_given = 1;
        return 0;
    default: a->fmt = MB_FMT_CSV; return 0;
    }
}

int mb_model_args_load(mb_model_args *a)
{
    mb_err e;
    if (a->n_dtypes == 0) a->dtypes[a->n_dtypes++] = a->dtype;
    mb_graph **per[MB_DTYPE_COUNT] = {0};
    int cnt[MB_DTYPE_COUNT] = {0}, rc = 0;
    for (int d = 0; d < a->n_dtypes && !rc; d++)
        rc = mb_cli_inputs_load(&a->inputs, a->dtypes[d], &per[d], &cnt[d], NULL);
    int n = cnt[0];
    if (!rc && !(a->graphs = calloc((size_t)(n * a->n_dtypes) + 1, sizeof *a->graphs)))
        rc = mb_cli_fail(1, "out of memory");
    for (int i = 0; !rc && i < n; i++) /* input-major: a variant's dtypes side by side */
        for (int d = 0; d < a->n_dtypes; d++) {
            a->graphs[a->n_graphs++] = per[d][i];
            per[d][i] = NULL;
        }
    for (int d = 0; d < a->n_dtypes; d++) mb_cli_graphs_free(per[d], cnt[d]);
    if (rc) return rc;
    for (int i = 0; a->colsum_given && i < a->n_graphs; i++) a->graphs[i]->colsum = a->colsum;
    for (int i = 0; a->dims && i < a->n_graphs; i++) { /* --dims: one shape for every variant */
        mb_shape sh;
        if ((rc = mb_graph_bind_dims(a->graphs[i], a->dims, &sh, &e))) return mb_cli_fail_err(rc, &e);
        if (!a->sizes && !(a->sizes = malloc(sizeof *a->sizes))) return mb_cli_fail(1, "out of memory");
        if (i > 0 && (sh.rank != a->sizes[0].rank || sh.rows != a->sizes[0].rows || sh.cols != a->sizes[0].cols))
            return mb_cli_fail(2, "--dims '%s': variants '%s' and '%s' take different shapes from it: give one "
                               "variant at a time", a->dims, a->graphs[0]->name, a->graphs[i]->name);
        a->sizes[0] = sh;
        a->n_sizes = 1;
    }
    for (int i = 0; i < a->n_graphs; i++) /* a mask's rows need named sizes: before any output */
        if (a->graphs[i]->has_gcol && a->graphs[i]->dim_size[0] <= 0 &&
            (rc = mb_graph_check_shape(a->graphs[i], (mb_shape){2, 1, 1, 0}, &e)))
            return mb_cli_fail_err(rc, &e);
    /* every built-in at 1-D sizes: the 2-D ones (softmax, ...) are left out */
    if (a->sizes && a->sizes[0].rank == 1 && a->inputs.n == 0) {
        int kept = 0;
        for (int i = 0; i < a->n_graphs; i++) {
            if (a->graphs[i]->rank_declared && a->graphs[i]->rank == 2) mb_graph_free(a->graphs[i]);
            else a->graphs[kept++] = a->graphs[i];
        }
        a->n_graphs = kept;
    }
    /* the given sizes fix the rank: a 1-D variant at ROWSxCOLS reduces rows */
    for (int i = 0; a->sizes && i < a->n_graphs; i++) {
        if ((rc = mb_graph_set_rank(a->graphs[i], a->sizes[0].rank, &e))) return mb_cli_fail_err(rc, &e);
        for (int s = 0; s < a->n_sizes; s++) /* a mask's rows need named sizes: before any output */
            if ((rc = mb_graph_check_shape(a->graphs[i], mb_graph_shape_at(a->graphs[i], a->sizes[s]), &e)))
                return mb_cli_fail_err(rc, &e);
    }
    for (int i = 0; a->plan_given && i < a->n_graphs; i++)
        for (int k = 0; k < a->n_plans; k++)
            if (!mb_plan_supported(a->graphs[i], a->plans[k])) {
                mb_plan *p;
                rc = mb_plan_build(a->graphs[i], a->plans[k], &p, &e); /* fails: names the valid plans */
                return mb_cli_fail_err(rc ? rc : 2, &e);
            }
    return 0;
}

mb_dtype mb_model_args_dtype(const mb_model_args *a, int i)
{
    return a->dtypes[a->n_dtypes > 0 ? i % a->n_dtypes : 0];
}

int mb_model_args_sizes(const mb_model_args *a, const mb_graph *g, const mb_shape **sizes, mb_shape *one)
{
    if (a->sizes) { *sizes = a->sizes; return a->n_sizes; }
    if (g->default_shape.rank == 2) *one = g->default_shape;
    else *one = mb_shape_1d(g->default_n ? g->default_n : ((int64_t)1 << 24));
    *sizes = one;
    return 1;
}

int mb_model_args_plans(const mb_model_args *a, const mb_graph *g, mb_plan_kind plans[MB_PLAN_COUNT])
{
    if (a->plan_given) {
        memcpy(plans, a->plans, (size_t)a->n_plans * sizeof *plans);
        return a->n_plans;
    }
    int n = 0;
    for (int k = 0; k < MB_PLAN_COUNT; k++)
        if (mb_plan_supported(g, (mb_plan_kind)k)) plans[n++] = (mb_plan_kind)k;
    return n;
}

void mb_model_args_warn_memory(const mb_model_args *a, const mb_device *devs, int n_devs)
{
    for (int i = 0; i < a->n_graphs; i++) {
        const mb_graph *g = a->graphs[i];
        mb_shape one, big = {0, 0, 0, 0};
        const mb_shape *sizes;
        int ns = mb_model_args_sizes(a, g, &sizes, &one);
        for (int s = 0; s < ns; s++)
            if (mb_shape_elems(sizes[s]) > mb_shape_elems(big)) big = sizes[s];
        int64_t n = mb_shape_elems(big);
        double bytes = 0; /* what every plan holds: the inputs and the outputs */
        for (int k = 0; k < g->n_inputs; k++)
            bytes += (double)(mb_tensor_elems_at(g, g->inputs[k], big) *
                              (int64_t)mb_dtype_bytes(g->nodes[g->inputs[k]].dtype));
        for (int k = 0; k < g->n_outputs; k++)
            bytes += (double)(mb_tensor_elems_at(g, g->outputs[k], big) *
                              (int64_t)mb_dtype_bytes(g->nodes[g->outputs[k]].dtype));
        char list[512] = "", b1[32];
        int over = 0, last = -1;
        size_t len = 0;
        for (int d = 0; d < n_devs; d++) {
            if (!(devs[d].mem_gb > 0) || bytes <= devs[d].mem_gb * 1e9) continue;
            if (++over <= 3 && len < sizeof list)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s's %.0f GB", over > 1 ? ", " : "",
                                        devs[d].name, devs[d].mem_gb);
            last = d;
        }
        if (!over) continue;
        char where[640];
        if (n_devs == 1) snprintf(where, sizeof where, "%s's %.0f GB of memory", devs[last].name, devs[last].mem_gb);
        else snprintf(where, sizeof where, "the memory of %d of %d devices (%s%s)", over, n_devs, list,
                      over > 3 ? ", ..." : "");
        mb_cli_warn("%s (%s) at n = %lld: its inputs and outputs alone take %s, more than %s: the figures are "
                    "for a size %s cannot hold", g->name, mb_dtype_name(mb_model_args_dtype(a, i)), (long long)n,
                    mb_cli_fmt_bytes(bytes, b1, sizeof b1), where, over > 1 ? "those devices" : "the device");
    }
}

void mb_model_args_free(mb_model_args *a)
{
    for (int i = 0; i < a->n_graphs; i++) mb_graph_free(a->graphs[i]);
    free(a->graphs);
    free(a->sizes);
    free(a->dims);
    mb_cli_inputs_free(&a->inputs);
}
