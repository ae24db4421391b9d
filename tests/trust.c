/* trust.c — nobody else's files run as us or change our numbers: caches,
 * implicit inputs and outputs. One case per ctest entry (argv[1]):
 *   folder_rule   model/trusted_dir.c: who may own and write each folder on
 *                 the way, links, files, creation 0700, the lock;
 *   jit_cache     a compiled kernel planted in another user's cache folder
 *                 (configured, or under $HOME as with sudo -E) or beside ours
 *                 (another's object, a link) is never loaded: compiled again;
 *   calib_cache   another user's calibration cache folder (777) or file, a
 *                 group-shared folder, a file others can write: not used, and
 *                 `calibrate --cached -q` says so, does not copy the forgery
 *                 and takes the next folder's calibration;
 *   cache_link    a link in the cache folder is replaced, never written through;
 *   local_spec    ./local-cpu.ini of another user, or in a folder others can
 *                 write, is not used (one warning); our own is;
 *   csv_device    a CSV whose device column names a file that is not a spec
 *                 (/etc/shadow) is refused without a word of its text;
 *   outputs       an output that is an input or the other output: exit 2
 *                 before any work; two runs writing one -o: the second fails;
 *   concurrent_calibration  two first runs on a fresh cache: one calibrates,
 *                 the other waits and uses its calibration, both exit 0.
 * Cases with another user become an unused uid (mb_test_user.h) as root and
 * exit 77 elsewhere. Everything happens in the case's own temporary folder. */
#define _GNU_SOURCE
#include "kernels.h"
#include "mb_test.h"
#include "mb_test_user.h"
#include "calibrate.h"
#include "mb_test_calib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char tmp[256]; /* the case's folder: sticky and world-writable, as /tmp */
static uid_t other;   /* the other user, 0 when not root */

/* ---- files and runs ------------------------------------------------------------ */

static void path_in(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", tmp, name);
}

static char *slurp(const char *path)
{
    static char buf[1 << 18];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    return buf;
}

static int put(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0) return -1;
    size_t len = strlen(text);
    int ok = write(fd, text, len) == (ssize_t)len;
    ok = fchmod(fd, mode) == 0 && ok;
    return close(fd) == 0 && ok ? 0 : -1;
}

/* Starts $MB_BIN args in cwd with env ("NAME=value", "NAME=" unsets; may be
 * NULL), stdout to /dev/null, stderr to err. Returns the pid. */
static pid_t start(const char *cwd, const char *const *env, const char *err, const char *const *args)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    for (; env && *env; env++) {
        char name[128];
        const char *eq = strchr(*env, '=');
        snprintf(name, sizeof name, "%.*s", (int)(eq - *env), *env);
        if (eq[1]) setenv(name, eq + 1, 1);
        else unsetenv(name);
    }
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), fo = open("/dev/null", O_WRONLY);
    if (fe < 0 || fo < 0 || chdir(cwd) != 0) _exit(127);
    dup2(fo, 1);
    dup2(fe, 2);
    char *argv[40];
    int n = 0;
    argv[n++] = getenv("MB_BIN");
    for (; args[n - 1] && n < 39; n++) argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    execv(argv[0], argv);
    _exit(127);
}

static int finish(pid_t pid)
{
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run(const char *cwd, const char *const *env, const char *err, const char *const *args)
{
    return finish(start(cwd, env, err, args));
}

static int have_bin(void)
{
    const char *bin = getenv("MB_BIN");
    return bin && access(bin, X_OK) == 0;
}

/* A calibration-like CPU spec with copy bandwidth bw_gbs, named name. */
static void fake_device(mb_device *d, const char *name, double bw_gbs)
{
    mb_cal_result c;
    mb_test_calib(&c, bw_gbs);
    mb_cal_to_device(&c, "trust test", d);
    snprintf(d->name, sizeof d->name, "%s", name);
}

static char *spec_text(const char *name, double bw_gbs)
{
    mb_device d;
    mb_err e;
    fake_device(&d, name, bw_gbs);
    return mb_device_ini_text(&d, &e);
}

/* ---- what the other user plants --------------------------------------------------- */

typedef struct plant {
    const char *dirs[4];  /* made in order, mode dir_mode */
    mode_t dir_mode;
    const char *file;     /* then this file (may be NULL) */
    const char *text;     /* with this text ... */
    const void *bytes;    /* ... or these bytes */
    size_t n_bytes;
} plant;

static int plant_files(void *ctx)
{
    const plant *p = ctx;
    for (int i = 0; i < 4 && p->dirs[i]; i++)
        if ((mkdir(p->dirs[i], p->dir_mode) != 0 && errno != EEXIST) || chmod(p->dirs[i], p->dir_mode) != 0)
            return 1;
    if (!p->file) return 0;
    if (p->text) return put(p->file, p->text, 0644);
    int fd = open(p->file, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    if (fd < 0) return 1;
    int ok = write(fd, p->bytes, p->n_bytes) == (ssize_t)p->n_bytes;
    return close(fd) == 0 && ok ? 0 : 1;
}

static int as_other(const plant *p)
{
    int ok = mb_test_as_user(other, plant_files, (void *)p);
    CHECK(ok);
    return ok;
}

/* ---- folder_rule ------------------------------------------------------------------ */

static int case_folder_rule(void)
{
    char a[512], b[512], link[600], f[600];
    mb_tdir d;
    mb_err e;
    struct stat st;
    /* created 0700 under a sticky world-writable folder (as /tmp) */
    path_in(a, sizeof a, "own/x/y");
    CHECK(mb_tdir_open(&d, a, 1, &e) == MB_OK);
    CHECK(stat(a, &st) == 0 && (st.st_mode & 0777) == 0700);
    mb_tdir_close(&d);
    CHECK(mb_tdir_open(&d, "/nonexistent-membound-dir", 0, &e) == MB_ERUN);
    /* the folder itself writable by its group or others: refused, how to fix said */
    path_in(b, sizeof b, "own/x");
    chmod(b, 0770);
    CHECK(mb_tdir_open(&d, a, 0, &e) == MB_EINPUT && strstr(e.msg, "on its way is writable by others"));
    chmod(b, 0700);
    chmod(a, 0770);
    CHECK(mb_tdir_open(&d, a, 0, &e) == MB_EINPUT && strstr(e.msg, "writable by its group (chmod 700"));
    chmod(a, 0700);
    /* our own link is followed; files: ours, a link, writable by others */
    snprintf(link, sizeof link, "%s/own/link", tmp);
    CHECK(symlink(a, link) == 0);
    CHECK(mb_tdir_open(&d, link, 0, &e) == MB_OK);
    mb_tdir_close(&d);
    snprintf(link, sizeof link, "%s/own/rel", tmp); /* relative, and through .. */
    CHECK(symlink("x/../x/y", link) == 0);
    CHECK(mb_tdir_open(&d, link, 0, &e) == MB_OK);
    int fd = -1;
    snprintf(f, sizeof f, "%s/f", a);
    CHECK(put(f, "x\n", 0600) == 0);
    CHECK(mb_tdir_open_file(&d, "f", &fd, &e) == MB_OK && fd >= 0);
    if (fd >= 0) close(fd);
    CHECK(mb_tdir_open_file(&d, "absent", &fd, &e) == 1);
    chmod(f, 0622);
    CHECK(mb_tdir_open_file(&d, "f", &fd, &e) == MB_EINPUT && strstr(e.msg, "chmod 600"));
    snprintf(f, sizeof f, "%s/l", a);
    CHECK(symlink("f", f) == 0);
    CHECK(mb_tdir_open_file(&d, "l", &fd, &e) == MB_EINPUT && strstr(e.msg, "a symbolic link"));
    /* written whole, the link replaced; locked: a second holder waits, then fails */
    CHECK(mb_tdir_write_file(&d, "l", "new\n", 4, &e) == MB_OK);
    CHECK(lstat(f, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
    CHECK(mb_tdir_lock(&d, 0, &e) == MB_OK);
    mb_tdir d2;
    CHECK(mb_tdir_open(&d2, a, 0, &e) == MB_OK);
    CHECK(mb_tdir_lock(&d2, 0.1, &e) == MB_ERUN && strstr(e.msg, "held by another membound run"));
    mb_tdir_close(&d);
    CHECK(mb_tdir_lock(&d2, 0, &e) == MB_OK);
    mb_tdir_close(&d2);
    if (!other) return 77;
    /* another user's folder, on the way or the folder itself, and their link */
    path_in(b, sizeof b, "theirs");
    char sub[600];
    snprintf(sub, sizeof sub, "%s/sub", b);
    plant p = {{b, sub}, 0755, NULL, NULL, NULL, 0};
    if (!as_other(&p)) return 1;
    CHECK(mb_tdir_open(&d, b, 0, &e) == MB_EINPUT && strstr(e.msg, "owned by uid") && strstr(e.msg, "chown 0"));
    CHECK(mb_tdir_open(&d, sub, 0, &e) == MB_EINPUT && strstr(e.msg, "on its way is owned by uid"));
    snprintf(link, sizeof link, "%s/theirlink", tmp);
    CHECK(symlink(a, link) == 0 && lchown(link, other, other) == 0);
    CHECK(mb_tdir_open(&d, link, 0, &e) == MB_EINPUT && strstr(e.msg, "symbolic link owned by uid"));
    return 0;
}

/* ---- jit_cache -------------------------------------------------------------------- */

static const char jit_expr[] = "y = sin(x)**2 + cos(x)**2";
static char warned[2048];

static void catch_warning(const char *line)
{
    snprintf(warned, sizeof warned, "%s", line);
}

/* Runs jit_expr fused, checked against the reference; the kernels that ran
 * compiled. */
static int run_fused(void)
{
    mb_err err;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_kern_tensors t;
    int compiled = 0;
    if (mb_parse_expr(jit_expr, MB_F32, &g, &err) || mb_plan_build(g, MB_PLAN_FUSED, &p, &err) ||
        mb_kern_tensors_alloc(p, 3 * MB_KERN_TILE + 77, 0, &t, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        CHECK(0);
        return 0;
    }
    mb_kern_eval_info info;
    CHECK(mb_kern_kernel_info(&t, 0, &info, &err) == MB_OK);
    compiled = info.compiled;
    CHECK(mb_kern_run_plan(&t, MB_KERN_EXEC_AUTO, &err) == MB_OK);
    mb_kern_check ck;
    CHECK(mb_kern_verify(&t, 0, 0, &ck, &err) == MB_OK && ck.passed);
    mb_kern_tensors_free(&t);
    mb_plan_free(p);
    mb_graph_free(g);
    return compiled;
}

/* The JIT in folder dir (NULL: from $XDG_CACHE_HOME / $HOME) runs jit_expr:
 * expects it compiled, not loaded, and a warning holding want. */
static void expect_recompiled(const char *dir, const char *want)
{
    warned[0] = '\0';
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, dir); /* another folder: forgets what is loaded */
    CHECK_EQ_I64(run_fused(), 1);
    mb_kern_jit_stats st;
    mb_kern_jit_get_stats(&st);
    CHECK_EQ_I64(st.loaded, 0);
    CHECK_EQ_I64(st.compiled, 1);
    CHECK(strstr(warned, want) != NULL);
    if (!strstr(warned, want)) fprintf(stderr, "  warning \"%s\" lacks \"%s\"\n", warned, want);
}

static int case_jit_cache(void)
{
    if (strncmp(mb_kern_vector_isa(), "sleef-", 6) != 0) {
        printf("built without a SLEEF vector ISA: nothing is compiled\n");
        return 77;
    }
    if (!other) {
        printf("not root: cannot become another user to plant a compiled kernel\n");
        return 77;
    }
    /* our own build of the kernel: its name and bytes, as another user's run makes them */
    char mine[512], so[600], name[128] = "";
    path_in(mine, sizeof mine, "mine");
    mb_kern_jit_set_warn(catch_warning);
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, mine);
    CHECK_EQ_I64(run_fused(), 1);
    DIR *dp = opendir(mine);
    for (struct dirent *de; dp && (de = readdir(dp));)
        if (de->d_name[0] == 'k' && strstr(de->d_name, ".so")) snprintf(name, sizeof name, "%s", de->d_name);
    if (dp) closedir(dp);
    CHECK(name[0] != '\0');
    snprintf(so, sizeof so, "%s/%s", mine, name);
    static char bytes[1 << 22];
    FILE *f = fopen(so, "rb");
    size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
    if (f) fclose(f);
    CHECK(n > 0 && n < sizeof bytes);

    /* 1. a folder of theirs given as the cache ($XDG_CACHE_HOME at a shared folder) */
    char shared[512], file[700];
    path_in(shared, sizeof shared, "shared");
    snprintf(file, sizeof file, "%s/%s", shared, name);
    plant p1 = {{shared}, 0755, file, NULL, bytes, n};
    if (!as_other(&p1)) return 1;
    expect_recompiled(shared, "not used: owned by uid");

    /* 2. $HOME at their home (sudo -E), no $XDG_CACHE_HOME */
    char home[512], c1[600], c2[600], c3[600];
    path_in(home, sizeof home, "home");
    snprintf(c1, sizeof c1, "%s/.cache", home);
    snprintf(c2, sizeof c2, "%s/.cache/membound", home);
    snprintf(c3, sizeof c3, "%s/.cache/membound/jit", home);
    snprintf(file, sizeof file, "%s/%s", c3, name);
    plant p2 = {{home, c1, c2, c3}, 0755, file, NULL, bytes, n};
    if (!as_other(&p2)) return 1;
    mb_kern_jit_set_env(NULL, home); /* as if $XDG_CACHE_HOME unset, $HOME theirs */
    expect_recompiled(NULL, "on its way is owned by uid");

    /* 3. our own folder, their object in it */
    char own[512];
    path_in(own, sizeof own, "own-jit");
    CHECK(mkdir(own, 0700) == 0);
    snprintf(file, sizeof file, "%s/%s", own, name);
    FILE *w = fopen(file, "wb");
    if (w) fwrite(bytes, 1, n, w), fclose(w);
    CHECK(chown(file, other, other) == 0 && chmod(file, 0755) == 0);
    expect_recompiled(own, "not used: owned by uid");
    struct stat st;
    CHECK(lstat(file, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 077) == 0); /* replaced */

    /* 4. our own folder, a link in it */
    char linked[512];
    path_in(linked, sizeof linked, "linked-jit");
    CHECK(mkdir(linked, 0700) == 0);
    snprintf(file, sizeof file, "%s/%s", linked, name);
    CHECK(symlink(so, file) == 0);
    expect_recompiled(linked, "a symbolic link");
    CHECK(lstat(file, &st) == 0 && S_ISREG(st.st_mode));

    /* our own cache, untouched: loaded, not compiled, nothing said */
    warned[0] = '\0';
    mb_kern_jit_configure(MB_KERN_JIT_AUTO, NULL, mine);
    CHECK_EQ_I64(run_fused(), 1);
    mb_kern_jit_stats js;
    mb_kern_jit_get_stats(&js);
    CHECK_EQ_I64(js.loaded, 1);
    CHECK(warned[0] == '\0');
    mb_kern_jit_configure(MB_KERN_JIT_OFF, NULL, NULL);
    return 0;
}

/* ---- calib_cache ------------------------------------------------------------------ */

/* The cache file's name for this host with one thread. */
static void cache_name(char *name, size_t size)
{
    char probe[512], path[1024];
    mb_err e;
    path_in(probe, sizeof probe, "probe-cache");
    CHECK(mb_cal_cache_locate(probe, NULL, NULL, 1, path, sizeof path, NULL, 0, &e) == MB_OK);
    snprintf(name, size, "%s", strrchr(path, '/') + 1);
}

static int case_calib_cache(void)
{
    if (!other) {
        printf("not root: cannot become another user to plant a calibration\n");
        return 77;
    }
    mb_kern_set_threads(1);
    char name[128], theirs[512], forged[700], path[1024], note[1200];
    cache_name(name, sizeof name);
    char *forgery = spec_text("forged-cpu", 0.125); /* 100x slower than any host */
    mb_err e;
    mb_device d;
    double age;

    /* their folder, mode 777, a forged calibration in it */
    path_in(theirs, sizeof theirs, "membound-cache-0");
    snprintf(forged, sizeof forged, "%s/%s", theirs, name);
    plant p = {{theirs}, 0777, forged, forgery, NULL, 0};
    if (!as_other(&p)) return 1;
    CHECK(mb_cal_cache_load(forged, &d, &age, &e) == MB_EINPUT);
    /* passed over for the next candidate (here in this case's folder, never
     * the host's /tmp/membound-cache-UID), with one line */
    char xdg[512];
    path_in(xdg, sizeof xdg, "xdg");
    CHECK(mb_cal_cache_locate(theirs, xdg, NULL, 1, path, sizeof path, note, sizeof note, &e) == MB_OK);
    CHECK(strstr(path, "/xdg/membound/") && strstr(note, "using"));
    CHECK(strstr(note, "calibration cache") && strstr(note, "not used: owned by uid") && strstr(note, "chown 0"));

    /* our folder: their file in it, a file others can write, the folder shared by a group */
    char own[512], file[700];
    path_in(own, sizeof own, "own-cache");
    CHECK(mkdir(own, 0700) == 0);
    snprintf(file, sizeof file, "%s/%s", own, name);
    CHECK(put(file, forgery, 0644) == 0 && chown(file, other, other) == 0);
    CHECK(mb_cal_cache_load(file, &d, &age, &e) == MB_EINPUT && strstr(e.msg, "owned by uid"));
    CHECK(chown(file, 0, 0) == 0 && chmod(file, 0666) == 0);
    CHECK(mb_cal_cache_load(file, &d, &age, &e) == MB_EINPUT && strstr(e.msg, "writable by others"));
    CHECK(chmod(file, 0600) == 0);
    CHECK(mb_cal_cache_load(file, &d, &age, &e) == MB_OK && !strcmp(d.name, "forged-cpu")); /* ours */
    CHECK(chmod(own, 0770) == 0);
    CHECK(mb_cal_cache_load(file, &d, &age, &e) == MB_EINPUT && strstr(e.msg, "its group"));
    CHECK(mb_cal_cache_locate(own, xdg, NULL, 1, path, sizeof path, note, sizeof note, &e) == MB_OK);
    CHECK(strstr(note, "writable by its group (chmod 700") != NULL);
    free(forgery);

    /* calibrate --cached -q: says why under -q, does not copy the forgery,
     * takes the next candidate, $HOME's (in this case's folder), where our own
     * calibration is cached: what is tested is the folder passed over, not a
     * calibration (a full one took 40 s of CPU, 2 min on a busy 2-vCPU host;
     * concurrent_calibration and measure_spec calibrate) */
    if (!have_bin()) return 0;
    char env_dir[600], env_home[600], err[512], out[512], home[512], seeded[1200];
    snprintf(env_dir, sizeof env_dir, "MEMBOUND_CACHE_DIR=%s", theirs);
    snprintf(env_home, sizeof env_home, "HOME=%s/home-mine", tmp);
    path_in(home, sizeof home, "home-mine");
    snprintf(seeded, sizeof seeded, "%s/.cache", home);
    CHECK(mkdir(home, 0700) == 0 && mkdir(seeded, 0700) == 0);
    snprintf(seeded, sizeof seeded, "%s/.cache/membound", home);
    CHECK(mkdir(seeded, 0700) == 0);
    snprintf(seeded, sizeof seeded, "%s/.cache/membound/%s", home, name);
    fake_device(&d, "seeded-cpu", 10);
    CHECK(mb_cal_cache_save(seeded, &d, NULL, 0, &e) == MB_OK);
    path_in(err, sizeof err, "calibrate.err");
    path_in(out, sizeof out, "x.ini");
    const char *env[] = {env_dir, "XDG_CACHE_HOME=", env_home, NULL};
    const char *args[] = {"calibrate", "--cached", "-q", "--threads", "1", "-o", out, NULL};
    int rc = run(tmp, env, err, args);
    char *msg = slurp(err);
    CHECK(rc == 0 || rc == 1); /* 1: this calibration's figures refused on a busy host */
    if (rc) fprintf(stderr, "  calibrate said: %s", msg);
    CHECK(strstr(msg, "membound: warning: calibration cache") && strstr(msg, "owned by uid"));
    CHECK(strstr(slurp(out), "forged-cpu") == NULL);
    CHECK(rc != 0 || strstr(slurp(out), "[device]") != NULL);
    CHECK(rc == 0 && strstr(slurp(out), "\nname = seeded-cpu\n") != NULL); /* the next folder's */
    return 0;
}

/* ---- cache_link ------------------------------------------------------------------- */

static int case_cache_link(void)
{
    mb_kern_set_threads(1);
    char own[512], priv[512], victim[600], path[1024];
    mb_err e;
    path_in(own, sizeof own, "cache");
    path_in(priv, sizeof priv, "private");
    CHECK(mkdir(priv, 0700) == 0);
    snprintf(victim, sizeof victim, "%s/victim", priv);
    CHECK(put(victim, "precious\n", 0600) == 0);
    CHECK(mb_cal_cache_locate(own, NULL, NULL, 1, path, sizeof path, NULL, 0, &e) == MB_OK);
    CHECK(symlink(victim, path) == 0);
    mb_device d, back;
    double age;
    CHECK(mb_cal_cache_load(path, &back, &age, &e) == MB_EINPUT && strstr(e.msg, "a symbolic link"));
    fake_device(&d, "local-cpu", 12.5);
    char moved[512];
    CHECK(mb_cal_cache_save(path, &d, moved, sizeof moved, &e) == MB_OK);
    CHECK(!strcmp(slurp(victim), "precious\n")); /* not written through */
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
    CHECK(mb_cal_cache_load(path, &back, &age, &e) == MB_OK && back.measured_bandwidth_gbs == 12.5);
    return 0;
}

/* ---- local_spec ------------------------------------------------------------------- */

/* Runs a small measure in cwd with a cached calibration (no calibrating);
 * returns its exit code, stderr in tmp/measure.err, the CSV in tmp/out.csv. */
static int measure_in(const char *cwd)
{
    char env_dir[600], err[512], out[512];
    snprintf(env_dir, sizeof env_dir, "MEMBOUND_CACHE_DIR=%s/cache", tmp);
    path_in(err, sizeof err, "measure.err");
    path_in(out, sizeof out, "out.csv");
    const char *env[] = {env_dir, NULL};
    const char *args[] = {"measure", "--backend", "cpu", "--threads", "1", "--sizes", "2^12", "--timeout", "0.2",
                          "--plan", "eager", "-q", "-o", out, "copy", NULL};
    return run(cwd, env, err, args);
}

static int case_local_spec(void)
{
    if (!other) {
        printf("not root: cannot become another user to plant ./local-cpu.ini\n");
        return 77;
    }
    if (!have_bin()) return 77;
    /* this host's cached calibration, so that measure does not calibrate */
    mb_kern_set_threads(1);
    char cache[512], path[1024], out[512], err[512];
    mb_err e;
    mb_device d;
    path_in(cache, sizeof cache, "cache");
    path_in(out, sizeof out, "out.csv");
    path_in(err, sizeof err, "measure.err");
    CHECK(mb_cal_cache_locate(cache, NULL, NULL, 1, path, sizeof path, NULL, 0, &e) == MB_OK);
    fake_device(&d, "cached-cpu", 12.5);
    CHECK(mb_cal_cache_save(path, &d, NULL, 0, &e) == MB_OK);
    char *forgery = spec_text("forged-cpu", 0.125);

    /* a world-writable working folder, their ./local-cpu.ini */
    char work[512], spec[600];
    path_in(work, sizeof work, "work");
    CHECK(mkdir(work, 0777) == 0 && chmod(work, 0777) == 0);
    snprintf(spec, sizeof spec, "%s/local-cpu.ini", work);
    plant p = {{NULL}, 0, spec, forgery, NULL, 0};
    if (!as_other(&p)) return 1;
    CHECK_EQ_I64(measure_in(work), 0);
    CHECK(strstr(slurp(err), "warning: ./local-cpu.ini not used") && strstr(slurp(err), "writable by others"));
    CHECK(strstr(slurp(out), "forged-cpu") == NULL && strstr(slurp(out), "cached-cpu") != NULL);

    /* our own folder, their file */
    char own[512];
    path_in(own, sizeof own, "own");
    CHECK(mkdir(own, 0700) == 0);
    snprintf(spec, sizeof spec, "%s/local-cpu.ini", own);
    CHECK(put(spec, forgery, 0644) == 0 && chown(spec, other, other) == 0);
    CHECK_EQ_I64(measure_in(own), 0);
    CHECK(strstr(slurp(err), "warning: ./local-cpu.ini not used") && strstr(slurp(err), "owned by uid"));
    CHECK(strstr(slurp(out), "forged-cpu") == NULL);

    /* ours: used, nothing said about it (a busy host may warn of contention) */
    CHECK(chown(spec, 0, 0) == 0);
    CHECK_EQ_I64(measure_in(own), 0);
    CHECK(strstr(slurp(err), "not used") == NULL);
    CHECK(strstr(slurp(out), "forged-cpu") != NULL);
    free(forgery);
    return 0;
}

/* ---- csv_device ------------------------------------------------------------------- */

/* Cuts line after its first ncols fields (commas in quotes kept), ending it
 * with a newline; ncols < 0: as it is. */
static void cut_fields(char *line, int ncols)
{
    int inq = 0, seen = 0;
    for (char *c = line; ncols >= 0 && *c; c++) {
        if (*c == '"') inq = !inq;
        else if (*c == ',' && !inq && ++seen == ncols) { c[0] = '\n'; c[1] = '\0'; return; }
    }
}

/* Writes to dst the CSV src with every data row's device (the first field)
 * set to device, its embedded spec and model device left out: the text
 * columns (MB_MEAS_CSV_TEXT_COLUMNS, the last ones, device_spec and
 * provenance among them), or the '#' lines of a CSV written before them. */
static void with_device(const char *src, const char *dst, const char *device)
{
    FILE *in = fopen(src, "r"), *out = fopen(dst, "w");
    char line[1 << 14];
    int header = 0, ncols = -1;
    while (in && out && fgets(line, sizeof line, in)) {
        if (!strncmp(line, "# device_spec", 13) || !strncmp(line, "# model_device", 14)) continue;
        if (line[0] == '#') {
            fputs(line, out);
            continue;
        }
        if (!header++) {
            const char *t = strstr(line, "," MB_MEAS_PROV_VARIANT ",");
            if (t) {
                ncols = 1;
                for (const char *c = line; c < t; c++) ncols += *c == ',';
            }
            cut_fields(line, ncols);
            fputs(line, out);
            continue;
        }
        cut_fields(line, ncols);
        const char *rest = line;
        if (*rest == '"') rest = strchr(rest + 1, '"') + 1;
        rest = strchr(rest, ',');
        fprintf(out, "%s%s", device, rest ? rest : "\n");
    }
    if (in) fclose(in);
    if (out) fclose(out);
}

static int case_csv_device(void)
{
    if (!have_bin()) return 77;
    char m[512], err[512], csv[512], rep[512], notspec[512];
    path_in(m, sizeof m, "m.csv");
    path_in(err, sizeof err, "err.txt");
    path_in(csv, sizeof csv, "d.csv");
    path_in(rep, sizeof rep, "rep");
    path_in(notspec, sizeof notspec, "notspec.txt");
    const char *meas[] = {"measure", "--backend", "cpu", "--device", "h100-sxm", "--threads", "1", "--sizes",
                          "2^12", "--timeout", "0.2", "--plan", "eager", "-q", "-o", m, "copy", NULL};
    CHECK_EQ_I64(run(tmp, NULL, err, meas), 0);
    CHECK(put(notspec, "topsecret:abc:19000:0:99999:7:::\nroot:x:0\n", 0600) == 0);
    const char *devices[] = {notspec, "/etc/shadow"};
    for (int i = 0; i < 2; i++) {
        if (access(devices[i], R_OK) != 0) continue;
        with_device(m, csv, devices[i]);
        const char *rpt[] = {"report", "--no-figures", "-o", rep, csv, NULL};
        CHECK_EQ_I64(run(tmp, NULL, err, rpt), 2);
        char *msg = slurp(err);
        CHECK(strstr(msg, "not a device spec (no [device] section)") != NULL);
        CHECK(strstr(msg, "topsecret") == NULL && strstr(msg, "'root'") == NULL && strstr(msg, "root:") == NULL);
        if (!strstr(msg, "not a device spec")) fprintf(stderr, "  said: %s", msg);
    }
    return 0;
}

/* ---- outputs ---------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int case_outputs(void)
{
    if (!have_bin()) return 77;
    char work[512], err[512], csv[600], mb[600];
    path_in(work, sizeof work, "work");
    CHECK(mkdir(work, 0700) == 0);
    path_in(err, sizeof err, "err.txt");
    snprintf(csv, sizeof csv, "%s/summary.csv", work);
    snprintf(mb, sizeof mb, "%s/v.mb", work);
    const char *meas[] = {"measure", "--backend", "cpu", "--device", "h100-sxm", "--threads", "1", "--sizes",
                          "2^12", "--timeout", "0.2", "--plan", "eager", "-q", "-o", "summary.csv", "copy", NULL};
    CHECK_EQ_I64(run(work, NULL, err, meas), 0);
    char before[1 << 14];
    snprintf(before, sizeof before, "%s", slurp(csv));

    /* report -o . summary.csv: the measurement would become the report's summary */
    const char *rpt[] = {"report", "--no-figures", "-o", ".", "summary.csv", NULL};
    CHECK_EQ_I64(run(work, NULL, err, rpt), 2);
    CHECK(strstr(slurp(err), "is also the input summary.csv") != NULL);
    CHECK(!strcmp(slurp(csv), before));

    /* measure v.mb -o v.mb; -o a.csv --per-kernel a.csv (refused before measuring) */
    CHECK(put(mb, "name v\ny = sin(x)\n", 0644) == 0);
    const char *same_mb[] = {"measure", "--device", "h100-sxm", "--sizes", "2^12", "-o", "v.mb", "v.mb", NULL};
    CHECK_EQ_I64(run(work, NULL, err, same_mb), 2);
    CHECK(strstr(slurp(err), "is also the input v.mb") && !strcmp(slurp(mb), "name v\ny = sin(x)\n"));
    double t0 = now_s();
    const char *twice[] = {"measure", "--device", "h100-sxm", "--sizes", "2^12..2^20", "-o", "a.csv",
                           "--per-kernel", "./a.csv", "copy", NULL};
    CHECK_EQ_I64(run(work, NULL, err, twice), 2);
    CHECK(now_s() - t0 < 5);
    CHECK(strstr(slurp(err), "written twice") != NULL);
    char a_csv[600];
    snprintf(a_csv, sizeof a_csv, "%s/a.csv", work);
    CHECK(access(a_csv, F_OK) != 0);

    /* two runs writing one -o, each opened before the other ends: the first
     * to finish writes it, the second fails */
    char err2[512];
    path_in(err2, sizeof err2, "err2.txt");
    const char *both[] = {"measure", "--backend", "cpu", "--device", "h100-sxm", "--threads", "1", "--sizes",
                          "2^12..2^16", "--timeout", "0.3", "-q", "-o", "same.csv", "copy", NULL};
    pid_t a = start(work, NULL, err, both);
    struct timespec gap = {0, 300 * 1000 * 1000}; /* b opens it long before a ends (>= 5 x 0.3 s) */
    nanosleep(&gap, NULL);
    pid_t b = start(work, NULL, err2, both);
    int ra = finish(a), rb = finish(b);
    CHECK((ra == 0 && rb == 1) || (ra == 1 && rb == 0)); /* either may finish first */
    CHECK(strstr(slurp(ra ? err : err2), "written by another run while this one ran") != NULL);
    return 0;
}

/* ---- concurrent_calibration ------------------------------------------------------- */

static int case_concurrent_calibration(void)
{
    if (!have_bin()) return 77;
    char env_dir[600], e1[512], e2[512], o1[512], o2[512];
    snprintf(env_dir, sizeof env_dir, "MEMBOUND_CACHE_DIR=%s/fresh-cache", tmp);
    path_in(e1, sizeof e1, "e1.txt");
    path_in(e2, sizeof e2, "e2.txt");
    path_in(o1, sizeof o1, "o1.csv");
    path_in(o2, sizeof o2, "o2.csv");
    const char *env[] = {env_dir, NULL};
    const char *a1[] = {"measure", "--backend", "cpu", "--threads", "1", "--sizes", "2^12", "--timeout", "0.2",
                        "--plan", "eager", "-o", o1, "copy", NULL};
    const char *a2[] = {"measure", "--backend", "cpu", "--threads", "1", "--sizes", "2^12", "--timeout", "0.2",
                        "--plan", "eager", "-o", o2, "copy", NULL};
    pid_t p1 = start(tmp, env, e1, a1);
    struct timespec gap = {0, 200 * 1000 * 1000};
    nanosleep(&gap, NULL);
    pid_t p2 = start(tmp, env, e2, a2);
    int rc1 = finish(p1), rc2 = finish(p2);
    char m1[1 << 14];
    snprintf(m1, sizeof m1, "%s", slurp(e1));
    char *m2 = slurp(e2);
    /* the second waited for the first instead of calibrating beside it */
    CHECK(strstr(m2, "waiting for another membound run calibrating this host") != NULL);
    if ((rc1 != 0 && strstr(m1, "calibration refused")) || strstr(m1, "falling back to a quick calibration")) {
        /* the host was too busy for the first calibration (other processes),
         * or for its full one (a quick fallback, not cached): the second then
         * calibrated alone, after it */
        printf("the first calibration was refused on a busy host: %s", m1);
        return 0;
    }
    CHECK_EQ_I64(rc1, 0);
    CHECK_EQ_I64(rc2, 0);
    CHECK(strstr(m1, "calibration cached as") != NULL);
    CHECK(strstr(m2, "calibration: full, this host's cached calibration ") != NULL); /* the one line */
    CHECK(strstr(m2, "calibrating this CPU first") == NULL);
    return 0;
}

/* ---- main ------------------------------------------------------------------------- */

static const struct {
    const char *name;
    int (*fn)(void);
} cases[] = {
    {"folder_rule", case_folder_rule},     {"jit_cache", case_jit_cache},
    {"calib_cache", case_calib_cache},     {"cache_link", case_cache_link},
    {"local_spec", case_local_spec},       {"csv_device", case_csv_device},
    {"outputs", case_outputs},             {"concurrent_calibration", case_concurrent_calibration},
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: trust CASE\n");
        return 2;
    }
    other = geteuid() == 0 ? mb_test_other_uid() : 0;
    snprintf(tmp, sizeof tmp, "/tmp/mb_trust_XXXXXX");
    if (!mkdtemp(tmp) || chmod(tmp, 01777) != 0) return 1;
    int rc = 2;
    mb_kern_jit_set_env(getenv("XDG_CACHE_HOME"), getenv("HOME")); /* as the CLI does */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!strcmp(argv[1], cases[i].name)) rc = cases[i].fn();
    if (rc == 2) fprintf(stderr, "unknown case '%s'\n", argv[1]);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    if (rc == 77) return mb_test_skip(); /* no other user, no binary: the checks before it */
    int done = mb_test_done();
    if (done || rc == 1) return 1;
    return rc;
}
