/* dtype.c — names of element types, ops, plans and bounds. */
#include "membound_model.h"

#include <string.h>

static const char *const dtype_names[MB_DTYPE_COUNT] = {"f32", "bf16", "f16"};
static const size_t dtype_sizes[MB_DTYPE_COUNT] = {4, 2, 2};

size_t mb_dtype_bytes(mb_dtype t) { return t < MB_DTYPE_COUNT ? dtype_sizes[t] : 0; }
const char *mb_dtype_name(mb_dtype t) { return t < MB_DTYPE_COUNT ? dtype_names[t] : "?"; }

int mb_dtype_parse(const char *s, mb_dtype *out)
{
    /* PyTorch's spellings are accepted too. */
    static const struct { const char *name; mb_dtype t; } alias[] = {
        {"f32", MB_F32}, {"float32", MB_F32}, {"fp32", MB_F32},
        {"bf16", MB_BF16}, {"bfloat16", MB_BF16},
        {"f16", MB_F16}, {"float16", MB_F16}, {"fp16", MB_F16}, {"half", MB_F16},
    };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(s, alias[i].name)) { *out = alias[i].t; return MB_OK; }
    return MB_EINPUT;
}

static const char *const op_names[MB_OP_COUNT] = {
    [MB_OP_INPUT] = "input", [MB_OP_ADD] = "add", [MB_OP_SUB] = "sub",
    [MB_OP_MUL] = "mul", [MB_OP_DIV] = "div", [MB_OP_POW] = "pow",
    [MB_OP_NEG] = "neg", [MB_OP_SIN] = "sin", [MB_OP_COS] = "cos",
    [MB_OP_TAN] = "tan", [MB_OP_TANH] = "tanh", [MB_OP_EXP] = "exp",
    [MB_OP_LOG] = "log", [MB_OP_SQRT] = "sqrt", [MB_OP_RSQRT] = "rsqrt",
    [MB_OP_SIGMOID] = "sigmoid", [MB_OP_RELU] = "relu", [MB_OP_ABS] = "abs",
    [MB_OP_GELU] = "gelu", [MB_OP_COPY] = "copy", [MB_OP_RECIPROCAL] = "reciprocal", [MB_OP_STEP] = "step",
    [MB_OP_SIGN] = "sign", [MB_OP_GELU_GRAD] = "gelu_grad",
};

const char *mb_op_name(mb_op op) { return op < MB_OP_COUNT ? op_names[op] : "?"; }

int mb_op_arity(mb_op op)
{
    switch (op) {
    case MB_OP_INPUT: return 0;
    case MB_OP_ADD: case MB_OP_SUB: case MB_OP_MUL: case MB_OP_DIV: case MB_OP_POW: return 2;
    default: return 1;
    }
}

static const char *const plan_names[MB_PLAN_COUNT] = {"eager", "fused", "store", "recompute", "optimal"};

const char *mb_plan_name(mb_plan_kind k) { return k < MB_PLAN_COUNT ? plan_names[k] : "?"; }

int mb_plan_parse(const char *s, mb_plan_kind *out)
{
    for (int k = 0; k < MB_PLAN_COUNT; k++)
        if (!strcmp(s, plan_names[k])) { *out = (mb_plan_kind)k; return MB_OK; }
    return MB_EINPUT;
}

const char *mb_bound_name(mb_bound b)
{
    static const char *const names[] = {"memory", "compute", "launch"};
    return b <= MB_BOUND_LAUNCH ? names[b] : "?";
}
