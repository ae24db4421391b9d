/* mb_op.h — the operations a graph can hold: the enum and the rows of
 * op_table.h (the one list of ops) as the library reads them. Does not
 * define their math (op_math.h) or build graphs (mb_graph.h). */
#ifndef MB_OP_H
#define MB_OP_H

#include "mb_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- operations ------------------------------------------------------- */

/* Every elementwise operation the graph can hold: MB_OP_INPUT, then one per
 * row of op_table.h (the one list of ops; what each column means is there). */
#include "op_table.h"

#define MB_OP_ENUM_(E, ...) MB_OP_##E,
typedef enum mb_op {
    MB_OP_INPUT = 0, /* a graph input (forward input or incoming gradient) */
    MB_OP_TABLE(MB_OP_ENUM_)
    MB_OP_COUNT
} mb_op;
#undef MB_OP_ENUM_

/* The columns of op_table.h. */
typedef enum mb_op_kind { MB_OPK_INPUT = 0, MB_OPK_MAP, MB_OPK_LIBRARY, MB_OPK_REDUCTION, MB_OPK_COLUMN } mb_op_kind;
typedef enum mb_op_spell { MB_SPELL_NONE = 0, MB_SPELL_CALL, MB_SPELL_OPERATOR } mb_op_spell;
typedef enum mb_op_cost_class { MB_COST_ARITH = 0, MB_COST_SFU } mb_op_cost_class;
typedef enum mb_op_deriv {
    MB_DER_NONE = 0, MB_DER_CODE, MB_DER_G_OP_X, MB_DER_G_OP_Y, MB_DER_G_Y, MB_DER_G_DIV_X, MB_DER_PASS
} mb_op_deriv;
enum { MB_SAVES_NONE = 0, MB_SAVES_X = 1, MB_SAVES_Y = 2, MB_SAVES_XY = 3 };
enum { MB_OPF_VEC = 1, MB_OPF_JIT = 2, MB_OPF_POSITIVE = 4, MB_OPF_POW = 8, MB_OPF_ROW = 16 };
/* 1 when op is a row operation (op_table.h's MB_OPF_ROW). */
#define MB_OP_IS_ROW(op) ((mb_op_info_of(op)->flags & MB_OPF_ROW) != 0)
/* 1 when op reduces over the rows (op_table.h's MB_OPK_COLUMN: colsum). */
#define MB_OP_IS_COLUMN(op) (mb_op_info_of(op)->kind == MB_OPK_COLUMN)
typedef enum mb_op_mag { MB_MAG_VALUE = 0, MB_MAG_SUM, MB_MAG_PROD, MB_MAG_QUOT, MB_MAG_PASS } mb_op_mag;

/* Cost of one element of an op, for the compute side of the roofline:
 * fp32 arithmetic flops and special-function (SFU/MUFU) ops. For POW the
 * cost depends on the exponent; see mb_node_cost. */
typedef struct mb_op_cost {
    double flops;
    double sfu_ops;
} mb_op_cost;

/* One row of op_table.h (vform as text: the name of its vec_ops.h macro,
 * "MB_V_NONE" for none). */
typedef struct mb_op_info {
    const char *name;
    int arity;
    mb_op_kind kind;
    mb_op_spell spell;
    mb_op_cost cost;
    mb_op_cost_class cls;
    mb_op_deriv der;
    mb_op dop;
    int saves;
    const char *vform;
    unsigned flags;
    int call_weight;
    const char *probe_pre, *probe_post;
    mb_op_mag mag;
    const char *bwd_kernel; /* PyTorch's fused backward kernel, NULL: composite */
} mb_op_info;

/* The row of op (MB_OP_INPUT's for INPUT and for an op out of range). */
const mb_op_info *mb_op_info_of(mb_op op);
const char *mb_op_name(mb_op op);  /* "add", "sin", ...; "?" out of range */
int mb_op_arity(mb_op op);         /* 0 for INPUT, 1 or 2 */

/* The op spelled name(x) in the language (MB_SPELL_CALL), into *out: MB_OK, or
 * MB_EINPUT when no function has that name. */
int mb_op_parse_call(const char *name, mb_op *out);

/* The language's functions, space-separated in table order, into buf (always
 * terminated); returns the length it needed, as snprintf. */
size_t mb_op_call_list(char *buf, size_t size);

/* The function spelled closest to name (at most two edits away, at most half
 * of name changed), or NULL. */
const char *mb_op_closest_call(const char *name);

#ifdef __cplusplus
}
#endif
#endif
