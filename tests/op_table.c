/* op_table.c — every row of model/op_table.h through every form the row says it
 * has: the language (a spelling that parses, "did you mean"), the float64
 * reference against the interpreter (op by op and blocked), the vector tile
 * primitive, the compiled kernel (where a C compiler is), finite-difference
 * gradients and the saved tensors the derivative reads, calibration's op-rate
 * probe and compiled chain, the CUDA per-op kernels and evaluator (where the
 * build has CUDA: present in their op lists; they run only with a GPU), and the
 * function list in `membound --help` and the README. A row lacking one of
 * its forms fails here. */
#include "kernels.h"
#include "mb_ops.h"
#include "mb_test.h"
#include "calibrate.h"
#if defined(MB_TEST_HAVE_CUDA)
#include "kernels_cuda.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Operators have no name in the language: their expressions. */
static const struct { mb_op op; const char *expr; } operators[] = {
    {MB_OP_ADD, "a + b"}, {MB_OP_SUB, "a - b"}, {MB_OP_MUL, "a * b"}, {MB_OP_DIV, "a / b"},
    {MB_OP_POW, "a ** b"}, {MB_OP_NEG, "-a"}, {MB_OP_RECIPROCAL, "2.0 / a"},
};

/* "OP(x)" for a spelled row, the operator's expression, or, for a row only
 * autodiff makes, the row whose derivative makes it; "" when none does. */
static void op_expr(mb_op op, char *buf, size_t size, mb_op *parent)
{
    const mb_op_info *in = mb_op_info_of(op);
    *parent = op;
    buf[0] = '\0';
    if (in->spell == MB_SPELL_CALL) {
        snprintf(buf, size, "%s(a)", in->name);
        return;
    }
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++)
        if (operators[i].op == op) {
            snprintf(buf, size, "%s", operators[i].expr);
            return;
        }
    if (op == MB_OP_EQ) { /* amax's derivative makes it: the arg-max mask (a 1-D row) */
        snprintf(buf, size, "amax(a, -1, keepdim=True)");
        *parent = MB_OP_AMAX;
        return;
    }
    for (int p = 1; p < MB_OP_COUNT; p++) {
        const mb_op_info *pi = mb_op_info_of((mb_op)p);
        if (pi->spell == MB_SPELL_CALL && pi->dop == op &&
            (pi->der == MB_DER_G_OP_X || pi->der == MB_DER_G_OP_Y)) {
            snprintf(buf, size, "%s(a)", pi->name);
            *parent = (mb_op)p;
            return;
        }
    }
}

/* Runs "y = body" (plan k, n elements, executor e) and checks it against the
 * float64 reference, and its gradients when it has a backward. Returns the
 * number of kernels that ran compiled, or -1 when it did not build. */
static int run_checked(const char *body, int backward, mb_plan_kind k, mb_kern_exec e, int64_t n,
                       mb_op want_op, int *has_op)
{
    char text[256];
    snprintf(text, sizeof text, "y = %s%s", body, backward ? "\nbackward" : "");
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_tensors t;
    mb_err err;
    if (mb_parse_expr(text, MB_F32, &g, &err) || mb_plan_build(g, k, &p, &err) ||
        mb_kern_tensors_alloc(p, n, 0, &t, &err)) {
        fprintf(stderr, "'%s': %s\n", text, err.msg);
        mb_plan_free(p);
        mb_graph_free(g);
        return -1;
    }
    *has_op = 0;
    for (int i = 0; i < p->g->n_nodes; i++) *has_op |= p->g->nodes[i].op == want_op;
    mb_kern_fill_inputs(&t, 7);
    int compiled = 0; /* the kernels holding want_op that run compiled */
    for (int q = 0; q < p->n_kernels; q++) {
        mb_kern_eval_info info;
        int holds = 0;
        for (int j = 0; j < p->kernels[q].n_nodes; j++) holds |= p->g->nodes[p->kernels[q].nodes[j]].op == want_op;
        if (holds && !mb_kern_kernel_info(&t, q, &info, &err)) compiled += info.compiled;
    }
    CHECK(mb_kern_run_plan(&t, e, &err) == MB_OK);
    mb_kern_check ck;
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
    if (!ck.passed)
        fprintf(stderr, "'%s' %s %s: err %.3g at [%lld]: got %.9g want %.9g\n", text, mb_plan_name(k),
                mb_kern_exec_name(e), ck.max_rel_err, (long long)ck.first_bad, ck.first_got,
                ck.first_want);
    CHECK(ck.passed);
    if (backward) {
        double gerr = 0;
        int gok = 0;
        CHECK(mb_kern_gradcheck(&t, 64, &gerr, &gok, &err) == MB_OK);
        if (!gok) fprintf(stderr, "'%s': gradient check %.3g\n", text, gerr);
        CHECK(gok);
    }
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
    return compiled;
}

/* What the backward of the one node of op in "y = body" reads of the forward
 * graph: MB_SAVES_X for its operands, MB_SAVES_Y for itself. */
static int saved_by(const char *body, mb_op op)
{
    char text[256];
    snprintf(text, sizeof text, "y = %s\nbackward", body);
    mb_graph *g = NULL;
    mb_err err;
    if (mb_parse_expr(text, MB_F32, &g, &err)) return -1;
    int node = -1;
    for (int i = 0; i < g->n_forward; i++)
        if (g->nodes[i].op == op) node = i;
    int saves = 0;
    for (int i = g->n_forward; i < g->n_nodes && node >= 0; i++) {
        const mb_node *b = &g->nodes[i];
        if (b->origin != node) continue;
        for (int s = 0; s < mb_op_arity(b->op); s++) {
            int a = b->arg[s];
            if (a < 0 || a >= g->n_forward) continue;
            if (a == node) saves |= MB_SAVES_Y;
            else if (a == g->nodes[node].arg[0] || a == g->nodes[node].arg[1]) saves |= MB_SAVES_X;
        }
    }
    mb_graph_free(g);
    return saves;
}

/* The bwd column: the eager backward of "y = body" (op at its root) is one
 * kernel of that name where the row names PyTorch's fused backward kernel,
 * else one kernel per backward node. Returns 1 when it holds. */
static int eager_backward_as_row(const char *body, mb_op op)
{
    char text[256];
    snprintf(text, sizeof text, "y = %s\nbackward", body);
    const char *fused = mb_op_info_of(op)->bwd_kernel;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err;
    if (mb_parse_expr(text, MB_F32, &g, &err) || mb_plan_build(g, MB_PLAN_EAGER, &p, &err)) {
        mb_graph_free(g);
        return 0;
    }
    int ok = 1, backward = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        if (!K->is_backward) continue;
        backward++;
        if (fused) ok &= !strcmp(K->name, fused) && K->n_nodes >= 1;
        else ok &= K->n_nodes == 1 && !strcmp(K->name, mb_op_name(p->g->nodes[K->nodes[0]].op));
    }
    if (fused) ok &= backward == 1;
    if (!ok) fprintf(stderr, "op %s: eager backward of '%s' is not as the bwd column says\n", mb_op_name(op), body);
    mb_plan_free(p);
    mb_graph_free(g);
    return ok;
}

/* The vector tile primitive against the float64 definition, element by element. */
static void vector_form(mb_op op)
{
    enum { N = MB_KERN_TILE + 13 }; /* a tail past the vectors */
    static float a[N], out[N];
    const int positive = (mb_op_info_of(op)->flags & MB_OPF_POSITIVE) != 0;
    for (int i = 0; i < N; i++)
        a[i] = positive ? 0.05f + 3.0f * (float)i / N : -4.0f + 8.0f * (float)i / N;
    const float b = op == MB_OP_POW ? 2.5f : 0.75f;
    mb_kern_op_apply(op, a, 0, NULL, b, out, N);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double want = mb_op_apply_f64(op, a[i], b);
        double den = fabs(want) > 1e-3 ? fabs(want) : 1e-3;
        double e = fabs(out[i] - want) / den;
        if (!(e <= worst)) worst = e;
    }
    if (!(worst <= 3e-5)) fprintf(stderr, "op %s: tile primitive err %.3g\n", mb_op_name(op), worst);
    CHECK(worst <= 3e-5);
}

/* A row operation (MB_OPF_ROW): a function of the language, no per-element
 * forms, a derivative written in autodiff.c that reads what the row says it
 * saves (tests/kernels_rows_bwd.c checks its kernels and gradients); one
 * kernel in eager making more than one pass over a row that does not fit on
 * chip; the row executor runs it against the float64 reference
 * (tests/kernels_rows.c walks the same rows there). */
static void row_op(mb_op op)
{
    const mb_op_info *in = mb_op_info_of(op);
    CHECK(in->kind == MB_OPK_REDUCTION || in->kind == MB_OPK_LIBRARY);
    CHECK(in->spell == MB_SPELL_CALL);
    CHECK((in->flags & (MB_OPF_VEC | MB_OPF_JIT | MB_OPF_POW)) == 0);
    CHECK(in->der == MB_DER_CODE && in->probe_pre == NULL);
    /* one fused backward kernel for the library ops, none for the reductions */
    CHECK((in->bwd_kernel != NULL) == (in->kind == MB_OPK_LIBRARY));
    char text[256];
    if (in->arity == 2) snprintf(text, sizeof text, "%s(a)", in->name);
    else snprintf(text, sizeof text, "%s(a, -1%s)", in->name, in->kind == MB_OPK_REDUCTION ? ", keepdim=True" : "");
    int s = saved_by(text, op);
    if (s != in->saves) fprintf(stderr, "op %s: backward reads %d, row says %d\n", in->name, s, in->saves);
    CHECK(s == in->saves);
    if (in->arity == 2)
        snprintf(text, sizeof text, "input x [rows, cols]\ninput w [cols]\ny = %s(x, w)\n", in->name);
    else
        snprintf(text, sizeof text, "input x [rows, cols]\ny = %s(x, -1%s)\n", in->name,
                 in->kind == MB_OPK_REDUCTION ? ", keepdim=True" : "");
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err;
    int rc = mb_parse_variant(text, "row.mb", MB_F32, &g, &err);
    if (rc) fprintf(stderr, "op %s: %s\n", in->name, err.msg);
    CHECK(rc == MB_OK);
    if (!rc) rc = mb_plan_build(g, MB_PLAN_EAGER, &p, &err);
    CHECK(rc == MB_OK);
    if (!rc) {
        CHECK(p->n_kernels == 1 && !strcmp(p->kernels[0].name, in->name));
        /* a reduction alone reads its row once; softmax 3 times, the norms twice */
        int want = in->kind == MB_OPK_REDUCTION ? 1 : op == MB_OP_SOFTMAX || op == MB_OP_LOG_SOFTMAX ? 3 : 2;
        CHECK_EQ_I64(p->kernels[0].passes, want);
    }
    mb_plan_free(p);
    mb_graph_free(g);
}

/* A column reduction (MB_OPK_COLUMN: colsum): made by autodiff only, as the
 * gradient of a [cols] operand (a sum over the rows); its own eager kernel
 * of that name reading the full tensor once and writing cols elements; the
 * row executor's column loop runs it, op by op and blocked, against the
 * float64 reference and finite differences (tests/kernels_rows_bwd.c has
 * the plans and the weights of the norms). */
static void column_op(mb_op op)
{
    const mb_op_info *in = mb_op_info_of(op);
    CHECK(in->kind == MB_OPK_COLUMN && in->arity == 1 && in->spell == MB_SPELL_NONE);
    CHECK(in->der == MB_DER_NONE && in->bwd_kernel == NULL && in->flags == 0 && in->probe_pre == NULL);
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err;
    int rc = mb_parse_variant("input x [rows, cols]\ninput w [cols]\ny = x + w\noutput y\nbackward\n", "col.mb",
                              MB_F32, &g, &err);
    CHECK(rc == MB_OK);
    if (!rc) rc = mb_plan_build(g, MB_PLAN_EAGER, &p, &err);
    CHECK(rc == MB_OK);
    const mb_shape s = {2, 37, 2 * MB_KERN_TILE + 5, 0};
    for (int e = 0; !rc && e < MB_KERN_EXEC_COUNT; e++) {
        int found = 0;
        for (int k = 0; k < p->n_kernels; k++) {
            const mb_kernel *K = &p->kernels[k];
            if (strcmp(K->name, in->name)) continue;
            found = 1;
            CHECK(K->n_nodes == 1 && p->g->nodes[K->nodes[0]].op == op && K->n_reads == 1 && K->n_writes == 1);
            CHECK(p->g->nodes[K->writes[0]].shape == MB_SHC_COL);
        }
        CHECK(found);
        mb_kern_tensors t;
        CHECK(mb_kern_tensors_alloc_shape(p, s, 0, &t, &err) == MB_OK);
        CHECK(mb_kern_run_plan(&t, (mb_kern_exec)e, &err) == MB_OK);
        mb_kern_check ck;
        double gerr = 0;
        int gok = 0;
        CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK && ck.passed);
        CHECK(mb_kern_gradcheck(&t, 8, &gerr, &gok, &err) == MB_OK && gok);
        mb_kern_tensors_free(&t);
    }
    mb_plan_free(p);
    mb_graph_free(g);
}

static void walk_rows(int have_jit)
{
    int reached[MB_OP_COUNT] = {0};
    for (int op = 1; op < MB_OP_COUNT; op++) {
        const mb_op_info *in = mb_op_info_of((mb_op)op);
        char body[128], wrapped[160];
        mb_op parent;
        CHECK(in->name && in->name[0] && (in->arity == 1 || in->arity == 2));
        if (in->flags & MB_OPF_ROW) {
            row_op((mb_op)op);
            reached[op] = 1;
            continue;
        }
        if (in->kind == MB_OPK_COLUMN) {
            column_op((mb_op)op);
            reached[op] = 1;
            continue;
        }
        CHECK(in->kind == MB_OPK_MAP || in->kind == MB_OPK_LIBRARY);
        for (int q = 1; q < op; q++) CHECK(strcmp(mb_op_info_of((mb_op)q)->name, in->name) != 0);
        /* a form claimed has its macro, and a vector form is claimed by a flag */
        int has_vform = strcmp(in->vform, "MB_V_NONE") != 0 && strcmp(in->vform, "MB_V_NONE2") != 0;
        CHECK(has_vform == ((in->flags & (MB_OPF_VEC | MB_OPF_JIT | MB_OPF_POW)) != 0));
        op_expr((mb_op)op, body, sizeof body, &parent);
        if (!body[0]) fprintf(stderr, "op %s: no spelling, and no row derives to it\n", in->name);
        CHECK(body[0] != '\0');
        if (!body[0]) continue;
        vector_form((mb_op)op);
        int has_op = 0;
        /* the interpreter, op by op and blocked, with gradients where it has them */
        const int backward = mb_op_info_of(parent)->der != MB_DER_NONE;
        CHECK(run_checked(body, backward, MB_PLAN_EAGER, MB_KERN_EXEC_OPWISE, 4099, (mb_op)op, &has_op) >= 0);
        CHECK(has_op);
        reached[op] = has_op;
        CHECK(run_checked(body, backward, MB_PLAN_EAGER, MB_KERN_EXEC_BLOCKED, 4099, (mb_op)op, &has_op) >= 0);
        /* the derivative reads what the row says it saves */
        if ((int)parent == op && in->der != MB_DER_NONE) {
            int s = saved_by(body, (mb_op)op);
            if (s != in->saves) fprintf(stderr, "op %s: backward reads %d, row says %d\n", in->name, s, in->saves);
            CHECK(s == in->saves);
            CHECK(eager_backward_as_row(body, (mb_op)op));
        } else {
            CHECK(in->bwd_kernel == NULL); /* a fused backward belongs to a differentiated row */
        }
        /* compiled: fused with one more op (a kernel of one op is not
         * compiled); autodiff's helpers in the recompute plan's backward */
        snprintf(wrapped, sizeof wrapped, "(%s) * a", body);
        int compiled = (int)parent == op
                           ? run_checked(wrapped, 0, MB_PLAN_FUSED, MB_KERN_EXEC_AUTO, 4099, (mb_op)op, &has_op)
                           : run_checked(body, 1, MB_PLAN_RECOMPUTE, MB_KERN_EXEC_AUTO, 4099, (mb_op)op, &has_op);
        CHECK(compiled >= 0);
        if (have_jit) {
            /* pow by a tensor exponent interprets (x**2 and x**3 compile) */
            int want = (in->flags & MB_OPF_JIT) != 0;
            if ((compiled > 0) != want)
                fprintf(stderr, "op %s: %d kernels compiled, row says %d\n", in->name, compiled, want);
            CHECK((compiled > 0) == want);
        }
        /* calibration: the op-rate probe, and the compiled chain the row names */
        CHECK(MB_OP_IS_ROW((mb_op)op) || mb_meas_op_rate_run((mb_op)op, 2) > 0); /* a row op: by its parts */
        char chain[1024];
        int has_chain = mb_cal_chain_expr((mb_op)op, 3, chain, sizeof chain);
        CHECK(has_chain == (in->probe_pre != NULL));
        const int costs = in->cost.flops > 0 || in->cost.sfu_ops > 0;
        /* neg excepted: -(-x) is x, so its chain would compile to a copy
         * (calibrate/ops.c gives it the compiled add's rate) */
        const int wants_chain = (in->flags & MB_OPF_JIT) && in->spell != MB_SPELL_NONE && costs && op != MB_OP_NEG;
        if (wants_chain && !has_chain) fprintf(stderr, "op %s: compiled form but no calibration chain\n", in->name);
        CHECK(!(wants_chain && !has_chain));
        if (has_chain) {
            mb_graph *g = NULL;
            mb_plan *p = NULL;
            mb_err err;
            CHECK(mb_parse_expr(chain, MB_F32, &g, &err) == MB_OK);
            if (g) CHECK(mb_plan_build(g, MB_PLAN_FUSED, &p, &err) == MB_OK);
            int links = 0;
            for (int i = 0; g && i < g->n_nodes; i++) links += (int)g->nodes[i].op == op;
            CHECK(links == 3);
            if (p && have_jit) CHECK(mb_kernel_compiled(p->g, &p->kernels[0]));
            mb_plan_free(p);
            mb_graph_free(g);
        }
#if defined(MB_TEST_HAVE_CUDA)
        CHECK(mb_kern_cuda_has_op((mb_op)op));
        CHECK(mb_kern_cuda_eval_has_op((mb_op)op));
#endif
    }
    for (int op = 1; op < MB_OP_COUNT; op++) CHECK(reached[op]);
}

/* The language's function list: parsed, suggested, in --help and the README. */
static void spellings(void)
{
    char list[512], need[600];
    mb_op_call_list(list, sizeof list);
    CHECK(strstr(list, "sin ") == list);
    for (int op = 1; op < MB_OP_COUNT; op++) {
        const mb_op_info *in = mb_op_info_of((mb_op)op);
        mb_op got;
        CHECK((mb_op_parse_call(in->name, &got) == MB_OK) == (in->spell == MB_SPELL_CALL));
        if (in->spell == MB_SPELL_CALL) CHECK(got == (mb_op)op);
    }
    mb_graph *g = NULL;
    mb_err err;
    CHECK(mb_parse_expr("y = sigmod(x)", MB_F32, &g, &err) == MB_EINPUT);
    CHECK(strstr(err.msg, "did you mean 'sigmoid'?") != NULL);
    CHECK(strstr(err.msg, list) != NULL);
    CHECK(mb_parse_expr("y = foo(x)", MB_F32, &g, &err) == MB_EINPUT);
    CHECK(strstr(err.msg, "did you mean") == NULL);
    const char *bin = getenv("MB_BIN"), *src = getenv("MB_SRC");
    if (bin) {
        char cmd[1024], out[8192] = "";
        snprintf(cmd, sizeof cmd, "'%s' --help", bin);
        FILE *fp = popen(cmd, "r");
        size_t got = fp ? fread(out, 1, sizeof out - 1, fp) : 0;
        out[got] = '\0';
        if (fp) pclose(fp);
        snprintf(need, sizeof need, "functions: %s.", list);
        if (!strstr(out, need)) fprintf(stderr, "--help lacks '%s'\n", need);
        CHECK(strstr(out, need) != NULL);
    }
    if (src) {
        char path[1024];
        snprintf(path, sizeof path, "%s/README.md", src);
        FILE *fp = fopen(path, "r");
        CHECK(fp != NULL);
        static char readme[1 << 20];
        size_t got = fp ? fread(readme, 1, sizeof readme - 1, fp) : 0;
        readme[got] = '\0';
        if (fp) fclose(fp);
        snprintf(need, sizeof need, "`%s`", list);
        if (!strstr(readme, need)) fprintf(stderr, "README.md lacks the function list %s\n", need);
        CHECK(strstr(readme, need) != NULL);
    }
}

int main(void)
{
    char dir[] = "/tmp/mb-op-table-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, dir);
    /* does this host compile kernels at all? (no compiler: those checks say so) */
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err;
    int have_jit = 0;
    if (!mb_parse_expr("y = sin(x) * x", MB_F32, &g, &err) && !mb_plan_build(g, MB_PLAN_FUSED, &p, &err)) {
        mb_kern_tensors t;
        mb_kern_eval_info info;
        if (!mb_kern_tensors_alloc(p, 1024, 0, &t, &err)) {
            have_jit = !mb_kern_kernel_info(&t, 0, &info, &err) && info.compiled;
            mb_kern_tensors_free(&t);
        }
    }
    mb_plan_free(p);
    mb_graph_free(g);
    if (!have_jit) fprintf(stderr, "note: no compiled kernels here (%s): those checks skipped\n", mb_kern_jit_why_not());
    spellings();
    walk_rows(have_jit);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return mb_test_done();
}
