/* parser.c — recursive-descent parser of the variant language.
 * Python's precedence and associativity for + - * / ** and unary minus,
 * operands evaluated left to right, operations on scalars folded here.
 * Builds the forward graph (one node per tensor op, in evaluation order);
 * autodiff.c appends the backward graph. Does not plan or cost anything, nor
 * know the built-in variants (variants.c judges a variant's name). */
#include "model_int.h"
#include "op_math.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_NAMES 512
/* Most tensor operations in one variant: the plans and the cache model are
 * quadratic in the worst case, and no lecture variant needs a hundredth. */
#define MAX_OPS 4096

/* A value during parsing: a tensor (node >= 0) or a scalar; detached: an
 * input read through detach(), and so through a name bound to it. */
typedef struct {
    int node;
    double s;
    int detached;
} val;

typedef struct {
    char name[MB_NAME_MAX];
    val v;
    int line, col;
    int is_input;
} binding;

typedef struct {
    mb_lexer lx;
    const char *file;
    mb_graph *g;
    mb_err *err;
    mb_dtype dtype;
    int expr_mode;        /* free names become inputs */
    binding names[MAX_NAMES];
    int n_names;
    char last_assigned[MB_NAME_MAX];
    int last_line, last_col;
    struct { char name[MB_NAME_MAX]; int line, col; } outs[MB_MAX_IO];
    int n_outs;
    int depth;            /* recursion depth: deep nesting is an error, not a crash */
    int name_line;        /* line of the 'name' directive, 0 if none */
    int rank_line;        /* line that fixed the rank, 0 if none */
    int size_line, shape_line; /* lines of the 'size' and 'shape' directives, 0 if none */
    struct {              /* per input: its named dimensions (finish_dims) */
        int n, line, col;
        char name[MB_MAX_DIMS][MB_DIM_NAME_MAX];
    } idims[MB_MAX_IO];
    int named_dims;       /* 1: an input's dimensions are named */
    char dims_text[256];  /* the 'dims' directive's sizes, "" none */
    int dims_line, dims_col;
    /* per forward node (inputs only): reads of it by name, and where the
     * first detach() of it was written (0 if none): an input read both
     * through detach() and without is refused in finish() */
    int plain_reads[MAX_OPS];
    int detach_line[MAX_OPS], detach_col[MAX_OPS];
} parser;

/* Deepest nesting of parentheses, calls, unary signs and powers accepted
 * (CPython's own parser stops at 200 levels of parentheses). */
#define MAX_DEPTH 200

static int perr(parser *P, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int perr(parser *P, int line, int col, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mb_err_set(P->err, MB_EINPUT, "%s:%d:%d: %s", P->file, line, col, msg);
}

static int perr_tok(parser *P, const char *what)
{
    char d[64];
    return perr(P, P->lx.tok.line, P->lx.tok.col, "expected %s, got %s", what,
                mb_tok_desc(&P->lx.tok, d, sizeof d));
}

static int tok_is(const mb_token *t, const char *word)
{
    return t->kind == TK_ID && (int)strlen(word) == t->len && !strncmp(t->start, word, (size_t)t->len);
}

static void tok_copy(const mb_token *t, char *buf, int bufsize)
{
    int len = t->len < bufsize - 1 ? t->len : bufsize - 1;
    memcpy(buf, t->start, (size_t)len);
    buf[len] = '\0';
}

/* The current token as a directive's word into buf ("" when it is no
 * identifier): the caller parses it, and on failure says perr_tok there. */
static void tok_word(const parser *P, char *buf, int bufsize)
{
    buf[0] = '\0';
    if (P->lx.tok.kind == TK_ID) tok_copy(&P->lx.tok, buf, bufsize);
}

static binding *lookup(parser *P, const char *name)
{
    for (int i = P->n_names - 1; i >= 0; i--)
        if (!strcmp(P->names[i].name, name)) return &P->names[i];
    return NULL;
}

static int bind(parser *P, const char *name, val v, int line, int col, int is_input)
{
    binding *b = lookup(P, name);
    if (!b) {
        if (P->n_names == MAX_NAMES)
            return perr(P, line, col, "too many names (at most %d)", MAX_NAMES);
        b = &P->names[P->n_names++];
        snprintf(b->name, sizeof b->name, "%s", name);
    }
    b->v = v;
    b->line = line;
    b->col = col;
    b->is_input = is_input;
    return MB_OK;
}

static int add_input(parser *P, const char *name, mb_dtype t, int line, int col)
{
    if (P->g->n_inputs == MB_MAX_IO)
        return perr(P, line, col, "too many inputs (at most %d)", MB_MAX_IO);
    int id = mb_graph_add(P->g, MB_OP_INPUT, -1, 0, -1, 0, t, 0, -1);
    if (id < 0) return perr(P, line, col, "out of memory");
    mb_node *nd = &P->g->nodes[id];
    snprintf(nd->name, sizeof nd->name, "%s", name);
    nd->line = line;
    nd->col = col;
    P->g->inputs[P->g->n_inputs++] = id;
    return bind(P, name, (val){id, 0, 0}, line, col, 1);
}

/* ---- float32 range ----
 * Tensors hold f32 (or narrower) and every kernel computes in f32, so a
 * constant that reaches a tensor op must be a finite float32: it rounds to
 * inf at or above FLT_MAX + half an ulp (2^128 - 2^103) and to 0 at or below
 * half the smallest subnormal (2^-150), ties to even. */
#define F32_INF_AT 0x1.ffffffp+127
#define F32_ZERO_AT 0x1p-150

static int f32_overflows(double v) { return !(fabs(v) < F32_INF_AT); }
static int f32_underflows(double v) { return v != 0 && fabs(v) <= F32_ZERO_AT; }

/* A number's text has a non-zero digit before its exponent. */
static int text_nonzero(const char *s, int len)
{
    for (int i = 0; i < len && s[i] != 'e' && s[i] != 'E'; i++)
        if (s[i] >= '1' && s[i] <= '9') return 1;
    return 0;
}

/* Records a warning (the first one's text, and the count) on the graph. */
static void pwarn(parser *P, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void pwarn(parser *P, int line, int col, const char *fmt, ...)
{
    if (P->g->n_warnings++ > 0) return;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(P->g->warning, sizeof P->g->warning, "%s:%d:%d: %s", P->file, line, col, msg);
}

/* ---- scalar folding ---- */

static int fold_unary(parser *P, mb_op op, double a, double *out, int line, int col)
{
    /* op_math.h's float64 definition, as the reference evaluates it */
    double r = mb_op_arity(op) == 1 ? mb_op_apply_f64(op, a, 0.0) : NAN;
    if (!isfinite(r))
        return perr(P, line, col, "%s(%g) is not a finite real number", mb_op_name(op), a);
    *out = r;
    return MB_OK;
}

/* Scalars on both sides fold as Python's float arithmetic does (libm pow, not
 * op_math.h's x*x*x for the tensor op): PyTorch folds them before any kernel. */
static int fold_binary(parser *P, mb_op op, double a, double b, double *out, int line, int col)
{
    double r = NAN;
    switch (op) {
    case MB_OP_ADD: r = a + b; break;
    case MB_OP_SUB: r = a - b; break;
    case MB_OP_MUL: r = a * b; break;
    case MB_OP_DIV:
        if (b == 0) return perr(P, line, col, "division by zero");
        r = a / b;
        break;
    case MB_OP_POW:
        if (a == 0 && b < 0) return perr(P, line, col, "0 cannot be raised to a negative power");
        r = pow(a, b);
        break;
    default: break;
    }
    if (!isfinite(r))
        return perr(P, line, col, "scalar result is not a finite real number");
    *out = r;
    return MB_OK;
}

/* ---- node construction ---- */

static int too_many(parser *P, int line, int col)
{
    return perr(P, line, col, "too many operations (at most %d tensor operations in a variant)", MAX_OPS);
}

static int mk_unary(parser *P, mb_op op, val a, val *out, int line, int col)
{
    if (a.node < 0) {
        out->node = -1;
        return fold_unary(P, op, a.s, &out->s, line, col);
    }
    if (P->g->n_nodes >= MAX_OPS) return too_many(P, line, col);
    int id = mb_graph_add(P->g, op, a.node, 0, -1, 0, P->g->nodes[a.node].dtype, 0, -1);
    if (id < 0) return perr(P, line, col, "out of memory");
    P->g->nodes[id].line = line;
    P->g->nodes[id].col = col;
    *out = (val){id, 0, 0};
    return MB_OK;
}

static int mk_binary(parser *P, mb_op op, val a, val b, val *out, int line, int col)
{
    if (a.node < 0 && b.node < 0) {
        out->node = -1;
        return fold_binary(P, op, a.s, b.s, &out->s, line, col);
    }
    if (P->g->n_nodes >= MAX_OPS) return too_many(P, line, col);
    double sc = a.node < 0 ? a.s : b.node < 0 ? b.s : 0;
    if (f32_overflows(sc))
        return perr(P, line, col, "the constant %g is not a finite float32 (largest 3.4028235e+38)", sc);
    mb_dtype t;
    if (a.node >= 0 && b.node >= 0)
        t = mb_dtype_promote(P->g->nodes[a.node].dtype, P->g->nodes[b.node].dtype);
    else
        t = P->g->nodes[a.node >= 0 ? a.node : b.node].dtype;
    int id = mb_graph_add(P->g, op, a.node, a.node < 0 ? a.s : 0, b.node, b.node < 0 ? b.s : 0, t, 0, -1);
    if (id < 0) return perr(P, line, col, "out of memory");
    P->g->nodes[id].line = line;
    P->g->nodes[id].col = col;
    *out = (val){id, 0, 0};
    return MB_OK;
}

/* ---- expressions ---- */


static int parse_expr(parser *P, val *out);
static int parse_factor(parser *P, val *out);
static int too_deep(parser *P);

/* One argument of a call: a value, or True/False, positional or name=. */
typedef struct {
    val v;
    int is_bool, b;
    char kw[16]; /* "" positional */
    int line, col;
} call_arg;

#define MAX_CALL_ARGS 6

/* Parses "(args)" after the callee (the '(' is the current token); receiver,
 * when not NULL, is the first positional argument (a method call). */
static int parse_args(parser *P, const val *receiver, call_arg *args, int *nargs)
{
    int n = 0;
    if (receiver) args[n++] = (call_arg){*receiver, 0, 0, "", 0, 0};
    mb_lex_next(&P->lx); /* ( */
    while (P->lx.tok.kind != TK_RPAREN) {
        mb_token t = P->lx.tok;
        call_arg a = {{-1, 0, 0}, 0, 0, "", t.line, t.col};
        mb_lexer save = P->lx;
        mb_lex_next(&P->lx);
        if (t.kind == TK_ID && P->lx.tok.kind == TK_ASSIGN) { /* name=value */
            tok_copy(&t, a.kw, sizeof a.kw);
            mb_lex_next(&P->lx);
            t = P->lx.tok;
            save = P->lx;
            mb_lex_next(&P->lx);
        }
        int ends = P->lx.tok.kind == TK_COMMA || P->lx.tok.kind == TK_RPAREN;
        if (ends && (tok_is(&t, "True") || tok_is(&t, "False"))) {
            a.is_bool = 1;
            a.b = tok_is(&t, "True");
        } else {
            P->lx = save;
            int rc = parse_expr(P, &a.v);
            if (rc) return rc;
        }
        if (n == MAX_CALL_ARGS) return perr(P, t.line, t.col, "too many arguments (at most %d)", MAX_CALL_ARGS);
        args[n++] = a;
        if (P->lx.tok.kind != TK_COMMA) break;
        mb_lex_next(&P->lx);
    }
    if (P->lx.tok.kind != TK_RPAREN) return perr_tok(P, "',' or ')'");
    mb_lex_next(&P->lx);
    *nargs = n;
    return MB_OK;
}

/* The argument named kw, else positional number pos (-1: none), else NULL;
 * a keyword given twice, or also positionally, is an error (*rc). */
static const call_arg *arg_of(parser *P, const char *fn, const call_arg *args, int n, int pos, const char *kw,
                              int *rc)
{
    const call_arg *found = NULL;
    int k = 0;
    for (int i = 0; i < n; i++) {
        int hit = args[i].kw[0] ? !strcmp(args[i].kw, kw) : (k++ == pos);
        if (!hit) continue;
        if (found) {
            *rc = perr(P, args[i].line, args[i].col, "%s() got multiple values for argument '%s'", fn, kw);
            return NULL;
        }
        found = &args[i];
    }
    return found;
}

static int bad_kwargs(parser *P, const char *fn, const call_arg *args, int n, const char *const *known,
                      int max_pos, const char *usage)
{
    int pos = 0;
    for (int i = 0; i < n; i++) {
        if (!args[i].kw[0]) {
            if (++pos > max_pos)
                return perr(P, args[i].line, args[i].col, "%s() takes at most %d positional arguments (%s)",
                            fn, max_pos, usage);
            continue;
        }
        int ok = 0;
        for (int k = 0; known[k]; k++) ok |= !strcmp(known[k], args[i].kw);
        if (!ok)
            return perr(P, args[i].line, args[i].col, "%s() got an unexpected keyword argument '%s' (%s)", fn,
                        args[i].kw, usage);
    }
    return MB_OK;
}

/* A tensor argument (not a scalar or a bool). */
static int want_tensor(parser *P, const char *fn, const call_arg *a, const char *what)
{
    if (a->is_bool || a->v.node < 0)
        return perr(P, a->line, a->col, "%s(): %s must be a tensor", fn, what);
    return MB_OK;
}

static int want_int(parser *P, const char *fn, const call_arg *a, const char *what, int *out)
{
    /* in int's range before the conversion: (int) of a double beyond it is
     * undefined (fuzzing found x.amax(77777777777-1)) */
    if (a->is_bool || a->v.node >= 0 || !(a->v.s >= INT_MIN && a->v.s <= INT_MAX) ||
        a->v.s != (double)(int)a->v.s)
        return perr(P, a->line, a->col, "%s(): %s must be an integer", fn, what);
    *out = (int)a->v.s;
    return MB_OK;
}

static int mk_row_node(parser *P, mb_op op, int x, int w, double ws, int line, int col, mb_node **out)
{
    if (P->g->n_nodes >= MAX_OPS) return too_many(P, line, col);
    mb_dtype t = P->g->nodes[x].dtype;
    if (w >= 0) t = mb_dtype_promote(t, P->g->nodes[w].dtype);
    int id = mb_graph_add(P->g, op, x, 0, w, w < 0 ? ws : 0, t, 0, -1);
    if (id < 0) return perr(P, line, col, "out of memory");
    mb_node *nd = &P->g->nodes[id];
    nd->line = line;
    nd->col = col;
    nd->dim = -1;
    P->g->has_row_ops = 1;
    *out = nd;
    return MB_OK;
}

/* sum / mean / amax (x, dim, keepdim=False), softmax / log_softmax (x, dim). */
static int mk_reduction(parser *P, mb_op f, const char *fn, const call_arg *args, int n, val *out, int line,
                        int col)
{
    int red = mb_op_info_of(f)->kind == MB_OPK_REDUCTION;
    static const char *const kw_red[] = {"input", "dim", "keepdim", NULL};
    static const char *const kw_soft[] = {"input", "dim", NULL};
    const char *usage = red ? "write sum(x, -1, keepdim=True) or x.sum(-1)" : "write softmax(x, -1)";
    int rc = bad_kwargs(P, fn, args, n, red ? kw_red : kw_soft, red ? 3 : 2, usage);
    if (rc) return rc;
    const call_arg *x = arg_of(P, fn, args, n, 0, "input", &rc);
    const call_arg *dim = rc ? NULL : arg_of(P, fn, args, n, 1, "dim", &rc);
    const call_arg *keep = rc || !red ? NULL : arg_of(P, fn, args, n, 2, "keepdim", &rc);
    if (rc) return rc;
    if (!x) return perr(P, line, col, "%s() needs a tensor (%s)", fn, usage);
    if ((rc = want_tensor(P, fn, x, "input"))) return rc;
    if (!dim && !red)
        return perr(P, line, col, "%s() without dim picks the dimension implicitly: only the last dimension "
                    "is supported (%s)", fn, usage);
    if (!dim && keep)
        return perr(P, keep->line, keep->col, "%s(): keepdim needs a dim (%s, or %s(x) over every element)", fn,
                    usage, fn);
    int d = MB_DIM_ALL; /* sum(x): every dimension */
    if (dim && (rc = want_int(P, fn, dim, "dim", &d))) return rc;
    if (keep && !keep->is_bool) return perr(P, keep->line, keep->col, "%s(): keepdim must be True or False", fn);
    mb_node *nd;
    if ((rc = mk_row_node(P, f, x->v.node, -1, 0, line, col, &nd))) return rc;
    nd->dim = (signed char)(d == MB_DIM_ALL ? d : d < -100 ? -100 : d > 100 ? 100 : d);
    nd->keepdim = keep ? (unsigned char)keep->b : 0; /* PyTorch's default: keepdim=False */
    *out = (val){(int)(nd - P->g->nodes), 0, 0};
    return MB_OK;
}

/* layer_norm(x, w, b, eps=1e-5), rms_norm(x, w, eps=None): normalized over
 * the last dimension (F.layer_norm's normalized_shape is x's last dim). */
static int mk_norm(parser *P, mb_op f, const char *fn, const call_arg *args, int n, val *out, int line, int col)
{
    int ln = f == MB_OP_LAYER_NORM;
    static const char *const kw_ln[] = {"input", "weight", "bias", "eps", NULL};
    static const char *const kw_rms[] = {"input", "weight", "eps", NULL};
    const char *usage = ln ? "write layer_norm(x, w, b, eps=1e-5)" : "write rms_norm(x, w, eps=1e-6)";
    int rc = bad_kwargs(P, fn, args, n, ln ? kw_ln : kw_rms, ln ? 4 : 3, usage);
    if (rc) return rc;
    const call_arg *x = arg_of(P, fn, args, n, 0, "input", &rc);
    const call_arg *w = rc ? NULL : arg_of(P, fn, args, n, 1, "weight", &rc);
    const call_arg *b = rc || !ln ? NULL : arg_of(P, fn, args, n, 2, "bias", &rc);
    const call_arg *eps = rc ? NULL : arg_of(P, fn, args, n, ln ? 3 : 2, "eps", &rc);
    if (rc) return rc;
    if (!x) return perr(P, line, col, "%s() needs a tensor (%s)", fn, usage);
    if ((rc = want_tensor(P, fn, x, "input"))) return rc;
    if (w && (rc = want_tensor(P, fn, w, "weight"))) return rc;
    if (b && (rc = want_tensor(P, fn, b, "bias"))) return rc;
    /* F.layer_norm's default eps; F.rms_norm's is the dtype's epsilon */
    double e = ln ? 1e-5 : 1.1920928955078125e-07;
    if (eps && (eps->is_bool || eps->v.node >= 0 || !(eps->v.s >= 0)))
        return perr(P, eps->line, eps->col, "%s(): eps must be a number >= 0", fn);
    if (eps) e = eps->v.s;
    mb_node *nd;
    if ((rc = mk_row_node(P, f, x->v.node, w ? w->v.node : -1, 1.0, line, col, &nd))) return rc;
    nd->eps = e;
    int id = (int)(nd - P->g->nodes);
    if (b) { /* the bias add runs in layer_norm's kernel */
        mb_dtype t = mb_dtype_promote(nd->dtype, P->g->nodes[b->v.node].dtype);
        int a = mb_graph_add(P->g, MB_OP_ADD, id, 0, b->v.node, 0, t, 0, -1);
        if (a < 0) return perr(P, line, col, "out of memory");
        P->g->nodes[a].line = line;
        P->g->nodes[a].col = col;
        P->g->nodes[a].joins = 1;
        id = a;
    }
    *out = (val){id, 0, 0};
    return MB_OK;
}

static int call_op(parser *P, mb_op f, const char *name, const call_arg *args, int nargs, val *out, int line,
                   int col)
{
    if (f == MB_OP_LAYER_NORM || f == MB_OP_RMS_NORM) return mk_norm(P, f, name, args, nargs, out, line, col);
    if (MB_OP_IS_ROW(f)) return mk_reduction(P, f, name, args, nargs, out, line, col);
    for (int i = 0; i < nargs; i++)
        if (args[i].kw[0])
            return perr(P, args[i].line, args[i].col, "%s() takes no keyword arguments", name);
    if (nargs != 1)
        return perr(P, line, col, "%s() takes 1 argument, got %d", name, nargs);
    if (args[0].is_bool) return perr(P, args[0].line, args[0].col, "%s(): expected a number or a tensor", name);
    return mk_unary(P, f, args[0].v, out, line, col);
}

static int unknown_function(parser *P, const mb_token *fn, const char *name)
{
    char list[512];
    mb_op_call_list(list, sizeof list);
    const char *near = mb_op_closest_call(name);
    if (near)
        return perr(P, fn->line, fn->col, "unknown function '%s' (did you mean '%s'?; functions: %s)",
                    name, near, list);
    return perr(P, fn->line, fn->col, "unknown function '%s' (functions: %s)", name, list);
}

/* PyTorch forms the language does not model, each refused where written
 * with what is: NULL when name is none of them. */
static const char *unmodelled_view(const char *name)
{
    static const char *const views[] = {"T", "mT", "H", "mH", "transpose", "permute", "t", "swapaxes", "view",
                                        "reshape", "flatten", "unsqueeze", "squeeze", "expand", "contiguous"};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (!strcmp(name, views[i])) return views[i];
    return NULL;
}

/* The spellings of a cast PyTorch has beside x.to(dtype), refused with that
 * one: NULL when name is none of them. */
static const char *cast_spelling(const char *name)
{
    static const struct { const char *name, *hint; } casts[] = {
        {"float", "x.to(f32)"}, {"bfloat16", "x.to(bf16)"}, {"half", "x.to(f16)"},
        {"double", "x.to(f32): float64 tensors are not modelled"}, {"type", "x.to(f32)"},
        {"type_as", "x.to(f32)"}, {"cast", "x.to(f32)"},
    };
    for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++)
        if (!strcmp(name, casts[i].name)) return casts[i].hint;
    return NULL;
}

/* detach(w), w.detach(): an input read without a gradient, as
 * 'input w ... nograd' declares it. The '(' after the name is the current
 * token; recv is the method form's receiver (NULL: detach(w)). Only an
 * input is detached, and then everywhere it is read: a computed tensor's
 * detach would cut its graph in two, which membound does not model. */
static int parse_detach(parser *P, const val *recv, const mb_token *fn, val *out)
{
    call_arg args[MAX_CALL_ARGS];
    int nargs = 0;
    int rc = parse_args(P, recv, args, &nargs);
    if (rc) return rc;
    if (nargs != 1 || args[0].kw[0] || args[0].is_bool)
        return perr(P, fn->line, fn->col, "detach() takes one tensor (write detach(w) or w.detach())");
    val v = args[0].v;
    if (v.node < 0) return perr(P, fn->line, fn->col, "detach() of a number: a number has no gradient");
    mb_node *nd = &P->g->nodes[v.node];
    if (nd->op != MB_OP_INPUT)
        return perr(P, fn->line, fn->col, "detach() of a computed tensor is not modelled: detach an input "
                    "(detach(w)), or declare it 'input w [..] nograd'");
    if (!v.detached) P->plain_reads[v.node]--; /* its read by name was this detach's operand */
    if (!P->detach_line[v.node]) P->detach_line[v.node] = fn->line, P->detach_col[v.node] = fn->col;
    nd->nograd = 1;
    *out = (val){v.node, 0, 1};
    return MB_OK;
}

static int parse_call(parser *P, val *out)
{
    mb_token fn = P->lx.tok;
    char name[MB_NAME_MAX];
    tok_copy(&fn, name, sizeof name);
    mb_op f;
    const char *cast = cast_spelling(name);
    if (cast) return perr(P, fn.line, fn.col, "a cast is written %s (one spelling: Tensor.to)", cast);
    if (unmodelled_view(name) || !strcmp(name, "matmul") || !strcmp(name, "mm") || !strcmp(name, "bmm") ||
        !strcmp(name, "linear"))
        return perr(P, fn.line, fn.col, "'%s' is not modelled here: %s", name,
                    unmodelled_view(name) ? "views that move or reshape dimensions (transposes, permutes, reshapes) "
                                            "are not in the language but as the right operand of '@'"
                                          : "a matrix multiply is written '@' (or linear(x, w, b)) in a layer, "
                                            "which 'membound mlp --variant FILE.mb' models; 'membound gemm --mnk "
                                            "MxNxK' models one GEMM");
    if (!strcmp(name, "detach")) {
        mb_lex_next(&P->lx); /* name */
        return parse_detach(P, NULL, &fn, out);
    }
    if (mb_op_parse_call(name, &f)) return unknown_function(P, &fn, name);
    mb_lex_next(&P->lx); /* name */
    call_arg args[MAX_CALL_ARGS];
    int nargs = 0;
    int rc = parse_args(P, NULL, args, &nargs);
    if (rc) return rc;
    return call_op(P, f, name, args, nargs, out, fn.line, fn.col);
}

/* x.to(dtype): a cast, x's values in another dtype (Tensor.to(torch.float32):
 * one copy kernel that reads x's dtype and writes the new one; the same dtype
 * is x itself, no kernel, as PyTorch returns self). dtype is f32, bf16, f16
 * or PyTorch's name of one (torch.float32, torch.bfloat16, ...). The '(' is
 * the current token. */
static int parse_to(parser *P, val recv, const mb_token *fn, val *out)
{
    static const char usage[] = "write x.to(f32), x.to(bf16) or x.to(f16)";
    mb_lex_next(&P->lx); /* ( */
    if (tok_is(&P->lx.tok, "dtype")) { /* dtype=... */
        mb_lex_next(&P->lx);
        if (P->lx.tok.kind != TK_ASSIGN) return perr_tok(P, "'=' after dtype");
        mb_lex_next(&P->lx);
    }
    if (tok_is(&P->lx.tok, "torch")) { /* torch.float32 */
        mb_lex_next(&P->lx);
        if (P->lx.tok.kind != TK_DOT) return perr_tok(P, "'.' (torch.float32)");
        mb_lex_next(&P->lx);
    }
    mb_token t = P->lx.tok;
    if (t.kind != TK_ID) return perr(P, t.line, t.col, "to() takes a dtype (%s)", usage);
    char dn[MB_NAME_MAX];
    tok_copy(&t, dn, sizeof dn);
    mb_dtype dt;
    if (mb_dtype_parse(dn, &dt) != MB_OK)
        return perr(P, t.line, t.col, "to(): unknown dtype '%s' (dtypes: f32 bf16 f16; %s)", dn, usage);
    mb_lex_next(&P->lx);
    if (P->lx.tok.kind != TK_RPAREN) return perr(P, P->lx.tok.line, P->lx.tok.col, "to() takes one dtype (%s)", usage);
    mb_lex_next(&P->lx);
    if (P->g->nodes[recv.node].dtype == dt) {
        *out = recv;
        return MB_OK;
    }
    if (P->g->n_nodes >= MAX_OPS) return too_many(P, fn->line, fn->col);
    int id = mb_graph_add(P->g, MB_OP_COPY, recv.node, 0, -1, 0, dt, 0, -1);
    if (id < 0) return perr(P, fn->line, fn->col, "out of memory");
    P->g->nodes[id].line = fn->line;
    P->g->nodes[id].col = fn->col;
    *out = (val){id, 0, 0};
    return MB_OK;
}

/* x.method(args): every function as a method of its first operand, as
 * PyTorch's Tensor methods (x.sum(-1, keepdim=True), x.exp()), and x.pow(k). */
static int parse_method(parser *P, val recv, val *out)
{
    mb_lex_next(&P->lx); /* . */
    mb_token fn = P->lx.tok;
    if (fn.kind != TK_ID) return perr_tok(P, "a method name");
    char name[MB_NAME_MAX];
    tok_copy(&fn, name, sizeof name);
    mb_lex_next(&P->lx);
    if (unmodelled_view(name))
        return perr(P, fn.line, fn.col, "'%s' is not modelled: views that move or reshape dimensions "
                    "(transposes, permutes, reshapes) are not in the language but as the right operand of '@' in "
                    "a layer (x @ w.T: 'membound mlp --variant'); a tensor's dimensions are its declaration's, "
                    "reduced and broadcast over the last one", name);
    if (P->lx.tok.kind != TK_LPAREN) return perr_tok(P, "'(' (a method call)");
    if (recv.node < 0) return perr(P, fn.line, fn.col, "a number has no method '%s'", name);
    if (!strcmp(name, "to")) return parse_to(P, recv, &fn, out);
    if (!strcmp(name, "detach")) return parse_detach(P, &recv, &fn, out);
    const char *cast = cast_spelling(name);
    if (cast) return perr(P, fn.line, fn.col, "a cast is written %s (one spelling: Tensor.to)", cast);
    call_arg args[MAX_CALL_ARGS];
    int nargs = 0;
    int rc = parse_args(P, &recv, args, &nargs);
    if (rc) return rc;
    if (!strcmp(name, "pow")) {
        if (nargs != 2 || args[1].kw[0] || args[1].is_bool)
            return perr(P, fn.line, fn.col, "pow() takes 1 argument (write x.pow(2))");
        return mk_binary(P, MB_OP_POW, recv, args[1].v, out, fn.line, fn.col);
    }
    mb_op f;
    if (mb_op_parse_call(name, &f)) return unknown_function(P, &fn, name);
    return call_op(P, f, name, args, nargs, out, fn.line, fn.col);
}

static int parse_name(parser *P, val *out)
{
    mb_token t = P->lx.tok;
    char name[MB_NAME_MAX];
    if (t.len >= MB_NAME_MAX)
        return perr(P, t.line, t.col, "name too long (at most %d characters)", MB_NAME_MAX - 1);
    tok_copy(&t, name, sizeof name);
    binding *b = lookup(P, name);
    if (!b) {
        if (!P->expr_mode)
            return perr(P, t.line, t.col, "name '%s' is not defined (declare it with 'input %s')", name, name);
        int rc = add_input(P, name, P->dtype, t.line, t.col);
        if (rc) return rc;
        b = lookup(P, name);
    }
    *out = b->v;
    if (b->v.node >= 0 && !b->v.detached && P->g->nodes[b->v.node].op == MB_OP_INPUT) P->plain_reads[b->v.node]++;
    mb_lex_next(&P->lx);
    return MB_OK;
}

static int parse_atom(parser *P, val *out)
{
    mb_token t = P->lx.tok;
    switch (t.kind) {
    case TK_NUM:
        if (f32_overflows(t.num))
            return perr(P, t.line, t.col, "number '%.*s' is too large for a float32 (largest "
                        "3.4028235e+38)", t.len > 40 ? 40 : t.len, t.start);
        if ((t.num == 0 || f32_underflows(t.num)) && text_nonzero(t.start, t.len))
            pwarn(P, t.line, t.col, "number '%.*s' is 0 in float32 (smallest 1.4e-45)",
                  t.len > 40 ? 40 : t.len, t.start);
        *out = (val){-1, t.num, 0};
        mb_lex_next(&P->lx);
        return MB_OK;
    case TK_ID: {
        /* torch.f(...) and F.f(...) are f(...) */
        if ((tok_is(&t, "torch") || tok_is(&t, "F")) && !lookup(P, tok_is(&t, "F") ? "F" : "torch")) {
            mb_lexer save = P->lx;
            mb_lex_next(&P->lx);
            if (P->lx.tok.kind == TK_DOT) {
                mb_lex_next(&P->lx);
                if (P->lx.tok.kind != TK_ID) return perr_tok(P, "a function name");
            } else {
                P->lx = save;
            }
        }
        /* look ahead for '(' without consuming */
        mb_lexer save = P->lx;
        mb_lex_next(&P->lx);
        int is_call = P->lx.tok.kind == TK_LPAREN;
        P->lx = save;
        return is_call ? parse_call(P, out) : parse_name(P, out);
    }
    case TK_LPAREN: {
        mb_lex_next(&P->lx);
        int rc = parse_expr(P, out);
        if (rc) return rc;
        if (P->lx.tok.kind != TK_RPAREN) return perr_tok(P, "')'");
        mb_lex_next(&P->lx);
        return MB_OK;
    }
    case TK_BAD:
        return perr(P, t.line, t.col, "invalid token '%.*s'", t.len > 40 ? 40 : t.len, t.start);
    default:
        return perr_tok(P, "an expression");
    }
}

/* primary := atom ('.' method '(' args ')')* */
static int parse_primary(parser *P, val *out)
{
    int rc = parse_atom(P, out);
    while (!rc && P->lx.tok.kind == TK_DOT) rc = parse_method(P, *out, out);
    if (!rc && P->lx.tok.kind == TK_LBRACK)
        return perr(P, P->lx.tok.line, P->lx.tok.col, "indexing and slicing ('[') are not modelled: a variant's "
                    "tensors are whole, as declared");
    return rc;
}

/* power := primary ['**' factor]   (right-associative, binds tighter than unary minus) */
static int parse_power(parser *P, val *out)
{
    val base;
    int rc = parse_primary(P, &base);
    if (rc) return rc;
    if (P->lx.tok.kind != TK_POW) { *out = base; return MB_OK; }
    mb_token op = P->lx.tok;
    mb_lex_next(&P->lx);
    val e;
    if (++P->depth > MAX_DEPTH) return too_deep(P);
    rc = parse_factor(P, &e);
    P->depth--;
    if (rc) return rc;
    return mk_binary(P, MB_OP_POW, base, e, out, op.line, op.col);
}

static int too_deep(parser *P)
{
    return perr(P, P->lx.tok.line, P->lx.tok.col, "expression nested too deeply (more than %d levels)",
                MAX_DEPTH);
}

/* factor := ('-'|'+') factor | power */
static int parse_factor(parser *P, val *out)
{
    mb_token t = P->lx.tok;
    if (t.kind == TK_MINUS || t.kind == TK_PLUS) {
        mb_lex_next(&P->lx);
        val v;
        if (++P->depth > MAX_DEPTH) return too_deep(P);
        int rc = parse_factor(P, &v);
        P->depth--;
        if (rc) return rc;
        if (t.kind == TK_PLUS) { *out = v; return MB_OK; } /* +x is x itself */
        return mk_unary(P, MB_OP_NEG, v, out, t.line, t.col);
    }
    return parse_power(P, out);
}

static int parse_term(parser *P, val *out)
{
    val left;
    int rc = parse_factor(P, &left);
    if (rc) return rc;
    if (P->lx.tok.kind == TK_AT)
        return perr(P, P->lx.tok.line, P->lx.tok.col, "a matrix multiply ('@'): a variant with one is a layer, "
                    "modelled by 'membound mlp --variant FILE.mb' (GEMMs and the kernels between them); "
                    "'membound gemm --mnk MxNxK' models one GEMM");
    while (P->lx.tok.kind == TK_STAR || P->lx.tok.kind == TK_SLASH) {
        mb_token op = P->lx.tok;
        mb_lex_next(&P->lx);
        val right;
        if ((rc = parse_factor(P, &right))) return rc;
        if (op.kind == TK_SLASH && left.node < 0 && right.node >= 0) {
            /* Tensor.__rtruediv__ is self.reciprocal() * other: two kernels */
            val r;
            rc = mk_unary(P, MB_OP_RECIPROCAL, right, &r, op.line, op.col);
            if (!rc) rc = mk_binary(P, MB_OP_MUL, r, left, &left, op.line, op.col);
        } else {
            rc = mk_binary(P, op.kind == TK_STAR ? MB_OP_MUL : MB_OP_DIV, left, right, &left, op.line, op.col);
        }
        if (rc) return rc;
    }
    *out = left;
    return MB_OK;
}

static int parse_expr(parser *P, val *out)
{
    val left;
    if (++P->depth > MAX_DEPTH) return too_deep(P);
    int rc = parse_term(P, &left);
    P->depth--;
    if (rc) return rc;
    while (P->lx.tok.kind == TK_PLUS || P->lx.tok.kind == TK_MINUS) {
        mb_token op = P->lx.tok;
        mb_lex_next(&P->lx);
        val right;
        if ((rc = parse_term(P, &right))) return rc;
        rc = mk_binary(P, op.kind == TK_PLUS ? MB_OP_ADD : MB_OP_SUB, left, right, &left, op.line, op.col);
        if (rc) return rc;
    }
    *out = left;
    return MB_OK;
}

/* ---- statements ---- */

static int end_of_statement(parser *P)
{
    mb_tok_kind k = P->lx.tok.kind;
    if (k == TK_NEWLINE || k == TK_SEMI) { mb_lex_next(&P->lx); return MB_OK; }
    if (k == TK_EOF) return MB_OK;
    return perr_tok(P, "end of line");
}

static int expect_id(parser *P, char *buf, const char *what)
{
    if (P->lx.tok.kind != TK_ID) return perr_tok(P, what);
    if (P->lx.tok.len >= MB_NAME_MAX)
        return perr(P, P->lx.tok.line, P->lx.tok.col, "name too long (at most %d characters)", MB_NAME_MAX - 1);
    tok_copy(&P->lx.tok, buf, MB_NAME_MAX);
    mb_lex_next(&P->lx);
    return MB_OK;
}

/* Fixes the graph's rank from a declaration at line:col. */
static int declare_rank(parser *P, int rank, int line, int col)
{
    if (P->g->rank_declared && P->g->rank != rank)
        return perr(P, line, col, "a %d-D declaration in a %d-D variant (declared on line %d): tensors are "
                    "[n] or [rows, cols], [rows, 1], [rows], [cols]", rank, P->g->rank, P->rank_line);
    if (!P->g->rank_declared) P->rank_line = line;
    P->g->rank = rank;
    P->g->rank_declared = 1;
    return MB_OK;
}

/* dims as text, "[a, b, 1]", into buf. */
static const char *dims_text(const char (*name)[MB_DIM_NAME_MAX], int n, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < n && len < size; d++) len += (size_t)snprintf(buf + len, size - len, "%s%s", d ? ", " : "", name[d]);
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

/* dims := '[' dim (',' dim)* ']', dim := a name | 1; into *decl (1 + the
 * shape class). [n], [rows, cols], [rows, 1], [rows] and [cols] are the
 * classic forms; any other names are the variant's named dimensions, kept
 * for input slot (finish_dims classifies them once every input is read). */
static int parse_dims(parser *P, int slot, int *decl)
{
    mb_token open = P->lx.tok;
    mb_lex_next(&P->lx);
    char d[MB_MAX_DIMS][MB_DIM_NAME_MAX];
    int nd = 0;
    while (P->lx.tok.kind != TK_RBRACK) {
        mb_token t = P->lx.tok;
        if (nd == MB_MAX_DIMS) return perr(P, t.line, t.col, "at most %d dimensions", MB_MAX_DIMS);
        if (t.kind == TK_ID && t.len < MB_DIM_NAME_MAX) tok_copy(&t, d[nd], sizeof d[nd]);
        else if (t.kind == TK_NUM && t.num == 1) snprintf(d[nd], sizeof d[nd], "1");
        else return perr_tok(P, "a dimension: a name (rows, cols, n, batch, ...) or 1");
        nd++;
        mb_lex_next(&P->lx);
        if (P->lx.tok.kind == TK_COMMA) mb_lex_next(&P->lx);
        else if (P->lx.tok.kind != TK_RBRACK) return perr_tok(P, "',' or ']'");
    }
    mb_lex_next(&P->lx);
    if (nd == 0) return perr(P, open.line, open.col, "an input has at least one dimension (a 0-d input is not modelled)");
    static const struct { const char *a, *b; int rank, shc; } forms[] = {
        {"rows", "cols", 2, MB_SHC_FULL}, {"rows", "1", 2, MB_SHC_ROW}, {"rows", "", 2, MB_SHC_ROWV},
        {"cols", "", 2, MB_SHC_COL}, {"n", "", 1, MB_SHC_FULL},
    };
    for (size_t i = 0; nd <= 2 && i < sizeof forms / sizeof forms[0]; i++)
        if (!strcmp(d[0], forms[i].a) && !strcmp(nd > 1 ? d[1] : "", forms[i].b)) {
            *decl = 1 + forms[i].shc;
            return declare_rank(P, forms[i].rank, open.line, open.col);
        }
    for (int k = 0; k < nd; k++) /* the classic names keep their meaning */
        if (!strcmp(d[k], "rows") || !strcmp(d[k], "cols") || !strcmp(d[k], "n")) {
            char t[MB_MAX_DIMS * MB_DIM_NAME_MAX];
            return perr(P, open.line, open.col, "unsupported shape %s: rows, cols and n name the forms [n], "
                        "[rows, cols], [rows, 1], [rows] and [cols]; name the dimensions of others otherwise "
                        "([batch, seq, dim])", dims_text(d, nd, t, sizeof t));
        }
    P->named_dims = 1;
    P->idims[slot].n = nd;
    P->idims[slot].line = open.line;
    P->idims[slot].col = open.col;
    memcpy(P->idims[slot].name, d, sizeof d);
    return MB_OK;
}

/* Whether L (m names) against the full shape F (n) is its last dimension
 * and one run [*lo, *hi) of its leading ones, 1 (or absent: PyTorch aligns
 * shapes from the right) in the others, and not F itself: a GCOL tensor
 * ([batch, 1, 1, seq], [seq, seq] or [1, 1, seq, seq] against [batch,
 * heads, seq, seq]). */
static int gcol_run(const char (*F)[MB_DIM_NAME_MAX], int n, const char (*L)[MB_DIM_NAME_MAX], int m, int *lo,
                    int *hi)
{
    if (n < 3 || m < 2 || m > n || strcmp(L[m - 1], F[n - 1])) return 0;
    *lo = *hi = -1;
    for (int d = 0; d < n - 1; d++) {
        int j = d - (n - m); /* L's dimension aligned with F's d, < 0: absent */
        int kept = j >= 0 && !strcmp(L[j], F[d]);
        if (!kept && j >= 0 && strcmp(L[j], "1")) return 0;
        if (kept && *hi >= 0 && *hi != d) return 0; /* a second run */
        if (kept && *lo < 0) *lo = d;
        if (kept) *hi = d + 1;
    }
    return *lo >= 0 && !(*lo == 0 && *hi == n - 1);
}

/* Named dimensions: the longest declaration is the full shape; every other
 * named input is it ([.., last]), its rows with a 1 ([.., 1]) or without the
 * last ([..]), or its last alone ([last]), as the leading dimensions
 * collapse into rows. The graph's rank follows (2, or 1 for one dimension),
 * and a 'dims' line gives its default shape. */
static int finish_dims(parser *P)
{
    mb_graph *g = P->g;
    if (!P->named_dims) {
        if (P->dims_text[0])
            return perr(P, P->dims_line, P->dims_col, "'dims' names sizes of named dimensions, and no input has "
                        "them (declare e.g. input x [batch, seq, dim])");
        return MB_OK;
    }
    int full = -1;
    for (int k = 0; k < g->n_inputs; k++) {
        const mb_node *in = &g->nodes[g->inputs[k]];
        if (in->decl && !P->idims[k].n)
            return perr(P, in->line, in->col, "input '%s' is declared [rows, cols]-style among named dimensions: "
                        "name every input's dimensions the same way", in->name);
        if (P->idims[k].n && (full < 0 || P->idims[k].n > P->idims[full].n)) full = k;
    }
    int n = P->idims[full].n;
    const char (*F)[MB_DIM_NAME_MAX] = P->idims[full].name;
    for (int k = 0; k < g->n_inputs; k++) {
        int m = P->idims[k].n, c = -1;
        if (!m) continue; /* undeclared: the full shape */
        const char (*L)[MB_DIM_NAME_MAX] = P->idims[k].name;
        int lead = 1; /* L's first m - 1 equal F's */
        for (int d = 0; d < m - 1 && d < n; d++) lead &= !strcmp(L[d], F[d]);
        if (m == n && lead && !strcmp(L[m - 1], F[n - 1])) c = MB_SHC_FULL;
        else if (m == n && n > 1 && lead && !strcmp(L[m - 1], "1")) c = MB_SHC_ROW;
        else if (m == n - 1 && lead && !strcmp(L[m - 1], F[m - 1])) c = MB_SHC_ROWV;
        else if (m == 1 && n > 1 && !strcmp(L[0], F[n - 1])) c = MB_SHC_COL;
        int lo = 0, hi = 0;
        if (c < 0 && gcol_run(F, n, L, m, &lo, &hi)) c = MB_SHC_GCOL;
        if (c < 0) {
            char a[MB_MAX_DIMS * MB_DIM_NAME_MAX], b[sizeof a];
            const mb_node *in = &g->nodes[g->inputs[k]];
            return perr(P, P->idims[k].line, P->idims[k].col, "input '%s' %s does not broadcast as modelled "
                        "against %s: the leading dimensions run as rows, the last as columns, so an input is "
                        "the full shape, its rows with a 1 last, its rows, its last dimension alone, or its last "
                        "with one run of the leading dimensions and 1 in the others ([batch, 1, 1, seq])", in->name,
                        dims_text(L, m, a, sizeof a), dims_text(F, n, b, sizeof b));
        }
        for (int d = 0; d < m && c != MB_SHC_GCOL; d++)
            if (!strcmp(L[d], "1") && !(c == MB_SHC_ROW && d == m - 1))
                return perr(P, P->idims[k].line, P->idims[k].col, "a dimension of size 1 is modelled last, or "
                            "beside one run of the leading dimensions ([batch, 1, 1, seq])");
        mb_node *in = &g->nodes[g->inputs[k]];
        in->decl = (unsigned char)(1 + c);
        in->grp_lo = (unsigned char)lo;
        in->grp_hi = (unsigned char)hi;
    }
    for (int d = 0; d < n; d++)
        if (!strcmp(F[d], "1")) return perr(P, P->idims[full].line, P->idims[full].col, "a dimension of size 1 is "
                                            "modelled last only, in an input of the full shape's rows");
    g->n_dims = n;
    memcpy(g->dim_names, F, sizeof g->dim_names);
    g->rank = n > 1 ? 2 : 1;
    g->rank_declared = 1;
    if (!P->dims_text[0]) return MB_OK;
    mb_shape sh;
    mb_err e;
    if (mb_graph_bind_dims(g, P->dims_text, &sh, &e)) return perr(P, P->dims_line, P->dims_col, "%s", e.msg);
    if (sh.rank == 2) g->default_shape = sh;
    else g->default_n = sh.cols;
    return MB_OK;
}

static int parse_input_directive(parser *P)
{
    for (;;) {
        mb_token t = P->lx.tok;
        char name[MB_NAME_MAX];
        int rc = expect_id(P, name, "an input name");
        if (rc) return rc;
        if (lookup(P, name))
            return perr(P, t.line, t.col, "'%s' is already defined", name);
        mb_dtype dt = P->dtype;
        int decl = 0, typed = 0, nograd = 0;
        for (;;) { /* dims, a dtype and 'nograd', in any order */
            mb_token a = P->lx.tok;
            if (a.kind == TK_LBRACK && P->g->n_inputs == MB_MAX_IO)
                return perr(P, t.line, t.col, "too many inputs (at most %d)", MB_MAX_IO);
            if (a.kind == TK_LBRACK && !decl && !P->idims[P->g->n_inputs].n) {
                if ((rc = parse_dims(P, P->g->n_inputs, &decl))) return rc;
                continue;
            }
            if (a.kind != TK_ID) break;
            if (tok_is(&a, "nograd")) {
                if (nograd) return perr_tok(P, "',' or the end of the line");
                nograd = 1;
            } else if (!typed) {
                char tname[MB_NAME_MAX];
                tok_copy(&a, tname, sizeof tname);
                if (mb_dtype_parse(tname, &dt) != MB_OK)
                    return perr(P, a.line, a.col, "unknown dtype or word '%s' after input '%s' (dtypes: f32 "
                                "bf16 f16; 'nograd' for an input without a gradient)", tname, name);
                typed = 1;
            } else {
                return perr_tok(P, "',' or the end of the line");
            }
            mb_lex_next(&P->lx);
        }
        if ((rc = add_input(P, name, dt, t.line, t.col))) return rc;
        P->g->nodes[P->g->inputs[P->g->n_inputs - 1]].decl = (unsigned char)decl;
        P->g->nodes[P->g->inputs[P->g->n_inputs - 1]].nograd = (unsigned char)nograd;
        if (P->lx.tok.kind != TK_COMMA) return MB_OK;
        mb_lex_next(&P->lx);
    }
}

static int parse_output_directive(parser *P)
{
    for (;;) {
        mb_token t = P->lx.tok;
        if (P->n_outs == MB_MAX_IO)
            return perr(P, t.line, t.col, "too many outputs (at most %d)", MB_MAX_IO);
        int rc = expect_id(P, P->outs[P->n_outs].name, "an output name");
        if (rc) return rc;
        P->outs[P->n_outs].line = t.line;
        P->outs[P->n_outs].col = t.col;
        P->n_outs++;
        if (P->lx.tok.kind != TK_COMMA) return MB_OK;
        mb_lex_next(&P->lx);
    }
}

static int parse_statement(parser *P)
{
    mb_token t = P->lx.tok;
    if (t.kind == TK_NEWLINE || t.kind == TK_SEMI) { mb_lex_next(&P->lx); return MB_OK; }
    if (t.kind != TK_ID) return perr_tok(P, "a statement (name = expression)");

    mb_lexer save = P->lx;
    mb_lex_next(&P->lx);
    int is_assign = P->lx.tok.kind == TK_ASSIGN;
    P->lx = save;
    int rc;

    if (is_assign) {
        char name[MB_NAME_MAX];
        if ((rc = expect_id(P, name, "a name"))) return rc;
        mb_lex_next(&P->lx); /* = */
        int first_new = P->g->n_nodes;
        val v;
        if ((rc = parse_expr(P, &v))) return rc;
        binding *old = lookup(P, name);
        if (old && old->is_input)
            return perr(P, t.line, t.col, "'%s' is an input and cannot be assigned", name);
        /* 'v = w' reads w only where v is read */
        if (v.node >= 0 && !v.detached && P->g->nodes[v.node].op == MB_OP_INPUT) P->plain_reads[v.node]--;
        if (v.node >= first_new && P->g->nodes[v.node].name[0] == '\0')
            snprintf(P->g->nodes[v.node].name, MB_NAME_MAX, "%s", name);
        if ((rc = bind(P, name, v, t.line, t.col, 0))) return rc;
        snprintf(P->last_assigned, sizeof P->last_assigned, "%s", name);
        P->last_line = t.line;
        P->last_col = t.col;
        return end_of_statement(P);
    }

    if (tok_is(&t, "size") || tok_is(&t, "shape")) { /* one of each, as one 'name' */
        int is_size = tok_is(&t, "size"), *first = is_size ? &P->size_line : &P->shape_line;
        if (*first)
            return perr(P, t.line, t.col, "a second '%s' directive (the first is on line %d)",
                        is_size ? "size" : "shape", *first);
        *first = t.line;
    }
    if (tok_is(&t, "name")) {
        if (P->name_line)
            return perr(P, t.line, t.col, "a second 'name' directive (the first is on line %d)",
                        P->name_line);
        P->name_line = t.line;
        P->g->name_line = t.line;
        P->g->name_col = t.col;
        mb_lex_next(&P->lx);
        if ((rc = expect_id(P, P->g->name, "a variant name"))) return rc;
    } else if (tok_is(&t, "input")) {
        mb_lex_next(&P->lx);
        if ((rc = parse_input_directive(P))) return rc;
    } else if (tok_is(&t, "output")) {
        mb_lex_next(&P->lx);
        if ((rc = parse_output_directive(P))) return rc;
    } else if (tok_is(&t, "backward")) { /* backward [grad DTYPE] */
        mb_lex_next(&P->lx);
        P->g->has_backward = 1;
        if (tok_is(&P->lx.tok, "grad")) {
            mb_lex_next(&P->lx);
            char dn[16];
            tok_word(P, dn, sizeof dn);
            if (mb_dtype_parse(dn, &P->g->grad_dtype) != MB_OK)
                return perr_tok(P, "a dtype after 'backward grad' (f32, bf16, f16)");
            P->g->grad_dtype_set = 1;
            mb_lex_next(&P->lx);
        }
    } else if (tok_is(&t, "colsum")) { /* colsum written | partial | reread: mb_graph.colsum */
        mb_lex_next(&P->lx);
        char word[16];
        tok_word(P, word, sizeof word);
        if (mb_colsum_parse(word, &P->g->colsum) != MB_OK)
            return perr_tok(P, "'written', 'partial' or 'reread' after 'colsum'");
        mb_lex_next(&P->lx);
    } else if (tok_is(&t, "size")) {
        mb_lex_next(&P->lx);
        char text[64];
        mb_token st = P->lx.tok;
        mb_lex_rest_of_line(&P->lx, text, sizeof text);
        mb_err e;
        if (mb_size_parse(text, &P->g->default_n, &e) != MB_OK)
            return perr(P, st.line, st.col, "%s", e.msg);
    } else if (tok_is(&t, "dims")) {
        mb_lex_next(&P->lx);
        if (P->dims_text[0]) return perr(P, t.line, t.col, "a second 'dims' directive (the first is on line %d)",
                                         P->dims_line);
        P->dims_line = P->lx.tok.line;
        P->dims_col = P->lx.tok.col;
        mb_lex_rest_of_line(&P->lx, P->dims_text, sizeof P->dims_text);
        if (!P->dims_text[0]) return perr(P, P->dims_line, P->dims_col, "'dims' needs sizes: dims batch=8, seq=1024");
    } else if (tok_is(&t, "shape")) {
        mb_lex_next(&P->lx);
        char text[64];
        mb_token st = P->lx.tok;
        mb_lex_rest_of_line(&P->lx, text, sizeof text);
        mb_err e;
        if (mb_shape_parse(text, &P->g->default_shape, &e) != MB_OK)
            return perr(P, st.line, st.col, "%s", e.msg);
        if (P->g->default_shape.rank != 2)
            return perr(P, st.line, st.col, "shape '%s': expected ROWSxCOLS, e.g. 4096x1024 (a 1-D size is "
                        "'size N')", text);
        if ((rc = declare_rank(P, 2, t.line, t.col))) return rc;
    } else {
        char name[MB_NAME_MAX], d[64];
        tok_copy(&t, name, sizeof name);
        mb_lex_next(&P->lx);
        return perr(P, P->lx.tok.line, P->lx.tok.col,
                    "expected '=' after '%s', got %s (statements: name = expression; "
                    "directives: name, input, output, backward, colsum, size, shape, dims)",
                    name, mb_tok_desc(&P->lx.tok, d, sizeof d));
    }
    return end_of_statement(P);
}

static void default_name(parser *P)
{
    if (P->g->name[0]) return;
    if (P->expr_mode) { snprintf(P->g->name, sizeof P->g->name, "expr"); return; }
    const char *base = strrchr(P->file, '/');
    base = base ? base + 1 : P->file;
    size_t len = strcspn(base, ".");
    if (len >= sizeof P->g->name) len = sizeof P->g->name - 1;
    memcpy(P->g->name, base, len);
    P->g->name[len] = '\0';
}

static int finish(parser *P)
{
    mb_graph *g = P->g;
    if (!P->last_assigned[0])
        return perr(P, 1, 1, "no assignment: write one, e.g. 'y = sin(x)**2 + cos(x)**2'");
    if (P->n_outs == 0) {
        snprintf(P->outs[0].name, MB_NAME_MAX, "%s", P->last_assigned);
        P->outs[0].line = P->last_line;
        P->outs[0].col = P->last_col;
        P->n_outs = 1;
    }
    for (int i = 0; i < P->n_outs; i++) {
        binding *b = lookup(P, P->outs[i].name);
        if (!b)
            return perr(P, P->outs[i].line, P->outs[i].col, "output '%s' is never assigned", P->outs[i].name);
        if (b->v.node < 0)
            return perr(P, P->outs[i].line, P->outs[i].col,
                        "output '%s' is a scalar (%g): it uses no input", P->outs[i].name, b->v.s);
        if (g->nodes[b->v.node].op == MB_OP_INPUT)
            return perr(P, P->outs[i].line, P->outs[i].col,
                        "output '%s' is the input '%s' itself: no kernel would run (write copy(%s))",
                        P->outs[i].name, g->nodes[b->v.node].name, g->nodes[b->v.node].name);
        for (int j = 0; j < g->n_outputs; j++)
            if (g->outputs[j] == b->v.node)
                return perr(P, P->outs[i].line, P->outs[i].col, "output '%s' is listed twice", P->outs[i].name);
        g->outputs[g->n_outputs++] = b->v.node;
        if (!g->nodes[b->v.node].name[0])
            snprintf(g->nodes[b->v.node].name, MB_NAME_MAX, "%s", P->outs[i].name);
    }
    /* every input must feed some node */
    for (int k = 0; k < g->n_inputs; k++) {
        int in = g->inputs[k], used = 0;
        for (int i = 0; i < g->n_nodes && !used; i++)
            used = g->nodes[i].arg[0] == in || g->nodes[i].arg[1] == in;
        if (!used)
            return perr(P, g->nodes[in].line, g->nodes[in].col, "input '%s' is never used", g->nodes[in].name);
    }
    for (int k = 0; k < g->n_inputs; k++) {
        int in = g->inputs[k];
        if (P->detach_line[in] && P->plain_reads[in] > 0)
            return perr(P, P->detach_line[in], P->detach_col[in], "input '%s' is read both through detach() and "
                        "without: membound takes an input's gradient whole or not at all (read it through "
                        "detach() everywhere, or declare a second input)", g->nodes[in].name);
    }
    g->n_forward = g->n_nodes;
    default_name(P);
    int rc0 = finish_dims(P);
    if (rc0) return rc0;
    if (!g->rank) g->rank = 1;
    int rc = mb_graph_derive_shapes(g, g->rank, P->err);
    if (rc) return rc;
    if (g->has_backward) return mb_autodiff(g, P->err);
    return MB_OK;
}

static int parse(const char *text, const char *file, mb_dtype dtype, int expr_mode,
                 mb_graph **out, mb_err *err)
{
    *out = NULL;
    parser *P = calloc(1, sizeof *P);
    mb_graph *g = mb_graph_new();
    if (!P || !g) {
        free(P);
        mb_graph_free(g);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    P->file = file;
    P->g = g;
    P->err = err;
    P->dtype = dtype;
    P->expr_mode = expr_mode;
    snprintf(g->path, sizeof g->path, "%s", file);
    /* a UTF-8 byte order mark, as some editors write one (the INI and CSV
     * readers skip it too): columns of line 1 count from after it */
    if (!strncmp(text, "\xEF\xBB\xBF", 3)) text += 3;
    mb_lex_init(&P->lx, text);
    int rc = MB_OK;
    while (rc == MB_OK && P->lx.tok.kind != TK_EOF)
        rc = parse_statement(P);
    if (rc == MB_OK) rc = finish(P);
    free(P);
    if (rc != MB_OK) {
        mb_graph_free(g);
        return rc;
    }
    *out = g;
    return MB_OK;
}

int mb_parse_variant(const char *text, const char *filename, mb_dtype default_dtype,
                     mb_graph **out, mb_err *err)
{
    return parse(text, filename, default_dtype, 0, out, err);
}

int mb_parse_expr_text(const char *expr, mb_dtype dtype, mb_graph **out, mb_err *err)
{
    return parse(expr, "<expr>", dtype, 1, out, err);
}
