/* jit_rows.c — compiled row kernels: C generated for one kernel of a plan
 * with row operations (sum, mean, amax, softmax, log_softmax, layer_norm,
 * rms_norm over the last dimension), one loop over the row per pass of the
 * kernel (model/passes.c: mb_kernel.passes, eval_mask, stat_pass, online),
 * every elementwise value of the pass a vector register and each reduction's
 * accumulator beside the value it sums, as a PyTorch CPU kernel or
 * Inductor's cpp backend fuses them; built and cached by jit_cpu.c.
 *
 * keep 1 (the row fits the core's cache: the interpreter's one pass): the
 * passes without the online fold (the row is read from memory once either
 * way, and a max before the sum needs no rescaling); each value is computed
 * once, in the first pass that needs it, and kept in the thread's row buffer
 * own[v] for the later passes that need it; softmax keeps exp(x - max) from
 * its sum pass and scales it; the passes after the first prefetch the next
 * row. keep 0 (multi-pass): every pass recomputes what it needs from the
 * kernel's reads, as the interpreter's passes do. An online pass (softmax's
 * max and sum together, or sum(exp(a - amax(a))) beside its amax) takes each
 * chunk's max per lane first (a loop over the chunk, in L1), then its sum of
 * exp(x - that max); each chunk's sums go into double lanes rescaled to the
 * max so far (one vector exp a chunk), the lanes combined at the row's end:
 * the interpreter's tiles, in registers.
 *
 * Softmax's exp(x - max) (the library ops', an online sum's, and exp(a -
 * amax(a)) written out: mb_node_exp_nonpos) is vec_ops.h's MB_V_EXP_NONPOS,
 * within 2 ulps like SLEEF's u10 and 2-2.7x its speed on AVX-512.
 * Numerics as rows_cpu.c's: f32 lanes, each chunk of MB_KERN_TILE columns'
 * lane sums added pairwise and into double; LayerNorm's sums of x - k and
 * (x - k)^2 with k each lane's first element, the lanes combined in double
 * (the pairwise update of Chan, Golub and LeVeque); the row's last partial
 * vector's loads padded with 1 (in every op's domain) and its lanes past the
 * row masked out of the reductions.
 * Does not run anything or decide what is compiled: rows_run_cpu.c does. */
#include "kernels_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define sbuf mb_kern_sbuf
#define sb_printf mb_kern_sb_printf

enum { K_ELEM, K_ROWVAL, K_RED, K_LIB, K_PART };

typedef struct gen {
    const mb_graph *g;
    const mb_kernel *K;
    int keep;
    sbuf *b;
    int *pos;    /* graph node -> index in K->nodes, -1 */
    char *kind;  /* K node j -> K_* */
    char *req;   /* [pass][K node j] -> its vector value is needed in that pass */
    char *cur;   /* req's row of the pass emitted */
    char *kept;  /* K node j -> kept in own[] for a later pass (keep 1) */
    char *onl;   /* K node j -> needed by the online maxima of the pass emitted */
    int *ready;  /* K node j (row values) -> the pass it is computed before */
} gen;

static int rowval(const gen *G, int v)
{
    int s = G->g->nodes[v].shape;
    return s == MB_SHC_ROW || s == MB_SHC_ROWV || s == MB_SHC_SCALAR;
}

static int lowest(int mask)
{
    for (int p = 0; p < 31; p++)
        if (mask >> p & 1) return p;
    return -1;
}

static int is_write(const gen *G, int v)
{
    for (int w = 0; w < G->K->n_writes; w++)
        if (G->K->writes[w] == v) return 1;
    return 0;
}

/* 1 when node j's per-element value (a library op's output) is computed,
 * not loaded, in pass p */
static int comp(const gen *G, int j, int p)
{
    int m = G->K->eval_mask[j];
    return G->keep ? lowest(m) == p : (m >> p & 1);
}

/* model/passes.c's rule of what each pass uses (the model counts by it) */
static int in_stats(const gen *G, int j, int p)
{
    return mb_kernel_row_stats_in(G->g, G->K, j, p);
}

static int stat_operand(const gen *G, int j)
{
    return mb_kernel_row_stat_operand(G->g, G->K, j);
}

/* 1 when library op j's softmax output scales the exp(x - max) its sum
 * pass kept (keep 1, not online). */
static int softmax_kept(const gen *G, int j)
{
    return G->keep && G->g->nodes[G->K->nodes[j]].op == MB_OP_SOFTMAX && !G->K->online[j];
}

/* Node u (a read or a node of K) as a vector expression. */
static void value(gen *G, int u)
{
    if (rowval(G, u)) sb_printf(G->b, "V_SET(s%d)", u);
    else sb_printf(G->b, "v%d", u);
}

/* Operand k of node nd as a vector expression. */
static void operand(gen *G, const mb_node *nd, int k)
{
    int u = nd->arg[k];
    if (u >= 0) value(G, u);
    else if (k == 1 && nd->scalar_cols) sb_printf(G->b, "V_SET((float)cols)");
    else sb_printf(G->b, "V_SET(%af)", (double)(float)nd->scalar[k]);
}

/* The vector expression of elementwise node nd. */
static void elem_expr(gen *G, const mb_node *nd)
{
    if (nd->op == MB_OP_POW) { /* mb_op_powf's x, x*x and x*x*x */
        float e = (float)nd->scalar[1];
        if (e == 1.0f) operand(G, nd, 0);
        else {
            sb_printf(G->b, e == 3.0f ? "V_MUL(V_MUL(" : "V_MUL(");
            operand(G, nd, 0);
            sb_printf(G->b, ", ");
            operand(G, nd, 0);
            sb_printf(G->b, ")");
            if (e == 3.0f) {
                sb_printf(G->b, ", ");
                operand(G, nd, 0);
                sb_printf(G->b, ")");
            }
        }
        return;
    }
    const mb_op_info *in = mb_op_info_of(nd->op);
    /* exp(a - amax(a)): softmax's exp, the model's rule */
    sb_printf(G->b, "%s(", mb_node_exp_nonpos(G->g, (int)(nd - G->g->nodes)) ? "MB_V_EXP_NONPOS" : in->vform);
    operand(G, nd, 0);
    if (in->arity == 2) {
        sb_printf(G->b, ", ");
        operand(G, nd, 1);
    }
    sb_printf(G->b, ")");
}

/* Marks node u needed in the pass (when it is a vector value of K's). */
static void need(gen *G, int u)
{
    if (u >= 0 && G->pos[u] >= 0 && !rowval(G, u)) G->cur[G->pos[u]] = 1;
}

/* Marks the operands of K node j needed. */
static void need_args(gen *G, int j)
{
    const mb_node *nd = &G->g->nodes[G->K->nodes[j]];
    for (int k = 0; k < mb_op_arity(nd->op); k++) need(G, nd->arg[k]);
}

/* The statement of K node j's statistics in pass p's body (m0: masks a
 * partial vector's lanes past the row to 0, mn to -inf). */
static void stats_step(gen *G, int j, int p, int tail)
{
    sbuf *b = G->b;
    const int v = G->K->nodes[j], x = stat_operand(G, j);
    const mb_node *nd = &G->g->nodes[v];
    const char *m0 = tail ? "mb_lanes(" : "(", *m0end = tail ? ", m, 0.0f)" : ")";
    const char *mn = tail ? "mb_lanes(" : "(", *mnend = tail ? ", m, -INFINITY)" : ")";
    const int online = G->K->online[j], first = p == G->K->stat_pass[j];
    if (online) { /* the sum of exp(x - the lane's max so far), the chunk's max taken first */
        sb_printf(b, "            a%d = V_ADD(a%d, %sMB_V_EXP_NONPOS(V_SUB(", v, v, m0);
        value(G, x);
        sb_printf(b, ", x%d))%s);\n", v, m0end);
    } else if (nd->op == MB_OP_SUM || nd->op == MB_OP_MEAN) {
        sb_printf(b, "            a%d = V_ADD(a%d, %s", v, v, m0);
        value(G, x);
        sb_printf(b, "%s);\n", m0end);
    } else if (nd->op == MB_OP_AMAX || ((nd->op == MB_OP_SOFTMAX || nd->op == MB_OP_LOG_SOFTMAX) && first)) {
        sb_printf(b, "            x%d = V_MAX(%s", v, mn); /* x > m ? x : m, NaN passed over */
        value(G, x);
        sb_printf(b, "%s, x%d);\n", mnend, v);
    } else if (nd->op == MB_OP_SOFTMAX || nd->op == MB_OP_LOG_SOFTMAX) { /* the sum of exp(x - max) */
        sb_printf(b, "            { const vf e = MB_V_EXP_NONPOS(V_SUB(");
        value(G, x);
        sb_printf(b, ", V_SET(m%d)));\n", v);
        if (softmax_kept(G, j))
            sb_printf(b, "              %so%d + c, e%s);\n", tail ? "mb_st_part(" : "V_ST(", v, tail ? ", m" : "");
        sb_printf(b, "              a%d = V_ADD(a%d, %se%s); }\n", v, v, m0, m0end);
    } else if (nd->op == MB_OP_LAYER_NORM) {
        sb_printf(b, "            if (c == 0) k%d = ", v);
        value(G, x);
        sb_printf(b, ";\n            { const vf d = %sV_SUB(", m0);
        value(G, x);
        sb_printf(b, ", k%d)%s; a%d = V_ADD(a%d, d); q%d = V_ADD(q%d, V_MUL(d, d)); }\n", v, m0end, v, v, v, v);
    } else { /* rms_norm */
        sb_printf(b, "            { const vf d = %s", m0);
        value(G, x);
        sb_printf(b, "%s; a%d = V_ADD(a%d, V_MUL(d, d)); }\n", m0end, v, v);
    }
}

/* The value of K node j computed in the body: elementwise, or a library
 * op's output from its statistics. */
static void value_expr(gen *G, int j, const char *ld, const char *ldend)
{
    sbuf *b = G->b;
    const int v = G->K->nodes[j];
    const mb_node *nd = &G->g->nodes[v];
    if (G->kind[j] == K_ELEM) {
        elem_expr(G, nd);
    } else if (G->kind[j] == K_PART) {
        operand(G, nd, 0);
    } else if (nd->op == MB_OP_SOFTMAX) {
        if (softmax_kept(G, j)) sb_printf(b, "V_MUL(%so%d + c%s, V_SET(inv%d))", ld, v, ldend, v);
        else {
            sb_printf(b, "V_MUL(MB_V_EXP_NONPOS(V_SUB(");
            operand(G, nd, 0);
            sb_printf(b, ", V_SET(m%d))), V_SET(inv%d))", v, v);
        }
    } else if (nd->op == MB_OP_LOG_SOFTMAX) {
        sb_printf(b, "V_SUB(");
        operand(G, nd, 0);
        sb_printf(b, ", V_SET(lse%d))", v);
    } else { /* (x - mean) rstd w; rms_norm: x rstd w */
        sb_printf(b, "V_MUL(V_MUL(");
        if (nd->op == MB_OP_LAYER_NORM) sb_printf(b, "V_SUB(");
        operand(G, nd, 0);
        if (nd->op == MB_OP_LAYER_NORM) sb_printf(b, ", V_SET(mu%d))", v);
        sb_printf(b, ", V_SET(rstd%d)), ", v);
        operand(G, nd, 1);
        sb_printf(b, ")");
    }
}

/* The loop body of pass p over one vector at column c: tail 1 for the
 * row's last partial vector (m lanes). */
static void body(gen *G, int p, int tail, int maxonly)
{
    const mb_kernel *K = G->K;
    sbuf *b = G->b;
    const char *ld = tail ? "mb_ld_part(" : "V_LD(", *ldend = tail ? ", m)" : ")";
    const char *st = tail ? "mb_st_part(" : "V_ST(", *stend = tail ? ", m)" : ")";
    for (int q = 0; q < K->n_reads; q++) {
        int u = K->reads[q];
        if (!rowval(G, u)) sb_printf(b, "            const vf v%d = %sp%d + c%s;\n", u, ld, u, ldend);
        /* one pass: the passes after the first bring the next row's reads in
         * from memory, a share each, while they compute from the cache (the
         * first pass would wait for them) */
        if (G->keep && K->passes > 1 && p > 0 && !tail && !maxonly && G->g->nodes[u].shape == MB_SHC_FULL)
            sb_printf(b, "            if (pf) __builtin_prefetch(p%d + cols + ((int64_t)%d * cols + c) / %d, 0, 3);\n",
                      u, p - 1, K->passes - 1);
    }
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        if (maxonly) { /* the online maxima of the chunk, and what they need */
            if (G->cur[j]) {
                sb_printf(b, "            const vf v%d = ", v);
                value_expr(G, j, ld, ldend);
                sb_printf(b, ";\n");
            }
            if (in_stats(G, j, p) && K->online[j]) {
                sb_printf(b, "            cm%d = V_MAX(%s", v, tail ? "mb_lanes(" : "(");
                value(G, stat_operand(G, j));
                sb_printf(b, "%s, cm%d);\n", tail ? ", m, -INFINITY)" : ")", v);
            }
            continue;
        }
        if (in_stats(G, j, p)) stats_step(G, j, p, tail);
        if (!G->cur[j]) continue;
        if (!comp(G, j, p)) { /* kept from an earlier pass */
            sb_printf(b, "            const vf v%d = %so%d + c%s;\n", v, ld, v, ldend);
            continue;
        }
        sb_printf(b, "            const vf v%d = ", v);
        value_expr(G, j, ld, ldend);
        sb_printf(b, ";\n");
        if (G->kept[j]) sb_printf(b, "            %so%d + c, v%d%s;\n", st, v, v, stend);
        if (is_write(G, v) && lowest(K->eval_mask[j]) == p && G->kind[j] == K_PART) {
            if (tail) sb_printf(b, "            mb_st_part(w%d + c, V_ADD(mb_ld_part(w%d + c, m), v%d), m);\n", v, v, v);
            else sb_printf(b, "            V_ST(w%d + c, V_ADD(V_LD(w%d + c), v%d));\n", v, v, v);
        } else if (is_write(G, v) && lowest(K->eval_mask[j]) == p) {
            if (tail) sb_printf(b, "            mb_st_part(w%d + c, v%d, m);\n", v, v);
            else sb_printf(b, "            if (st%d) V_STREAM(w%d + c, v%d); else V_ST(w%d + c, v%d);\n", v, v,
                           v, v, v);
        }
    }
}

/* Row values computed before pass p (every one that is ready then). */
static void rowvals_before(gen *G, int p)
{
    const mb_kernel *K = G->K;
    for (int j = 0; j < K->n_nodes; j++) {
        if (G->kind[j] != K_ROWVAL || G->ready[j] != p) continue;
        int v = K->nodes[j];
        sb_printf(G->b, "        s%d = mb_first(", v);
        elem_expr(G, &G->g->nodes[v]);
        sb_printf(G->b, ");\n");
    }
}

/* The accumulators of K node j's statistics in pass p: a running max x,
 * a sum (f32 vector a, double d), an online max and sum (x, a, double lanes
 * D), LayerNorm's shifted sums (a, q, lanes L, Q, shift k). */
enum { F_MAX, F_SUM, F_ONLINE, F_LN };

static int stat_form(const gen *G, int j, int p)
{
    mb_op op = G->g->nodes[G->K->nodes[j]].op;
    if (G->K->online[j]) return F_ONLINE;
    if (op == MB_OP_LAYER_NORM) return F_LN;
    if (op == MB_OP_AMAX) return F_MAX;
    if ((op == MB_OP_SOFTMAX || op == MB_OP_LOG_SOFTMAX) && p == G->K->stat_pass[j]) return F_MAX;
    return F_SUM;
}

/* For a pass with online sums: G->cur set to what their maxima need
 * (G->onl, from the last node back); 0 for a pass without. */
static int online_maxima(gen *G, int p)
{
    const mb_kernel *K = G->K;
    int any = 0;
    G->cur = G->onl;
    memset(G->onl, 0, (size_t)K->n_nodes);
    for (int j = K->n_nodes - 1; j >= 0; j--) {
        if (in_stats(G, j, p) && K->online[j]) {
            need(G, stat_operand(G, j));
            any = 1;
        }
        if (G->onl[j] && comp(G, j, p)) need_args(G, j);
    }
    return any;
}

/* Pass p: its accumulators, the chunked loop, what its statistics give. */
static void pass(gen *G, int p)
{
    const mb_kernel *K = G->K;
    sbuf *b = G->b;
    G->cur = G->req + (size_t)p * (size_t)K->n_nodes;
    sb_printf(b, "        {\n");
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        if (!in_stats(G, j, p)) continue;
        switch (stat_form(G, j, p)) {
        case F_MAX: sb_printf(b, "        vf x%d = V_SET(-INFINITY);\n", v); break;
        case F_SUM: sb_printf(b, "        vf a%d = V_SET(0.0f); double d%d = 0;\n", v, v); break;
        case F_ONLINE:
            sb_printf(b, "        vf x%d = V_SET(-INFINITY), a%d = V_SET(0.0f), F%d = x%d; double D%d[MB_VW] = {0};\n",
                      v, v, v, v, v);
            break;
        default:
            sb_printf(b, "        vf a%d = V_SET(0.0f), q%d = a%d, k%d = a%d; double L%d[MB_VW] = {0}, "
                         "Q%d[MB_VW] = {0};\n", v, v, v, v, v, v, v);
        }
    }
    sb_printf(b, "        for (int64_t c0 = 0; c0 < cols; c0 += MB_KERN_TILE) {\n"
                 "            const int64_t ce = c0 + MB_KERN_TILE < cols ? c0 + MB_KERN_TILE : cols;\n"
                 "            int64_t c = c0;\n");
    if (online_maxima(G, p)) { /* the chunk's maxima first (the chunk stays in L1), then its sums */
        for (int j = 0; j < K->n_nodes; j++)
            if (in_stats(G, j, p) && K->online[j]) sb_printf(b, "            vf cm%d = x%d;\n", K->nodes[j], K->nodes[j]);
        sb_printf(b, "            for (; c + MB_VW <= ce; c += MB_VW) {\n");
        body(G, p, 0, 1);
        sb_printf(b, "            }\n            if (c < ce) {\n            const int m = (int)(ce - c);\n");
        body(G, p, 1, 1);
        sb_printf(b, "            }\n            c = c0;\n");
        for (int j = 0; j < K->n_nodes; j++)
            if (in_stats(G, j, p) && K->online[j]) sb_printf(b, "            x%d = cm%d;\n", K->nodes[j], K->nodes[j]);
    }
    G->cur = G->req + (size_t)p * (size_t)K->n_nodes;
    sb_printf(b, "            for (; c + MB_VW <= ce; c += MB_VW) {\n");
    body(G, p, 0, 0);
    sb_printf(b, "            }\n            if (c < ce) {\n            const int m = (int)(ce - c);\n");
    body(G, p, 1, 0);
    sb_printf(b, "            }\n");
    for (int j = 0; j < K->n_nodes; j++) { /* the chunk's lane sums into double */
        int v = K->nodes[j];
        if (!in_stats(G, j, p)) continue;
        switch (stat_form(G, j, p)) {
        case F_SUM: sb_printf(b, "            d%d += mb_hsum(a%d); a%d = V_SET(0.0f);\n", v, v, v); break;
        case F_ONLINE: sb_printf(b, "            mb_online_flush(D%d, &F%d, x%d, a%d); a%d = V_SET(0.0f);\n", v, v, v, v, v); break;
        case F_LN:
            sb_printf(b, "            mb_lanes_add(L%d, a%d); mb_lanes_add(Q%d, q%d); a%d = q%d = V_SET(0.0f);\n",
                      v, v, v, v, v, v);
            break;
        default: break;
        }
    }
    sb_printf(b, "        }\n");
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        if (!in_stats(G, j, p)) continue;
        const mb_node *nd = &G->g->nodes[v];
        const int form = stat_form(G, j, p);
        if (form == F_ONLINE)
            sb_printf(b, "        { float mo; const double so = mb_online_finish(D%d, x%d, &mo);\n", v, v);
        if (nd->op == MB_OP_SUM)
            sb_printf(b, form == F_ONLINE ? "        s%d = (float)so; (void)mo;\n" : "        s%d = (float)d%d;\n", v,
                      v);
        else if (nd->op == MB_OP_MEAN) sb_printf(b, "        s%d = (float)(d%d / (double)cols);\n", v, v);
        else if (nd->op == MB_OP_AMAX) sb_printf(b, "        s%d = mb_hmax(x%d);\n", v, v);
        else if (nd->op == MB_OP_LAYER_NORM)
            sb_printf(b, "        mb_ln_finish(L%d, Q%d, k%d, cols, %a, &mu%d, &rstd%d);\n", v, v, v, nd->eps, v, v);
        else if (nd->op == MB_OP_RMS_NORM)
            sb_printf(b, "        rstd%d = (float)(1.0 / __builtin_sqrt(d%d / (double)cols + %a));\n", v, v, nd->eps);
        else if (form == F_MAX) sb_printf(b, "        m%d = mb_hmax(x%d);\n", v, v);
        else { /* softmax, log_softmax: the sum known */
            if (form == F_ONLINE) sb_printf(b, "        m%d = mo;\n", v);
            char sum[32];
            if (form == F_ONLINE) snprintf(sum, sizeof sum, "so");
            else snprintf(sum, sizeof sum, "d%d", v);
            if (nd->op == MB_OP_SOFTMAX) sb_printf(b, "        inv%d = 1.0f / (float)%s;\n", v, sum);
            else sb_printf(b, "        lse%d = m%d + mb_first(V_LOG(V_SET((float)%s)));\n", v, v, sum);
        }
        if (form == F_ONLINE) sb_printf(b, "        }\n");
    }
    sb_printf(b, "        }\n");
}

#define PRELUDE \
    "#if !defined(MB_VW)\n#error \"no vector ISA with SLEEF\"\n#endif\n" \
    "#define MB_KERN_TILE %d\n" \
    "static inline vf mb_ld_part(const float *p, int m)\n" \
    "{ float t[MB_VW]; for (int k = 0; k < MB_VW; k++) t[k] = k < m ? p[k] : 1.0f; return V_LD(t); }\n" \
    "static inline void mb_st_part(float *p, vf v, int m)\n" \
    "{ float t[MB_VW]; V_ST(t, v); memcpy(p, t, (size_t)m * sizeof(float)); }\n" \
    "static inline vf mb_lanes(vf v, int m, float fill)\n" \
    "{ float t[MB_VW]; V_ST(t, v); for (int k = m; k < MB_VW; k++) t[k] = fill; return V_LD(t); }\n" \
    "static inline float mb_first(vf v) { float t[MB_VW]; V_ST(t, v); return t[0]; }\n" \
    "static inline float mb_hsum(vf v)\n" \
    "{ float l[MB_VW]; V_ST(l, v); for (int w = MB_VW; w > 1; w /= 2) for (int i = 0; i < w / 2; i++) " \
    "l[i] += l[i + w / 2]; return l[0]; }\n" \
    "static inline float mb_hmax(vf v)\n" \
    "{ float t[MB_VW]; V_ST(t, v); float m = t[0]; for (int k = 1; k < MB_VW; k++) m = t[k] > m ? t[k] : m; " \
    "return m; }\n" \
    "static inline void mb_lanes_add(double *d, vf v)\n" \
    "{ float t[MB_VW]; V_ST(t, v); for (int k = 0; k < MB_VW; k++) d[k] += t[k]; }\n" \
    "/* an online sum's chunk: each lane's double sum d, relative to its max at the last flush *f,\n" \
    "   rescaled to the max x now (one vector exp a chunk) and the chunk's sum a added */\n" \
    "static inline void mb_online_flush(double *d, vf *f, vf x, vf a)\n" \
    "{\n" \
    "    float s[MB_VW], t[MB_VW];\n" \
    "    V_ST(s, V_GT_SELECTV(x, *f, V_EXP(V_SUB(*f, x)), V_SET(1.0f))); V_ST(t, a);\n" \
    "    for (int k = 0; k < MB_VW; k++) d[k] = d[k] * s[k] + t[k];\n" \
    "    *f = x;\n" \
    "}\n" \
    "/* an online sum's lanes combined: the row's max into *m, the sum relative to it */\n" \
    "static double mb_online_finish(const double *d, vf mv, float *m)\n" \
    "{\n" \
    "    float t[MB_VW]; V_ST(t, mv);\n" \
    "    *m = mb_hmax(mv);\n" \
    "    double s = 0;\n" \
    "    for (int k = 0; k < MB_VW; k++)\n" \
    "        if (d[k] != 0) s += d[k] * (t[k] == *m ? 1.0 : (double)mb_first(V_EXP(V_SET(t[k] - *m))));\n" \
    "    return s;\n" \
    "}\n" \
    "/* the row's mean and 1/sqrt(var + eps) from each lane's sums of x - k and (x - k)^2 */\n" \
    "static void mb_ln_finish(const double *s1, const double *s2, vf kv, int64_t cols, double eps, float *mu,\n" \
    "                         float *rstd)\n" \
    "{\n" \
    "    float k[MB_VW]; V_ST(k, kv);\n" \
    "    const int64_t full = cols / MB_VW, rem = cols %% MB_VW;\n" \
    "    double tot = 0, m2 = 0;\n" \
    "    for (int l = 0; l < MB_VW; l++) tot += (double)(full + (l < rem)) * k[l] + s1[l];\n" \
    "    const double mean = tot / (double)cols;\n" \
    "    for (int l = 0; l < MB_VW; l++) {\n" \
    "        double nl = (double)(full + (l < rem)), dk = k[l] - mean;\n" \
    "        m2 += s2[l] + 2 * dk * s1[l] + nl * dk * dk;\n" \
    "    }\n" \
    "    double var = m2 / (double)cols;\n" \
    "    *mu = (float)mean;\n" \
    "    *rstd = (float)(1.0 / __builtin_sqrt((var > 0 ? var : 0) + eps));\n" \
    "}\n\n"

/* Classifies K's nodes; -1 for what the generator does not form. */
static int classify(gen *G)
{
    const mb_graph *g = G->g;
    const mb_kernel *K = G->K;
    for (int q = 0; q < K->n_reads; q++)
        if (g->nodes[K->reads[q]].dtype != MB_F32) return -1;
    for (int w = 0; w < K->n_writes; w++)
        if (g->nodes[K->writes[w]].dtype != MB_F32) return -1;
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        const mb_node *nd = &g->nodes[v];
        mb_op_kind kind = mb_op_info_of(nd->op)->kind;
        if (kind == MB_OPK_COLUMN && nd->shape == MB_SHC_PART && nd->arg[0] >= 0 && !rowval(G, nd->arg[0])) {
            G->kind[j] = K_PART; /* its operand added into the block's partial sums */
            continue;
        }
        if (kind == MB_OPK_COLUMN || kind == MB_OPK_INPUT) return -1;
        if (kind == MB_OPK_REDUCTION || MB_OP_IS_ROW(nd->op)) {
            if (nd->arg[0] < 0 || rowval(G, nd->arg[0])) return -1;
            if (kind != MB_OPK_REDUCTION && nd->op != MB_OP_SOFTMAX && nd->op != MB_OP_LOG_SOFTMAX &&
                nd->op != MB_OP_LAYER_NORM && nd->op != MB_OP_RMS_NORM)
                return -1;
            G->kind[j] = kind == MB_OPK_REDUCTION ? K_RED : K_LIB;
            if (kind == MB_OPK_REDUCTION && K->online[j]) {
                int a = stat_operand(G, j);
                if (a < 0 || rowval(G, a)) return -1;
            }
            continue;
        }
        if (!mb_node_compiles(nd)) return -1; /* the model's rule */
        G->kind[j] = rowval(G, v) ? K_ROWVAL : K_ELEM;
    }
    /* row values: computed before the first pass their operands allow */
    for (int j = 0; j < K->n_nodes; j++) {
        if (G->kind[j] != K_ROWVAL) continue;
        const mb_node *nd = &g->nodes[K->nodes[j]];
        int at = 0;
        for (int k = 0; k < mb_op_arity(nd->op); k++) {
            int u = nd->arg[k], i = u >= 0 ? G->pos[u] : -1, r = 0;
            if (i < 0) continue;
            if (G->kind[i] == K_RED) r = K->stat_pass[i] + 1;
            else if (G->kind[i] == K_ROWVAL) r = G->ready[i];
            else return -1;
            if (r > at) at = r;
        }
        G->ready[j] = at;
    }
    return 0;
}

static char *generate(gen *G)
{
    const mb_graph *g = G->g;
    const mb_kernel *K = G->K;
    sbuf b = {0};
    G->b = &b;
    sb_printf(&b, "/* membound row kernel: %d reads, %d nodes, %d writes, %d passes, %s */\n"
                  "#define MB_HAVE_SLEEF 1\n#include <stdint.h>\n#include <string.h>\n#include <math.h>\n%s\n",
              K->n_reads, K->n_nodes, K->n_writes, K->passes, G->keep ? "kept rows" : "re-read rows",
              mb_kern_vec_ops_text);
    sb_printf(&b, PRELUDE, MB_KERN_TILE);
    sb_printf(&b, "void mb_jit_rows(void *const *data, float *const *own, int64_t r0, int64_t r1, int64_t cols,"
                  " int nt)\n{\n    (void)own; (void)nt;\n    for (int64_t r = r0; r < r1; r++) {\n"
                  "        const int pf = r + 1 < r1; (void)pf;\n");
    for (int q = 0; q < K->n_reads; q++) {
        int u = K->reads[q];
        int sh = g->nodes[u].shape;
        if (rowval(G, u))
            sb_printf(&b, "        const float s%d = ((const float *)data[%d])[%s];\n", u, u,
                      sh == MB_SHC_SCALAR ? "0" : "r");
        else
            sb_printf(&b, "        const float *p%d = (const float *)data[%d]%s;\n", u, u,
                      sh == MB_SHC_COL ? "" : " + r * cols");
    }
    for (int j = 0; j < K->n_nodes; j++) {
        int v = K->nodes[j];
        const mb_node *nd = &g->nodes[v];
        if (G->kind[j] == K_ROWVAL || G->kind[j] == K_RED) sb_printf(&b, "        float s%d = 0;\n", v);
        if (G->kind[j] == K_LIB)
            sb_printf(&b, "        float m%d = 0, inv%d = 0, lse%d = 0, mu%d = 0, rstd%d = 0;\n"
                          "        (void)m%d; (void)inv%d; (void)lse%d; (void)mu%d; (void)rstd%d;\n",
                      v, v, v, v, v, v, v, v, v, v);
        if (G->kept[j] || (G->keep && nd->op == MB_OP_SOFTMAX))
            sb_printf(&b, "        float *o%d = own[%d];\n", v, v);
        if (is_write(G, v) && !rowval(G, v)) {
            /* a PART tensor's data[] is the row of the block r0..r1 lie in (rows_run_cpu.c) */
            sb_printf(&b, "        float *w%d = (float *)data[%d]%s;\n", v, v,
                      nd->shape == MB_SHC_COL || nd->shape == MB_SHC_PART ? "" : " + r * cols");
            if (nd->shape == MB_SHC_FULL)
                sb_printf(&b, "        const int st%d = nt && ((uintptr_t)w%d %% sizeof(vf)) == 0;\n", v, v);
            else sb_printf(&b, "        const int st%d = 0;\n", v);
        }
    }
    for (int p = 0; p <= K->passes; p++) {
        rowvals_before(G, p);
        if (p < K->passes) pass(G, p);
    }
    for (int w = 0; w < K->n_writes; w++) {
        int v = K->writes[w];
        if (rowval(G, v))
            sb_printf(&b, "        ((float *)data[%d])[%s] = s%d;\n", v,
                      g->nodes[v].shape == MB_SHC_SCALAR ? "0" : "r", v);
    }
    sb_printf(&b, "    }\n}\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

char *mb_kern_jit_rows_source(const mb_graph *g, const mb_kernel *K, int keep)
{
    if (!K->eval_mask || !K->stat_pass || !K->online) return NULL; /* no passes derived */
    int online = 0;
    for (int j = 0; j < K->n_nodes; j++) online |= K->online[j];
    if (keep && online) { /* one pass: the max before the sum, no rescaling (the row is read once either way) */
        mb_kernel K2 = *K;
        K2.read_passes = NULL;
        K2.eval_mask = K2.stat_pass = NULL;
        K2.online = NULL;
        char *text = mb_kernel_derive_passes(g, &K2, 0) == 0 ? mb_kern_jit_rows_source(g, &K2, keep) : NULL;
        free(K2.read_passes);
        free(K2.eval_mask);
        free(K2.stat_pass);
        free(K2.online);
        return text;
    }
    gen G = {g, K, keep, NULL, malloc((size_t)g->n_nodes * sizeof(int)), calloc((size_t)K->n_nodes + 1, 1),
             calloc((size_t)K->passes * (size_t)K->n_nodes + 1, 1), NULL, calloc((size_t)K->n_nodes + 1, 1),
             calloc((size_t)K->n_nodes + 1, 1), calloc((size_t)K->n_nodes + 1, sizeof(int))};
    char *text = NULL;
    if (G.pos && G.kind && G.req && G.kept && G.onl && G.ready) {
        for (int i = 0; i < g->n_nodes; i++) G.pos[i] = -1;
        for (int j = 0; j < K->n_nodes; j++) G.pos[K->nodes[j]] = j;
        if (classify(&G) == 0 && mb_kernel_row_needs(g, K, keep, G.req, G.kept) == 0) text = generate(&G);
    }
    free(G.pos);
    free(G.kind);
    free(G.req);
    free(G.kept);
    free(G.onl);
    free(G.ready);
    return text;
}

mb_kern_rows_fn mb_kern_jit_rows_lookup(const mb_graph *g, const mb_kernel *K, int keep)
{
    void *sym = mb_kern_jit_symbol(mb_kern_jit_rows_source(g, K, keep), "mb_jit_rows");
    mb_kern_rows_fn fn = NULL;
    memcpy(&fn, &sym, sizeof sym); /* object to function pointer (POSIX) */
    return fn;
}
