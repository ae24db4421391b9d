/* mlp.c — the model of a transformer MLP (or a linear layer and its norm),
 * eager against fused epilogues, forward and backward, with activation
 * checkpointing. Does not run an MLP (kernels/), nor time a GEMM or an
 * elementwise kernel itself: the GEMMs are gemm.c's estimates, the
 * elementwise and norm kernels the variant language's (a "segment": a small
 * variant of the layer's elementwise part at [tokens, cols], planned and
 * costed by plan_build.c and traffic.c, so that PyTorch's kernels, their
 * autograd, the CPU's composite rms_norm, the row passes and the per-op
 * rates are the model's everywhere).
 *
 * Notation: T tokens, d d_model, f d_ff, s bytes an element; G(m, n, k) a
 * GEMM of C[m, n] = A[m, k] B[k, n] (2 m n k FLOPs).
 *
 * eager, as PyTorch runs the modules (nn.Linear: F.linear; a 2-D input with
 * a 1-D bias is addmm, which on CUDA takes cuBLASLt's bias epilogue — ATen's
 * Blas.cpp, addmm_out_cuda_impl's useLtInterface: beta 1, a contiguous 1-D
 * bias, f32/f16/bf16 — so the bias costs its f s read in the GEMM; on a CPU
 * addmm first copies the bias broadcast into the output, T n s written, and
 * the GEMM reads it back, beta 1: LinearAlgebra.cpp's addmm_impl_cpu_).
 *   gpt2    addmm G(T, f, d) + b1; gelu_tanh as Hugging Face's GPT-2 writes
 *           it ("gelu_new", NewGELUActivation: 0.5 x (1 + tanh(sqrt(2/pi)
 *           (x + 0.044715 x^3))), eight eager kernels, the lecture's
 *           gelu_tanh; OpenAI's GPT-2 uses the same tanh form); addmm
 *           G(T, d, f) + b2. Backward (derivatives.yaml's addmm and mm):
 *           mm dY w2^T G(T, f, d), mm h^T dY G(f, d, T), the bias's sum
 *           over tokens (a reduce kernel: the segment's colsum), the
 *           activation's autograd, mm dA w1^T G(T, d, f), mm x^T dA
 *           G(d, f, T), the sum for b1.
 *   llama   mm x wg, mm x wu (G(T, f, d) each); silu, mul (two kernels);
 *   geglu   gelu(tanh) for silu (F.gelu(approximate="tanh"), one kernel:
 *           the language's one-kernel gelu stands for it, erf's cost for
 *           tanh's); mm c wd G(T, d, f). Backward: mm dY wd^T, mm c^T dY,
 *           mul's two kernels and the activation's backward, then per
 *           projection mm for dx and mm for dW, and autograd's add of the
 *           two dx (x feeds both projections).
 *   linear-layernorm / -rmsnorm: addmm G(T, f, d) + b, then F.layer_norm
 *           (one kernel) or F.rms_norm (one kernel on CUDA, torch 2.x's
 *           composite on a CPU: plan_build's rule). Backward: the norm's
 *           kernels, mm dy w^T, mm x^T dy, the bias's sum.
 * Saved (autograd's): the inputs of the mms that need them (x; the hidden
 * that feeds the last GEMM) and what the segment's plan saves (its rule:
 * PyTorch's derivative formulas); weights are parameters and not counted.
 *
 * fused: the elementwise work in the GEMMs' epilogues.
 *   gpt2    G(T, f, d) with bias and GELU in its epilogue (cuBLASLt's
 *           GELU_BIAS; with backward GELU_AUX_BIAS, which also writes the
 *           pre-activation a as aux: cublasLtEpilogue_t, cuBLAS docs);
 *           G(T, d, f) with BIAS. Backward: dY w2^T with DGELU_BGRAD (reads
 *           the aux, writes dA and b1's gradient), h^T dY with BGRADB
 *           (b2's gradient reduced from dY in the GEMM), dA w1^T, x^T dA.
 *   llama,  gate and up as one GEMM G(T, 2f, d) over the concatenated
 *   geglu   weights [d, 2f], columns interleaved so that a tile holds both
 *           halves, silu(a) * b (gelu) in its epilogue: the hidden c is
 *           written once, a and b never without backward (CUTLASS's
 *           examples/45_dual_gemm: two GEMMs sharing A, an elementwise
 *           epilogue over both, D0 and D1 optionally not stored). With
 *           backward the epilogue also writes a|b (aux, 2 T f s) for the
 *           backward GEMM dY wd^T, whose epilogue reads them and writes
 *           da|db instead of dc (the activation's backward, as Liger's
 *           kernel computes it, moved into the epilogue); then c^T dY,
 *           d[a|b] [wg|wu]^T G(T, d, 2f) (no add: one GEMM), x^T d[a|b]
 *           G(d, 2f, T).
 *   linear-norm: the bias in the epilogue and the norm one kernel each way
 *           (on a GPU PyTorch's already are: the eager segment; on a CPU the
 *           segment's fused plan, and for the backward its recompute plan,
 *           where eager rms_norm is torch's composite); b's gradient by
 *           BGRADB instead of a reduce kernel. A norm needs whole rows
 *           and a GEMM tile holds Nt <= 256 columns: the norm is not put in
 *           the epilogue (not modelled for d_ff <= 256 either).
 *   On a GPU the epilogue's arithmetic is not added to the GEMM's compute
 *   (some FLOPs an element against the GEMM's 2 k); on a CPU it is, at the
 *   spec's op rates (add_epilogue). Its bytes are added to the GEMM's memory
 *   term: time = launch + max(compute, memory).
 *
 * liger (gated layers): the GEMMs as eager; the activation times up as one
 * Triton kernel (reads a, b, writes c) and one backward kernel (reads dc,
 * a, b, writes da, db) — LigerSiLUMulFunction / LigerGELUMulFunction
 * (linkedin/Liger-Kernel, src/liger_kernel/ops/swiglu.py, geglu.py), which
 * save a and b and recompute the activation: the segment's recompute plan.
 *
 * Checkpointing: store keeps what the plan saves. act keeps x and the
 * activation's input (gpt2: a; gated: a and b) and runs the activation
 * again at the start of the backward (a checkpoint around the activation
 * alone): eager its kernels, liger its one kernel, fused gpt2 one gelu
 * kernel (a to h), fused gated nothing more than writing c again in the
 * epilogue of dY wd^T, which reads a|b anyway; the linear-norm layers have no
 * such option (their GEMM's output is the norm's input, what store keeps).
 * recompute keeps x only;
 * the backward first runs the forward again up to the last tensor the
 * backward needs (torch.utils.checkpoint, use_reentrant=False, whose early
 * stop — the default from torch 2.1 — ends the recomputation once every
 * saved tensor is back: not the last GEMM) — eager: the first GEMM(s) and the
 * activation's kernels; fused: the first GEMM with its epilogue (writing
 * the hidden and the aux again); and the fused forward then writes no aux.
 * The choice is the option of least time whose saved bytes fit the budget.
 * Recompute costs the first GEMM(s) again and saves the hidden tensors'
 * traffic: it is faster only where that traffic's time exceeds the GEMM's
 * (a fused gated layer: 4 T d f FLOPs against 2 T f s bytes, so d below
 * s x ridge / 2 — 369 on h100-sxm in bf16), else it buys memory with time.
 *
 * The plan's first kernel pays kernel_floor_us where the spec has one
 * (roofline.c's rule, as attention.c); a segment's kernels are costed as
 * within the plan (launch_overhead_us). */
#include "model_int.h"
#include "mb_gemm.h"
#include "mb_mlp.h"
#include "mb_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const layer_names[MB_MLP_N_LAYERS] = {"gpt2", "llama", "geglu", "linear-layernorm",
                                                         "linear-rmsnorm"};

const char *mb_mlp_layer_name(mb_mlp_layer l)
{
    return (unsigned)l < MB_MLP_N_LAYERS ? layer_names[l] : "?";
}

int mb_mlp_layer_parse(const char *s, mb_mlp_layer *out, mb_err *err)
{
    for (int i = 0; i < MB_MLP_N_LAYERS; i++)
        if (!strcmp(s, layer_names[i])) return *out = (mb_mlp_layer)i, MB_OK;
    return mb_err_set(err, MB_EINPUT, "unknown layer '%s' (gpt2, llama, geglu, linear-layernorm, linear-rmsnorm)",
                      s);
}

int mb_mlp_layer_gated(mb_mlp_layer l) { return l == MB_MLP_LLAMA || l == MB_MLP_GEGLU; }

const char *mb_mlp_plan_name(mb_mlp_plan_id p)
{
    return p == MB_MLP_EAGER ? "eager" : p == MB_MLP_FUSED ? "fused" : p == MB_MLP_LIGER ? "liger" : "?";
}

int mb_mlp_plan_supported(mb_mlp_layer l, mb_mlp_plan_id p)
{
    return p == MB_MLP_EAGER || p == MB_MLP_FUSED || (p == MB_MLP_LIGER && mb_mlp_layer_gated(l));
}

const char *mb_mlp_ckpt_name(mb_mlp_ckpt c)
{
    return c == MB_MLP_STORE       ? "store"
           : c == MB_MLP_ACT       ? "act"
           : c == MB_MLP_RECOMPUTE ? "recompute"
           : c == MB_MLP_AUTO      ? "auto"
                                   : "?";
}

int mb_mlp_ckpt_parse(const char *s, mb_mlp_ckpt *out, mb_err *err)
{
    if (!strcmp(s, "store")) return *out = MB_MLP_STORE, MB_OK;
    if (!strcmp(s, "act")) return *out = MB_MLP_ACT, MB_OK;
    if (!strcmp(s, "recompute")) return *out = MB_MLP_RECOMPUTE, MB_OK;
    if (!strcmp(s, "auto")) return *out = MB_MLP_AUTO, MB_OK;
    return mb_err_set(err, MB_EINPUT, "unknown checkpoint option '%s' (store, act, recompute, auto)", s);
}

static int is_cpu(const mb_device *d) { return !strcmp(d->kind, "cpu"); }

typedef struct ctx {
    const mb_mlp *m;
    const mb_device *d;
    mb_mlp_est *e;
    double s, T, D, F;
    int64_t t, dm, ff;
    int cpu;
} ctx;

mb_mlp_kernel *mb_mlp_add_kernel(mb_mlp_plan *p, const char *name, int backward, int recompute)
{
    mb_mlp_kernel *k = &p->k[p->n_kernels++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->backward = backward;
    k->recompute = recompute;
    return k;
}

/* Moves p's last n kernels to index at (the ones from at on move after
 * them): autograd's and eager Python's order where a layer's kernels are
 * made out of order (the up projection between act(a) and its mul). */
static void move_last(mb_mlp_plan *p, int n, int at)
{
    for (int m = 0; m < n; m++) {
        mb_mlp_kernel k = p->k[p->n_kernels - n + m];
        memmove(&p->k[at + m + 1], &p->k[at + m], (size_t)(p->n_kernels - n - at) * sizeof k);
        p->k[at + m] = k;
    }
}

void mb_mlp_add_saved(mb_mlp_plan *p, const char *name, double bytes)
{
    if (p->n_saved >= MB_MLP_MAX_SAVED) return;
    mb_mlp_saved *v = &p->saved[p->n_saved++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->bytes = bytes;
}

/* The kernel's time again after its bytes changed, by gemm.c's rule for the
 * device: on a GPU launch + max(compute, memory), on a CPU launch + compute +
 * memory (OpenBLAS's packing and C's passes do not overlap its kernel), the
 * bytes over the bandwidth the GEMM model used. */
void mb_mlp_retime(mb_mlp_kernel *k, double bandwidth_gbs, int cpu)
{
    k->mem_s = (k->dram_read_bytes + k->dram_write_bytes) / (bandwidth_gbs * 1e9);
    k->time_s = k->launch_s + (cpu ? k->compute_s + k->mem_s : fmax(k->compute_s, k->mem_s));
    k->bound = mb_bound_of(k->launch_s, k->mem_s, k->compute_s);
}

static void retime(const ctx *c, mb_mlp_kernel *k) { mb_mlp_retime(k, c->e->bandwidth_gbs, c->cpu); }

/* G(m, n, kk) through gemm.c. extra_rd, extra_wr: an epilogue's bytes
 * (a bias read, an aux written or read); out_wr >= 0 replaces C's write (an
 * epilogue that writes something else than the product); hidden: the bytes
 * of [T, f]-sized tensors among the writes. */
static int gemm(const ctx *c, mb_mlp_plan *p, const char *name, int bwd, int rec, int64_t m, int64_t n, int64_t kk,
                double extra_rd, double extra_wr, double out_wr, double hidden, mb_err *err)
{
    if (p->n_kernels >= MB_MLP_MAX_KERNELS) return mb_err_set(err, MB_ERUN, "mlp: too many kernels");
    mb_gemm g = {m, n, kk, 1, c->m->dtype, 0, 0};
    mb_gemm_est ge;
    int rc = mb_gemm_estimate(&g, c->d, &ge, err);
    if (rc) return rc;
    mb_mlp_kernel *k = mb_mlp_add_kernel(p, name, bwd, rec);
    k->gemm = 1;
    k->flops = ge.flops;
    k->dram_read_bytes = ge.dram_read_bytes + extra_rd;
    k->dram_write_bytes = (out_wr >= 0 ? out_wr : ge.dram_write_bytes) + extra_wr;
    k->hidden_write_bytes = hidden;
    k->compute_s = ge.compute_s;
    k->launch_s = ge.launch_s;
    retime(c, k);
    return MB_OK;
}

/* A kernel of bytes alone (the CPU addmm's copy of the bias into its
 * output): launch + bytes over the bandwidth. */
static void bytes_kernel(const ctx *c, mb_mlp_plan *p, const char *name, int bwd, int rec, double rd, double wr,
                         double hidden)
{
    mb_mlp_kernel *k = mb_mlp_add_kernel(p, name, bwd, rec);
    k->dram_read_bytes = rd;
    k->dram_write_bytes = wr;
    k->hidden_write_bytes = hidden;
    k->launch_s = c->d->launch_overhead_us * 1e-6;
    retime(c, k);
}

/* A linear layer's forward: [T, n] = x[T, kk] @ w (+ bias). */
static int linear(const ctx *c, mb_mlp_plan *p, const char *name, int rec, int64_t n, int64_t kk, int bias,
                  double hidden, mb_err *err)
{
    const double out = c->T * (double)n * c->s;
    if (bias && c->cpu) {
        bytes_kernel(c, p, "addmm bias copy", rec, rec, (double)n * c->s, out, hidden);
        return gemm(c, p, name, rec, rec, c->t, n, kk, out, 0, -1, hidden, err);
    }
    return gemm(c, p, name, rec, rec, c->t, n, kk, bias ? (double)n * c->s : 0, 0, -1, hidden, err);
}

/* ---- segments: the elementwise and norm kernels, by the language --------- */

/* A bias's gradient, the sum over tokens (PyTorch's reduce kernel; autograd's
 * sum_to of addmm's self gradient): the segment's colsum of y = g + b. */
static const char bias_text[] = "name mlp_bias\ninput g [rows, cols]\ninput b [cols]\ny = g + b\noutput y\n";
/* autograd's accumulation of x's two gradients (x feeds two projections) */
static const char add_text[] = "name mlp_add\ninput p [rows, cols]\ninput q [rows, cols]\ny = p + q\noutput y\n";

typedef enum seg_part { SEG_FWD, SEG_BWD, SEG_COLSUM } seg_part;

/* Plans seg_text (inputs [rows, cols], cols columns) as kind on the device
 * at [T, cols] and appends its kernels of part (SEG_COLSUM: the backward's
 * kernels named colsum only) to p, named prefix + the kernel's name; with
 * saved, adds what the segment's plan saves to p's saved list; name (may be
 * NULL) names the part's first kernel. Writes of [T, d_ff] count as hidden.
 * A forward kernel of a segment run in the backward (autograd's add, a
 * recomputation) is marked so by the caller (rec, or mark_backward). */
static int segment(const ctx *c, mb_mlp_plan *p, const char *seg_text, mb_plan_kind kind, int64_t cols,
                   seg_part part, int rec, int saved, const char *name, mb_err *err)
{
    char text[1024];
    /* the activation's and the norm's graphs carry the backward when the
     * layer does (their forward kernels then save what it needs); a bias's
     * colsum is a backward kernel; autograd's add and a fused plan's one
     * kernel (an activation run again) are forward ones */
    const int with_bwd = part == SEG_COLSUM || (c->m->backward && seg_text != add_text && kind != MB_PLAN_FUSED);
    snprintf(text, sizeof text, "%s%s", seg_text, with_bwd ? "backward\n" : "");
    mb_graph *g = NULL;
    mb_plan *pl = NULL;
    mb_estimate est;
    memset(&est, 0, sizeof est);
    int rc = mb_parse_variant(text, "<mlp segment>", c->m->dtype, &g, err);
    if (!rc) rc = mb_plan_build_on(g, kind, c->d, &pl, err);
    mb_shape sh = {2, c->t, cols, 0};
    if (!rc) rc = mb_estimate_plan_shape(pl, sh, c->d, &est, err);
    const double lo = c->d->launch_overhead_us * 1e-6;
    int named = 0;
    for (int i = 0; !rc && i < pl->n_kernels; i++) {
        const mb_kernel *K = &pl->kernels[i];
        const mb_cost *kc = &est.per_kernel[i];
        if ((part == SEG_FWD) == !!K->is_backward) continue;
        if (part == SEG_COLSUM && strcmp(K->name, "colsum")) continue;
        if (p->n_kernels >= MB_MLP_MAX_KERNELS) {
            rc = mb_err_set(err, MB_ERUN, "mlp: too many kernels");
            break;
        }
        mb_mlp_kernel *k = mb_mlp_add_kernel(p, name && !named++ ? name : K->name, part != SEG_FWD, rec);
        k->flops = kc->flops;
        k->dram_read_bytes = (double)kc->dram_read_bytes;
        k->dram_write_bytes = (double)kc->dram_write_bytes;
        for (int w = 0; w < K->n_writes; w++)
            if (cols == c->ff && pl->g->nodes[K->writes[w]].shape == MB_SHC_FULL)
                k->hidden_write_bytes += c->T * (double)cols * (double)mb_dtype_bytes(pl->g->nodes[K->writes[w]].dtype);
        k->compute_s = kc->compute_s;
        k->mem_s = kc->mem_s;
        /* within the plan a kernel pays the launch, not the first kernel's floor */
        k->launch_s = kc->launch_s > lo ? lo : kc->launch_s;
        k->time_s = kc->time_s - (kc->launch_s - k->launch_s);
        k->bound = mb_bound_of(k->launch_s, k->mem_s, k->compute_s);
    }
    if (!rc && saved && c->m->backward) {
        for (int i = 0; i < pl->n_saved; i++) {
            const mb_graph *pg = pl->g;
            const mb_node *nd = &pg->nodes[pl->saved[i]];
            char nm[MB_MLP_NAME_MAX];
            if (nd->shape == MB_SHC_COL) continue; /* a norm's weight: a parameter */
            if (nd->name[0]) snprintf(nm, sizeof nm, "%s", nd->name);
            else if (nd->arg[0] >= 0 && pg->nodes[nd->arg[0]].name[0])
                snprintf(nm, sizeof nm, "%s(%s)", mb_op_name(nd->op), pg->nodes[nd->arg[0]].name);
            else snprintf(nm, sizeof nm, "%s", mb_op_name(nd->op));
            mb_mlp_add_saved(p, nm, (double)mb_tensor_elems_at(pg, pl->saved[i], sh) * (double)mb_dtype_bytes(nd->dtype));
        }
    }
    mb_estimate_free(&est);
    mb_plan_free(pl);
    mb_graph_free(g);
    return rc;
}

/* The activation's segment: gpt2's written-out gelu_tanh, the gated
 * layers' act(a) * b, the norms. */
static const char *act_text(mb_mlp_layer l)
{
    switch (l) {
    case MB_MLP_GPT2:
        return "name mlp_gelu_new\ninput a [rows, cols]\n"
               "h = 0.5*a*(1.0+tanh(0.7978845608*(a+0.044715*a**3)))\noutput h\n";
    case MB_MLP_LLAMA: return "name mlp_swiglu\ninput a [rows, cols]\ninput b [rows, cols]\nc = silu(a) * b\noutput c\n";
    case MB_MLP_GEGLU: return "name mlp_geglu\ninput a [rows, cols]\ninput b [rows, cols]\nc = gelu(a) * b\noutput c\n";
    case MB_MLP_LINEAR_LN:
        return "name mlp_ln\ninput y [rows, cols]\ninput w [cols]\ninput bn [cols]\no = layer_norm(y, w, bn)\noutput o\n";
    case MB_MLP_LINEAR_RMS:
        return "name mlp_rms\ninput y [rows, cols]\ninput w [cols]\no = rms_norm(y, w)\noutput o\n";
    default: return "";
    }
}

/* ---- the plans ------------------------------------------------------------ */

/* On a CPU a fused GEMM's epilogue runs on the same cores after each panel's
 * product: its arithmetic at the spec's op rates (the activation segment's
 * one fused kernel forward; its recompute plan's backward kernel, which
 * takes the activation's derivative from its input, for a backward
 * epilogue) adds to the GEMM's compute. fwd, bwd: which parts the epilogue
 * runs. A GPU's epilogue hides under the GEMM's tensor-core time: nothing
 * is added there. */
static int add_epilogue(const ctx *c, mb_mlp_plan *p, int fwd, int bwd, mb_err *err)
{
    if (!c->cpu) return MB_OK;
    mb_mlp_plan *scratch = calloc(1, sizeof *scratch);
    if (!scratch) return mb_err_set(err, MB_ERUN, "mlp: out of memory");
    int rc = MB_OK;
    if (fwd) rc = segment(c, scratch, act_text(c->m->layer), MB_PLAN_FUSED, c->ff, SEG_FWD, 0, 0, NULL, err);
    if (!rc && bwd) rc = segment(c, scratch, act_text(c->m->layer), MB_PLAN_RECOMPUTE, c->ff, SEG_BWD, 0, 0, NULL, err);
    if (!rc) {
        mb_mlp_kernel *k = &p->k[p->n_kernels - 1];
        for (int i = 0; i < scratch->n_kernels; i++) k->compute_s += scratch->k[i].compute_s;
        retime(c, k);
    }
    free(scratch);
    return rc;
}

static int gpt2(const ctx *c, mb_mlp_plan *p, mb_err *err)
{
    const int bwd = c->m->backward, rec = p->ckpt == MB_MLP_RECOMPUTE, act = p->ckpt == MB_MLP_ACT;
    const double hid = c->T * c->F * c->s, xs = c->T * c->D * c->s;
    int rc;
    if (p->id == MB_MLP_EAGER) {
        if ((rc = linear(c, p, "addmm x@w1+b1", 0, c->ff, c->dm, 1, hid, err))) return rc;
        if ((rc = segment(c, p, act_text(c->m->layer), MB_PLAN_EAGER, c->ff, SEG_FWD, 0, !rec && !act, NULL, err)))
            return rc;
        if ((rc = linear(c, p, "addmm h@w2+b2", 0, c->dm, c->ff, 1, 0, err))) return rc;
        if (!bwd) return MB_OK;
        mb_mlp_add_saved(p, "x", xs);
        if (act) mb_mlp_add_saved(p, "a (gelu's input)", hid);
        if (!rec && !act) mb_mlp_add_saved(p, "h (gelu's output, addmm's input)", hid);
        if (rec && (rc = linear(c, p, "addmm x@w1+b1", 1, c->ff, c->dm, 1, hid, err))) return rc;
        if ((rec || act) &&
            (rc = segment(c, p, act_text(c->m->layer), MB_PLAN_EAGER, c->ff, SEG_FWD, 1, 0, NULL, err)))
            return rc;
        if ((rc = gemm(c, p, "mm dY@w2^T", 1, 0, c->t, c->ff, c->dm, 0, 0, -1, hid, err))) return rc;
        if ((rc = gemm(c, p, "mm h^T@dY", 1, 0, c->ff, c->dm, c->t, 0, 0, -1, 0, err))) return rc;
        if ((rc = segment(c, p, bias_text, MB_PLAN_EAGER, c->dm, SEG_COLSUM, 0, 0, "sum dY (b2)", err))) return rc;
        if ((rc = segment(c, p, act_text(c->m->layer), MB_PLAN_EAGER, c->ff, SEG_BWD, 0, 0, NULL, err))) return rc;
        if ((rc = gemm(c, p, "mm dA@w1^T", 1, 0, c->t, c->dm, c->ff, 0, 0, -1, 0, err))) return rc;
        if ((rc = gemm(c, p, "mm x^T@dA", 1, 0, c->dm, c->ff, c->t, 0, 0, -1, 0, err))) return rc;
        return segment(c, p, bias_text, MB_PLAN_EAGER, c->ff, SEG_COLSUM, 0, 0, "sum dA (b1)", err);
    }
    /* fused: GELU_(AUX_)BIAS, BIAS; DGELU_BGRAD, BGRADB */
    const double aux = bwd && !rec ? hid : 0;
    if ((rc = gemm(c, p, "addmm x@w1 +bias,gelu", 0, 0, c->t, c->ff, c->dm, c->F * c->s, aux, -1, hid + aux, err)) ||
        (rc = add_epilogue(c, p, 1, 0, err)))
        return rc;
    if ((rc = gemm(c, p, "addmm h@w2 +bias", 0, 0, c->t, c->dm, c->ff, c->D * c->s, 0, -1, 0, err))) return rc;
    if (!bwd) return MB_OK;
    mb_mlp_add_saved(p, "x", xs);
    if (!rec) mb_mlp_add_saved(p, "a (pre-activation, aux)", hid);
    if (!rec && !act) mb_mlp_add_saved(p, "h (addmm's input)", hid);
    if (rec && ((rc = gemm(c, p, "addmm x@w1 +bias,gelu,aux", 1, 1, c->t, c->ff, c->dm, c->F * c->s, hid, -1,
                           2 * hid, err)) ||
                (rc = add_epilogue(c, p, 1, 0, err))))
        return rc;
    /* act: h = gelu(a) again, one kernel (the segment's fused plan) */
    if (act && (rc = segment(c, p, act_text(c->m->layer), MB_PLAN_FUSED, c->ff, SEG_FWD, 1, 0, "gelu(a) again", err)))
        return rc;
    if ((rc = gemm(c, p, "mm dY@w2^T +dgelu,bgrad", 1, 0, c->t, c->ff, c->dm, hid, c->F * c->s, -1, hid, err)) ||
        (rc = add_epilogue(c, p, 0, 1, err)))
        return rc;
    if ((rc = gemm(c, p, "mm h^T@dY +bgradb", 1, 0, c->ff, c->dm, c->t, 0, c->D * c->s, -1, 0, err))) return rc;
    if ((rc = gemm(c, p, "mm dA@w1^T", 1, 0, c->t, c->dm, c->ff, 0, 0, -1, 0, err))) return rc;
    return gemm(c, p, "mm x^T@dA", 1, 0, c->dm, c->ff, c->t, 0, 0, -1, 0, err);
}

static int gated(const ctx *c, mb_mlp_plan *p, mb_err *err)
{
    const int bwd = c->m->backward, rec = p->ckpt == MB_MLP_RECOMPUTE, ac = p->ckpt == MB_MLP_ACT;
    const double hid = c->T * c->F * c->s, xs = c->T * c->D * c->s;
    const char *act = act_text(c->m->layer);
    int rc;
    if (p->id == MB_MLP_EAGER || p->id == MB_MLP_LIGER) {
        const int liger = p->id == MB_MLP_LIGER;
        const mb_plan_kind sk = !liger ? MB_PLAN_EAGER : bwd ? MB_PLAN_RECOMPUTE : MB_PLAN_FUSED;
        const char *fname = liger ? "act*mul (liger)" : NULL;
        for (int pass = 0; pass < 1 + (bwd && rec); pass++) { /* the forward, then its recomputation */
            const int r = pass == 1;
            if ((rc = linear(c, p, "mm x@wg", r, c->ff, c->dm, 0, hid, err))) return rc;
            if (liger && (rc = linear(c, p, "mm x@wu", r, c->ff, c->dm, 0, hid, err))) return rc;
            if ((rc = segment(c, p, act, sk, c->ff, SEG_FWD, r, !rec && !ac, fname, err))) return rc;
            /* eager runs act(gate(x)), then up(x), then the mul, as Python
             * evaluates act(gate(x)) * up(x) (LlamaMLP.forward) */
            if (!liger && (rc = linear(c, p, "mm x@wu", r, c->ff, c->dm, 0, hid, err))) return rc;
            if (!liger) move_last(p, 1, p->n_kernels - 2);
            if (!r && (rc = linear(c, p, "mm c@wd", 0, c->dm, c->ff, 0, 0, err))) return rc;
        }
        if (!bwd) return MB_OK;
        mb_mlp_add_saved(p, "x", xs);
        if (ac) {
            mb_mlp_add_saved(p, "a (gate's output)", hid);
            mb_mlp_add_saved(p, "b (up's output)", hid);
            /* the activation's forward again: c and what its backward reads */
            if ((rc = segment(c, p, act, sk, c->ff, SEG_FWD, 1, 0, fname, err))) return rc;
        }
        if (!rec && !ac) mb_mlp_add_saved(p, "c (mm's input)", hid);
        if ((rc = gemm(c, p, "mm dY@wd^T", 1, 0, c->t, c->ff, c->dm, 0, 0, -1, hid, err))) return rc;
        if ((rc = gemm(c, p, "mm c^T@dY", 1, 0, c->ff, c->dm, c->t, 0, 0, -1, 0, err))) return rc;
        if ((rc = segment(c, p, act, sk, c->ff, SEG_BWD, 0, 0, liger ? "act*mul bwd (liger)" : NULL, err))) return rc;
        if ((rc = gemm(c, p, "mm db@wu^T", 1, 0, c->t, c->dm, c->ff, 0, 0, -1, 0, err))) return rc;
        if ((rc = gemm(c, p, "mm x^T@db", 1, 0, c->dm, c->ff, c->t, 0, 0, -1, 0, err))) return rc;
        /* autograd runs the later node first: up's mm backward (made after
         * act) before the activation's backward, the segment's last kernel */
        if (!liger) move_last(p, 2, p->n_kernels - 3);
        if ((rc = gemm(c, p, "mm da@wg^T", 1, 0, c->t, c->dm, c->ff, 0, 0, -1, 0, err))) return rc;
        if ((rc = gemm(c, p, "mm x^T@da", 1, 0, c->dm, c->ff, c->t, 0, 0, -1, 0, err))) return rc;
        const int n0 = p->n_kernels;
        if ((rc = segment(c, p, add_text, MB_PLAN_EAGER, c->dm, SEG_FWD, 0, 0, "add dx (autograd)", err))) return rc;
        for (int i = n0; i < p->n_kernels; i++) p->k[i].backward = 1;
        return MB_OK;
    }
    /* fused: one GEMM over [wg|wu] with act(a) * b in its epilogue */
    const int64_t f2 = 2 * c->ff;
    const double aux = bwd && !rec ? 2 * hid : 0;
    if ((rc = gemm(c, p, "mm x@[wg|wu] +act*mul", 0, 0, c->t, f2, c->dm, 0, aux, hid, hid + aux, err)) ||
        (rc = add_epilogue(c, p, 1, 0, err)))
        return rc;
    if ((rc = gemm(c, p, "mm c@wd", 0, 0, c->t, c->dm, c->ff, 0, 0, -1, 0, err))) return rc;
    if (!bwd) return MB_OK;
    mb_mlp_add_saved(p, "x", xs);
    if (!rec) {
        mb_mlp_add_saved(p, "a|b (gate and up, aux)", 2 * hid);
        if (!ac) mb_mlp_add_saved(p, "c (mm's input)", hid);
        /* dc's epilogue reads a|b and writes da|db (act: and c again, for c^T dY) */
        const double wr = (ac ? 3 : 2) * hid;
        if ((rc = gemm(c, p, ac ? "mm dY@wd^T +dact,c" : "mm dY@wd^T +dact", 1, 0, c->t, c->ff, c->dm, 2 * hid, 0,
                       wr, wr, err)) ||
            (rc = add_epilogue(c, p, ac, 1, err)))
            return rc;
    } else {
        if ((rc = gemm(c, p, "mm dY@wd^T", 1, 0, c->t, c->ff, c->dm, 0, 0, -1, hid, err))) return rc;
        /* the recomputation's epilogue reads dc and writes c and da|db */
        if ((rc = gemm(c, p, "mm x@[wg|wu] +dact", 1, 1, c->t, f2, c->dm, hid, 0, 3 * hid, 3 * hid, err)) ||
            (rc = add_epilogue(c, p, 1, 1, err)))
            return rc;
    }
    if ((rc = gemm(c, p, "mm c^T@dY", 1, 0, c->ff, c->dm, c->t, 0, 0, -1, 0, err))) return rc;
    if ((rc = gemm(c, p, "mm d[a|b]@[wg|wu]^T", 1, 0, c->t, c->dm, f2, 0, 0, -1, 0, err))) return rc;
    return gemm(c, p, "mm x^T@d[a|b]", 1, 0, c->dm, f2, c->t, 0, 0, -1, 0, err);
}

static int linear_norm(const ctx *c, mb_mlp_plan *p, mb_err *err)
{
    const int bwd = c->m->backward, rec = p->ckpt == MB_MLP_RECOMPUTE, eager = p->id == MB_MLP_EAGER;
    const double hid = c->T * c->F * c->s, xs = c->T * c->D * c->s;
    const char *norm = act_text(c->m->layer);
    /* fused: the norm one kernel each way — PyTorch's on a GPU already are
     * (layer_norm_kernel.cu's forward and backward, then gamma_beta); a CPU's
     * eager rms_norm is torch's composite, the fused plan one kernel */
    const mb_plan_kind fk = eager ? MB_PLAN_EAGER : MB_PLAN_FUSED;
    const mb_plan_kind bk = eager || !c->cpu ? MB_PLAN_EAGER : MB_PLAN_RECOMPUTE;
    int rc;
    if ((rc = linear(c, p, "addmm x@w+b", 0, c->ff, c->dm, 1, hid, err))) return rc;
    if ((rc = segment(c, p, norm, bwd ? bk : fk, c->ff, SEG_FWD, 0, !rec, NULL, err))) return rc;
    if (!bwd) return MB_OK;
    mb_mlp_add_saved(p, "x", xs);
    if (rec) {
        if ((rc = linear(c, p, "addmm x@w+b", 1, c->ff, c->dm, 1, hid, err))) return rc;
        /* eager's recomputation runs the norm's forward again (its saved
         * statistics); the fused backward recomputes them from y */
        if (eager && (rc = segment(c, p, norm, bk, c->ff, SEG_FWD, 1, 0, NULL, err))) return rc;
    }
    if ((rc = segment(c, p, norm, bk, c->ff, SEG_BWD, 0, 0, NULL, err))) return rc;
    if ((rc = gemm(c, p, "mm dy@w^T", 1, 0, c->t, c->dm, c->ff, 0, 0, -1, 0, err))) return rc;
    if (eager) {
        if ((rc = gemm(c, p, "mm x^T@dy", 1, 0, c->dm, c->ff, c->t, 0, 0, -1, 0, err))) return rc;
        return segment(c, p, bias_text, MB_PLAN_EAGER, c->ff, SEG_COLSUM, 0, 0, "sum dy (b)", err);
    }
    return gemm(c, p, "mm x^T@dy +bgradb", 1, 0, c->dm, c->ff, c->t, 0, c->F * c->s, -1, 0, err);
}

void mb_mlp_totals(const mb_device *d, mb_mlp_plan *p)
{
    double by_bound[3] = {0, 0, 0};
    mb_mlp_kernel *k0 = &p->k[0];
    if (p->n_kernels > 0 && d->kernel_floor_us > d->launch_overhead_us) {
        k0->time_s += d->kernel_floor_us * 1e-6 - k0->launch_s;
        k0->launch_s = d->kernel_floor_us * 1e-6;
        k0->bound = mb_bound_of(k0->launch_s, k0->mem_s, k0->compute_s);
    }
    p->flops = p->dram_read_bytes = p->dram_write_bytes = p->hidden_write_bytes = 0;
    p->fwd_time_s = p->bwd_time_s = p->saved_bytes = 0;
    for (int i = 0; i < p->n_kernels; i++) {
        mb_mlp_kernel *k = &p->k[i];
        if (k->recompute) k->backward = 1;
        p->flops += k->flops;
        p->dram_read_bytes += k->dram_read_bytes;
        p->dram_write_bytes += k->dram_write_bytes;
        p->hidden_write_bytes += k->hidden_write_bytes;
        *(k->backward ? &p->bwd_time_s : &p->fwd_time_s) += k->time_s;
        by_bound[k->bound] += k->time_s;
    }
    for (int i = 0; i < p->n_saved; i++) p->saved_bytes += p->saved[i].bytes;
    p->time_s = p->fwd_time_s + p->bwd_time_s;
    p->bound = MB_BOUND_MEMORY;
    if (by_bound[MB_BOUND_COMPUTE] > by_bound[p->bound]) p->bound = MB_BOUND_COMPUTE;
    if (by_bound[MB_BOUND_LAUNCH] > by_bound[p->bound]) p->bound = MB_BOUND_LAUNCH;
}

int mb_mlp_estimate(const mb_mlp *m, const mb_device *d, mb_mlp_est *out, mb_err *err)
{
    if ((unsigned)m->layer >= MB_MLP_N_LAYERS) return mb_err_set(err, MB_EINPUT, "mlp: no such layer");
    if (m->tokens < 1 || m->d_model < 1 || m->d_ff < 1)
        return mb_err_set(err, MB_EINPUT, "an MLP's tokens, d_model and d_ff are at least 1 (got %lld, %lld, %lld)",
                          (long long)m->tokens, (long long)m->d_model, (long long)m->d_ff);
    const double T = (double)m->tokens, D = (double)m->d_model, F = (double)m->d_ff;
    const double lim = (double)MB_N_MAX / 2; /* [T, 2 d_ff] and its bytes stay exact */
    if (T * F > lim || T * D > lim || D * F > lim)
        return mb_err_set(err, MB_EINPUT, "an MLP of tokens %lld, d_model %lld, d_ff %lld has a tensor beyond 2^43 "
                          "elements", (long long)m->tokens, (long long)m->d_model, (long long)m->d_ff);
    mb_mlp_est e;
    memset(&e, 0, sizeof e);
    e.peak_flops_s = mb_gemm_peak_flops(d, m->dtype, &e.peak_key);
    if (!(e.peak_flops_s > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no %s GEMM rate (%s is 0)", d->name, mb_dtype_name(m->dtype),
                          e.peak_key);
    e.bandwidth_gbs = mb_device_bandwidth_gbs(d, &e.bandwidth_source);
    const double s = (double)mb_dtype_bytes(m->dtype);
    e.hidden_bytes = T * F * s;
    const double gemms = mb_mlp_layer_gated(m->layer) ? 3 : m->layer == MB_MLP_GPT2 ? 2 : 1;
    e.gemm_flops = gemms * 2 * T * D * F * (m->backward ? 3 : 1);
    e.weight_bytes = gemms * D * F * s + (m->layer == MB_MLP_GPT2 ? (F + D) * s : mb_mlp_layer_gated(m->layer) ? 0 : F * s);
    e.n_ckpt = m->backward ? MB_MLP_N_CKPT : 1;
    ctx c = {m, d, &e, s, T, D, F, m->tokens, m->d_model, m->d_ff, is_cpu(d)};
    for (int p = 0; p < MB_MLP_N_PLANS; p++) {
        e.supported[p] = mb_mlp_plan_supported(m->layer, (mb_mlp_plan_id)p);
        if (!e.supported[p]) continue;
        for (int k = 0; k < e.n_ckpt; k++) {
            mb_mlp_plan *pl = &e.plan[p][k];
            pl->id = (mb_mlp_plan_id)p;
            pl->ckpt = (mb_mlp_ckpt)k;
            /* a linear-norm layer's GEMM output is the norm's input: act is store */
            pl->valid = !(k == MB_MLP_ACT && (m->layer == MB_MLP_LINEAR_LN || m->layer == MB_MLP_LINEAR_RMS));
            if (!pl->valid) continue;
            int rc = m->layer == MB_MLP_GPT2         ? gpt2(&c, pl, err)
                     : mb_mlp_layer_gated(m->layer) ? gated(&c, pl, err)
                                                    : linear_norm(&c, pl, err);
            if (rc) return rc;
            mb_mlp_totals(d, pl);
        }
    }
    *out = e;
    return MB_OK;
}

int mb_mlp_choose(const mb_mlp_est *e, mb_mlp_plan_id p, double budget_bytes)
{
    if ((unsigned)p >= MB_MLP_N_PLANS || !e->supported[p]) return -1;
    int best = -1;
    for (int k = 0; k < e->n_ckpt; k++) {
        const mb_mlp_plan *pl = &e->plan[p][k];
        if (!pl->valid || (budget_bytes > 0 && pl->saved_bytes > budget_bytes)) continue;
        const mb_mlp_plan *b = best < 0 ? NULL : &e->plan[p][best];
        if (!b || pl->time_s < b->time_s || (pl->time_s == b->time_s && pl->saved_bytes < b->saved_bytes)) best = k;
    }
    return best;
}

int mb_mlp_on_frontier(const mb_mlp_est *e, mb_mlp_plan_id p, int c)
{
    const mb_mlp_plan *a = &e->plan[p][c];
    if (!e->supported[p] || c < 0 || c >= e->n_ckpt || !a->valid) return 0;
    for (int q = 0; q < MB_MLP_N_PLANS; q++) {
        if (!e->supported[q]) continue;
        for (int k = 0; k < e->n_ckpt; k++) {
            const mb_mlp_plan *b = &e->plan[q][k];
            if (b == a || !b->valid) continue;
            if (b->saved_bytes <= a->saved_bytes && b->time_s <= a->time_s &&
                (b->saved_bytes < a->saved_bytes || b->time_s < a->time_s))
                return 0;
        }
    }
    return 1;
}

int64_t mb_mlp_compute_bound_tokens(const mb_mlp *m, const mb_device *d, mb_mlp_plan_id p, mb_err *err)
{
    if ((unsigned)p >= MB_MLP_N_PLANS || !mb_mlp_plan_supported(m->layer, p)) {
        mb_err_set(err, MB_EINPUT, "layer %s has no plan %s", mb_mlp_layer_name(m->layer), mb_mlp_plan_name(p));
        return -1;
    }
    mb_mlp t = *m;
    mb_mlp_est e;
    for (int64_t tok = 1; tok <= ((int64_t)1 << 24); tok *= 2) {
        t.tokens = tok;
        if (mb_mlp_estimate(&t, d, &e, err)) return -1;
        if (e.plan[p][MB_MLP_STORE].bound == MB_BOUND_COMPUTE) return tok;
    }
    return 0;
}
