/* mmvar_parse.c — the front end of variants that multiply matrices:
 * 'y = gelu(x @ w1 + b1) @ w2'.
 *
 * The front end reads the variant's statements with the language's lexer
 * and a skeleton of its grammar (precedence only: '@' binds as '*' and '/',
 * left to right, as in Python), and takes every product out of its
 * statement: 'x @ w' becomes a GEMM whose output is a fresh name (_m1, ...),
 * its left operand, when not a name, a statement of its own (_a1 = ...).
 * What is left is elementwise work, reductions and norms in the ordinary
 * language. Each statement gets a level (the most GEMMs on a path from an
 * input to it), and the statements of one level that read each other's
 * results form a segment: an ordinary variant over its own full shape
 * ([tokens, ffn] between the GEMMs of an MLP), parsed by parser.c, planned
 * by plan.c and costed by traffic.c at its sizes, as mlp.c costs its
 * built-in layers' segments.
 * Does not cost anything (mmvar.c). */
#include "mmvar_int.h"
#include "mb_files.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the front end ------------------------------------------------------ */

typedef struct fe {
    mb_mmvar *v;
    mb_lexer lx;
    mb_err *err;
    mb_dtype dtype;
    tok in[MAX_TOKS];  /* the statement's right-hand side */
    int n_in, pos;
    tok out[MAX_TOKS]; /* rewritten */
    int n_out;
    int n_tmp;
    int depth;
    int line_out[MB_MAX_IO], col_out[MB_MAX_IO];
    char out_names[MB_MAX_IO][MB_NAME_MAX];
    int n_out_names;
    int name_line;
} fe;

static int ferr(fe *F, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int ferr(fe *F, int line, int col, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mb_err_set(F->err, MB_EINPUT, "%s:%d:%d: %s", F->v->path, line, col, msg);
}

int mmv_find(const mb_mmvar *v, const char *name)
{
    for (int i = v->n_t - 1; i >= 0; i--)
        if (!strcmp(v->t[i].name, name)) return i;
    return -1;
}

/* an operation at token t completes: its place in the order of evaluation */
static int event(fe *F, const tok *t)
{
    mb_mmvar *v = F->v;
    if (v->n_ev >= MAX_EVENTS) return 0;
    v->ev[v->n_ev].line = t->line;
    v->ev[v->n_ev].col = t->col;
    v->ev[v->n_ev].seq = v->n_ev + 1;
    return ++v->n_ev;
}

/* what to call tensor T in kernel and saved names */
const char *mmv_label(const tensor *T) { return T->label[0] ? T->label : T->name; }

/* T's label in a product's name: bare when a name, else in parentheses
 * (pre "d": its gradient, dy or d(x@w)) */
const char *mmv_operand(const tensor *T, const char *pre, char *buf, size_t size)
{
    if (!T->label[0]) snprintf(buf, size, "%s%.40s", pre, T->name);
    else snprintf(buf, size, "%s(%.40s)", pre, T->label);
    return buf;
}

static int new_tensor(fe *F, const char *name, int line, int col, int *out)
{
    mb_mmvar *v = F->v;
    int old = mmv_find(v, name);
    if (old >= 0)
        return ferr(F, line, col, "'%s' is %s on line %d: in a variant with '@' each tensor has a name of its own",
                    name, v->t[old].input ? "declared an input" : "assigned", v->t[old].line);
    if (v->n_t >= MAX_T) return ferr(F, line, col, "too many tensors (at most %d)", MAX_T);
    tensor *t = &v->t[v->n_t];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->nd = -1;
    t->gemm = t->stmt = t->seg = -1;
    t->line = line;
    t->col = col;
    *out = v->n_t++;
    return MB_OK;
}

static void take(fe *F, tok *t)
{
    t->kind = F->lx.tok.kind;
    int len = F->lx.tok.len < TOK_MAX - 1 ? F->lx.tok.len : TOK_MAX - 1;
    memcpy(t->t, F->lx.tok.start, (size_t)len);
    t->t[len] = '\0';
    t->line = F->lx.tok.line;
    t->col = F->lx.tok.col;
}

static const tok *cur(fe *F) { return &F->in[F->pos]; }
static int at(fe *F, mb_tok_kind k) { return F->pos < F->n_in && F->in[F->pos].kind == k; }

static int emit(fe *F, const tok *t)
{
    if (F->n_out >= MAX_TOKS) return ferr(F, t->line, t->col, "statement too long");
    F->out[F->n_out++] = *t;
    return MB_OK;
}

/* copies the current token to the output and moves on */
static int pass(fe *F)
{
    int rc = emit(F, cur(F));
    F->pos++;
    return rc;
}

static int expect_more(fe *F, const char *what)
{
    if (F->pos < F->n_in) return MB_OK;
    const tok *last = &F->in[F->n_in - 1];
    return ferr(F, last->line, last->col + (int)strlen(last->t), "expected %s, got end of line", what);
}

static int fe_expr(fe *F);
static int fe_factor(fe *F);
static int fe_linear(fe *F);

/* args := [arg (',' arg)*] ')', arg := NAME '=' expr | expr */
static int fe_args(fe *F)
{
    int rc;
    while (!at(F, TK_RPAREN)) {
        if ((rc = expect_more(F, "')'"))) return rc;
        if (at(F, TK_ID) && F->pos + 1 < F->n_in && F->in[F->pos + 1].kind == TK_ASSIGN) {
            if ((rc = pass(F)) || (rc = pass(F))) return rc;
        }
        if ((rc = fe_expr(F))) return rc;
        if (at(F, TK_COMMA)) {
            if ((rc = pass(F))) return rc;
        } else if (!at(F, TK_RPAREN) && F->pos < F->n_in) {
            return ferr(F, cur(F)->line, cur(F)->col, "expected ',' or ')', got '%s'", cur(F)->t);
        }
    }
    return pass(F);
}

/* 1 at linear( or addmm(, bare or after F. or torch. */
static int is_product_call(fe *F)
{
    int i = F->pos;
    if ((!strcmp(F->in[i].t, "F") || !strcmp(F->in[i].t, "torch")) && i + 2 < F->n_in && F->in[i + 1].kind == TK_DOT)
        i += 2;
    return i + 1 < F->n_in && (!strcmp(F->in[i].t, "linear") || !strcmp(F->in[i].t, "addmm")) &&
           F->in[i + 1].kind == TK_LPAREN;
}

/* primary := (NUM | NAME ['(' args] | '(' expr ')') ('.' NAME ['(' args])* */
static int fe_primary(fe *F)
{
    int rc = expect_more(F, "an expression");
    if (rc) return rc;
    if (++F->depth > 200) return ferr(F, cur(F)->line, cur(F)->col, "expression nested too deeply");
    if (at(F, TK_LPAREN)) {
        if ((rc = pass(F)) || (rc = fe_expr(F)) || (rc = expect_more(F, "')'"))) return rc;
        if (!at(F, TK_RPAREN)) return ferr(F, cur(F)->line, cur(F)->col, "expected ')', got '%s'", cur(F)->t);
        rc = pass(F);
    } else if (at(F, TK_ID) && is_product_call(F)) {
        rc = fe_linear(F);
    } else if (at(F, TK_ID)) {
        tok fn = *cur(F);
        if ((rc = pass(F))) return rc;
        if (at(F, TK_LPAREN) && !(rc = pass(F) ? -1 : fe_args(F))) event(F, &fn);
    } else if (at(F, TK_NUM)) {
        rc = pass(F);
    } else {
        return ferr(F, cur(F)->line, cur(F)->col, "expected an expression, got '%s'", cur(F)->t);
    }
    while (!rc && at(F, TK_DOT)) {
        if ((rc = pass(F)) || (rc = expect_more(F, "a name after '.'"))) break;
        if (!at(F, TK_ID)) return ferr(F, cur(F)->line, cur(F)->col, "expected a name after '.', got '%s'", cur(F)->t);
        tok fn = *cur(F);
        if ((rc = pass(F))) break;
        if (at(F, TK_LPAREN) && !(rc = pass(F) ? -1 : fe_args(F))) event(F, &fn);
    }
    F->depth--;
    return rc;
}

/* factor := ('-'|'+') factor | primary ['**' factor] */
static int fe_factor(fe *F)
{
    int rc = expect_more(F, "an expression");
    if (rc) return rc;
    if (at(F, TK_MINUS) || at(F, TK_PLUS)) {
        tok op = *cur(F);
        if ((rc = pass(F) ? -1 : fe_factor(F))) return rc;
        if (op.kind == TK_MINUS) event(F, &op);
        return MB_OK;
    }
    if ((rc = fe_primary(F))) return rc;
    if (at(F, TK_POW)) {
        tok op = *cur(F);
        if ((rc = pass(F) ? -1 : fe_factor(F))) return rc;
        event(F, &op);
    }
    return MB_OK;
}

static int mk_name(fe *F, char prefix, char *buf, size_t size)
{
    snprintf(buf, size, "_%c%d", prefix, ++F->n_tmp);
    return MB_OK;
}

/* out[from, n_out) (rewritten tokens) as a tensor: the one it names, or a
 * statement of its own (_a1 = ..., prefix 'a'; _b1 for a right operand) */
static int operand_tensor(fe *F, int from, char prefix, const tok *at_tok, int *out)
{
    mb_mmvar *v = F->v;
    int rc;
    int n = F->n_out - from, in = from; /* (x) is x */
    if (n == 3 && F->out[in].kind == TK_LPAREN && F->out[in + 2].kind == TK_RPAREN) in++, n = 1;
    if (n == 1 && F->out[in].kind == TK_ID && mmv_find(v, F->out[in].t) >= 0) {
        *out = mmv_find(v, F->out[in].t);
        return MB_OK;
    }
    char nm[MB_NAME_MAX];
    int a;
    mk_name(F, prefix, nm, sizeof nm);
    if ((rc = new_tensor(F, nm, F->out[from].line, F->out[from].col, &a))) return rc;
    if (v->n_s >= MAX_STMTS) return ferr(F, at_tok->line, at_tok->col, "too many statements");
    stmt *s = &v->s[v->n_s];
    s->n = F->n_out - from;
    s->rhs = malloc((size_t)s->n * sizeof *s->rhs);
    if (!s->rhs) return ferr(F, at_tok->line, at_tok->col, "out of memory");
    memcpy(s->rhs, &F->out[from], (size_t)s->n * sizeof *s->rhs);
    s->target = a;
    s->line = F->out[from].line;
    s->col = F->out[from].col;
    s->order = v->order++;
    v->t[a].stmt = v->n_s++;
    size_t len = 0; /* its label: the tokens, products by their labels, */
    int lo = 0, hi = s->n; /* without a pair of parentheses around them all */
    if (s->n > 2 && s->rhs[0].kind == TK_LPAREN && s->rhs[s->n - 1].kind == TK_RPAREN) {
        int depth = 0, outer = 1;
        for (int i = 0; i < s->n - 1 && outer; i++) {
            depth += s->rhs[i].kind == TK_LPAREN ? 1 : s->rhs[i].kind == TK_RPAREN ? -1 : 0;
            outer = depth > 0;
        }
        if (outer) lo = 1, hi = s->n - 1;
    }
    for (int i = lo; i < hi && len < sizeof v->t[a].label; i++) {
        int m = s->rhs[i].kind == TK_ID ? mmv_find(v, s->rhs[i].t) : -1;
        const char *piece = m >= 0 ? mmv_label(&v->t[m]) : s->rhs[i].t;
        /* a product's label inside an operation: parenthesized, but as a call's argument */
        int arg = i > lo && i + 1 < hi && (s->rhs[i - 1].kind == TK_LPAREN || s->rhs[i - 1].kind == TK_COMMA) &&
                  (s->rhs[i + 1].kind == TK_RPAREN || s->rhs[i + 1].kind == TK_COMMA);
        int paren = m >= 0 && strchr(piece, '@') && hi - lo > 1 && !arg;
        len += (size_t)snprintf(v->t[a].label + len, sizeof v->t[a].label - len, paren ? "(%s)" : "%s", piece);
    }
    *out = a;
    return MB_OK;
}

/* A GEMM of tensors a and b (tb, linear, bias as gemm's); the output
 * tokens from index from become its output's name. */
static int make_gemm(fe *F, int from, int a, int b, int tb, int linear, int bias, const tok *at_tok)
{
    mb_mmvar *v = F->v;
    int rc;
    if (v->n_g >= MAX_GEMMS) return ferr(F, at_tok->line, at_tok->col, "too many products (at most %d)", MAX_GEMMS);
    char nm[MB_NAME_MAX];
    mk_name(F, 'm', nm, sizeof nm);
    int o;
    if ((rc = new_tensor(F, nm, at_tok->line, at_tok->col, &o))) return rc;
    gemm *g = &v->gm[v->n_g];
    memset(g, 0, sizeof *g);
    g->a = a;
    g->w = b;
    g->tb = tb;
    g->linear = linear;
    g->bias = bias;
    g->out = o;
    g->line = at_tok->line;
    g->col = at_tok->col;
    g->order = v->order++;
    g->seq = event(F, at_tok);
    v->t[o].gemm = v->n_g++;
    char lb[MB_NAME_MAX];
    if (linear)
        snprintf(lb, sizeof lb, "%.24s@%.16s%s%s%.16s", mmv_label(&v->t[a]), v->t[b].name, tb ? ".T" : "",
                 bias >= 0 ? "+" : "", bias >= 0 ? v->t[bias].name : "");
    else snprintf(lb, sizeof lb, "%.30s@%.28s%s", mmv_label(&v->t[a]), mmv_label(&v->t[b]), tb ? ".T" : "");
    memcpy(v->t[o].label, lb, sizeof lb);
    F->n_out = from;
    tok t = {TK_ID, "", at_tok->line, at_tok->col};
    snprintf(t.t, sizeof t.t, "%s", nm);
    return emit(F, &t);
}

/* 1 when in[i, i + n) is a transpose of the last two dimensions written
 * after a name: .T, .mT, .t(), .transpose(-2, -1) (or -1, -2); *len: its
 * tokens. A 2-D tensor's .transpose(0, 1) too (checked with its shape). */
static int transpose_view(const tok *in, int n, int *len)
{
    static const char *const forms[] = {". T", ". mT", ". t ( )", ". transpose ( - 2 , - 1 )",
                                        ". transpose ( - 1 , - 2 )", ". transpose ( 0 , 1 )", ". transpose ( 1 , 0 )"};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", forms[f]);
        int k = 0, match = 1;
        for (char *w = strtok(buf, " "); w && match; w = strtok(NULL, " "), k++)
            match = k < n && !strcmp(in[k].t, w);
        if (match) {
            *len = k;
            return (int)f + 1;
        }
    }
    return 0;
}

/* term := factor (('*'|'/'|'@') factor)* */
static int fe_term(fe *F)
{
    int from = F->n_out, rc = fe_factor(F);
    while (!rc && (at(F, TK_STAR) || at(F, TK_SLASH) || at(F, TK_AT))) {
        if (!at(F, TK_AT)) {
            tok op = *cur(F);
            if (!(rc = pass(F) ? -1 : fe_factor(F))) event(F, &op);
            continue;
        }
        tok op = *cur(F);
        F->pos++;
        if (F->n_out == from) return ferr(F, op.line, op.col, "'@' needs a left operand");
        if ((rc = expect_more(F, "an operand after '@'"))) return rc;
        int a, b, tb = 0, len = 0;
        if ((rc = operand_tensor(F, from, 'a', &op, &a))) return rc;
        F->n_out = from;
        /* the right operand: a name, a transpose of one, or an expression */
        if (at(F, TK_ID) && mmv_find(F->v, cur(F)->t) >= 0 &&
            (tb = transpose_view(&F->in[F->pos + 1], F->n_in - F->pos - 1, &len))) {
            b = mmv_find(F->v, cur(F)->t);
            if (tb >= 6 && F->v->t[b].nd != 2)
                return ferr(F, cur(F)->line, cur(F)->col, "'%s' has %d dimensions: transpose(0, 1) is not of its last "
                            "two (write transpose(-2, -1))", cur(F)->t, F->v->t[b].nd);
            F->pos += 1 + len;
            tb = 1;
        } else {
            int bfrom = F->n_out;
            if ((rc = fe_factor(F)) || (rc = operand_tensor(F, bfrom, 'b', &op, &b))) return rc;
            F->n_out = bfrom;
        }
        rc = make_gemm(F, from, a, b, tb, 0, -1, &op);
    }
    return rc;
}

/* linear(x, w[, b]) or F.linear(...): x @ w.T + b as one addmm (nn.Linear's
 * layout, w [N, K]); the current token is the name's first */
/* usage's error at the current token (or after fn when the line ended) */
static int usage_err(fe *F, const char *usage, const tok *fn)
{
    return ferr(F, F->pos < F->n_in ? cur(F)->line : fn->line, F->pos < F->n_in ? cur(F)->col : fn->col, "%s", usage);
}

/* the input of dims dimensions named at the current token, into *out */
static int named_input(fe *F, int dims, const char *usage, const tok *fn, int *out)
{
    int t = F->pos < F->n_in && at(F, TK_ID) ? mmv_find(F->v, cur(F)->t) : -1;
    if (t < 0 || !F->v->t[t].input || F->v->t[t].nd != dims) return usage_err(F, usage, fn);
    *out = t;
    F->pos++;
    return MB_OK;
}

static int comma(fe *F, const char *usage, const tok *fn)
{
    if (!at(F, TK_COMMA)) return usage_err(F, usage, fn);
    F->pos++;
    return MB_OK;
}

static int fe_linear(fe *F)
{
    tok fn = *cur(F);
    if (!strcmp(fn.t, "F") || !strcmp(fn.t, "torch")) F->pos += 2; /* F . | torch . */
    const int addmm = !strcmp(cur(F)->t, "addmm");
    const tok name = *cur(F);
    F->pos += 2; /* the name ( */
    const char *usage = addmm ? "addmm(b, x, w): b an input [out], w an input [in, out] (torch.addmm, as GPT-2's Conv1D "
                                "calls it)"
                              : "linear(x, w) or linear(x, w, b): w an input [out, in] as nn.Linear keeps it, b an "
                                "input [out]";
    int from = F->n_out, rc, a, w = -1, bias = -1;
    if (addmm && ((rc = named_input(F, 1, usage, &name, &bias)) || (rc = comma(F, usage, &name)))) return rc;
    if ((rc = fe_expr(F)) || (rc = operand_tensor(F, from, 'a', &name, &a))) return rc;
    F->n_out = from;
    if ((rc = comma(F, usage, &name)) || (rc = named_input(F, 2, usage, &name, &w))) return rc;
    if (!addmm && at(F, TK_COMMA)) {
        F->pos++;
        if ((rc = named_input(F, 1, usage, &name, &bias))) return rc;
    }
    if (!at(F, TK_RPAREN)) return usage_err(F, usage, &name);
    F->pos++;
    return make_gemm(F, from, a, w, !addmm, 1, bias, &fn);
}

/* expr := term (('+'|'-') term)* */
static int fe_expr(fe *F)
{
    int rc = fe_term(F);
    while (!rc && (at(F, TK_PLUS) || at(F, TK_MINUS))) {
        tok op = *cur(F);
        if (!(rc = pass(F) ? -1 : fe_term(F))) event(F, &op);
    }
    return rc;
}

static int statement(fe *F, const mb_token *target)
{
    mb_mmvar *v = F->v;
    char name[MB_NAME_MAX];
    if (target->len >= MB_NAME_MAX) return ferr(F, target->line, target->col, "name too long");
    snprintf(name, sizeof name, "%.*s", target->len, target->start);
    mb_lex_next(&F->lx); /* name */
    mb_lex_next(&F->lx); /* = */
    F->n_in = F->pos = F->n_out = 0;
    while (F->lx.tok.kind != TK_NEWLINE && F->lx.tok.kind != TK_SEMI && F->lx.tok.kind != TK_EOF) {
        if (F->n_in >= MAX_TOKS) return ferr(F, target->line, target->col, "statement too long");
        if (F->lx.tok.kind == TK_BAD)
            return ferr(F, F->lx.tok.line, F->lx.tok.col, "invalid token '%.*s'", F->lx.tok.len > 40 ? 40 : F->lx.tok.len,
                        F->lx.tok.start);
        take(F, &F->in[F->n_in++]);
        mb_lex_next(&F->lx);
    }
    if (!F->n_in) return ferr(F, F->lx.tok.line, F->lx.tok.col, "expected an expression after '='");
    int rc = fe_expr(F);
    if (rc) return rc;
    if (F->pos < F->n_in)
        return ferr(F, cur(F)->line, cur(F)->col, "unexpected '%s' (expected an operator or the end of the line)",
                    cur(F)->t);
    int t;
    if (F->n_out == 1 && F->out[0].kind == TK_ID && F->out[0].t[0] == '_' && F->out[0].t[1] == 'm' &&
        mmv_find(v, F->out[0].t) >= 0 && v->t[mmv_find(v, F->out[0].t)].gemm == v->n_g - 1 &&
        mmv_find(v, name) < 0) { /* y = x @ w: the GEMM's output is y */
        t = mmv_find(v, F->out[0].t);
        snprintf(v->t[t].name, sizeof v->t[t].name, "%s", name);
        v->t[t].label[0] = '\0';
        v->t[t].line = target->line;
        v->t[t].col = target->col;
        return MB_OK;
    }
    if ((rc = new_tensor(F, name, target->line, target->col, &t))) return rc;
    if (v->n_s >= MAX_STMTS) return ferr(F, target->line, target->col, "too many statements");
    stmt *s = &v->s[v->n_s];
    s->n = F->n_out;
    s->rhs = malloc((size_t)s->n * sizeof *s->rhs);
    if (!s->rhs) return ferr(F, target->line, target->col, "out of memory");
    memcpy(s->rhs, F->out, (size_t)s->n * sizeof *s->rhs);
    s->target = t;
    s->line = target->line;
    s->col = target->col;
    s->order = v->order++;
    v->t[t].stmt = v->n_s++;
    return MB_OK;
}

static int add_dim(mb_mmvar *v, const char *d)
{
    if (!strcmp(d, "1")) return 0;
    for (int i = 0; i < v->n_dims; i++)
        if (!strcmp(v->dim_names[i], d)) return 0;
    if (v->n_dims >= MAX_VDIMS) return -1;
    memcpy(v->dim_names[v->n_dims++], d, MB_DIM_NAME_MAX);
    return 0;
}

/* input NAME '[' dims ']' [dtype] [nograd] (',' ...)* */
static int input_directive(fe *F)
{
    mb_mmvar *v = F->v;
    for (;;) {
        mb_token nt = F->lx.tok;
        if (nt.kind != TK_ID) return ferr(F, nt.line, nt.col, "expected an input name");
        char name[MB_NAME_MAX];
        if (nt.len >= MB_NAME_MAX) return ferr(F, nt.line, nt.col, "name too long");
        snprintf(name, sizeof name, "%.*s", nt.len, nt.start);
        int t, rc;
        if ((rc = new_tensor(F, name, nt.line, nt.col, &t))) return rc;
        tensor *T = &v->t[t];
        T->input = 1;
        T->dtype = F->dtype;
        mb_lex_next(&F->lx);
        if (F->lx.tok.kind != TK_LBRACK)
            return ferr(F, F->lx.tok.line, F->lx.tok.col, "input '%s': in a variant with '@' every input names its "
                        "dimensions (input %s [tokens, dim])", name, name);
        mb_lex_next(&F->lx);
        T->nd = 0;
        while (F->lx.tok.kind != TK_RBRACK) {
            mb_token d = F->lx.tok;
            if (T->nd == MB_MAX_DIMS) return ferr(F, d.line, d.col, "at most %d dimensions", MB_MAX_DIMS);
            if (d.kind == TK_ID && d.len < MB_DIM_NAME_MAX) snprintf(T->dim[T->nd], MB_DIM_NAME_MAX, "%.*s", d.len, d.start);
            else if (d.kind == TK_NUM && d.num == 1) snprintf(T->dim[T->nd], MB_DIM_NAME_MAX, "1");
            else return ferr(F, d.line, d.col, "expected a dimension: a name or 1");
            if (!strcmp(T->dim[T->nd], "rows") || !strcmp(T->dim[T->nd], "cols") || !strcmp(T->dim[T->nd], "n"))
                return ferr(F, d.line, d.col, "in a variant with '@' dimensions have names of their own ([tokens, "
                            "dim], [dim, ffn]): rows, cols and n name the one-shape forms");
            if (add_dim(v, T->dim[T->nd])) return ferr(F, d.line, d.col, "too many dimension names");
            T->nd++;
            mb_lex_next(&F->lx);
            if (F->lx.tok.kind == TK_COMMA) mb_lex_next(&F->lx);
            else if (F->lx.tok.kind != TK_RBRACK) return ferr(F, F->lx.tok.line, F->lx.tok.col, "expected ',' or ']'");
        }
        mb_lex_next(&F->lx);
        if (!T->nd) return ferr(F, nt.line, nt.col, "an input has at least one dimension");
        int typed = 0;
        while (F->lx.tok.kind == TK_ID) {
            char w[MB_NAME_MAX];
            snprintf(w, sizeof w, "%.*s", F->lx.tok.len < MB_NAME_MAX ? F->lx.tok.len : MB_NAME_MAX - 1,
                     F->lx.tok.start);
            if (!strcmp(w, "nograd") && !T->nograd) T->nograd = 1;
            else if (!typed && mb_dtype_parse(w, &T->dtype) == MB_OK) typed = 1;
            else return ferr(F, F->lx.tok.line, F->lx.tok.col, "unknown dtype or word '%s' after input '%s' (dtypes: "
                             "f32 bf16 f16; 'nograd')", w, name);
            mb_lex_next(&F->lx);
        }
        if (F->lx.tok.kind != TK_COMMA) return MB_OK;
        mb_lex_next(&F->lx);
    }
}

static int directive(fe *F)
{
    mb_mmvar *v = F->v;
    mb_token t = F->lx.tok;
    char w[16];
    snprintf(w, sizeof w, "%.*s", t.len < 15 ? t.len : 15, t.start);
    mb_lex_next(&F->lx);
    if (!strcmp(w, "input")) return input_directive(F);
    if (!strcmp(w, "backward")) return v->backward = 1, MB_OK;
    if (!strcmp(w, "name")) {
        if (F->name_line) return ferr(F, t.line, t.col, "a second 'name' directive (the first is on line %d)", F->name_line);
        F->name_line = t.line;
        if (F->lx.tok.kind != TK_ID || F->lx.tok.len >= MB_NAME_MAX) return ferr(F, F->lx.tok.line, F->lx.tok.col, "expected a variant name");
        snprintf(v->name, sizeof v->name, "%.*s", F->lx.tok.len, F->lx.tok.start);
        mb_lex_next(&F->lx);
        return MB_OK;
    }
    if (!strcmp(w, "output")) {
        for (;;) {
            if (F->lx.tok.kind != TK_ID || F->lx.tok.len >= MB_NAME_MAX)
                return ferr(F, F->lx.tok.line, F->lx.tok.col, "expected an output name");
            if (F->n_out_names >= MB_MAX_IO) return ferr(F, F->lx.tok.line, F->lx.tok.col, "too many outputs");
            snprintf(F->out_names[F->n_out_names], MB_NAME_MAX, "%.*s", F->lx.tok.len, F->lx.tok.start);
            F->line_out[F->n_out_names] = F->lx.tok.line;
            F->col_out[F->n_out_names++] = F->lx.tok.col;
            mb_lex_next(&F->lx);
            if (F->lx.tok.kind != TK_COMMA) return MB_OK;
            mb_lex_next(&F->lx);
        }
    }
    if (!strcmp(w, "dims")) {
        if (v->dims_line[0]) return ferr(F, t.line, t.col, "a second 'dims' directive");
        v->dims_line_no = F->lx.tok.line;
        v->dims_col = F->lx.tok.col;
        mb_lex_rest_of_line(&F->lx, v->dims_line, sizeof v->dims_line);
        return MB_OK;
    }
    if (!strcmp(w, "size") || !strcmp(w, "shape"))
        return ferr(F, t.line, t.col, "'%s': a variant with '@' names its dimensions and gives their sizes with a "
                    "'dims' line or --dims", w);
    return ferr(F, t.line, t.col, "expected '=' after '%s' (statements: name = expression; directives: name, "
                "input, output, backward, dims)", w);
}

static int front_end(fe *F, const char *text)
{
    mb_lex_init(&F->lx, text);
    int rc = MB_OK;
    while (!rc && F->lx.tok.kind != TK_EOF) {
        mb_token t = F->lx.tok;
        if (t.kind == TK_NEWLINE || t.kind == TK_SEMI) {
            mb_lex_next(&F->lx);
            continue;
        }
        if (t.kind != TK_ID) return ferr(F, t.line, t.col, "expected a statement (name = expression)");
        mb_lexer save = F->lx;
        mb_lex_next(&F->lx);
        int assign = F->lx.tok.kind == TK_ASSIGN;
        F->lx = save;
        rc = assign ? statement(F, &t) : directive(F);
        if (!rc && F->lx.tok.kind != TK_NEWLINE && F->lx.tok.kind != TK_SEMI && F->lx.tok.kind != TK_EOF)
            rc = ferr(F, F->lx.tok.line, F->lx.tok.col, "expected the end of the line");
    }
    return rc;
}

/* ---- shapes, levels and segments --------------------------------------- */

/* 1 when statement s reads tensor t by name */
int mmv_reads(const stmt *s, const tensor *t)
{
    for (int i = 0; i < s->n; i++)
        if (s->rhs[i].kind == TK_ID && !strcmp(s->rhs[i].t, t->name) && (i == 0 || s->rhs[i - 1].kind != TK_DOT) &&
            (i + 1 >= s->n || (s->rhs[i + 1].kind != TK_ASSIGN && s->rhs[i + 1].kind != TK_LPAREN)))
            return 1;
    return 0;
}

static int uf_find(int *p, int i) { return p[i] == i ? i : (p[i] = uf_find(p, p[i])); }

static int levels_and_segments(mb_mmvar *v, mb_err *err)
{
    /* creation order is an order of dependencies: a name is read after it is bound */
    int *ord = calloc((size_t)(v->n_s + v->n_g), sizeof *ord), parent[MAX_STMTS];
    if (!ord) return mb_err_set(err, MB_ERUN, "out of memory");
    for (int i = 0; i < v->n_s; i++) ord[v->s[i].order] = i + 1;
    for (int i = 0; i < v->n_g; i++) ord[v->gm[i].order] = -(i + 1);
    for (int o = 0; o < v->n_s + v->n_g; o++) {
        if (ord[o] < 0) {
            gemm *g = &v->gm[-ord[o] - 1];
            int lv = v->t[g->a].level > v->t[g->w].level ? v->t[g->a].level : v->t[g->w].level;
            v->t[g->out].level = lv + 1;
            v->t[g->out].grad = v->t[g->a].grad || v->t[g->w].grad || (g->bias >= 0 && v->t[g->bias].grad);
            continue;
        }
        stmt *s = &v->s[ord[o] - 1];
        tensor *T = &v->t[s->target];
        for (int j = 0; j < v->n_t; j++) {
            if (j == s->target || !mmv_reads(s, &v->t[j])) continue;
            if (v->t[j].level > T->level) T->level = v->t[j].level;
            T->grad |= v->t[j].grad;
        }
    }
    free(ord);
    for (int i = 0; i < v->n_s; i++) parent[i] = i;
    for (int i = 0; i < v->n_s; i++)
        for (int j = 0; j < v->n_s; j++)
            if (i != j && v->t[v->s[i].target].level == v->t[v->s[j].target].level && mmv_reads(&v->s[j], &v->t[v->s[i].target]))
                parent[uf_find(parent, i)] = uf_find(parent, j);
    v->sg = calloc((size_t)(v->n_s ? v->n_s : 1), sizeof *v->sg);
    if (!v->sg) return mb_err_set(err, MB_ERUN, "out of memory");
    int root_seg[MAX_STMTS];
    for (int i = 0; i < v->n_s; i++) root_seg[i] = -1;
    for (int i = 0; i < v->n_s; i++) { /* statements in creation order */
        int r = uf_find(parent, i);
        if (root_seg[r] < 0) {
            root_seg[r] = v->n_sg;
            v->sg[v->n_sg].order = v->s[i].order;
            v->n_sg++;
        }
        seg *S = &v->sg[root_seg[r]];
        S->stmts[S->n_stmts++] = i;
        v->s[i].seg = root_seg[r];
        v->t[v->s[i].target].seg = root_seg[r];
        if (v->s[i].order < S->order) S->order = v->s[i].order;
    }
    return MB_OK;
}

/* 1 when item a must come before item b */
static int item_before(const mb_mmvar *v, step a, step b)
{
    /* does b read a tensor a produces? */
    if (a.is_gemm) {
        int o = v->gm[a.index].out;
        if (b.is_gemm) return v->gm[b.index].a == o || v->gm[b.index].w == o;
        const seg *S = &v->sg[b.index];
        for (int i = 0; i < S->n_stmts; i++)
            if (mmv_reads(&v->s[S->stmts[i]], &v->t[o])) return 1;
        return 0;
    }
    const seg *A = &v->sg[a.index];
    for (int i = 0; i < A->n_stmts; i++) {
        const tensor *T = &v->t[v->s[A->stmts[i]].target];
        if (b.is_gemm && (v->gm[b.index].a == v->s[A->stmts[i]].target || v->gm[b.index].w == v->s[A->stmts[i]].target))
            return 1;
        if (b.is_gemm) continue;
        const seg *B = &v->sg[b.index];
        for (int j = 0; j < B->n_stmts; j++)
            if (B != A && mmv_reads(&v->s[B->stmts[j]], T)) return 1;
    }
    return 0;
}

static int order_items(mb_mmvar *v, mb_err *err)
{
    int n = v->n_g + v->n_sg, done[MAX_STMTS + MAX_GEMMS] = {0};
    step all[MAX_STMTS + MAX_GEMMS];
    for (int i = 0; i < v->n_g; i++) all[i] = (step){1, i};
    for (int i = 0; i < v->n_sg; i++) all[v->n_g + i] = (step){0, i};
    v->n_it = 0;
    while (v->n_it < n) {
        int pick = -1, pick_order = 0;
        for (int i = 0; i < n; i++) {
            if (done[i]) continue;
            int ready = 1;
            for (int j = 0; j < n && ready; j++)
                if (j != i && !done[j] && item_before(v, all[j], all[i])) ready = 0;
            int o = all[i].is_gemm ? v->gm[all[i].index].order : v->sg[all[i].index].order;
            if (ready && (pick < 0 || o < pick_order)) pick = i, pick_order = o;
        }
        if (pick < 0) return mb_err_set(err, MB_EINPUT, "%s: its products and the work between them form a cycle",
                                        v->path);
        done[pick] = 1;
        v->it[v->n_it++] = all[pick];
    }
    return MB_OK;
}

const char *mmv_dims_str(const tensor *T, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < T->nd && len < size; d++) len += (size_t)snprintf(buf + len, size - len, "%s%s", d ? ", " : "", T->dim[d]);
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

static int gemm_shape(mb_mmvar *v, gemm *g, mb_err *err)
{
    tensor *A = &v->t[g->a], *B = &v->t[g->w], *O = &v->t[g->out];
    char ta[256], tb[256];
    const char *what = g->linear ? "linear()" : "'@'";
    if (A->nd < 2 || B->nd < 2)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s of '%s' %s and '%s' %s: a product of %s is not modelled (each "
                          "operand has rows and a last dimension)", v->path, g->line, g->col, what, mmv_label(A),
                          mmv_dims_str(A, ta, sizeof ta), mmv_label(B), mmv_dims_str(B, tb, sizeof tb),
                          A->nd < 2 ? "a vector by a matrix" : "a matrix by a vector");
    const char *bk = B->dim[B->nd - (g->tb ? 1 : 2)], *bn = B->dim[B->nd - (g->tb ? 2 : 1)];
    if (strcmp(A->dim[A->nd - 1], bk))
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: '%s' %s @ '%s' %s%s: the left operand's last dimension '%s' is not "
                          "the right one's %s '%s'", v->path, g->line, g->col, mmv_label(A), mmv_dims_str(A, ta, sizeof ta),
                          B->name, mmv_dims_str(B, tb, sizeof tb), g->tb ? ".T" : "", A->dim[A->nd - 1],
                          g->tb ? "last" : B->nd == 2 ? "first" : "second-to-last", bk);
    g->batched = B->nd > 2;
    for (int d = 0; g->batched && d + 2 < B->nd; d++)
        if (A->nd != B->nd || strcmp(A->dim[d], B->dim[d]))
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: '%s' %s @ '%s' %s: a batched product has the same leading "
                              "dimensions on both sides ([batch, heads, seq, dim] @ [batch, heads, dim, seq]); "
                              "broadcasting them is not modelled", v->path, g->line, g->col, mmv_label(A),
                              mmv_dims_str(A, ta, sizeof ta), mmv_label(B), mmv_dims_str(B, tb, sizeof tb));
    for (int d = 0; d < A->nd; d++)
        if (!strcmp(A->dim[d], "1") || (d < B->nd && !strcmp(B->dim[d], "1")))
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: an operand of %s has a dimension of size 1: a product of "
                              "whole tensors is modelled", v->path, g->line, g->col, what);
    if (g->bias >= 0 && strcmp(v->t[g->bias].dim[0], bn))
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: linear(): the bias '%s' [%s] is not [%s], the weight's first "
                          "dimension", v->path, g->line, g->col, v->t[g->bias].name, v->t[g->bias].dim[0], bn);
    memcpy(g->k, bk, sizeof g->k);
    memcpy(g->n, bn, sizeof g->n);
    O->nd = A->nd;
    memcpy(O->dim, A->dim, sizeof O->dim);
    memcpy(O->dim[O->nd - 1], bn, MB_DIM_NAME_MAX);
    O->dtype = mb_dtype_promote(A->dtype, B->dtype);
    return MB_OK;
}

/* the segment's variant text; its statements' tokens joined by spaces,
 * each on its own line, so that a message's line and column map back
 * through col_map (the original position of each emitted token) */
typedef struct pos_map {
    int seg_line, seg_col, line, col;
} pos_map;

static int append(char *buf, size_t size, size_t *len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int append(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size - *len) return -1;
    *len += (size_t)n;
    return 0;
}

/* Rewrites "file:L:C: msg" of a segment's parse into the variant's
 * position (the token at or before L:C). */
static void map_error(const mb_mmvar *v, const pos_map *pm, int n_pm, const char *segpath, mb_err *err)
{
    int L, C, off = 0;
    size_t pl = strlen(segpath);
    char rest[sizeof err->msg];
    if (strncmp(err->msg, segpath, pl) || sscanf(err->msg + pl, ":%d:%d:%n", &L, &C, &off) != 2 || !off) {
        snprintf(rest, sizeof rest, "%s", err->msg);
        mb_err_set(err, MB_EINPUT, "%s: %s", v->path, rest);
        return;
    }
    snprintf(rest, sizeof rest, "%s", err->msg + pl + off);
    int best = -1;
    for (int i = 0; i < n_pm; i++)
        if (pm[i].seg_line == L && pm[i].seg_col <= C && (best < 0 || pm[i].seg_col > pm[best].seg_col)) best = i;
    if (best < 0)
        for (int i = 0; i < n_pm; i++)
            if (pm[i].seg_line <= L && (best < 0 || pm[i].seg_line >= pm[best].seg_line)) best = i;
    if (best < 0 && n_pm) best = 0; /* an input's declaration: the step's first statement */
    /* the names the front end made, said in the variant's words */
    char note[400] = "";
    size_t nl = 0;
    for (int g = 0; g < v->n_g && nl < sizeof note; g++) {
        const tensor *O = &v->t[v->gm[g].out];
        if (O->name[0] == '_' && strstr(rest, O->name))
            nl += (size_t)snprintf(note + nl, sizeof note - nl, "; %s is %s (line %d)", O->name, O->label,
                                   v->gm[g].line);
    }
    for (int i = 0; i < v->n_t && nl < sizeof note; i++)
        if (!strncmp(v->t[i].name, "_a", 2) && strstr(rest, v->t[i].name))
            nl += (size_t)snprintf(note + nl, sizeof note - nl, "; %s is the left operand of '@' at line %d",
                                   v->t[i].name, v->t[i].line);
    mb_err_set(err, MB_EINPUT, "%s:%d:%d:%s%s", v->path, best >= 0 ? pm[best].line : 1, best >= 0 ? pm[best].col : 1,
               rest, note);
}

/* dimensions of node i of segment graph g as names */
static int node_dims(const mb_graph *g, int i, tensor *T)
{
    const mb_node *nd = &g->nodes[i];
    int n = g->n_dims;
    T->dtype = nd->dtype;
    switch ((mb_shape_class)nd->shape) {
    case MB_SHC_FULL:
        T->nd = n;
        for (int d = 0; d < n; d++) snprintf(T->dim[d], MB_DIM_NAME_MAX, "%s", g->dim_names[d]);
        return 0;
    case MB_SHC_ROW:
        T->nd = n;
        for (int d = 0; d + 1 < n; d++) snprintf(T->dim[d], MB_DIM_NAME_MAX, "%s", g->dim_names[d]);
        snprintf(T->dim[n - 1], MB_DIM_NAME_MAX, "1");
        return 0;
    case MB_SHC_ROWV:
        T->nd = n - 1;
        for (int d = 0; d + 1 < n; d++) snprintf(T->dim[d], MB_DIM_NAME_MAX, "%s", g->dim_names[d]);
        return 0;
    case MB_SHC_COL:
        T->nd = 1;
        snprintf(T->dim[0], MB_DIM_NAME_MAX, "%s", g->dim_names[n - 1]);
        return 0;
    default: return -1; /* a 0-d or grouped tensor */
    }
}

static int build_segment(mb_mmvar *v, int k, mb_dtype dtype, mb_err *err)
{
    seg *S = &v->sg[k];
    pos_map *pm = calloc(MAX_TOKS * 4, sizeof *pm);
    if (!pm) return mb_err_set(err, MB_ERUN, "out of memory");
    int n_pm = 0, line = 1;
    size_t len = 0;
    char segpath[600];
    snprintf(segpath, sizeof segpath, "%s<segment %d>", v->path, k + 1);
    int rc = append(S->text, sizeof S->text, &len, "name step%d\n", k + 1);
    line++;
    /* inputs: tensors the statements read that the segment does not make */
    S->n_in = 0;
    for (int j = 0; j < v->n_t && !rc; j++) {
        tensor *T = &v->t[j];
        if (T->seg == k) continue;
        int read = 0;
        for (int i = 0; i < S->n_stmts && !read; i++) read = mmv_reads(&v->s[S->stmts[i]], T);
        if (!read) continue;
        if (T->nd < 0)
            return free(pm), mb_err_set(err, MB_EINPUT, "%s:%d:%d: '%s' is read before it is made", v->path,
                                        T->line, T->col, T->name);
        if (S->n_in >= MB_MAX_IO)
            return free(pm), mb_err_set(err, MB_EINPUT, "%s:%d:%d: a step between products reads more than %d "
                                        "tensors", v->path, v->s[S->stmts[0]].line, v->s[S->stmts[0]].col, MB_MAX_IO);
        if (T->seg >= 0 || T->gemm >= 0) T->used_out = 1;
        S->in[S->n_in++] = j;
        char dt[256];
        rc = append(S->text, sizeof S->text, &len, "input %s %s %s%s\n", T->name, mmv_dims_str(T, dt, sizeof dt),
                    mb_dtype_name(T->dtype), T->grad ? "" : " nograd");
        line++;
    }
    for (int i = 0; i < S->n_stmts && !rc; i++) {
        const stmt *s = &v->s[S->stmts[i]];
        int col = 1;
        rc = append(S->text, sizeof S->text, &len, "%s = ", v->t[s->target].name);
        pm[n_pm++] = (pos_map){line, 1, s->line, s->col};
        col += (int)strlen(v->t[s->target].name) + 3;
        for (int j = 0; j < s->n && !rc; j++) {
            if (n_pm < MAX_TOKS * 4) pm[n_pm++] = (pos_map){line, col, s->rhs[j].line, s->rhs[j].col};
            rc = append(S->text, sizeof S->text, &len, "%s ", s->rhs[j].t);
            col += (int)strlen(s->rhs[j].t) + 1;
        }
        if (!rc) rc = append(S->text, sizeof S->text, &len, "\n");
        line++;
    }
    S->n_out = 0;
    for (int i = 0; i < S->n_stmts && !rc; i++) {
        int t = v->s[S->stmts[i]].target;
        int used = 0;
        for (int o = 0; o < v->n_outputs; o++) used |= v->outputs[o] == t;
        for (int g = 0; g < v->n_g; g++) used |= v->gm[g].a == t || v->gm[g].w == t;
        for (int i2 = 0; i2 < v->n_s; i2++) used |= v->s[i2].seg != k && mmv_reads(&v->s[i2], &v->t[t]);
        if (!used) continue;
        if (S->n_out >= MB_MAX_IO) { rc = -1; break; }
        v->t[t].used_out = 1;
        S->out[S->n_out++] = t;
        rc = append(S->text, sizeof S->text, &len, "output %s\n", v->t[t].name);
    }
    if (rc) return free(pm), mb_err_set(err, MB_EINPUT, "%s: a step between products is too long to model", v->path);
    if (!S->n_out) {
        const stmt *s = &v->s[S->stmts[S->n_stmts - 1]];
        return free(pm), mb_err_set(err, MB_EINPUT, "%s:%d:%d: '%s' is never used (not an output, nor read by "
                                    "another step)", v->path, s->line, s->col, v->t[s->target].name);
    }
    int any_grad = 0;
    for (int i = 0; i < S->n_in; i++) any_grad |= v->t[S->in[i]].grad;
    S->backward = v->backward && any_grad;
    rc = mb_parse_variant(S->text, segpath, dtype, &S->g, err);
    if (!rc && S->backward) { /* differentiated knowing which inputs are leaves */
        for (int i = 0; i < S->n_in; i++) S->g->nodes[S->g->inputs[i]].inner = !v->t[S->in[i]].input;
        S->g->has_backward = 1;
        rc = mb_autodiff(S->g, err);
    }
    if (rc) {
        map_error(v, pm, n_pm, segpath, err);
        free(pm);
        return MB_EINPUT;
    }
    /* each node's place in the order of evaluation, through its token */
    S->seq = calloc((size_t)S->g->n_forward + 1, sizeof *S->seq);
    if (!S->seq) return free(pm), mb_err_set(err, MB_ERUN, "out of memory");
    for (int i = 0; i < S->g->n_forward; i++) {
        const mb_node *nd = &S->g->nodes[i];
        for (int j = 0; j < n_pm && nd->op != MB_OP_INPUT && !S->seq[i]; j++) {
            if (pm[j].seg_line != nd->line || pm[j].seg_col != nd->col) continue;
            for (int e = 0; e < v->n_ev && !S->seq[i]; e++)
                if (v->ev[e].line == pm[j].line && v->ev[e].col == pm[j].col) S->seq[i] = v->ev[e].seq;
        }
    }
    free(pm);
    /* the shapes of what it makes for the others */
    for (int o = 0; o < S->n_out; o++) {
        tensor *T = &v->t[S->out[o]];
        int read_later = 0; /* a 0-d loss that is only the layer's output is fine */
        for (int g = 0; g < v->n_g; g++) read_later |= v->gm[g].a == S->out[o] || v->gm[g].w == S->out[o];
        for (int i = 0; i < v->n_s; i++) read_later |= v->s[i].seg != k && mmv_reads(&v->s[i], T);
        if (!read_later && S->g->nodes[S->g->outputs[o]].shape == MB_SHC_SCALAR) {
            T->nd = 0;
            T->dtype = S->g->nodes[S->g->outputs[o]].dtype;
            continue;
        }
        if (node_dims(S->g, S->g->outputs[o], T) || (T->nd == 0))
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: '%s' is a 0-d or grouped tensor read by a later step: "
                              "a variant with '@' passes whole rows between its steps", v->path, T->line, T->col,
                              T->name);
    }
    return MB_OK;
}

int mb_mmvar_text_multiplies(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '#') while (*p && *p != '\n') p++;
        if (!*p) break;
        if (*p == '@') return 1;
        /* linear( or addmm( as a word: a layer without '@' */
        for (int w = 0; w < 2; w++) {
            const char *word = w ? "addmm" : "linear";
            size_t len = strlen(word);
            if (strncmp(p, word, len) || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))) continue;
            const char *q = p + len;
            while (*q == ' ' || *q == '\t') q++;
            if (*q == '(') return 1;
        }
    }
    return 0;
}

static int finish(mb_mmvar *v, fe *F, mb_dtype dtype, mb_err *err)
{
    int rc;
    if (!v->name[0]) { /* the file's name, when it is a name */
        const char *base = strrchr(v->path, '/');
        base = base ? base + 1 : v->path;
        size_t len = strcspn(base, ".");
        snprintf(v->name, sizeof v->name, "%.*s", (int)(len < MB_NAME_MAX ? len : MB_NAME_MAX - 1), base);
        for (const char *c = v->name; *c; c++)
            if (!(isalnum((unsigned char)*c) || *c == '_')) {
                snprintf(v->name, sizeof v->name, "layer");
                break;
            }
    }
    if (!v->n_g) return mb_err_set(err, MB_EINPUT, "%s: no '@': an ordinary variant (membound model)", v->path);
    /* outputs: the 'output' line's, or the last assignment */
    for (int i = 0; i < F->n_out_names; i++) {
        int t = mmv_find(v, F->out_names[i]);
        if (t < 0 || v->t[t].input)
            return ferr(F, F->line_out[i], F->col_out[i], "output '%s' is %s", F->out_names[i],
                        t < 0 ? "never assigned" : "an input");
        v->outputs[v->n_outputs++] = t;
    }
    if (!v->n_outputs) {
        int last = -1, last_order = -1;
        for (int i = 0; i < v->n_s; i++)
            if (v->s[i].order > last_order) last = v->s[i].target, last_order = v->s[i].order;
        for (int i = 0; i < v->n_g; i++)
            if (v->gm[i].order > last_order) last = v->gm[i].out, last_order = v->gm[i].order;
        v->outputs[v->n_outputs++] = last;
    }
    for (int g = 0; g < v->n_g; g++) { /* a product nothing reads */
        int o = v->gm[g].out, used = 0;
        for (int k = 0; k < v->n_outputs; k++) used |= v->outputs[k] == o;
        for (int h = 0; h < v->n_g; h++) used |= v->gm[h].a == o || v->gm[h].w == o;
        for (int s = 0; s < v->n_s; s++) used |= mmv_reads(&v->s[s], &v->t[o]);
        if (!used)
            return ferr(F, v->t[o].line, v->t[o].col, "'%s' is never used (not an output, nor read by another "
                        "step)", mmv_label(&v->t[o]));
    }
    for (int i = 0; i < v->n_t; i++) {
        tensor *T = &v->t[i];
        T->grad = T->input && !T->nograd;
        if (!T->input) continue;
        int used = 0, as_w = 0; /* a weight: the matrix of a product, or a bias */
        for (int g = 0; g < v->n_g; g++) {
            as_w |= (v->gm[g].w == i && T->nd == 2) || v->gm[g].bias == i;
            used |= v->gm[g].a == i || v->gm[g].w == i || v->gm[g].bias == i;
        }
        for (int s = 0; s < v->n_s; s++) used |= mmv_reads(&v->s[s], T);
        if (!used) return ferr(F, T->line, T->col, "input '%s' is never used", T->name);
        T->param = as_w;
    }
    int max_nd = 0;
    for (int i = 0; i < v->n_t; i++)
        if (v->t[i].input && v->t[i].nd > max_nd && !v->t[i].param) max_nd = v->t[i].nd;
    for (int i = 0; i < v->n_t; i++)
        if (v->t[i].input && v->t[i].nd == 1 && max_nd > 1) v->t[i].param = 1; /* a bias, a norm's weight */
    if ((rc = levels_and_segments(v, err))) return rc;
    if ((rc = order_items(v, err))) return rc;
    for (int i = 0; i < v->n_it; i++) {
        step it = v->it[i];
        rc = it.is_gemm ? gemm_shape(v, &v->gm[it.index], err) : build_segment(v, it.index, dtype, err);
        if (rc) return rc;
    }
    int any_grad = 0;
    for (int i = 0; i < v->n_t; i++) any_grad |= v->t[i].input && v->t[i].grad;
    if (v->backward && !any_grad)
        return mb_err_set(err, MB_EINPUT, "%s: 'backward', and every input is nograd", v->path);
    if (v->dims_line[0] && (rc = mb_mmvar_bind(v, v->dims_line, err)))
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s", v->path, v->dims_line_no, v->dims_col, err->msg);
    return MB_OK;
}

int mb_mmvar_parse(const char *text, const char *file, mb_dtype default_dtype, mb_mmvar **out, mb_err *err)
{
    *out = NULL;
    mb_mmvar *v = calloc(1, sizeof *v);
    fe *F = calloc(1, sizeof *F);
    if (!v || !F) {
        free(v), free(F);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    snprintf(v->path, sizeof v->path, "%s", file);
    F->v = v;
    F->err = err;
    F->dtype = default_dtype;
    if (!strncmp(text, "\xEF\xBB\xBF", 3)) text += 3;
    int rc = front_end(F, text);
    if (!rc) rc = finish(v, F, default_dtype, err);
    free(F);
    if (rc) {
        mb_mmvar_free(v);
        return rc;
    }
    *out = v;
    return MB_OK;
}

int mb_mmvar_load(const char *path, mb_dtype default_dtype, mb_mmvar **out, mb_err *err)
{
    char *text = NULL;
    size_t len;
    int rc = mb_text_read(path, MAX_FILE_BYTES, &text, &len, err);
    if (rc) return rc;
    rc = mb_mmvar_parse(text, path, default_dtype, out, err);
    free(text);
    return rc;
}

void mb_mmvar_free(mb_mmvar *v)
{
    if (!v) return;
    for (int i = 0; i < v->n_s; i++) free(v->s[i].rhs);
    for (int i = 0; v->sg && i < v->n_sg; i++) {
        mb_graph_free(v->sg[i].g);
        free(v->sg[i].seq);
    }
    free(v->sg);
    free(v);
}

const char *mb_mmvar_name(const mb_mmvar *v) { return v->name; }
int mb_mmvar_backward(const mb_mmvar *v) { return v->backward; }

int mb_mmvar_bind(mb_mmvar *v, const char *dims, mb_err *err)
{
    int64_t size[MAX_VDIMS] = {0};
    char item[128];
    for (const char *p = dims; *p;) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, ","), kept = 0;
        for (size_t i = 0; i < len && kept + 1 < sizeof item; i++)
            if (p[i] != ' ' && p[i] != '\t') item[kept++] = p[i];
        item[kept] = '\0';
        p += len;
        if (*p == ',') p++;
        char *eq = strchr(item, '=');
        if (!eq) return mb_err_set(err, MB_EINPUT, "dims '%s': expected name=SIZE, e.g. %s=1024", item, v->dim_names[0]);
        *eq = '\0';
        int d = 0;
        while (d < v->n_dims && strcmp(v->dim_names[d], item)) d++;
        if (d == v->n_dims) {
            char all[512];
            size_t l = 0;
            all[0] = '\0';
            for (int e = 0; e < v->n_dims && l < sizeof all; e++)
                l += (size_t)snprintf(all + l, sizeof all - l, "%s%s", e ? ", " : "", v->dim_names[e]);
            return mb_err_set(err, MB_EINPUT, "dims: '%s' is not a dimension of variant '%s' (%s)", item, v->name, all);
        }
        if (size[d]) return mb_err_set(err, MB_EINPUT, "dims: '%s' given twice", item);
        mb_err e;
        if (mb_size_parse(eq + 1, &size[d], &e)) return mb_err_set(err, MB_EINPUT, "dims: %s: %s", item, e.msg);
    }
    for (int d = 0; d < v->n_dims; d++)
        if (!size[d]) return mb_err_set(err, MB_EINPUT, "dims: no size for '%s' (give %s=SIZE)", v->dim_names[d], v->dim_names[d]);
    /* every tensor within the model's count */
    for (int i = 0; i < v->n_t; i++) {
        double n = 1;
        for (int d = 0; d < v->t[i].nd; d++)
            for (int e = 0; e < v->n_dims; e++)
                if (!strcmp(v->t[i].dim[d], v->dim_names[e])) n *= (double)size[e];
        if (n > (double)MB_N_MAX / 2)
            return mb_err_set(err, MB_EINPUT, "dims: tensor '%s' would have %.3g elements (at most 2^43)", v->t[i].name, n);
    }
    memcpy(v->dim_size, size, sizeof size);
    return MB_OK;
}

const char *mb_mmvar_dims_text(const mb_mmvar *v, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 0; d < v->n_dims && v->dim_size[0] > 0 && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s=%lld", d ? "," : "", v->dim_names[d],
                                (long long)v->dim_size[d]);
    return buf;
}
