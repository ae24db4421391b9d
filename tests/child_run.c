/* child_run.c — mb_child_run: exit codes and signals passed back; a child
 * past its deadline, or running when we are interrupted, killed with its
 * whole process group (a grandchild too) within a second, its temporaries
 * removed; a program that is not there reported, not waited for. */
#define _GNU_SOURCE
#include "mb_test.h"
#include "mb_child.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/membound-child-XXXXXX";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 1 when process pid is gone (or a zombie of someone else's). */
static int gone(pid_t pid)
{
    for (int i = 0; i < 100; i++) {
        char p[64], buf[512] = {0};
        snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(p, "r");
        if (!f) return 1;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *rp = strrchr(buf, ')');
        if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X')) return 1;
        usleep(10000);
    }
    return 0;
}

static pid_t read_pid(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = 0;
    if (f && fscanf(f, "%ld", &v) != 1) v = 0;
    if (f) fclose(f);
    return (pid_t)v;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A shell that writes a temporary, starts a grandchild sleeping 30 s and
 * waits for it: the stand-in for a compiler or gnuplot that hangs. */
static void hang_argv(char *cmd, size_t size, const char *pidfile, const char *tmpfile, char **argv)
{
    snprintf(cmd, size, "echo x > %s; sleep 30 & echo $! > %s; wait", tmpfile, pidfile);
    argv[0] = (char *)"sh";
    argv[1] = (char *)"-c";
    argv[2] = cmd;
    argv[3] = NULL;
}

static void *interrupt_later(void *arg)
{
    (void)arg;
    usleep(300000);
    mb_intr_note(SIGTERM);
    return NULL;
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    mb_err e;
    mb_child_result res;
    char pidfile[256], tmpfile[256], cmd[1024], *argv[4];
    snprintf(pidfile, sizeof pidfile, "%s/pid", dir);
    snprintf(tmpfile, sizeof tmpfile, "%s/partial.o", dir);

    /* exit codes, signals, output to a file */
    char out[256];
    snprintf(out, sizeof out, "%s/out", dir);
    char *a1[] = {(char *)"sh", (char *)"-c", (char *)"echo hello; exit 3", NULL};
    mb_child_spec s1 = {a1, NULL, out, NULL, 10, {NULL}};
    CHECK(mb_child_run(&s1, &res, &e) == MB_OK);
    CHECK(res.outcome == MB_CHILD_EXITED && res.status == 3);
    FILE *f = fopen(out, "r");
    char line[64] = "";
    CHECK(f && fgets(line, sizeof line, f) && !strcmp(line, "hello\n"));
    if (f) fclose(f);
    char *a2[] = {(char *)"sh", (char *)"-c", (char *)"kill -KILL $$", NULL};
    mb_child_spec s2 = {a2, NULL, NULL, NULL, 10, {NULL}};
    CHECK(mb_child_run(&s2, &res, &e) == MB_OK);
    CHECK(res.outcome == MB_CHILD_SIGNALED && res.status == SIGKILL);
    char *a3[] = {(char *)"/nonexistent/membound-cc", NULL};
    mb_child_spec s3 = {a3, NULL, NULL, NULL, 10, {tmpfile, NULL}};
    CHECK(mb_child_run(&s3, &res, &e) == MB_OK);
    CHECK(res.outcome == MB_CHILD_NOT_STARTED);
    char why[160];
    CHECK(strstr(mb_child_describe(&res, 10, why, sizeof why), "could not start") != NULL);

    /* past the deadline: the group dies (the grandchild too), the temporary goes */
    hang_argv(cmd, sizeof cmd, pidfile, tmpfile, argv);
    mb_child_spec s4 = {argv, NULL, NULL, NULL, 0.5, {tmpfile, NULL}};
    double t0 = now_s();
    CHECK(mb_child_run(&s4, &res, &e) == MB_OK);
    double took = now_s() - t0;
    CHECK(res.outcome == MB_CHILD_TIMED_OUT);
    CHECK(took >= 0.5 && took < 2.0);
    pid_t kid = read_pid(pidfile);
    CHECK(kid > 0 && gone(kid));
    CHECK(!exists(tmpfile));
    CHECK(strstr(mb_child_describe(&res, 0.5, why, sizeof why), "timed out after 0.5 s") != NULL);

    /* an interrupt (a signal handler's mb_intr_note) ends it within a second */
    unlink(pidfile);
    CHECK(mb_intr_pending() == 0);
    mb_child_spec s5 = {argv, NULL, NULL, NULL, 60, {tmpfile, NULL}};
    pthread_t th;
    pthread_create(&th, NULL, interrupt_later, NULL);
    t0 = now_s();
    CHECK(mb_child_run(&s5, &res, &e) == MB_OK);
    took = now_s() - t0;
    pthread_join(th, NULL);
    CHECK(res.outcome == MB_CHILD_INTERRUPTED);
    CHECK(took < 1.5);
    CHECK(mb_intr_pending() == SIGTERM);
    kid = read_pid(pidfile);
    CHECK(kid > 0 && gone(kid));
    CHECK(!exists(tmpfile));
    /* while one is pending, a new child is stopped at once */
    t0 = now_s();
    CHECK(mb_child_run(&s5, &res, &e) == MB_OK);
    CHECK(res.outcome == MB_CHILD_INTERRUPTED && now_s() - t0 < 1.5);
    mb_intr_clear();
    CHECK(mb_intr_pending() == 0);

    unlink(out);
    unlink(pidfile);
    rmdir(dir);
    fprintf(stderr, "%d passed, %d failed\n", mb_t_pass, mb_t_fail);
    return mb_t_fail ? 1 : 0;
}
