/* cuda_plan.cu — runs a model plan on the GPU: device queries, the plan's
 * tensors in device memory, and for each kernel of the plan the choice of
 * implementation (hand-written fused kernel, per-op kernel, or the evaluator)
 * and its launch.
 *   fill_kernel  poison: every element of a tensor set to one value
 * Hand-written kernels are chosen by matching a kernel's node list against
 * the same kernel of the lecture's variant built by the model itself, so a
 * variant file or --expr that spells the same computation gets them too.
 * It does not time, flush or count (measure/ does). */
#include "kernels_cuda_int.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fill kernel ------------------------------------------------------------ */

template <int DT>
__global__ void __launch_bounds__(MB_CUDA_THREADS) fill_kernel(void *__restrict__ p, float v, int64_t n)
{
    constexpr int V = mb_cuda_st<DT>::V;
    float vv[V];
#pragma unroll
    for (int j = 0; j < V; j++) vv[j] = v;
    const int64_t nv = n / V;
    for (int64_t i = mb_cuda_tid(); i < nv; i += mb_cuda_stride()) mb_cuda_st16<DT>(p, i, vv);
    const int64_t t = nv * V + mb_cuda_tid();
    if (t < n) mb_cuda_st1<DT>(p, t, v);
}

template <int DT>
static cudaError_t launch_fill(void *p, float v, int64_t n, int sm_count, cudaStream_t s)
{
    static int blocks_per_sm = 0;
    cudaError_t e = mb_cuda_occupancy(fill_kernel<DT>, &blocks_per_sm);
    if (e != cudaSuccess) return e;
    const int grid = mb_cuda_grid(blocks_per_sm, (n + mb_cuda_st<DT>::V - 1) / mb_cuda_st<DT>::V, sm_count);
    fill_kernel<DT><<<grid, MB_CUDA_THREADS, 0, s>>>(p, v, n);
    return cudaGetLastError();
}

cudaError_t mb_cuda_fill_launch(void *p, mb_dtype dt, float v, int64_t n, int sm_count, cudaStream_t s)
{
    switch (dt) {
    case MB_F32: return launch_fill<MB_F32>(p, v, n, sm_count, s);
    case MB_BF16: return launch_fill<MB_BF16>(p, v, n, sm_count, s);
    case MB_F16: return launch_fill<MB_F16>(p, v, n, sm_count, s);
    default: return cudaErrorNotSupported;
    }
}

/* ---- devices -------------------------------------------------------------- */

extern "C" int mb_kern_cuda_device_count(char *why, size_t whysz)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* clears the error; why says it */
        if (why && whysz) {
            const char *what = e == cudaErrorNoDevice ? "no CUDA device"
                               : e == cudaErrorInsufficientDriver ? "no usable NVIDIA driver"
                                                                   : "CUDA unavailable";
            snprintf(why, whysz, "%s (cudaGetDeviceCount: %s: %s)", what, cudaGetErrorName(e),
                     cudaGetErrorString(e));
        }
        return 0;
    }
    if (count < 1 && why && whysz) snprintf(why, whysz, "no CUDA device (cudaGetDeviceCount: 0 devices)");
    return count;
}


extern "C" int mb_kern_cuda_open(int ordinal, mb_kern_cuda_device *dev, mb_err *err)
{
    memset(dev, 0, sizeof *dev);
    char why[256];
    int count = mb_kern_cuda_device_count(why, sizeof why);
    if (count < 1) return mb_err_set(err, MB_ERUN, "%s", why);
    if (ordinal < 0 || ordinal >= count)
        return mb_err_set(err, MB_EINPUT, "CUDA device %d does not exist (%d device%s)", ordinal, count,
                          count == 1 ? "" : "s");
    CUDA_TRY(cudaSetDevice(ordinal));
    CUDA_TRY(cudaFree(0));
    cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
    dev->ordinal = ordinal;
    snprintf(dev->name, sizeof dev->name, "%s", prop.name);
    snprintf(dev->pci_bus_id, sizeof dev->pci_bus_id, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID,
             prop.pciDeviceID);
    dev->cc_major = prop.major;
    dev->cc_minor = prop.minor;
    dev->mem_bytes = (int64_t)prop.totalGlobalMem;
    int v = 0;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, ordinal));
    dev->sm_count = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMaxThreadsPerMultiProcessor, ordinal));
    dev->max_threads_per_sm = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, ordinal));
    dev->l2_bytes = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMaxPersistingL2CacheSize, ordinal));
    dev->persisting_l2_max_bytes = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, ordinal));
    dev->smem_per_sm_bytes = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
    dev->smem_optin_bytes = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMaxRegistersPerMultiprocessor, ordinal));
    dev->regs_per_sm = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, ordinal));
    dev->mem_clock_khz = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrGlobalMemoryBusWidth, ordinal));
    dev->bus_width_bits = v;
    CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, ordinal));
    dev->sm_clock_khz = v;
    /* DDR: two transfers per memory clock (HBM's attribute is reported that
     * way: H100 SXM 2619 MHz x 5120 bit -> 3352 GB/s, the datasheet figure). */
    dev->peak_bandwidth_gbs = 2.0 * (double)dev->mem_clock_khz * 1e3 * (double)dev->bus_width_bits / 8.0 / 1e9;
    CUDA_TRY(cudaDriverGetVersion(&dev->driver_version));
    CUDA_TRY(cudaRuntimeGetVersion(&dev->runtime_version));
    return MB_OK;
}

extern "C" double mb_kern_cuda_onchip_kib(const mb_kern_cuda_device *dev)
{
    return ((double)dev->smem_per_sm_bytes + 4.0 * (double)dev->regs_per_sm) / 1024.0;
}

/* ---- hand-written kernel matching ---------------------------------------- */

/* Tensor roles in the lecture's variants. */
enum { R_X, R_G, R_S1, R_S2, R_S3, R_Y, R_GX, R_NONE };

typedef struct hand_entry {
    mb_hand_id id;
    const char *name;
    const char *text;      /* the variant, in the model's language */
    mb_plan_kind plan;
    int kernel;            /* index of the kernel in that plan */
    int n_in, in_role[4];
    int n_out, out_role[4];
    /* filled from the reference plan at first use */
    int ready;             /* 1 usable, -1 the model's plan did not have the expected shape */
    char sig[2048];
    int in_pos[4], out_pos[4]; /* position of each role in the kernel's reads / writes */
} hand_entry;

#define SIG3 "name sigmoid3\ninput x\ny = sigmoid(sigmoid(sigmoid(x)))\noutput y\nbackward\n"
static hand_entry hands[] = {
    {MB_HAND_COPY, "copy", "name copy\ninput x\ny = copy(x)\noutput y\n", MB_PLAN_FUSED, 0,
     1, {R_X}, 1, {R_Y}, 0, "", {0}, {0}},
    {MB_HAND_SIN2_PLUS_COS2, "sin2_plus_cos2",
     "name sin2_plus_cos2\ninput x\ny = sin(x)**2 + cos(x)**2\noutput y\n", MB_PLAN_FUSED, 0,
     1, {R_X}, 1, {R_Y}, 0, "", {0}, {0}},
    {MB_HAND_GELU_TANH, "gelu_tanh",
     "name gelu_tanh\ninput x\ny = 0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))\noutput y\n",
     MB_PLAN_FUSED, 0, 1, {R_X}, 1, {R_Y}, 0, "", {0}, {0}},
    {MB_HAND_SIGMOID3_STORE_FWD, "sigmoid3_store_fwd", SIG3, MB_PLAN_STORE, 0,
     1, {R_X}, 3, {R_S1, R_S2, R_S3}, 0, "", {0}, {0}},
    {MB_HAND_SIGMOID3_STORE_BWD, "sigmoid3_store_bwd", SIG3, MB_PLAN_STORE, 1,
     4, {R_G, R_S1, R_S2, R_S3}, 1, {R_GX}, 0, "", {0}, {0}},
    {MB_HAND_SIGMOID3_RECOMPUTE_FWD, "sigmoid3_recompute_fwd", SIG3, MB_PLAN_RECOMPUTE, 0,
     1, {R_X}, 1, {R_S3}, 0, "", {0}, {0}},
    {MB_HAND_SIGMOID3_RECOMPUTE_BWD, "sigmoid3_recompute_bwd", SIG3, MB_PLAN_RECOMPUTE, 1,
     2, {R_G, R_X}, 1, {R_GX}, 0, "", {0}, {0}},
};
#define N_HANDS (int)(sizeof hands / sizeof hands[0])

/* A kernel's node list as text: each node's op and operands (a position in
 * the kernel, a position in its reads, or the scalar's exact bits), then its
 * writes. Two kernels with the same text compute the same thing from reads in
 * the same order. Returns 0, or -1 when an operand is neither (malformed). */
static int kernel_sig(const mb_plan *p, const mb_kernel *K, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
#define APPEND(...)                                                                      \
    do {                                                                                 \
        int w_ = snprintf(buf + len, len < size ? size - len : 0, __VA_ARGS__);          \
        if (w_ < 0) return -1;                                                           \
        len += (size_t)w_;                                                               \
    } while (0)
    APPEND("r%d:", K->n_reads);
    for (int j = 0; j < K->n_nodes; j++) {
        const mb_node *nd = &p->g->nodes[K->nodes[j]];
        APPEND("%d(", (int)nd->op);
        for (int a = 0; a < mb_op_arity(nd->op); a++) {
            int arg = nd->arg[a];
            if (arg < 0) {
                APPEND("s%a,", nd->scalar[a]);
                continue;
            }
            int q = mb_cuda_index_of(K->nodes, j, arg);
            if (q >= 0) { APPEND("k%d,", q); continue; }
            int r = mb_cuda_index_of(K->reads, K->n_reads, arg);
            if (r < 0) return -1;
            APPEND("r%d,", r);
        }
        APPEND(")");
    }
    APPEND("|");
    for (int w = 0; w < K->n_writes; w++) {
        int q = mb_cuda_index_of(K->nodes, K->n_nodes, K->writes[w]);
        if (q >= 0) APPEND("k%d,", q);
        else APPEND("r%d,", mb_cuda_index_of(K->reads, K->n_reads, K->writes[w]));
    }
#undef APPEND
    return len < size ? 0 : -1;
}

/* Role of node i in a reference graph of the lecture's variants. */
static int role_of(const mb_graph *g, int i)
{
    if (g->n_inputs > 0 && i == g->inputs[0]) return R_X;
    if (g->has_backward && g->n_outputs > 0 && i == g->grad_outputs[0]) return R_G;
    if (g->has_backward && g->n_inputs > 0 && i == g->grad_inputs[0]) return R_GX;
    if (i < g->n_forward && g->nodes[i].op == MB_OP_SIGMOID) {
        int depth = 0;
        for (int j = 0; j < i; j++) depth += g->nodes[j].op == MB_OP_SIGMOID;
        if (depth < 3) return R_S1 + depth;
    }
    if (g->n_outputs > 0 && i == g->outputs[0]) return R_Y;
    return R_NONE;
}

static void hand_prepare(hand_entry *h)
{
    if (h->ready) return;
    h->ready = -1;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_err err;
    if (mb_parse_variant(h->text, "<built-in kernel>", MB_F32, &g, &err) != MB_OK) return;
    if (mb_plan_build(g, h->plan, &p, &err) == MB_OK && h->kernel < p->n_kernels) {
        const mb_kernel *K = &p->kernels[h->kernel];
        int ok = K->n_reads == h->n_in && K->n_writes == h->n_out &&
                 kernel_sig(p, K, h->sig, sizeof h->sig) == 0;
        for (int i = 0; ok && i < h->n_in; i++) {
            h->in_pos[i] = -1;
            for (int r = 0; r < K->n_reads; r++)
                if (role_of(p->g, K->reads[r]) == h->in_role[i]) h->in_pos[i] = r;
            ok = h->in_pos[i] >= 0;
        }
        for (int i = 0; ok && i < h->n_out; i++) {
            h->out_pos[i] = -1;
            for (int w = 0; w < K->n_writes; w++)
                if (role_of(p->g, K->writes[w]) == h->out_role[i]) h->out_pos[i] = w;
            ok = h->out_pos[i] >= 0;
        }
        if (ok) h->ready = 1;
    }
    mb_plan_free(p);
    mb_graph_free(g);
}

/* The hand-written kernel computing K, or NULL. */
static const hand_entry *hand_match(const mb_plan *p, const mb_kernel *K)
{
    char sig[2048];
    if (kernel_sig(p, K, sig, sizeof sig) != 0) return NULL;
    for (int h = 0; h < N_HANDS; h++) {
        hand_prepare(&hands[h]);
        if (hands[h].ready == 1 && !strcmp(sig, hands[h].sig)) return &hands[h];
    }
    return NULL;
}

/* ---- plans ---------------------------------------------------------------- */

typedef struct kernel_rec {
    mb_kern_cuda_impl impl;
    mb_dtype dt;
    /* MB_KERN_CUDA_OP */
    mb_op op;
    int a_node, b_node, y_node;
    float sa, sb;
    /* MB_KERN_CUDA_HAND */
    const hand_entry *hand;
    const void *in[4];
    void *out[4];
    /* MB_KERN_CUDA_EVAL */
    mb_eval_prog *prog;
    /* MB_KERN_CUDA_ROW */
    mb_row_prog *rprog;
    /* MB_KERN_CUDA_COL: the program, its workspace and arrival counters (device) */
    mb_col_prog *cprog;
    /* MB_KERN_CUDA_ROW_OP */
    mb_rowop_args rowop;
    int grid; /* of the last launch */
    int short_of_chip; /* row kernels: runs multi-pass where the model keeps the row on chip */
    char desc[300];
} kernel_rec;

struct mb_kern_cuda_plan {
    const mb_plan *p;
    int64_t n;
    mb_shape shape;
    int64_t *elems; /* per node: elements at shape (mb_tensor_elems_at) */
    const mb_device *spec; /* the model's device of the one-pass choice, or NULL */
    int sm_count;
    void **dev;     /* per node: device buffer or NULL */
    kernel_rec *k;
    int nk;
};

extern "C" const char *mb_kern_cuda_impl_name(mb_kern_cuda_impl i)
{
    switch (i) {
    case MB_KERN_CUDA_OP: return "op";
    case MB_KERN_CUDA_HAND: return "hand";
    case MB_KERN_CUDA_EVAL: return "eval";
    case MB_KERN_CUDA_ROW: return "row";
    case MB_KERN_CUDA_ROW_OP: return "rowop";
    case MB_KERN_CUDA_COL: return "col";
    default: return "?";
    }
}

/* 1 for every node some kernel reads or writes. */
static void stored_nodes(const mb_plan *p, unsigned char *st)
{
    memset(st, 0, (size_t)p->g->n_nodes);
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        for (int i = 0; i < K->n_reads; i++) st[K->reads[i]] = 1;
        for (int i = 0; i < K->n_writes; i++) st[K->writes[i]] = 1;
    }
}

extern "C" int64_t mb_kern_cuda_plan_bytes_shape(const mb_plan *p, mb_shape s)
{
    unsigned char *st = (unsigned char *)malloc((size_t)p->g->n_nodes + 1);
    if (!st) return -1;
    stored_nodes(p, st);
    int64_t total = 0;
    for (int i = 0; i < p->g->n_nodes; i++)
        if (st[i]) total += mb_tensor_elems_at(p->g, i, s) * (int64_t)mb_dtype_bytes(p->g->nodes[i].dtype);
    free(st);
    return total;
}

extern "C" int64_t mb_kern_cuda_plan_bytes(const mb_plan *p, int64_t n)
{
    return mb_kern_cuda_plan_bytes_shape(p, mb_shape_1d(n));
}

/* A free slot (marked busy), or -1 when all are taken. */
static int take_slot(int *busy, int *used)
{
    for (int s = 0; s < MB_EVAL_MAX_SLOTS; s++) {
        if (busy[s]) continue;
        busy[s] = 1;
        if (s + 1 > *used) *used = s + 1;
        return s;
    }
    return -1;
}

static int too_many_values(const mb_kernel *K, mb_err *err)
{
    return mb_err_set(err, MB_EINPUT, "kernel %s needs more than %d live values: too large for the CUDA "
                      "evaluator", K->name, MB_EVAL_MAX_SLOTS);
}

/* Lowers kernel K to an evaluator program: slots by liveness (an operand's
 * slot is reused once its last use has read it). */
static int lower_eval(const mb_kern_cuda_plan *cp, const mb_kernel *K, mb_eval_prog *P, mb_err *err)
{
    const mb_graph *g = cp->p->g;
    memset(P, 0, sizeof *P);
    if (K->n_nodes > MB_EVAL_MAX_INS || K->n_reads > MB_EVAL_MAX_IO || K->n_writes > MB_EVAL_MAX_IO)
        return mb_err_set(err, MB_EINPUT, "kernel %s has %d nodes, %d reads, %d writes: the CUDA evaluator "
                          "takes at most %d, %d, %d", K->name, K->n_nodes, K->n_reads, K->n_writes,
                          MB_EVAL_MAX_INS, MB_EVAL_MAX_IO, MB_EVAL_MAX_IO);
    /* values: reads 0..n_reads-1, then nodes */
    int nv = K->n_reads + K->n_nodes;
    int *last = (int *)malloc(sizeof(int) * (size_t)nv);
    int *slot = (int *)malloc(sizeof(int) * (size_t)nv);
    if (!last || !slot) {
        free(last);
        free(slot);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    int rc = MB_OK;
    for (int v = 0; v < nv; v++) last[v] = -1, slot[v] = -1;
    /* value index of node id `node` as seen from position j, or -1 */
#define VALUE_OF(node, j)                                                               \
    (mb_cuda_index_of(K->nodes, (j), (node)) >= 0 ? K->n_reads + mb_cuda_index_of(K->nodes, (j), (node)) \
                                          : mb_cuda_index_of(K->reads, K->n_reads, (node)))
    for (int j = 0; j < K->n_nodes && rc == MB_OK; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]];
        int ar = mb_op_arity(nd->op);
        if (ar < 1) {
            rc = mb_err_set(err, MB_EINPUT, "kernel %s: node %d is not an operation", K->name, K->nodes[j]);
            break;
        }
        int n_scalar = 0;
        for (int a = 0; a < ar; a++) {
            if (nd->arg[a] < 0) { n_scalar++; continue; }
            int v = VALUE_OF(nd->arg[a], j);
            if (v < 0) {
                rc = mb_err_set(err, MB_EINPUT, "kernel %s: operand %d of node %d is neither read nor computed",
                                K->name, nd->arg[a], K->nodes[j]);
                break;
            }
            last[v] = j;
        }
        if (rc == MB_OK && n_scalar == ar)
            rc = mb_err_set(err, MB_EINPUT, "kernel %s: node %d has only scalar operands", K->name, K->nodes[j]);
    }
    for (int w = 0; w < K->n_writes && rc == MB_OK; w++) {
        int v = VALUE_OF(K->writes[w], K->n_nodes);
        if (v < 0) rc = mb_err_set(err, MB_EINPUT, "kernel %s writes node %d it neither reads nor computes",
                                   K->name, K->writes[w]);
        else last[v] = K->n_nodes; /* live to the end */
    }
    /* allocate slots */
    int busy[MB_EVAL_MAX_SLOTS] = {0};
    int used = 0;
    for (int r = 0; r < K->n_reads && rc == MB_OK; r++) {
        slot[r] = take_slot(busy, &used);
        if (slot[r] < 0) { rc = too_many_values(K, err); break; }
        P->reads[r] = cp->dev[K->reads[r]];
        P->read_dt[r] = (uint8_t)g->nodes[K->reads[r]].dtype;
        P->read_slot[r] = (uint8_t)slot[r];
        if (last[r] < 0) busy[slot[r]] = 0; /* read but unused */
    }
    for (int j = 0; j < K->n_nodes && rc == MB_OK; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]];
        mb_eval_ins *in = &P->ins[j];
        in->op = (uint8_t)nd->op;
        in->a = in->b = MB_EVAL_IMM;
        int ar = mb_op_arity(nd->op);
        for (int a = 0; a < ar; a++) {
            uint8_t s = MB_EVAL_IMM;
            if (nd->arg[a] < 0) in->imm = (float)nd->scalar[a];
            else s = (uint8_t)slot[VALUE_OF(nd->arg[a], j)];
            if (a == 0) in->a = s;
            else in->b = s;
        }
        /* free operands whose last use is here, then take the result's slot
         * (the kernel reads both operands before it writes the result) */
        for (int a = 0; a < ar; a++) {
            if (nd->arg[a] < 0) continue;
            int v = VALUE_OF(nd->arg[a], j);
            if (last[v] == j) busy[slot[v]] = 0;
        }
        int self = K->n_reads + j;
        slot[self] = take_slot(busy, &used);
        if (slot[self] < 0) { rc = too_many_values(K, err); break; }
        in->dst = (uint8_t)slot[self];
        if (last[self] < 0) busy[slot[self]] = 0; /* dead value */
    }
    for (int w = 0; w < K->n_writes && rc == MB_OK; w++) {
        int v = VALUE_OF(K->writes[w], K->n_nodes);
        P->writes[w] = cp->dev[K->writes[w]];
        P->write_dt[w] = (uint8_t)g->nodes[K->writes[w]].dtype;
        P->write_slot[w] = (uint8_t)slot[v];
    }
#undef VALUE_OF
    P->n_ins = K->n_nodes;
    P->n_reads = K->n_reads;
    P->n_writes = K->n_writes;
    P->n_slots = used;
    free(last);
    free(slot);
    return rc;
}

/* 1 if every tensor K reads and every node it computes has dtype dt. */
static int uniform_dtype(const mb_graph *g, const mb_kernel *K, mb_dtype dt)
{
    for (int i = 0; i < K->n_reads; i++)
        if (g->nodes[K->reads[i]].dtype != dt) return 0;
    for (int i = 0; i < K->n_nodes; i++)
        if (g->nodes[K->nodes[i]].dtype != dt) return 0;
    return 1;
}

static mb_op nd0_op(const mb_graph *g, const mb_kernel *K) { return g->nodes[K->nodes[0]].op; }

/* 1 when kernel K is one row op a hand-written row kernel runs: its
 * operand a full-row read, a norm's weight a [cols] read or a scalar, its
 * result its one write, rows of whole 16-byte vectors. */
static int rowop_fits(const mb_graph *g, const mb_kernel *K, mb_shape s)
{
    if (K->n_nodes != 1 || K->n_writes != 1 || K->writes[0] != K->nodes[0] || !K->online) return 0;
    const mb_node *nd = &g->nodes[K->nodes[0]];
    if (!mb_cuda_rowop_has(nd->op) || nd->arg[0] < 0 || g->nodes[nd->arg[0]].shape != MB_SHC_FULL) return 0;
    if (mb_cuda_index_of(K->reads, K->n_reads, nd->arg[0]) < 0) return 0;
    if (mb_op_arity(nd->op) > 1 && nd->arg[1] >= 0 &&
        (g->nodes[nd->arg[1]].shape != MB_SHC_COL || mb_cuda_index_of(K->reads, K->n_reads, nd->arg[1]) < 0))
        return 0;
    const int v = 16 / mb_dtype_bytes(nd->dtype);
    return s.cols % v == 0 && s.cols >= v;
}

/* choose()'s own flag, beside MB_KERN_CUDA_NO_HAND and _ALL_EVAL: the
 * multi-pass form of a row kernel the model keeps on chip */
#define FLAG_MULTIPASS 0x100

/* The choice of mb_kern_cuda_choose; *hand_out gets the hand-written
 * kernel's entry (MB_KERN_CUDA_HAND), else NULL. Reads the plan only. */
static int choose(const mb_plan *p, int k, mb_shape shape, const mb_device *spec, int flags,
                  mb_kern_cuda_choice *c, const hand_entry **hand_out, mb_err *err)
{
    memset(c, 0, sizeof *c);
    *hand_out = NULL;
    if (k < 0 || k >= p->n_kernels) return mb_err_set(err, MB_EINPUT, "kernel %d of %d", k, p->n_kernels);
    const mb_graph *g = p->g;
    const mb_kernel *K = &p->kernels[k];
    if (K->n_nodes < 1 || K->n_writes < 1)
        return mb_err_set(err, MB_EINPUT, "kernel %s computes or writes nothing", K->name);
    c->dt = g->nodes[K->nodes[K->n_nodes - 1]].dtype;
    int uniform = uniform_dtype(g, K, c->dt);
    if (g->rank == 2 && mb_cuda_col_kernel(p, k)) { /* a sum over the rows: the column evaluator */
        c->impl = MB_KERN_CUDA_COL;
        c->passes = 1;
        snprintf(c->symbol, sizeof c->symbol, "col_eval_kernel");
        mb_col_prog *P = (mb_col_prog *)malloc(sizeof *P);
        if (!P) return mb_err_set(err, MB_ERUN, "out of memory");
        int rc = mb_cuda_col_lower(p, k, shape, spec && spec->sm_count >= 1 ? (int)spec->sm_count : 1, NULL, P, err);
        if (rc == MB_OK) c->smem_bytes = (int64_t)mb_cuda_col_smem(P);
        free(P);
        return rc;
    }
    if (g->has_row_ops) { /* reductions, broadcasting: the row evaluator, passes as the model's */
        c->impl = MB_KERN_CUDA_ROW;
        c->passes = K->passes > 0 ? K->passes : 1;
        c->onepass = K->passes > 1 && spec && mb_kernel_onepass_max_cols(K, spec) >= shape.cols &&
                     !(flags & FLAG_MULTIPASS);
        c->warp = shape.cols <= MB_ROW_WARP_MAX_COLS;
        if (!(flags & (MB_KERN_CUDA_NO_HAND | MB_KERN_CUDA_ALL_EVAL)) && uniform && rowop_fits(g, K, shape) &&
            mb_cuda_rowop_symbol(nd0_op(g, K), c->dt, c->warp, c->onepass, K->online[0], c->symbol,
                                 sizeof c->symbol) == 0) {
            c->impl = MB_KERN_CUDA_ROW_OP;
            c->op = nd0_op(g, K);
            c->smem_bytes = (int64_t)mb_cuda_rowop_smem(c->op, c->dt, c->warp, c->onepass, shape.cols);
            return MB_OK;
        }
        mb_row_prog *P = (mb_row_prog *)malloc(sizeof *P);
        if (!P) return mb_err_set(err, MB_ERUN, "out of memory");
        int rc = mb_cuda_row_lower(p, k, shape, c->onepass, NULL, P, err);
        snprintf(c->symbol, sizeof c->symbol, "%s<%d>", rc == MB_OK && P->blocks > 0 ? "row_part_kernel" : "row_eval_kernel",
                 c->warp);
        if (rc == MB_OK) c->smem_bytes = (int64_t)mb_cuda_row_smem(P, c->warp);
        free(P);
        return rc;
    }

    if (!(flags & (MB_KERN_CUDA_NO_HAND | MB_KERN_CUDA_ALL_EVAL)) && uniform) {
        const hand_entry *h = hand_match(p, K);
        if (h && mb_cuda_hand_symbol(h->id, c->dt, c->symbol, sizeof c->symbol) == 0) {
            c->impl = MB_KERN_CUDA_HAND;
            c->hand = (int)h->id;
            snprintf(c->hand_name, sizeof c->hand_name, "%s", h->name);
            *hand_out = h;
            return MB_OK;
        }
    }
    const mb_node *nd = &g->nodes[K->nodes[0]];
    if (!(flags & MB_KERN_CUDA_ALL_EVAL) && uniform && K->n_nodes == 1 && K->n_writes == 1 &&
        K->writes[0] == K->nodes[0] && mb_op_arity(nd->op) >= 1) {
        /* each tensor operand is one of K's reads (so it has a device buffer);
         * at least one operand is a tensor */
        int ar = mb_op_arity(nd->op);
        int a_t = nd->arg[0] >= 0, b_t = ar > 1 && nd->arg[1] >= 0;
        int ok = (!a_t || mb_cuda_index_of(K->reads, K->n_reads, nd->arg[0]) >= 0) &&
                 (!b_t || mb_cuda_index_of(K->reads, K->n_reads, nd->arg[1]) >= 0) && (a_t || b_t);
        if (ok && mb_cuda_op_symbol(nd->op, c->dt, !a_t, !b_t, c->symbol, sizeof c->symbol, &c->null_params) == 0) {
            c->impl = MB_KERN_CUDA_OP;
            c->op = nd->op;
            return MB_OK;
        }
    }
    c->impl = MB_KERN_CUDA_EVAL;
    snprintf(c->symbol, sizeof c->symbol, "%s", MB_KERN_CUDA_EVAL_SYMBOL);
    return MB_OK;
}

extern "C" int mb_kern_cuda_choose_shape(const mb_plan *p, int k, mb_shape s, const mb_device *dev, int flags,
                                         mb_kern_cuda_choice *c, mb_err *err)
{
    const hand_entry *h;
    return choose(p, k, mb_graph_shape_at(p->g, s), dev, flags, c, &h, err);
}

extern "C" int mb_kern_cuda_choose(const mb_plan *p, int k, int flags, mb_kern_cuda_choice *c, mb_err *err)
{
    const hand_entry *h;
    mb_shape s = p->g->default_shape.rank == 2 ? p->g->default_shape : mb_shape_1d((int64_t)1 << 20);
    return choose(p, k, s, NULL, flags, c, &h, err);
}

static int lower_kernel(mb_kern_cuda_plan *cp, int k, int flags, mb_err *err)
{
    const mb_plan *p = cp->p;
    const mb_graph *g = p->g;
    const mb_kernel *K = &p->kernels[k];
    kernel_rec *R = &cp->k[k];
    mb_kern_cuda_choice c;
    const hand_entry *h;
    if (choose(p, k, cp->shape, cp->spec, flags, &c, &h, err) != MB_OK) return MB_EINPUT;
    R->dt = c.dt;
    if (c.impl == MB_KERN_CUDA_ROW_OP) {
        const mb_node *nd = &g->nodes[K->nodes[0]];
        R->impl = MB_KERN_CUDA_ROW_OP;
        mb_rowop_args *a = &R->rowop;
        a->op = nd->op;
        a->dt = c.dt;
        a->warp = c.warp;
        a->onepass = c.onepass;
        a->online = K->online[0];
        a->x = cp->dev[nd->arg[0]];
        a->w = mb_op_arity(nd->op) > 1 && nd->arg[1] >= 0 ? cp->dev[nd->arg[1]] : NULL;
        a->ws = mb_op_arity(nd->op) > 1 && nd->arg[1] < 0 ? (float)nd->scalar[1] : 1.0f;
        a->y = cp->dev[K->nodes[0]];
        a->rows = cp->shape.rows;
        a->cols = cp->shape.cols;
        a->eps = (float)nd->eps;
    }
    char why[160] = "";
    if (c.impl == MB_KERN_CUDA_ROW || c.impl == MB_KERN_CUDA_ROW_OP || c.impl == MB_KERN_CUDA_COL) {
        int optin = 0, ordinal = 0;
        CUDA_TRY(cudaGetDevice(&ordinal));
        CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
        if (c.onepass && c.smem_bytes > optin) {
            /* the model keeps the row on chip (an SM's shared memory and
             * registers), one block's shared memory cannot: the multi-pass form */
            snprintf(why, sizeof why, "; multi-pass: one pass needs %lld B of shared memory a block, this GPU gives %d",
                     (long long)c.smem_bytes, optin);
            if (choose(p, k, cp->shape, cp->spec, flags | FLAG_MULTIPASS, &c, &h, err) != MB_OK) return MB_EINPUT;
            R->short_of_chip = 1;
        }
        if (c.smem_bytes > optin)
            return mb_err_set(err, MB_EINPUT, "kernel %s at %lld columns: %s needs %lld B of shared memory a block "
                              "for its slots and statistics, this GPU gives a block %d B", K->name,
                              (long long)cp->shape.cols, c.symbol, (long long)c.smem_bytes, optin);
    }
    if (c.impl == MB_KERN_CUDA_ROW_OP) {
        R->rowop.onepass = c.onepass;
        snprintf(R->desc, sizeof R->desc, "rowop:%s %s %s %d pass%s%s%s%s", mb_op_name(R->rowop.op),
                 c.warp ? "warp" : "block", mb_dtype_name(R->dt), c.onepass ? 1 : c.passes,
                 (c.onepass ? 1 : c.passes) == 1 ? "" : "es", c.onepass ? " on chip" : "",
                 R->rowop.online ? " online" : "", why);
        return MB_OK;
    }
    if (c.impl == MB_KERN_CUDA_ROW) {
        R->impl = MB_KERN_CUDA_ROW;
        R->rprog = (mb_row_prog *)malloc(sizeof *R->rprog);
        if (!R->rprog) return mb_err_set(err, MB_ERUN, "out of memory");
        int rc = mb_cuda_row_lower(p, k, cp->shape, c.onepass, cp->dev, R->rprog, err);
        if (rc != MB_OK) return rc;
        snprintf(R->desc, sizeof R->desc, "row:%s %s %d pass%s%s %d ins %d slots %lld B smem%s",
                 c.warp ? "warp" : "block", mb_dtype_name(R->dt), c.passes, c.passes == 1 ? "" : "es",
                 c.onepass ? " on chip" : "", R->rprog->n_ins, R->rprog->n_slots, (long long)c.smem_bytes, why);
        return MB_OK;
    }
    if (c.impl == MB_KERN_CUDA_COL) {
        R->impl = MB_KERN_CUDA_COL;
        R->cprog = (mb_col_prog *)malloc(sizeof *R->cprog);
        if (!R->cprog) return mb_err_set(err, MB_ERUN, "out of memory");
        mb_col_prog *P = R->cprog;
        int rc = mb_cuda_col_lower(p, k, cp->shape, cp->sm_count, cp->dev, P, err);
        if (rc != MB_OK) return rc;
        if (P->n_sums > 0) {
            CUDA_TRY(cudaMalloc(&P->work, mb_cuda_col_work_bytes(P)));
            CUDA_TRY(cudaMalloc(&P->arrived, (size_t)P->tiles * sizeof(unsigned)));
            CUDA_TRY(cudaMemset(P->arrived, 0, (size_t)P->tiles * sizeof(unsigned)));
        }
        snprintf(R->desc, sizeof R->desc, "col:%s %d sums %d+%d ins %d slots %dx%d blocks %lld B smem",
                 mb_dtype_name(R->dt), P->n_sums, P->n_row_ins, P->n_post_ins, P->n_slots, P->tiles, P->splits,
                 (long long)c.smem_bytes);
        return MB_OK;
    }
    if (c.impl == MB_KERN_CUDA_HAND) {
        R->impl = MB_KERN_CUDA_HAND;
        R->hand = h;
        for (int i = 0; i < 4; i++) {
            R->in[i] = i < h->n_in ? cp->dev[K->reads[h->in_pos[i]]] : NULL;
            R->out[i] = i < h->n_out ? cp->dev[K->writes[h->out_pos[i]]] : NULL;
        }
        snprintf(R->desc, sizeof R->desc, "hand:%s %s v%d", h->name, mb_dtype_name(R->dt),
                 R->dt == MB_F32 ? 4 : 8);
        return MB_OK;
    }
    if (c.impl == MB_KERN_CUDA_OP) {
        const mb_node *nd = &g->nodes[K->nodes[0]];
        int ar = mb_op_arity(nd->op);
        R->impl = MB_KERN_CUDA_OP;
        R->op = nd->op;
        R->a_node = nd->arg[0];
        R->sa = nd->arg[0] < 0 ? (float)nd->scalar[0] : 0.0f;
        R->b_node = ar > 1 ? nd->arg[1] : -1;
        R->sb = ar > 1 && nd->arg[1] < 0 ? (float)nd->scalar[1] : 0.0f;
        R->y_node = K->nodes[0];
        snprintf(R->desc, sizeof R->desc, "op:%s %s v%d", mb_op_name(nd->op), mb_dtype_name(R->dt),
                 R->dt == MB_F32 ? 4 : 8);
        return MB_OK;
    }
    R->impl = MB_KERN_CUDA_EVAL;
    R->prog = (mb_eval_prog *)malloc(sizeof *R->prog);
    if (!R->prog) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = lower_eval(cp, K, R->prog, err);
    if (rc != MB_OK) return rc;
    snprintf(R->desc, sizeof R->desc, "eval %d ins %d slots %s%s", R->prog->n_ins, R->prog->n_slots,
             mb_dtype_name(R->dt), uniform_dtype(g, K, R->dt) ? "" : " mixed");
    return MB_OK;
}

extern "C" void mb_kern_cuda_plan_free(mb_kern_cuda_plan *cp)
{
    if (!cp) return;
    /* clean-up: a cudaFree failure can only repeat a sticky error, which
     * the caller's next checked call reports */
    if (cp->dev)
        for (int i = 0; i < cp->p->g->n_nodes; i++)
            if (cp->dev[i]) (void)cudaFree(cp->dev[i]);
    if (cp->k)
        for (int k = 0; k < cp->nk; k++) {
            mb_col_prog *P = cp->k[k].cprog;
            if (P && P->work) (void)cudaFree(P->work);
            if (P && P->arrived) (void)cudaFree(P->arrived);
            free(cp->k[k].prog), free(cp->k[k].rprog), free(P);
        }
    free(cp->dev);
    free(cp->elems);
    free(cp->k);
    free(cp);
}

extern "C" int mb_kern_cuda_plan_new(const mb_plan *p, int64_t n, int sm_count, int flags,
                                     mb_kern_cuda_plan **out, mb_err *err)
{
    return mb_kern_cuda_plan_new_shape(p, mb_shape_1d(n), NULL, sm_count, flags, out, err);
}

extern "C" int mb_kern_cuda_plan_new_shape(const mb_plan *p, mb_shape shape, const mb_device *spec, int sm_count,
                                           int flags, mb_kern_cuda_plan **out, mb_err *err)
{
    *out = NULL;
    shape = mb_graph_shape_at(p->g, shape);
    const int64_t n = mb_shape_elems(shape);
    if (n < 1 || n > MB_N_MAX) return mb_err_set(err, MB_EINPUT, "n = %lld is out of range", (long long)n);
    /* partial sums: a row group an SM (mb_device_partial_blocks on this GPU) */
    const int64_t sms = sm_count > 0 ? sm_count : 1;
    shape.blocks = sms < shape.rows ? sms : shape.rows;
    mb_kern_cuda_plan *cp = (mb_kern_cuda_plan *)calloc(1, sizeof *cp);
    if (!cp) return mb_err_set(err, MB_ERUN, "out of memory");
    int nn = p->g->n_nodes;
    cp->p = p;
    cp->n = n;
    cp->shape = shape;
    cp->spec = spec;
    cp->sm_count = sm_count > 0 ? sm_count : 1;
    cp->nk = p->n_kernels;
    cp->dev = (void **)calloc((size_t)nn + 1, sizeof(void *));
    cp->k = (kernel_rec *)calloc((size_t)p->n_kernels + 1, sizeof(kernel_rec));
    cp->elems = (int64_t *)calloc((size_t)nn + 1, sizeof(int64_t));
    unsigned char *st = (unsigned char *)malloc((size_t)nn + 1);
    if (!cp->dev || !cp->k || !st || !cp->elems) {
        free(st);
        mb_kern_cuda_plan_free(cp);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    stored_nodes(p, st);
    int rc = MB_OK;
    for (int i = 0; i < nn && rc == MB_OK; i++) {
        cp->elems[i] = mb_tensor_elems_at(p->g, i, shape);
        if (!st[i]) continue;
        size_t bytes = (size_t)cp->elems[i] * mb_dtype_bytes(p->g->nodes[i].dtype);
        cudaError_t e = cudaMalloc(&cp->dev[i], bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError(); /* out of memory is not sticky: clear it */
            cp->dev[i] = NULL;
            size_t free_b = 0, total_b = 0;
            (void)cudaMemGetInfo(&free_b, &total_b); /* for the message only: 0 GB free if it fails */
            rc = mb_err_set(err, MB_ERUN, "cudaMalloc of %.3g GB for %s at n = %lld: %s (%.3g GB free of %.3g)",
                            (double)bytes / 1e9, p->g->name, (long long)n, cudaGetErrorName(e),
                            (double)free_b / 1e9, (double)total_b / 1e9);
        }
    }
    free(st);
    for (int k = 0; k < p->n_kernels && rc == MB_OK; k++) rc = lower_kernel(cp, k, flags, err);
    if (rc != MB_OK) {
        mb_kern_cuda_plan_free(cp);
        return rc;
    }
    *out = cp;
    return MB_OK;
}

extern "C" int mb_kern_cuda_plan_kernels(const mb_kern_cuda_plan *cp) { return cp->nk; }

extern "C" int mb_kern_cuda_plan_short_of_chip(const mb_kern_cuda_plan *cp, int k)
{
    return k >= 0 && k < cp->nk ? cp->k[k].short_of_chip : 0;
}

extern "C" mb_kern_cuda_impl mb_kern_cuda_plan_impl(const mb_kern_cuda_plan *cp, int k)
{
    return k >= 0 && k < cp->nk ? cp->k[k].impl : MB_KERN_CUDA_IMPL_COUNT;
}

extern "C" const char *mb_kern_cuda_plan_desc(const mb_kern_cuda_plan *cp, int k)
{
    return k >= 0 && k < cp->nk ? cp->k[k].desc : "";
}

/* ---- data movement -------------------------------------------------------- */

extern "C" int mb_kern_cuda_upload_inputs(mb_kern_cuda_plan *cp, const mb_kern_tensors *t, mb_err *err)
{
    const mb_graph *g = cp->p->g;
    if (t->n != cp->n) return mb_err_set(err, MB_EINPUT, "host tensors have n = %lld, device %lld",
                                         (long long)t->n, (long long)cp->n);
    for (int i = 0; i < g->n_nodes; i++) {
        if (!cp->dev[i] || g->nodes[i].op != MB_OP_INPUT) continue;
        if (!t->data[i]) return mb_err_set(err, MB_EINPUT, "input node %d has no host data", i);
        CUDA_TRY(cudaMemcpy(cp->dev[i], t->data[i], (size_t)cp->elems[i] * mb_dtype_bytes(g->nodes[i].dtype),
                            cudaMemcpyHostToDevice));
    }
    /* cudaMemcpy from pageable memory returns once the data is staged, not
     * when it has landed; and it runs on the legacy stream, which does not
     * order the harness's cudaStreamNonBlocking stream. Wait here, so a
     * kernel launched on any stream afterwards reads the uploaded values. */
    CUDA_TRY(cudaDeviceSynchronize());
    return MB_OK;
}

extern "C" int mb_kern_cuda_poison(mb_kern_cuda_plan *cp, unsigned rep, void *stream, mb_err *err)
{
    const mb_graph *g = cp->p->g;
    float v = mb_kern_poison_value(rep);
    for (int i = 0; i < g->n_nodes; i++) {
        if (!cp->dev[i] || g->nodes[i].op == MB_OP_INPUT) continue;
        CUDA_TRY(mb_cuda_fill_launch(cp->dev[i], g->nodes[i].dtype, v, cp->elems[i], cp->sm_count,
                                     (cudaStream_t)stream));
    }
    return MB_OK;
}

static int download_node(const mb_kern_cuda_plan *cp, mb_kern_tensors *t, int i, mb_err *err)
{
    const mb_graph *g = cp->p->g;
    if (!cp->dev[i] || g->nodes[i].op == MB_OP_INPUT) return MB_OK;
    if (!t->data[i]) return mb_err_set(err, MB_EINPUT, "node %d has no host storage", i);
    CUDA_TRY(cudaMemcpy(t->data[i], cp->dev[i], (size_t)cp->elems[i] * mb_dtype_bytes(g->nodes[i].dtype),
                        cudaMemcpyDeviceToHost));
    return MB_OK;
}

extern "C" int mb_kern_cuda_download_results(const mb_kern_cuda_plan *cp, mb_kern_tensors *t, mb_err *err)
{
    if (t->n != cp->n) return mb_err_set(err, MB_EINPUT, "host tensors have n = %lld, device %lld",
                                         (long long)t->n, (long long)cp->n);
    CUDA_TRY(cudaDeviceSynchronize());
    const mb_plan *p = cp->p;
    for (int r = 0; r < p->n_results; r++)
        if (download_node(cp, t, p->results[r], err) != MB_OK) return MB_ERUN;
    for (int s = 0; s < p->n_saved; s++)
        if (download_node(cp, t, p->saved[s], err) != MB_OK) return MB_ERUN;
    return MB_OK;
}

/* ---- launches ------------------------------------------------------------- */

extern "C" int mb_kern_cuda_launch(mb_kern_cuda_plan *cp, int k, void *stream, mb_err *err)
{
    if (k < 0 || k >= cp->nk) return mb_err_set(err, MB_EINPUT, "kernel %d of %d", k, cp->nk);
    kernel_rec *R = &cp->k[k];
    cudaStream_t s = (cudaStream_t)stream;
    cudaError_t e = cudaErrorNotSupported;
    switch (R->impl) {
    case MB_KERN_CUDA_OP:
        e = mb_cuda_op_launch(R->op, R->dt, R->a_node >= 0 ? cp->dev[R->a_node] : NULL, R->sa,
                              R->b_node >= 0 ? cp->dev[R->b_node] : NULL, R->sb, cp->dev[R->y_node], cp->n,
                              cp->sm_count, s, &R->grid);
        break;
    case MB_KERN_CUDA_HAND:
        e = mb_cuda_hand_launch(R->hand->id, R->dt, R->in, R->out, cp->n, cp->sm_count, s, &R->grid);
        break;
    case MB_KERN_CUDA_EVAL: e = mb_cuda_eval_launch(R->prog, cp->n, cp->sm_count, s, &R->grid); break;
    case MB_KERN_CUDA_ROW: e = mb_cuda_row_launch(R->rprog, cp->sm_count, s, &R->grid); break;
    case MB_KERN_CUDA_ROW_OP: e = mb_cuda_rowop_launch(&R->rowop, cp->sm_count, s, &R->grid); break;
    case MB_KERN_CUDA_COL: e = mb_cuda_col_launch(R->cprog, s, &R->grid); break;
    default: break;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return mb_err_set(err, MB_ERUN, "launch of kernel %s (%s): %s (%s)", cp->p->kernels[k].name, R->desc,
                          cudaGetErrorName(e), cudaGetErrorString(e));
    }
    return MB_OK;
}

extern "C" int mb_kern_cuda_launch_plan(mb_kern_cuda_plan *cp, void *stream, mb_err *err)
{
    for (int k = 0; k < cp->nk; k++)
        if (mb_kern_cuda_launch(cp, k, stream, err) != MB_OK) return MB_ERUN;
    return MB_OK;
}
