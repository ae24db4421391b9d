/* cuda_rows.cu — lowers one kernel of a plan with row operations to the row
 * evaluator's program (rows_eval.cu): host code only, no device needed.
 * The passes, the passes each value is evaluated in (eval_mask) and the
 * pass each statistic accumulates in (stat_pass, online) are the model's
 * (model/passes.c), so the launch makes exactly the passes the model counts:
 * a read is loaded in the passes of the instructions that use it, which is
 * the model's read_passes (checked here); one pass keeps the full-row reads
 * of two passes or more on chip (the model's live bytes per column).
 * It does not decide one pass against multi-pass (cuda_plan.cu asks the
 * model) nor launch (rows_eval.cu). */
#include "kernels_cuda_int.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_rowval(const mb_node *nd)
{
    return nd->shape == MB_SHC_ROW || nd->shape == MB_SHC_ROWV || nd->shape == MB_SHC_SCALAR;
}

static int popcount(uint32_t m)
{
    int c = 0;
    for (; m; m >>= 1) c += m & 1;
    return c;
}

static int lowest_bit(uint32_t m)
{
    for (int p = 0; p < 32; p++)
        if (m >> p & 1) return p;
    return 0;
}

/* Lowering state: values are K's reads (0..n_reads-1), then its nodes. */
typedef struct lower {
    const mb_graph *g;
    const mb_kernel *K;
    mb_row_prog *P;
    mb_err *err;
    int64_t cols;                   /* the shape's row length: a scalar_cols operand */
    int rv_of[MB_ROW_MAX_IO + 256]; /* value -> row value index, -1 */
    int use_last[MB_ROW_MAX_IO + 256]; /* value -> last instruction using it (n_ins: a write) */
    int def_ins[MB_ROW_MAX_IO + 256];  /* node value -> instruction defining it, -1 */
    uint8_t opnd[MB_ROW_MAX_INS][2];   /* value (not slot) of each operand, 255 none */
} lower;

static int value_of(const lower *L, int node, int before_j)
{
    int q = mb_cuda_index_of(L->K->nodes, before_j, node);
    if (q >= 0) return L->K->n_reads + q;
    return mb_cuda_index_of(L->K->reads, L->K->n_reads, node);
}

static int add_stat(lower *L, int kind, int pass, int dep, int rv, int which, int mean)
{
    mb_row_prog *P = L->P;
    if (P->n_stats == MB_ROW_MAX_STATS) return -1;
    mb_row_stat *s = &P->stats[P->n_stats];
    s->kind = (uint8_t)kind;
    s->pass = (uint8_t)pass;
    s->dep = (uint8_t)(dep < 0 ? 0 : dep);
    s->rv = (uint8_t)(rv < 0 ? MB_ROW_IMM : (MB_ROW_RV | rv));
    s->which = (uint8_t)which;
    s->mean = (uint8_t)mean;
    return P->n_stats++;
}

static mb_row_ins *add_ins(lower *L, int kind, int op, uint32_t mask)
{
    mb_row_prog *P = L->P;
    if (P->n_ins == MB_ROW_MAX_INS) return NULL;
    mb_row_ins *in = &P->ins[P->n_ins];
    memset(in, 0, sizeof *in);
    in->kind = (uint8_t)kind;
    in->op = (uint8_t)op;
    in->mask = mask;
    in->a = in->b = in->dst = MB_ROW_IMM;
    in->stat = in->stat2 = MB_ROW_IMM;
    L->opnd[P->n_ins][0] = L->opnd[P->n_ins][1] = 255;
    P->n_ins++;
    return in;
}

/* Operand a of node (node j of K) into instruction slot `which` (0 a, 1 b):
 * the value it reads, or the scalar (the row length where the node's second
 * scalar is scalar_cols: mean's backward divides by it). -1 when it is
 * neither read nor computed. */
static int bind(lower *L, const mb_node *nd, int j, int a, mb_row_ins *in, int which)
{
    float *imm = which ? &in->imm_b : &in->imm_a;
    if (nd->arg[a] < 0) {
        *imm = a == 1 && nd->scalar_cols ? (float)L->cols : (float)nd->scalar[a];
        return 0;
    }
    int v = value_of(L, nd->arg[a], j);
    if (v < 0) return -1;
    L->opnd[L->P->n_ins - 1][which] = (uint8_t)v;
    return 0;
}

static int too_big(lower *L, const char *what, int max)
{
    return mb_err_set(L->err, MB_EINPUT, "kernel %s has more %s than the CUDA row evaluator takes (%d)",
                      L->K->name, what, max);
}

/* The instructions and statistics of node j. */
static int lower_node(lower *L, int j)
{
    const mb_graph *g = L->g;
    const mb_kernel *K = L->K;
    const int v = K->nodes[j];
    const mb_node *nd = &g->nodes[v];
    const int self = K->n_reads + j;
    const int sp = K->stat_pass[j];
    const uint32_t emask = (uint32_t)K->eval_mask[j];
    mb_row_ins *in;
    if (mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION) {
        int online = K->online[j], src = nd->arg[0];
        if (online) src = g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[0]; /* sum(exp(a - amax(a))): a */
        int kind = online ? MB_ROWS_ONLINE : nd->op == MB_OP_AMAX ? MB_ROWS_MAX : MB_ROWS_SUM;
        int s = add_stat(L, kind, sp, -1, L->rv_of[self], online, nd->op == MB_OP_MEAN);
        if (s < 0) return too_big(L, "statistics", MB_ROW_MAX_STATS);
        if (!(in = add_ins(L, MB_ROWI_STAT, nd->op, 1u << sp))) return too_big(L, "instructions", MB_ROW_MAX_INS);
        in->stat = (uint8_t)s;
        mb_node tmp = *nd;
        tmp.arg[0] = src;
        return bind(L, &tmp, j, 0, in, 0);
    }
    if (MB_OP_IS_ROW(nd->op)) { /* a library op: its statistics, then its output */
        int s1 = -1, s2 = -1;
        switch (nd->op) {
        case MB_OP_SOFTMAX:
        case MB_OP_LOG_SOFTMAX:
            if (K->online[j]) {
                s1 = add_stat(L, MB_ROWS_ONLINE, sp, -1, -1, 0, 0);
            } else {
                s1 = add_stat(L, MB_ROWS_MAX, sp, -1, -1, 0, 0);
                if (s1 >= 0) s2 = add_stat(L, MB_ROWS_SUMEXP, sp + 1, s1, -1, 0, 0);
                if (s2 < 0) s1 = -1;
            }
            break;
        case MB_OP_LAYER_NORM: s1 = add_stat(L, MB_ROWS_WELFORD, sp, -1, -1, 0, 0); break;
        case MB_OP_RMS_NORM: s1 = add_stat(L, MB_ROWS_SUMSQ, sp, -1, -1, 0, 0); break;
        default: return mb_err_set(L->err, MB_EINPUT, "kernel %s: row op %s has no CUDA form", K->name,
                                   mb_op_name(nd->op));
        }
        if (s1 < 0) return too_big(L, "statistics", MB_ROW_MAX_STATS);
        for (int s = s1; s >= 0; s = s == s1 ? s2 : -1) {
            if (!(in = add_ins(L, MB_ROWI_STAT, nd->op, 1u << L->P->stats[s].pass)))
                return too_big(L, "instructions", MB_ROW_MAX_INS);
            in->stat = (uint8_t)s;
            if (bind(L, nd, j, 0, in, 0)) return -1;
        }
        if (!(in = add_ins(L, MB_ROWI_LIB, nd->op, emask))) return too_big(L, "instructions", MB_ROW_MAX_INS);
        in->stat = (uint8_t)s1;
        in->stat2 = (uint8_t)(s2 < 0 ? MB_ROW_IMM : s2);
        in->eps = (float)nd->eps;
        in->imm_b = 1.0f;
        L->def_ins[self] = L->P->n_ins - 1;
        if (bind(L, nd, j, 0, in, 0)) return -1;
        if (mb_op_arity(nd->op) > 1 && bind(L, nd, j, 1, in, 1)) return -1;
        return 0;
    }
    /* a colsum's partial sums (PART): its operand's value, added into the
     * group's row of them where it is written (rows_eval.cu) */
    const mb_op op = nd->shape == MB_SHC_PART ? MB_OP_COPY : nd->op;
    if (!(in = add_ins(L, is_rowval(nd) ? MB_ROWI_RV : MB_ROWI_ELEM, op, emask)))
        return too_big(L, "instructions", MB_ROW_MAX_INS);
    L->def_ins[self] = L->P->n_ins - 1;
    for (int a = 0; a < mb_op_arity(nd->op); a++)
        if (bind(L, nd, j, a, in, a)) return -1;
    return 0;
}

/* Slots by liveness and operand encodings; reads' masks; writes. */
static int assign(lower *L, const mb_shape s, void *const *dev)
{
    const mb_graph *g = L->g;
    const mb_kernel *K = L->K;
    mb_row_prog *P = L->P;
    const int nv = K->n_reads + K->n_nodes;
    int slot[MB_ROW_MAX_IO + 256];
    uint32_t need[MB_ROW_MAX_IO];
    memset(need, 0, sizeof need);
    for (int v = 0; v < nv; v++) slot[v] = -1, L->use_last[v] = -2;
    for (int k = 0; k < P->n_ins; k++)
        for (int w = 0; w < 2; w++) {
            int v = L->opnd[k][w];
            if (v == 255) continue;
            L->use_last[v] = k;
            if (v < K->n_reads) need[v] |= P->ins[k].mask;
        }
    /* writes: a full-row value is stored from its slot after the last instruction */
    P->n_writes = K->n_writes;
    for (int w = 0; w < K->n_writes; w++) {
        int v = value_of(L, K->writes[w], K->n_nodes), j = v - K->n_reads;
        if (v < K->n_reads) return mb_err_set(L->err, MB_EINPUT, "kernel %s writes a tensor it reads", K->name);
        const mb_node *nd = &g->nodes[K->writes[w]];
        mb_row_io *io = &P->writes[w];
        io->p = dev ? dev[K->writes[w]] : NULL;
        io->dt = (uint8_t)nd->dtype;
        io->shape = (uint8_t)mb_cuda_rowt_of(nd);
        io->staged = 0;
        if (mb_cuda_group_of(g, K->writes[w], &io->grp_inner, &io->grp_outer, L->err)) return MB_EINPUT;
        int at = K->stat_pass[j] >= 0 && mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION ? K->stat_pass[j]
                                                                                       : lowest_bit((uint32_t)K->eval_mask[j]);
        io->mask = 1u << at;
        if (MB_ROWT_HAS_COLS(io->shape)) L->use_last[v] = P->n_ins;
        else io->at = (uint8_t)(MB_ROW_RV | L->rv_of[v]);
    }
    int busy[MB_ROW_MAX_SLOTS] = {0}, used = 0;
#define TAKE(v)                                                                     \
    do {                                                                            \
        int s_ = 0;                                                                 \
        while (s_ < MB_ROW_MAX_SLOTS && busy[s_]) s_++;                             \
        if (s_ == MB_ROW_MAX_SLOTS) return too_big(L, "live values", MB_ROW_MAX_SLOTS); \
        busy[s_] = 1;                                                               \
        slot[v] = s_;                                                               \
        if (s_ + 1 > used) used = s_ + 1;                                           \
    } while (0)
    /* reads */
    P->n_reads = K->n_reads;
    int64_t stage = 0;
    for (int r = 0; r < K->n_reads; r++) {
        const mb_node *nd = &g->nodes[K->reads[r]];
        mb_row_io *io = &P->reads[r];
        io->p = dev ? dev[K->reads[r]] : NULL;
        io->dt = (uint8_t)nd->dtype;
        io->shape = (uint8_t)mb_cuda_rowt_of(nd);
        io->mask = need[r];
        io->staged = 0;
        if (mb_cuda_group_of(g, K->reads[r], &io->grp_inner, &io->grp_outer, L->err)) return MB_EINPUT;
        if (!MB_ROWT_HAS_COLS(io->shape)) {
            io->at = (uint8_t)L->rv_of[r];
            continue;
        }
        if (io->shape == MB_ROWT_FULL && K->read_passes && popcount(need[r]) != K->read_passes[r] && need[r])
            return mb_err_set(L->err, MB_EINPUT, "kernel %s: read %d is used in %d passes, the model counts %d",
                              K->name, r, popcount(need[r]), K->read_passes[r]);
        if (io->shape == MB_ROWT_FULL && popcount(need[r]) > 1) {
            io->staged = 1;
            io->stage_off = (uint32_t)stage;
            stage += ((s.cols + 3) / 4 * 4 * (int64_t)mb_dtype_bytes(nd->dtype) + 15) / 16 * 16;
        }
        if (L->use_last[r] < -1) continue; /* unused */
        TAKE(r);
        io->at = (uint8_t)slot[r];
    }
    P->stage_bytes = stage;
    for (int k = 0; k < P->n_ins; k++) {
        mb_row_ins *in = &P->ins[k];
        uint8_t *o[2] = {&in->a, &in->b};
        for (int w = 0; w < 2; w++) {
            int v = L->opnd[k][w];
            if (v == 255) continue;
            *o[w] = (uint8_t)(L->rv_of[v] >= 0 ? (MB_ROW_RV | L->rv_of[v]) : slot[v]);
        }
        for (int w = 0; w < 2; w++) { /* operands whose last use is here */
            int v = L->opnd[k][w];
            if (v != 255 && L->rv_of[v] < 0 && L->use_last[v] == k && slot[v] >= 0) busy[slot[v]] = 0;
        }
        if (in->kind == MB_ROWI_ELEM || in->kind == MB_ROWI_LIB) {
            int v = -1;
            for (int u = K->n_reads; u < nv; u++)
                if (L->def_ins[u] == k) v = u;
            TAKE(v);
            in->dst = (uint8_t)slot[v];
            if (L->use_last[v] < 0) busy[slot[v]] = 0; /* dead */
        } else if (in->kind == MB_ROWI_RV) {
            for (int u = K->n_reads; u < nv; u++)
                if (L->def_ins[u] == k) in->dst = (uint8_t)(MB_ROW_RV | L->rv_of[u]);
        }
    }
#undef TAKE
    for (int w = 0; w < K->n_writes; w++) {
        int v = value_of(L, K->writes[w], K->n_nodes);
        if (MB_ROWT_HAS_COLS(P->writes[w].shape)) P->writes[w].at = (uint8_t)slot[v];
    }
    P->n_slots = used;
    return MB_OK;
}

int mb_cuda_row_lower(const mb_plan *p, int k, mb_shape s, int onepass, void *const *dev, mb_row_prog *P,
                      mb_err *err)
{
    const mb_graph *g = p->g;
    const mb_kernel *K = &p->kernels[k];
    memset(P, 0, sizeof *P);
    if (K->n_reads > MB_ROW_MAX_IO || K->n_writes > MB_ROW_MAX_IO || K->n_nodes > 200)
        return mb_err_set(err, MB_EINPUT, "kernel %s has %d reads, %d writes: the CUDA row evaluator takes at most %d",
                          K->name, K->n_reads, K->n_writes, MB_ROW_MAX_IO);
    if (!K->eval_mask || !K->stat_pass || !K->online)
        return mb_err_set(err, MB_EINPUT, "kernel %s has no passes derived", K->name);
    mb_err local;
    if (!err) err = &local;
    err->msg[0] = '\0';
    lower L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.K = K;
    L.P = P;
    L.err = err;
    L.cols = s.cols;
    const int nv = K->n_reads + K->n_nodes;
    int n_rv = 0;
    for (int v = 0; v < nv; v++) {
        int node = v < K->n_reads ? K->reads[v] : K->nodes[v - K->n_reads];
        L.def_ins[v] = -1;
        L.rv_of[v] = is_rowval(&g->nodes[node]) ? n_rv++ : -1;
    }
    if (n_rv > MB_ROW_MAX_RV) return mb_err_set(err, MB_EINPUT, "kernel %s has more row values than %d", K->name,
                                                MB_ROW_MAX_RV);
    P->n_rv = n_rv;
    for (int j = 0; j < K->n_nodes; j++)
        if (lower_node(&L, j) != 0) {
            if (!err->msg[0]) mb_err_set(err, MB_EINPUT, "kernel %s: an operand is neither read nor computed", K->name);
            return MB_EINPUT;
        }
    if (assign(&L, s, dev) != MB_OK) return MB_EINPUT;
    P->passes = K->passes > 0 ? K->passes : 1;
    P->onepass = onepass && P->stage_bytes > 0;
    P->rows = s.rows; /* rank 1: one row of n */
    P->cols = s.cols;
    for (int w = 0; w < P->n_writes; w++)
        if (P->writes[w].shape == MB_ROWT_PART) {
            if (P->writes[w].dt != MB_F32)
                return mb_err_set(err, MB_EINPUT, "kernel %s: partial sums not in f32", K->name);
            P->blocks = s.blocks >= 1 && s.blocks <= s.rows ? s.blocks : 1;
        }
    for (int q = 0; q < P->n_ins; q++) P->has_cols |= P->ins[q].kind != MB_ROWI_RV;
    for (int r = 0; r < P->n_reads; r++) P->has_cols |= MB_ROWT_HAS_COLS(P->reads[r].shape) && P->reads[r].mask;
    for (int w = 0; w < P->n_writes; w++) P->has_cols |= MB_ROWT_HAS_COLS(P->writes[w].shape);
    return MB_OK;
}
