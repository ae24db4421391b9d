/* exec_cpu.c — the CPU executor of a plan's kernel list: the blocked
 * evaluation of a kernel (each thread takes contiguous tiles, evaluates every
 * node of the kernel on the tile in f32 and stores only the kernel's writes).
 * Op-at-a-time is the same loop with one node per pass over whole arrays.
 * Lowering evaluates a sin and a cos of one operand as one sincos and
 * repeated subexpressions once; a kernel with a compiled form (jit_cpu.c) runs
 * that on each tile instead of interpreting. A plan with row operations goes
 * to the row executor (rows_run_cpu.c); tensor storage, filling and poisoning are
 * exec_common.c's. Does not time or verify (reference.c). */
#include "kernels_int.h"
#include "mb_child.h"
#include "mb_ops.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

const char *mb_kern_exec_name(mb_kern_exec e)
{
    switch (e) {
    case MB_KERN_EXEC_AUTO: return "auto";
    case MB_KERN_EXEC_OPWISE: return "opwise";
    case MB_KERN_EXEC_BLOCKED: return "blocked";
    case MB_KERN_EXEC_COUNT: break;
    }
    return "?";
}

int mb_kern_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void mb_kern_set_threads(int n)
{
#ifdef _OPENMP
    if (n <= 0) n = omp_get_num_procs();
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/* ---- programs -------------------------------------------------------------- */

/* A kernel lowered for the tile loop: values 0..n_reads-1 are loaded from
 * memory, values n_reads.. are computed by nodes in order. */
typedef mb_kern_pnode prog_node;

typedef struct prog {
    int n_reads, n_nodes, n_writes;
    int *val_node;          /* node id of each value */
    const void **src;       /* reads: storage */
    mb_dtype *src_dt;
    prog_node *nodes;
    int *w_val;             /* writes: value index, storage, dtype, streaming */
    void **w_dst;
    mb_dtype *w_dt;
    int *w_nt;
    int *slot;              /* tile buffer of each value, -1 for f32 reads
                               (used in place); buffers are reused once a value
                               is dead, so a long kernel's tiles stay in L1 */
    int n_slots;
    int raw_copy;           /* one COPY of a read into the same dtype: byte copy */
    mb_kern_tile_fn jit_fn; /* compiled form (jit_cpu.c), NULL: interpret */
} prog;

static void prog_free(prog *pr)
{
    free(pr->val_node);
    free(pr->src);
    free(pr->src_dt);
    free(pr->nodes);
    free(pr->w_val);
    free(pr->w_dst);
    free(pr->w_dt);
    free(pr->w_nt);
    free(pr->slot);
}

static int find_val(const prog *pr, int nv, int node)
{
    for (int v = nv - 1; v >= 0; v--)
        if (pr->val_node[v] == node) return v;
    return -1;
}

/* Gives every value that needs a tile buffer (16-bit reads, computed values)
 * a slot, reusing the slot of a value after its last use. A node's output
 * never shares a slot with its own operands; written values live to the end
 * of the tile. Measured on a 2-vCPU Zen 4 guest, n = 2^25 f32: sigmoid3's
 * recompute_bwd (13 values, 26 KiB of tiles, one per value) went from
 * 70.9 ms to 60.1 ms once its tiles fit in L1. */
static int assign_slots(prog *pr)
{
    int nv = pr->n_reads + pr->n_nodes;
    int *last = malloc((size_t)(nv + 1) * sizeof(int));
    int *free_list = malloc((size_t)(nv + 1) * sizeof(int));
    pr->slot = malloc((size_t)(nv + 1) * sizeof(int));
    if (!last || !free_list || !pr->slot) {
        free(last);
        free(free_list);
        return -1;
    }
    for (int v = 0; v < nv; v++) last[v] = v < pr->n_reads ? -1 : v - pr->n_reads;
    for (int j = 0; j < pr->n_nodes; j++) {
        if (pr->nodes[j].va >= 0) last[pr->nodes[j].va] = j;
        if (pr->nodes[j].vb >= 0) last[pr->nodes[j].vb] = j;
    }
    for (int w = 0; w < pr->n_writes; w++) last[pr->w_val[w]] = pr->n_nodes;
    int n_free = 0, n_slots = 0;
    for (int r = 0; r < pr->n_reads; r++)
        pr->slot[r] = pr->src_dt[r] == MB_F32 ? -1 : n_slots++;
    for (int j = 0; j < pr->n_nodes; j++) {
        int v = pr->n_reads + j;
        /* a pair's second value is written with the first: its slot is
         * taken here, before this node's dead operands are released */
        if (!pr->nodes[j].skip) pr->slot[v] = n_free ? free_list[--n_free] : n_slots++;
        if (pr->nodes[j].pair >= 0) pr->slot[pr->nodes[j].pair] = n_free ? free_list[--n_free] : n_slots++;
        /* operands (and an unused result) whose last use is this node */
        int dead[3] = {pr->nodes[j].va, pr->nodes[j].vb, v};
        for (int d = 0; d < 3; d++) {
            int u = dead[d];
            if (u < 0 || last[u] != j || pr->slot[u] < 0) continue;
            if (d == 1 && dead[0] == u) continue; /* x*x: free once */
            free_list[n_free++] = pr->slot[u];
        }
    }
    pr->n_slots = n_slots;
    free(last);
    free(free_list);
    return 0;
}

/* pr's evaluated nodes from nodes[0..n_nodes) (pr's n_reads reads set):
 * mb_lower_nodes's rule, into node_val (graph node -> value). Returns -1
 * when out of memory. */
static int lower_values(prog *pr, const mb_graph *g, const int *nodes, int n_nodes, int *node_val)
{
    const int nr = pr->n_reads;
    int *common = malloc((size_t)(3 * n_nodes + 1) * sizeof(int));
    unsigned char *ev = malloc((size_t)n_nodes + 1);
    if (!common || !ev || mb_lower_nodes(g, nodes, n_nodes, common, common + n_nodes, ev)) {
        free(common);
        free(ev);
        return -1;
    }
    int *pair = common + n_nodes, *pnode = common + 2 * n_nodes; /* kernel index -> pr node */
    for (int i = 0; i < g->n_nodes; i++) node_val[i] = -1;
    for (int r = 0; r < nr; r++) node_val[pr->val_node[r]] = r;
    pr->n_nodes = 0;
    for (int j = 0; j < n_nodes; j++) {
        const mb_node *nd = &g->nodes[nodes[j]];
        pnode[j] = -1;
        if (nd->op == MB_OP_INPUT) continue;
        if (ev[j] == 0) {
            node_val[nodes[j]] = node_val[nodes[common[j]]];
            continue;
        }
        prog_node pn = {nd->op, -1, -1, (float)nd->scalar[0], (float)nd->scalar[1], -1, ev[j] == 3};
        int ar = mb_op_arity(nd->op);
        if (ar >= 1 && nd->arg[0] >= 0) pn.va = node_val[nd->arg[0]];
        if (ar >= 2 && nd->arg[1] >= 0) pn.vb = node_val[nd->arg[1]];
        pnode[j] = pr->n_nodes;
        pr->nodes[pr->n_nodes] = pn;
        pr->val_node[nr + pr->n_nodes] = nodes[j];
        node_val[nodes[j]] = nr + pr->n_nodes++;
    }
    for (int j = 0; j < n_nodes; j++)
        if (ev[j] == 2) pr->nodes[pnode[j]].pair = nr + pnode[pair[j]];
    free(common);
    free(ev);
    return 0;
}

/* Lowers (nodes, writes) into pr; every operand not computed by nodes becomes
 * a read from its storage in t. */
static int prog_build(const mb_kern_tensors *t, const int *nodes, int n_nodes,
                      const int *writes, int n_writes, const char *kname, prog *pr,
                      mb_err *err)
{
    const mb_graph *g = t->plan->g;
    memset(pr, 0, sizeof *pr);
    int cap = 2 * n_nodes + 2;
    pr->val_node = malloc((size_t)cap * sizeof(int));
    pr->src = malloc((size_t)cap * sizeof(void *));
    pr->src_dt = malloc((size_t)cap * sizeof(mb_dtype));
    pr->nodes = malloc((size_t)(n_nodes + 1) * sizeof(prog_node));
    pr->w_val = malloc((size_t)(n_writes + 1) * sizeof(int));
    pr->w_dst = malloc((size_t)(n_writes + 1) * sizeof(void *));
    pr->w_dt = malloc((size_t)(n_writes + 1) * sizeof(mb_dtype));
    pr->w_nt = malloc((size_t)(n_writes + 1) * sizeof(int));
    if (!pr->val_node || !pr->src || !pr->src_dt || !pr->nodes || !pr->w_val || !pr->w_dst ||
        !pr->w_dt || !pr->w_nt) {
        prog_free(pr);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    /* computed set: non-input nodes of the kernel */
    int n_comp = 0;
    int *comp = malloc((size_t)(n_nodes + 1) * sizeof(int));
    if (!comp) {
        prog_free(pr);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    for (int j = 0; j < n_nodes; j++)
        if (g->nodes[nodes[j]].op != MB_OP_INPUT) comp[n_comp++] = nodes[j];
    /* reads: operands not computed here, in first-use order, plus input nodes */
    int nr = 0;
    for (int j = 0; j < n_comp; j++) {
        const mb_node *nd = &g->nodes[comp[j]];
        for (int a = 0; a < mb_op_arity(nd->op); a++) {
            int src = nd->arg[a];
            if (src < 0) continue;
            int inside = 0;
            for (int q = 0; q < j; q++)
                if (comp[q] == src) inside = 1;
            if (inside || find_val(pr, nr, src) >= 0) continue;
            if (!t->data[src]) {
                int node = comp[j];
                free(comp);
                prog_free(pr);
                return mb_err_set(err, MB_EINPUT,
                                  "kernel '%s': operand %d of node %d is neither read nor computed",
                                  kname, src, node);
            }
            pr->val_node[nr] = src;
            pr->src[nr] = t->data[src];
            pr->src_dt[nr] = g->nodes[src].dtype;
            nr++;
        }
    }
    pr->n_reads = nr;
    /* value of each graph node inside the kernel, lowered as the model counts
     * it (mb_lower_nodes): a node equal to an earlier one takes its value
     * (common subexpressions are evaluated once), and a sin and a cos of one
     * operand are one sincos, the earlier evaluating both (2-vCPU Zen 4 guest,
     * SLEEF u10 AVX-512, one thread, L1-resident: sin 2.72 and cos 2.10 Gelem/s
     * against 2.0-2.07 for sincos: the pair takes 1.7x the time apart;
     * y = sin(x)**2 + cos(x)**2 fused at 2^24 went from 18.9 to 13.5 ms
     * interpreted, bench/cpu_fused.c) */
    int *node_val = malloc((size_t)g->n_nodes * sizeof(int));
    if (!node_val || lower_values(pr, g, nodes, n_nodes, node_val)) {
        free(node_val);
        free(comp);
        prog_free(pr);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    free(comp);
    for (int w = 0; w < n_writes; w++) {
        int v = node_val[writes[w]];
        if (v < nr || !t->data[writes[w]]) {
            free(node_val);
            prog_free(pr);
            return mb_err_set(err, MB_EINPUT, "kernel '%s': writes node %d that it does not compute",
                              kname, writes[w]);
        }
        mb_dtype dt = g->nodes[writes[w]].dtype;
        pr->w_val[w] = v;
        pr->w_dst[w] = t->data[writes[w]];
        pr->w_dt[w] = dt;
        pr->w_nt[w] = t->n * (int64_t)mb_dtype_bytes(dt) >= t->nt_min_bytes;
    }
    free(node_val);
    pr->n_writes = n_writes;
    int rc = assign_slots(pr);
    if (rc) {
        prog_free(pr);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    /* compiled when it evaluates two or more ops on f32 only */
    int evaluated = 0, all_f32 = 1;
    for (int j = 0; j < pr->n_nodes; j++) evaluated += !pr->nodes[j].skip;
    for (int r = 0; r < nr; r++) all_f32 &= pr->src_dt[r] == MB_F32;
    for (int w = 0; w < n_writes; w++) all_f32 &= pr->w_dt[w] == MB_F32;
    if (evaluated >= 2 && all_f32 && nr <= MB_KERN_JIT_IO_MAX && n_writes <= MB_KERN_JIT_IO_MAX)
        pr->jit_fn = mb_kern_jit_lookup(nr, pr->nodes, pr->n_nodes, pr->w_val, n_writes);
    pr->raw_copy = pr->n_nodes == 1 && n_writes == 1 && nr == 1 && pr->nodes[0].op == MB_OP_COPY &&
                   pr->nodes[0].va == 0 && pr->src_dt[0] == pr->w_dt[0];
    return MB_OK;
}

static void prog_run(const prog *pr, int64_t n)
{
    int64_t n_tiles = (n + MB_KERN_TILE - 1) / MB_KERN_TILE;
    int nv = pr->n_reads + pr->n_nodes;
    int any_nt = 0;
    for (int w = 0; w < pr->n_writes; w++) any_nt |= pr->w_nt[w];
    if (pr->raw_copy) {
        size_t esz = mb_dtype_bytes(pr->src_dt[0]);
        const char *s = (const char *)pr->src[0];
        char *d = (char *)pr->w_dst[0];
        int nt = pr->w_nt[0];
#pragma omp parallel if (n_tiles > 1)
        {
#pragma omp for schedule(static)
            for (int64_t tile = 0; tile < n_tiles; tile++) {
                if (mb_intr_pending()) continue; /* run_nodes says so */
                int64_t start = tile * MB_KERN_TILE;
                int64_t len = n - start < MB_KERN_TILE ? n - start : MB_KERN_TILE;
                mb_kern_vec_copy(s + (size_t)start * esz, d + (size_t)start * esz, pr->src_dt[0],
                                 len, nt);
            }
            if (nt) mb_kern_vec_sfence();
        }
        return;
    }
    if (pr->jit_fn) {
#pragma omp parallel if (n_tiles > 1)
        {
            const float *src[MB_KERN_JIT_IO_MAX];
            float *dst[MB_KERN_JIT_IO_MAX];
#pragma omp for schedule(static)
            for (int64_t tile = 0; tile < n_tiles; tile++) {
                if (mb_intr_pending()) continue;
                int64_t start = tile * MB_KERN_TILE;
                int64_t len = n - start < MB_KERN_TILE ? n - start : MB_KERN_TILE;
                for (int r = 0; r < pr->n_reads; r++) src[r] = (const float *)pr->src[r] + start;
                for (int w = 0; w < pr->n_writes; w++) dst[w] = (float *)pr->w_dst[w] + start;
                pr->jit_fn(src, dst, len, any_nt);
            }
            if (any_nt) mb_kern_vec_sfence();
        }
        return;
    }
#pragma omp parallel if (n_tiles > 1)
    {
        float *buf = aligned_alloc(64, (size_t)(pr->n_slots > 0 ? pr->n_slots : 1) * MB_KERN_TILE * sizeof(float));
        const float **ptr = malloc((size_t)(nv > 0 ? nv : 1) * sizeof(float *));
        if (buf && ptr) {
#pragma omp for schedule(static)
            for (int64_t tile = 0; tile < n_tiles; tile++) {
                if (mb_intr_pending()) continue;
                int64_t start = tile * MB_KERN_TILE;
                int64_t len = n - start < MB_KERN_TILE ? n - start : MB_KERN_TILE;
                /* Prefetch the next tile's reads: the loads then overlap this
                 * tile's store phase instead of waiting for it (Zen 4 VM, one
                 * thread, n = 2^25 f32, 2048-element tiles: y = a*b 32 -> 21 ms,
                 * y = (1-s)*s*g 45 -> 28 ms) */
                if (start + MB_KERN_TILE < n)
                    for (int r = 0; r < pr->n_reads; r++) {
                        size_t esz = mb_dtype_bytes(pr->src_dt[r]);
                        const char *nx = (const char *)pr->src[r] + (size_t)(start + MB_KERN_TILE) * esz;
                        int64_t nb = (n - start - MB_KERN_TILE < MB_KERN_TILE ? n - start - MB_KERN_TILE
                                                                               : MB_KERN_TILE) * (int64_t)esz;
                        for (int64_t off = 0; off < nb; off += 64) __builtin_prefetch(nx + off, 0, 3);
                    }
                for (int r = 0; r < pr->n_reads; r++) {
                    mb_dtype dt = pr->src_dt[r];
                    if (dt == MB_F32) {
                        ptr[r] = (const float *)pr->src[r] + start;
                    } else {
                        float *s = buf + (size_t)pr->slot[r] * MB_KERN_TILE;
                        mb_kern_vec_load((const uint16_t *)pr->src[r] + start, dt, s, len);
                        ptr[r] = s;
                    }
                }
                for (int j = 0; j < pr->n_nodes; j++) {
                    const prog_node *pn = &pr->nodes[j];
                    if (pn->skip) continue;
                    int v = pr->n_reads + j;
                    float *o = buf + (size_t)pr->slot[v] * MB_KERN_TILE;
                    const float *a = pn->va >= 0 ? ptr[pn->va] : NULL;
                    if (pn->pair >= 0) {
                        float *o2 = buf + (size_t)pr->slot[pn->pair] * MB_KERN_TILE;
                        int is_sin = pn->op == MB_OP_SIN;
                        mb_kern_vec_sincos(a, pn->sa, is_sin ? o : o2, is_sin ? o2 : o, len);
                        ptr[pn->pair] = o2;
                    } else {
                        mb_kern_vec_apply(pn->op, a, pn->sa, pn->vb >= 0 ? ptr[pn->vb] : NULL,
                                          pn->sb, o, len);
                    }
                    ptr[v] = o;
                }
                for (int w = 0; w < pr->n_writes; w++) {
                    mb_dtype dt = pr->w_dt[w];
                    void *d = (char *)pr->w_dst[w] + (size_t)start * mb_dtype_bytes(dt);
                    mb_kern_vec_store(ptr[pr->w_val[w]], d, dt, len, pr->w_nt[w]);
                }
            }
        } else {
            /* cannot happen for a few KiB; keep the loop's barrier balanced */
#pragma omp for schedule(static)
            for (int64_t tile = 0; tile < n_tiles; tile++) (void)tile;
        }
        if (any_nt) mb_kern_vec_sfence();
        free(buf);
        free(ptr);
    }
}

int mb_kern_kernel_info(const mb_kern_tensors *t, int k, mb_kern_eval_info *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    const mb_plan *p = t->plan;
    if (k < 0 || k >= p->n_kernels)
        return mb_err_set(err, MB_EINPUT, "kernel %d out of range (plan has %d)", k, p->n_kernels);
    const mb_kernel *kn = &p->kernels[k];
    if (p->g->has_row_ops) { /* the row executor: every node, compiled or interpreted */
        out->evaluated = kn->n_nodes;
        out->compiled = mb_kern_rows_compiled(t, kn);
        return MB_OK;
    }
    prog pr;
    int rc = prog_build(t, kn->nodes, kn->n_nodes, kn->writes, kn->n_writes, kn->name, &pr, err);
    if (rc) return rc;
    for (int j = 0; j < pr.n_nodes; j++) {
        out->evaluated += !pr.nodes[j].skip;
        out->sincos += pr.nodes[j].pair >= 0;
    }
    out->compiled = pr.jit_fn != NULL;
    prog_free(&pr);
    return MB_OK;
}

static int run_nodes(mb_kern_tensors *t, const int *nodes, int n_nodes, const int *writes,
                     int n_writes, const char *kname, mb_err *err)
{
    prog pr;
    int rc = prog_build(t, nodes, n_nodes, writes, n_writes, kname, &pr, err);
    if (rc) return rc;
    prog_run(&pr, t->n);
    prog_free(&pr);
    /* a pass cut short by an interrupt (prog_run skips the tiles left) */
    if (mb_intr_pending()) return mb_err_set(err, MB_ERUN, "interrupted");
    return MB_OK;
}

int mb_kern_run_kernel(mb_kern_tensors *t, int k, mb_kern_exec e, mb_err *err)
{
    const mb_plan *p = t->plan;
    if (k < 0 || k >= p->n_kernels)
        return mb_err_set(err, MB_EINPUT, "kernel %d out of range (plan has %d)", k, p->n_kernels);
    const mb_kernel *kn = &p->kernels[k];
    if (p->g->has_row_ops) return mb_kern_rows_run_kernel(t, k, e, err);
    if (e != MB_KERN_EXEC_OPWISE || kn->n_nodes <= 1)
        return run_nodes(t, kn->nodes, kn->n_nodes, kn->writes, kn->n_writes, kn->name, err);
    /* op-at-a-time inside a multi-node kernel: one whole-array pass per node */
    for (int j = 0; j < kn->n_nodes; j++) {
        int node = kn->nodes[j];
        if (p->g->nodes[node].op == MB_OP_INPUT) continue;
        int rc = mb_kern_ensure_storage(t, node, err);
        if (rc) return rc;
        rc = run_nodes(t, &node, 1, &node, 1, kn->name, err);
        if (rc) return rc;
    }
    return MB_OK;
}

int mb_kern_run_plan(mb_kern_tensors *t, mb_kern_exec e, mb_err *err)
{
    for (int k = 0; k < t->plan->n_kernels; k++) {
        int rc = mb_kern_run_kernel(t, k, e, err);
        if (rc) return rc;
    }
    return MB_OK;
}
