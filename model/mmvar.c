/* mmvar.c — the model of a variant that multiplies matrices (its front
 * end, mmvar_parse.c, splits it into GEMMs and segments).
 *
 * Plans (mb_mlp_plan's, so that `membound mlp` prints them):
 *   eager  as PyTorch runs the code as written: a GEMM per '@' (torch.mm of
 *          the leading dimensions flattened, as matmul folds a 3-D tensor
 *          by a matrix into one mm: `x @ w + b` is mm then add, not addmm,
 *          which nn.Linear's F.linear would call), each segment's eager
 *          kernels; with backward autograd's: each segment's backward
 *          kernels, per GEMM C = A W the mm for dA = dC W^T (when A needs a
 *          gradient) and the mm for dW = A^T dC (when W does), and an add
 *          for every gradient a tensor receives beyond its first (a tensor
 *          read by two GEMMs or by a GEMM and a segment: autograd's
 *          accumulation, one add kernel each).
 *   fused  each segment one kernel (its fused plan; with backward its
 *          recompute plan: one forward kernel saving its inputs, one
 *          backward kernel); a segment of one kernel without row operations
 *          whose only reads of GEMM outputs come from one GEMM, or from two
 *          that share their left operand and their weight's shape, runs in
 *          that GEMM's epilogue (two: one GEMM over the concatenated
 *          weights, CUTLASS's dual GEMM, as mlp.c's gated layers): the GEMM
 *          writes the segment's outputs, and its own output only where
 *          something else reads it or the segment's plan saves it (an aux
 *          output, cuBLASLt's GELU_AUX). The backward is eager's GEMMs and
 *          adds with the segments' recompute kernels; its epilogues
 *          (cuBLASLt's DGELU_BGRAD, BGRADB) are mlp.c's layers', not
 *          derived here.
 * Saved (store): what each GEMM saves (A when W needs a gradient) and what
 * each segment's plan saves; inputs used as weights, and inputs of one
 * dimension beside inputs of more (biases, a norm's weight), are
 * parameters and not counted. The GEMMs are gemm.c's; the first kernel
 * pays the device's floor (mb_mlp_totals). */
#include "mmvar_int.h"
#include "mb_gemm.h"
#include "mb_mlp.h"
#include "mb_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the model ---------------------------------------------------------- */

typedef struct ctx {
    const mb_mmvar *v;
    const mb_device *d;
    mb_mlp_est *e;
    int cpu;
    int hidden;          /* the widest product: tensors of its dimensions are "hidden" */
    double *key;         /* per kernel of the plan being built: its place in
                            PyTorch's order (key[MB_MLP_MAX_KERNELS]: the one a
                            kernel appended next takes) */
} ctx;

/* appends a kernel to p at the current key */
static mb_mlp_kernel *add_k(const ctx *c, mb_mlp_plan *p, const char *name, int backward)
{
    c->key[p->n_kernels] = c->key[MB_MLP_MAX_KERNELS];
    return mb_mlp_add_kernel(p, name, backward, 0);
}

/* 1 when n names (dims) are the hidden tensor's dimensions */
static int is_hidden(const ctx *c, const char (*dims)[MB_DIM_NAME_MAX], int n)
{
    const tensor *H = &c->v->t[c->hidden];
    if (n != H->nd) return 0;
    for (int d = 0; d < n; d++)
        if (strcmp(dims[d], H->dim[d])) return 0;
    return 1;
}

static int t_hidden(const ctx *c, int t) { return t >= 0 && is_hidden(c, c->v->t[t].dim, c->v->t[t].nd); }

static int64_t dim_size(const mb_mmvar *v, const char *name)
{
    for (int d = 0; d < v->n_dims; d++)
        if (!strcmp(v->dim_names[d], name)) return v->dim_size[d];
    return 1; /* "1" */
}

static double elems(const mb_mmvar *v, const tensor *T)
{
    double n = 1;
    for (int d = 0; d < T->nd; d++) n *= (double)dim_size(v, T->dim[d]);
    return n;
}

static double bytes_of(const mb_mmvar *v, const tensor *T) { return elems(v, T) * (double)mb_dtype_bytes(T->dtype); }

static int64_t rows_of(const mb_mmvar *v, const tensor *T)
{
    int64_t r = 1;
    for (int d = 0; d + 1 < T->nd; d++) r *= dim_size(v, T->dim[d]);
    return r;
}

/* the segment graph's sizes as --dims text */
static const char *seg_dims(const mb_mmvar *v, const mb_graph *g, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int d = 0; d < g->n_dims && len < size; d++) {
        int seen = 0;
        for (int e = 0; e < d; e++) seen |= !strcmp(g->dim_names[e], g->dim_names[d]);
        if (!seen)
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%lld", len ? "," : "", g->dim_names[d],
                                    (long long)dim_size(v, g->dim_names[d]));
    }
    return buf;
}

typedef enum part { PART_FWD, PART_BWD } part;

static void add_saved_once(mb_mlp_plan *p, const char *name, double bytes)
{
    for (int s = 0; s < p->n_saved; s++)
        if (!strcmp(p->saved[s].name, name)) return;
    mb_mlp_add_saved(p, name, bytes);
}

/* Graph src (a segment's; in_map: the tensor of each of its inputs, NULL
 * for autograd's add) planned as kind on the device at its sizes: its
 * kernels of part appended to p as part says (bwd_as: 1 marks them
 * backward whatever they are), and with saved its plan's saved tensors;
 * *n_fwd: how many forward kernels the plan has, *row_ops: 1 when src has a
 * row operation. */
static int cost_graph(const ctx *c, mb_mlp_plan *p, const mb_graph *src, const int *in_map, const int *seq,
                      mb_plan_kind kind,
                      part pt, int bwd_as, int saved, const char *only, int *n_fwd, int *row_ops, mb_err *err)
{
    const mb_mmvar *v = c->v;
    mb_graph *g = mb_graph_clone(src);
    if (!g) return mb_err_set(err, MB_ERUN, "out of memory");
    char dims[512];
    mb_shape sh;
    mb_plan *pl = NULL;
    mb_estimate est;
    memset(&est, 0, sizeof est);
    int rc = mb_graph_bind_dims(g, seg_dims(v, g, dims, sizeof dims), &sh, err);
    if (!rc) rc = mb_plan_build_on(g, kind, c->d, &pl, err);
    if (!rc) rc = mb_estimate_plan_shape(pl, sh, c->d, &est, err);
    const double lo = c->d->launch_overhead_us * 1e-6;
    if (n_fwd) *n_fwd = 0;
    if (row_ops) {
        *row_ops = 0;
        for (int i = 0; i < g->n_forward; i++) *row_ops |= MB_OP_IS_ROW(g->nodes[i].op);
    }
    for (int i = 0; !rc && i < pl->n_kernels; i++) {
        const mb_kernel *K = &pl->kernels[i];
        const mb_cost *kc = &est.per_kernel[i];
        if (n_fwd && !K->is_backward) (*n_fwd)++;
        if ((pt == PART_FWD) == !!K->is_backward || (only && strcmp(K->name, only))) continue;
        if (p->n_kernels >= MB_MLP_MAX_KERNELS) {
            rc = mb_err_set(err, MB_EINPUT, "%s: more than %d kernels in a plan", v->path, MB_MLP_MAX_KERNELS);
            break;
        }
        mb_mlp_kernel *mk = add_k(c, p, K->name, pt == PART_BWD || bwd_as);
        if (seq) { /* a segment's kernel: where its operation is in PyTorch's order */
            double key = -1;
            for (int j = 0; j < K->n_nodes; j++) { /* the plan's graph: a recompute plan's has clones too */
                int nd = K->nodes[j], o = nd < pl->g->n_forward ? nd : pl->g->nodes[nd].origin;
                if (o >= 0 && o < g->n_forward && seq[o] && (key < 0 || seq[o] < key)) key = seq[o];
            }
            /* autograd's add of two gradients: after the kernel before it */
            c->key[p->n_kernels - 1] = key >= 0 ? key : p->n_kernels > 1 ? c->key[p->n_kernels - 2] : 0;
        }
        mk->flops = kc->flops;
        mk->dram_read_bytes = (double)kc->dram_read_bytes;
        mk->dram_write_bytes = (double)kc->dram_write_bytes;
        for (int w = 0; w < K->n_writes; w++)
            if (pl->g->nodes[K->writes[w]].shape == MB_SHC_FULL && is_hidden(c, g->dim_names, g->n_dims))
                mk->hidden_write_bytes += (double)mb_tensor_bytes_at(pl->g, K->writes[w], sh);
        mk->compute_s = kc->compute_s;
        mk->mem_s = kc->mem_s;
        /* within the plan a kernel pays the launch, not the first kernel's floor */
        mk->launch_s = kc->launch_s > lo ? lo : kc->launch_s;
        mk->time_s = kc->time_s - (kc->launch_s - mk->launch_s);
        mk->bound = mb_bound_of(mk->launch_s, mk->mem_s, mk->compute_s);
    }
    for (int i = 0; !rc && saved && g->has_backward && i < pl->n_saved; i++) {
        int node = pl->saved[i];
        const mb_node *nd = &pl->g->nodes[node];
        char nm[MB_MLP_NAME_MAX];
        int in = -1;
        for (int j = 0; in_map && j < g->n_inputs; j++)
            if (g->inputs[j] == node) in = in_map[j];
        if (in >= 0 && v->t[in].input && v->t[in].param) continue; /* a parameter */
        int arg_in = -1;
        for (int j = 0; in_map && nd->arg[0] >= 0 && j < g->n_inputs; j++)
            if (g->inputs[j] == nd->arg[0]) arg_in = in_map[j];
        if (in >= 0) snprintf(nm, sizeof nm, "%s", mmv_label(&v->t[in]));
        else if (nd->name[0] && mmv_find(v, nd->name) >= 0) snprintf(nm, sizeof nm, "%s", mmv_label(&v->t[mmv_find(v, nd->name)]));
        else if (arg_in >= 0) snprintf(nm, sizeof nm, "%s(%.40s)", mb_op_name(nd->op), mmv_label(&v->t[arg_in]));
        else if (nd->arg[0] >= 0 && pl->g->nodes[nd->arg[0]].name[0])
            snprintf(nm, sizeof nm, "%s(%s)", mb_op_name(nd->op), pl->g->nodes[nd->arg[0]].name);
        else snprintf(nm, sizeof nm, "%s", mb_op_name(nd->op));
        add_saved_once(p, nm, (double)mb_tensor_bytes_at(pl->g, node, sh));
    }
    mb_estimate_free(&est);
    mb_plan_free(pl);
    mb_graph_free(g);
    return rc;
}

static int segment(const ctx *c, mb_mlp_plan *p, int k, mb_plan_kind kind, part pt, int *n_fwd, int *row_ops,
                   mb_err *err)
{
    const seg *S = &c->v->sg[k];
    return cost_graph(c, p, S->g, S->in, S->seq, kind, pt, 0, pt == PART_FWD, NULL, n_fwd, row_ops, err);
}

/* the product's sizes: C [batch, m, n] = A [batch, m, k] B [batch, k, n];
 * an mm folds A's leading dimensions into m */
static int64_t gm_k(const mb_mmvar *v, const gemm *g) { return dim_size(v, g->k); }
static int64_t gm_n(const mb_mmvar *v, const gemm *g) { return dim_size(v, g->n); }
static int64_t gm_m(const mb_mmvar *v, const gemm *g)
{
    const tensor *A = &v->t[g->a];
    return g->batched ? dim_size(v, A->dim[A->nd - 2]) : rows_of(v, A);
}
static int64_t gm_batch(const mb_mmvar *v, const gemm *g)
{
    const tensor *A = &v->t[g->a];
    int64_t b = 1;
    for (int d = 0; g->batched && d + 2 < A->nd; d++) b *= dim_size(v, A->dim[d]);
    return b;
}

/* G(m, n, kk) x batch in dtype through gemm.c: a kernel of p (writes: the
 * tensor whose shape it writes, for the hidden bytes). */
static int gemm_kernel(const ctx *c, mb_mlp_plan *p, const char *name, int bwd, int64_t m, int64_t n, int64_t kk,
                       int64_t batch, mb_dtype dt, int writes, mb_mlp_kernel **out, mb_err *err)
{
    if (p->n_kernels >= MB_MLP_MAX_KERNELS)
        return mb_err_set(err, MB_EINPUT, "%s: more than %d kernels in a plan", c->v->path, MB_MLP_MAX_KERNELS);
    mb_gemm g = {m, n, kk, batch, dt, 0, 0};
    mb_gemm_est ge;
    int rc = mb_gemm_estimate(&g, c->d, &ge, err);
    if (rc) return rc;
    mb_mlp_kernel *k = add_k(c, p, name, bwd);
    k->gemm = 1;
    k->flops = ge.flops;
    k->dram_read_bytes = ge.dram_read_bytes;
    k->dram_write_bytes = ge.dram_write_bytes;
    /* the tensor's bytes (a CPU's GEMM writes C more than once: gemm.c) */
    k->hidden_write_bytes = t_hidden(c, writes) ? elems(c->v, &c->v->t[writes]) * (double)mb_dtype_bytes(dt) : 0;
    k->compute_s = ge.compute_s;
    k->launch_s = ge.launch_s;
    mb_mlp_retime(k, c->e->bandwidth_gbs, c->cpu);
    if (out) *out = k;
    return MB_OK;
}

/* what autograd keeps for the product's backward: A when B needs a
 * gradient, B when A does (a weight is a parameter: not counted) */
static void gemm_saves(const ctx *c, mb_mlp_plan *p, const gemm *g)
{
    const mb_mmvar *v = c->v;
    const tensor *A = &v->t[g->a], *B = &v->t[g->w];
    if (!v->backward) return;
    if (B->grad && !(A->input && A->param)) add_saved_once(p, mmv_label(A), bytes_of(v, A));
    if (A->grad && !(B->input && B->param)) add_saved_once(p, mmv_label(B), bytes_of(v, B));
}

/* "mm x@w", "bmm q@k.T", "addmm x@w.T+b" */
/* s cut to max characters ("..": cut), into buf; returns buf */
static const char *fit(const char *s, size_t max, char *buf, size_t size)
{
    if (strlen(s) <= max) snprintf(buf, size, "%s", s);
    else snprintf(buf, size, "%.*s..", (int)(max - 2), s);
    return buf;
}

/* aten's name of the product: addmm for F.linear with a bias, bmm, mm */
static const char *gemm_op(const gemm *g) { return g->linear && g->bias >= 0 ? "addmm" : g->batched ? "bmm" : "mm"; }

/* "mm x@w", "bmm q@k.T", "addmm x@w.T+b": within a table's 30 columns */
static void gemm_name(const mb_mmvar *v, const gemm *g, const char *suffix, char *buf, size_t size)
{
    char a[64], fa[32], fb[32], fc[32];
    mmv_operand(&v->t[g->a], "", a, sizeof a);
    snprintf(buf, size, "%s %s@%s%s%s%s%s", gemm_op(g), fit(a, 12, fa, sizeof fa), fit(v->t[g->w].name, 8, fb, sizeof fb),
             g->tb ? ".T" : "", g->bias >= 0 ? "+" : "", g->bias >= 0 ? fit(v->t[g->bias].name, 4, fc, sizeof fc) : "",
             suffix);
}

/* the backward's products of g: dA = dC B^T ("mm dy@w^T"), or with b
 * dB = A^T dC ("mm x^T@dy") */
static void grad_gemm_name(const mb_mmvar *v, const gemm *g, int b, char *buf, size_t size)
{
    const tensor *A = &v->t[g->a], *B = &v->t[g->w], *O = &v->t[g->out];
    const char *op = g->batched ? "bmm" : "mm";
    char o1[64], o2[64], f1[32], f2[32];
    mmv_operand(O, "d", o2, sizeof o2);
    if (!b)
        snprintf(buf, size, "%s %s@%s%s", op, fit(o2, 14, f1, sizeof f1), fit(B->name, 8, f2, sizeof f2),
                 g->tb ? "" : "^T");
    else
        snprintf(buf, size, "%s %s^T@%s", op, fit(mmv_operand(A, "", o1, sizeof o1), 11, f1, sizeof f1),
                 fit(o2, 12, f2, sizeof f2));
}

/* GEMM gi as PyTorch runs it: mm, bmm, or addmm (F.linear with a bias:
 * on a GPU cuBLASLt's bias epilogue, the bias read in the GEMM; on a CPU
 * the bias copied into the output first and read back, beta 1: mlp.c's
 * rule); fused: the bias in the epilogue everywhere */
static int plain_gemm(const ctx *c, mb_mlp_plan *p, int gi, int fused, mb_err *err)
{
    const mb_mmvar *v = c->v;
    const gemm *g = &v->gm[gi];
    const tensor *O = &v->t[g->out];
    char nm[MB_MLP_NAME_MAX];
    gemm_name(v, g, "", nm, sizeof nm);
    const double bias = g->bias >= 0 ? bytes_of(v, &v->t[g->bias]) : 0, out = bytes_of(v, O);
    const int copy = bias > 0 && c->cpu && !fused;
    if (copy) {
        if (p->n_kernels >= MB_MLP_MAX_KERNELS)
            return mb_err_set(err, MB_EINPUT, "%s: more than %d kernels in a plan", v->path, MB_MLP_MAX_KERNELS);
        mb_mlp_kernel *k = add_k(c, p, "addmm bias copy", 0);
        k->dram_read_bytes = bias;
        k->dram_write_bytes = out;
        k->hidden_write_bytes = t_hidden(c, g->out) ? out : 0;
        k->launch_s = c->d->launch_overhead_us * 1e-6;
        mb_mlp_retime(k, c->e->bandwidth_gbs, c->cpu);
    }
    mb_mlp_kernel *k = NULL;
    int rc = gemm_kernel(c, p, nm, 0, gm_m(v, g), gm_n(v, g), gm_k(v, g), gm_batch(v, g), O->dtype, g->out, &k, err);
    if (rc) return rc;
    if (bias > 0) {
        k->dram_read_bytes += copy ? out : bias;
        mb_mlp_retime(k, c->e->bandwidth_gbs, c->cpu);
    }
    gemm_saves(c, p, g);
    return MB_OK;
}

/* 1 when tensor t is read by anything but segment k (a GEMM, another
 * segment) or is an output */
static int read_elsewhere(const mb_mmvar *v, int t, int k)
{
    for (int o = 0; o < v->n_outputs; o++)
        if (v->outputs[o] == t) return 1;
    for (int g = 0; g < v->n_g; g++)
        if (v->gm[g].a == t || v->gm[g].w == t) return 1;
    for (int i = 0; i < v->n_s; i++)
        if (v->s[i].seg != k && mmv_reads(&v->s[i], &v->t[t])) return 1;
    return 0;
}

/* The GEMMs whose epilogue segment k can run in (fused plan): *g1 (and *g2
 * for a dual GEMM), -1 none; a segment with a row operation runs in none
 * (a norm needs whole rows, a GEMM's tile a few hundred columns). */
static void epilogue_of(const mb_mmvar *v, int k, int *g1, int *g2)
{
    const seg *S = &v->sg[k];
    *g1 = *g2 = -1;
    for (int i = 0; i < S->g->n_forward; i++)
        if (MB_OP_IS_ROW(S->g->nodes[i].op)) return;
    for (int i = 0; i < S->n_in; i++) {
        const tensor *T = &v->t[S->in[i]];
        if (T->gemm < 0) continue;
        if (read_elsewhere(v, S->in[i], k) || *g2 >= 0) {
            *g1 = *g2 = -1;
            return;
        }
        *(*g1 < 0 ? g1 : g2) = T->gemm;
    }
    if (*g2 >= 0) { /* two products of one A by weights of one shape: one GEMM over both */
        const gemm *a = &v->gm[*g1], *b = &v->gm[*g2];
        const tensor *wa = &v->t[a->w], *wb = &v->t[b->w];
        if (a->a != b->a || a->batched || b->batched || !wa->param || !wb->param || strcmp(a->k, b->k) ||
            strcmp(a->n, b->n) || wa->dtype != wb->dtype || a->linear != b->linear)
            *g1 = *g2 = -1;
    }
}

/* "add grad x", "copy_ grad k" */
static void grad_name(const mb_mmvar *v, int t, int add, char *buf, size_t size)
{
    char f[32];
    snprintf(buf, size, "%s grad %s", add ? "add" : "copy_", fit(mmv_label(&v->t[t]), add ? 21 : 19, f, sizeof f));
}

/* One of autograd's own kernels at tensor t's shape and dtype, costed as
 * the language costs it: AccumulateGrad's copy of a leaf's gradient into
 * its layout ("copy_ grad t": y = copy(p)), or the add of a second gradient
 * ("add grad t": y = p + q). */
static int grad_kernel(const ctx *c, mb_mlp_plan *p, int t, int add, mb_err *err)
{
    const tensor *T = &c->v->t[t];
    const char *dt = mb_dtype_name(T->dtype);
    char text[600], dims[256];
    mmv_dims_str(T, dims, sizeof dims);
    if (add) snprintf(text, sizeof text, "input p %s %s\ninput q %s %s\ny = p + q\n", dims, dt, dims, dt);
    else snprintf(text, sizeof text, "input p %s %s\ny = copy(p)\n", dims, dt);
    mb_graph *g = NULL;
    int rc = mb_parse_variant(text, "<autograd>", T->dtype, &g, err), n0 = p->n_kernels;
    if (!rc) rc = cost_graph(c, p, g, NULL, NULL, MB_PLAN_EAGER, PART_FWD, 1, 0, NULL, NULL, NULL, err);
    if (!rc && p->n_kernels > n0) grad_name(c->v, t, add, p->k[n0].name, sizeof p->k[n0].name);
    mb_graph_free(g);
    return rc;
}

/* Segment k in the epilogue of GEMM g1 (and g2: one GEMM over both
 * weights): the GEMM's reads, the segment's other reads and its writes,
 * and the products its plan saves written as aux. *done 0 when its plan is
 * not one kernel (then nothing is appended). */
static int epilogue(const ctx *c, mb_mlp_plan *p, int k, int g1, int g2, int *done, mb_err *err)
{
    const mb_mmvar *v = c->v;
    const seg *S = &v->sg[k];
    mb_plan_kind kind = S->backward ? MB_PLAN_RECOMPUTE : MB_PLAN_FUSED;
    mb_mlp_plan *scratch = calloc(1, sizeof *scratch);
    if (!scratch) return mb_err_set(err, MB_ERUN, "out of memory");
    int nf = 0, rc = segment(c, scratch, k, kind, PART_FWD, &nf, NULL, err);
    *done = !rc && nf == 1;
    if (!*done) {
        free(scratch);
        return rc;
    }
    const gemm *a = &v->gm[g1];
    const tensor *W = &v->t[a->w];
    char nm[MB_MLP_NAME_MAX], an[64];
    if (g2 >= 0)
    {
        char f1[32], f2[32], f3[32];
        snprintf(nm, sizeof nm, "%s %s@[%s|%s] +epi", gemm_op(a), fit(mmv_operand(&v->t[a->a], "", an, sizeof an), 8, f1, sizeof f1),
                 fit(W->name, 6, f2, sizeof f2), fit(v->t[v->gm[g2].w].name, 6, f3, sizeof f3));
    }
    else gemm_name(v, a, " +epi", nm, sizeof nm);
    mb_mlp_kernel *kk = NULL;
    rc = gemm_kernel(c, p, nm, 0, gm_m(v, a), gm_n(v, a) * (g2 >= 0 ? 2 : 1), gm_k(v, a), gm_batch(v, a),
                     v->t[a->out].dtype, -1, &kk, err);
    if (!rc) {
        for (int gg = 0; gg < 2; gg++) /* biases read in the epilogue */
            if ((gg ? g2 : g1) >= 0 && v->gm[gg ? g2 : g1].bias >= 0)
                kk->dram_read_bytes += bytes_of(v, &v->t[v->gm[gg ? g2 : g1].bias]);
        const mb_mlp_kernel *e = &scratch->k[0];
        double prod = 0, aux = 0;
        for (int gg = 0; gg < 2; gg++) {
            int gi = gg ? g2 : g1;
            if (gi < 0) continue;
            const tensor *O = &v->t[v->gm[gi].out];
            prod += bytes_of(v, O);
            for (int s = 0; s < scratch->n_saved; s++)
                if (!strcmp(scratch->saved[s].name, mmv_label(O))) aux += bytes_of(v, O);
        }
        kk->dram_read_bytes += fmax(0, e->dram_read_bytes - prod);
        /* the segment's writes for the product's last (a CPU's GEMM writes C
         * once per K block before it: gemm.c), the aux beside them */
        kk->dram_write_bytes = fmax(0, kk->dram_write_bytes - prod) + e->dram_write_bytes + aux;
        kk->hidden_write_bytes = e->hidden_write_bytes + (t_hidden(c, a->out) ? aux : 0);
        if (c->cpu) kk->compute_s += e->compute_s; /* the epilogue's arithmetic on the same cores */
        mb_mlp_retime(kk, c->e->bandwidth_gbs, c->cpu);
        gemm_saves(c, p, a);
        if (g2 >= 0) gemm_saves(c, p, &v->gm[g2]);
        for (int s = 0; s < scratch->n_saved; s++) add_saved_once(p, scratch->saved[s].name, scratch->saved[s].bytes);
    }
    free(scratch);
    return rc;
}

static void bias_grad_name(const mb_mmvar *v, const gemm *g, char *buf, size_t size)
{
    char f1[32], f2[32];
    snprintf(buf, size, "sum d(%s) (%s)", fit(mmv_label(&v->t[g->out]), 14, f1, sizeof f1),
             fit(v->t[g->bias].name, 8, f2, sizeof f2));
}

/* a bias's gradient, dC summed over its rows: the reduce kernel PyTorch's
 * autograd runs (sum_to of addmm's self gradient), the language's colsum
 * of y = g + b */
static int bias_grad(const ctx *c, mb_mlp_plan *p, const gemm *g, mb_err *err)
{
    const mb_mmvar *v = c->v;
    const tensor *O = &v->t[g->out], *Bi = &v->t[g->bias];
    char text[600], dt[256];
    snprintf(text, sizeof text, "name bias_grad\ninput g %s %s\ninput b [%s] %s\ny = g + b\noutput y\nbackward\n",
             mmv_dims_str(O, dt, sizeof dt), mb_dtype_name(O->dtype), Bi->dim[0], mb_dtype_name(Bi->dtype));
    mb_graph *gr = NULL;
    int rc = mb_parse_variant(text, "<bias grad>", O->dtype, &gr, err), n0 = p->n_kernels;
    if (!rc) rc = cost_graph(c, p, gr, NULL, NULL, MB_PLAN_EAGER, PART_BWD, 1, 0, "colsum", NULL, NULL, err);
    if (!rc && p->n_kernels > n0) bias_grad_name(v, g, p->k[n0].name, sizeof p->k[n0].name);
    mb_graph_free(gr);
    return rc;
}

static int forward(const ctx *c, mb_mlp_plan *p, int fused, const char *in_epilogue, mb_err *err)
{
    const mb_mmvar *v = c->v;
    int rc = MB_OK;
    for (int i = 0; i < v->n_it && !rc; i++) {
        step it = v->it[i];
        if (it.is_gemm) {
            c->key[MB_MLP_MAX_KERNELS] = v->gm[it.index].seq;
            if (!in_epilogue[it.index]) rc = plain_gemm(c, p, it.index, fused, err); /* else with its segment */
            continue;
        }
        const seg *S = &v->sg[it.index];
        int g1 = -1, g2 = -1, done = 0;
        if (fused) epilogue_of(v, it.index, &g1, &g2);
        if (g1 >= 0 && (rc = epilogue(c, p, it.index, g1, g2, &done, err))) return rc;
        if (done) continue;
        for (int gg = 0; gg < 2 && !rc; gg++) /* not an epilogue after all: the GEMMs alone first */
            if ((gg ? g2 : g1) >= 0) {
                c->key[MB_MLP_MAX_KERNELS] = v->gm[gg ? g2 : g1].seq;
                rc = plain_gemm(c, p, gg ? g2 : g1, fused, err);
            }
        if (!rc)
            rc = segment(c, p, it.index, !fused ? MB_PLAN_EAGER : S->backward ? MB_PLAN_RECOMPUTE : MB_PLAN_FUSED,
                         PART_FWD, NULL, NULL, err);
    }
    return rc;
}

/* the gradients each tensor receives: from segments reading it and GEMMs
 * reading it; the second and later ones are added */
static int contribute(const ctx *c, mb_mlp_plan *p, int *got, int t, mb_err *err)
{
    if (!c->v->t[t].grad) return MB_OK;
    if (got[t]++ == 0) return MB_OK;
    return grad_kernel(c, p, t, 1, err);
}

static int backward(const ctx *c, mb_mlp_plan *p, int fused, mb_err *err)
{
    const mb_mmvar *v = c->v;
    int got[MAX_T] = {0}, rc = MB_OK;
    for (int i = v->n_it - 1; i >= 0 && !rc; i--) {
        step it = v->it[i];
        char nm[MB_MLP_NAME_MAX];
        if (it.is_gemm) {
            const gemm *g = &v->gm[it.index];
            const tensor *A = &v->t[g->a], *B = &v->t[g->w], *O = &v->t[g->out];
            if (!O->grad) continue;
            const int64_t m = gm_m(v, g), n = gm_n(v, g), k = gm_k(v, g), bt = gm_batch(v, g);
            c->key[MB_MLP_MAX_KERNELS] = g->seq;
            /* autograd's node for the product computes its operands' gradients,
             * then each joins what its tensor received before (an add) */
            if (A->grad) { /* dA = dC B^T */
                grad_gemm_name(v, g, 0, nm, sizeof nm);
                if ((rc = gemm_kernel(c, p, nm, 1, m, k, n, bt, O->dtype, g->a, NULL, err))) break;
            }
            if (B->grad) { /* dB = A^T dC (its transpose, for a transposed view: the same product) */
                grad_gemm_name(v, g, 1, nm, sizeof nm);
                if ((rc = gemm_kernel(c, p, nm, 1, k, n, m, bt, O->dtype, g->w, NULL, err))) break;
            }
            if (g->bias >= 0 && v->t[g->bias].grad && (rc = bias_grad(c, p, g, err))) break; /* dC summed over rows */
            c->key[MB_MLP_MAX_KERNELS] = g->seq - 0.5;
            /* bmm's gradient of a transposed B is B's transpose, not in its
             * layout: AccumulateGrad copies it for a leaf (mm's backward
             * computes it in the layout of B: none) */
            if (g->batched && g->tb && B->input && B->grad && (rc = grad_kernel(c, p, g->w, 0, err))) break;
            if ((rc = contribute(c, p, got, g->a, err)) || (rc = contribute(c, p, got, g->w, err))) break;
            if (g->bias >= 0) rc = contribute(c, p, got, g->bias, err);
            continue;
        }
        const seg *S = &v->sg[it.index];
        if (!S->backward) continue;
        int n0 = p->n_kernels;
        rc = segment(c, p, it.index, fused ? MB_PLAN_RECOMPUTE : MB_PLAN_EAGER, PART_BWD, NULL, NULL, err);
        double last = n0 < p->n_kernels ? c->key[n0] : 0; /* the add after the segment's last kernel */
        for (int j = n0; j < p->n_kernels; j++) last = c->key[j] < last ? c->key[j] : last;
        c->key[MB_MLP_MAX_KERNELS] = last - 0.5;
        for (int j = 0; j < S->n_in && !rc; j++) rc = contribute(c, p, got, S->in[j], err);
    }
    return rc;
}

/* Kernels [from, to) of p in the order of their keys (ascending, or
 * descending for the backward: autograd's engine runs the ready node
 * created last first, which, each node's inputs made before it, is every
 * node in the reverse of the order they were made), stable. */
static void sort_kernels(const ctx *c, mb_mlp_plan *p, int from, int to, int descending)
{
    for (int i = from + 1; i < to; i++) {
        mb_mlp_kernel k = p->k[i];
        double key = c->key[i];
        int j = i;
        while (j > from && (descending ? c->key[j - 1] < key : c->key[j - 1] > key)) {
            p->k[j] = p->k[j - 1];
            c->key[j] = c->key[j - 1];
            j--;
        }
        p->k[j] = k;
        c->key[j] = key;
    }
}

int mb_mmvar_estimate(const mb_mmvar *v, const mb_device *d, mb_mlp_est *out, mb_err *err)
{
    if (v->n_dims && v->dim_size[0] <= 0) {
        char all[512];
        size_t l = 0;
        all[0] = '\0';
        for (int e = 0; e < v->n_dims && l < sizeof all; e++)
            l += (size_t)snprintf(all + l, sizeof all - l, "%s%s=SIZE", e ? "," : "", v->dim_names[e]);
        return mb_err_set(err, MB_EINPUT, "variant '%s' needs its sizes: --dims %s (or a 'dims' line)", v->name, all);
    }
    mb_mlp_est *e = calloc(1, sizeof *e);
    if (!e) return mb_err_set(err, MB_ERUN, "out of memory");
    const mb_dtype dt = v->t[v->gm[0].out].dtype;
    e->peak_flops_s = mb_gemm_peak_flops(d, dt, &e->peak_key);
    if (!(e->peak_flops_s > 0)) {
        const char *key = e->peak_key;
        free(e);
        return mb_err_set(err, MB_EINPUT, "device '%s' has no %s GEMM rate (%s is 0)", d->name, mb_dtype_name(dt), key);
    }
    e->bandwidth_gbs = mb_device_bandwidth_gbs(d, &e->bandwidth_source);
    double key[MB_MLP_MAX_KERNELS + 1] = {0};
    ctx c = {v, d, e, !strcmp(d->kind, "cpu"), v->gm[0].out, key};
    for (int i = 0; i < v->n_g; i++) {
        const gemm *g = &v->gm[i];
        const tensor *O = &v->t[g->out], *A = &v->t[g->a], *W = &v->t[g->w];
        double f = 2.0 * (double)gm_m(v, g) * (double)gm_n(v, g) * (double)gm_k(v, g) * (double)gm_batch(v, g);
        int mult = 1 + (v->backward && O->grad ? A->grad + W->grad : 0);
        e->gemm_flops += f * mult;
        if (elems(v, O) > elems(v, &v->t[c.hidden])) c.hidden = g->out;
        if (c.hidden == g->out) {
            e->hidden_bytes = bytes_of(v, O);
        }
    }
    for (int i = 0; i < v->n_t; i++)
        if (v->t[i].input && v->t[i].param) e->weight_bytes += bytes_of(v, &v->t[i]);
    e->n_ckpt = 1;
    int rc = MB_OK;
    for (int p = 0; p < MB_MLP_N_PLANS && !rc; p++) {
        e->supported[p] = p == MB_MLP_EAGER || p == MB_MLP_FUSED;
        if (!e->supported[p]) continue;
        mb_mlp_plan *pl = &e->plan[p][MB_MLP_STORE];
        pl->id = (mb_mlp_plan_id)p;
        pl->ckpt = MB_MLP_STORE;
        pl->valid = 1;
        char in_epi[MAX_GEMMS] = {0};
        for (int k = 0; p == MB_MLP_FUSED && k < v->n_sg; k++) { /* GEMMs that run with their segment */
            int g1, g2;
            epilogue_of(v, k, &g1, &g2);
            if (g1 >= 0) in_epi[g1] = 1;
            if (g2 >= 0) in_epi[g2] = 1;
        }
        /* eager in PyTorch's order: the forward's operations as Python
         * evaluates them, the backward as autograd's engine runs them */
        rc = forward(&c, pl, p == MB_MLP_FUSED, in_epi, err);
        int n_fwd = pl->n_kernels;
        if (!rc && p == MB_MLP_EAGER) sort_kernels(&c, pl, 0, n_fwd, 0);
        if (!rc && v->backward) rc = backward(&c, pl, p == MB_MLP_FUSED, err);
        if (!rc && p == MB_MLP_EAGER) sort_kernels(&c, pl, n_fwd, pl->n_kernels, 1);
        if (!rc) mb_mlp_totals(d, pl);
    }
    if (!rc) *out = *e;
    free(e);
    return rc;
}

/* ---- the program, for an executor --------------------------------------- */

int mb_mmvar_n_tensors(const mb_mmvar *v) { return v->n_t; }
const char *mb_mmvar_tensor_label(const mb_mmvar *v, int t) { return mmv_label(&v->t[t]); }
int mb_mmvar_tensor_input(const mb_mmvar *v, int t) { return v->t[t].input; }
int64_t mb_mmvar_tensor_elems(const mb_mmvar *v, int t) { return (int64_t)elems(v, &v->t[t]); }
mb_dtype mb_mmvar_tensor_dtype(const mb_mmvar *v, int t) { return v->t[t].dtype; }
int mb_mmvar_n_steps(const mb_mmvar *v) { return v->n_it; }

int mb_mmvar_step_at(const mb_mmvar *v, int i, mb_mmvar_step *out, mb_err *err)
{
    if (i < 0 || i >= v->n_it) return mb_err_set(err, MB_EINPUT, "%s: no step %d", v->path, i);
    if (v->n_dims && v->dim_size[0] <= 0) return mb_err_set(err, MB_EINPUT, "variant '%s' is not bound to sizes", v->name);
    memset(out, 0, sizeof *out);
    const step it = v->it[i];
    out->is_gemm = it.is_gemm;
    if (it.is_gemm) {
        const gemm *g = &v->gm[it.index];
        gemm_name(v, g, "", out->name, sizeof out->name);
        grad_gemm_name(v, g, 0, out->name_da, sizeof out->name_da);
        grad_gemm_name(v, g, 1, out->name_db, sizeof out->name_db);
        if (g->bias >= 0) bias_grad_name(v, g, out->name_bias, sizeof out->name_bias);
        out->a = g->a, out->b = g->w, out->c = g->out, out->bias = g->bias, out->trans_b = g->tb;
        out->m = gm_m(v, g), out->n = gm_n(v, g), out->k = gm_k(v, g), out->batch = gm_batch(v, g);
        return MB_OK;
    }
    const seg *S = &v->sg[it.index];
    char dims[512];
    out->g = mb_graph_clone(S->g);
    if (!out->g) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = mb_graph_bind_dims(out->g, seg_dims(v, out->g, dims, sizeof dims), &out->shape, err);
    if (rc) {
        mb_graph_free(out->g);
        out->g = NULL;
        return rc;
    }
    out->n_in = S->n_in, out->n_out = S->n_out;
    memcpy(out->in, S->in, (size_t)S->n_in * sizeof *S->in);
    memcpy(out->out, S->out, (size_t)S->n_out * sizeof *S->out);
    return MB_OK;
}

int mb_mmvar_tensor_grad(const mb_mmvar *v, int t) { return v->t[t].grad; }
int mb_mmvar_is_output(const mb_mmvar *v, int t)
{
    for (int o = 0; o < v->n_outputs; o++)
        if (v->outputs[o] == t) return 1;
    return 0;
}
void mb_mmvar_grad_name(const mb_mmvar *v, int t, int add, char *buf, size_t size) { grad_name(v, t, add, buf, size); }
