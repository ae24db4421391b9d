/* attention.c — the model of attention, standard against FlashAttention,
 * forward and backward, on one device. Does not parse attention in the
 * language nor run it; the GEMMs are gemm.c's.
 *
 * Notation: BH = batch x heads, N = seq, d = head_dim, s = bytes an element.
 *
 * Standard attention as PyTorch eager writes it,
 * softmax((q @ k.transpose(-2, -1)) * scale [+ mask], -1) @ v, with the
 * kernels and saved tensors autograd has (gemm-attention-host.md sec. 6,
 * derived from PyTorch's derivatives.yaml and SoftMax.cu [G8][G24]):
 *   forward  bmm q@k^T (N x N x d, BH products) -> S; mul by the scale;
 *            when causal the add of an [N, N] float mask, broadcast over BH
 *            (read once when it stays in the cache beside one product's S in
 *            and out, 3 N^2 s, the cache rule of dram.c; else once a
 *            product); softmax over rows (one read, one write: PyTorch's
 *            warp and shared-memory kernels; a row that does not fit the
 *            shared memory a block gets, SOFTMAX_SMEM_BYTES below, takes the
 *            block kernel, which reads it twice, the second time from the
 *            cache when the rows in flight fit it); bmm P@v.
 *            autograd keeps P (softmax's output, bmm's input): BH N^2 s.
 *   backward bmm dO@v^T -> dP; bmm P^T@dO -> dv; on a GPU dP * P
 *            (SoftMax.cu's softmax_backward_cuda_out forms grad * output
 *            first; a CPU's softmax backward is one kernel, reading dP and
 *            P); the softmax backward kernel (reads that and P, writes dS); dS * scale
 *            (the mask add's gradient passes through, no kernel); bmm dS@k ->
 *            dq; bmm q^T@dS -> dk^T.
 * The recompute plan (standard's kernels; a plan the planner, attn_plan.c,
 * weighs against storing P, as FlashAttention's backward does but unfused):
 * the softmax also writes the f32 log-sum-exp (4 B a row; the max and the
 * sum it forms anyway), which is all it keeps beyond q, k, v; P is freed
 * after bmm P@v. Its backward first makes S again (bmm q@k^T, mul scale, the
 * mask add: the forward's kernels and bytes) and P = exp(x - LSE) in one
 * elementwise kernel (reads x and the LSE, writes P, an exp an entry), then
 * runs the standard backward. The extra cost is that QK^T (2 N^2 d FLOPs a
 * head), those exps and the S and P traffic again; PyTorch's softmax backward
 * needs P and the incoming gradient only, so O is not kept (FlashAttention
 * keeps it for D = rowsum(dO o O)).
 * The bmms are gemm.c's estimates (the dtype's GEMM rate, tile and wave
 * quantization, the tiled traffic); the causal mask does not shorten them
 * (cuBLAS computes the whole product). The others are memory-bound: bytes
 * over the bandwidth the model uses, exponentials at the device's exp rate,
 * launch + max(compute, memory), as every kernel of the model (a plan's
 * first kernel pays kernel_floor_us where the spec has it, as roofline.c's).
 *
 * FlashAttention (Dao et al. 2022, arXiv:2205.14135, Algorithm 1; the
 * log-sum-exp and the backward's parallelism of FlashAttention-2,
 * arXiv:2307.08691, sec. 3): the tiles are the paper's, Bc = ceil(M / 4d)
 * key columns and Br = min(Bc, d) query rows, M the on-chip memory of one
 * SM in elements (onchip_kib x 1024 / s: registers and shared memory, the
 * table's key), each clipped to N. The forward is one kernel, a block a
 * (query tile, head): it reads its Q tile once and streams K and V past it,
 * a key tile at a time, S and P staying on chip; it writes O and the f32
 * log-sum-exp. Theorem 2 counts Theta(N^2 d^2 / M) DRAM accesses: K and V
 * once per query tile, ceil(N / Br) times. The model counts that
 * (io_nocache_bytes) and applies the cache rule: the blocks in flight, one a
 * SM in launch order (query tiles fastest), span heads_in_flight heads;
 * when their K and V (2 N d s each head) fit the cache, K and V come from
 * DRAM once a head, else once per query tile. Causal: a query tile visits
 * the key tiles up to the diagonal, the diagonal's whole (FLOPs, exps and
 * K, V reads follow the tile pairs computed). The backward is three
 * kernels (FlashAttention-2's): a preprocessing one forms D = rowsum(dO o O)
 * (f32) and zeroes the f32 dq accumulator; the main one runs a block a
 * (key tile, head), loads its K and V tile once and walks the query tiles,
 * recomputing S and P = exp(S - LSE) and adding into dq with atomics (Q,
 * dO, LSE, D read and the accumulator read and written once per key tile,
 * or once a head when the heads in flight hold them in the cache), and
 * writes dk and dv; the last converts the accumulator to dq. Its five
 * matmuls are 10 N^2 d FLOPs a head against the forward's 4 N^2 d (2.5x,
 * FlashAttention-2 sec. 4.1). Compute: matmul FLOPs at the dtype's GEMM rate
 * plus the exponentials at the exp rate (FlashAttention-2's softmax runs
 * between a warp's two GEMMs, sec. 3.1: they add), over the wave
 * efficiency of gemm.c (blocks / (waves x SMs), one block a SM; a CPU spec
 * has none). Not modelled: blocks of one head sharing, in the cache, the K
 * and V tile they stream at about the same time (beyond the cache the count
 * is Theorem 2's, an upper bound), tile quantization inside a tile, the smaller
 * per-block rate of a tile narrower than gemm.c's, several blocks a SM, the
 * causal kernel's unequal blocks, and for the standard plan a tensor one
 * kernel writes being read by the next from the cache (each kernel's bytes
 * are its own: at shapes where S fits the L2 the launches dominate).
 *
 * The exp rate: op_exp_geps where calibrate measured one, else the
 * special-function units' sfu_tops, else fp32_tflops / 16 (the key's
 * documented fallback). */
#include "model_int.h"
#include "mb_attention.h"

#include <math.h>
#include <string.h>

/* PyTorch's SoftMax.cu (host_softmax) takes its shared-memory kernel when
 * dim_size < (sharedMemPerBlock - smem_reduction_sz) / sizeof(scalar_t):
 * sharedMemPerBlock is 48 KiB on every GPU of the table (CUDA C++
 * Programming Guide, "Technical Specifications per Compute Capability": the
 * most a block gets without opting in), and the reduction's scratch is a
 * float a warp, 32 of them in the 1024-thread blocks long rows take. */
#define SOFTMAX_SMEM_BYTES (48.0 * 1024 - 32 * 4)

double mb_attn_model_flops(const mb_attn *a)
{
    const double BH = (double)a->batch * (double)a->heads, N = (double)a->seq;
    return 4 * BH * N * N * (double)a->head_dim * (a->backward ? 3.5 : 1) * (a->causal ? 0.5 : 1);
}

const char *mb_attn_plan_name(mb_attn_plan_id p)
{
    return p == MB_ATTN_FLASH ? "flash" : p == MB_ATTN_RECOMPUTE ? "recompute" : "standard";
}

static int is_cpu(const mb_device *d) { return !strcmp(d->kind, "cpu"); }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double mb_attn_peak_bytes(const mb_attn *a, mb_attn_plan_id p)
{
    const double s = (double)mb_dtype_bytes(a->dtype);
    const double BH = (double)a->batch * (double)a->heads, N = (double)a->seq, dd = (double)a->head_dim;
    const double nd = BH * N * dd * s, nn = BH * N * N * s, mask = a->causal ? N * N * s : 0;
    if (p == MB_ATTN_STANDARD || p == MB_ATTN_RECOMPUTE) /* recompute: the same, and the LSE */
        return (a->backward ? 5 * nd + 3 * nn + mask : 4 * nd + 2 * nn + mask) +
               (p == MB_ATTN_RECOMPUTE ? BH * N * 4 : 0);
    return a->backward ? 8 * nd + BH * N * (8 + 4 * dd) : 4 * nd + BH * N * 4;
}

int64_t mb_attn_max_seq(const mb_attn *a, mb_attn_plan_id p, double mem_bytes)
{
    mb_attn t = *a;
    int64_t lo = 0, hi = (int64_t)1 << 50; /* peak(lo) fits, peak(hi) does not: 2^50 > any memory */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        t.seq = mid;
        if (mb_attn_peak_bytes(&t, p) <= mem_bytes) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* The exp rate, per second, and its key. */
static double exp_rate(const mb_device *d, const char **key)
{
    if (d->op_geps[MB_OP_EXP] > 0) return *key = "op_exp_geps", d->op_geps[MB_OP_EXP] * 1e9;
    if (d->sfu_tops > 0) return *key = "sfu_tops", d->sfu_tops * 1e12;
    return *key = "fp32_tflops/16", d->fp32_tflops * 1e12 / 16;
}

typedef struct ctx {
    const mb_attn *a;
    const mb_device *d;
    mb_attn_est *e;
    double s, BH, N, dd;
} ctx;

static void finish(const ctx *c, mb_attn_kernel *k, double compute_s)
{
    k->compute_s = compute_s;
    k->mem_s = (k->dram_read_bytes + k->dram_write_bytes) / (c->e->bandwidth_gbs * 1e9);
    k->launch_s = c->d->launch_overhead_us * 1e-6;
    k->time_s = k->launch_s + fmax(k->compute_s, k->mem_s);
    k->bound = mb_bound_of(k->launch_s, k->mem_s, k->compute_s);
}

static mb_attn_kernel *add(mb_attn_plan *p, const char *name, int backward)
{
    mb_attn_kernel *k = &p->k[p->n_kernels++];
    memset(k, 0, sizeof *k);
    k->name = name;
    k->backward = backward;
    return k;
}

/* A bmm of BH products m x n x k through the GEMM model; nn: its output is
 * seq x seq. */
static int bmm(const ctx *c, mb_attn_plan *p, const char *name, int backward, int64_t m, int64_t n, int64_t kk,
               int nn, mb_err *err)
{
    mb_gemm g = {m, n, kk, c->a->batch * c->a->heads, c->a->dtype, 0, 0};
    mb_gemm_est ge;
    int rc = mb_gemm_estimate(&g, c->d, &ge, err);
    if (rc) return rc;
    mb_attn_kernel *k = add(p, name, backward);
    k->gemm = 1;
    k->flops = ge.flops;
    k->dram_read_bytes = ge.dram_read_bytes;
    k->dram_write_bytes = ge.dram_write_bytes;
    k->nn_write_bytes = nn ? ge.dram_write_bytes : 0;
    k->compute_s = ge.compute_s;
    k->mem_s = ge.mem_s;
    k->launch_s = ge.launch_s;
    k->time_s = ge.time_s;
    k->bound = ge.bound;
    return MB_OK;
}

/* A memory-bound kernel over seq x seq tensors: reads nn_reads of them (plus
 * extra_read bytes), writes one, evaluates exps exponentials. */
static void nn_kernel(const ctx *c, mb_attn_plan *p, const char *name, int backward, double nn_reads,
                      double extra_read, double extra_write, double exps)
{
    const double nn = c->BH * c->N * c->N * c->s;
    mb_attn_kernel *k = add(p, name, backward);
    k->exps = exps;
    k->dram_read_bytes = nn_reads * nn + extra_read;
    k->nn_write_bytes = nn;
    k->dram_write_bytes = nn + extra_write;
    finish(c, k, exps / c->e->exp_per_s);
}

/* On a CPU the softmax and its backward are the language's row kernels,
 * costed as `membound model` costs softmax(x, -1) at [BH N, N]: the spec's
 * calibrated overlap of their memory and their exponentials (serial_fraction_
 * rows), where nn_kernel's max() hid the exponentials under the memory (the
 * softmax 0.57-0.64x of the CPU runs at seq 2048). bwd: the backward's
 * kernel. Its bytes and times into k. */
static int lang_softmax(const ctx *c, mb_attn_kernel *k, int bwd, mb_err *err)
{
    static const char fwd_text[] = "name attn_softmax\ninput x [rows, cols]\ny = softmax(x, -1)\noutput y\n";
    static const char bwd_text[] = "name attn_softmax\ninput x [rows, cols]\ny = softmax(x, -1)\noutput y\nbackward\n";
    mb_graph *g = NULL;
    mb_plan *pl = NULL;
    mb_estimate est;
    memset(&est, 0, sizeof est);
    int rc = mb_parse_variant(bwd ? bwd_text : fwd_text, "<attention softmax>", c->a->dtype, &g, err);
    if (!rc) rc = mb_plan_build_on(g, MB_PLAN_EAGER, c->d, &pl, err);
    /* beyond 2^40 elements (the language's shapes stop at 2^44) at fewer rows,
     * scaled by the rows: far past any cache, each row costs the same */
    const int64_t rows = c->a->batch * c->a->heads * c->a->seq, cap = ((int64_t)1 << 40) / c->a->seq;
    const int64_t rows_e = rows <= cap ? rows : cap > 0 ? cap : 1;
    const double f = (double)rows / (double)rows_e;
    mb_shape sh = {2, rows_e, c->a->seq, 0};
    if (!rc) rc = mb_estimate_plan_shape(pl, sh, c->d, &est, err);
    int found = 0;
    for (int i = 0; !rc && i < pl->n_kernels && !found; i++) {
        if (!!pl->kernels[i].is_backward != bwd) continue;
        const mb_cost *kc = &est.per_kernel[i];
        k->dram_read_bytes = f * (double)kc->dram_read_bytes;
        k->dram_write_bytes = f * (double)kc->dram_write_bytes;
        k->compute_s = f * kc->compute_s;
        k->mem_s = f * kc->mem_s;
        k->launch_s = kc->launch_s;
        k->time_s = kc->launch_s + f * (kc->time_s - kc->launch_s);
        k->bound = kc->bound;
        found = 1;
    }
    if (!rc && !found) rc = mb_err_set(err, MB_ERUN, "attention: no %s softmax kernel", bwd ? "backward" : "forward");
    mb_estimate_free(&est);
    mb_plan_free(pl);
    mb_graph_free(g);
    return rc;
}

/* S's making: bmm q@k^T, mul by the scale and, when causal, the mask add
 * (the mask stays cached between products when it fits beside one
 * product's S read and written). The forward's, and the recompute plan's
 * backward again. */
static int scores(const ctx *c, mb_attn_plan *p, int backward, mb_err *err)
{
    const double nn1 = c->N * c->N * c->s; /* one product's N x N tensor */
    int rc = bmm(c, p, "bmm q@k^T", backward, c->a->seq, c->a->seq, c->a->head_dim, 1, err);
    if (rc) return rc;
    nn_kernel(c, p, "mul scale", backward, 1, 0, 0, 0);
    if (c->a->causal) {
        double mask_reads = 3 * nn1 <= c->e->cache_bytes ? 1 : c->BH;
        nn_kernel(c, p, "add mask", backward, 1, mask_reads * nn1, 0, 0);
    }
    return MB_OK;
}

/* The standard plan, or (recompute) the same kernels with the softmax also
 * writing the f32 log-sum-exp, only that saved, and the backward making S
 * again (scores) and P from it in one elementwise kernel,
 * P = exp(x - LSE), that reads x and the LSE and writes P. */
static int unfused(const ctx *c, mb_attn_plan_id id, mb_err *err)
{
    mb_attn_plan *p = &c->e->plan[id];
    const int64_t N = c->a->seq, dd = c->a->head_dim;
    const int rec = id == MB_ATTN_RECOMPUTE;
    const double lse = c->BH * c->N * 4; /* the f32 log-sum-exp, a float a row */
    int rc = scores(c, p, 0, err);
    if (rc) return rc;
    double sm_reads = 1;
    if (!is_cpu(c->d) && !(c->N * c->s < SOFTMAX_SMEM_BYTES)) {
        int64_t rows = mb_device_rows_in_flight(c->d, c->a->batch * c->a->heads * N);
        if ((double)rows * c->N * c->s > c->e->cache_bytes) sm_reads = 2;
    }
    nn_kernel(c, p, rec ? "softmax+lse" : "softmax", 0, sm_reads, 0, rec ? lse : 0, c->BH * c->N * c->N);
    if (is_cpu(c->d)) {
        mb_attn_kernel *k = &p->k[p->n_kernels - 1];
        if ((rc = lang_softmax(c, k, 0, err))) return rc;
        if (rec) { /* and the log-sum-exp written beside P */
            k->dram_write_bytes += lse;
            k->mem_s += lse / (c->e->bandwidth_gbs * 1e9);
            k->time_s += lse / (c->e->bandwidth_gbs * 1e9);
        }
    }
    if ((rc = bmm(c, p, "bmm P@v", 0, N, dd, N, 0, err))) return rc;
    if (c->a->backward) {
        if (rec) {
            if ((rc = scores(c, p, 1, err))) return rc;
            nn_kernel(c, p, "P from lse", 1, 1, lse, 0, c->BH * c->N * c->N);
        }
        if ((rc = bmm(c, p, "bmm dO@v^T", 1, N, N, dd, 1, err))) return rc;
        if ((rc = bmm(c, p, "bmm P^T@dO", 1, N, dd, N, 0, err))) return rc;
        /* CUDA's softmax backward forms grad * output in a kernel of its own
         * first (SoftMax.cu); the CPU's (vec_host_softmax_backward_lastdim)
         * reads both in its one kernel (tests/torch_oracle_attn.py) */
        if (!is_cpu(c->d)) nn_kernel(c, p, "mul dP*P", 1, 2, 0, 0, 0);
        nn_kernel(c, p, "softmax bwd", 1, 2, 0, 0, 0);
        if (is_cpu(c->d) && (rc = lang_softmax(c, &p->k[p->n_kernels - 1], 1, err))) return rc;
        nn_kernel(c, p, "mul dS*scale", 1, 1, 0, 0, 0);
        if ((rc = bmm(c, p, "bmm dS@k", 1, N, dd, N, 0, err))) return rc;
        if ((rc = bmm(c, p, "bmm q^T@dS", 1, dd, N, N, 0, err))) return rc;
    }
    p->saved_bytes = rec ? lse : c->BH * c->N * c->N * c->s;
    return MB_OK;
}

/* Heads whose blocks are in flight at once: W consecutive blocks of tiles a
 * head span at most ceil((W - 1) / tiles) + 1 heads. */
static int64_t heads_in_flight(const ctx *c, int64_t tiles)
{
    int64_t W = c->d->sm_count >= 1 ? (int64_t)c->d->sm_count : 1;
    int64_t h = ceil_div(W - 1, tiles) + 1, bh = c->a->batch * c->a->heads;
    return h < bh ? h : bh;
}

/* compute time of a FlashAttention kernel of nblocks blocks */
static double flash_compute(const ctx *c, double flops, double exps, int64_t nblocks)
{
    double eff = 1;
    if (!is_cpu(c->d)) {
        int64_t W = c->d->sm_count >= 1 ? (int64_t)c->d->sm_count : 1;
        eff = (double)nblocks / ((double)ceil_div(nblocks, W) * (double)W);
    }
    return (flops / c->e->peak_flops_s + exps / c->e->exp_per_s) / eff;
}

static void flash(const ctx *c)
{
    mb_attn_est *e = c->e;
    mb_attn_plan *p = &e->plan[MB_ATTN_FLASH];
    const int64_t N = c->a->seq, Br = e->block_r, Bc = e->block_c, Tr = e->tiles_r, Tc = e->tiles_c;
    const int64_t nbh = c->a->batch * c->a->heads;
    const double s = c->s, d = c->dd, BH = c->BH, Nf = c->N;
    /* the tile pairs a head computes: elems (S entries), the key columns each
     * query tile streams (cols), the query rows each key tile walks (rows) */
    double elems = 0, cols = 0, rows = 0;
    int64_t pairs = 0;
    for (int64_t i = 0; i < Tr; i++) {
        int64_t r = N - i * Br < Br ? N - i * Br : Br, ncol = N, nt = Tc;
        if (c->a->causal) {
            nt = (i * Br + r - 1) / Bc + 1;
            ncol = nt * Bc < N ? nt * Bc : N;
        }
        pairs += nt;
        elems += (double)r * (double)ncol;
        cols += (double)ncol;
    }
    for (int64_t j = 0; j < Tc; j++) rows += c->a->causal ? (double)(N - (j * Bc / Br) * Br) : Nf;
    e->tile_pairs = pairs;

    /* forward */
    const double head_bytes = Nf * d * s; /* one head's Q (or K, V, O) */
    e->heads_in_flight = heads_in_flight(c, Tr);
    const int kv_cached = (double)e->heads_in_flight * 2 * head_bytes <= e->cache_bytes;
    e->kv_reads = kv_cached ? 1 : cols / Nf;
    e->io_nocache_bytes = BH * (2 * head_bytes + 2 * d * s * cols + 4 * Nf);
    mb_attn_kernel *k = add(p, "flash fwd", 0);
    k->flops = 4 * d * elems * BH;
    k->exps = elems * BH;
    k->dram_read_bytes = BH * (head_bytes + (kv_cached ? 2 * head_bytes : 2 * d * s * cols));
    k->dram_write_bytes = BH * (head_bytes + 4 * Nf);
    finish(c, k, flash_compute(c, k->flops, k->exps, nbh * Tr));

    if (c->a->backward) {
        /* D = rowsum(dO o O) in f32, the f32 dq accumulator zeroed */
        k = add(p, "flash bwd prep", 1);
        k->dram_read_bytes = BH * 2 * head_bytes;
        k->dram_write_bytes = BH * (4 * Nf + 4 * Nf * d);
        finish(c, k, 0);
        /* per query row the main kernel reads q, dO, LSE, D and the
         * accumulator (2 d s + 8 + 4 d B) and writes the accumulator (4 d B) */
        const double row_rd = 2 * d * s + 8 + 4 * d, row_wr = 4 * d;
        const int64_t hb = heads_in_flight(c, Tc);
        /* a head's working set: those rows and its K and V */
        const int q_cached = (double)hb * Nf * (row_rd + 2 * d * s) <= e->cache_bytes;
        const double visits = q_cached ? Nf : rows;
        k = add(p, "flash bwd", 1);
        k->flops = 10 * d * elems * BH;
        k->exps = elems * BH;
        k->dram_read_bytes = BH * (2 * head_bytes + visits * row_rd);
        k->dram_write_bytes = BH * (2 * head_bytes + visits * row_wr);
        finish(c, k, flash_compute(c, k->flops, k->exps, nbh * Tc));
        /* the f32 accumulator converted to dq's dtype; a CPU's f32 dq is the
         * accumulator itself (the CPU executor's, in place): no kernel */
        if (!(is_cpu(c->d) && c->a->dtype == MB_F32)) {
            k = add(p, "flash bwd dq", 1);
            k->dram_read_bytes = BH * 4 * Nf * d;
            k->dram_write_bytes = BH * head_bytes;
            finish(c, k, 0);
        }
    }
    p->saved_bytes = BH * (head_bytes + 4 * Nf);
}

static void totals(const mb_attn *a, const mb_device *d, mb_attn_plan *p)
{
    double by_bound[3] = {0, 0, 0};
    /* event timing sees a plan's first kernel alone: kernel_floor_us, as
     * roofline.c charges it */
    mb_attn_kernel *k0 = &p->k[0];
    if (p->n_kernels > 0 && d->kernel_floor_us > d->launch_overhead_us) {
        k0->time_s += d->kernel_floor_us * 1e-6 - k0->launch_s;
        k0->launch_s = d->kernel_floor_us * 1e-6;
        k0->bound = mb_bound_of(k0->launch_s, k0->mem_s, k0->compute_s);
    }
    p->flops = p->dram_read_bytes = p->dram_write_bytes = p->nn_write_bytes = 0;
    p->fwd_time_s = p->bwd_time_s = 0;
    for (int i = 0; i < p->n_kernels; i++) {
        const mb_attn_kernel *k = &p->k[i];
        p->flops += k->flops;
        p->dram_read_bytes += k->dram_read_bytes;
        p->dram_write_bytes += k->dram_write_bytes;
        p->nn_write_bytes += k->nn_write_bytes;
        *(k->backward ? &p->bwd_time_s : &p->fwd_time_s) += k->time_s;
        by_bound[k->bound] += k->time_s;
    }
    p->time_s = p->fwd_time_s + p->bwd_time_s;
    p->bound = MB_BOUND_MEMORY;
    if (by_bound[MB_BOUND_COMPUTE] > by_bound[p->bound]) p->bound = MB_BOUND_COMPUTE;
    if (by_bound[MB_BOUND_LAUNCH] > by_bound[p->bound]) p->bound = MB_BOUND_LAUNCH;
    p->peak_bytes = mb_attn_peak_bytes(a, p->id);
    p->max_seq = d->mem_gb > 0 ? mb_attn_max_seq(a, p->id, d->mem_gb * 1e9) : 0;
}

int mb_attn_estimate(const mb_attn *a, const mb_device *d, mb_attn_est *out, mb_err *err)
{
    if (a->batch < 1 || a->heads < 1 || a->seq < 1 || a->head_dim < 1)
        return mb_err_set(err, MB_EINPUT, "attention's batch, heads, seq and head_dim are at least 1 (got %lld, %lld, %lld, %lld)",
                          (long long)a->batch, (long long)a->heads, (long long)a->seq, (long long)a->head_dim);
    const double lim = 4.611686018427388e18; /* 2^62 elements */
    const double BH = (double)a->batch * (double)a->heads, N = (double)a->seq, dd = (double)a->head_dim;
    if (BH * N * N > lim || BH * N * dd > lim)
        return mb_err_set(err, MB_EINPUT, "attention of batch %lld, heads %lld, seq %lld, head_dim %lld has a tensor "
                          "beyond 2^62 elements", (long long)a->batch, (long long)a->heads, (long long)a->seq,
                          (long long)a->head_dim);
    mb_attn_est e;
    memset(&e, 0, sizeof e);
    e.peak_flops_s = mb_gemm_peak_flops(d, a->dtype, &e.peak_key);
    if (!(e.peak_flops_s > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no %s GEMM rate (%s is 0)", d->name, mb_dtype_name(a->dtype),
                          e.peak_key);
    if (!(d->onchip_kib > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no onchip_kib: FlashAttention's tiles are sized from it "
                          "(give the spec one SM's or core's on-chip memory in KiB)", d->name);
    const double s = (double)mb_dtype_bytes(a->dtype);
    e.onchip_bytes = d->onchip_kib * 1024;
    const double M = floor(e.onchip_bytes / s);
    if (dd > M)
        return mb_err_set(err, MB_EINPUT, "head_dim %lld exceeds the %.0f %s elements of '%s''s on-chip memory "
                          "(FlashAttention's tiling needs head_dim <= M)", (long long)a->head_dim, M,
                          mb_dtype_name(a->dtype), d->name);
    if (is_cpu(d)) {
        /* PyTorch's CPU flash kernel's splits (aten/src/ATen/native/cpu/
         * FlashAttentionKernel.cpp, flash_attention_kernel_impl): 512 key
         * columns, 256 query rows from seq 768 (64 from 192, else 32); the
         * CPU executor's tiles are of that size too. With one key tile for
         * every key (the GPU rule below gives 2048 columns for a 2 MiB L2),
         * a causal mask would skip no tile. */
        e.block_c = 512;
        e.block_r = a->seq >= 768 ? 256 : a->seq >= 192 ? 64 : 32;
    } else {
        e.block_c = (int64_t)ceil(M / (4 * dd));
        e.block_r = e.block_c < a->head_dim ? e.block_c : a->head_dim;
    }
    if (e.block_c > a->seq) e.block_c = a->seq;
    if (e.block_r > a->seq) e.block_r = a->seq;
    e.tiles_r = ceil_div(a->seq, e.block_r);
    e.tiles_c = ceil_div(a->seq, e.block_c);
    if (e.tiles_r > ((int64_t)1 << 24) || e.tiles_c > ((int64_t)1 << 24))
        return mb_err_set(err, MB_EINPUT, "seq %lld makes %lld query tiles of %lld rows on '%s': the model walks at most "
                          "2^24", (long long)a->seq, (long long)e.tiles_r, (long long)e.block_r, d->name);
    e.exp_per_s = exp_rate(d, &e.exp_key);
    e.bandwidth_gbs = mb_device_bandwidth_gbs(d, &e.bandwidth_source);
    e.cache_bytes = mb_device_cache_bytes(d);
    e.model_flops = mb_attn_model_flops(a);
    ctx c = {a, d, &e, s, BH, N, dd};
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) e.plan[p].id = (mb_attn_plan_id)p;
    int rc = unfused(&c, MB_ATTN_STANDARD, err);
    if (!rc) rc = unfused(&c, MB_ATTN_RECOMPUTE, err);
    if (rc) return rc;
    flash(&c);
    for (int p = 0; p < MB_ATTN_N_PLANS; p++) totals(a, d, &e.plan[p]);
    *out = e;
    return MB_OK;
}
