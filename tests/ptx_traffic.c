/* ptx_traffic.c — the CUDA kernels the lecture's plans launch, checked from
 * their PTX against the model, without a GPU.
 *   ptx_traffic [--variant V] [--dtype T] PTX...
 *       for every built-in variant x plan x dtype and every kernel of the
 *       plan: the CUDA kernel cuda_plan.cu launches for it
 *       (mb_kern_cuda_choose), found in the PTX by its demangled name. Its
 *       main loop is the one outermost natural loop of its control-flow graph
 *       with global loads or stores (the grid-stride loop over 16-byte
 *       vectors; the scalar tail has no loop). Each load or store there is
 *       traced, through address arithmetic, to the kernel parameter it goes
 *       through; those through a parameter the launch passes NULL (a scalar
 *       operand) do not run, those of a math table are not tensor traffic.
 *       Their bytes / (16 / element size) elements per iteration must be the
 *       model's read and write bytes per element of that kernel. Every
 *       hand-written kernel in the PTX must be launched by some plan. The
 *       evaluator is an interpreter (its traffic is its program's): its main
 *       loop must load and store 16-byte vectors.
 *       Row variants (softmax, layernorm, ...: plans with row operations)
 *       run on the row evaluator, at three shapes on the h200 (4096x1024: a
 *       row per warp, kept on chip; 1024x16384: a row per block, on chip;
 *       64x2^20: multi-pass). Its traffic is its program's too: the bytes
 *       per element of full [rows, cols] tensors the lowered program loads
 *       and stores (mb_kern_cuda_row_traffic: each read once per pass that
 *       loads it from memory, once when kept on chip) must be the model's
 *       lecture count per element at that shape (the R x C coefficient of
 *       the model's bytes, from four shapes around it, so the O(rows) and
 *       O(cols) terms cancel); [cols] weights, which every row loads again
 *       from L1 or L2, are printed beside it. row_eval_kernel<1> and <0>
 *       must then load and store 16-byte vectors in their main loop.
 *   ptx_traffic --spills LOG...
 *       `ptxas -v` logs: no function has spill stores or spill loads.
 *   ptx_traffic --flash PTX...
 *       FlashAttention's forward (kernels/attn_cuda.cu's flash_fwd_kernel):
 *       its global stores go through o and lse only, and none lies in a
 *       loop that loads k or v: the attention matrix never reaches memory.
 * Exit 0 when all agree, 1 when one disagrees (a line says which and by how
 * much), 2 for bad input (a PTX or log that cannot be read, a kernel missing).
 * It does not run kernels (tests/cuda_gpu.c does) nor count DRAM bytes (CUPTI
 * does); a PTX line scanner, not a PTX parser: it knows loads, stores,
 * address arithmetic, labels and branches, and refuses calls, atomics and
 * indirect branches in a main loop. */
#include "kernels_cuda.h"
#include "membound_model.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (the C++ ABI's abi::__cxa_demangle, C linkage) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MAX_OPND 8
#define MAX_SRC 64 /* distinct address sources (kernel parameters, symbols) per kernel */

/* One instruction or label of a kernel body. */
typedef struct ins {
    int line;                  /* in its file, 1-based */
    int is_label;
    int pred;                  /* guarded by a predicate (@%p) */
    char op[64];               /* "ld.global.nc.v4.u32"; a label's name */
    char opnd[MAX_OPND][96];
    int n_opnd;
} ins;

/* What one global load or store of a main loop moves and where its address
 * comes from. */
typedef enum acc_kind { ACC_TENSOR, ACC_TABLE, ACC_UNKNOWN } acc_kind;
typedef struct access {
    int line, is_store, bytes;
    acc_kind kind;
    int param;                 /* ACC_TENSOR: the kernel parameter it goes through */
    int inner;                 /* the innermost loop inside the main loop holding it (its
                                  header block), -1: in the main loop's own blocks */
} access;

typedef struct entry {
    const struct ptx_file *file;
    char mangled[512], name[512]; /* name: demangled, no return type or parameters */
    ins *ins;
    int n_ins;
    /* main loop, filled by analyse() */
    int analysed, bad;
    int launched;              /* some checked plan launches it */
    char why[256];
    int loop_first, loop_last; /* lines */
    int first_loop;            /* set before analyse(): the main loop is the first
                                  outermost loop with global accesses (the column
                                  evaluator's rows loop; its sums' loops follow) */
    access *acc;
    int n_acc;
} entry;

typedef struct ptx_file {
    char path[1024];
    char globals[16][128];     /* module-level .global variables (math tables) */
    int n_globals;
} ptx_file;

static entry *entries;
static int n_entries, cap_entries;
static ptx_file files[16];
static int n_files;

/* ---- reading PTX ------------------------------------------------------------ */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

/* "void hand_kernel<0, gelu_tanh_f>(hand_ptrs, long)" -> "hand_kernel<0, gelu_tanh_f>" */
static void demangle(const char *mangled, char *out, size_t size)
{
    int status = 0;
    char *d = __cxa_demangle(mangled, NULL, NULL, &status);
    const char *s = status == 0 && d ? d : mangled;
    if (!strncmp(s, "void ", 5)) s += 5;
    size_t n = 0;
    int depth = 0;
    for (; s[n]; n++) {
        if (s[n] == '<') depth++;
        else if (s[n] == '>') depth--;
        else if (s[n] == '(' && depth == 0) break;
    }
    snprintf(out, size, "%.*s", (int)n, s);
    free(d);
}

/* Splits "op a, {b, c}, [d+4]" (no ';') into ins; 0, or -1 when malformed. */
static int parse_ins(char *s, int line, ins *in)
{
    memset(in, 0, sizeof *in);
    in->line = line;
    if (*s == '@') { /* predicate: "@%p1 bra L" or "@!%p1 ..." */
        in->pred = 1;
        while (*s && !isspace((unsigned char)*s)) s++;
        s = trim(s);
    }
    size_t n = strcspn(s, " \t");
    if (n == 0 || n >= sizeof in->op) return -1;
    memcpy(in->op, s, n);
    s = trim(s + n);
    while (*s) {
        int depth = 0;
        size_t k = 0;
        while (s[k] && (depth > 0 || s[k] != ',')) {
            if (s[k] == '{' || s[k] == '[') depth++;
            else if (s[k] == '}' || s[k] == ']') depth--;
            k++;
        }
        if (in->n_opnd == MAX_OPND || k >= sizeof in->opnd[0]) return -1;
        char *o = in->opnd[in->n_opnd++];
        memcpy(o, s, k);
        o[k] = '\0';
        memmove(o, trim(o), strlen(trim(o)) + 1);
        s = s[k] ? trim(s + k + 1) : s + k;
    }
    return 0;
}

static entry *new_entry(void)
{
    if (n_entries == cap_entries) {
        int cap = cap_entries ? 2 * cap_entries : 64;
        entry *e = realloc(entries, sizeof *e * (size_t)cap);
        if (!e) return NULL;
        entries = e;
        cap_entries = cap;
    }
    entry *e = &entries[n_entries++];
    memset(e, 0, sizeof *e);
    return e;
}

/* Reads every .entry of a PTX file. 0, or -1 with a message. */
static int read_ptx(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f || n_files == (int)(sizeof files / sizeof files[0])) {
        fprintf(stderr, "ptx_traffic: error: cannot read %s\n", path);
        if (f) fclose(f);
        return -1;
    }
    ptx_file *pf = &files[n_files++];
    memset(pf, 0, sizeof *pf);
    snprintf(pf->path, sizeof pf->path, "%s", path);
    char buf[8192];
    int line = 0, depth = 0, in_body = 0, cap = 0, rc = 0;
    entry *e = NULL;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        char *c = strstr(buf, "//");
        if (c) *c = '\0';
        char *s = trim(buf);
        if (!*s) continue;
        if (!e) {
            char *en = strstr(s, ".entry ");
            if (en) {
                if (!(e = new_entry())) { rc = -1; break; }
                e->file = pf;
                en = trim(en + 7);
                size_t n = strcspn(en, "( ");
                snprintf(e->mangled, sizeof e->mangled, "%.*s", (int)n, en);
                demangle(e->mangled, e->name, sizeof e->name);
                in_body = depth = cap = 0;
            } else if (!strncmp(s, ".global ", 8) && pf->n_globals < 16) {
                /* ".global .align 4 .b8 __cudart_i2opi_f[24] = {...};" */
                char *eq = strpbrk(s, "[=;");
                if (eq) {
                    char *b = eq;
                    while (b > s && isspace((unsigned char)b[-1])) b--;
                    char *a = b;
                    while (a > s && !isspace((unsigned char)a[-1])) a--;
                    snprintf(pf->globals[pf->n_globals++], sizeof pf->globals[0], "%.*s", (int)(b - a), a);
                }
            }
            continue;
        }
        /* inside an entry: its body is the { } block after the parameters;
         * nested { } blocks (inline asm scopes) are on lines of their own */
        if (!strcmp(s, "{")) { depth++; in_body = 1; continue; }
        if (!strcmp(s, "}")) {
            if (--depth == 0 && in_body) e = NULL;
            continue;
        }
        if (!in_body || *s == '.') continue; /* parameters, directives */
        if (e->n_ins == cap) {
            cap = cap ? 2 * cap : 256;
            ins *ni = realloc(e->ins, sizeof *ni * (size_t)cap);
            if (!ni) { rc = -1; break; }
            e->ins = ni;
        }
        ins *in = &e->ins[e->n_ins];
        size_t n = strlen(s);
        if (s[n - 1] == ':') { /* label */
            memset(in, 0, sizeof *in);
            in->line = line;
            in->is_label = 1;
            snprintf(in->op, sizeof in->op, "%.*s", (int)(n - 1), s);
            e->n_ins++;
            continue;
        }
        if (s[n - 1] == ';') s[n - 1] = '\0';
        if (parse_ins(s, line, in) != 0) {
            fprintf(stderr, "ptx_traffic: error: %s:%d: cannot read instruction\n", path, line);
            rc = -1;
            break;
        }
        e->n_ins++;
    }
    fclose(f);
    if (rc == 0 && e) {
        fprintf(stderr, "ptx_traffic: error: %s: kernel %s does not end\n", path, e->mangled);
        rc = -1;
    }
    return rc;
}

static entry *find_entry(const char *name)
{
    for (int i = 0; i < n_entries; i++)
        if (!strcmp(entries[i].name, name)) return &entries[i];
    return NULL;
}

/* ---- address sources -------------------------------------------------------- */

/* Registers are tagged with the sources their value derives from by address
 * arithmetic (mov, cvta, add, sub, mad): a kernel parameter loaded with
 * ld.param, or a symbol's address. Index arithmetic (shl, mul, cvt) does not
 * carry a tag, so base + (i << 4) keeps the base's tag alone. Flow-insensitive
 * (PTX registers are nearly single-assignment), iterated to a fixed point for
 * loop-carried pointers. */
typedef struct reg_tag {
    char name[24];
    uint64_t src;
} reg_tag;

typedef struct tags {
    reg_tag *t;
    size_t cap, used;
    uint64_t full;             /* where registers past cap/2 go; overflow says it happened */
    int overflow;
    char src[MAX_SRC][128];    /* "param 3" or "sym __cudart_i2opi_f" */
    int n_src;
} tags;

static uint64_t *tag_of(tags *T, const char *reg)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = reg; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (size_t i = h & (T->cap - 1);; i = (i + 1) & (T->cap - 1)) {
        if (!T->t[i].name[0]) {
            if (2 * ++T->used > T->cap) {
                T->overflow = 1;
                return &T->full;
            }
            snprintf(T->t[i].name, sizeof T->t[i].name, "%s", reg);
            return &T->t[i].src;
        }
        if (!strcmp(T->t[i].name, reg)) return &T->t[i].src;
    }
}

static uint64_t source_bit(tags *T, const char *what)
{
    for (int i = 0; i < T->n_src; i++)
        if (!strcmp(T->src[i], what)) return 1ull << i;
    if (T->n_src == MAX_SRC) return 0;
    snprintf(T->src[T->n_src], sizeof T->src[0], "%s", what);
    return 1ull << T->n_src++;
}

/* The register or symbol inside "[%rd4+16]" or "[name_param_0+48]". */
static void address_base(const char *opnd, char *out, size_t size)
{
    const char *s = opnd[0] == '[' ? opnd + 1 : opnd;
    size_t n = strcspn(s, "+]");
    snprintf(out, size, "%.*s", (int)n, s);
}

/* Tag of an operand: a register's tag, a symbol's own source, 0 otherwise. */
static uint64_t operand_tag(tags *T, const char *o)
{
    if (o[0] == '%') return *tag_of(T, o);
    if (isalpha((unsigned char)o[0]) || o[0] == '_' || o[0] == '$') {
        char what[160];
        const char *pm = strstr(o, "_param_");
        if (pm) snprintf(what, sizeof what, "param %d", atoi(pm + 7)); /* a parameter's address */
        else snprintf(what, sizeof what, "sym %s", o);
        return source_bit(T, what);
    }
    return 0; /* a number */
}

static int op_is(const char *op, const char *base)
{
    size_t n = strlen(base);
    return !strncmp(op, base, n) && (op[n] == '.' || op[n] == '\0');
}

static int tag_registers(const entry *e, tags *T)
{
    T->cap = 1;
    while (T->cap < 8 * (size_t)e->n_ins + 64) T->cap <<= 1; /* about one register per instruction */
    T->t = calloc(T->cap, sizeof *T->t);
    if (!T->t) return -1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < e->n_ins; i++) {
            const ins *in = &e->ins[i];
            if (in->is_label || in->n_opnd < 2 || in->opnd[0][0] != '%') continue;
            uint64_t add = 0;
            if (op_is(in->op, "ld") && strstr(in->op, ".param")) {
                char base[128];
                address_base(in->opnd[1], base, sizeof base);
                const char *pm = strstr(base, "_param_");
                if (pm) { /* the value of parameter K */
                    char what[32];
                    snprintf(what, sizeof what, "param %d", atoi(pm + 7));
                    add = source_bit(T, what);
                }
            } else if (op_is(in->op, "mov") || op_is(in->op, "cvta") || op_is(in->op, "add") ||
                       op_is(in->op, "sub") || op_is(in->op, "mad")) {
                for (int a = 1; a < in->n_opnd; a++) add |= operand_tag(T, in->opnd[a]);
            }
            uint64_t *d = tag_of(T, in->opnd[0]);
            if ((*d | add) != *d) {
                *d |= add;
                changed = 1;
            }
        }
    }
    return 0;
}

/* ---- loads and stores ---------------------------------------------------------- */

/* Bytes one memory instruction moves: vector lanes x type size
 * ("ld.global.nc.v4.u32" 16, "st.global.b16" 2); 0 if no type is named. */
static int access_bytes(const char *op)
{
    int lanes = 1, bits = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", op);
    for (char *tok = strtok(buf, "."); tok; tok = strtok(NULL, ".")) {
        if (tok[0] == 'v' && isdigit((unsigned char)tok[1])) lanes = atoi(tok + 1);
        else if (!strcmp(tok, "bf16") || !strcmp(tok, "f16")) bits = 16;
        else if (!strcmp(tok, "bf16x2") || !strcmp(tok, "f16x2")) bits = 32;
        else if (strchr("bsuf", tok[0]) && isdigit((unsigned char)tok[1])) bits = atoi(tok + 1);
    }
    return lanes * bits / 8;
}

/* 1 for a load or store of global memory: ld/st with .global, or with no
 * state space (generic addressing can reach global memory). */
static int is_global_access(const char *op, int *is_store)
{
    if (!op_is(op, "ld") && !op_is(op, "st")) return 0;
    *is_store = op[0] == 's';
    static const char *const other[] = {".local", ".shared", ".param", ".const", ".tex"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (strstr(op, other[i])) return 0;
    return 1;
}

static int is_module_global(const ptx_file *pf, const char *sym)
{
    for (int i = 0; i < pf->n_globals; i++)
        if (!strcmp(pf->globals[i], sym)) return 1;
    return 0;
}

/* ---- the main loop -------------------------------------------------------------- */

/* Basic blocks of a kernel body and their successors (fall-through, branch
 * target; -1 for none). The compiler lays a loop's blocks out in any order
 * (cold paths of pow and sin before the loop header), so loops are found on
 * this graph, not in the text. */
typedef struct cfg {
    int n;
    int *first, *last;         /* instruction indices */
    int (*succ)[2];
} cfg;

static void cfg_free(cfg *G)
{
    free(G->first);
    free(G->last);
    free(G->succ);
}

static int block_of_label(const entry *e, const cfg *G, const char *label)
{
    for (int b = 0; b < G->n; b++)
        if (e->ins[G->first[b]].is_label && !strcmp(e->ins[G->first[b]].op, label)) return b;
    return -1;
}

static int is_terminator(const ins *in)
{
    return !in->is_label && (op_is(in->op, "bra") || op_is(in->op, "ret") || op_is(in->op, "exit"));
}

static int cfg_build(const entry *e, cfg *G, char *why, size_t whysz)
{
    memset(G, 0, sizeof *G);
    size_t cap = (size_t)e->n_ins + 1;
    G->first = malloc(cap * sizeof *G->first);
    G->last = malloc(cap * sizeof *G->last);
    G->succ = malloc(cap * sizeof *G->succ);
    if (!G->first || !G->last || !G->succ) {
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    for (int i = 0; i < e->n_ins; i++) {
        const ins *in = &e->ins[i];
        if (!in->is_label && op_is(in->op, "brx")) {
            snprintf(why, whysz, "line %d: indirect branch (not followed)", in->line);
            return -1;
        }
        if (i == 0 || in->is_label || is_terminator(&e->ins[i - 1])) G->first[G->n++] = i;
        G->last[G->n - 1] = i;
    }
    for (int b = 0; b < G->n; b++) {
        const ins *t = &e->ins[G->last[b]];
        int falls = !(is_terminator(t) && !t->pred);
        G->succ[b][0] = falls && b + 1 < G->n ? b + 1 : -1;
        G->succ[b][1] = -1;
        if (!t->is_label && op_is(t->op, "bra")) {
            if (t->n_opnd < 1 || (G->succ[b][1] = block_of_label(e, G, t->opnd[t->n_opnd - 1])) < 0) {
                snprintf(why, whysz, "line %d: branch to an unknown label", t->line);
                return -1;
            }
        }
    }
    return 0;
}

#define BIT(set, i) ((set)[(i) >> 6] >> ((i) & 63) & 1)
#define SETBIT(set, i) ((set)[(i) >> 6] |= 1ull << ((i) & 63))

/* Natural loops (Aho et al.: a back edge u -> h where h dominates u; the
 * body is h and every block that reaches u without passing h), per header
 * (back edges to one header merged). loops[h] is the body of the loop headed
 * by h, or all zero. words: uint64 per block set. */
static int find_loops(const cfg *G, int words, uint64_t *loops)
{
    const int n = G->n;
    uint64_t *dom = malloc(sizeof *dom * (size_t)n * (size_t)words);
    uint64_t *tmp = malloc(sizeof *tmp * (size_t)words);
    int *stack = malloc(sizeof *stack * (size_t)n);
    unsigned char *reach = calloc((size_t)n, 1);
    if (!dom || !tmp || !stack || !reach) {
        free(dom), free(tmp), free(stack), free(reach);
        return -1;
    }
    int sp = 0;
    stack[sp++] = 0;
    reach[0] = 1;
    while (sp) {
        int b = stack[--sp];
        for (int s = 0; s < 2; s++) {
            int c = G->succ[b][s];
            if (c >= 0 && !reach[c]) reach[c] = 1, stack[sp++] = c;
        }
    }
    for (int b = 0; b < n; b++) {
        uint64_t *d = dom + (size_t)b * words;
        memset(d, b ? 0xff : 0, sizeof *d * (size_t)words);
        if (!b) SETBIT(d, 0);
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int b = 1; b < n; b++) {
            if (!reach[b]) continue;
            memset(tmp, 0xff, sizeof *tmp * (size_t)words);
            for (int p = 0; p < n; p++)
                if (reach[p] && (G->succ[p][0] == b || G->succ[p][1] == b))
                    for (int w = 0; w < words; w++) tmp[w] &= dom[(size_t)p * words + w];
            SETBIT(tmp, b);
            uint64_t *d = dom + (size_t)b * words;
            if (memcmp(tmp, d, sizeof *d * (size_t)words)) {
                memcpy(d, tmp, sizeof *d * (size_t)words);
                changed = 1;
            }
        }
    }
    memset(loops, 0, sizeof *loops * (size_t)n * (size_t)words);
    for (int u = 0; u < n; u++) {
        if (!reach[u]) continue;
        for (int s = 0; s < 2; s++) {
            int h = G->succ[u][s];
            if (h < 0 || !BIT(dom + (size_t)u * words, h)) continue; /* not a back edge */
            uint64_t *body = loops + (size_t)h * words;
            SETBIT(body, h);
            sp = 0;
            if (!BIT(body, u)) SETBIT(body, u), stack[sp++] = u;
            while (sp) {
                int b = stack[--sp];
                for (int p = 0; p < n; p++)
                    if (reach[p] && (G->succ[p][0] == b || G->succ[p][1] == b) && !BIT(body, p))
                        SETBIT(body, p), stack[sp++] = p;
            }
        }
    }
    free(dom), free(tmp), free(stack), free(reach);
    return 0;
}

/* Kind of a load or store: through one kernel parameter, of a math table
 * (a module-level .global only), or neither. */
static acc_kind classify(const entry *e, tags *T, const ins *in, int is_store, int *param)
{
    char base[128];
    address_base(in->opnd[is_store ? 0 : 1], base, sizeof base);
    uint64_t src = operand_tag(T, base);
    int n_param = 0, n_table = 0, n_other = 0;
    for (int b = 0; b < T->n_src; b++) {
        if (!(src >> b & 1)) continue;
        if (!strncmp(T->src[b], "param ", 6)) {
            n_param++;
            *param = atoi(T->src[b] + 6);
        } else if (!strncmp(T->src[b], "sym ", 4) && is_module_global(e->file, T->src[b] + 4)) {
            n_table++;
        } else {
            n_other++;
        }
    }
    return n_param == 1 && !n_table && !n_other ? ACC_TENSOR
           : n_table && !n_param && !n_other    ? ACC_TABLE
                                                : ACC_UNKNOWN;
}

/* Finds e's main loop and its loads and stores. The main loop: the one
 * outermost loop holding a global load or store that is not of a math table
 * (sin's and cos's argument reduction reads __cudart_i2opi_f, 24 B, from
 * global memory on |x| > 105615); a scalar tail has no loop. Sets e->bad and
 * e->why when there is none, or more than one, or the loop calls a function
 * or does atomics (traffic this scanner does not count). */
static void analyse(entry *e)
{
    if (e->analysed) return;
    e->analysed = 1;
    tags T;
    cfg G;
    memset(&T, 0, sizeof T);
    uint64_t *loops = NULL;
    e->bad = 1;
    if (tag_registers(e, &T) != 0 || T.overflow) {
        snprintf(e->why, sizeof e->why, "%s", T.t ? "more registers than the scanner holds" : "out of memory");
        goto out;
    }
    if (cfg_build(e, &G, e->why, sizeof e->why) != 0) goto out_cfg;
    const int words = (G.n + 63) / 64;
    loops = malloc(sizeof *loops * (size_t)G.n * (size_t)words);
    if (!loops || find_loops(&G, words, loops) != 0) {
        snprintf(e->why, sizeof e->why, "out of memory");
        goto out_cfg;
    }
    int main_h = -1, n_main = 0;
    for (int h = 0; h < G.n; h++) {
        const uint64_t *body = loops + (size_t)h * words;
        if (!BIT(body, h)) continue;
        int outer = 1;
        for (int m = 0; m < G.n && outer; m++)
            if (m != h && BIT(loops + (size_t)m * words, h)) outer = 0;
        int tensor = 0, param;
        for (int b = 0; outer && b < G.n && !tensor; b++) {
            if (!BIT(body, b)) continue;
            for (int i = G.first[b]; i <= G.last[b] && !tensor; i++) {
                int st;
                if (!e->ins[i].is_label && is_global_access(e->ins[i].op, &st))
                    tensor = classify(e, &T, &e->ins[i], st, &param) != ACC_TABLE;
            }
        }
        if (tensor && (!e->first_loop || main_h < 0)) main_h = h;
        n_main += tensor;
    }
    if (e->first_loop && n_main > 0) n_main = 1;
    if (n_main != 1) {
        snprintf(e->why, sizeof e->why, "%d outermost loops with global loads or stores (expected one)", n_main);
        goto out_cfg;
    }
    const uint64_t *body = loops + (size_t)main_h * words;
    e->acc = calloc((size_t)e->n_ins + 1, sizeof *e->acc);
    if (!e->acc) {
        snprintf(e->why, sizeof e->why, "out of memory");
        goto out_cfg;
    }
    e->loop_first = e->loop_last = e->ins[G.first[main_h]].line;
    for (int b = 0; b < G.n; b++) {
        if (!BIT(body, b)) continue;
        /* the smallest loop nested in the main loop that holds block b */
        int inner = -1, inner_n = G.n + 1;
        for (int h = 0; h < G.n; h++) {
            const uint64_t *lh = loops + (size_t)h * words;
            if (h == main_h || !BIT(lh, h) || !BIT(lh, b) || !BIT(body, h)) continue;
            int cnt = 0;
            for (int q = 0; q < G.n; q++) cnt += (int)BIT(lh, q);
            if (cnt < inner_n) inner = h, inner_n = cnt;
        }
        for (int i = G.first[b]; i <= G.last[b]; i++) {
            const ins *in = &e->ins[i];
            int st = 0;
            if (in->line < e->loop_first) e->loop_first = in->line;
            if (in->line > e->loop_last) e->loop_last = in->line;
            if (in->is_label) continue;
            if (op_is(in->op, "call") ||
                ((op_is(in->op, "atom") || op_is(in->op, "red")) && !strstr(in->op, ".shared"))) {
                snprintf(e->why, sizeof e->why, "line %d: %s in the main loop (its traffic is not counted)",
                         in->line, in->op);
                goto out_cfg;
            }
            if (!is_global_access(in->op, &st)) continue;
            access *a = &e->acc[e->n_acc++];
            a->line = in->line;
            a->is_store = st;
            a->bytes = access_bytes(in->op);
            a->kind = classify(e, &T, in, st, &a->param);
            a->inner = inner;
        }
    }
    e->bad = 0;
out_cfg:
    cfg_free(&G);
out:
    free(loops);
    free(T.t);
}

/* ---- traffic against the model ------------------------------------------------ */

typedef struct loop_bytes {
    int64_t ld_bytes, st_bytes;
    int n_ld, n_st, n_skipped_null, n_table;
    int unknown_line;            /* first load or store of no single parameter, or 0 */
} loop_bytes;

static loop_bytes count_loop(const entry *e, unsigned null_params)
{
    loop_bytes lb;
    memset(&lb, 0, sizeof lb);
    for (int i = 0; i < e->n_acc; i++) {
        const access *a = &e->acc[i];
        if (a->kind == ACC_TABLE) { lb.n_table++; continue; }
        if (a->kind == ACC_UNKNOWN) {
            if (!lb.unknown_line) lb.unknown_line = a->line;
            continue;
        }
        if (a->param < 32 && (null_params >> a->param & 1)) { lb.n_skipped_null++; continue; }
        if (a->is_store) lb.st_bytes += a->bytes, lb.n_st++;
        else lb.ld_bytes += a->bytes, lb.n_ld++;
    }
    return lb;
}

/* The evaluator interprets a program, so its bytes are its program's: its
 * main loop must hold 16-byte loads and stores (f32 groups of 4; 16-bit
 * storage moves groups of 4 in 8 bytes, and the last partial group element
 * by element). Prints the widths it found. 0 or 1. */
static int check_eval(entry *e)
{
    analyse(e);
    if (e->bad) {
        printf("ptx_traffic: FAIL %s: %s (%s)\n", e->name, e->why, e->file->path);
        return 1;
    }
    int ld[17] = {0}, st[17] = {0}, wide = 0;
    for (int i = 0; i < e->n_acc; i++) {
        const access *a = &e->acc[i];
        if (a->kind == ACC_TABLE) continue;
        if (a->bytes < 1 || a->bytes > 16) { wide++; continue; }
        (a->is_store ? st : ld)[a->bytes]++;
    }
    printf("ptx_traffic: %s (interpreter) main loop, lines %d-%d of %s:\n  loads ", e->name,
           e->loop_first, e->loop_last, e->file->path);
    for (int b = 16; b >= 1; b--)
        if (ld[b]) printf(" %d B x%d", b, ld[b]);
    printf("\n  stores");
    for (int b = 16; b >= 1; b--)
        if (st[b]) printf(" %d B x%d", b, st[b]);
    printf("\n");
    if (!ld[16] || !st[16] || wide) {
        printf("ptx_traffic: FAIL %s: %s\n", e->name,
               wide ? "a load or store of no known width" : "no 16-byte global load or store in its main loop");
        return 1;
    }
    printf("ptx_traffic: ok %s: 16-byte loads and stores\n", e->name);
    return 0;
}

typedef struct opts {
    const char *variant;       /* NULL: every built-in */
    int dtype;                 /* -1: every dtype */
    int plan;                  /* row variants: -1 every plan */
    mb_shape shape;            /* row variants: rank 0 the three shapes */
} opts;

/* Checks every kernel of plan p; sets *eval_used when one runs on the
 * evaluator. Returns the number that disagree, or -1 for an error. */
static int check_plan(const mb_plan *p, const mb_device *dev, int *eval_used)
{
    const int64_t n = (int64_t)1 << 20; /* any n: the lecture's count is n x bytes per element */
    mb_estimate est;
    mb_err err;
    if (mb_estimate_plan(p, n, dev, &est, &err) != MB_OK) {
        fprintf(stderr, "ptx_traffic: error: %s: %s\n", p->g->name, err.msg);
        return -1;
    }
    int bad = 0;
    for (int k = 0; k < p->n_kernels && bad >= 0; k++) {
        const mb_kernel *K = &p->kernels[k];
        mb_kern_cuda_choice c;
        if (mb_kern_cuda_choose(p, k, 0, &c, &err) != MB_OK) {
            fprintf(stderr, "ptx_traffic: error: %s kernel %s: %s\n", p->g->name, K->name, err.msg);
            bad = -1;
            break;
        }
        const int64_t r_pe = est.per_kernel[k].read_bytes / n, w_pe = est.per_kernel[k].write_bytes / n;
        if (est.per_kernel[k].read_bytes % n || est.per_kernel[k].write_bytes % n) {
            fprintf(stderr, "ptx_traffic: error: %s kernel %s: the model's bytes are not a multiple of n\n",
                    p->g->name, K->name);
            bad = -1;
            break;
        }
        printf("%-15s %-9s %-5s %-14s %-40s %3lld+%-3lld=%3lld", p->g->name, mb_plan_name(p->kind),
               mb_dtype_name(c.dt), K->name, c.symbol, (long long)r_pe, (long long)w_pe,
               (long long)(r_pe + w_pe));
        if (c.impl == MB_KERN_CUDA_EVAL) {
            printf("   interpreter: its widths are checked below\n");
            *eval_used = 1;
            continue;
        }
        entry *e = find_entry(c.symbol);
        if (!e) {
            printf("\n");
            fprintf(stderr, "ptx_traffic: error: kernel %s (%s %s %s %s) is in none of the PTX files\n",
                    c.symbol, p->g->name, mb_plan_name(p->kind), mb_dtype_name(c.dt), K->name);
            bad = -1;
            break;
        }
        e->launched = 1;
        analyse(e);
        if (e->bad) {
            printf("\nptx_traffic: FAIL %s: %s (%s)\n", c.symbol, e->why, e->file->path);
            bad++;
            continue;
        }
        /* elements per main-loop iteration: one 16-byte vector of dt */
        const int64_t per_iter = 16 / (int64_t)mb_dtype_bytes(c.dt);
        loop_bytes lb = count_loop(e, c.null_params);
        printf("   %5.2f+%-5.2f=%5.2f", (double)lb.ld_bytes / (double)per_iter,
               (double)lb.st_bytes / (double)per_iter, (double)(lb.ld_bytes + lb.st_bytes) / (double)per_iter);
        printf("   %d ld %d st", lb.n_ld, lb.n_st);
        if (lb.n_skipped_null) printf(", %d of a NULL operand", lb.n_skipped_null);
        if (lb.n_table) printf(", %d of a math table", lb.n_table);
        if (lb.unknown_line) {
            printf("\nptx_traffic: FAIL %s: the load or store at %s:%d goes through no single kernel parameter\n",
                   c.symbol, e->file->path, lb.unknown_line);
            bad++;
        } else if (lb.ld_bytes != r_pe * per_iter || lb.st_bytes != w_pe * per_iter) {
            printf("\nptx_traffic: MISMATCH %s (%s %s %s kernel %s): model %lld+%lld B/elem, PTX %.2f+%.2f "
                   "B/elem (reads+writes; main loop, lines %d-%d of %s)\n",
                   c.symbol, p->g->name, mb_plan_name(p->kind), mb_dtype_name(c.dt), K->name, (long long)r_pe,
                   (long long)w_pe, (double)lb.ld_bytes / (double)per_iter, (double)lb.st_bytes / (double)per_iter,
                   e->loop_first, e->loop_last, e->file->path);
            bad++;
        } else {
            printf("   ok\n");
        }
    }
    mb_estimate_free(&est);
    return bad;
}

/* The model's lecture-count bytes per element of plan p's kernel k at
 * shape s: the rows x cols coefficient of its read and write bytes, from s
 * and the shapes with twice the rows, the columns, and both (the passes do
 * not change between them at the shapes used here). -1 on error. */
static int model_row_pe(const mb_plan *p, int k, mb_shape s, const mb_device *dev, double *r_pe, double *w_pe)
{
    double rd[4], wr[4];
    for (int i = 0; i < 4; i++) {
        mb_shape t = {2, s.rows * (i & 1 ? 2 : 1), s.cols * (i & 2 ? 2 : 1), 0};
        mb_estimate est;
        mb_err err;
        if (mb_estimate_plan_shape(p, t, dev, &est, &err) != MB_OK) {
            fprintf(stderr, "ptx_traffic: error: %s: %s\n", p->g->name, err.msg);
            return -1;
        }
        rd[i] = (double)est.per_kernel[k].read_bytes;
        wr[i] = (double)est.per_kernel[k].write_bytes;
        mb_estimate_free(&est);
    }
    const double rc = (double)s.rows * (double)s.cols;
    *r_pe = (rd[3] - rd[1] - rd[2] + rd[0]) / rc;
    *w_pe = (wr[3] - wr[1] - wr[2] + wr[0]) / rc;
    return 0;
}

/* Checks every kernel of a plan with row operations at shape s on dev: the
 * row or column program's bytes per element against the model's. Marks the
 * evaluators used: used[warp] the row evaluator's forms, used[2] the column
 * evaluator. Returns the number that disagree, or -1. */
static int check_row_plan(const mb_plan *p, mb_shape s, const mb_device *dev, int used[3])
{
    int bad = 0;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *K = &p->kernels[k];
        mb_kern_cuda_choice c;
        mb_kern_cuda_row_bytes b;
        mb_err err;
        double r_pe = 0, w_pe = 0;
        if (mb_kern_cuda_choose_shape(p, k, s, dev, 0, &c, &err) != MB_OK ||
            mb_kern_cuda_row_traffic(p, k, s, dev, &b, &err) != MB_OK) {
            fprintf(stderr, "ptx_traffic: error: %s kernel %s: %s\n", p->g->name, K->name, err.msg);
            return -1;
        }
        if (model_row_pe(p, k, s, dev, &r_pe, &w_pe) != 0) return -1;
        int from_ptx = 0;
        if (c.impl == MB_KERN_CUDA_ROW_OP) { /* hand-written: its bytes from its PTX */
            entry *e = find_entry(c.symbol);
            if (!e) {
                fprintf(stderr, "ptx_traffic: error: kernel %s (%s %s) is in none of the PTX files\n", c.symbol,
                        p->g->name, K->name);
                return -1;
            }
            e->launched = 1;
            analyse(e);
            if (e->bad) {
                printf("ptx_traffic: FAIL %s: %s (%s)\n", c.symbol, e->why, e->file->path);
                bad++;
                continue;
            }
            /* x is parameter 0, w 1, y 2; each access of a column loop moves
             * one 16-byte vector of 16 / element size elements an iteration */
            const double per_iter = 16.0 / (double)mb_dtype_bytes(c.dt);
            b.read_pe = b.write_pe = b.col_pe = 0;
            for (int i = 0; i < e->n_acc; i++) {
                const access *a = &e->acc[i];
                if (a->kind == ACC_TABLE || a->inner < 0) continue; /* per row: statistics */
                if (a->kind == ACC_UNKNOWN) {
                    printf("ptx_traffic: FAIL %s: the load or store at %s:%d goes through no single parameter\n",
                           c.symbol, e->file->path, a->line);
                    bad++;
                    continue;
                }
                double pe = (double)a->bytes / per_iter;
                if (a->param == 1) b.col_pe += pe;
                else if (a->is_store) b.write_pe += pe;
                else b.read_pe += pe;
            }
            from_ptx = 1;
        }
        used[c.impl == MB_KERN_CUDA_COL ? 2 : c.warp ? 1 : 0] |= !from_ptx;
        char shape[64], passes[32];
        snprintf(shape, sizeof shape, "%lldx%lld", (long long)s.rows, (long long)s.cols);
        snprintf(passes, sizeof passes, "%d%s", c.onepass ? 1 : c.passes, c.onepass ? " chip" : "");
        printf("%-11s %-7s %-5s %-12s %-13s %-34s %-7s %5.2f+%-5.2f   %5.2f+%-5.2f", p->g->name,
               mb_plan_name(p->kind), mb_dtype_name(c.dt), shape, K->name, c.symbol, passes, r_pe, w_pe, b.read_pe,
               b.write_pe);
        if (b.col_pe > 0) printf(" (+%.0f [cols])", b.col_pe);
        printf(" %s", from_ptx ? "PTX" : "program");
        if (fabs(b.read_pe - r_pe) > 1e-6 || fabs(b.write_pe - w_pe) > 1e-6) {
            printf("\nptx_traffic: MISMATCH %s (%s %s %s %s kernel %s): model %.2f+%.2f B/elem, %s %.2f+%.2f\n",
                   c.symbol, p->g->name, mb_plan_name(p->kind), mb_dtype_name(c.dt), shape, K->name, r_pe, w_pe,
                   from_ptx ? "PTX (column loops)" : "program", b.read_pe, b.write_pe);
            bad++;
        } else {
            printf("   ok\n");
        }
    }
    return bad;
}

/* The library row ops no built-in variant spells, so that every
 * hand-written row kernel is reached by some plan. */
static const char *const row_texts[] = {
    "name log_softmax_op\ninput x [rows, cols]\ny = log_softmax(x, -1)\noutput y\n",
    "name layer_norm_op\ninput x [rows, cols]\ninput w [cols]\ny = layer_norm(x, w)\noutput y\n",
    "name rms_norm_op\ninput x [rows, cols]\ninput w [cols]\ny = rms_norm(x, w)\noutput y\n",
};

/* Every row variant x plan x dtype at the three shapes. */
static int run_rows(const opts *o, char names[][MB_NAME_MAX], int nv, int *checked, int used[3])
{
    mb_device dev;
    mb_err err;
    if (mb_device_find("h200", &dev, &err) != MB_OK) {
        fprintf(stderr, "ptx_traffic: error: %s\n", err.msg);
        return -1;
    }
    const mb_shape shapes[] = {{2, 4096, 1024, 0}, {2, 1024, 16384, 0}, {2, 64, (int64_t)1 << 20, 0}};
    int bad = 0, header = 0;
    const int nt = (int)(sizeof row_texts / sizeof row_texts[0]);
    for (int v = 0; v < nv + nt && bad >= 0; v++) {
        if (o->variant && (v >= nv || strcmp(o->variant, names[v]))) continue;
        for (int dt = 0; dt < MB_DTYPE_COUNT && bad >= 0; dt++) {
            if (o->dtype >= 0 && dt != o->dtype) continue;
            mb_graph *g = NULL;
            if (v < nv ? mb_variant_load(names[v], (mb_dtype)dt, &g, &err)
                       : mb_parse_variant(row_texts[v - nv], "<ptx_traffic>", (mb_dtype)dt, &g, &err)) {
                fprintf(stderr, "ptx_traffic: error: %s\n", err.msg);
                return -1;
            }
            for (int pk = 0; pk < MB_PLAN_COUNT && bad >= 0 && g->has_row_ops; pk++) {
                if (!mb_plan_supported(g, (mb_plan_kind)pk) || (o->plan >= 0 && pk != o->plan)) continue;
                mb_plan *p = NULL;
                if (mb_plan_build(g, (mb_plan_kind)pk, &p, &err) != MB_OK) {
                    fprintf(stderr, "ptx_traffic: error: %s: %s\n", names[v], err.msg);
                    bad = -1;
                    break;
                }
                if (!header++)
                    printf("\n%-11s %-7s %-5s %-12s %-13s %-34s %-7s %-13s   %s\n", "variant", "plan", "dtype", "shape",
                           "kernel", "CUDA kernel", "passes", "model B/elem", "kernel B/elem (h200): from");
                for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && bad >= 0; si++) {
                    if (o->shape.rank == 2 && si > 0) break; /* --shape: that one only */
                    int b = check_row_plan(p, o->shape.rank == 2 ? o->shape : shapes[si], &dev, used);
                    bad = b < 0 ? -1 : bad + b;
                }
                (*checked)++;
                mb_plan_free(p);
            }
            mb_graph_free(g);
        }
    }
    return bad;
}

static int run_traffic(const opts *o)
{
    char names[32][MB_NAME_MAX];
    int nv = mb_variant_list(names, 32);
    mb_device dev;
    mb_err err;
    if (nv < 1 || nv > 32 || mb_device_find("h100-sxm", &dev, &err) != MB_OK) {
        fprintf(stderr, "ptx_traffic: error: no built-in variants or device\n");
        return 2;
    }
    printf("%-15s %-9s %-5s %-14s %-40s %-13s   %-17s\n", "variant", "plan", "dtype", "kernel", "CUDA kernel",
           "model B/elem", "PTX B/elem (main loop)");
    int bad = 0, checked = 0, eval_used = 0;
    for (int v = 0; v < nv && bad >= 0; v++) {
        if (o->variant && strcmp(o->variant, names[v])) continue;
        for (int dt = 0; dt < MB_DTYPE_COUNT && bad >= 0; dt++) {
            if (o->dtype >= 0 && dt != o->dtype) continue;
            mb_graph *g = NULL;
            if (mb_variant_load(names[v], (mb_dtype)dt, &g, &err) != MB_OK) {
                fprintf(stderr, "ptx_traffic: error: %s\n", err.msg);
                return 2;
            }
            for (int pk = 0; pk < MB_PLAN_COUNT && bad >= 0 && !g->has_row_ops; pk++) { /* rows: run_rows */
                if (!mb_plan_supported(g, (mb_plan_kind)pk)) continue;
                mb_plan *p = NULL;
                if (mb_plan_build(g, (mb_plan_kind)pk, &p, &err) != MB_OK) {
                    fprintf(stderr, "ptx_traffic: error: %s %s: %s\n", names[v], mb_plan_name((mb_plan_kind)pk),
                            err.msg);
                    bad = -1;
                    break;
                }
                int b = check_plan(p, &dev, &eval_used);
                bad = b < 0 ? -1 : bad + b;
                checked++;
                mb_plan_free(p);
            }
            mb_graph_free(g);
        }
    }
    int row_used[3] = {0, 0, 0};
    if (bad >= 0) {
        int b = run_rows(o, names, nv, &checked, row_used);
        bad = b < 0 ? -1 : bad + b;
    }
    if (bad < 0) return 2;
    if (checked == 0) {
        fprintf(stderr, "ptx_traffic: error: no plan matched the options\n");
        return 2;
    }
    /* every hand-written kernel is for some built-in variant's plan: one no
     * plan reaches means cuda_plan.cu's matching no longer finds it (its
     * kernels would run on the evaluator, and this check would not see them) */
    for (int i = 0; !o->variant && o->dtype < 0 && o->plan < 0 && o->shape.rank != 2 && i < n_entries; i++) {
        const char *nm = entries[i].name;
        if ((!strncmp(nm, "hand_kernel<", 12) || !strncmp(nm, "copy_kernel<", 12) ||
             !strncmp(nm, "row_op_kernel<", 14)) && !entries[i].launched) {
            printf("ptx_traffic: FAIL %s: hand-written, but no plan of the built-in variants launches it\n", nm);
            bad++;
        }
    }
    entry *ev = find_entry(MB_KERN_CUDA_EVAL_SYMBOL);
    if (eval_used && !ev) {
        fprintf(stderr, "ptx_traffic: error: the plans launch %s, which is in none of the PTX files\n",
                MB_KERN_CUDA_EVAL_SYMBOL);
        return 2;
    }
    if (ev) bad += check_eval(ev);
    for (int w = 0; w < 3; w++) {
        if (!row_used[w]) continue;
        char sym[64];
        if (w == 2) snprintf(sym, sizeof sym, "col_eval_kernel");
        else snprintf(sym, sizeof sym, "row_eval_kernel<%d>", w);
        entry *re = find_entry(sym);
        if (!re) {
            fprintf(stderr, "ptx_traffic: error: the row plans launch %s, which is in none of the PTX files\n", sym);
            return 2;
        }
        re->first_loop = w == 2;
        bad += check_eval(re);
    }
    printf("ptx_traffic: %d plans checked, %d kernel%s disagree\n", checked, bad, bad == 1 ? "" : "s");
    return bad ? 1 : 0;
}

/* ---- spills ------------------------------------------------------------------- */

/* Reads `ptxas -v` logs: per function "N bytes stack frame, N bytes spill
 * stores, N bytes spill loads" after "Function properties for NAME". */
static int run_spills(char **logs, int n_logs)
{
    int bad = 0;
    for (int l = 0; l < n_logs; l++) {
        FILE *f = fopen(logs[l], "r");
        if (!f) {
            fprintf(stderr, "ptx_traffic: error: cannot read %s\n", logs[l]);
            return 2;
        }
        char buf[4096], fn[512] = "", worst_fn[512] = "";
        int n_fn = 0, worst_regs = -1, spilled = 0;
        while (fgets(buf, sizeof buf, f)) {
            const char *s;
            long stack, sst, sld;
            int regs;
            if ((s = strstr(buf, "Function properties for "))) {
                snprintf(fn, sizeof fn, "%s", s + 24);
                fn[strcspn(fn, "\r\n")] = '\0';
            } else if (sscanf(buf, " %ld bytes stack frame, %ld bytes spill stores, %ld bytes spill loads", &stack,
                              &sst, &sld) == 3) {
                n_fn++;
                if (sst || sld) {
                    char name[512];
                    demangle(fn, name, sizeof name);
                    printf("ptx_traffic: SPILL %s: %ld bytes spill stores, %ld bytes spill loads (%s)\n", name,
                           sst, sld, logs[l]);
                    spilled++;
                }
            } else if ((s = strstr(buf, "Used ")) && sscanf(s, "Used %d registers", &regs) == 1 &&
                       regs > worst_regs) {
                worst_regs = regs;
                demangle(fn, worst_fn, sizeof worst_fn);
            }
        }
        fclose(f);
        if (n_fn == 0) {
            fprintf(stderr, "ptx_traffic: error: %s: no function properties (not a `ptxas -v` log?)\n", logs[l]);
            return 2;
        }
        printf("ptx_traffic: %s: %d functions, %d spill; most registers %d (%s)\n", logs[l], n_fn, spilled,
               worst_regs, worst_fn);
        bad += spilled;
    }
    return bad ? 1 : 0;
}

/* ---- FlashAttention's forward: the attention matrix never reaches memory ---- */

/* flash_fwd_kernel(q, k, v, o, lse, ...) (kernels/attn_cuda.cu): every
 * global store goes through o or lse (parameters 3 and 4), and no loop that
 * loads k or v (parameters 1 and 2: the loop over key tiles) stores to
 * global memory: S and P stay on chip, O and the log-sum-exp are written
 * once, after it. 0 when so, 1 naming the store that is not. */
static int run_flash(void)
{
    entry *e = find_entry("flash_fwd_kernel");
    if (!e) {
        fprintf(stderr, "ptx_traffic: error: no flash_fwd_kernel in the PTX\n");
        return 2;
    }
    tags T;
    cfg G;
    memset(&T, 0, sizeof T);
    memset(&G, 0, sizeof G);
    uint64_t *loops = NULL;
    int rc = 2, n_st = 0, n_kv = 0;
    char why[256] = "";
    if (tag_registers(e, &T) != 0 || T.overflow || cfg_build(e, &G, why, sizeof why) != 0) {
        fprintf(stderr, "ptx_traffic: error: flash_fwd_kernel: %s\n", why[0] ? why : "registers");
        goto out;
    }
    const int words = (G.n + 63) / 64;
    loops = calloc((size_t)G.n * (size_t)words, sizeof *loops);
    if (!loops || find_loops(&G, words, loops) != 0) goto out;
    rc = 0;
    for (int b = 0; b < G.n; b++)
        for (int i = G.first[b]; i <= G.last[b]; i++) {
            const ins *in = &e->ins[i];
            int st = 0, param = -1;
            if (in->is_label || !is_global_access(in->op, &st) || !st) continue;
            n_st++;
            if (classify(e, &T, in, 1, &param) != ACC_TENSOR || (param != 3 && param != 4)) {
                printf("MISMATCH flash_fwd_kernel: line %d: a global store not through o or lse\n", in->line);
                rc = 1;
            }
            for (int h = 0; h < G.n; h++) { /* a loop holding this store that loads k or v */
                const uint64_t *body = loops + (size_t)h * words;
                if (!BIT(body, h) || !BIT(body, b)) continue;
                for (int c = 0; c < G.n; c++) {
                    if (!BIT(body, c)) continue;
                    for (int j = G.first[c]; j <= G.last[c]; j++) {
                        int st2 = 0, p2 = -1;
                        if (e->ins[j].is_label || !is_global_access(e->ins[j].op, &st2) || st2) continue;
                        if (classify(e, &T, &e->ins[j], 0, &p2) == ACC_TENSOR && (p2 == 1 || p2 == 2)) {
                            printf("MISMATCH flash_fwd_kernel: line %d: a global store in the loop over key tiles "
                                   "(it loads k or v at line %d)\n", in->line, e->ins[j].line);
                            rc = 1;
                            goto next_store;
                        }
                    }
                }
            }
        next_store:;
        }
    for (int i = 0; i < e->n_ins; i++) {
        int st = 0, param = -1;
        if (!e->ins[i].is_label && is_global_access(e->ins[i].op, &st) && !st &&
            classify(e, &T, &e->ins[i], 0, &param) == ACC_TENSOR && (param == 1 || param == 2))
            n_kv++;
    }
    if (!n_kv) {
        printf("MISMATCH flash_fwd_kernel: no load of k or v found (the check would judge nothing)\n");
        rc = 1;
    }
    printf("flash_fwd_kernel: %d global stores, %s; %d loads of k and v\n", n_st,
           rc ? "NOT all through o or lse outside the key tiles' loop" : "all through o or lse, none in the key tiles' loop",
           n_kv);
out:
    cfg_free(&G);
    free(loops);
    free(T.t);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: ptx_traffic [--variant V] [--dtype f32|bf16|f16] [--plan P] [--shape RxC] PTX...\n"
                    "       ptx_traffic --spills PTXAS_LOG...\n"
                    "       ptx_traffic --flash PTX...\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--spills")) return argc > 2 ? run_spills(argv + 2, argc - 2) : usage();
    if (argc > 2 && !strcmp(argv[1], "--flash")) {
        for (int i = 2; i < argc; i++)
            if (read_ptx(argv[i]) != 0) return 2;
        int rc = run_flash();
        for (int e = 0; e < n_entries; e++) free(entries[e].ins);
        free(entries);
        return rc;
    }
    opts o = {NULL, -1, -1, {0, 0, 0, 0}};
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--variant") && i + 1 < argc) {
            o.variant = argv[++i];
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            mb_dtype t;
            if (mb_dtype_parse(argv[++i], &t) != MB_OK) return usage();
            o.dtype = (int)t;
        } else if (!strcmp(argv[i], "--plan") && i + 1 < argc) {
            mb_plan_kind k;
            if (mb_plan_parse(argv[++i], &k) != MB_OK) return usage();
            o.plan = (int)k;
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            mb_err err;
            if (mb_shape_parse(argv[++i], &o.shape, &err) != MB_OK || o.shape.rank != 2) return usage();
        } else {
            return usage();
        }
    }
    if (i == argc) return usage();
    for (; i < argc; i++)
        if (read_ptx(argv[i]) != 0) return 2;
    int rc = run_traffic(&o);
    for (int e = 0; e < n_entries; e++) {
        free(entries[e].ins);
        free(entries[e].acc);
    }
    free(entries);
    return rc;
}
