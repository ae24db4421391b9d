/* kernel_ops.c — which launched kernel is which plan kernel: the names
 * PyTorch's eager CUDA kernels carry for each membound op (both demanglers'
 * spellings contain them: Nsight's "sin_kernel_cuda(at::TensorIteratorBase &)"
 * and cxxabi's "sin_kernel_cuda(at::TensorIteratorBase&)"; the functor names
 * of binary ops, "MulFunctor", "CUDAFunctor_add"; reference/
 * ncu-and-normalization.md 1c), Inductor's "triton_{poi,per,red}_fused_..."
 * for fused kernels; and GPU names to the device table. Does not group or
 * count launches (match.c does). */
#include "import_int.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* One row per plan kernel name (an op's name, or a backward kernel's): the
 * substrings of PyTorch's kernel names that launch it; every op a variant can
 * call and every fused backward kernel of the op table has one (tests/
 * import_files.c). membound's internal ops (step, gelu_grad, silu_grad) have
 * no PyTorch kernel of their own. sub is add with
 * alpha = -1 in PyTorch (one add functor); x**k with a number k is
 * pow_tensor_scalar. */
static const struct {
    const char *kernel;
    const char *pat[4];
} patterns[] = {
    {"add", {"CUDAFunctor_add", "CUDAFunctorOnSelf_add", "AddFunctor", NULL}},
    {"add_grad", {"CUDAFunctor_add", "CUDAFunctorOnSelf_add", "AddFunctor", NULL}},
    {"sub", {"CUDAFunctor_add", "CUDAFunctorOnSelf_add", "SubFunctor", NULL}},
    {"mul", {"MulFunctor", NULL}},
    {"div", {"DivFunctor", "div_true_kernel", NULL}},
    {"neg", {"neg_kernel_cuda", NULL}},
    {"pow", {"pow_tensor_scalar", "pow_tensor_tensor", "pow_scalar_tensor", NULL}},
    {"sin", {"sin_kernel_cuda", NULL}},
    {"cos", {"cos_kernel_cuda", NULL}},
    {"tan", {"tan_kernel_cuda", NULL}},
    {"tanh", {"tanh_kernel_cuda", NULL}},
    {"exp", {"exp_kernel_cuda", NULL}},
    {"log", {"log_kernel_cuda", NULL}},
    {"sqrt", {"sqrt_kernel_cuda", NULL}},
    {"rsqrt", {"rsqrt_kernel_cuda", NULL}},
    {"sigmoid", {"sigmoid_kernel_cuda", NULL}},
    {"relu", {"clamp_min", "threshold_kernel", NULL}},
    {"abs", {"abs_kernel_cuda", NULL}},
    {"gelu", {"GeluCUDAKernelImpl", "gelu_kernel", NULL}},
    {"copy", {"direct_copy_kernel_cuda", "Memcpy DtoD", NULL}},
    {"reciprocal", {"reciprocal_kernel_cuda", NULL}},
    {"erf", {"erf_kernel_cuda", NULL}},
    {"softplus", {"softplus_kernel", NULL}},
    {"silu", {"silu_kernel", NULL}},
    {"sign", {"sign_kernel_cuda", "sgn_kernel_cuda", NULL}},
    {"silu_backward", {"silu_backward_kernel", NULL}},
    {"softplus_backward", {"softplus_backward_kernel", NULL}},
    {"sigmoid_backward", {"sigmoid_backward", NULL}},
    {"tanh_backward", {"tanh_backward", NULL}},
    {"gelu_backward", {"GeluBackwardCUDAKernelImpl", "gelu_backward", NULL}},
    {"threshold_backward", {"threshold_kernel", NULL}},
    /* row operations (shared/reference/ncu-and-normalization.md section 2):
     * MeanOps is in a real trace (LlamaRMSNorm on an A10G); the others are
     * PyTorch's source names (SoftMax.cu, layer_norm_kernel.cu, ReduceOps),
     * not yet seen in an imported profile */
    {"sum", {"sum_functor", "SumOps", NULL}},
    /* a [cols] operand's gradient: sum(dim=0), the same reduce kernel */
    {"colsum", {"sum_functor", "SumOps", NULL}},
    {"mean", {"MeanOps", NULL}},
    {"amax", {"MaxNanFunctor", "MaxOps", NULL}},
    {"softmax", {"softmax_warp_forward", "cunn_SoftMaxForward", NULL}},
    {"log_softmax", {"LogSoftMaxForwardEpilogue", "softmax_warp_forward", NULL}},
    {"layer_norm", {"vectorized_layer_norm_kernel", "LayerNormForwardCUDAKernel", NULL}},
    {"rms_norm", {"vectorized_layer_norm_kernel", NULL}},
    /* their backward kernels (PyTorch's source names, SoftMax.cu and
     * layer_norm_kernel.cu; not yet seen in an imported profile) and amax's mask */
    {"_softmax_backward_data", {"softmax_warp_backward", "cunn_SoftMaxBackward", NULL}},
    {"_log_softmax_backward_data", {"softmax_warp_backward", "cunn_SoftMaxBackward", NULL}},
    {"native_layer_norm_backward", {"layer_norm_grad_input_kernel", "ComputeInternalGradientsCUDAKernel", NULL}},
    {"rms_norm_backward", {"layer_norm_grad_input_kernel", NULL}},
    /* a norm's weight and bias gradients (GammaBetaBackwardCUDAKernel, its
     * Simple and 32x32 forms; layer_norm_kernel.cu) */
    {MB_KERNEL_GAMMA_BETA, {"GammaBetaBackward", NULL}},
    {"eq", {"CompareEqFunctor", "eq_kernel", NULL}},
};

const char *mb_imp_kernel_pattern(const char *plan_kernel)
{
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
        if (!strcmp(patterns[i].kernel, plan_kernel)) return patterns[i].pat[0];
    return NULL;
}

/* pat occurs in name where the character before it is not a letter, digit
 * or '_' (sin_kernel_cuda is not asin_kernel_cuda). */
static int has_word(const char *name, const char *pat)
{
    for (const char *p = strstr(name, pat); p; p = strstr(p + 1, pat))
        if (p == name || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) return 1;
    return 0;
}

static int is_inductor(const char *name)
{
    return has_word(name, "triton_poi_") || has_word(name, "triton_per_") || has_word(name, "triton_red_");
}

/* Inductor's own words for what a membound op becomes: its kernel names list
 * the aten ops of the fused nodes after decomposition, sorted and joined by
 * '_' ("triton_poi_fused_add_cos_pow_sin_0"; torch/_inductor/utils.py,
 * get_fused_kernel_name, descriptive_names = "original_aten"). An op is
 * also known by its own name. */
static const struct {
    const char *op;
    const char *words[7];
} inductor_words[] = {
    {"copy", {"clone", "_to_copy", "copy", NULL}},
    {"sub", {"add", NULL}},
    {"relu", {"clamp_min", "maximum", NULL}},
    {"sign", {"sgn", NULL}},
    {"gelu", {"erf", "tanh", "mul", "add", "pow", NULL}},
    {"silu", {"sigmoid", "mul", NULL}},
    {"softplus", {"exp", "log1p", NULL}},
    {"mean", {"sum", "div", NULL}},
    {"softmax", {"_softmax", "amax", "exp", "sum", "div", "sub", NULL}},
    {"log_softmax", {"_log_softmax", "amax", "exp", "log", "sum", "sub", NULL}},
    {"rms_norm", {"mean", "rsqrt", "mul", "pow", "add", NULL}},
    {"layer_norm", {"native_layer_norm", "var_mean", "rsqrt", "mul", "add", "sub", NULL}},
};

/* 1 when the op named op is known to Inductor as the word w[0..len). */
static int op_word(const char *op, const char *w, size_t len)
{
    if (strlen(op) == len && !strncmp(op, w, len)) return 1;
    for (size_t i = 0; i < sizeof inductor_words / sizeof inductor_words[0]; i++) {
        if (strcmp(inductor_words[i].op, op) != 0) continue;
        for (int k = 0; inductor_words[i].words[k]; k++)
            if (strlen(inductor_words[i].words[k]) == len && !strncmp(inductor_words[i].words[k], w, len)) return 1;
    }
    return 0;
}

/* The length of the longest op word (of any op) at p that ends at '_' or
 * the name's end, 0 when none. */
static size_t known_word(const char *p)
{
    size_t best = 0;
    for (int op = 0; op < MB_OP_COUNT; op++) {
        const char *n = mb_op_info_of((mb_op)op)->name;
        size_t len = strlen(n);
        if (len > best && !strncmp(p, n, len) && (p[len] == '_' || !isalnum((unsigned char)p[len]))) best = len;
    }
    for (size_t i = 0; i < sizeof inductor_words / sizeof inductor_words[0]; i++)
        for (int k = 0; inductor_words[i].words[k]; k++) {
            const char *w = inductor_words[i].words[k];
            size_t len = strlen(w);
            if (len > best && !strncmp(p, w, len) && (p[len] == '_' || !isalnum((unsigned char)p[len]))) best = len;
        }
    return best;
}

/* 0 when Inductor's name says the kernel fuses other ops than K's: every
 * word after "fused_" is an op's, and none is one of K's (a sin^2+cos^2
 * kernel is no copy); 1 otherwise, a word it does not know included (no
 * evidence against). */
static int inductor_ops_fit(const mb_graph *g, const mb_kernel *K, const char *name)
{
    const char *p = strstr(name, "_fused_");
    if (!p) return 1;
    p += 7;
    int known = 0, shared = 0;
    while (*p && (isalnum((unsigned char)*p) || *p == '_')) {
        size_t digits = strspn(p, "0123456789");
        size_t len = digits && (p[digits] == '_' || !isalnum((unsigned char)p[digits])) ? 0 : known_word(p);
        if (digits && !len) { /* the kernel's index */
            p += digits + (p[digits] == '_');
            continue;
        }
        if (!len) return 1;
        known++;
        shared |= op_word(K->name, p, len);
        for (int j = 0; j < K->n_nodes && !shared; j++)
            shared |= op_word(mb_op_info_of(g->nodes[K->nodes[j]].op)->name, p, len);
        p += len + (p[len] == '_');
    }
    return !known || shared;
}

int imp_kernel_matches(const mb_graph *g, const mb_kernel *K, int fused_ok, const char *name)
{
    /* renamed by its NVTX range (--print-nvtx-rename kernel: "membound:...",
       perhaps behind a domain): no function name, so no op to check */
    if (strstr(name, "membound:") && !strpbrk(name, "(<")) return 1;
    if (is_inductor(name) && !inductor_ops_fit(g, K, name)) return 0;
    if (fused_ok && is_inductor(name)) return 1;
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        if (strcmp(patterns[i].kernel, K->name) != 0) continue;
        for (int k = 0; k < 4 && patterns[i].pat[k]; k++)
            if (has_word(name, patterns[i].pat[k])) return 1;
        return 0;
    }
    /* a kernel of several ops that PyTorch has no one kernel for: Inductor's */
    return K->n_nodes > 1 && is_inductor(name);
}

const char *imp_short_name(const char *name, char *buf, size_t size)
{
    static const char *const keys[] = {"_kernel_cuda", "Functor", "triton_", "Memcpy", "_backward"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *p = strstr(name, keys[k]);
        if (!p) continue;
        const char *b = p, *e = p + strlen(keys[k]);
        while (b > name && (isalnum((unsigned char)b[-1]) || b[-1] == '_')) b--;
        while (*e && (isalnum((unsigned char)*e) || *e == '_')) e++;
        if (!strcmp(keys[k], "Memcpy")) e = name + strlen(name);
        snprintf(buf, size, "%.*s", (int)(e - b), b);
        return buf;
    }
    size_t n = strcspn(name, "(<");
    snprintf(buf, size, "%.*s", (int)(n > 60 ? 60 : n), name);
    return buf;
}

/* Lower-case words of s (letters and digits) into w, at most max. */
static int words(const char *s, char w[][32], int max)
{
    int n = 0;
    while (*s && n < max) {
        while (*s && !isalnum((unsigned char)*s)) s++;
        int k = 0;
        while (*s && isalnum((unsigned char)*s)) {
            if (k < 31) w[n][k++] = (char)tolower((unsigned char)*s);
            s++;
        }
        if (k) w[n++][k] = '\0';
    }
    return n;
}

const char *mb_imp_device_id(const char *gpu_name)
{
    char gw[12][32], lw[16][32];
    int ng = words(gpu_name, gw, 12);
    int first = 0; /* the vendor and old family words are no product */
    while (first < ng && (!strcmp(gw[first], "nvidia") || !strcmp(gw[first], "tesla"))) first++;
    if (ng <= first) return NULL;
    const char *best = NULL;
    int best_score = -1;
    for (int i = 0; i < mb_device_count(); i++) {
        const mb_device *d = mb_device_at(i);
        if (strcmp(d->kind, "gpu") != 0) continue;
        int nl = words(d->label, lw, 16), model = 0, score = 0;
        for (int k = 0; k < nl; k++) model |= !strcmp(lw[k], gw[first]);
        if (!model) continue; /* the product (h200, a100, ...) must be the label's */
        for (int j = first + 1; j < ng; j++)
            for (int k = 0; k < nl; k++) score += !strcmp(lw[k], gw[j]);
        if (score > best_score) best_score = score, best = d->name;
    }
    return best;
}

int mb_imp_format_parse(const char *s, mb_imp_format *out)
{
    if (!strcmp(s, "ncu")) { *out = MB_IMP_NCU; return MB_OK; }
    if (!strcmp(s, "torch-trace")) { *out = MB_IMP_TORCH_TRACE; return MB_OK; }
    return MB_EINPUT;
}

imp_launch *imp_launch_add(imp_launches *L)
{
    if (L->n == L->cap) {
        int cap = L->cap ? 2 * L->cap : 64;
        void *p = realloc(L->v, (size_t)cap * sizeof *L->v);
        if (!p) return NULL;
        L->v = p;
        L->cap = cap;
    }
    imp_launch *x = &L->v[L->n++];
    memset(x, 0, sizeof *x);
    x->label = x->gpu = "";
    x->time_s = x->dram_read_bytes = x->dram_write_bytes = NAN;
    return x;
}

/* Strings are kept in blocks of this size (a longer string gets a block of
 * its own): one malloc per 64 KiB, not one per string. */
#define STRING_BLOCK_BYTES ((size_t)1 << 16)

static size_t str_hash(const char *s)
{
    size_t h = 14695981039346656037ULL & SIZE_MAX;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * (size_t)1099511628211ULL;
    return h;
}

/* A copy of s (len bytes and its NUL) in the blocks, or NULL. */
static char *str_store(imp_strings *t, const char *s, size_t len)
{
    size_t head = sizeof(char *), need = len + 1;
    if (!t->block || t->block_used + need > t->block_cap) {
        size_t cap = head + need > STRING_BLOCK_BYTES ? head + need : STRING_BLOCK_BYTES;
        char *b = malloc(cap);
        if (!b) return NULL;
        memcpy(b, &t->block, sizeof t->block);
        t->block = b;
        t->block_used = head;
        t->block_cap = cap;
    }
    char *c = t->block + t->block_used;
    memcpy(c, s, need);
    t->block_used += need;
    return c;
}

const char *imp_intern(imp_launches *L, const char *s)
{
    imp_strings *t = &L->strings;
    if (2 * (t->n + 1) > t->cap) { /* at most half full: probes stay short */
        size_t cap = t->cap ? 2 * t->cap : 256;
        const char **v = calloc(cap, sizeof *v);
        if (!v) return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slot[i]) continue;
            size_t j = str_hash(t->slot[i]) & (cap - 1);
            while (v[j]) j = (j + 1) & (cap - 1);
            v[j] = t->slot[i];
        }
        free(t->slot);
        t->slot = v;
        t->cap = cap;
    }
    size_t j = str_hash(s) & (t->cap - 1);
    for (; t->slot[j]; j = (j + 1) & (t->cap - 1))
        if (!strcmp(t->slot[j], s)) return t->slot[j];
    char *c = str_store(t, s, strlen(s));
    if (!c) return NULL;
    t->slot[j] = c;
    t->n++;
    return c;
}

void imp_launches_free(imp_launches *L)
{
    free(L->v);
    free(L->strings.slot);
    for (char *b = L->strings.block; b;) {
        char *prev;
        memcpy(&prev, b, sizeof prev);
        free(b);
        b = prev;
    }
    memset(L, 0, sizeof *L);
}
