/* mb_graph.h — the variant language and its graphs: parsing a variant
 * file or an --expr string, built-in variants, shapes and broadcasting,
 * autodiff's backward nodes. Does not group nodes into kernels (mb_plan.h)
 * or cost them (mb_traffic.h). */
#ifndef MB_GRAPH_H
#define MB_GRAPH_H

#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- graphs ----------------------------------------------------------- */

#define MB_MAX_IO 16
#define MB_NAME_MAX 64
#define MB_MAX_DIMS 8        /* named dimensions of a tensor */
#define MB_DIM_NAME_MAX 32   /* a dimension's name, with its terminator */

/* One tensor-valued operation. Operand i is node arg[i], or the scalar
 * scalar[i] when arg[i] < 0. The forward nodes [0, n_forward) and the
 * backward nodes after them are stored in evaluation order; a recompute
 * plan's graph appends clones after them, so execute a plan by its
 * kernels' node lists. */
typedef struct mb_node {
    mb_op op;
    int arg[2];
    double scalar[2];
    mb_dtype dtype;     /* storage type of the tensor this node produces */
    int is_backward;    /* 1 for nodes made by autodiff */
    int origin;         /* backward nodes: the forward node whose derivative
                           they compute (one eager kernel each), or -1 for a
                           gradient accumulation (its own eager kernel);
                           recomputed clones: the node they copy; else -1 */
    int line, col;      /* source position (forward nodes), 0 if none */
    char name[MB_NAME_MAX]; /* user's name, "grad_y", ... or "" */
    unsigned char shape; /* mb_shape_class of the tensor (mb_graph_set_rank) */
    unsigned char decl;  /* inputs: 1 + the mb_shape_class declared, 0 none
                            (the graph's full shape) */
    unsigned char nograd; /* inputs: 1 when declared 'nograd' (a frozen weight,
                            a mask, a label): backward neither computes nor
                            reduces its gradient (grad_inputs[k] is -1) */
    signed char dim;     /* reductions, softmax: the dimension written (-1, 1, 0),
                            or MB_DIM_ALL (sum(x): over every dimension) */
    unsigned char keepdim; /* reductions: 1 keeps the reduced dimension */
    unsigned char joins; /* 1: evaluated in the eager kernel of the node before
                            it (layer_norm's bias add, as F.layer_norm's kernel) */
    double eps;          /* layer_norm, rms_norm: added to the variance */
    unsigned char scalar_cols; /* 1: the scalar operand (scalar[1]) is the row
                            length, cols (n at rank 1): mean's backward divides
                            by it (autodiff.c); executors read it at their shape */
    unsigned char grp_lo, grp_hi; /* MB_SHC_GCOL: the leading named dimensions
                            [grp_lo, grp_hi) it keeps (mb_graph_group) */
    unsigned char engine; /* 1: autograd's engine runs it before the backward:
                            an incoming gradient cast to its output's dtype
                            ('backward grad DTYPE'), its own eager kernel in
                            every plan (PyTorch's validate_outputs) */
    unsigned char gamma_beta; /* backward nodes of a norm's weight and bias
                            gradients (autodiff.c): 1, the eager plan runs them
                            in a kernel of their own after the op's fused
                            backward kernel, as PyTorch's GammaBetaBackward */
    unsigned char inner; /* inputs: 1 when the tensor is made by a larger
                            program around the graph (a GEMM's output between
                            the steps of a variant with '@', model/mmvar.c),
                            not a leaf: autograd passes its gradient on, no
                            AccumulateGrad copies it */
} mb_node;

/* mb_node.dim of a reduction written without a dim (sum(x), x.mean()): over
 * every dimension, a 0-d result. */
#define MB_DIM_ALL 127

/* The shape of a tensor, relative to the graph's shape: FULL is [n] (1-D)
 * or [rows, cols] (2-D); ROW [rows, 1] (a reduction with keepdim=True; [1]
 * in 1-D); ROWV [rows] (keepdim=False in 2-D); COL [cols] (a weight);
 * SCALAR a 0-d tensor (a 1-D reduction with keepdim=False); GCOL, with
 * named dimensions, the last dimension and a run of the leading ones, 1 in
 * the others ([batch, 1, 1, seq] or [1, 1, seq, seq] against [batch, heads,
 * seq, seq]: an attention mask), read by row r at its row (r / inner) %
 * outer (mb_graph_group). PART, [blocks, cols] f32, a colsum's per-block
 * partial sums (mb_graph_split_colsums): block b sums rows [b x rows /
 * blocks, (b + 1) x rows / blocks), blocks the shape's. */
typedef enum mb_shape_class {
    MB_SHC_FULL = 0, MB_SHC_ROW, MB_SHC_ROWV, MB_SHC_COL, MB_SHC_SCALAR, MB_SHC_GCOL, MB_SHC_PART, MB_SHC_COUNT
} mb_shape_class;

/* A size: rank 1, n = cols elements (rows = 1); or rank 2, rows x cols. */
typedef struct mb_shape {
    int rank;
    int64_t rows, cols;
    int64_t blocks; /* PART tensors' rows: the blocks a row kernel sums its
                       rows' colsum operands in (0 counts as 1) */
} mb_shape;

/* Parses "16777216", "2^24", "16M" (rank 1) or "ROWSxCOLS" with each side
 * in that syntax ("4096x1024", "2^12x2^12"; rank 2). rows x cols must be in
 * [1, MB_N_MAX]. MB_EINPUT with the reason otherwise. */
int mb_shape_parse(const char *s, mb_shape *out, mb_err *err);
/* "4096x1024" (rank 2) or "16777216" (rank 1) into buf. */
void mb_shape_format(mb_shape s, char *buf, size_t size);
/* Elements of the shape: rows x cols. */
int64_t mb_shape_elems(mb_shape s);
/* The rank-1 shape of n elements. */
mb_shape mb_shape_1d(int64_t n);
/* "[rows, cols]", "[rows, 1]", "[rows]", "[cols]", "[]" or "[n]" for rank. */
const char *mb_shape_class_text(mb_shape_class c, int rank);

/* How the fused backward plans (store, recompute, optimal) sum a [cols]
 * gradient over the rows (a colsum; docs/model.md, "In store, recompute and
 * optimal"):
 *   WRITTEN  the fused backward writes each row's term, a column kernel
 *            reads it back (the default)
 *   PARTIAL  the fused backward adds each row's term into per-block partial
 *            sums, a column kernel adds the blocks (Liger's kernels;
 *            mb_graph_split_colsums)
 *   REREAD   the column kernel computes each row's term again from what it
 *            is made of: the tensors the fused backward read and the row
 *            values it wrote (Inductor before its mix-order reduction: the
 *            dx and the dw/db reductions two kernels with common inputs,
 *            pytorch/pytorch#165370) */
typedef enum mb_colsum { MB_COLSUM_WRITTEN = 0, MB_COLSUM_PARTIAL, MB_COLSUM_REREAD, MB_COLSUM_COUNT } mb_colsum;
const char *mb_colsum_name(mb_colsum c);          /* "written", "partial", "reread" */
int mb_colsum_parse(const char *s, mb_colsum *out); /* MB_OK or MB_EINPUT */

typedef struct mb_graph {
    char name[MB_NAME_MAX];
    char path[512];          /* file it came from, or "<expr>" */
    mb_node *nodes;
    int n_nodes, cap_nodes;
    int n_forward;           /* nodes [0, n_forward) are the forward graph */
    int inputs[MB_MAX_IO], n_inputs;     /* forward inputs */
    int outputs[MB_MAX_IO], n_outputs;   /* forward outputs */
    int has_backward;
    int grad_dtype_set;      /* 1: 'backward grad DTYPE': each incoming
                                gradient is grad_dtype (y.backward(dy) with
                                dy of that dtype), cast to its output's
                                dtype where they differ (an engine node) */
    mb_dtype grad_dtype;
    int grad_outputs[MB_MAX_IO];  /* incoming gradient of each output (inputs) */
    int grad_inputs[MB_MAX_IO];   /* gradient of each input (graph results),
                                     -1 for an input declared nograd */
    int64_t default_n;       /* "size" directive, 0 if none */
    char warning[400];       /* the parse's first warning, "file:line:col: ...",
                                "" if none (callers print it) */
    int n_warnings;          /* how many there were */
    int name_line, name_col; /* the 'name' directive's position, 0 if none */
    int rank;                /* 1 (every tensor [n]) or 2 ([rows, cols]) */
    int rank_declared;       /* 1: an input's [..] or a 'shape' line fixed it */
    mb_shape default_shape;  /* "shape" directive (rank 2), rank 0 if none */
    int has_row_ops;         /* 1: a reduction or a row library op is in it,
                                or a tensor broadcast over rows or columns at
                                rank 2 (the row executors run it) */
    int n_dims;              /* named dimensions of the full shape ('input x
                                [batch, seq, dim]'), 0: rows, cols or n. The
                                last is cols, the others' product rows (rank
                                2); one alone is n (rank 1) */
    char dim_names[MB_MAX_DIMS][MB_DIM_NAME_MAX];
    int64_t dim_size[MB_MAX_DIMS]; /* the named dimensions' sizes the graph
                                is bound to (mb_graph_bind_dims, the 'dims'
                                line), 0 unbound: a GCOL tensor's size needs them */
    int has_gcol;            /* 1: a GCOL tensor is in it */
    int flat;                /* 1: declared 2-D or more, but its only row ops
                                are reductions over every element and every
                                tensor is full or 0-d: it runs, as PyTorch
                                runs it, over its n = rows x cols elements
                                (rank 1; mb_graph_shape_at) */
    mb_colsum colsum;        /* the 'colsum' directive (or --colsum): how
                                store, recompute and optimal sum a [cols]
                                gradient over the rows (mb_colsum) */
} mb_graph;

/* The shape of g's named dimensions at "name=SIZE,name=SIZE..." (each of
 * g->dim_names once, sizes as mb_size_parse reads them, spaces allowed after
 * a comma): rows x cols, rows the product of all dimensions but the last
 * (rank 2), or n (one dimension, rank 1). MB_EINPUT naming the dimension
 * that is missing, unknown, given twice or too large. */
int mb_graph_dims_shape(const mb_graph *g, const char *text, mb_shape *out, mb_err *err);

/* mb_graph_dims_shape, and g bound to those sizes (a GCOL tensor's rows
 * are counted from them). */
int mb_graph_bind_dims(mb_graph *g, const char *text, mb_shape *out, mb_err *err);

/* g's bound sizes as "name=SIZE,..." (each name once) into buf, "" when g
 * names no dimensions or is not bound; returns buf. */
const char *mb_graph_dims_text(const mb_graph *g, char *buf, size_t size);

/* Row r of a tensor of g's full shape reads row (r / *inner) % *outer of
 * GCOL tensor node i (its kept run of leading dimensions, g's bound sizes). */
void mb_graph_group(const mb_graph *g, int i, int64_t *inner, int64_t *outer);

/* MB_OK when g can run at shape s: a graph with a GCOL tensor must be bound
 * to named sizes whose rows and columns are s's; MB_EINPUT saying so. */
int mb_graph_check_shape(const mb_graph *g, mb_shape s, mb_err *err);

/* A shape class as g names its dimensions ("[batch, seq, 1]"; without
 * named dimensions, mb_shape_class_text's), into buf; returns buf. */
const char *mb_graph_class_text(const mb_graph *g, mb_shape_class c, char *buf, size_t size);

/* The shape g runs at when given s: s, or n = rows x cols elements (rank
 * 1) for a flat graph (a loss over a 2-D tensor, reduced to a 0-d one). */
mb_shape mb_graph_shape_at(const mb_graph *g, mb_shape s);

/* Re-derives g's tensor shapes for rank 1 or 2 (a 1-D variant measured at
 * ROWSxCOLS: its reductions then run over rows), and then its backward
 * nodes, differentiated again with those shapes. MB_EINPUT with
 * "file:line:col: ..." when a tensor does not broadcast at that rank, or
 * when g declares 2-D inputs and rank is 1 ("give --shape ROWSxCOLS"). */
int mb_graph_set_rank(mb_graph *g, int rank, mb_err *err);

/* Elements of tensor node i of g at shape s (a row statistic has rows, a
 * weight cols, a scalar 1). */
int64_t mb_tensor_elems_at(const mb_graph *g, int i, mb_shape s);


/* Parses a variant text. filename is used in error messages.
 * default_dtype types inputs written without one. On success *out is a new
 * graph (caller frees with mb_graph_free), with autodiff applied when the
 * text says "backward". On error returns MB_EINPUT with "file:line:col: ...". */
int mb_parse_variant(const char *text, const char *filename,
                     mb_dtype default_dtype, mb_graph **out, mb_err *err);

/* Parses one --expr string ("y = ..." or several ';'-separated assignments):
 * free names become inputs of dtype, the last assignment is the output.
 * A 'name' line naming a built-in variant is refused (MB_EINPUT): report
 * judges the lecture's claims by name. */
int mb_parse_expr(const char *expr, mb_dtype dtype, mb_graph **out, mb_err *err);

/* Loads a built-in variant by name, or a variant file by path (anything
 * containing '/' or ending in ".mb"). Unknown names list the known ones.
 * A file named like a built-in (by its 'name' line or its file name) is
 * refused (MB_EINPUT) unless it is a copy of the built-in's text. */
int mb_variant_load(const char *name_or_path, mb_dtype dtype, mb_graph **out,
                    mb_err *err);

/* Directory holding the built-in variants: the one set with
 * mb_variant_set_dir, else share/membound/variants beside the running
 * binary's folder, else the installed share directory. */
const char *mb_variant_dir(void);

/* Sets that directory (copied; NULL or "": the default search). The CLI
 * passes $MEMBOUND_VARIANTS; the library reads no environment variable. */
void mb_variant_set_dir(const char *dir);

/* Fills names (sorted) with the built-in variants; returns their count
 * (may exceed max, in which case only max are written). */
int mb_variant_list(char names[][MB_NAME_MAX], int max);

void mb_graph_free(mb_graph *g);
/* A copy of g (caller frees with mb_graph_free), NULL when out of memory. */
mb_graph *mb_graph_clone(const mb_graph *g);

/* Per-element cost of node i (POW depends on its exponent). */
mb_op_cost mb_node_cost(const mb_graph *g, int i);

#ifdef __cplusplus
}
#endif
#endif
