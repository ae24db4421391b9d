/* kernels_jit.c — compiled fused kernels (kernels/jit_cpu.c): every built-in
 * variant's multi-node f32 kernels and an expression of every op with a vector
 * form, compiled, against the float64 reference (and finite differences for
 * backward plans), at sizes with partial tiles and below one vector; a second
 * configuration loads them from the disk cache without compiling; no
 * compiler, or no usable cache directory, falls back to the interpreter with
 * the same results. Skips (77) where the build has no SLEEF vector ISA. */
#define _GNU_SOURCE /* mkdtemp */
#include "kernels.h"
#include "mb_test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_SMALL (3 * MB_KERN_TILE + 77)

/* Runs expr (text of a variant, f32) under plan pk at n, checks it; *compiled
 * gets how many of its kernels run compiled code. 1 ran, 0 plan unsupported. */
static int run_expr(const char *expr, mb_plan_kind pk, int64_t n, int *compiled)
{
    mb_err err;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_tensors t;
    *compiled = 0;
    if (mb_parse_expr(expr, MB_F32, &g, &err)) {
        fprintf(stderr, "'%s': %s\n", expr, err.msg);
        CHECK(0);
        return 0;
    }
    if (!mb_plan_supported(g, pk)) {
        mb_graph_free(g);
        return 0;
    }
    if (mb_plan_build(g, pk, &p, &err) || mb_kern_tensors_alloc(p, n, 0, &t, &err)) {
        fprintf(stderr, "'%s' %s: %s\n", expr, mb_plan_name(pk), err.msg);
        CHECK(0);
        mb_plan_free(p);
        mb_graph_free(g);
        return 0;
    }
    for (int k = 0; k < p->n_kernels; k++) {
        mb_kern_eval_info info;
        CHECK(mb_kern_kernel_info(&t, k, &info, &err) == MB_OK);
        *compiled += info.compiled;
    }
    CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err) == MB_OK);
    mb_kern_check ck;
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK);
    if (!ck.passed)
        fprintf(stderr, "'%s' %s n=%lld: err %.3g, first [%lld] got %.9g want %.9g\n", expr,
                mb_plan_name(pk), (long long)n, ck.max_rel_err, (long long)ck.first_bad,
                ck.first_got, ck.first_want);
    CHECK(ck.passed);
    if (g->has_backward) {
        double gerr = 0;
        int gok = 0;
        CHECK(mb_kern_gradcheck(&t, 50, &gerr, &gok, &err) == MB_OK);
        CHECK(gok);
    }
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
    return 1;
}

static const char *const exprs[] = {
    "y = sin(x)**2 + cos(x)**2",
    "y = 0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3)))",
    "y = sigmoid(sigmoid(sigmoid(x)))\nbackward",
    /* every op with a vector form, scalars on both sides, two inputs */
    "y = sin(x) + cos(x) * tan(x*0.3) - tanh(x) / (1 + exp(x)) + log(x) + sqrt(x)"
    " + rsqrt(x) + sigmoid(x) + gelu(x) - -x + 3/x + copy(x)*0.5 + x**3 * w\nbackward",
};

static void compiled_kernels_verify(void)
{
    int64_t sizes[] = {N_SMALL, 5, 2 * MB_KERN_TILE};
    int compiled_total = 0;
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (int pk = MB_PLAN_FUSED; pk < MB_PLAN_COUNT; pk++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                int c = 0;
                if (run_expr(exprs[e], (mb_plan_kind)pk, sizes[s], &c)) CHECK(c >= 1);
                compiled_total += c;
            }
    CHECK(compiled_total > 0);
    mb_kern_jit_stats st;
    mb_kern_jit_get_stats(&st);
    CHECK(st.compiled >= 4); /* one object per distinct kernel */
    CHECK_EQ_I64(st.failed, 0);
    /* an op without a vector form: the whole kernel interprets */
    int c = -1;
    CHECK(run_expr("y = relu(x) * x", MB_PLAN_FUSED, N_SMALL, &c) == 1);
    CHECK_EQ_I64(c, 0);
    /* x**2's backward is PyTorch's 2 x.pow(1) grad: x**1 compiles, so both
     * kernels of recompute do */
    c = 0;
    CHECK(run_expr("y = sin(x)**2 + cos(x)**2\nbackward", MB_PLAN_RECOMPUTE, N_SMALL, &c) == 1);
    CHECK_EQ_I64(c, 2);
}

/* The model's rule for compiled kernels (mb_kernel_compiled, which picks the
 * compiled op rates) agrees with the executor's, kernel by kernel: every
 * built-in variant and plan, f32 and bf16, and expressions at the rule's
 * edges. */
static int compiled_rule_agrees(mb_graph *g)
{
    int kernels = 0;
    for (int pk = 0; pk < MB_PLAN_COUNT; pk++) {
        mb_err err;
        mb_plan *p = NULL;
        mb_kern_tensors t;
        if (!mb_plan_supported(g, (mb_plan_kind)pk)) continue;
        if (mb_plan_build(g, (mb_plan_kind)pk, &p, &err) || mb_kern_tensors_alloc(p, 64, 0, &t, &err)) {
            fprintf(stderr, "%s %s: %s\n", g->name, mb_plan_name((mb_plan_kind)pk), err.msg);
            CHECK(0);
            mb_plan_free(p);
            continue;
        }
        /* a spec with compiled rates (4x the others) costs exactly the
         * compiled kernels less */
        mb_device dev;
        memset(&dev, 0, sizeof dev);
        dev.mem_bandwidth_gbs = 1000;
        dev.cache_mb = 1;
        dev.fp32_tflops = 1;
        dev.op_sincos_geps = 1;
        for (int op = 0; op < MB_OP_COUNT; op++) dev.op_geps[op] = 1;
        mb_estimate plain, fast;
        CHECK(mb_estimate_plan(p, 1 << 20, &dev, &plain, &err) == MB_OK);
        for (int op = 0; op < MB_OP_COUNT; op++) dev.op_compiled_geps[op] = 4;
        dev.op_sincos_compiled_geps = 4;
        CHECK(mb_estimate_plan(p, 1 << 20, &dev, &fast, &err) == MB_OK);
        for (int k = 0; k < p->n_kernels; k++) {
            double a = plain.per_kernel[k].compute_s, b = fast.per_kernel[k].compute_s;
            if (mb_kernel_compiled(p->g, &p->kernels[k])) CHECK(a > 0 && b < a / 3.9);
            else CHECK(b == a);
        }
        mb_estimate_free(&plain);
        mb_estimate_free(&fast);
        for (int k = 0; k < p->n_kernels; k++, kernels++) {
            mb_kern_eval_info info;
            CHECK(mb_kern_kernel_info(&t, k, &info, &err) == MB_OK);
            int model = mb_kernel_compiled(p->g, &p->kernels[k]);
            if (model != info.compiled)
                fprintf(stderr, "%s %s kernel %s: executor compiled=%d, model %d\n", g->name,
                        mb_plan_name((mb_plan_kind)pk), p->kernels[k].name, info.compiled, model);
            CHECK_EQ_I64(model, info.compiled);
        }
        mb_kern_tensors_free(&t);
        mb_plan_free(p);
    }
    return kernels;
}

/* compiled_rule_agrees on a built-in variant (expr 0) or an expression, f32
 * and bf16; the kernels it compared. */
static int rule_agrees_on(const char *text, int expr)
{
    int kernels = 0;
    for (int dt = MB_F32; dt <= MB_BF16; dt++) {
        mb_err err;
        mb_graph *g = NULL;
        if (expr ? mb_parse_expr(text, (mb_dtype)dt, &g, &err)
                 : mb_variant_load(text, (mb_dtype)dt, &g, &err)) {
            fprintf(stderr, "'%s': %s\n", text, err.msg);
            CHECK(0);
            continue;
        }
        if (!g->has_row_ops) kernels += compiled_rule_agrees(g); /* row kernels are never compiled */
        mb_graph_free(g);
    }
    return kernels;
}

static void model_rule_agrees(void)
{
    char names[64][MB_NAME_MAX];
    int nv = mb_variant_list(names, 64), kernels = 0;
    CHECK(nv > 0);
    for (int v = 0; v < nv; v++) kernels += rule_agrees_on(names[v], 0);
    const char *edges[] = {
        "y = relu(x) * x", "y = x**2.5 + x", "y = x**3 + x", "y = x**2", "y = x**1 * x", "y = sin(x) + cos(x)",
        "y = sin(x) * sin(x)", "y = copy(x) + 1", "y = abs(x) - x", "y = 3.4e38 * x + x",
        "y = exp(x) * w - abs(w)", "y = exp(x) * w - tanh(w)",
    };
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) kernels += rule_agrees_on(edges[e], 1);
    CHECK(kernels > 50);
}

/* Back to the first directory after another: loaded, not compiled. */
static void disk_cache_reused(const char *dir, const char *other)
{
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, other);
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, dir);
    int c = 0;
    CHECK(run_expr(exprs[0], MB_PLAN_FUSED, N_SMALL, &c) == 1);
    CHECK_EQ_I64(c, 1);
    mb_kern_jit_stats st;
    mb_kern_jit_get_stats(&st);
    CHECK_EQ_I64(st.compiled, 0);
    CHECK_EQ_I64(st.loaded, 1);
}

/* No compiler, an unusable cache directory, or JIT off: the interpreter,
 * same checks. */
static void falls_back(const char *dir)
{
    const struct {
        mb_kern_jit_mode mode;
        const char *cc, *dir;
    } cfg[] = {
        {MB_KERN_JIT_AUTO, "/nonexistent/membound-cc", dir},
        {MB_KERN_JIT_AUTO, NULL, "/proc/membound-no-such-dir"},
        {MB_KERN_JIT_OFF, NULL, dir},
    };
    for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
        mb_kern_jit_configure(cfg[k].mode, cfg[k].cc, cfg[k].dir);
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++) {
            int c = -1;
            CHECK(run_expr(exprs[e], MB_PLAN_FUSED, N_SMALL, &c) == 1 ||
                  run_expr(exprs[e], MB_PLAN_RECOMPUTE, N_SMALL, &c) == 1);
            CHECK_EQ_I64(c, 0);
        }
        mb_kern_jit_stats st;
        mb_kern_jit_get_stats(&st);
        CHECK_EQ_I64(st.compiled + st.loaded, 0);
        CHECK(cfg[k].mode == MB_KERN_JIT_OFF ? st.failed == 0 : st.failed > 0);
        /* the reason, for calibrate to print: never "no C compiler" for a folder */
        const char *why = mb_kern_jit_why_not();
        const char *want = k == 0 ? "membound-cc" : k == 1 ? "membound-no-such-dir" : NULL;
        CHECK(want ? why && strstr(why, want) : why == NULL);
    }
    /* $HOME and $XDG_CACHE_HOME unset: the reason names them; the library
     * takes them from its caller only (the environment still has them) */
    mb_kern_jit_set_env(NULL, NULL);
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, NULL);
    int c = -1;
    CHECK(run_expr(exprs[0], MB_PLAN_FUSED, N_SMALL, &c) == 1);
    CHECK_EQ_I64(c, 0);
    const char *why = mb_kern_jit_why_not();
    CHECK(why && strstr(why, "$HOME") && !strstr(why, "compiler"));
    if (why) printf("HOME unset: %s\n", why);
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME"));
}

static int n_warned;
static char warned[1024];

static void count_warn(const char *line)
{
    n_warned++;
    snprintf(warned, sizeof warned, "%s", line);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Files in dir whose name ends in suffix. */
static int count_suffix(const char *dir, const char *suffix)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *ent;
    size_t ls = strlen(suffix);
    while (d && (ent = readdir(d))) {
        size_t l = strlen(ent->d_name);
        n += l > ls && !strcmp(ent->d_name + l - ls, suffix);
    }
    if (d) closedir(d);
    return n;
}

/* A compiler that never returns (a stand-in shell script whose child
 * sleeps): killed with its group at the deadline, its source and object
 * removed from the cache, the kernel interpreted, said once; the next
 * kernel does not wait again. */
static void hung_compiler(const char *dir)
{
    char cc[4200], pidf[4200];
    snprintf(cc, sizeof cc, "%s/hang-cc", dir);
    snprintf(pidf, sizeof pidf, "%s/sleep.pid", dir);
    FILE *f = fopen(cc, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "#!/bin/sh\nsleep 30 &\necho $! > %s\nwait\n", pidf);
    fclose(f);
    chmod(cc, 0755);
    mb_kern_jit_set_warn(count_warn);
    mb_kern_jit_set_timeout(0.5);
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, cc, dir);
    n_warned = 0;
    double t0 = now_s();
    int c = -1, ran = 0;
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++) {
        ran += run_expr(exprs[e], MB_PLAN_FUSED, N_SMALL, &c);
        CHECK_EQ_I64(c, 0);
    }
    double took = now_s() - t0;
    CHECK(ran >= 2);
    CHECK(took < 0.5 + 2.0); /* one deadline, not one per kernel */
    CHECK_EQ_I64(n_warned, 1);
    CHECK(strstr(warned, "timed out after 0.5 s") && strstr(warned, "interpreted"));
    printf("hung compiler: %s (%.2f s for %d expressions)\n", warned, took, ran);
    CHECK_EQ_I64(count_suffix(dir, ".c"), 0);
    CHECK_EQ_I64(count_suffix(dir, ".so"), 0);
    f = fopen(pidf, "r");
    long pid = 0;
    CHECK(f && fscanf(f, "%ld", &pid) == 1 && pid > 0);
    if (f) fclose(f);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%ld", pid);
    int alive = 1;
    for (int i = 0; i < 100 && alive; i++) {
        char st[64], buf[256] = {0};
        snprintf(st, sizeof st, "%s/stat", proc);
        FILE *sf = fopen(st, "r");
        if (!sf) { alive = 0; break; }
        size_t nr = fread(buf, 1, sizeof buf - 1, sf);
        fclose(sf);
        buf[nr] = '\0';
        const char *rp = strrchr(buf, ')');
        if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X')) alive = 0;
        else usleep(10000);
    }
    CHECK(!alive); /* the compiler's own child died with it */
    unlink(cc);
    unlink(pidf);
    mb_kern_jit_set_timeout(0);
    mb_kern_jit_set_warn(NULL);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *ent;
        while ((ent = readdir(d)))
            if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..")) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
                unlink(path);
            }
        closedir(d);
    }
    rmdir(dir);
}

int main(void)
{
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME")); /* as the CLI does */
    if (strncmp(mb_kern_vector_isa(), "sleef-", 6) != 0) {
        printf("built without a SLEEF vector ISA (%s): nothing to compile\n", mb_kern_vector_isa());
        return 77;
    }
    char dir[] = "/tmp/mb-jit-test-XXXXXX", other[] = "/tmp/mb-jit-test-XXXXXX";
    if (!mkdtemp(dir) || !mkdtemp(other)) {
        perror("mkdtemp");
        return 1;
    }
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, dir);
    compiled_kernels_verify();
    model_rule_agrees();
    disk_cache_reused(dir, other);
    falls_back(other);
    hung_compiler(other);
    mb_kern_jit_configure(MB_KERN_JIT_OFF, NULL, NULL);
    remove_dir(dir);
    remove_dir(other);
    return mb_test_done();
}
