/* roofline.c — the time of one kernel: compute at the spec's measured op
 * rates or its peaks, memory from the DRAM bytes, launch and allocation, and
 * how much of the shorter of memory and compute the longer hides (the
 * formula and the figures behind it: traffic.c's header). Does not count
 * bytes (traffic.c, dram.c). */
#include "model_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* SFU rate when the spec gives none: MUFU runs at 1/8 of the FP32 lane rate
 * on GA10x/Ada/Hopper and an FMA counts 2 FLOPs, so fp32_tflops / 16
 * (H100 SXM: 66.9 / 16 = 4.2e12/s vs 3.9e12 quoted, gpu-specs.md section 3). */
static double sfu_rate(const mb_device *d)
{
    return d->sfu_tops > 0 ? d->sfu_tops * 1e12 : d->fp32_tflops * 1e12 / 16.0;
}

/* Softmax's exp in compiled row kernels over the compiled exp's rate. */
static double exp_nonpos_gain(const mb_device *d)
{
    return d->exp_nonpos_gain > 0 ? d->exp_nonpos_gain : 1.0;
}

/* 1 when kernel K evaluates one copy of its one read into its one write of
 * the same dtype: the executors' raw copy (no tile buffer). */
static int raw_copy(const mb_graph *g, const mb_kernel *K, const unsigned char *evaluated)
{
    if (K->n_reads != 1 || K->n_writes != 1) return 0;
    int ops = 0, copies = 0;
    for (int j = 0; j < K->n_nodes; j++) {
        if (evaluated[j] == 0) continue;
        ops++;
        copies += g->nodes[K->nodes[j]].op == MB_OP_COPY;
    }
    return ops == 1 && copies == 1 && g->nodes[K->reads[0]].dtype == g->nodes[K->writes[0]].dtype;
}

static int has_compiled_rates(const mb_device *d)
{
    for (int op = 0; op < MB_OP_COUNT; op++)
        if (d->op_compiled_geps[op] > 0) return 1;
    return 0;
}

/* Elements op node id works through at shape s: a row or column op its
 * operand's, an elementwise op its result's. */
static double node_elems(const mb_graph *g, int id, mb_shape s)
{
    const mb_node *nd = &g->nodes[id];
    if ((MB_OP_IS_ROW(nd->op) || MB_OP_IS_COLUMN(nd->op)) && nd->arg[0] >= 0)
        return (double)mb_tensor_elems_at(g, nd->arg[0], s);
    return (double)mb_tensor_elems_at(g, id, s);
}

/* An op's rate in a compiled row kernel (kernels/jit_rows.c): its compiled
 * rate; in one pass no less than its tile rate, as its later passes run
 * from the cache, vectors independent, while calibrate's compiled chains
 * (G = 1 for a lone exp) wait on each other: 2-vCPU Xeon guest, exp 5.7
 * compiled against 8.4 G/s in tiles, div 12.1 against 13.1. Beyond the
 * cache the chains' rates held better (2^4x2^22: fused softmax +21% against
 * +76% at the tile rates, LayerNorm +4% against +52%). */
static double row_compiled_geps(mb_op op, int onepass, const mb_device *d)
{
    if (!(d->op_compiled_geps[op] > 0)) return d->op_geps[op];
    return onepass ? fmax(d->op_compiled_geps[op], d->op_geps[op]) : d->op_compiled_geps[op];
}

/* A row op (or a column sum) at measured rates: the elementwise work per
 * element of its row that the CPU row executor (kernels/rows_cpu.c) does for
 * it, each part at the spec's rate for that op (a max as relu's, the
 * one-operand max). A calibration's tile primitive has no form of a row op,
 * so a spec's rate for one is not measured; this replaces the GPU's flop
 * counts (op_table.h) at the peaks, which are not what a CPU core runs.
 * multi: a pass that recomputes exp(x - max) (softmax beyond the core's
 * cache, online or not: its write pass takes exp again). compiled: the
 * kernel runs compiled (kernels/jit_rows.c): each part at its compiled rate
 * where the spec has one, the max at the compiled add's (one vector
 * instruction on a register, as the add), the exp (always softmax's
 * exp(x - max) there) times the spec's exp_nonpos_gain.
 * online: a sum folded beside its amax (sum(exp(a - amax(a))), the
 * online plan) beyond the core's cache, which computes exp(a - max) itself
 * (in one pass the max comes first and the sum adds the kept exp).
 * Seconds for n elements, or 0 when the spec lacks a part's rate. */
static double part_geps(mb_op part, int compiled, int multi, const mb_device *d)
{
    if (compiled) /* every exp of a row op's is softmax's exp(x - max) */
        return row_compiled_geps(part == MB_OP_RELU ? MB_OP_ADD : part, !multi, d) *
               (part == MB_OP_EXP ? exp_nonpos_gain(d) : 1.0);
    return d->op_geps[part];
}

static double row_op_rated_s(mb_op op, double n, int multi, int compiled, int online, const mb_device *d)
{
    static const struct {
        mb_op op;
        int online;
        mb_op part[8];
    } parts[] = {
        /* sum(exp(a - amax(a))) beside its max: each tile's max, a - m, exp, the sum */
        {MB_OP_SUM, 1, {MB_OP_RELU, MB_OP_SUB, MB_OP_EXP, MB_OP_ADD}},
        {MB_OP_SUM, 0, {MB_OP_ADD}},  /* vsum */
        {MB_OP_MEAN, 0, {MB_OP_ADD}}, /* vsum, one division a row */
        {MB_OP_AMAX, 0, {MB_OP_RELU}}, /* vmax */
        /* vmax; vsum_exp: x - m, exp, the sum; vexp_scale: times 1 / sum */
        {MB_OP_SOFTMAX, 0, {MB_OP_RELU, MB_OP_SUB, MB_OP_EXP, MB_OP_ADD, MB_OP_MUL}},
        /* vmax; the sum of exp(x - m); vnorm: (x - m - log(sum)) * 1 * 1 */
        {MB_OP_LOG_SOFTMAX, 0, {MB_OP_RELU, MB_OP_SUB, MB_OP_EXP, MB_OP_ADD, MB_OP_SUB, MB_OP_MUL, MB_OP_MUL}},
        /* vsum_shifted: x - x0, its sum and square's; vnorm: (x - mean) rstd w */
        {MB_OP_LAYER_NORM, 0, {MB_OP_SUB, MB_OP_ADD, MB_OP_MUL, MB_OP_ADD, MB_OP_SUB, MB_OP_MUL, MB_OP_MUL}},
        /* vsum_sq: x x and its sum; vnorm: (x - 0) rstd w */
        {MB_OP_RMS_NORM, 0, {MB_OP_MUL, MB_OP_ADD, MB_OP_SUB, MB_OP_MUL, MB_OP_MUL}},
        /* the column loop: one add into the partial sums per element */
        {MB_OP_COLSUM, 0, {MB_OP_ADD}},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i].op != op || (op == MB_OP_SUM && parts[i].online != (online != 0))) continue;
        double s_per_elem = 0;
        for (int k = 0; k < 8 && parts[i].part[k] != MB_OP_INPUT; k++) {
            double geps = part_geps(parts[i].part[k], compiled, multi, d);
            if (!(geps > 0)) return 0;
            s_per_elem += 1.0 / (geps * 1e9);
        }
        if (multi && op == MB_OP_SOFTMAX) /* the write pass's exp(x - m) again */
            s_per_elem += 1.0 / (part_geps(MB_OP_SUB, compiled, multi, d) * 1e9) +
                          1.0 / (part_geps(MB_OP_EXP, compiled, multi, d) * 1e9);
        return n * s_per_elem;
    }
    return 0;
}

/* 1 when K makes several passes over a row that fits d's on-chip storage:
 * read once, the later passes from the cache. */
static int onepass_rows(const mb_kernel *K, mb_shape sh, const mb_device *d)
{
    return K->passes > 1 && mb_kernel_onepass_max_cols(K, d) >= sh.cols;
}

static void compute_time(const mb_plan *p, const mb_kernel *K, mb_shape sh, const mb_device *d,
                         mb_cost *c)
{
    double rated_s = 0, flops = 0, sfu = 0;
    unsigned char *evaluated = malloc((size_t)K->n_nodes + 1);
    if (evaluated && mb_lower_nodes(p->g, K->nodes, K->n_nodes, NULL, NULL, evaluated)) {
        free(evaluated);
        evaluated = NULL;
    }
    /* compiled code keeps operands in registers: its own rates, measured by
     * calibrate through the same compiler (where the spec has them) */
    const int compiled = has_compiled_rates(d) && mb_kernel_compiled(p->g, K);
    const double sincos_geps = compiled && d->op_sincos_compiled_geps > 0 ? d->op_sincos_compiled_geps
                                                                      : d->op_sincos_geps;
    /* a raw copy is the loop calibrate's bandwidth probes time (a vector
     * load and store per element): its memory term holds all of its work */
    const int is_raw_copy = evaluated && raw_copy(p->g, K, evaluated);
    for (int j = 0; j < K->n_nodes; j++) {
        int id = K->nodes[j];
        mb_op op = p->g->nodes[id].op;
        mb_op_cost oc = mb_node_cost(p->g, id);
        /* a kernel making several passes over a row recomputes a value in each
         * pass that needs it (Inductor's looped reductions; the CPU's row
         * executor beyond its core cache): eval_mask counts them */
        int evals = 1;
        const int multi = K->passes > 1 && mb_kernel_onepass_max_cols(K, d) < sh.cols;
        if (multi && K->eval_mask && !MB_OP_IS_ROW(op)) {
            evals = 0;
            for (int m = K->eval_mask[j]; m; m >>= 1) evals += m & 1;
            if (evals < 1) evals = 1;
        }
        const double n = node_elems(p->g, id, sh) * evals;
        if (evaluated && evaluated[j] == 0) continue;
        /* a sin/cos pair at the measured sincos rate when the spec has one
         * (a calibrated CPU); else both ops are costed (a GPU's SFU runs both) */
        if (evaluated && evaluated[j] >= 2 && sincos_geps > 0) {
            c->flops += oc.flops * (double)n;
            c->sfu_ops += oc.sfu_ops * (double)n;
            if (evaluated[j] == 2) rated_s += (double)n / (sincos_geps * 1e9);
            continue;
        }
        c->flops += oc.flops * (double)n;
        c->sfu_ops += oc.sfu_ops * (double)n;
        /* x**2, x**3: multiplies, costed at the measured multiply rate */
        double times = 1;
        if (op == MB_OP_POW && oc.sfu_ops == 0) { op = MB_OP_MUL; times = oc.flops; }
        /* a copy inside compiled code is the same register: free; a raw
         * copy's cost is its memory term */
        if ((compiled || is_raw_copy) && op == MB_OP_COPY) continue;
        double rate = (compiled && p->g->has_row_ops ? row_compiled_geps(op, !multi, d)
                       : compiled && d->op_compiled_geps[op] > 0 ? d->op_compiled_geps[op]
                                                                 : d->op_geps[op]) * 1e9;
        if (compiled && p->g->has_row_ops && mb_node_exp_nonpos(p->g, id)) rate *= exp_nonpos_gain(d);
        if (MB_OP_IS_ROW(op) || MB_OP_IS_COLUMN(op)) { /* its parts at their measured rates, else at the peaks */
            double row_s = row_op_rated_s(op, n, multi, compiled, multi && K->online && K->online[j], d);
            if (row_s > 0) {
                rated_s += row_s;
                continue;
            }
            rate = 0;
        }
        if (rate > 0) {
            rated_s += times * (double)n / rate;
        } else {
            flops += oc.flops * (double)n;
            sfu += oc.sfu_ops * (double)n;
        }
    }
    /* A compiled row kernel in one pass (kernels/jit_rows.c) works from the
     * core's cache after its first pass: re-reads, kept values, [cols]
     * operands (mb_kernel_onepass_cache_accesses), each an element load or
     * store at half the measured tile copy rate (a copy is one of each),
     * which the compiled chains' register rates leave out. */
    if (compiled && p->g->has_row_ops && onepass_rows(K, sh, d) && d->op_geps[MB_OP_COPY] > 0) {
        double acc = mb_kernel_onepass_cache_accesses(p->g, K);
        if (acc > 0) rated_s += acc * (double)mb_shape_elems(sh) / (2 * d->op_geps[MB_OP_COPY] * 1e9);
    }
    /* The interpreter evaluates into tile buffers and then copies each output
     * to its tensor, and widens each 16-bit read into a buffer first
     * (kernels/exec_cpu.c, prog_run): one copy per element each, at the
     * measured copy rate. A kernel that is one copy into its own dtype is that
     * copy alone (costed above). */
    if (!compiled && d->op_geps[MB_OP_COPY] > 0 && !is_raw_copy) {
        double elems = 0;
        for (int w = 0; w < K->n_writes; w++) /* partial sums: every row added in */
            elems += (double)mb_tensor_elems_at(p->g, p->g->nodes[K->writes[w]].shape == MB_SHC_PART ?
                                                          p->g->nodes[K->writes[w]].arg[0] : K->writes[w], sh);
        for (int r = 0; r < K->n_reads; r++)
            if (p->g->nodes[K->reads[r]].dtype != MB_F32) elems += (double)mb_tensor_elems_at(p->g, K->reads[r], sh);
        rated_s += elems / (d->op_geps[MB_OP_COPY] * 1e9);
    }
    free(evaluated);
    /* The ops' flops are single FP32 instructions (add, mul: no FMA to pair
     * them), and a datasheet's FP32 peak counts an FMA as 2 flops: the
     * instruction rate is half the peak. */
    double lanes_per_s = d->fp32_tflops * 1e12 / 2;
    double peak_s = fmax(lanes_per_s > 0 ? flops / lanes_per_s : 0, sfu / sfu_rate(d));
    c->compute_s = rated_s + peak_s;
}

/* The share of the shorter term that does not overlap the longer: the
 * compiled probe's figure for a kernel of its shape (run compiled, one read,
 * one write) where the spec has one, else serial_fraction. A compiled
 * kernel's math runs from registers while the prefetchers stream its one
 * input; the interpreter copies each tile buffer out between its ops. On the
 * 2-vCPU EPYC guest 24 calibrations gave 0.02-0.34 for the compiled
 * y = x * sin(x) against 0.22-0.96 for the interpreted y = sin(x). Twelve
 * earlier runs re-modelled with 0.15 for those kernels: sin^2+cos^2 fused's
 * median error +11% -> +2% (+13% -> +6% at the host's rates), rows within 25%
 * 400 -> 401 of 480 (427 -> 438 at the host's rates); with 0.15 for every
 * compiled kernel instead, sigmoid3 store's median went -11% -> -22%, so
 * kernels of more streams keep serial_fraction. */
static double serial_fraction_of(const mb_plan *p, const mb_kernel *K, mb_shape sh, const mb_device *d)
{
    /* a compiled row kernel in one pass: calibrate's log_softmax probes where
     * the spec has them, over rows in the core's L1 or beyond it as this
     * kernel's are, else its memory and compute add (its first pass waits on
     * memory, the later ones compute from the cache while it prefetches the
     * next row: how much that hides is the host's: the probes gave 0.21-0.37
     * within the L1 and 0.43-0.55 beyond it on one 2-vCPU Xeon guest, where
     * with one figure rows of 64 KiB, beyond its 48 KiB L1, ran 15-35 points
     * slower against the model than rows of 4 KiB; on another guest fused
     * softmax, F.softmax's kernel, LayerNorm and RMSNorm at 4096x4096,
     * 16384x1024 and 1024x16384 f32 ran at 0.70-1.14x memory + compute) */
    if (has_compiled_rates(d) && p->g->has_row_ops && onepass_rows(K, sh, d) && mb_kernel_compiled(p->g, K)) {
        if (mb_device_given(d, MB_DK_serial_fraction_rows_l2) && d->l1_kib > 0 &&
            (double)sh.cols * K->live_bytes_per_col > d->l1_kib * 1024.0)
            return d->serial_fraction_rows_l2;
        return mb_device_given(d, MB_DK_serial_fraction_rows) ? d->serial_fraction_rows : 1.0;
    }
    if (mb_device_given(d, MB_DK_serial_fraction_compiled) && K->n_reads == 1 && K->n_writes == 1 &&
        has_compiled_rates(d) && mb_kernel_compiled(p->g, K))
        return d->serial_fraction_compiled;
    return d->serial_fraction;
}

mb_bound mb_bound_of(double launch_s, double mem_s, double compute_s)
{
    if (launch_s > mem_s && launch_s > compute_s) return MB_BOUND_LAUNCH;
    return compute_s > mem_s ? MB_BOUND_COMPUTE : MB_BOUND_MEMORY;
}

/* Seconds framework fw spends making the pages of kernel K's outputs: with
 * PyTorch every output is a new tensor from malloc (c10's CPU allocator,
 * posix_memalign: no cache of its own), and glibc serves a request of its
 * mmap threshold or more with a fresh mapping every time, whose pages fault
 * in, zeroed, on the first write, and are unmapped at free. Smaller requests
 * reuse the heap memory the previous call freed: nothing to fault. glibc's
 * threshold moves up to the size of any mapped chunk freed, up to 32 MiB:
 * in a loop every request below that comes from the heap; one of exactly
 * 32 MiB is mapped (its chunk header puts it over: 2^23 f32 cloned took 68
 * ms against 24 ms into a preallocated buffer, 2^22 20 ms both). Debian's
 * torch 1.13, 2 threads on the 2-vCPU guest: x.clone() at 2^25 f32 moved 6.5
 * GB/s against ~36 GB/s into a preallocated buffer; eager sin^2+cos^2 at 2^24
 * took 124 ms against 27 ms for the executors' same 5 kernels. */
static double alloc_time_s(const mb_plan *p, const mb_kernel *K, int64_t n, const mb_device *d,
                           mb_framework fw)
{
    /* on a GPU, PyTorch's caching allocator hands back blocks freed
     * before: no fresh pages (docs/model.md, "The host") */
    if (fw != MB_FW_PYTORCH || strcmp(d->kind, "cpu") != 0) return 0;
    double threshold = (d->alloc_mmap_threshold_mb > 0 ? d->alloc_mmap_threshold_mb : MB_ALLOC_MMAP_MAX_MB) *
                       1048576.0;
    double bytes = 0;
    for (int w = 0; w < K->n_writes; w++) {
        double b = (double)mb_tensor_bytes(p->g, K->writes[w], n);
        if (b >= threshold) bytes += b;
    }
    return bytes / (d->first_touch_gbs * 1e9);
}


/* The elements of the elementwise node of a PyTorch eager kernel (one op,
 * or autograd's cast of an incoming gradient) that reads a tensor of
 * another dtype than it computes in, else 0. TensorIterator then needs
 * dynamic casting, and the CUDA loop takes its unrolled path (LoadWithCast,
 * StoreWithCast) instead of the vectorized one
 * (aten/src/ATen/native/cuda/CUDALoops.cuh, gpu_kernel_impl): x.to(float32),
 * a bf16 tensor times an f32 weight. */
static double eager_cast_elems(const mb_plan *p, const mb_kernel *K, mb_shape s)
{
    if (p->kind != MB_PLAN_EAGER && !K->engine) return 0;
    for (int j = 0; j < K->n_nodes; j++) {
        const int id = K->nodes[j];
        const mb_node *nd = &p->g->nodes[id];
        if (MB_OP_IS_ROW(nd->op) || MB_OP_IS_COLUMN(nd->op)) continue;
        for (int a = 0; a < 2; a++)
            if (nd->arg[a] >= 0 && p->g->nodes[nd->arg[a]].dtype != nd->dtype)
                return (double)mb_tensor_elems_at(p->g, id, s);
    }
    return 0;
}

/* The unrolled path's time over the vectorized one's for n elements: a
 * bf16 -> f32 copy on an A100 (pytorch/pytorch#195542, device time, means
 * of 200 iterations): 20.30 / 14.89 us at 2^21 elements, 53.87 / 45.65 at
 * 2^23, 362.46 / 322.09 at 2^26; log-linear between, held beyond. */
double mb_cast_loop_ratio(double n)
{
    static const double lg[] = {21, 23, 26}, r[] = {20.30 / 14.89, 53.87 / 45.65, 362.46 / 322.09};
    double x = n > 1 ? log2(n) : 0;
    if (x <= lg[0]) return r[0];
    for (int i = 0; i + 1 < 3; i++)
        if (x <= lg[i + 1]) return r[i] + (r[i + 1] - r[i]) * (x - lg[i]) / (lg[i + 1] - lg[i]);
    return r[2];
}

/* The time of kernel k of plan p at shape n on d from its DRAM bytes (c's,
 * rfo_bytes of them its stores' line fills): memory, compute, launch (the
 * first kernel's at least the spec's kernel floor), allocation, and their
 * sum by the roofline with the spec's overlap. */
void mb_kernel_time(const mb_plan *p, int k, int first, mb_shape n, const mb_device *d, mb_framework fw,
                    double bandwidth_gbs, int64_t rfo_bytes, mb_cost *c)
{
    const mb_kernel *K = &p->kernels[k];
    compute_time(p, K, n, d, c);
    c->mem_s = (double)(c->dram_read_bytes + c->dram_write_bytes) / (bandwidth_gbs * 1e9);
    /* two-level roofline: cache hits are not free, every byte streams
     * through the last-level cache */
    if (d->cache_bandwidth_gbs > 0)
        c->mem_s = fmax(c->mem_s, (double)(c->read_bytes + c->write_bytes) / (d->cache_bandwidth_gbs * 1e9));
    /* the kernel's own reads (not the stores' line fills, which stream
     * beside them) take at least read bytes over the read bandwidth */
    if (d->read_bandwidth_gbs > 0 && K->n_reads > 0) {
        double read_gbs = d->read_bandwidth_gbs * (1 + d->read_stream_gain * (K->n_reads - 1)) /
                          (1 + d->read_stream_penalty * (K->n_reads - 1));
        c->mem_s = fmax(c->mem_s, (double)(c->dram_read_bytes - rfo_bytes) / (read_gbs * 1e9));
    }
    /* PyTorch's unrolled casting loop: its memory time as measured against
     * the vectorized loop's (docs/model.md, "A casting eager kernel") */
    const double cast_n = fw == MB_FW_PYTORCH && !strcmp(d->kind, "gpu") ? eager_cast_elems(p, K, n) : 0;
    c->cast_loop = cast_n > 0 ? mb_cast_loop_ratio(cast_n) : 0;
    if (c->cast_loop > 0) c->mem_s *= c->cast_loop;
    /* Event timing around a plan sees its first kernel's launch, run-down
     * and the events' own resolution (the spec's kernel_floor_us, which
     * calibrate --backend cuda times on one empty kernel); the kernels
     * after it cost the back-to-back launch interval. */
    c->launch_s = d->launch_overhead_us * 1e-6;
    if (first && d->kernel_floor_us > d->launch_overhead_us) c->launch_s = d->kernel_floor_us * 1e-6;
    c->alloc_s = alloc_time_s(p, K, mb_shape_elems(n), d, fw);
    c->time_s = c->launch_s + fmax(c->mem_s, c->compute_s) +
                serial_fraction_of(p, K, n, d) * fmin(c->mem_s, c->compute_s) + c->alloc_s;
    c->bound = mb_bound_of(c->launch_s, c->mem_s, c->compute_s);
}

static int has_column_op(const mb_graph *g, const mb_kernel *K)
{
    for (int j = 0; j < K->n_nodes; j++)
        if (MB_OP_IS_COLUMN(g->nodes[K->nodes[j]].op)) return 1;
    return 0;
}

/* The host's cost of issuing kernel k of p on GPU d under PyTorch, each
 * part the device's figure where its spec has one, else the MB_HOST_*
 * default (mb_traffic.h: measured by bench/torch_host.py, or cited):
 *   - an eager plan's kernel is one op: in forward, dispatch with autograd
 *     recording its node (host_op_us); in backward, the engine running the
 *     node whose formula launches it (host_node_us); either way then the
 *     runtime's launch, cudaLaunchKernel (launch_overhead_us: the
 *     back-to-back interval of launches from one host thread);
 *   - a fused plan's kernels are generated (Triton, from Liger's Python or
 *     Inductor's wrapper): each costs a generated launch from Python
 *     (host_generated_launch_us, cuLaunchKernel included); the first of
 *     each phase also the call that runs them, a torch.autograd.Function
 *     (host_function_us), and in backward the engine's node that calls it
 *     (host_node_us); a plan's column sums are library ops (host_op_us +
 *     launch_overhead_us): Liger's _dW.sum(0);
 *   - an incoming gradient's cast (K->engine, any plan) is a library op the
 *     engine issues before the backward (host_op_us + launch_overhead_us).
 * The y.backward(dy) call itself is mb_host_backward_call_s's, which the
 * timeline charges to the first backward kernel it issues. */
double mb_kernel_host_s(const mb_plan *p, int k, int first, const mb_device *d)
{
    const mb_kernel *K = &p->kernels[k];
    const double op = d->host_op_us > 0 ? d->host_op_us : MB_HOST_OP_US;
    const double node = d->host_node_us > 0 ? d->host_node_us : MB_HOST_NODE_US;
    const double fn = d->host_function_us > 0 ? d->host_function_us : MB_HOST_FUNCTION_US;
    const double gen = d->host_generated_launch_us > 0 ? d->host_generated_launch_us : MB_HOST_GENERATED_LAUNCH_US;
    double us;
    if (K->engine) { /* the incoming gradient's cast, issued by the engine */
        us = op + d->launch_overhead_us;
    } else if (p->kind == MB_PLAN_EAGER) {
        us = (K->is_backward ? node : op) + d->launch_overhead_us;
    } else if (has_column_op(p->g, K)) {
        us = op + d->launch_overhead_us;
    } else {
        us = gen;
        if (first) us += fn + (K->is_backward ? node : 0);
    }
    return us * 1e-6;
}

double mb_host_backward_call_s(const mb_device *d)
{
    return (d->host_backward_call_us > 0 ? d->host_backward_call_us : MB_HOST_BACKWARD_CALL_US) * 1e-6;
}
