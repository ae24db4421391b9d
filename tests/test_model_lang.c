/* test_model_lang.c — the variant language: PyTorch-eager kernel counts and
 * traffic for expressions (table-driven, counts derived by hand from
 * Python's evaluation order), and line:column errors for bad input. */
#include "membound_model.h"
#include "mb_test.h"

#include <string.h>

/* expr, eager kernels, eager reads and writes (elements), fused reads */
static const struct {
    const char *expr;
    int kernels, reads, writes, fused_reads;
} cases[] = {
    {"y = sin(x)**2 + cos(x)**2", 5, 6, 5, 1},
    {"y = 0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))", 8, 10, 8, 1},
    {"y = -x**2", 2, 2, 2, 1},              /* ** binds tighter than unary minus */
    {"y = (-x)**2", 2, 2, 2, 1},
    {"y = x*x", 1, 1, 1, 1},                /* a repeated operand is read once */
    {"y = x - x", 1, 1, 1, 1},
    {"y = x*w", 1, 2, 1, 2},                /* two inputs */
    {"y = a + b*c", 2, 4, 2, 3},
    {"y = 2.0*3.0*x", 1, 1, 1, 1},          /* (2*3) folds, left to right */
    {"y = x*2.0*3.0", 2, 2, 2, 1},          /* (x*2)*3: two kernels, as eager */
    {"y = x**2**3", 1, 1, 1, 1},            /* right-associative: x**8 */
    {"y = (x**2)**3", 2, 2, 2, 1},
    {"y = (2 - 3) * x", 1, 1, 1, 1},
    {"y = x / 2 / 3", 2, 2, 2, 1},
    {"y = -(-x)", 2, 2, 2, 1},
    {"y = +x * 1", 1, 1, 1, 1},             /* unary plus is no op */
    {"y = 2**x", 1, 1, 1, 1},
    {"y = 1/x", 2, 2, 2, 1},                /* x.reciprocal() * 1, as __rtruediv__ */
    {"y = 1/(1 + exp(-x))", 5, 5, 5, 1},    /* neg, exp, add, reciprocal, mul */
    {"y = x/2", 1, 1, 1, 1},
    {"y = sin(x) + sin(x)", 3, 4, 3, 1},    /* no common-subexpression elimination */
    {"t = exp(x); y = t / (1 + t)", 3, 4, 3, 1},
    {"y = gelu(x)", 1, 1, 1, 1},            /* a library op is one kernel */
    {"y = copy(x)", 1, 1, 1, 1},
    {"y = relu(x) * sigmoid(w) - abs(x)", 5, 7, 5, 2},
    {"y = sqrt(exp(-x)) + rsqrt(x)", 5, 6, 5, 1},
    {"y = x + 2*3**2", 1, 1, 1, 1},         /* scalar-only subexpression folds */
    {"y = (x +\n     2) * x", 2, 3, 2, 1},   /* newlines inside brackets join lines */
};

static void check_case(int i)
{
    mb_graph *g;
    mb_err e;
    int rc = mb_parse_expr(cases[i].expr, MB_F32, &g, &e);
    CHECK(rc == MB_OK);
    if (rc) { fprintf(stderr, "  %s: %s\n", cases[i].expr, e.msg); return; }
    mb_plan *p;
    CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
    int reads = 0, writes = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        reads += p->kernels[k].n_reads;
        writes += p->kernels[k].n_writes;
    }
    if (p->n_kernels != cases[i].kernels || reads != cases[i].reads || writes != cases[i].writes)
        fprintf(stderr, "  case '%s': got %d kernels, %d reads, %d writes\n", cases[i].expr,
                p->n_kernels, reads, writes);
    CHECK_EQ_I64(p->n_kernels, cases[i].kernels);
    CHECK_EQ_I64(reads, cases[i].reads);
    CHECK_EQ_I64(writes, cases[i].writes);
    mb_plan_free(p);
    CHECK(mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_OK);
    CHECK_EQ_I64(p->n_kernels, 1);
    CHECK_EQ_I64(p->kernels[0].n_reads, cases[i].fused_reads);
    CHECK_EQ_I64(p->kernels[0].n_writes, 1);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* text, expected fragment of the message (with line:col) */
static const struct {
    const char *text;
    const char *msg;
} bad[] = {
    {"y = sin(x", "<expr>:1:10: expected ',' or ')', got end of input"},
    {"y = foo(x)", "<expr>:1:5: unknown function 'foo'"},
    {"y = x +", "<expr>:1:8: expected an expression, got end of input"},
    {"y = 1 + 2", "output 'y' is a scalar"},
    {"y = x $ 2", "<expr>:1:7: expected end of line, got '$'"},
    {"y = (x", "<expr>:1:7: expected ')'"},
    {"y = sin(x, x)", "<expr>:1:5: sin() takes 1 argument, got 2"},
    {"", "no assignment"},
    {"y = x", "is the input 'x' itself"},
    {"y = 1/0 * x", "<expr>:1:6: division by zero"},
    {"y = x ** ", "<expr>:1:10: expected an expression"},
    {"y = 3x", "<expr>:1:5: invalid token '3x'"},
    {"y = sin x", "<expr>:1:9: expected end of line, got 'x'"},
    {"x y", "<expr>:1:3: expected '=' after 'x'"},
    {"y = log(0) * x", "<expr>:1:5: log(0) is not a finite real number"},
    {"y = (-8) ** 0.5 * x", "<expr>:1:10: scalar result is not a finite real number"},
    {"y = x\xc3\xa9", "<expr>:1:6: expected end of line, got '\xc3\xa9'"},
    /* constants are float32 in every kernel: verification got -inf from these */
    {"y = 3.5e38 * x", "<expr>:1:5: number '3.5e38' is too large for a float32"},
    {"y = x - 1e309", "<expr>:1:9: number '1e309' is too large for a float32"},
    {"y = x * 1e400", "<expr>:1:9: number '1e400' is too large for a float32"},
    {"y = 1e30 * 1e30 * x", "<expr>:1:17: the constant 1e+60 is not a finite float32"},
    {"y = x ** 3.4028236e38", "<expr>:1:10: number '3.4028236e38' is too large"},
};

static void check_bad(int i)
{
    mb_graph *g = NULL;
    mb_err e = {{0}};
    int rc = mb_parse_expr(bad[i].text, MB_F32, &g, &e);
    CHECK(rc == MB_EINPUT);
    CHECK(g == NULL);
    if (!strstr(e.msg, bad[i].msg))
        fprintf(stderr, "  '%s': message '%s' lacks '%s'\n", bad[i].text, e.msg, bad[i].msg);
    CHECK(strstr(e.msg, bad[i].msg) != NULL);
}

static void check_variant_file_errors(void)
{
    static const struct { const char *text, *msg; } vb[] = {
        {"input x\ny = z * x\n", "v.mb:2:5: name 'z' is not defined"},
        {"input x\ninput x\ny = x*2\n", "v.mb:2:7: 'x' is already defined"},
        {"input x f64\ny = x*2\n", "v.mb:1:9: unknown dtype or word 'f64'"},
        {"input x\ny = x*2\noutput z\n", "v.mb:3:8: output 'z' is never assigned"},
        {"input x, w\ny = x*2\n", "v.mb:1:10: input 'w' is never used"},
        {"input x\nx = x*2\n", "v.mb:2:1: 'x' is an input and cannot be assigned"},
        {"input x\nsize 0\ny = x*2\n", "v.mb:2:6: size '0': must be at least 1"},
        {"input x\ny = x*2\nbogus\n", "v.mb:3:6: expected '=' after 'bogus'"},
        {"name a\ninput x\nname b\ny = x*2\n", "v.mb:3:1: a second 'name' directive (the first is on line 1)"},
        {"input x\nshape 4x4\nshape 8x8\ny = x*2\n", "v.mb:3:1: a second 'shape' directive (the first is on line 2)"},
        {"input x\nsize 16\ny = x*2\nsize 32\n", "v.mb:4:1: a second 'size' directive (the first is on line 2)"},
        /* an --expr is 1-D as written: the message says how to make it 2-D */
        {"input x\ny = softmax(x, 1)\n", "its inputs are [n] as written: declare them 2-D"},
        /* a lone CR ends a line, as in Python: the error is on line 2, not "dtype 'y'" */
        {"name a\rinput x y\ry = x*2\r", "v.mb:2:9: unknown dtype or word 'y'"},
    };
    for (size_t i = 0; i < sizeof vb / sizeof vb[0]; i++) {
        mb_graph *g = NULL;
        mb_err e = {{0}};
        CHECK(mb_parse_variant(vb[i].text, "v.mb", MB_F32, &g, &e) == MB_EINPUT);
        if (!strstr(e.msg, vb[i].msg)) fprintf(stderr, "  got '%s', want '%s'\n", e.msg, vb[i].msg);
        CHECK(strstr(e.msg, vb[i].msg) != NULL);
    }
}

static void check_directives(void)
{
    const char *text = "# comment\nname demo  # trailing\ninput x bf16, w\n"
                       "t = x * w\ny = t + 1\noutput y, t\nsize 16M\n";
    mb_graph *g;
    mb_err e;
    CHECK(mb_parse_variant(text, "demo.mb", MB_F32, &g, &e) == MB_OK);
    CHECK(!strcmp(g->name, "demo"));
    CHECK_EQ_I64(g->n_inputs, 2);
    CHECK(g->nodes[g->inputs[0]].dtype == MB_BF16);
    CHECK(g->nodes[g->inputs[1]].dtype == MB_F32);
    CHECK(g->nodes[g->outputs[0]].dtype == MB_F32); /* bf16 * f32 promotes */
    CHECK_EQ_I64(g->n_outputs, 2);
    CHECK_EQ_I64(g->default_n, 16 << 20);
    mb_plan *p;
    CHECK(mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_OK);
    CHECK_EQ_I64(p->kernels[0].n_writes, 2); /* both outputs */
    mb_plan_free(p);
    mb_graph_free(g);
}

static void check_sizes(void)
{
    static const struct { const char *s; long long n; } ok[] = {
        {"16777216", 16777216}, {"2^24", 16777216}, {"16M", 16777216}, {"16Mi", 16777216},
        {"64K", 65536}, {"1G", 1073741824}, {"2^44", 17592186044416LL}, {"1", 1},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t n = 0;
        mb_err e;
        CHECK(mb_size_parse(ok[i].s, &n, &e) == MB_OK);
        CHECK_EQ_I64(n, ok[i].n);
    }
    static const char *const badn[] = {"0", "-1", "2^45", "abc", "16Q", "99999999999999999999999",
                                       "2^", "", "1.5M", "2^1000"};
    for (size_t i = 0; i < sizeof badn / sizeof badn[0]; i++) {
        int64_t n;
        mb_err e;
        CHECK(mb_size_parse(badn[i], &n, &e) == MB_EINPUT);
    }
}

/* deep nesting and huge expressions are errors, not crashes or hangs */
static void check_limits(void)
{
    static char text[200000];
    mb_graph *g;
    mb_err e;
    strcpy(text, "y = ");
    size_t len = strlen(text);
    for (int i = 0; i < 50000; i++) text[len++] = '(';
    strcpy(text + len, "x");
    CHECK(mb_parse_expr(text, MB_F32, &g, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "nested too deeply") != NULL);
    len = strlen("y = ");
    for (int i = 0; i < 50000; i++) text[len++] = '-';
    strcpy(text + len, "x");
    CHECK(mb_parse_expr(text, MB_F32, &g, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "nested too deeply") != NULL);
    strcpy(text, "y = x");
    len = strlen(text);
    for (int i = 0; i < 10000; i++) { memcpy(text + len, "+x", 2); len += 2; }
    text[len] = '\0';
    CHECK(mb_parse_expr(text, MB_F32, &g, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "too many operations") != NULL);
}

/* A non-zero literal that is 0 in float32 is accepted with a warning at its
 * line:column; the largest finite float32 and the smallest subnormal are fine. */
static void check_f32_literals(void)
{
    static const struct { const char *text, *warning; int count; } w[] = {
        {"y = 1e-400 * x", "<expr>:1:5: number '1e-400' is 0 in float32", 1},
        {"y = x + 1e-46 + 7e-46", "<expr>:1:9: number '1e-46' is 0 in float32", 2},
        {"y = 3.4028234e38 * x + 1.5e-45", "", 0},
        {"y = 0.0e-400 * x + 0e5", "", 0},
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        mb_graph *g = NULL;
        mb_err e = {{0}};
        int rc = mb_parse_expr(w[i].text, MB_F32, &g, &e);
        CHECK(rc == MB_OK);
        if (rc) { fprintf(stderr, "  '%s': %s\n", w[i].text, e.msg); continue; }
        if (strcmp(g->warning, w[i].warning) && !(w[i].warning[0] && strstr(g->warning, w[i].warning)))
            fprintf(stderr, "  '%s': warning '%s', want '%s'\n", w[i].text, g->warning, w[i].warning);
        CHECK(w[i].warning[0] ? strstr(g->warning, w[i].warning) != NULL : g->warning[0] == '\0');
        CHECK_EQ_I64(g->n_warnings, w[i].count);
        mb_graph_free(g);
    }
}

/* Line ends "\n", "\r\n" and a lone "\r" read alike; a UTF-8 byte order mark
 * at the start is skipped (columns count from after it). */
static void check_line_ends(void)
{
    static const char *const texts[] = {
        "name v\ninput x\ny = x*2 # c\noutput y\n",
        "name v\r\ninput x\r\ny = x*2 # c\r\noutput y\r\n",
        "name v\rinput x\ry = x*2 # c\routput y\r",
        "\xEF\xBB\xBFname v\ninput x\ny = (x *\r 2)\noutput y\n",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        mb_graph *g = NULL;
        mb_err e = {{0}};
        int rc = mb_parse_variant(texts[i], "v.mb", MB_F32, &g, &e);
        CHECK_EQ_I64(rc, MB_OK);
        if (rc) { fprintf(stderr, "  text %zu: %s\n", i, e.msg); continue; }
        CHECK(!strcmp(g->name, "v") && g->n_inputs == 1 && g->n_outputs == 1);
        mb_graph_free(g);
    }
    mb_graph *g = NULL;
    mb_err e = {{0}};
    CHECK(mb_parse_variant("\xEF\xBB\xBFname v\ninput x\ny = $x\n", "v.mb", MB_F32, &g, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "v.mb:3:5:") != NULL);
    CHECK(mb_parse_variant("\xEF\xBB\xBF$", "v.mb", MB_F32, &g, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "v.mb:1:1:") != NULL && !strstr(e.msg, "\xEF"));
}

int main(void)
{
    check_f32_literals();
    check_line_ends();
    check_limits();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case((int)i);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) check_bad((int)i);
    check_variant_file_errors();
    check_directives();
    check_sizes();
    return mb_test_done();
}
