/* jit_cpu.c — compiled fused kernels: C generated for one lowered kernel (every
 * value a vector register, SLEEF's functions, one load per read and one store
 * per write), built into a shared object with the system's C compiler,
 * cached on disk by the source's hash (as PyTorch's inductor does on a CPU)
 * and in this process, and loaded with dlopen. The interpreter in exec_cpu.c
 * stays the fallback: no compiler, no cache directory, an op without a vector
 * form, or a failed build all return NULL. Why: the interpreter makes one
 * L1 pass per op per tile; 2-vCPU Zen 4 guest, n = 2^24 f32, one thread:
 * sin^2+cos^2 13.5 ms interpreted vs 9.3 ms for a hand-written SLEEF loop,
 * gelu_tanh 30.4 vs 22.0 (bench/cpu_fused.c).
 * Does not tile, thread or choose which kernels to compile: exec_cpu.c does. */
#include "kernels_int.h"
#include "mb_child.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MB_JIT_CC
#define MB_JIT_CC ""
#endif
#ifndef MB_JIT_CFLAGS
#define MB_JIT_CFLAGS ""
#endif
#ifndef MB_JIT_LIBS
#define MB_JIT_LIBS ""
#endif

/* ---- configuration and the in-process table ---------------------------------- */

#define JIT_TABLE_MAX 256

/* The compiler's deadline: one kernel builds in 0.1-0.5 s on the 2-vCPU
 * test host (2 s with four builds beside it); a minute means it hangs. */
#define MB_KERN_JIT_TIMEOUT_S 60.0

/* Vectors evaluated together, each step of the kernel across all of them
 * before the next, for kernels whose longest chain of calls weighs 2 or more
 * (call_weight): such chains are long and dependent, and G independent ones keep
 * the core busy. Lighter kernels run one vector at a time: they stream, and
 * grouped loads come in bursts. 2-vCPU Zen 4 guest, L1-resident, ns/element
 * for G = 1, 4, 8: sigmoid(sigmoid(sigmoid(x))) 1.50, 1.03, 0.74; tanh-GELU
 * 1.45, 1.34, 1.25; sin^2+cos^2 0.54-0.65 for all. Streaming 2^24 elements
 * on one thread (bench/cpu_fused.c, CPU time, busy host), over the plain
 * hand-written loop: sin^2+cos^2 1.01 at G = 1, 1.16 at 4, 1.5-1.6 at 8;
 * gelu_tanh 1.17, 0.99, 1.08-1.14; sigmoid3 1.96, 0.96-1.41, 1.04. */
#define MB_KERN_JIT_GROUP 8

/* Weight of an op in a chain: op_table.h's weight column (1 for a SLEEF call,
 * 2 for one followed by a division (tan, tanh, sigmoid) or two calls
 * (gelu_grad) or erfc (gelu), 0 for arithmetic). */
static int call_weight(mb_op op)
{
    return mb_op_info_of(op)->call_weight;
}

/* Vectors per step for a kernel: MB_KERN_JIT_GROUP when a chain of its
 * values weighs 2 or more, else 1. */
static int group_of(int n_reads, const mb_kern_pnode *nodes, int n_nodes)
{
    int *depth = calloc((size_t)(n_reads + n_nodes + 1), sizeof(int));
    if (!depth) return 1;
    int deepest = 0;
    for (int j = 0; j < n_nodes; j++) {
        const mb_kern_pnode *pn = &nodes[j];
        if (pn->skip) continue;
        int d = 0;
        if (pn->va >= 0 && depth[pn->va] > d) d = depth[pn->va];
        if (pn->vb >= 0 && depth[pn->vb] > d) d = depth[pn->vb];
        d += call_weight(pn->op);
        depth[n_reads + j] = d;
        if (pn->pair >= 0) depth[pn->pair] = d;
        if (d > deepest) deepest = d;
    }
    free(depth);
    return deepest >= 2 ? MB_KERN_JIT_GROUP : 1;
}

typedef struct jit_entry {
    uint64_t hash;
    void *sym;          /* the loaded function; NULL: the build failed, do not retry */
    void *handle;
    int fd;             /* the object, loaded as /proc/self/fd/N: open while loaded, so
                           that no later object's descriptor takes its number (dlopen
                           matches names) */
} jit_entry;

static struct {
    mb_kern_jit_mode mode;
    char cc[1024];
    char cache_dir[1024];
    jit_entry table[JIT_TABLE_MAX];
    int n_table;
    mb_kern_jit_stats stats;
    void (*warn)(const char *line);
    char warned[1024]; /* the folder last warned about: one line per folder */
    char why[sizeof ((mb_err *)0)->msg + 64]; /* why the last kernel was not compiled,
                                                 "" if none failed */
    double timeout_s;  /* the compiler's deadline */
    int cc_hung;       /* 1: the compiler timed out or was interrupted once: nothing
                          more is compiled until the next mb_kern_jit_configure */
} jit = {MB_KERN_JIT_AUTO, MB_JIT_CC, "", {{0, NULL, NULL, -1}}, 0, {0, 0, 0}, NULL, "", "",
         MB_KERN_JIT_TIMEOUT_S, 0};

static void why_not(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void why_not(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(jit.why, sizeof jit.why, fmt, ap);
    va_end(ap);
}

const char *mb_kern_jit_why_not(void)
{
    return jit.why[0] ? jit.why : NULL;
}

void mb_kern_jit_set_warn(void (*warn)(const char *line))
{
    jit.warn = warn;
}

/* One warning per folder (every kernel would repeat it). */
static void warn_once(const char *dir, const char *what, const char *why, const char *then)
{
    if (!jit.warn || !strcmp(jit.warned, dir)) return;
    snprintf(jit.warned, sizeof jit.warned, "%s", dir);
    char line[sizeof ((mb_err *)0)->msg + 128];
    snprintf(line, sizeof line, "%s %s; %s", what, why, then);
    jit.warn(line);
}

static void table_clear(void)
{
    for (int i = 0; i < jit.n_table; i++) {
        if (jit.table[i].handle) dlclose(jit.table[i].handle);
        if (jit.table[i].fd >= 0) close(jit.table[i].fd);
    }
    jit.n_table = 0;
}

void mb_kern_jit_configure(mb_kern_jit_mode mode, const char *cc, const char *cache_dir)
{
    if (!cc) cc = MB_JIT_CC;
    if (!cache_dir) cache_dir = "";
    if (strcmp(cc, jit.cc) || strcmp(cache_dir, jit.cache_dir)) table_clear();
    memset(&jit.stats, 0, sizeof jit.stats);
    jit.why[0] = '\0';
    jit.cc_hung = 0;
    jit.mode = mode;
    snprintf(jit.cc, sizeof jit.cc, "%s", cc);
    snprintf(jit.cache_dir, sizeof jit.cache_dir, "%s", cache_dir);
}

void mb_kern_jit_set_timeout(double timeout_s)
{
    jit.timeout_s = timeout_s > 0 ? timeout_s : MB_KERN_JIT_TIMEOUT_S;
}

void mb_kern_jit_get_stats(mb_kern_jit_stats *out)
{
    *out = jit.stats;
}

/* $XDG_CACHE_HOME and $HOME as the caller gave them (mb_kern_jit_set_env):
 * this library reads no environment variable. "" = unset. */
static char env_xdg[1024], env_home[1024];

void mb_kern_jit_set_env(const char *xdg_cache_home, const char *home)
{
    snprintf(env_xdg, sizeof env_xdg, "%s", xdg_cache_home ? xdg_cache_home : "");
    snprintf(env_home, sizeof env_home, "%s", home ? home : "");
}

/* The cache directory's path: configured, else $XDG_CACHE_HOME/membound/jit,
 * else ~/.cache/membound/jit (as given to mb_kern_jit_set_env). 0 on success. */
static int cache_dir(char *buf, size_t size)
{
    if (jit.cache_dir[0]) {
        snprintf(buf, size, "%s", jit.cache_dir);
        return 0;
    }
    const char *xdg = env_xdg, *home = env_home;
    if (xdg && xdg[0] == '/') snprintf(buf, size, "%s/membound/jit", xdg);
    else if (home && home[0] == '/') snprintf(buf, size, "%s/.cache/membound/jit", home);
    else {
        why_not("no folder for the compiled-kernel cache: $HOME and $XDG_CACHE_HOME are "
                "unset or not absolute paths");
        return -1;
    }
    return 0;
}

/* What -march=native builds for: the first CPU's identity and features in
 * /proc/cpuinfo (x86 and Arm keys), so a home shared by machines with other
 * CPUs does not load an object built for another. "" when unreadable. */
static const char *target_cpu(void)
{
    static char id[8192];
    static int done;
    if (done) return id;
    done = 1;
    static const char *const keys[] = {"vendor_id", "cpu family", "model", "model name", "stepping",
                                       "flags", "CPU implementer", "CPU architecture", "CPU variant",
                                       "CPU part", "Features", "isa"};
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return id;
    char line[4096];
    size_t used = 0;
    while (fgets(line, sizeof line, f) && line[0] != '\n') {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t len = strlen(keys[k]);
            if (strncmp(line, keys[k], len) || (line[len] != ' ' && line[len] != '\t' && line[len] != ':'))
                continue;
            int w = snprintf(id + used, sizeof id - used, "%s", line);
            if (w > 0 && (size_t)w < sizeof id - used) used += (size_t)w;
        }
    }
    fclose(f);
    return id;
}

/* ---- code generation ------------------------------------------------------------ */

typedef mb_kern_sbuf sbuf;
#define sb_printf mb_kern_sb_printf

void mb_kern_sb_printf(mb_kern_sbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        /* an empty buffer is NULL: no offset from it (UB even by 0) */
        int w = vsnprintf(b->p ? b->p + b->len : NULL, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)w < b->cap - b->len) {
            b->len += (size_t)w;
            return;
        }
        size_t cap = 2 * b->cap + (size_t)w + 256;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

/* Operand of node pn: value va/vb, or the scalar as a broadcast float
 * (hexadecimal: exact). */
static void operand(sbuf *b, int v, float s)
{
    if (v >= 0) sb_printf(b, "v%d[u]", v);
    else sb_printf(b, "V_SET(%af)", (double)s);
}

/* Appends "vN = <expr>;" for node j, or returns -1 when its op has no vector
 * form (the interpreter then runs the whole kernel). */
static int emit_node(sbuf *b, const mb_kern_pnode *pn, int v)
{
    if ((pn->va < 0 && !isfinite(pn->sa)) || (pn->vb < 0 && !isfinite(pn->sb))) return -1;
    if (pn->pair >= 0) {
        sb_printf(b, "    vf v%d[G], v%d[G];\n    for (int u = 0; u < G; u++) {\n"
                     "        vf2 p = V_SINCOS(", v, pn->pair);
        operand(b, pn->va, pn->sa);
        sb_printf(b, ");\n        v%d[u] = p.%c;\n        v%d[u] = p.%c;\n    }\n", v,
                  pn->op == MB_OP_SIN ? 'x' : 'y', pn->pair, pn->op == MB_OP_SIN ? 'y' : 'x');
        return 0;
    }
    const mb_op_info *in = mb_op_info_of(pn->op);
    if (pn->op == MB_OP_POW) { /* mb_op_powf's x, x*x and x*x*x; other exponents interpret
                                  (x**1: PyTorch's backward of x**2 is 2 x.pow(1) grad) */
        if (pn->vb >= 0 || pn->va < 0 || (pn->sb != 1.0f && pn->sb != 2.0f && pn->sb != 3.0f)) return -1;
        sb_printf(b, "    vf v%d[G];\n    for (int u = 0; u < G; u++) v%d[u] = ", v, v);
        if (pn->sb == 1.0f) sb_printf(b, "v%d[u];\n", pn->va);
        else if (pn->sb == 2.0f) sb_printf(b, "V_MUL(v%d[u], v%d[u]);\n", pn->va, pn->va);
        else sb_printf(b, "V_MUL(V_MUL(v%d[u], v%d[u]), v%d[u]);\n", pn->va, pn->va, pn->va);
        return 0;
    }
    /* op_table.h's vector form (relu, abs, step, sign: NaN rules; input: none) */
    if (!(in->flags & MB_OPF_JIT)) return -1;
    const char *fn = in->arity == 1 ? in->vform : NULL; /* unary: fn(a) */
    const char *bin = in->arity == 2 ? in->vform : NULL; /* binary: bin(a, b) */
    sb_printf(b, "    vf v%d[G];\n    for (int u = 0; u < G; u++) v%d[u] = %s(", v, v, bin ? bin : fn);
    operand(b, pn->va, pn->sa);
    if (bin) {
        sb_printf(b, ", ");
        operand(b, pn->vb, pn->sb);
    }
    sb_printf(b, ");\n");
    return 0;
}

/* The source of the kernel's tile function, or NULL (unsupported op, out of
 * memory). Caller frees. */
static char *generate(int n_reads, const mb_kern_pnode *nodes, int n_nodes, const int *w_val,
                      int n_writes)
{
    sbuf b = {0};
    sb_printf(&b, "/* membound fused kernel: %d reads, %d nodes, %d writes */\n"
                  "#define MB_HAVE_SLEEF 1\n#include <stdint.h>\n#include <string.h>\n%s\n"
                  "#if !defined(MB_VW)\n#error \"no vector ISA with SLEEF\"\n#endif\n"
                  "enum { G = %d, NR = %d, NW = %d, STEP = G * MB_VW };\n"
                  "static inline __attribute__((always_inline)) void body(const vf *in, vf *out)\n{\n",
              n_reads, n_nodes, n_writes, mb_kern_vec_ops_text, group_of(n_reads, nodes, n_nodes),
              n_reads, n_writes);
    for (int r = 0; r < n_reads; r++)
        sb_printf(&b, "    vf v%d[G];\n    for (int u = 0; u < G; u++) v%d[u] = in[%d * G + u];\n", r, r, r);
    for (int j = 0; j < n_nodes; j++) {
        if (nodes[j].skip) continue;
        if (emit_node(&b, &nodes[j], n_reads + j)) {
            free(b.p);
            return NULL;
        }
    }
    for (int w = 0; w < n_writes; w++)
        sb_printf(&b, "    for (int u = 0; u < G; u++) out[%d * G + u] = v%d[u];\n", w, w_val[w]);
    sb_printf(&b,
              "}\n\n"
              "void mb_jit_tile(const float *const *src, float *const *dst, int64_t len, int nt)\n{\n"
              "    vf in[NR * G + 1], out[NW * G];\n"
              "    int64_t i = 0;\n"
              "    int st = nt;\n"
              "    for (int w = 0; w < NW; w++) st &= ((uintptr_t)dst[w] %% sizeof(vf)) == 0;\n"
              "    for (; i + STEP <= len; i += STEP) {\n"
              "        for (int r = 0; r < NR; r++)\n"
              "            for (int u = 0; u < G; u++) in[r * G + u] = V_LD(src[r] + i + u * MB_VW);\n"
              "        body(in, out);\n"
              "        if (st)\n"
              "            for (int w = 0; w < NW; w++)\n"
              "                for (int u = 0; u < G; u++) V_STREAM(dst[w] + i + u * MB_VW, out[w * G + u]);\n"
              "        else\n"
              "            for (int w = 0; w < NW; w++)\n"
              "                for (int u = 0; u < G; u++) V_ST(dst[w] + i + u * MB_VW, out[w * G + u]);\n"
              "    }\n"
              "    if (i < len) { /* tail: padded with 1 (in every op's domain) */\n"
              "        static _Thread_local float t[NR + NW][STEP];\n"
              "        int64_t m = len - i;\n"
              "        for (int r = 0; r < NR; r++) {\n"
              "            memcpy(t[r], src[r] + i, (size_t)m * sizeof(float));\n"
              "            for (int64_t k = m; k < STEP; k++) t[r][k] = 1.0f;\n"
              "            for (int u = 0; u < G; u++) in[r * G + u] = V_LD(t[r] + u * MB_VW);\n"
              "        }\n"
              "        body(in, out);\n"
              "        for (int w = 0; w < NW; w++) {\n"
              "            for (int u = 0; u < G; u++) V_ST(t[NR + w] + u * MB_VW, out[w * G + u]);\n"
              "            memcpy(dst[w] + i, t[NR + w], (size_t)m * sizeof(float));\n"
              "        }\n"
              "    }\n"
              "}\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- build and load ------------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Appends the space-separated words of s (copied into store) to argv. */
static int split_args(const char *s, char *store, size_t size, char **argv, int n, int max)
{
    snprintf(store, size, "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(store, " ", &save); tok && n < max; tok = strtok_r(NULL, " ", &save))
        argv[n++] = tok;
    return n;
}

/* Runs the compiler: MB_JIT_CFLAGS -o so src MB_JIT_LIBS, output silenced,
 * under the deadline (mb_child_run: src and so removed if it is killed).
 * 0 when it succeeded; -1 when it failed, could not be started, timed out
 * or was interrupted (the last two said once through the warning callback,
 * and no later kernel is compiled: each would wait as long). */
static int compile(const char *src, const char *so)
{
    char cflags[sizeof MB_JIT_CFLAGS + 1], libs[sizeof MB_JIT_LIBS + 1];
    char o_flag[] = "-o";
    char *argv[96];
    int n = 0;
    argv[n++] = jit.cc;
    n = split_args(MB_JIT_CFLAGS, cflags, sizeof cflags, argv, n, 80);
    argv[n++] = o_flag;
    argv[n++] = (char *)so;
    argv[n++] = (char *)src;
    n = split_args(MB_JIT_LIBS, libs, sizeof libs, argv, n, 94);
    argv[n] = NULL;
    mb_child_spec sp = {argv, NULL, NULL, NULL, jit.timeout_s, {src, so, NULL}};
    mb_child_result res;
    mb_err err;
    if (mb_child_run(&sp, &res, &err) != MB_OK) return -1;
    if (res.outcome == MB_CHILD_EXITED) return res.status == 0 ? 0 : -1;
    if (res.outcome == MB_CHILD_TIMED_OUT || res.outcome == MB_CHILD_INTERRUPTED) {
        char how[128], line[1200];
        jit.cc_hung = 1;
        why_not("the C compiler '%s' %s", jit.cc, mb_child_describe(&res, jit.timeout_s, how, sizeof how));
        snprintf(line, sizeof line, "%s: kernels interpreted from here on", jit.why);
        if (jit.warn) jit.warn(line);
    }
    return -1;
}

/* Loads the object open as fd (at path, for a system without /proc) into
 * e, its function symbol into e->sym; 0 on success. Through /proc/self/fd:
 * what is loaded is the file whose descriptor was checked, not whatever the
 * path names by then. */
static int load(int fd, const char *path, const char *symbol, jit_entry *e)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    e->handle = dlopen(access(proc, F_OK) == 0 ? proc : path, RTLD_NOW | RTLD_LOCAL);
    if (!e->handle) return -1;
    e->sym = dlsym(e->handle, symbol);
    if (!e->sym) {
        dlclose(e->handle);
        e->handle = NULL;
        return -1;
    }
    return 0;
}

/* Opens name in dir by the trusted-folder rule and loads it; 0 on success.
 * A refused object is warned about (once a folder). */
static int load_checked(const mb_tdir *dir, const char *name, const char *symbol, jit_entry *e)
{
    int fd = -1;
    mb_err err;
    int rc = mb_tdir_open_file(dir, name, &fd, &err);
    if (rc == MB_EINPUT) warn_once(dir->path, "compiled kernel", err.msg, "compiled again");
    if (rc != MB_OK) return -1;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir->path, name);
    if (load(fd, path, symbol, e) != 0) {
        close(fd);
        return -1;
    }
    e->fd = fd;
    return 0;
}

/* Writes text to dir/name (a new file, never through a link); 0 on success. */
static int write_source(const mb_tdir *dir, const char *name, const char *text)
{
    int fd = openat(dir->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -1;
    }
    int ok = fputs(text, f) >= 0;
    return (fclose(f) == 0) && ok ? 0 : -1;
}

/* Compiles text in dir into the object name and loads it; 0 on success.
 * Built under private names and renamed into place: a process loading the
 * cache never sees half an object, and an object or link planted under name
 * is replaced, not written through. */
static int compile_into(const mb_tdir *dir, const char *name, const char *text, const char *symbol,
                        jit_entry *e)
{
    char tmp_c[96], tmp_so[96], path_c[1200], path_so[1200];
    snprintf(tmp_c, sizeof tmp_c, "%s.%ld.c", name, (long)getpid());
    snprintf(tmp_so, sizeof tmp_so, "%s.%ld.so", name, (long)getpid());
    snprintf(path_c, sizeof path_c, "%s/%s", dir->path, tmp_c);
    snprintf(path_so, sizeof path_so, "%s/%s", dir->path, tmp_so);
    int ok = write_source(dir, tmp_c, text) == 0 && compile(path_c, path_so) == 0;
    if (ok) { /* the compiler's mode follows the umask: nobody else may write it */
        int fd = openat(dir->fd, tmp_so, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ok = fd >= 0 && fchmod(fd, 0700) == 0;
        if (fd >= 0) close(fd);
    }
    ok = ok && renameat(dir->fd, tmp_so, dir->fd, name) == 0 && load_checked(dir, name, symbol, e) == 0;
    unlinkat(dir->fd, tmp_c, 0);
    unlinkat(dir->fd, tmp_so, 0);
    return ok ? 0 : -1;
}

/* Compiles text in a private temporary folder, loads it and removes the
 * folder (the mapping outlives the file): the fallback when the cache folder
 * is refused. 0 on success. */
static int compile_private(const char *name, const char *text, const char *symbol, jit_entry *e)
{
    char tmp[] = "/tmp/membound-jit-XXXXXX";
    if (!mkdtemp(tmp)) return -1;
    mb_tdir dir;
    mb_err err;
    int rc = -1;
    if (mb_tdir_open(&dir, tmp, 0, &err) == MB_OK) {
        rc = compile_into(&dir, name, text, symbol, e);
        unlinkat(dir.fd, name, 0);
        mb_tdir_close(&dir);
    }
    rmdir(tmp);
    return rc;
}

/* Builds (or finds in the disk cache) the object for text and loads it. */
static void build(const char *text, const char *symbol, jit_entry *e)
{
    char path[1024], so[64];
    snprintf(so, sizeof so, "k%016llx.so", (unsigned long long)e->hash);
    if (cache_dir(path, sizeof path)) return;
    mb_tdir dir;
    mb_err err;
    int rc = mb_tdir_open(&dir, path, 1, &err);
    if (rc == MB_OK) {
        if (load_checked(&dir, so, symbol, e) == 0) jit.stats.loaded++;
        else if (compile_into(&dir, so, text, symbol, e) == 0) jit.stats.compiled++;
        else if (!jit.cc_hung) why_not("the C compiler '%s' failed or is not there", jit.cc);
        mb_tdir_close(&dir);
        return;
    }
    if (rc == MB_EINPUT) {
        warn_once(path, "compiled-kernel cache", err.msg, "kernels compiled for this run only");
        if (compile_private(so, text, symbol, e) == 0) jit.stats.compiled++;
        else if (!jit.cc_hung) why_not("the C compiler '%s' failed or is not there", jit.cc);
        return;
    }
    why_not("the compiled-kernel cache %s: %s", path, err.msg);
}

char *mb_kern_jit_source(int n_reads, const mb_kern_pnode *nodes, int n_nodes, const int *w_val,
                         int n_writes)
{
    return generate(n_reads, nodes, n_nodes, w_val, n_writes);
}

const char *mb_kern_jit_build_cc(void)
{
    return MB_JIT_CC;
}

const char *mb_kern_jit_build_cflags(void)
{
    return MB_JIT_CFLAGS;
}

void *mb_kern_jit_symbol(char *text, const char *symbol)
{
    if (!text) return NULL;
    if (jit.mode != MB_KERN_JIT_AUTO || !jit.cc[0] || jit.cc_hung) {
        if (jit.mode == MB_KERN_JIT_AUTO && !jit.cc[0]) why_not("no C compiler configured");
        free(text); /* cc_hung: jit.why says why, the warning said so once */
        return NULL;
    }
    /* the key: the source, the compiler, its arguments and the CPU they target */
    uint64_t h = fnv1a(0xcbf29ce484222325ull, text);
    h = fnv1a(fnv1a(fnv1a(fnv1a(fnv1a(h, symbol), jit.cc), MB_JIT_CFLAGS), MB_JIT_LIBS), target_cpu());
    for (int i = 0; i < jit.n_table; i++)
        if (jit.table[i].hash == h) {
            free(text);
            return jit.table[i].sym;
        }
    if (jit.n_table == JIT_TABLE_MAX) table_clear(); /* no prog outlives its run */
    jit_entry e = {h, NULL, NULL, -1};
    build(text, symbol, &e);
    free(text);
    if (!e.sym) jit.stats.failed++;
    jit.table[jit.n_table++] = e;
    return e.sym;
}

mb_kern_tile_fn mb_kern_jit_lookup(int n_reads, const mb_kern_pnode *nodes, int n_nodes,
                                   const int *w_val, int n_writes)
{
    if (jit.mode != MB_KERN_JIT_AUTO) return NULL;
    void *sym = mb_kern_jit_symbol(generate(n_reads, nodes, n_nodes, w_val, n_writes), "mb_jit_tile");
    mb_kern_tile_fn fn = NULL;
    memcpy(&fn, &sym, sizeof sym); /* object to function pointer (POSIX) */
    return fn;
}
