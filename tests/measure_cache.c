/* measure_cache.c — the per-host calibration cache: where it lives (an
 * unwritable $HOME falls back with a note), keys that separate thread
 * counts, save and load, the lock one calibrating run holds, and the CLI:
 * `measure` uses a cached calibration and names the file, `--recalibrate`
 * calibrates anyway, `calibrate --cached` copies it. Every run sets its own
 * MEMBOUND_CACHE_DIR. */
#define _POSIX_C_SOURCE 200809L
#include "mb_test.h"
#include "kernels.h"
#include "calibrate.h"
#include "mb_test_calib.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[256];

static char *slurp(const char *path)
{
    static char buf[65536];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    return buf;
}

/* Runs $MB_BIN args in dir with stderr to dir/err.txt; stop_on (when not
 * NULL): SIGINT once stderr holds it (or after 60 s). Returns the wait status. */
static int run(const char *const *args, const char *stop_on)
{
    const char *bin = getenv("MB_BIN");
    char err_path[512];
    snprintf(err_path, sizeof err_path, "%s/err.txt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fo = open("/dev/null", O_WRONLY);
        if (fe < 0 || fo < 0 || chdir(dir) != 0) _exit(127);
        dup2(fo, 1);
        dup2(fe, 2);
        char *argv[32];
        int i = 0;
        argv[i++] = (char *)bin;
        for (; args[i - 1] && i < 31; i++) argv[i] = (char *)args[i - 1];
        argv[i] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    if (stop_on) {
        for (int t = 0; t < 600 && !strstr(slurp(err_path), stop_on); t++) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        kill(pid, SIGINT);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static void fake_device(mb_device *d)
{
    mb_cal_result c;
    mb_test_calib(&c, 12.5);
    c.copy_plain_gbs = 9.0;
    c.read_gbs = 11.0;
    c.write_gbs = 10.0;
    c.write_plain_gbs = 8.0;
    mb_cal_to_device(&c, "measure_cache test", d);
}

static char lock_notes[2048];

static void lock_note(void *ctx, const char *level, const char *msg)
{
    (void)ctx;
    size_t used = strlen(lock_notes);
    snprintf(lock_notes + used, sizeof lock_notes - used, "%s: %s\n", level, msg);
}

/* One run at a time calibrates this host: a second lock of the folder waits,
 * saying so once, and gives up at its deadline; free again once the first
 * is released (trust_concurrent_calibration: the same between two runs of
 * measure around a full calibration, in the normal build). */
static void lock(const char *path)
{
    mb_err e;
    mb_tdir held, waiter;
    CHECK(mb_cal_cache_lock(path, 0, NULL, NULL, &held, &e) == MB_OK);
    lock_notes[0] = '\0';
    CHECK(mb_cal_cache_lock(path, 0.1, lock_note, NULL, &waiter, &e) == MB_ERUN);
    CHECK(strstr(lock_notes, "note: waiting for another membound run calibrating this host (calibration cache ") &&
          strstr(lock_notes, ", up to 0 s)\n"));
    CHECK(strstr(lock_notes, "\nnote: ") == NULL); /* once */
    mb_tdir_close(&held);
    lock_notes[0] = '\0';
    CHECK(mb_cal_cache_lock(path, 0.1, lock_note, NULL, &waiter, &e) == MB_OK && lock_notes[0] == '\0');
    mb_tdir_close(&waiter);
}

static void library(void)
{
    mb_err e;
    char p1[1024], p2[1024], p3[1024], note[512];
    char sub[512];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    CHECK(mb_cal_cache_locate(sub, NULL, NULL, 1, p1, sizeof p1, note, sizeof note, &e) == MB_OK);
    CHECK(!strncmp(p1, sub, strlen(sub)) && strstr(p1, "/local-cpu-") && note[0] == '\0');
    struct stat sb;
    CHECK(stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)); /* created */
    CHECK(mb_cal_cache_locate(sub, NULL, NULL, 1, p2, sizeof p2, NULL, 0, &e) == MB_OK);
    CHECK(!strcmp(p1, p2)); /* the same host and threads: the same file */
    CHECK(mb_cal_cache_locate(sub, NULL, NULL, 2, p3, sizeof p3, NULL, 0, &e) == MB_OK);
    CHECK(strcmp(p1, p3) != 0); /* another thread count: another file */
    lock(p1);
    /* the probes' version is in the key: an older binary's calibration is another file */
    char key[256], want[32];
    mb_cal_cache_key(1, key, sizeof key);
    snprintf(want, sizeof want, "|probes=%d", MB_CAL_PROBES_VERSION);
    CHECK(strstr(key, want) != NULL && MB_CAL_PROBES_VERSION >= 2);
    /* XDG_CACHE_HOME, then HOME */
    char xdg[512];
    snprintf(xdg, sizeof xdg, "%s/xdg", dir);
    CHECK(mb_cal_cache_locate(NULL, xdg, "/nonexistent-home", 1, p2, sizeof p2, NULL, 0, &e) == MB_OK);
    CHECK(strstr(p2, "/xdg/membound/local-cpu-") != NULL);
    /* an unwritable HOME: /tmp, with a note naming what was passed over */
    if (access("/proc", W_OK) != 0) {
        CHECK(mb_cal_cache_locate(NULL, NULL, "/proc", 1, p2, sizeof p2, note, sizeof note, &e) == MB_OK);
        CHECK(!strncmp(p2, "/tmp/membound-cache-", 20));
        CHECK(strstr(note, "$HOME/.cache") != NULL);
    }
    /* save, load, age */
    mb_device d, back;
    double age = -1;
    CHECK(mb_cal_cache_load(p1, &back, &age, &e) == 1); /* nothing yet */
    fake_device(&d);
    char moved[512] = "x";
    CHECK(mb_cal_cache_save(p1, &d, moved, sizeof moved, &e) == MB_OK);
    CHECK(moved[0] == '\0'); /* nothing to compare with */
    CHECK(mb_cal_cache_load(p1, &back, &age, &e) == MB_OK);
    CHECK(age >= 0 && age < 60);
    CHECK_NEAR(back.measured_bandwidth_gbs, 12.5, 1e-9);
    CHECK_NEAR(back.op_geps[MB_OP_SIN], 1.0 + MB_OP_SIN, 1e-9);
    /* how far the host moved: within 20% nothing is listed; beyond, each
     * figure that moved, and the largest move either way */
    mb_device now = back;
    now.measured_bandwidth_gbs *= 1.1;
    CHECK_NEAR(mb_cal_moved(&back, &now, moved, sizeof moved), 0.1, 1e-9);
    CHECK(moved[0] == '\0');
    now.measured_bandwidth_gbs = 12.5 * 0.7;
    now.op_geps[MB_OP_SIGMOID] *= 1.5;
    now.op_geps[MB_OP_SIN] = 0; /* not measured: not compared */
    CHECK_NEAR(mb_cal_moved(&back, &now, moved, sizeof moved), 0.5, 1e-9);
    CHECK(strstr(moved, "copy bandwidth 8.75 GB/s (was 12.5, -30%)") != NULL);
    CHECK(strstr(moved, "sigmoid") && strstr(moved, "+50%)"));
    CHECK(strstr(moved, "sin ") == NULL && strstr(moved, "read") == NULL);
    /* replacing a cached calibration says how far the host moved since */
    CHECK(mb_cal_cache_save(p1, &now, moved, sizeof moved, &e) == MB_OK);
    CHECK(strstr(moved, "this host moved since its calibration of 0 min before: copy bandwidth") != NULL);
    CHECK(mb_cal_cache_save(p1, &now, moved, sizeof moved, &e) == MB_OK);
    CHECK(moved[0] == '\0');
    /* a file that is not a spec is an error, not a miss */
    FILE *f = fopen(p3, "w");
    if (f) fputs("garbage\n", f), fclose(f);
    CHECK(mb_cal_cache_load(p3, &back, &age, &e) != MB_OK && mb_cal_cache_load(p3, &back, &age, &e) != 1);
    unlink(p3);
}

static int exit_code(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : -1; }

static void cli(void)
{
    const char *bin = getenv("MB_BIN");
    if (!bin || access(bin, X_OK) != 0) return;
    char cdir[512], path[1024], err_path[512];
    snprintf(cdir, sizeof cdir, "%s/cli-cache", dir);
    snprintf(err_path, sizeof err_path, "%s/err.txt", dir);
    setenv("MEMBOUND_CACHE_DIR", cdir, 1);
    mb_err e;
    mb_kern_set_threads(1);
    CHECK(mb_cal_cache_locate(cdir, NULL, NULL, 1, path, sizeof path, NULL, 0, &e) == MB_OK);
    mb_device d;
    fake_device(&d);
    CHECK(mb_cal_cache_save(path, &d, NULL, 0, &e) == MB_OK);

    /* measure: the cached calibration, named, and no calibration */
    double t0 = mb_meas_now_s();
    const char *m[] = {"measure", "--backend", "cpu", "--threads", "1", "--sizes", "2^12",
                       "--timeout", "0.2", "--plan", "eager", "-o", "c.csv", "copy", NULL};
    CHECK_EQ_I64(exit_code(run(m, NULL)), 0);
    double took = mb_meas_now_s() - t0;
    char *err = slurp(err_path);
    CHECK(strstr(err, "cached calibration") && strstr(err, path));
    CHECK(strstr(err, "calibrating") == NULL);
    CHECK(took < 20);
    char csv[512];
    snprintf(csv, sizeof csv, "%s/c.csv", dir);
    CHECK(strstr(slurp(csv), "cached calibration") != NULL); /* in the provenance */
    unlink(csv);

    /* calibrate --cached: the same spec, no measuring */
    const char *c[] = {"calibrate", "--cached", "--threads", "1", "-o", "x.ini", NULL};
    CHECK_EQ_I64(exit_code(run(c, NULL)), 0);
    CHECK(strstr(slurp(err_path), "calibration: full, this host's cached calibration ") != NULL); /* the one line */
    char ini[512];
    snprintf(ini, sizeof ini, "%s/x.ini", dir);
    CHECK(strstr(slurp(ini), "measured_bandwidth_gbs = 12.5") != NULL);
    unlink(ini);

    /* --recalibrate: calibrates although the cache has one (stopped once it starts) */
    const char *r[] = {"measure", "--backend", "cpu", "--threads", "1", "--recalibrate",
                       "--sizes", "2^12", "copy", NULL};
    run(r, "calibrating");
    err = slurp(err_path);
    CHECK(strstr(err, "--recalibrate: calibrating") != NULL);
    CHECK(strstr(err, "from the cached calibration") == NULL);
    unlink(path);
    rmdir(cdir);
    unlink(err_path);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/mb_measure_cache_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    library();
    cli();
    char sub[600];
    const char *leftovers[] = {"a/b", "a", "xdg/membound", "xdg"};
    for (int i = 0; i < 4; i++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, leftovers[i]);
        if (i == 0 || i == 2) {
            char cmd[700];
            snprintf(cmd, sizeof cmd, "rm -f %s/*.ini", sub);
            if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
        }
        rmdir(sub);
    }
    rmdir(dir);
    return mb_test_done();
}
