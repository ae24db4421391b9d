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

int imp_kernel_matches(const mb_graph *g, const mb_kernel *K, int fused_ok, const char *name)
{
    (void)g;
    /* renamed by its NVTX range (--print-nvtx-rename kernel: "membound:...",
       perhaps behind a domain): no function name, so no op to check */
    if (strstr(name, "membound:") && !strpbrk(name, "(<")) return 1;
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
    x->time_s = x->dram_read_bytes = x->dram_write_bytes = NAN;
    return x;
}

void imp_launches_free(imp_launches *L)
{
    for (int i = 0; i < L->n; i++) free(L->v[i].name);
    free(L->v);
    memset(L, 0, sizeof *L);
}
