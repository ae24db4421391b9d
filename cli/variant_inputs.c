/* variant_inputs.c — the variants of a command line in the order given
 * (files, built-in names, --expr), loaded at one dtype; a name given twice
 * is refused. Does not parse options (each command's getopt loop does). */
#include "variant_inputs.h"

#include "cli_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mb_cli_inputs_add(mb_cli_inputs *in, int is_expr, const char *arg)
{
    if (in->n == in->cap) {
        int cap = in->cap ? 2 * in->cap : 8;
        mb_cli_input *p = realloc(in->v, (size_t)cap * sizeof *p);
        if (!p) return mb_cli_fail(1, "out of memory");
        in->v = p;
        in->cap = cap;
    }
    in->v[in->n++] = (mb_cli_input){is_expr, arg};
    return 0;
}

const char *mb_cli_input_where(const mb_cli_inputs *in, int i, char *buf, size_t size)
{
    const mb_cli_input *x = &in->v[i];
    if (!x->is_expr) {
        snprintf(buf, size, "'%s'", x->arg);
        return buf;
    }
    int k = 0;
    for (int j = 0; j <= i; j++) k += in->v[j].is_expr;
    size_t len = strlen(x->arg);
    snprintf(buf, size, "--expr %d ('%.*s%s')", k, len > 40 ? 40 : (int)len, x->arg, len > 40 ? "..." : "");
    for (char *c = buf; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    return buf;
}

void mb_cli_graphs_free(mb_graph **g, int n)
{
    for (int i = 0; i < n; i++) mb_graph_free(g[i]);
    free(g);
}

/* Every built-in variant at dt. */
static int load_builtins(mb_dtype dt, mb_graph ***graphs, int *n)
{
    mb_err e;
    char (*names)[MB_NAME_MAX] = NULL;
    int count = 0;
    int rc = mb_cli_variant_names(0, NULL, 0, &names, &count, &e);
    if (rc) return mb_cli_fail_err(rc, &e);
    if (!(*graphs = calloc((size_t)count + 1, sizeof **graphs))) { free(names); return mb_cli_fail(1, "out of memory"); }
    for (int i = 0; i < count; i++) {
        if ((rc = mb_variant_load(names[i], dt, &(*graphs)[i], &e))) { free(names); return mb_cli_fail_err(rc, &e); }
        mb_cli_graph_warning((*graphs)[i]);
        *n = i + 1;
    }
    free(names);
    return 0;
}

/* An --expr without a 'name' directive is "expr"; where a command line
 * gives several, the k-th is "exprK" (expr1, expr2: each its own variant in
 * every table and file). */
static void name_unnamed(const mb_cli_inputs *in, int i, mb_graph *g)
{
    int total = 0, k = 0;
    for (int j = 0; j < in->n; j++) {
        total += in->v[j].is_expr;
        if (j == i) k = total;
    }
    if (total < 2 || !in->v[i].is_expr || strcmp(g->name, "expr") != 0 || strstr(in->v[i].arg, "name "))
        return;
    snprintf(g->name, sizeof g->name, "expr%d", k);
}

int mb_cli_inputs_load(const mb_cli_inputs *in, mb_dtype dt, mb_graph ***graphs, int *n, const char ***exprs)
{
    *graphs = NULL;
    *n = 0;
    if (exprs) *exprs = NULL;
    if (exprs && !(*exprs = calloc((size_t)(in->n > 0 ? in->n : 1), sizeof **exprs)))
        return mb_cli_fail(1, "out of memory");
    if (in->n == 0) {
        int rc = load_builtins(dt, graphs, n);
        if (rc == 0 && exprs) {
            free(*exprs);
            *exprs = calloc((size_t)*n + 1, sizeof **exprs); /* every one a file */
            if (!*exprs) return mb_cli_fail(1, "out of memory");
        }
        return rc;
    }
    if (!(*graphs = calloc((size_t)in->n, sizeof **graphs))) return mb_cli_fail(1, "out of memory");
    mb_err e;
    for (int i = 0; i < in->n; i++) {
        const mb_cli_input *x = &in->v[i];
        int rc = x->is_expr ? mb_parse_expr(x->arg, dt, &(*graphs)[i], &e)
                            : mb_variant_load(x->arg, dt, &(*graphs)[i], &e);
        if (rc) return mb_cli_fail_err(rc, &e);
        *n = i + 1;
        name_unnamed(in, i, (*graphs)[i]);
        if (exprs) (*exprs)[i] = x->is_expr ? x->arg : NULL;
        mb_cli_graph_warning((*graphs)[i]);
        for (int j = 0; j < i; j++) {
            if (strcmp((*graphs)[j]->name, (*graphs)[i]->name) != 0) continue;
            char a[96], b[96];
            return mb_cli_fail(2, "variant '%s' is given twice: by %s (input %d) and by %s (input %d): "
                               "give it once, or rename one ('name NEW')", (*graphs)[i]->name,
                               mb_cli_input_where(in, j, a, sizeof a), j + 1,
                               mb_cli_input_where(in, i, b, sizeof b), i + 1);
        }
    }
    return 0;
}

void mb_cli_inputs_free(mb_cli_inputs *in)
{
    free(in->v);
    memset(in, 0, sizeof *in);
}
