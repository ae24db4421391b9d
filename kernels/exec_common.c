/* exec_common.c — what the CPU executors and the float64 checks share: the
 * caches' sizes, tensor storage (allocation, input filling, poisoning,
 * op-at-a-time's temporaries), the results' tolerance, and the column rule.
 * The bottom of kernels/' C files: calls no other of them, and every
 * executor and check may call it. Does not run a kernel nor judge a result. */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL3_CACHE_SIZE) */
#include "kernels_int.h"
#include "mb_child.h"
#include "mb_ops.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the caches ------------------------------------------------------------ */

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

/* Bytes of cpu0's cache index i in sysfs (0: none), its level into *level. */
static int64_t cache_index_bytes(int i, int64_t *level)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    *level = read_sysfs_size(path);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    return read_sysfs_size(path);
}

int64_t mb_kern_llc_bytes(void)
{
    /* sysfs first: the highest cache level's size. glibc's sysconf derives it
     * from CPUID, which a VM may fake (a Zen 4 KVM guest with a 32 MiB L3 in
     * sysfs reports 320 MiB through sysconf) */
    int64_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        int64_t level = 0, v = cache_index_bytes(i, &level);
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
        int64_t level = 0, v = cache_index_bytes(i, &level);
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
    shape = mb_graph_shape_at(p->g, shape);
    int rc0 = mb_graph_check_shape(p->g, shape, err);
    if (rc0) return rc0;
    int64_t n = shape.rows * shape.cols;
    if (shape.rows < 1 || shape.cols < 1 || shape.rows > MB_N_MAX / shape.cols)
        return mb_err_set(err, MB_EINPUT, "n = %lld x %lld is out of range", (long long)shape.rows,
                          (long long)shape.cols);
    if (p->g->has_row_ops && p->g->rank != shape.rank)
        return mb_err_set(err, MB_EINPUT, "variant '%s' is %d-D: give a %s", p->g->name, p->g->rank,
                          p->g->rank == 2 ? "ROWSxCOLS shape" : "1-D size");
    int nn = p->g->n_nodes;
    /* a PART tensor's blocks: one a thread (mb_device_partial_blocks, a
     * CPU spec's sm_count its threads), at most one a row */
    if (shape.blocks < 1) shape.blocks = omp_get_max_threads() < shape.rows ? omp_get_max_threads() : shape.rows;
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

/* ---- what the checks and the column kernels share --------------------------- */

double mb_kern_default_tol(mb_dtype t)
{
    switch (t) {
    case MB_F32: return 1e-4;
    case MB_F16: return 1e-2;
    case MB_BF16: return 6e-2;
    case MB_DTYPE_COUNT: break;
    }
    return 1e-4;
}

double mb_kern_check_tol(const mb_plan *p, double tol)
{
    /* the narrowest dtype a result or a tensor on its way is rounded to (a
     * cast to bf16 inside an f32 graph: LlamaRMSNorm's); inputs are exact */
    mb_dtype worst = MB_F32;
    for (int i = 0; i < p->g->n_nodes; i++) {
        mb_dtype dt = p->g->nodes[i].dtype;
        if (p->g->nodes[i].op != MB_OP_INPUT && mb_kern_default_tol(dt) > mb_kern_default_tol(worst)) worst = dt;
    }
    return tol > 0 ? tol : mb_kern_default_tol(worst);
}

int mb_kern_col_post(const mb_graph *g, char *post)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const mb_node *nd = &g->nodes[i];
        int c = MB_OP_IS_COLUMN(nd->op) && nd->shape != MB_SHC_PART; /* partial sums: a row kernel's */
        for (int a = 0; a < mb_op_arity(nd->op) && !c; a++) c = nd->arg[a] >= 0 && nd->arg[a] < i && post[nd->arg[a]];
        post[i] = (char)c;
        n += c;
    }
    return n;
}

int mb_kern_col_phase(const mb_graph *g, const mb_kernel *K, const char *graph_post, char *post)
{
    int any = 0, all_col = K->n_nodes > 0;
    for (int j = 0; j < K->n_nodes; j++) {
        post[j] = graph_post[K->nodes[j]];
        any |= post[j];
        all_col &= g->nodes[K->nodes[j]].shape == MB_SHC_COL;
    }
    if (!any && all_col)
        for (int j = 0; j < K->n_nodes; j++) post[j] = any = 1;
    return any;
}
