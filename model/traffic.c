/* traffic.c — bytes and roofline time of a plan on a device.
 *
 * Lecture count: each kernel's reads and writes by the traffic rule.
 * Cache-aware DRAM count (cold start): a read hits the last-level cache when
 * the distinct bytes touched since that tensor's last use (including the
 * other tensors the current kernel streams at the same time), plus its own
 * size, fit in the cache; the first touch of a tensor always misses; every
 * write reaches DRAM eventually (write-back caches evict dirty lines). On a
 * write-allocate device (a calibrated CPU) a store to a tensor the cache does
 * not hold reads it first, unless the tensor is larger than the cache (the
 * executors stream those), and the last kernel's writes are still in the
 * cache when the plan ends: their write-back falls after the timed plan.
 * 2-vCPU EPYC guest, the 4 lecture variants x plans at 2^18-2^22 f32, one
 * run: model - measured from -48% to +30% with neither rule, -26% to +30%
 * with both; 2^25 (streamed) unchanged. Leaving every written tensor that
 * still fits pending, not only the last kernel's, made eager chains 40% too
 * fast.
 *
 * Time per kernel: launch_overhead + max(memory, compute)
 *                  + serial_fraction x min(memory, compute)
 * (serial_fraction_compiled for a compiled kernel of one read and one write,
 * serial_fraction_rows for a compiled row kernel in one pass, where the spec
 * has them: serial_fraction_of).
 * Memory is DRAM bytes / bandwidth (measured when the spec has it, else
 * datasheet), or, when the spec gives a read bandwidth and that takes
 * longer, DRAM read bytes / (read_bandwidth x (1 + read_stream_gain x
 * (reads - 1)) / (1 + read_stream_penalty x (reads - 1))), and never less than all its bytes (the lecture's count)
 * over the cache's own bandwidth when the spec gives one: a two-level
 * roofline, so cache-resident sizes are not free. Compute is the sum of n / rate over ops with a measured
 * rate (calibrated specs), plus max(flops / (FP32 peak / 2), SFU ops / SFU
 * peak) for the rest (the ops' flops are FP32 instructions; the peak counts
 * an FMA as two). It counts what the executor evaluates: a node equal to an
 * earlier one of its kernel once, and a sin and a cos of one operand as one
 * sincos at the measured sincos rate when the spec has one (2-vCPU Zen 4
 * guest, SLEEF u10 AVX-512, one thread, L1-resident: sin 2.72, cos 2.10,
 * sincos 2.01-2.07 Gelem/s, so sin + cos take 1.7x one sincos), and, in a
 * kernel the CPU executor interprets, the copy of each output out of its tile
 * buffer (and of each 16-bit read into one) at the measured copy rate (five
 * runs of bench/cpu_validate.sh re-modelled: 148 -> 151 of 171 steady rows
 * within 25%, the eager plans' -20..-30% rows closer). A raw copy (one copy
 * into its own dtype) is the loop calibrate's bandwidth probes time: its
 * memory term is all of its cost (seven runs re-modelled: copy at 2^25 from
 * +9..+44% to +4..+34%, 207 -> 209 of 227 steady rows within 25%).
 *
 * On a GPU thousands of warps hide one term behind the other: the table's
 * specs leave serial_fraction and the stream penalty at 0. On a CPU the same
 * cores issue the loads and do the math, and fewer read streams keep the
 * prefetchers busy: `membound calibrate` measures both from probe kernels
 * (2-vCPU EPYC guest, n = 2^25 f32: serial_fraction ~0.4, penalty ~0.12;
 * with max() alone the lecture's kernels came out 13-34% fast).
 *
 * With a framework's allocations (mb_estimate_plan_fw, --framework pytorch)
 * each kernel adds the first touch of the fresh pages of its outputs above
 * the mmap threshold (alloc_time_s has the rule and the figures). */
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

int mb_lower_nodes(const mb_graph *g, const int *nodes, int nk, int *common, int *pair,
                   unsigned char *evaluated)
{
    int *arg = malloc((size_t)(2 * nk + 1) * sizeof(int)); /* operands, common ones merged */
    int *same = malloc((size_t)g->n_nodes * sizeof(int));  /* node -> node evaluated for it */
    if (!arg || !same) {
        free(arg);
        free(same);
        return -1;
    }
    for (int i = 0; i < g->n_nodes; i++) same[i] = i;
    for (int j = 0; j < nk; j++) {
        const mb_node *a = &g->nodes[nodes[j]];
        evaluated[j] = a->op != MB_OP_INPUT;
        if (common) common[j] = -1;
        if (pair) pair[j] = -1;
        for (int s = 0; s < 2; s++)
            arg[2 * j + s] = s < mb_op_arity(a->op) && a->arg[s] >= 0 ? same[a->arg[s]] : -1;
        for (int q = 0; q < j && evaluated[j]; q++) {
            const mb_node *b = &g->nodes[nodes[q]];
            if (!evaluated[q] || b->op != a->op || arg[2 * q] != arg[2 * j] ||
                arg[2 * q + 1] != arg[2 * j + 1] || (arg[2 * j] < 0 && b->scalar[0] != a->scalar[0]) ||
                (arg[2 * j + 1] < 0 && mb_op_arity(a->op) == 2 && b->scalar[1] != a->scalar[1]))
                continue;
            same[nodes[j]] = nodes[q];
            evaluated[j] = 0;
            if (common) common[j] = q;
        }
    }
    /* sin/cos pairs, first come first paired */
    for (int j = 0; j < nk; j++) {
        mb_op op = g->nodes[nodes[j]].op;
        if (evaluated[j] != 1 || (op != MB_OP_SIN && op != MB_OP_COS)) continue;
        mb_op other = op == MB_OP_SIN ? MB_OP_COS : MB_OP_SIN;
        for (int q = j + 1; q < nk; q++) {
            const mb_node *b = &g->nodes[nodes[q]];
            if (evaluated[q] != 1 || b->op != other || arg[2 * q] != arg[2 * j] ||
                (arg[2 * j] < 0 && b->scalar[0] != g->nodes[nodes[j]].scalar[0]))
                continue;
            evaluated[j] = 2;
            evaluated[q] = 3;
            if (pair) pair[j] = q, pair[q] = j;
            break;
        }
    }
    free(arg);
    free(same);
    return 0;
}

static int evaluated_nodes(const mb_graph *g, const mb_kernel *K, unsigned char *evaluated)
{
    return mb_lower_nodes(g, K->nodes, K->n_nodes, NULL, NULL, evaluated);
}

int mb_node_compiles(const mb_node *a)
{
    for (int s = 0; s < mb_op_arity(a->op); s++)
        if (a->arg[s] < 0 && !isfinite((float)a->scalar[s])) return 0; /* as the executor holds it */
    if (a->op == MB_OP_POW)
        return a->arg[0] >= 0 && a->arg[1] < 0 &&
               ((float)a->scalar[1] == 1.0f || (float)a->scalar[1] == 2.0f || (float)a->scalar[1] == 3.0f);
    return (mb_op_info_of(a->op)->flags & MB_OPF_JIT) != 0;
}

int mb_node_exp_nonpos(const mb_graph *g, int v)
{
    const mb_node *e = &g->nodes[v];
    if (e->op != MB_OP_EXP || e->arg[0] < 0) return 0;
    const mb_node *s = &g->nodes[e->arg[0]];
    if (s->op != MB_OP_SUB || s->arg[0] < 0 || s->arg[1] < 0) return 0;
    const mb_node *m = &g->nodes[s->arg[1]];
    return m->op == MB_OP_AMAX && m->arg[0] == s->arg[0];
}

/* Softmax's exp in compiled row kernels over the compiled exp's rate. */
static double exp_nonpos_gain(const mb_device *d)
{
    return d->exp_nonpos_gain > 0 ? d->exp_nonpos_gain : 1.0;
}

static int is_rowval_shape(const mb_node *nd)
{
    return nd->shape == MB_SHC_ROW || nd->shape == MB_SHC_ROWV || nd->shape == MB_SHC_SCALAR;
}

/* A kernel of a graph with row operations compiles (kernels/jit_rows.c, as
 * rows_cpu.c chooses, which runs them all) when it has a row op or two
 * nodes or more, each elementwise one with a
 * compiled form, each row op over a full operand (an online sum's exp
 * operand's too), and no column sum. */
static int row_kernel_compiles(const mb_graph *g, const mb_kernel *K)
{
    int row_op = 0;
    for (int j = 0; j < K->n_nodes; j++) row_op |= MB_OP_IS_ROW(g->nodes[K->nodes[j]].op);
    if (K->n_nodes < 2 && !row_op) return 0;
    for (int j = 0; j < K->n_nodes; j++) {
        const mb_node *nd = &g->nodes[K->nodes[j]];
        if (MB_OP_IS_COLUMN(nd->op) || nd->op == MB_OP_INPUT) return 0;
        if (!MB_OP_IS_ROW(nd->op)) {
            if (!mb_node_compiles(nd)) return 0;
            continue;
        }
        if (nd->arg[0] < 0 || is_rowval_shape(&g->nodes[nd->arg[0]])) return 0;
        if (K->online && K->online[j] && mb_op_info_of(nd->op)->kind == MB_OPK_REDUCTION) {
            int a = g->nodes[g->nodes[nd->arg[0]].arg[0]].arg[0];
            if (a < 0 || is_rowval_shape(&g->nodes[a])) return 0;
        }
    }
    return 1;
}

int mb_kernel_compiled(const mb_graph *g, const mb_kernel *K)
{
    if (K->n_reads > MB_COMPILED_IO_MAX || K->n_writes > MB_COMPILED_IO_MAX) return 0;
    for (int r = 0; r < K->n_reads; r++)
        if (g->nodes[K->reads[r]].dtype != MB_F32) return 0;
    for (int w = 0; w < K->n_writes; w++)
        if (g->nodes[K->writes[w]].dtype != MB_F32) return 0;
    if (g->has_row_ops) return row_kernel_compiles(g, K); /* every kernel of the plan runs there */
    unsigned char *evaluated = malloc((size_t)K->n_nodes + 1);
    if (!evaluated || evaluated_nodes(g, K, evaluated)) {
        free(evaluated);
        return 0;
    }
    int ops = 0, compiles = 1;
    for (int j = 0; j < K->n_nodes; j++) {
        if (evaluated[j] == 0 || evaluated[j] == 3) continue;
        ops++;
        compiles &= mb_node_compiles(&g->nodes[K->nodes[j]]);
    }
    free(evaluated);
    return compiles && ops >= 2;
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
    if (evaluated && evaluated_nodes(p->g, K, evaluated)) {
        free(evaluated);
        evaluated = NULL;
    }
    /* compiled code keeps operands in registers: its own rates, measured by
     * calibrate through the same compiler (where the spec has them) */
    const int compiled = has_compiled_rates(d) && mb_kernel_compiled(p->g, K);
    const double sincos_geps = compiled && d->sincos_compiled_geps > 0 ? d->sincos_compiled_geps
                                                                      : d->sincos_geps;
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
        for (int w = 0; w < K->n_writes; w++) elems += (double)mb_tensor_elems_at(p->g, K->writes[w], sh);
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
        if (d->has_serial_fraction_rows_l2 && d->l1_kib > 0 &&
            (double)sh.cols * K->live_bytes_per_col > d->l1_kib * 1024.0)
            return d->serial_fraction_rows_l2;
        return d->has_serial_fraction_rows ? d->serial_fraction_rows : 1.0;
    }
    if (d->has_serial_fraction_compiled && K->n_reads == 1 && K->n_writes == 1 &&
        has_compiled_rates(d) && mb_kernel_compiled(p->g, K))
        return d->serial_fraction_compiled;
    return d->serial_fraction;
}

static mb_bound bound_of(double launch_s, double mem_s, double compute_s)
{
    if (launch_s > mem_s && launch_s > compute_s) return MB_BOUND_LAUNCH;
    return compute_s > mem_s ? MB_BOUND_COMPUTE : MB_BOUND_MEMORY;
}

static int64_t tbytes(const mb_graph *g, int t, mb_shape s)
{
    return mb_tensor_elems_at(g, t, s) * (int64_t)mb_dtype_bytes(g->nodes[t].dtype);
}

/* 1 when tensor t (size bytes) is still in a cache of cache_bytes: it was
 * touched before (trace[last[t]]), and the distinct bytes touched since, plus
 * those kernel K (when not NULL) streams beside it, plus its own, fit. */
static int resident(const mb_graph *g, const mb_kernel *K, int t, int64_t size, mb_shape n,
                    const int *last, const int *trace, int n_trace, int *stamp, int *cur_stamp,
                    double cache_bytes)
{
    if (last[t] < 0) return 0;
    ++*cur_stamp;
    stamp[t] = *cur_stamp;
    double dist = 0;
    for (int e = last[t] + 1; e < n_trace && dist + (double)size <= cache_bytes; e++)
        if (stamp[trace[e]] != *cur_stamp) {
            stamp[trace[e]] = *cur_stamp;
            dist += (double)tbytes(g, trace[e], n);
        }
    for (int o = 0; K && o < K->n_reads + K->n_writes; o++) {
        int u = o < K->n_reads ? K->reads[o] : K->writes[o - K->n_reads];
        if (stamp[u] != *cur_stamp) {
            stamp[u] = *cur_stamp;
            dist += (double)tbytes(g, u, n);
        }
    }
    return dist + (double)size <= cache_bytes;
}

const char *mb_framework_name(mb_framework f)
{
    return f == MB_FW_PYTORCH ? "pytorch" : "none";
}

int mb_framework_parse(const char *s, mb_framework *out)
{
    if (s && !strcmp(s, "none")) { *out = MB_FW_NONE; return MB_OK; }
    if (s && !strcmp(s, "pytorch")) { *out = MB_FW_PYTORCH; return MB_OK; }
    return MB_EINPUT;
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
    if (fw != MB_FW_PYTORCH) return 0;
    double threshold = (d->alloc_mmap_threshold_mb > 0 ? d->alloc_mmap_threshold_mb : MB_ALLOC_MMAP_MAX_MB) *
                       1048576.0;
    double bytes = 0;
    for (int w = 0; w < K->n_writes; w++) {
        double b = (double)mb_tensor_bytes(p->g, K->writes[w], n);
        if (b >= threshold) bytes += b;
    }
    return bytes / (d->first_touch_gbs * 1e9);
}

static int estimate(const mb_plan *p, mb_shape n, const mb_device *d, mb_framework fw, mb_estimate *out,
                    mb_err *err);

int mb_estimate_plan(const mb_plan *p, int64_t n, const mb_device *d, mb_estimate *out, mb_err *err)
{
    return estimate(p, mb_shape_1d(n), d, MB_FW_NONE, out, err);
}

int64_t mb_device_rows_in_flight(const mb_device *d, int64_t rows)
{
    double per_sm = floor(d->max_threads_per_sm / MB_ROW_BLOCK_THREADS); /* row blocks an SM holds */
    if (!(per_sm >= 1)) per_sm = 1;
    double n = (d->sm_count >= 1 ? floor(d->sm_count) : 1) * per_sm;
    if (n > (double)rows) n = (double)rows;
    return n >= 1 ? (int64_t)n : 1;
}

/* The extra passes of a row kernel K that does not fit on chip: each re-read
 * counts in the lecture's bytes; it reaches DRAM unless the rows in flight
 * (mb_device_rows_in_flight) of everything K streams fit the cache. Rows of
 * up to 1024 columns run a warp a row (8 rows a block), but on every GPU of
 * the table such rows are one pass. */
static void extra_passes(const mb_graph *g, const mb_kernel *K, mb_shape s, const mb_device *d, double cache_bytes,
                         mb_cost *c)
{
    c->passes = 1;
    if (K->passes <= 1 || mb_kernel_onepass_max_cols(K, d) >= s.cols) return;
    c->passes = K->passes;
    double row_bytes = 0;
    for (int o = 0; o < K->n_reads + K->n_writes; o++) {
        int u = o < K->n_reads ? K->reads[o] : K->writes[o - K->n_reads];
        if (g->nodes[u].shape == MB_SHC_FULL) row_bytes += (double)s.cols * (double)mb_dtype_bytes(g->nodes[u].dtype);
    }
    c->rows_in_flight = mb_device_rows_in_flight(d, s.rows);
    c->rereads_cached = (double)c->rows_in_flight * row_bytes <= cache_bytes;
    for (int r = 0; r < K->n_reads; r++) {
        int64_t again = (int64_t)(K->read_passes[r] - 1) * tbytes(g, K->reads[r], s);
        c->read_bytes += again;
        if (!c->rereads_cached && g->nodes[K->reads[r]].shape == MB_SHC_FULL) c->dram_read_bytes += again;
    }
}

int mb_estimate_plan_shape(const mb_plan *p, mb_shape s, const mb_device *d, mb_estimate *out, mb_err *err)
{
    return estimate(p, s, d, MB_FW_NONE, out, err);
}

int mb_estimate_plan_fw(const mb_plan *p, int64_t n, const mb_device *d, mb_framework fw,
                        mb_estimate *out, mb_err *err)
{
    return estimate(p, mb_shape_1d(n), d, fw, out, err);
}

/* The estimate of plan p at size n (rank 1 or 2) on d, with framework fw's
 * allocations in the time (MB_FW_NONE: none). */
static int estimate(const mb_plan *p, mb_shape n, const mb_device *d, mb_framework fw, mb_estimate *out,
                    mb_err *err)
{
    memset(out, 0, sizeof *out);
    if (n.rows < 1 || n.cols < 1 || n.rows > MB_N_MAX / n.cols)
        return mb_err_set(err, MB_EINPUT, "n = %lld x %lld is out of range [1, 2^44]", (long long)n.rows,
                          (long long)n.cols);
    if (fw == MB_FW_PYTORCH && !(d->first_touch_gbs > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no first_touch_gbs: the framework's "
                          "allocations cannot be modelled (membound calibrate measures it)", d->name);
    const mb_graph *g = p->g;
    if (g->rank != (n.rank == 2 ? 2 : 1) && g->has_row_ops)
        return mb_err_set(err, MB_EINPUT, "variant '%s' is %d-D: give %s", g->name, g->rank,
                          g->rank == 2 ? "a shape, --shape ROWSxCOLS" : "--n");
    out->bandwidth_gbs = mb_device_bandwidth_gbs(d, &out->bandwidth_source);
    if (!(out->bandwidth_gbs > 0))
        return mb_err_set(err, MB_EINPUT, "device '%s' has no bandwidth", d->name);
    out->per_kernel = calloc((size_t)(p->n_kernels ? p->n_kernels : 1), sizeof(mb_cost));
    /* access trace for the cache model: tensor ids in touch order */
    int trace_cap = 1;
    for (int k = 0; k < p->n_kernels; k++) trace_cap += p->kernels[k].n_reads + p->kernels[k].n_writes;
    int *trace = malloc((size_t)trace_cap * sizeof(int));
    int *last = malloc((size_t)g->n_nodes * sizeof(int));
    int *stamp = calloc((size_t)g->n_nodes, sizeof(int));
    if (!out->per_kernel || !trace || !last || !stamp) {
        free(trace); free(last); free(stamp);
        mb_estimate_free(out);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    for (int i = 0; i < g->n_nodes; i++) last[i] = -1;
    int n_trace = 0, cur_stamp = 0;
    double cache_bytes = mb_device_cache_bytes(d);
    out->n_kernels = p->n_kernels;
    /* kernel that last wrote each tensor with ordinary stores (write-allocate
     * devices: its write-back is still pending), -1 none */
    int *dirty_by = malloc((size_t)g->n_nodes * sizeof(int));
    int64_t *rfo = calloc((size_t)(p->n_kernels ? p->n_kernels : 1), sizeof(int64_t));
    if (!dirty_by || !rfo) {
        free(dirty_by); free(rfo);
        free(trace); free(last); free(stamp);
        mb_estimate_free(out);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    for (int i = 0; i < g->n_nodes; i++) dirty_by[i] = -1;
    const int write_allocate = d->write_allocate > 0;

    /* bytes: each kernel's reads and writes in touch order */
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        mb_cost *c = &out->per_kernel[k];
        for (int r = 0; r < K->n_reads; r++) c->read_bytes += tbytes(g, K->reads[r], n);
        for (int w = 0; w < K->n_writes; w++) c->write_bytes += tbytes(g, K->writes[w], n);
        c->dram_write_bytes = c->write_bytes;
        for (int r = 0; r < K->n_reads; r++) {
            int t = K->reads[r];
            int64_t size = tbytes(g, t, n);
            if (!resident(g, K, t, size, n, last, trace, n_trace, stamp, &cur_stamp, cache_bytes))
                c->dram_read_bytes += size;
        }
        extra_passes(g, K, n, d, cache_bytes, c);
        /* A write-allocate cache (a CPU's, under ordinary stores) reads each
         * line before the store owns it: a tensor the cache does not hold is
         * read from DRAM first. Tensors larger than the cache, and of its
         * size where the spec says stream_at_cache_size (this version's
         * executors; 2-vCPU Xeon guest, a 64 MiB copy under a 64 MiB cache
         * knee: 5.3 ms with plain stores, 2.8 ms streamed), are written with
         * non-temporal stores by the CPU executors (no read). */
        for (int w = 0; w < K->n_writes && write_allocate; w++) {
            int t = K->writes[w];
            int64_t size = tbytes(g, t, n);
            if ((double)size > cache_bytes || ((double)size == cache_bytes && d->stream_at_cache_size > 0)) continue;
            if (!resident(g, K, t, size, n, last, trace, n_trace, stamp, &cur_stamp, cache_bytes))
                c->dram_read_bytes += size, rfo[k] += size;
            dirty_by[t] = k;
        }
        for (int r = 0; r < K->n_reads; r++) { last[K->reads[r]] = n_trace; trace[n_trace++] = K->reads[r]; }
        for (int w = 0; w < K->n_writes; w++) { last[K->writes[w]] = n_trace; trace[n_trace++] = K->writes[w]; }
    }
    /* Write-allocate devices: dirty lines are written back when evicted. A
     * tensor still held by the cache when the plan ends is written back
     * after it (by the next sample's flush on a CPU), not within its time. */
    for (int t = 0; t < g->n_nodes && write_allocate; t++) {
        if (dirty_by[t] != p->n_kernels - 1) continue;
        int64_t size = tbytes(g, t, n);
        if (resident(g, NULL, t, size, n, last, trace, n_trace, stamp, &cur_stamp, cache_bytes))
            out->per_kernel[dirty_by[t]].dram_write_bytes -= size;
    }
    free(dirty_by);

    /* time */
    double mem_bound_s = 0, compute_bound_s = 0, launch_total_s = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        mb_cost *c = &out->per_kernel[k];
        compute_time(p, K, n, d, c);
        c->mem_s = (double)(c->dram_read_bytes + c->dram_write_bytes) / (out->bandwidth_gbs * 1e9);
        /* two-level roofline: cache hits are not free, every byte streams
         * through the last-level cache */
        if (d->cache_bandwidth_gbs > 0)
            c->mem_s = fmax(c->mem_s, (double)(c->read_bytes + c->write_bytes) /
                                          (d->cache_bandwidth_gbs * 1e9));
        /* the kernel's own reads (not the stores' line fills, which stream
         * beside them) take at least read bytes over the read bandwidth */
        if (d->read_bandwidth_gbs > 0 && K->n_reads > 0) {
            double read_gbs = d->read_bandwidth_gbs * (1 + d->read_stream_gain * (K->n_reads - 1)) /
                              (1 + d->read_stream_penalty * (K->n_reads - 1));
            c->mem_s = fmax(c->mem_s, (double)(c->dram_read_bytes - rfo[k]) / (read_gbs * 1e9));
        }
        c->launch_s = d->launch_overhead_us * 1e-6;
        c->alloc_s = alloc_time_s(p, K, mb_shape_elems(n), d, fw);
        c->time_s = c->launch_s + fmax(c->mem_s, c->compute_s) +
                    serial_fraction_of(p, K, n, d) * fmin(c->mem_s, c->compute_s) + c->alloc_s;
        c->bound = bound_of(c->launch_s, c->mem_s, c->compute_s);

        mb_cost *t = &out->total;
        t->read_bytes += c->read_bytes;
        t->write_bytes += c->write_bytes;
        t->dram_read_bytes += c->dram_read_bytes;
        t->dram_write_bytes += c->dram_write_bytes;
        t->flops += c->flops;
        t->sfu_ops += c->sfu_ops;
        t->mem_s += c->mem_s;
        t->compute_s += c->compute_s;
        t->launch_s += c->launch_s;
        t->alloc_s += c->alloc_s;
        t->time_s += c->time_s;
        launch_total_s += c->launch_s;
        if (c->compute_s > c->mem_s) compute_bound_s += c->compute_s;
        else mem_bound_s += c->mem_s;
    }
    free(rfo);
    /* the plan is bound by whichever term contributes most of its time */
    out->total.bound = bound_of(launch_total_s, mem_bound_s, compute_bound_s);
    for (int s = 0; s < p->n_saved; s++) out->saved_bytes += tbytes(g, p->saved[s], n);
    free(trace);
    free(last);
    free(stamp);
    return MB_OK;
}

void mb_estimate_free(mb_estimate *e)
{
    free(e->per_kernel);
    e->per_kernel = NULL;
}
