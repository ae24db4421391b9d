/* exec_cpu.c — CPU executors of a plan's kernel list: tensor storage, input
 * filling, poisoning, and the blocked evaluation of a kernel (each thread takes
 * contiguous tiles, evaluates every node of the kernel on the tile in f32 and
 * stores only the kernel's writes). Op-at-a-time is the same loop with one
 * node per pass over whole arrays. Lowering evaluates a sin and a cos of one
 * operand as one sincos and repeated subexpressions once; a kernel with a
 * compiled form (jit_cpu.c) runs that on each tile instead of interpreting.
 * Does not time or verify (reference.c). */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL3_CACHE_SIZE) */
#include "kernels_int.h"
#include "mb_child.h"
#include "mb_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

static int64_t read_sysfs_size(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    long long v = 0;
    char unit = 0;
    int k = fscanf(f, "%lld%c", &v, &unit);
    fclose(f);
    if (k < 1 || v <= 0) return 0;
    if (unit == 'K') v *= 1024;
    else if (unit == 'M') v *= 1024 * 1024;
    return v;
}

int64_t mb_kern_llc_bytes(void)
{
    /* sysfs first: the highest cache level's size. glibc's sysconf derives it
     * from CPUID, which a VM may fake (a Zen 4 KVM guest with a 32 MiB L3 in
     * sysfs reports 320 MiB through sysconf) */
    int64_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        int64_t level = read_sysfs_size(path);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        int64_t v = read_sysfs_size(path);
        if (v > 0 && level >= best_level) {
            best_level = (int)level;
            best = v;
        }
    }
    if (best > 0) return best;
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0) return l3;
#endif
    return (int64_t)32 << 20;
}

int64_t mb_kern_core_cache_bytes(void)
{
    /* sysfs: level 2 (Zen 4: 1 MiB a core), else the largest level below 3 */
    int64_t best = 0, best_level = 0;
    for (int i = 0; i < 8; i++) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        int64_t level = read_sysfs_size(path);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        int64_t v = read_sysfs_size(path);
        if (v > 0 && level <= 2 && level >= best_level) best_level = level, best = v;
    }
    return best > 0 ? best : (int64_t)1 << 20;
}

int64_t mb_kern_l1_cache_bytes(void)
{
    for (int i = 0; i < 8; i++) {
        char path[128], type[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (read_sysfs_size(path) != 1) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(path, "r");
        int ok = f && fscanf(f, "%31s", type) == 1;
        if (f) fclose(f);
        if (!ok || strcmp(type, "Data")) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        return read_sysfs_size(path);
    }
    return 0;
}

/* ---- storage ------------------------------------------------------------- */

/* 1 for every node the plan keeps in memory. */
static void stored_nodes(const mb_plan *p, unsigned char *st)
{
    const mb_graph *g = p->g;
    memset(st, 0, (size_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == MB_OP_INPUT) st[i] = 1;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *kn = &p->kernels[k];
        for (int j = 0; j < kn->n_reads; j++) st[kn->reads[j]] = 1;
        for (int j = 0; j < kn->n_writes; j++) st[kn->writes[j]] = 1;
    }
    for (int j = 0; j < p->n_results; j++) st[p->results[j]] = 1;
    for (int j = 0; j < p->n_saved; j++) st[p->saved[j]] = 1;
}

int64_t mb_kern_plan_bytes(const mb_plan *p, int64_t n)
{
    int nn = p->g->n_nodes;
    unsigned char *st = malloc((size_t)nn + 1);
    if (!st) return -1;
    stored_nodes(p, st);
    int64_t total = 0;
    for (int i = 0; i < nn; i++)
        if (st[i]) total += n * (int64_t)mb_dtype_bytes(p->g->nodes[i].dtype);
    free(st);
    return total;
}

int64_t mb_kern_plan_peak_bytes(const mb_plan *p, int64_t n, mb_kern_exec e)
{
    int64_t total = mb_kern_plan_bytes(p, n);
    if (total < 0 || e != MB_KERN_EXEC_OPWISE) return total;
    /* op-at-a-time gives every node of a multi-node kernel a full array
     * (ensure_storage), kept until the tensors are freed */
    int nn = p->g->n_nodes;
    unsigned char *st = malloc((size_t)nn + 1);
    if (!st) return -1;
    stored_nodes(p, st);
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *kn = &p->kernels[k];
        if (kn->n_nodes <= 1) continue;
        for (int j = 0; j < kn->n_nodes; j++) {
            int i = kn->nodes[j];
            if (st[i] || p->g->nodes[i].op == MB_OP_INPUT) continue;
            st[i] = 1;
            total += n * (int64_t)mb_dtype_bytes(p->g->nodes[i].dtype);
        }
    }
    free(st);
    return total;
}

/* Stagger between tensors: 17 cache lines, so that up to 64 tensors start at
 * distinct offsets within a 4 KiB page. Large allocations all start at the
 * same page offset; kernels streaming several of them in lockstep then hit the
 * same cache sets (STREAM's OFFSET). Zen 4 VM, n = 2^25 f32, y = a*b fused,
 * one thread: 32.3 ms unstaggered, 11-12 ms staggered (copy: 9.7 ms). */
#define MB_KERN_STAGGER_BYTES (17 * 64)

/* Allocates one array of n elements of t (not touched) at a 64-byte aligned
 * address staggered by slot; *base gets the pointer to free. */
static void *alloc_tensor(int64_t n, mb_dtype t, int slot, void **base, size_t *bytes)
{
    size_t b = (size_t)n * mb_dtype_bytes(t);
    size_t off = (size_t)(slot % 64) * MB_KERN_STAGGER_BYTES;
    size_t rounded = (b + off + 63u) & ~(size_t)63u;
    if (rounded == 0) rounded = 64;
    *bytes = rounded;
    *base = aligned_alloc(64, rounded);
    return *base ? (char *)*base + off : NULL;
}

static inline uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int is_grad_output(const mb_graph *g, int node)
{
    if (!g->has_backward) return 0;
    for (int j = 0; j < g->n_outputs; j++)
        if (g->grad_outputs[j] == node) return 1;
    return 0;
}

/* 1 when the forward graph has an op needing positive arguments. */
static int needs_positive(const mb_graph *g)
{
    for (int i = 0; i < g->n_forward; i++) {
        const mb_node *nd = &g->nodes[i];
        if (mb_op_info_of(nd->op)->flags & MB_OPF_POSITIVE) return 1; /* op_table.h */
        if (nd->op == MB_OP_POW && (nd->arg[1] >= 0 || nd->scalar[1] != (double)(int)nd->scalar[1]))
            return 1;
    }
    return 0;
}

/* Elements of node i's tensor at t's shape. */
static int64_t node_elems(const mb_kern_tensors *t, int i)
{
    return mb_tensor_elems_at(t->plan->g, i, t->shape);
}

/* Fills and poisons go in blocks of 2^20 elements, each block first asking
 * whether the process was interrupted (mb_intr_pending): a block is ~1 ms
 * of one core, so SIGINT/TERM acts within milliseconds at any n (2^28 f32
 * was 6-9 s to a stop, 2^31 never). */
#define FILL_BLOCK ((int64_t)1 << 20)

/* Stores pv into elements [0, n) of d, by blocks as above. */
static void fill_value(void *d, int64_t n, mb_dtype dt, float pv)
{
    const int64_t nb = (n + FILL_BLOCK - 1) / FILL_BLOCK;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        if (mb_intr_pending()) continue;
        const int64_t end = (b + 1) * FILL_BLOCK < n ? (b + 1) * FILL_BLOCK : n;
        for (int64_t e = b * FILL_BLOCK; e < end; e++) mb_store_f32(d, e, dt, pv);
    }
}

void mb_kern_fill_inputs(mb_kern_tensors *t, uint64_t seed)
{
    const mb_graph *g = t->plan->g;
    int positive = needs_positive(g);
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].op != MB_OP_INPUT || !t->data[i]) continue;
        double lo = -2.0, hi = 2.0;
        if (is_grad_output(g, i)) lo = -1.0, hi = 1.0;
        else if (positive) lo = 0.5, hi = 2.0;
        mb_dtype dt = g->nodes[i].dtype;
        void *d = t->data[i];
        int64_t n = node_elems(t, i);
        uint64_t base = splitmix64(seed * 0x100000001b3ull + (uint64_t)i);
        const int64_t nb = (n + FILL_BLOCK - 1) / FILL_BLOCK;
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < nb; b++) {
            if (mb_intr_pending()) continue; /* interrupted: the caller says so */
            const int64_t end = (b + 1) * FILL_BLOCK < n ? (b + 1) * FILL_BLOCK : n;
            for (int64_t e = b * FILL_BLOCK; e < end; e++) {
                double u = (double)(splitmix64(base + (uint64_t)e) >> 11) * 0x1.0p-53;
                float v = (float)(lo + (hi - lo) * u);
                if (v == 0.0f) v = 0.25f;
                mb_store_f32(d, e, dt, v);
            }
        }
    }
}

float mb_kern_poison_value(unsigned rep)
{
    /* finite, exact in f16 and bf16 range, far from every lecture result */
    return 30000.0f + 512.0f * (float)(rep % 32u);
}

void mb_kern_poison(mb_kern_tensors *t, unsigned rep)
{
    const mb_graph *g = t->plan->g;
    float pv = mb_kern_poison_value(rep);
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].op == MB_OP_INPUT || !t->data[i]) continue;
        fill_value(t->data[i], node_elems(t, i), g->nodes[i].dtype, pv);
    }
}

int mb_kern_tensors_alloc(const mb_plan *p, int64_t n, int64_t llc_bytes,
                          mb_kern_tensors *t, mb_err *err)
{
    return mb_kern_tensors_alloc_shape(p, mb_shape_1d(n), llc_bytes, t, err);
}

int mb_kern_tensors_alloc_shape(const mb_plan *p, mb_shape shape, int64_t llc_bytes,
                                mb_kern_tensors *t, mb_err *err)
{
    memset(t, 0, sizeof *t);
    int64_t n = shape.rows * shape.cols;
    if (shape.rows < 1 || shape.cols < 1 || shape.rows > MB_N_MAX / shape.cols)
        return mb_err_set(err, MB_EINPUT, "n = %lld x %lld is out of range", (long long)shape.rows,
                          (long long)shape.cols);
    if (p->g->has_row_ops && p->g->rank != shape.rank)
        return mb_err_set(err, MB_EINPUT, "variant '%s' is %d-D: give a %s", p->g->name, p->g->rank,
                          p->g->rank == 2 ? "ROWSxCOLS shape" : "1-D size");
    int nn = p->g->n_nodes;
    t->plan = p;
    t->n = n;
    t->shape = shape;
    t->data = calloc((size_t)nn + 1, sizeof(void *));
    t->alloc_base = calloc((size_t)nn + 1, sizeof(void *));
    unsigned char *st = malloc((size_t)nn + 1);
    if (!t->data || !t->alloc_base || !st) {
        free(st);
        mb_kern_tensors_free(t);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    stored_nodes(p, st);
    int slot = 0;
    for (int i = 0; i < nn; i++) {
        if (!st[i]) continue;
        size_t b = 0;
        t->data[i] = alloc_tensor(node_elems(t, i), p->g->nodes[i].dtype, slot++, &t->alloc_base[i], &b);
        if (!t->data[i]) {
            free(st);
            int64_t need = mb_kern_plan_bytes(p, n);
            mb_kern_tensors_free(t);
            return mb_err_set(err, MB_ERUN, "cannot allocate %.3g GB for %s at n = %lld",
                              (double)need / 1e9, p->g->name, (long long)n);
        }
        t->alloc_bytes += b;
    }
    free(st);
    if (llc_bytes <= 0) llc_bytes = mb_kern_llc_bytes();
    t->nt_min_bytes = llc_bytes;
    mb_kern_fill_inputs(t, 1);
    mb_kern_poison(t, 0);
    return MB_OK;
}

void mb_kern_tensors_free(mb_kern_tensors *t)
{
    if (t->alloc_base && t->plan)
        for (int i = 0; i < t->plan->g->n_nodes; i++) free(t->alloc_base[i]);
    free(t->data);
    free(t->alloc_base);
    memset(t, 0, sizeof *t);
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

/* Gives node i storage if it has none (a temporary of op-at-a-time), first
 * touched with the threads' static partition. */
int mb_kern_ensure_storage(mb_kern_tensors *t, int i, mb_err *err)
{
    if (t->data[i]) return MB_OK;
    size_t b = 0;
    mb_dtype dt = t->plan->g->nodes[i].dtype;
    void *d = alloc_tensor(node_elems(t, i), dt, i, &t->alloc_base[i], &b);
    if (!d) return mb_err_set(err, MB_ERUN, "cannot allocate a temporary of %zu bytes", b);
    fill_value(d, node_elems(t, i), dt, mb_kern_poison_value(0));
    t->data[i] = d;
    t->alloc_bytes += b;
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
