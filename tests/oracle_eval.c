/* oracle_eval.c — runs one expression's eager plan on the CPU executors and
 * prints its inputs and results, for tests/torch_oracle.py to feed the same
 * inputs to PyTorch and compare.
 *   oracle_eval DTYPE N EXPR   (EXPR as `membound model --expr` takes it)
 * The plan runs as `measure` runs it (the AUTO executor, interpreted: no
 * compiler is started, one thread). Prints one line per tensor, "in NAME v0 v1 ..." for every graph input (the
 * forward inputs, then the incoming gradients grad_OUT) and "out NAME v0 ..."
 * for every forward output and, with a backward, "grad NAME v0 ..." for the
 * gradient of each forward input, values as %.9g of the stored dtype.
 * Exit 2 for an expression that does not parse, 1 for a run that fails. */
#include "kernels.h"
#include "mb_ops.h"

#include <stdio.h>
#include <stdlib.h>

static void print_tensor(const mb_kern_tensors *t, const char *tag, const char *name, int node)
{
    mb_dtype dt = t->plan->g->nodes[node].dtype;
    printf("%s %s", tag, name);
    for (int64_t i = 0; i < t->n; i++) printf(" %.9g", (double)mb_load_f32(t->data[node], i, dt));
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: oracle_eval DTYPE N EXPR\n");
        return 2;
    }
    mb_dtype dt;
    long n = strtol(argv[2], NULL, 10);
    mb_err err;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    if (mb_dtype_parse(argv[1], &dt) || n <= 0) {
        fprintf(stderr, "oracle_eval: bad dtype '%s' or size '%s'\n", argv[1], argv[2]);
        return 2;
    }
    if (mb_parse_expr(argv[3], dt, &g, &err)) {
        fprintf(stderr, "oracle_eval: %s\n", err.msg);
        return 2;
    }
    mb_kern_tensors t;
    mb_kern_jit_configure(MB_KERN_JIT_OFF, NULL, NULL); /* the interpreter: no compiler runs */
    mb_kern_set_threads(1);
    if (mb_plan_build(g, MB_PLAN_EAGER, &p, &err) || mb_kern_tensors_alloc(p, n, 1 << 20, &t, &err)) {
        fprintf(stderr, "oracle_eval: %s\n", err.msg);
        mb_plan_free(p);
        mb_graph_free(g);
        return 1;
    }
    mb_kern_fill_inputs(&t, 1);
    int rc = mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err);
    if (rc) {
        fprintf(stderr, "oracle_eval: %s\n", err.msg);
    } else {
        const mb_graph *pg = p->g;
        for (int k = 0; k < pg->n_inputs; k++) print_tensor(&t, "in", pg->nodes[pg->inputs[k]].name, pg->inputs[k]);
        if (pg->has_backward)
            for (int k = 0; k < pg->n_outputs; k++)
                print_tensor(&t, "in", pg->nodes[pg->grad_outputs[k]].name, pg->grad_outputs[k]);
        for (int k = 0; k < pg->n_outputs; k++) print_tensor(&t, "out", pg->nodes[pg->outputs[k]].name, pg->outputs[k]);
        if (pg->has_backward)
            for (int k = 0; k < pg->n_inputs; k++)
                if (pg->grad_inputs[k] >= 0) /* none for a nograd input */
                    print_tensor(&t, "grad", pg->nodes[pg->inputs[k]].name, pg->grad_inputs[k]);
    }
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
    return rc ? 1 : 0;
}
