/* dtype.c — names of element types, ops, plans and bounds. */
#include "model_int.h"

#include <stdio.h>
#include <string.h>

static const char *const dtype_names[MB_DTYPE_COUNT] = {"f32", "bf16", "f16"};
static const size_t dtype_sizes[MB_DTYPE_COUNT] = {4, 2, 2};

size_t mb_dtype_bytes(mb_dtype t) { return t < MB_DTYPE_COUNT ? dtype_sizes[t] : 0; }
const char *mb_dtype_name(mb_dtype t) { return t < MB_DTYPE_COUNT ? dtype_names[t] : "?"; }

int mb_dtype_parse(const char *s, mb_dtype *out)
{
    /* PyTorch's spellings are accepted too. */
    static const struct { const char *name; mb_dtype t; } alias[] = {
        {"f32", MB_F32}, {"float32", MB_F32}, {"fp32", MB_F32}, {"float", MB_F32},
        {"bf16", MB_BF16}, {"bfloat16", MB_BF16},
        {"f16", MB_F16}, {"float16", MB_F16}, {"fp16", MB_F16}, {"half", MB_F16},
    };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(s, alias[i].name)) { *out = alias[i].t; return MB_OK; }
    return MB_EINPUT;
}

/* One row per op, from op_table.h. */
#define MB_OP_ROW_(E, name, arity, kind, spell, flops, sfu, cls, der, dop, saves, vform, flags,   \
                   weight, pre, post, mag, bwd)                                                    \
    [MB_OP_##E] = {name,  arity, kind,      spell,         {flops, sfu}, cls, der, MB_OP_##dop,   \
                   saves, #vform, (flags), weight, pre, post, mag, bwd},
static const mb_op_info op_rows[MB_OP_COUNT] = {
    [MB_OP_INPUT] = {"input", 0, MB_OPK_INPUT, MB_SPELL_NONE, {0, 0}, MB_COST_ARITH, MB_DER_NONE,
                     MB_OP_INPUT, MB_SAVES_NONE, "MB_V_NONE", 0, 0, NULL, NULL, MB_MAG_VALUE, NULL},
    MB_OP_TABLE(MB_OP_ROW_)
};
#undef MB_OP_ROW_

const mb_op_info *mb_op_info_of(mb_op op)
{
    return (int)op >= 0 && op < MB_OP_COUNT ? &op_rows[op] : &op_rows[MB_OP_INPUT];
}

const char *mb_op_name(mb_op op) { return (int)op >= 0 && op < MB_OP_COUNT ? op_rows[op].name : "?"; }

int mb_op_arity(mb_op op) { return mb_op_info_of(op)->arity; }

int mb_op_parse_call(const char *name, mb_op *out)
{
    for (int op = 1; op < MB_OP_COUNT; op++)
        if (op_rows[op].spell == MB_SPELL_CALL && !strcmp(op_rows[op].name, name)) {
            *out = (mb_op)op;
            return MB_OK;
        }
    return MB_EINPUT;
}

size_t mb_op_call_list(char *buf, size_t size)
{
    size_t len = 0;
    if (size) buf[0] = '\0';
    for (int op = 1; op < MB_OP_COUNT; op++) {
        if (op_rows[op].spell != MB_SPELL_CALL) continue;
        int w = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0, "%s%s",
                         len ? " " : "", op_rows[op].name);
        if (w > 0) len += (size_t)w;
    }
    return len;
}

const char *mb_op_closest_call(const char *name)
{
    int best = 3; /* at most two edits away */
    const char *found = NULL;
    for (int op = 1; op < MB_OP_COUNT; op++) {
        if (op_rows[op].spell != MB_SPELL_CALL) continue;
        int d = mb_edit_distance(name, op_rows[op].name);
        /* and no more than half the name changed: "foo" is not "log" */
        if (d < best && 2 * (size_t)d <= strlen(name)) best = d, found = op_rows[op].name;
    }
    return found;
}

static const char *const plan_names[MB_PLAN_COUNT] = {"eager", "fused", "store", "recompute", "optimal",
                                                               "online"};

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
