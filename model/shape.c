/* shape.c — tensor shapes: sizes written ROWSxCOLS, NumPy broadcasting of a
 * graph's tensors ([rows, cols], [rows, 1], [rows], [cols], scalars) and
 * what a reduction over the last dimension gives, as PyTorch does.
 * Does not parse the language (parser.c), count bytes (traffic.c) nor
 * build or reshape the backward nodes (autodiff.c: mb_graph_set_rank). */
#include "model_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mb_shape_parse(const char *s, mb_shape *out, mb_err *err)
{
    const char *x = strchr(s, 'x');
    if (!x) {
        int64_t n;
        int rc = mb_size_parse(s, &n, err);
        if (rc) return rc;
        *out = mb_shape_1d(n);
        return MB_OK;
    }
    char left[64];
    size_t len = (size_t)(x - s);
    if (len == 0 || len >= sizeof left || !x[1] || strchr(x + 1, 'x'))
        return mb_err_set(err, MB_EINPUT, "shape '%s': expected ROWSxCOLS, e.g. 4096x1024 or 2^12x2^12", s);
    memcpy(left, s, len);
    left[len] = '\0';
    int64_t rows, cols;
    mb_err e;
    if (mb_size_parse(left, &rows, &e) || mb_size_parse(x + 1, &cols, &e))
        return mb_err_set(err, MB_EINPUT, "shape '%s': %s", s, e.msg);
    if (rows > MB_N_MAX / cols)
        return mb_err_set(err, MB_EINPUT, "shape '%s': too large to count (at most 2^44 elements)", s);
    *out = (mb_shape){2, rows, cols, 0};
    return MB_OK;
}

void mb_shape_format(mb_shape s, char *buf, size_t size)
{
    if (s.rank == 2) snprintf(buf, size, "%lldx%lld", (long long)s.rows, (long long)s.cols);
    else snprintf(buf, size, "%lld", (long long)s.cols);
}

int64_t mb_shape_elems(mb_shape s) { return s.rows * s.cols; }

mb_shape mb_shape_1d(int64_t n) { return (mb_shape){1, 1, n, 0}; }

int64_t mb_tensor_elems_at(const mb_graph *g, int i, mb_shape s)
{
    assert(i >= 0 && i < g->n_nodes && s.rows >= 0 && s.cols >= 0);
    switch ((mb_shape_class)g->nodes[i].shape) {
    case MB_SHC_ROW:
    case MB_SHC_ROWV: return s.rows;
    case MB_SHC_COL: return s.cols;
    case MB_SHC_SCALAR: return 1;
    case MB_SHC_PART: return (s.blocks > 1 ? s.blocks : 1) * s.cols;
    case MB_SHC_GCOL: {
        int64_t inner, outer;
        mb_graph_group(g, i, &inner, &outer);
        return outer * s.cols;
    }
    default: return s.rows * s.cols;
    }
}

const char *mb_graph_dims_text(const mb_graph *g, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 0; d < g->n_dims && g->dim_size[0] > 0; d++) {
        int seen = 0;
        for (int e = 0; e < d; e++) seen |= !strcmp(g->dim_names[e], g->dim_names[d]);
        if (seen || len >= size) continue; /* [seq, seq]: once */
        len += (size_t)snprintf(buf + len, size - len, "%s%s=%lld", len ? "," : "", g->dim_names[d],
                                (long long)g->dim_size[d]);
    }
    if (len >= size) buf[0] = '\0'; /* never a cut list */
    return buf;
}

void mb_graph_group(const mb_graph *g, int i, int64_t *inner, int64_t *outer)
{
    const mb_node *nd = &g->nodes[i];
    assert(nd->shape == MB_SHC_GCOL && nd->grp_lo < nd->grp_hi && nd->grp_hi < g->n_dims);
    *inner = *outer = 1;
    for (int d = nd->grp_lo; d < nd->grp_hi; d++) *outer *= g->dim_size[d] > 0 ? g->dim_size[d] : 1;
    for (int d = nd->grp_hi; d < g->n_dims - 1; d++) *inner *= g->dim_size[d] > 0 ? g->dim_size[d] : 1;
}

int mb_graph_check_shape(const mb_graph *g, mb_shape s, mb_err *err)
{
    if (!g->has_gcol) return MB_OK;
    char full[MB_MAX_DIMS * MB_DIM_NAME_MAX];
    mb_graph_class_text(g, MB_SHC_FULL, full, sizeof full);
    int64_t rows = 1;
    for (int d = 0; d + 1 < g->n_dims; d++) {
        if (g->dim_size[d] <= 0)
            return mb_err_set(err, MB_EINPUT, "variant '%s' broadcasts a tensor within its leading dimensions "
                              "%s: give their sizes by name, --dims %s=SIZE,... (or a 'dims' line), not a "
                              "ROWSxCOLS shape", g->name, full, g->dim_names[0]);
        rows *= g->dim_size[d];
    }
    if (s.rank != 2 || s.rows != rows || s.cols != g->dim_size[g->n_dims - 1]) {
        char t[64];
        mb_shape_format(s, t, sizeof t);
        return mb_err_set(err, MB_EINPUT, "variant '%s': shape %s is not the %lldx%lld its dimensions %s are "
                          "bound to: give its sizes with --dims", g->name, t, (long long)rows,
                          (long long)g->dim_size[g->n_dims - 1], full);
    }
    return MB_OK;
}

int64_t mb_tensor_bytes_at(const mb_graph *g, int i, mb_shape s)
{
    int64_t bytes = mb_tensor_elems_at(g, i, s) * (int64_t)mb_dtype_bytes(g->nodes[i].dtype);
    assert(bytes >= 0); /* sizes hold at most 2^44 elements (MB_N_MAX) of 4 bytes */
    return bytes;
}

const char *mb_shape_class_text(mb_shape_class c, int rank)
{
    switch (c) {
    case MB_SHC_ROW: return rank == 2 ? "[rows, 1]" : "[1]";
    case MB_SHC_ROWV: return "[rows]";
    case MB_SHC_COL: return "[cols]";
    case MB_SHC_SCALAR: return "[]";
    case MB_SHC_GCOL: return "[groups of rows, cols]";
    case MB_SHC_PART: return "[blocks, cols]";
    default: return rank == 2 ? "[rows, cols]" : "[n]";
    }
}

const char *mb_graph_class_text(const mb_graph *g, mb_shape_class c, char *buf, size_t size)
{
    if (!g->n_dims) {
        snprintf(buf, size, "%s", mb_shape_class_text(c, g->rank));
        return buf;
    }
    int k = g->n_dims, from = c == MB_SHC_COL ? k - 1 : 0;
    int to = c == MB_SHC_FULL || c == MB_SHC_COL ? k : c == MB_SHC_SCALAR ? 0 : k - 1;
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = from; d < to && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", d > from ? ", " : "", g->dim_names[d]);
    if (len < size) snprintf(buf + len, size - len, "%s]", c == MB_SHC_ROW ? (k > 1 ? ", 1" : "1") : "");
    return buf;
}

/* Node i's shape as g names its dimensions: a GCOL tensor with its 1s
 * ("[batch, 1, 1, seq]"), others as mb_graph_class_text. */
static const char *node_text(const mb_graph *g, int i, char *buf, size_t size)
{
    const mb_node *nd = &g->nodes[i];
    if (nd->shape != MB_SHC_GCOL) return mb_graph_class_text(g, (mb_shape_class)nd->shape, buf, size);
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < g->n_dims && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", d ? ", " : "",
                                d == g->n_dims - 1 || (d >= nd->grp_lo && d < nd->grp_hi) ? g->dim_names[d] : "1");
    if (len < size) snprintf(buf + len, size - len, "]");
    return buf;
}

/* The named sizes of text, in g's order, into size (0: not given). */
static int dims_sizes(const mb_graph *g, const char *text, int64_t size[MB_MAX_DIMS], mb_err *err);

int mb_graph_bind_dims(mb_graph *g, const char *text, mb_shape *out, mb_err *err)
{
    int64_t size[MB_MAX_DIMS] = {0};
    int rc = mb_graph_dims_shape(g, text, out, err);
    if (!rc) rc = dims_sizes(g, text, size, err);
    if (!rc) memcpy(g->dim_size, size, sizeof size);
    return rc;
}

int mb_graph_dims_shape(const mb_graph *g, const char *text, mb_shape *out, mb_err *err)
{
    int64_t size[MB_MAX_DIMS] = {0};
    int rc = dims_sizes(g, text, size, err);
    if (rc) return rc;
    int64_t rows = 1;
    for (int d = 0; d < g->n_dims; d++) {
        if (!size[d])
            return mb_err_set(err, MB_EINPUT, "dims: no size for '%s' (give %s=SIZE)", g->dim_names[d],
                              g->dim_names[d]);
        if (d == g->n_dims - 1) break;
        if (rows > MB_N_MAX / size[d])
            return mb_err_set(err, MB_EINPUT, "dims: too large to count (at most 2^44 elements)");
        rows *= size[d];
    }
    int64_t cols = size[g->n_dims - 1];
    if (rows > MB_N_MAX / cols) return mb_err_set(err, MB_EINPUT, "dims: too large to count (at most 2^44 elements)");
    *out = mb_graph_shape_at(g, g->n_dims == 1 ? mb_shape_1d(cols) : (mb_shape){2, rows, cols, 0});
    return MB_OK;
}

static int dims_sizes(const mb_graph *g, const char *text, int64_t size[MB_MAX_DIMS], mb_err *err)
{
    if (!g->n_dims)
        return mb_err_set(err, MB_EINPUT, "variant '%s' names no dimensions (its inputs are [rows, cols] or "
                          "[n]): give --shape or --n, not --dims", g->name);
    char item[128];
    for (const char *p = text; *p;) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, ",");
        if (len >= sizeof item) len = sizeof item - 1;
        size_t kept = 0;
        for (size_t i = 0; i < len; i++) /* "batch = 8 " is batch=8 */
            if (p[i] != ' ' && p[i] != '\t') item[kept++] = p[i];
        item[kept] = '\0';
        p += strcspn(p, ",");
        if (*p == ',') p++;
        char *eq = strchr(item, '=');
        if (!eq)
            return mb_err_set(err, MB_EINPUT, "dims '%s': expected name=SIZE, e.g. %s=1024", item, g->dim_names[0]);
        *eq = '\0';
        int found = 0;
        for (int d = 0; d < g->n_dims; d++) {
            if (strcmp(g->dim_names[d], item)) continue;
            if (size[d] && !found)
                return mb_err_set(err, MB_EINPUT, "dims: '%s' given twice", item);
            mb_err e;
            if (!found && mb_size_parse(eq + 1, &size[d], &e))
                return mb_err_set(err, MB_EINPUT, "dims: %s: %s", item, e.msg);
            if (found) size[d] = size[found - 1]; /* a name used twice ([seq, seq]) */
            found = d + 1;
        }
        if (!found) {
            char all[MB_MAX_DIMS * MB_DIM_NAME_MAX];
            mb_graph_class_text(g, MB_SHC_FULL, all, sizeof all);
            return mb_err_set(err, MB_EINPUT, "dims: '%s' is not a dimension of variant '%s' (%s)", item, g->name,
                              all);
        }
    }
    return MB_OK;
}

mb_shape mb_graph_shape_at(const mb_graph *g, mb_shape s)
{
    return g->flat && s.rank == 2 ? mb_shape_1d(s.rows * s.cols) : s;
}

/* Whether g, at rank 2, is flat: a reduction over every element in it, and
 * besides it only elementwise nodes over inputs of the full shape, so that
 * every tensor is full or 0-d and which element is in which row does not
 * matter (x.sum() of a contiguous tensor, as PyTorch reduces it). */
static int flattens(const mb_graph *g)
{
    int all = 0;
    for (int i = 0; i < g->n_forward; i++) {
        const mb_node *nd = &g->nodes[i];
        if (nd->op == MB_OP_INPUT) {
            if (nd->decl && nd->decl - 1 != MB_SHC_FULL) return 0;
            continue;
        }
        if (!MB_OP_IS_ROW(nd->op)) continue;
        if (nd->dim != MB_DIM_ALL) return 0;
        all = 1;
    }
    return all;
}

/* A shape class as dimensions, right-aligned: 'R' rows, 'C' cols (or n at
 * rank 1), '1'. Returns the count. */
static int dims_of(mb_shape_class c, int rank, char d[2])
{
    switch (c) {
    case MB_SHC_FULL:
        if (rank == 1) { d[0] = 'C'; return 1; }
        d[0] = 'R', d[1] = 'C';
        return 2;
    case MB_SHC_ROW:
        if (rank == 1) { d[0] = '1'; return 1; }
        d[0] = 'R', d[1] = '1';
        return 2;
    case MB_SHC_ROWV: d[0] = 'R'; return 1;
    case MB_SHC_COL: d[0] = 'C'; return 1;
    default: return 0;
    }
}

/* NumPy broadcasting of two classes: 0 and *out, or -1 when the dimensions
 * do not match (or give a shape no class names, such as [rows, rows]). */
static int broadcast(mb_shape_class a, mb_shape_class b, int rank, mb_shape_class *out)
{
    char da[2], db[2], r[2];
    int na = dims_of(a, rank, da), nb = dims_of(b, rank, db);
    int nr = na > nb ? na : nb;
    for (int k = 0; k < nr; k++) { /* k-th dimension from the right */
        char x = k < na ? da[na - 1 - k] : '1', y = k < nb ? db[nb - 1 - k] : '1';
        if (x == y || y == '1') r[nr - 1 - k] = x;
        else if (x == '1') r[nr - 1 - k] = y;
        else return -1;
    }
    for (int c = 0; c < MB_SHC_COUNT; c++) {
        char dc[2];
        int nc = dims_of((mb_shape_class)c, rank, dc);
        if (nc == nr && (nr == 0 || (dc[0] == r[0] && (nr < 2 || dc[1] == r[1])))) {
            *out = (mb_shape_class)c;
            return 0;
        }
    }
    return -1;
}

/* "file:line:col: shapes A and B do not broadcast ..." at node nd; rowv
 * when one of them is [rows] against a last dimension of cols, which
 * PyTorch aligns as [1, rows]: a match only when rows = cols, and then a
 * value per column, not per row. */
static int broadcast_err(const mb_graph *g, const mb_node *nd, mb_err *err, const char *a, const char *b,
                         int rowv)
{
    return mb_err_set(err, MB_EINPUT, "%s:%d:%d: shapes %s and %s do not broadcast (a reduction with "
                      "keepdim=False drops the reduced dimension: keepdim=True keeps it as [rows, 1])%s",
                      g->path, nd->line, nd->col, a, b,
                      rowv ? "; PyTorch aligns a [rows] tensor with the last dimension, as [1, rows]: it "
                             "broadcasts only when rows = cols, and then element [i, j] takes its value j, "
                             "not row i's: membound does not run that form" : "");
}

/* Elementwise node nd with a GCOL operand (a or b): GCOL beside a scalar, a
 * [cols] tensor or a GCOL of the same run; the full shape beside a full or
 * a [rows, 1] tensor; else refused, naming both. */
static int gcol_join(const mb_graph *g, mb_node *nd, mb_shape_class a, mb_shape_class b, mb_err *err)
{
    const mb_node *ga = &g->nodes[nd->arg[a == MB_SHC_GCOL ? 0 : 1]];
    int other = a == MB_SHC_GCOL ? 1 : 0;
    mb_shape_class o = other ? b : a;
    const mb_node *on = o == MB_SHC_SCALAR || nd->arg[other] < 0 ? NULL : &g->nodes[nd->arg[other]];
    if (o == MB_SHC_SCALAR || o == MB_SHC_COL ||
        (o == MB_SHC_GCOL && on->grp_lo == ga->grp_lo && on->grp_hi == ga->grp_hi)) {
        nd->shape = MB_SHC_GCOL;
        nd->grp_lo = ga->grp_lo;
        nd->grp_hi = ga->grp_hi;
        return MB_OK;
    }
    if (o == MB_SHC_FULL || o == MB_SHC_ROW) {
        nd->shape = MB_SHC_FULL;
        return MB_OK;
    }
    char ta[MB_MAX_DIMS * MB_DIM_NAME_MAX], tb[sizeof ta];
    return mb_err_set(err, MB_EINPUT, "%s:%d:%d: shapes %s and %s: a broadcast of two tensors that keep different "
                      "leading dimensions (or of one with a [rows] tensor) is not modelled", g->path, nd->line,
                      nd->col, node_text(g, (int)(ga - g->nodes), ta, sizeof ta),
                      node_text(g, nd->arg[other], tb, sizeof tb));
}

/* The dimension a row op reduces must be the last one: -1, or rank - 1. */
static int check_dim(const mb_graph *g, const mb_node *nd, int rank, mb_err *err)
{
    int d = nd->dim;
    if (d < -rank || d >= rank)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s(): dim %d is out of range for a %d-D tensor "
                          "(expected in [%d, %d])%s", g->path, nd->line, nd->col, mb_op_name(nd->op), d, rank,
                          -rank, rank - 1,
                          !g->rank_declared && rank == 1
                              ? "; its inputs are [n] as written: declare them 2-D (input x [rows, cols]), or "
                                "write dim=-1, the last dimension at any --shape"
                              : "");
    if (d != -1 && d != rank - 1)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s() over dim %d is not supported: only the last "
                          "dimension is (dim=-1%s)", g->path, nd->line, nd->col, mb_op_name(nd->op), d,
                          rank == 2 ? " or dim=1" : " or dim=0");
    return MB_OK;
}

static int row_op_shape(const mb_graph *g, mb_node *nd, int rank, mb_err *err)
{
    const mb_node *x = nd->arg[0] >= 0 ? &g->nodes[nd->arg[0]] : NULL;
    char rk[MB_MAX_DIMS * MB_DIM_NAME_MAX], tx[sizeof rk];
    mb_graph_class_text(g, MB_SHC_FULL, rk, sizeof rk);
    if (!x || x->shape != MB_SHC_FULL)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s() of a %s tensor: only whole rows are reduced "
                          "(a %s tensor)", g->path, nd->line, nd->col, mb_op_name(nd->op),
                          nd->arg[0] < 0 ? "scalar" : node_text(g, nd->arg[0], tx, sizeof tx),
                          rk);
    if (nd->op == MB_OP_LAYER_NORM || nd->op == MB_OP_RMS_NORM) {
        mb_shape_class want = rank == 2 ? MB_SHC_COL : MB_SHC_FULL;
        char tw[sizeof rk];
        if (nd->arg[1] >= 0 && g->nodes[nd->arg[1]].shape != want)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s(): the weight is %s, expected %s (normalized_shape "
                              "is the last dimension)", g->path, nd->line, nd->col, mb_op_name(nd->op),
                              mb_graph_class_text(g, (mb_shape_class)g->nodes[nd->arg[1]].shape, tx, sizeof tx),
                              mb_graph_class_text(g, want, tw, sizeof tw));
        nd->shape = MB_SHC_FULL;
        return MB_OK;
    }
    if (nd->dim == MB_DIM_ALL) { /* sum(x): a 0-d tensor */
        if (rank != 1)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s() over every element of a %s tensor beside a "
                              "reduction over the last dimension, a row op or a tensor of another shape is not "
                              "modelled (a variant whose other operations are elementwise over %s tensors is); "
                              "reduce the last dimension (%s(x, -1))", g->path, nd->line, nd->col,
                              mb_op_name(nd->op), rk, rk, mb_op_name(nd->op));
        nd->shape = MB_SHC_SCALAR;
        return MB_OK;
    }
    int rc = check_dim(g, nd, rank, err);
    if (rc) return rc;
    if (mb_op_info_of(nd->op)->kind != MB_OPK_REDUCTION) nd->shape = MB_SHC_FULL;
    else if (nd->keepdim) nd->shape = MB_SHC_ROW;
    else nd->shape = rank == 2 ? MB_SHC_ROWV : MB_SHC_SCALAR;
    return MB_OK;
}

#ifndef NDEBUG
/* What a reader checks of the shapes derived for g's forward nodes: each
 * node's operands come before it (evaluation order: their shapes were
 * derived first); an elementwise node's tensor operands broadcast to its
 * shape; a row op reads a whole row and gives a row value (a reduction) or
 * a full tensor. */
static void check_shapes(const mb_graph *g, int rank)
{
    for (int i = 0; i < g->n_forward; i++) {
        const mb_node *nd = &g->nodes[i];
        for (int a = 0; a < 2; a++) assert(nd->arg[a] < i);
        if (nd->op == MB_OP_INPUT) continue;
        if (MB_OP_IS_ROW(nd->op)) {
            assert(g->nodes[nd->arg[0]].shape == MB_SHC_FULL);
            int reduces = mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION;
            assert(reduces ? nd->shape == MB_SHC_ROW || nd->shape == MB_SHC_ROWV || nd->shape == MB_SHC_SCALAR
                           : nd->shape == MB_SHC_FULL);
            continue;
        }
        int gcol = nd->shape == MB_SHC_GCOL; /* gcol_join judged it */
        for (int a = 0; a < mb_op_arity(nd->op); a++) gcol |= nd->arg[a] >= 0 && g->nodes[nd->arg[a]].shape == MB_SHC_GCOL;
        for (int a = 0; a < mb_op_arity(nd->op) && !gcol; a++) {
            mb_shape_class r;
            assert(nd->arg[a] < 0 || (broadcast((mb_shape_class)g->nodes[nd->arg[a]].shape,
                                                (mb_shape_class)nd->shape, rank, &r) == 0 && r == nd->shape));
        }
    }
}
#else
#define check_shapes(g, rank) ((void)0)
#endif

int mb_graph_derive_shapes(mb_graph *g, int rank, mb_err *err)
{
    int old_rank = g->rank, rc = MB_OK;
    g->flat = rank == 2 && flattens(g);
    if (g->flat) rank = 1; /* the n elements in a row of their own */
    g->rank = rank; /* messages name shapes at this rank */
    for (int i = 0; i < g->n_forward && !rc; i++) {
        mb_node *nd = &g->nodes[i];
        if (nd->op == MB_OP_INPUT) {
            nd->shape = nd->decl ? (unsigned char)(nd->decl - 1) : MB_SHC_FULL;
            continue;
        }
        if (MB_OP_IS_ROW(nd->op)) {
            rc = row_op_shape(g, nd, rank, err);
            continue;
        }
        mb_shape_class a = nd->arg[0] >= 0 ? (mb_shape_class)g->nodes[nd->arg[0]].shape : MB_SHC_SCALAR;
        mb_shape_class b = mb_op_arity(nd->op) == 2 && nd->arg[1] >= 0
                               ? (mb_shape_class)g->nodes[nd->arg[1]].shape : MB_SHC_SCALAR;
        if (a == MB_SHC_GCOL || b == MB_SHC_GCOL) {
            rc = gcol_join(g, nd, a, b, err);
            continue;
        }
        mb_shape_class r;
        char ta[MB_MAX_DIMS * MB_DIM_NAME_MAX], tb[MB_MAX_DIMS * MB_DIM_NAME_MAX];
        if (broadcast(a, b, rank, &r))
            rc = broadcast_err(g, nd, err, mb_graph_class_text(g, a, ta, sizeof ta),
                               mb_graph_class_text(g, b, tb, sizeof tb),
                               rank == 2 && (a == MB_SHC_ROWV) != (b == MB_SHC_ROWV) &&
                                   (a == MB_SHC_FULL || b == MB_SHC_FULL || a == MB_SHC_COL || b == MB_SHC_COL));
        else
            nd->shape = (unsigned char)r;
    }
    if (rc) {
        g->rank = old_rank;
        return rc;
    }
    /* a [cols], [rows, 1] or [rows] tensor at rank 2 is indexed by its shape
     * class: only the row executors do (the elementwise ones index every
     * tensor by element) */
    for (int i = 0; i < g->n_forward && rank == 2; i++) g->has_row_ops |= g->nodes[i].shape != MB_SHC_FULL;
    g->has_gcol = 0;
    for (int i = 0; i < g->n_forward; i++) g->has_gcol |= g->nodes[i].shape == MB_SHC_GCOL;
    check_shapes(g, rank);
    return MB_OK;
}
