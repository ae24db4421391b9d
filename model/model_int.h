/* model_int.h — shared inside model/ only: graph building, the lexer's
 * tokens, autodiff's entry point. Not part of the public API. */
#ifndef MB_MODEL_INT_H
#define MB_MODEL_INT_H

#include "membound_model.h"

/* ---- graph building (graph.c) ---- */
mb_graph *mb_graph_new(void);
/* Appends a node; returns its index or -1 when out of memory. */
int mb_graph_add(mb_graph *g, mb_op op, int a, double sa, int b, double sb,
                 mb_dtype dtype, int is_backward, int origin);
mb_graph *mb_graph_copy(const mb_graph *g);
/* Result type of an op on tensor operands (PyTorch promotion: equal types
 * stay, mixed 16-bit types and anything with f32 become f32). */
mb_dtype mb_dtype_promote(mb_dtype a, mb_dtype b);

/* Levenshtein distance, case-insensitive, on the first 63 characters of
 * each string: ranks "did you mean" suggestions (err.c). */
int mb_edit_distance(const char *a, const char *b);

/* ---- the language front end (parser.c) ---- */
/* Parses one --expr string as mb_parse_expr does, without its naming policy
 * (variants.c applies that). */
int mb_parse_expr_text(const char *expr, mb_dtype dtype, mb_graph **out, mb_err *err);

/* ---- lexer (lexer.c) ---- */
typedef enum {
    TK_EOF = 0, TK_NEWLINE, TK_NUM, TK_ID,
    TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_POW, TK_LPAREN, TK_RPAREN,
    TK_ASSIGN, TK_COMMA, TK_SEMI, TK_LBRACK, TK_RBRACK, TK_DOT, TK_AT, TK_BAD
} mb_tok_kind;

typedef struct {
    mb_tok_kind kind;
    const char *start;
    int len;
    int line, col;
    double num;
} mb_token;

typedef struct {
    const char *src, *p;
    int line;
    const char *line_start;
    int paren_depth;    /* inside brackets newlines join lines, as in Python */
    mb_token tok;       /* current token */
} mb_lexer;

void mb_lex_init(mb_lexer *lx, const char *src);
void mb_lex_next(mb_lexer *lx);
const char *mb_tok_desc(const mb_token *t, char *buf, int bufsize);
/* Returns the raw rest of the current line (after the current token's
 * start), without its comment, trimmed; advances to the line's end. */
void mb_lex_rest_of_line(mb_lexer *lx, char *buf, int bufsize);

/* ---- shapes (shape.c) ---- */
/* Derives every forward node's shape class for rank (1 or 2) from the
 * inputs' declared shapes, the reductions' dim and keepdim and NumPy
 * broadcasting; MB_EINPUT "file:line:col: ..." at the first node that does
 * not broadcast or reduces another dimension. Sets g->rank. Leaves the
 * backward nodes alone: autodiff.c gives them their shapes (the parser calls
 * it after this; mb_graph_set_rank, in autodiff.c, at a new rank). */
int mb_graph_derive_shapes(mb_graph *g, int rank, mb_err *err);

/* Bytes of tensor node i of g at shape s (shape.c). */
int64_t mb_tensor_bytes_at(const mb_graph *g, int i, mb_shape s);

/* ---- the estimate's steps (traffic.c calls them in this order) ---- */
/* dram.c: the cache-aware DRAM bytes of every kernel of p into per_kernel
 * (whose lecture bytes and passes are set), and of those reads, the line
 * fills of a write-allocate cache's stores into rfo (p->n_kernels entries,
 * zeroed). -1 when out of memory. */
int mb_dram_bytes(const mb_plan *p, mb_shape n, const mb_device *d, mb_framework fw, mb_cost *per_kernel,
                  int64_t *rfo);
/* roofline.c: kernel k's time into c (its bytes set), with framework fw's
 * allocations, at bandwidth_gbs (the one mb_device_bandwidth_gbs gives);
 * first: k is the first kernel of the timed region (the spec's floor). */
void mb_kernel_time(const mb_plan *p, int k, int first, mb_shape n, const mb_device *d, mb_framework fw,
                    double bandwidth_gbs, int64_t rfo_bytes, mb_cost *c);
/* roofline.c: seconds the framework's host spends issuing kernel k of p
 * on GPU d (docs/model.md, "The host"); first: k is the first kernel of
 * its phase in the timed region. */
double mb_kernel_host_s(const mb_plan *p, int k, int first, const mb_device *d);
/* roofline.c: seconds one y.backward(dy) call costs the host beyond its
 * nodes (the engine's entry and exit), on d. */
double mb_host_backward_call_s(const mb_device *d);
/* roofline.c: which term bounds a kernel (or a plan, by each term's share). */
mb_bound mb_bound_of(double launch_s, double mem_s, double compute_s);

/* ---- autodiff (autodiff.c) ---- */
/* Appends the backward graph to g (forward graph complete). */
int mb_autodiff(mb_graph *g, mb_err *err);

/* plan.c: side[i] = 1 for the backward nodes of g a fused plan runs in its
 * column kernel (colsums, the expands only they read, every node reading
 * one of those), 0 for the rest; side has g->n_nodes entries. Returns how
 * many are 1. */
int mb_graph_column_side(const mb_graph *g, char *side);
/* plan.c: each backward colsum c = colsum(v) of a full v outside the column
 * side becomes c = colsum(p), p = colsum(v) of shape PART (f32 [blocks,
 * cols]): the fused backward kernel adds each row's v into its block's
 * partial sums, the column kernel sums the blocks (Liger's and Inductor's
 * weight gradients). Appends the p nodes; returns how many, -1 when out of
 * memory. */
int mb_graph_split_colsums(mb_graph *g);

/* plan.c: one of the fixed groupings (eager, fused, store, recompute) of g,
 * supported by g (mb_plan_build checks); MB_EINPUT for another kind. */
int mb_plan_build_fixed(const mb_graph *g, mb_plan_kind k, mb_plan **out, mb_err *err);

/* ---- the MLP's plans, shared with the variants that multiply (mlp.c) ---- */
struct mb_mlp_plan;
struct mb_mlp_kernel;
/* Appends a zeroed kernel named name to p (the caller checks that p has
 * room: n_kernels < MB_MLP_MAX_KERNELS). */
struct mb_mlp_kernel *mb_mlp_add_kernel(struct mb_mlp_plan *p, const char *name, int backward, int recompute);
/* Appends a saved tensor (ignored beyond MB_MLP_MAX_SAVED). */
void mb_mlp_add_saved(struct mb_mlp_plan *p, const char *name, double bytes);
/* k's memory term, time and bound again after its bytes changed: on a GPU
 * launch + max(compute, memory), on a CPU (cpu 1) launch + compute + memory,
 * the bytes at bandwidth_gbs (gemm.c's rule). */
void mb_mlp_retime(struct mb_mlp_kernel *k, double bandwidth_gbs, int cpu);
/* p's totals from its kernels; its first kernel pays d's kernel floor. */
void mb_mlp_totals(const mb_device *d, struct mb_mlp_plan *p);

#endif
