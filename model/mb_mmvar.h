/* mb_mmvar.h — variants that multiply matrices ('x @ w'): a layer written in
 * the variant language, split into its GEMMs and the elementwise, reduction
 * and norm work between them ("segments", each an ordinary variant at its
 * own [rows, cols]), and costed as mb_mlp.h costs its built-in layers:
 * PyTorch eager's kernels against a plan that fuses each segment and puts
 * a one-kernel segment into the epilogue of the GEMM that feeds it,
 * forward and, with 'backward', autograd's backward. Does not run it. */
#ifndef MB_MMVAR_H
#define MB_MMVAR_H

#include "mb_base.h"
#include "mb_device.h"
#include "mb_mlp.h"
#include "mb_graph.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mb_mmvar mb_mmvar;

/* 1 when text has a '@' outside its comments: a variant for mb_mmvar_parse,
 * not for mb_parse_variant. */
int mb_mmvar_text_multiplies(const char *text);

/* Parses a variant with '@'. Its inputs name their dimensions (input x
 * [tokens, dim], input w [dim, ffn]); the right operand of '@' is an input
 * of two dimensions (a weight: [K, N]), the left one any tensor whose last
 * dimension is K, and the product has the left's leading dimensions and N,
 * as PyTorch's matmul of a tensor by a matrix. Each name is assigned once.
 * Errors are MB_EINPUT "file:line:col: ...". *out: free with mb_mmvar_free. */
int mb_mmvar_parse(const char *text, const char *file, mb_dtype default_dtype, mb_mmvar **out, mb_err *err);

/* Loads a variant file (mb_files' rules for reading it) and parses it. */
int mb_mmvar_load(const char *path, mb_dtype default_dtype, mb_mmvar **out, mb_err *err);

void mb_mmvar_free(mb_mmvar *v);

/* The variant's name ('name' line or the file's), its dimensions' names in
 * order of first declaration (*n of them, at most MB_MAX_DIMS x 2), and
 * whether it has 'backward'. */
const char *mb_mmvar_name(const mb_mmvar *v);
int mb_mmvar_backward(const mb_mmvar *v);

/* Sets the sizes of v's dimensions from "name=SIZE,..." (the 'dims' line's
 * are the default): MB_EINPUT naming a dimension missing, unknown or given
 * twice. */
int mb_mmvar_bind(mb_mmvar *v, const char *dims, mb_err *err);

/* The bound sizes as "name=SIZE,..." into buf ("" when unbound). */
const char *mb_mmvar_dims_text(const mb_mmvar *v, char *buf, size_t size);

/* v's plans on d into *out: eager and fused (supported), one checkpoint
 * option (store: n_ckpt 1). MB_EINPUT when v is not bound, a segment does
 * not parse at its shape, or d has no GEMM rate for a product's dtype. */
int mb_mmvar_estimate(const mb_mmvar *v, const mb_device *d, mb_mlp_est *out, mb_err *err);

/* ---- the variant as a program, for an executor (forward only) ---------- */

/* Its tensors, 0 .. mb_mmvar_n_tensors - 1: the label a kernel name uses,
 * 1 for an input, its elements at the bound sizes, its dtype. */
int mb_mmvar_n_tensors(const mb_mmvar *v);
const char *mb_mmvar_tensor_label(const mb_mmvar *v, int t);
int mb_mmvar_tensor_input(const mb_mmvar *v, int t);
int64_t mb_mmvar_tensor_elems(const mb_mmvar *v, int t);
mb_dtype mb_mmvar_tensor_dtype(const mb_mmvar *v, int t);

/* Step i of the forward, in an order where each follows what it reads. A
 * product: C [batch][m, n] = A [batch][m, k] op(B) [batch][k, n] (+ bias
 * [n]), tensors a, b, c, bias (-1: none), B stored [.., n, k] when trans_b,
 * name its eager kernel's ("mm x@wg", "addmm x@w.T+b": F.linear with a
 * bias, whose eager CPU kernel first copies the bias into C); a step
 * between products: g, its graph (a copy, bound to its sizes: the caller
 * frees it with mb_graph_free) at shape, and the tensor of each of its
 * inputs (in[j] for g->inputs[j]) and outputs (out[j] for g->outputs[j]).
 * MB_EINPUT when v is not bound or i is out of range. */
typedef struct mb_mmvar_step {
    int is_gemm;
    char name[48];
    char name_da[48], name_db[48], name_bias[48]; /* the backward's kernels' names (model's) */
    int a, b, c, bias, trans_b;
    int64_t m, n, k, batch;
    mb_graph *g;
    mb_shape shape;
    int n_in, n_out;
    int in[16], out[16];
} mb_mmvar_step;
int mb_mmvar_n_steps(const mb_mmvar *v);
/* 1 when tensor t needs a gradient (backward), 1 when it is an output */
int mb_mmvar_tensor_grad(const mb_mmvar *v, int t);
int mb_mmvar_is_output(const mb_mmvar *v, int t);
/* The model's name of autograd's add of a second gradient of t ("add grad
 * x"), or with add 0 of AccumulateGrad's copy of a leaf's ("copy_ grad k"). */
void mb_mmvar_grad_name(const mb_mmvar *v, int t, int add, char *buf, size_t size);
int mb_mmvar_step_at(const mb_mmvar *v, int i, mb_mmvar_step *out, mb_err *err);

#ifdef __cplusplus
}
#endif

#endif
