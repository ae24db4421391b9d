/* mmvar_int.h — shared by the front end (mmvar_parse.c) and the model
 * (mmvar.c) of variants that multiply matrices: the variant as the front
 * end leaves it. Internal to model/. */
#ifndef MB_MMVAR_INT_H
#define MB_MMVAR_INT_H

#include "model_int.h"
#include "mb_mmvar.h"

#define TOK_MAX 64       /* a token's text */
#define MAX_TOKS 2048    /* tokens of one statement */
#define MAX_T 160        /* tensors */
#define MAX_GEMMS 32
#define MAX_STMTS 128
#define MAX_VDIMS (2 * MB_MAX_DIMS)
#define MAX_FILE_BYTES (1 << 20)
#define MAX_EVENTS 4096 /* operations of the variant, in Python's order of evaluation */

typedef struct tok {
    mb_tok_kind kind;
    char t[TOK_MAX];
    int line, col;
} tok;

typedef struct tensor {
    char name[MB_NAME_MAX];
    char label[MB_NAME_MAX];                  /* what the variant wrote, for a name the
                                                 front end made: "x@wg", "silu(x@wg)*(x@wu)" */
    int nd;                                   /* -1: not known yet */
    char dim[MB_MAX_DIMS][MB_DIM_NAME_MAX];
    mb_dtype dtype;
    int input, nograd, param;
    int gemm, stmt;                           /* producer, -1 */
    int level, grad, seg;
    int line, col;
    int used_out;                             /* read outside its segment, or an output */
} tensor;

typedef struct stmt {
    int target;
    tok *rhs;
    int n;
    int line, col;
    int seg;
    int order;
} stmt;

/* C = A @ B (B transposed as a view when tb: B [.., N, K]); linear: F.linear
 * (addmm, B as nn.Linear keeps it, [N, K], bias [N] or -1). batched: B has
 * the leading dimensions of A (bmm), else A's leading dimensions fold into
 * the rows (mm). k, n: the names of K and N (gemm_shape). */
typedef struct gemm {
    int a, w, out, bias;
    int tb, linear, batched;
    char k[MB_DIM_NAME_MAX], n[MB_DIM_NAME_MAX];
    int line, col;
    int order;
    int seq; /* its place in Python's order of evaluation */
} gemm;

/* one item of the program, in an order where each follows what it reads */
typedef struct step {
    int is_gemm, index;
} step;

typedef struct seg {
    int stmts[MAX_STMTS], n_stmts;
    int in[MB_MAX_IO], n_in;   /* tensors, in the segment graph's input order */
    int out[MB_MAX_IO], n_out; /* tensors, in its output order */
    int order;
    char text[16384];
    mb_graph *g;               /* parsed (forward; backward as the variant) */
    int *seq;                  /* per forward node of g: its operation's place in
                                  Python's order of evaluation (0: an input) */
    int backward;
} seg;

struct mb_mmvar {
    char name[MB_NAME_MAX];
    char path[512];
    int backward;
    tensor t[MAX_T];
    int n_t;
    stmt s[MAX_STMTS];
    int n_s;
    gemm gm[MAX_GEMMS];
    int n_g;
    seg *sg;
    int n_sg;
    step it[MAX_STMTS + MAX_GEMMS];
    int n_it;
    int outputs[MB_MAX_IO], n_outputs;
    char dim_names[MAX_VDIMS][MB_DIM_NAME_MAX];
    int64_t dim_size[MAX_VDIMS];
    int n_dims;
    char dims_line[256];
    int dims_line_no, dims_col;
    int order;
    struct { int line, col, seq; } ev[MAX_EVENTS]; /* each operation's token and place */
    int n_ev;
};

/* The tensor named name (the last made of that name), -1 none. */
int mmv_find(const mb_mmvar *v, const char *name);
/* What to call T in kernel and saved names: its name, or for one the front
 * end made, what the variant wrote ("x@wg"). */
const char *mmv_label(const tensor *T);
/* T's label as an operand in a product's name: bare when a name, else in
 * parentheses; pre "d": its gradient (dy, d(x@w)). */
const char *mmv_operand(const tensor *T, const char *pre, char *buf, size_t size);
/* 1 when statement s reads tensor t by name. */
int mmv_reads(const stmt *s, const tensor *t);
/* T's dimensions, "[tokens, dim]", into buf. */
const char *mmv_dims_str(const tensor *T, char *buf, size_t size);

#endif
