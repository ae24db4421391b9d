/* cuda_cols.cu — lowers a column kernel of a plan (a sum over the rows, the
 * gradient of a [cols] weight or bias, and the nodes around it) to the
 * column evaluator's program (cols_eval.cu): host code only, no device
 * needed. Which nodes run per row and which once over the columns after the
 * sums is the CPU column executor's rule (mb_kern_col_phase), so both run a
 * kernel alike. It does not launch (cols_eval.cu) nor allocate the
 * workspace (cuda_plan.cu). */
#include "kernels_cuda_int.cuh"
#include "kernels_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* post[] of K (mb_kern_col_phase) into post (K->n_nodes); -1 when out of
 * memory, else 1 for a column kernel, 0 for a row kernel. */
static int phase_of(const mb_graph *g, const mb_kernel *K, char *post)
{
    char *gp = (char *)malloc((size_t)g->n_nodes + 1);
    if (!gp) return -1;
    mb_kern_col_post(g, gp);
    int any = mb_kern_col_phase(g, K, gp, post);
    free(gp);
    return any;
}

int mb_cuda_col_kernel(const mb_plan *p, int k)
{
    const mb_kernel *K = &p->kernels[k];
    char *post = (char *)malloc((size_t)K->n_nodes + 1);
    if (!post) return 0;
    int any = phase_of(p->g, K, post);
    free(post);
    return any > 0;
}

typedef struct lower {
    const mb_graph *g;
    const mb_kernel *K;
    mb_col_prog *P;
    mb_err *err;
    int64_t cols;
    int slot[MB_COL_MAX_IO + 256]; /* value (reads, then nodes) -> slot, -1 */
} lower;

static int limit(lower *L, const char *what, int max)
{
    return mb_err_set(L->err, MB_EINPUT, "kernel %s has more %s than the CUDA column evaluator takes (%d)",
                      L->K->name, what, max);
}

/* The slot of node u as an operand of K's node j: a read's, or an earlier
 * node's; -1 when it is neither. */
static int operand_slot(const lower *L, int u, int j)
{
    int q = mb_cuda_index_of(L->K->nodes, j, u);
    if (q >= 0) return L->slot[L->K->n_reads + q];
    q = mb_cuda_index_of(L->K->reads, L->K->n_reads, u);
    return q >= 0 ? L->slot[q] : -1;
}

/* Instruction for node j into list (rows phase 0, post 1), operands bound. */
static int add_elem(lower *L, int j, int phase)
{
    mb_col_prog *P = L->P;
    const mb_node *nd = &L->g->nodes[L->K->nodes[j]];
    int *n = phase ? &P->n_post_ins : &P->n_row_ins;
    if (*n == MB_COL_MAX_INS) return limit(L, "instructions", MB_COL_MAX_INS);
    mb_col_ins *in = (phase ? P->post_ins : P->row_ins) + (*n)++;
    memset(in, 0, sizeof *in);
    in->kind = MB_COLI_ELEM;
    in->op = (uint8_t)nd->op;
    in->dst = (uint8_t)L->slot[L->K->n_reads + j];
    in->a = in->b = MB_COL_IMM;
    in->imm_a = (float)nd->scalar[0];
    in->imm_b = nd->scalar_cols ? (float)L->cols : (float)nd->scalar[1];
    for (int a = 0; a < mb_op_arity(nd->op); a++) {
        if (nd->arg[a] < 0) continue;
        int s = operand_slot(L, nd->arg[a], j);
        if (s < 0) return mb_err_set(L->err, MB_EINPUT, "kernel %s: an operand is neither read nor computed",
                                     L->K->name);
        if (a == 0) in->a = (uint8_t)s;
        else in->b = (uint8_t)s;
    }
    return MB_OK;
}

/* The rows phase's and the post phase's instructions, each value a slot. */
static int lower_nodes(lower *L, const char *post)
{
    const mb_graph *g = L->g;
    const mb_kernel *K = L->K;
    mb_col_prog *P = L->P;
    int used = 0;
    for (int v = 0; v < K->n_reads + K->n_nodes; v++) {
        if (used == MB_COL_MAX_SLOTS) return limit(L, "values", MB_COL_MAX_SLOTS);
        L->slot[v] = used++;
    }
    P->n_slots = used;
    for (int j = 0; j < K->n_nodes; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]];
        if (MB_OP_IS_ROW(nd->op) || mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION)
            return mb_err_set(L->err, MB_EINPUT, "kernel %s: a row operation (%s) beside a sum over the rows",
                              K->name, mb_op_name(nd->op));
        if (MB_OP_IS_COLUMN(nd->op)) {
            if (P->n_sums == MB_COL_MAX_SUMS) return limit(L, "sums over the rows", MB_COL_MAX_SUMS);
            if (P->n_row_ins == MB_COL_MAX_INS || P->n_post_ins == MB_COL_MAX_INS)
                return limit(L, "instructions", MB_COL_MAX_INS);
            int s = nd->arg[0] >= 0 ? operand_slot(L, nd->arg[0], j) : -1;
            if (s < 0) return mb_err_set(L->err, MB_EINPUT, "kernel %s: a sum over the rows of no tensor", K->name);
            mb_col_ins *in = &P->row_ins[P->n_row_ins++];
            memset(in, 0, sizeof *in);
            in->kind = MB_COLI_SUM;
            in->a = (uint8_t)s;
            in->b = in->dst = MB_COL_IMM;
            in->sum = (uint8_t)P->n_sums;
            in = &P->post_ins[P->n_post_ins++];
            memset(in, 0, sizeof *in);
            in->kind = MB_COLI_TOTAL;
            in->a = in->b = MB_COL_IMM;
            in->dst = (uint8_t)L->slot[K->n_reads + j];
            in->sum = (uint8_t)P->n_sums++;
            continue;
        }
        /* the rows phase runs every node not after a sum; a [cols] one runs
         * again after the sums, for the nodes there that read it */
        if (!post[j] && add_elem(L, j, 0) != MB_OK) return MB_EINPUT;
        if ((post[j] || nd->shape == MB_SHC_COL) && add_elem(L, j, 1) != MB_OK) return MB_EINPUT;
    }
    return MB_OK;
}

/* The phases each read is loaded in (its slot is its value's); the writes. */
static int lower_io(lower *L, const char *post, void *const *dev)
{
    const mb_graph *g = L->g;
    const mb_kernel *K = L->K;
    mb_col_prog *P = L->P;
    P->n_reads = K->n_reads;
    for (int r = 0; r < K->n_reads; r++) {
        const mb_node *nd = &g->nodes[K->reads[r]];
        mb_col_io *io = &P->reads[r];
        io->p = dev ? dev[K->reads[r]] : NULL;
        io->dt = (uint8_t)nd->dtype;
        io->shape = (uint8_t)mb_cuda_rowt_of(nd);
        io->slot = (uint8_t)L->slot[r];
        io->phase = 0;
        if (mb_cuda_group_of(g, K->reads[r], &io->grp_inner, &io->grp_outer, L->err)) return MB_EINPUT;
        for (int ph = 0; ph < 2; ph++) {
            const mb_col_ins *ins = ph ? P->post_ins : P->row_ins;
            const int n = ph ? P->n_post_ins : P->n_row_ins;
            for (int q = 0; q < n; q++)
                if (ins[q].a == io->slot || ins[q].b == io->slot) io->phase |= (uint8_t)(1u << ph);
        }
        if ((io->phase & 2) && (io->shape == MB_ROWT_FULL || io->shape == MB_ROWT_GCOL || io->shape == MB_ROWT_ROW))
            return mb_err_set(L->err, MB_EINPUT, "kernel %s: a value after the sums over the rows reads a "
                              "[rows, ...] tensor", K->name);
    }
    P->n_writes = K->n_writes;
    for (int w = 0; w < K->n_writes; w++) {
        int j = mb_cuda_index_of(K->nodes, K->n_nodes, K->writes[w]);
        if (j < 0) return mb_err_set(L->err, MB_EINPUT, "kernel %s writes a tensor it reads", K->name);
        const mb_node *nd = &g->nodes[K->writes[w]];
        mb_col_io *io = &P->writes[w];
        io->p = dev ? dev[K->writes[w]] : NULL;
        io->dt = (uint8_t)nd->dtype;
        io->shape = (uint8_t)mb_cuda_rowt_of(nd);
        io->slot = (uint8_t)L->slot[K->n_reads + j];
        io->phase = (uint8_t)(post[j] || nd->shape == MB_SHC_COL);
        if (io->shape == MB_ROWT_SCALAR)
            return mb_err_set(L->err, MB_EINPUT, "kernel %s: a scalar written beside a sum over the rows", K->name);
        if (io->shape == MB_ROWT_GCOL)
            return mb_err_set(L->err, MB_EINPUT, "kernel %s: a tensor broadcast within the leading dimensions "
                              "written beside a sum over the rows is not run on CUDA", K->name);
    }
    return MB_OK;
}

int mb_cuda_col_lower(const mb_plan *p, int k, mb_shape s, int sm_count, void *const *dev,
                      mb_col_prog *P, mb_err *err)
{
    const mb_graph *g = p->g;
    const mb_kernel *K = &p->kernels[k];
    memset(P, 0, sizeof *P);
    if (K->n_reads > MB_COL_MAX_IO || K->n_writes > MB_COL_MAX_IO || K->n_nodes > 200)
        return mb_err_set(err, MB_EINPUT, "kernel %s has %d reads, %d writes: the CUDA column evaluator takes at "
                          "most %d", K->name, K->n_reads, K->n_writes, MB_COL_MAX_IO);
    char *post = (char *)malloc((size_t)K->n_nodes + 1);
    if (!post) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = phase_of(g, K, post);
    if (rc <= 0) {
        free(post);
        return rc < 0 ? mb_err_set(err, MB_ERUN, "out of memory")
                      : mb_err_set(err, MB_EINPUT, "kernel %s is not a column kernel", K->name);
    }
    lower L;
    memset(&L, 0, sizeof L);
    L.g = g;
    L.K = K;
    L.P = P;
    L.err = err;
    L.cols = s.cols;
    rc = lower_nodes(&L, post);
    if (rc == MB_OK) rc = lower_io(&L, post, dev);
    free(post);
    if (rc != MB_OK) return rc;
    /* sums of a row kernel's partial sums (PART): their blocks are the rows */
    int part = 0, rows_read = 0;
    for (int r = 0; r < P->n_reads; r++) {
        if (P->reads[r].shape == MB_ROWT_PART) part = 1, P->reads[r].shape = MB_ROWT_FULL;
        else rows_read |= P->reads[r].shape == MB_ROWT_FULL || P->reads[r].shape == MB_ROWT_GCOL ||
                          P->reads[r].shape == MB_ROWT_ROW;
    }
    if (part && rows_read)
        return mb_err_set(err, MB_EINPUT, "kernel %s sums partial sums beside a tensor's rows: not run on CUDA",
                          K->name);
    if (part) s.rows = s.blocks >= 1 && s.blocks <= s.rows ? s.blocks : 1;
    P->rows = s.rows;
    P->cols = s.cols;
    P->tiles = (int)((s.cols + MB_COL_TILE_COLS - 1) / MB_COL_TILE_COLS);
    /* Splits of the rows: about two blocks an SM in all, each split at least
     * 512 rows, so the splits' sums (a double a column a sum, written once and
     * read once: 16 B) stay under 1/64 of what a sum's operand reads (512
     * rows of 2-byte bf16 at least: 1024 B a column); one split when no sum
     * runs per row. */
    int64_t want = 2 * (int64_t)(sm_count > 0 ? sm_count : 1);
    int64_t by_blocks = (want + P->tiles - 1) / P->tiles, by_rows = (s.rows + 511) / 512;
    int64_t splits = P->n_sums > 0 ? (by_blocks < by_rows ? by_blocks : by_rows) : 1;
    if (splits < 1) splits = 1;
    P->split_rows = (s.rows + splits - 1) / splits;
    P->splits = (int)((s.rows + P->split_rows - 1) / P->split_rows);
    return MB_OK;
}

size_t mb_cuda_col_work_bytes(const mb_col_prog *P)
{
    return (size_t)P->splits * (size_t)P->n_sums * (size_t)P->cols * sizeof(double);
}
