/* child.c — mb_child_run: a child process in its own group, with a
 * deadline, killed with its group on timeout or on our interrupt, its
 * temporaries removed; and the pending interrupt (mb_intr_*). Why a group:
 * a compiler or gnuplot run through a shell script leaves grandchildren
 * (cc1, as, a `sleep` in a stand-in) that a kill of the leader alone would
 * orphan. Does not read or interpret the child's output: callers do. */
#define _GNU_SOURCE
#include "mb_child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* SIGTERM's grace before SIGKILL: a compiler or gnuplot told to stop exits
 * in milliseconds; half a second keeps "interrupts act within a second". */
#define MB_CHILD_GRACE_S 0.5

static volatile sig_atomic_t pending_sig;
/* the child being run (its group), and its temporaries, for signal handlers */
static volatile pid_t live_pgid;
static char live_temps[MB_CHILD_MAX_TEMPS][4096];
static volatile sig_atomic_t n_live_temps;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL); /* a signal cuts it short: what we want */
}

void mb_intr_note(int sig)
{
    if (!pending_sig) pending_sig = sig;
    pid_t g = live_pgid;
    if (g > 0) kill(-g, sig == SIGPIPE ? SIGTERM : sig);
}

int mb_intr_pending(void)
{
    return pending_sig;
}

void mb_intr_clear(void)
{
    pending_sig = 0;
}

void mb_child_kill_on_signal(int sig)
{
    pid_t g = live_pgid;
    if (g > 0) {
        kill(-g, sig == SIGPIPE ? SIGTERM : sig);
        kill(-g, SIGCONT); /* a stopped group acts on it */
    }
    for (int i = 0; i < n_live_temps; i++) unlink(live_temps[i]);
}

/* Opens what one descriptor of the child gets. */
static int add_fd(posix_spawn_file_actions_t *fa, int fd, const char *path)
{
    if (path && !path[0]) return 0; /* inherited */
    if (path && !strcmp(path, "=")) return posix_spawn_file_actions_adddup2(fa, 1, fd);
    int flags = fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC;
    return posix_spawn_file_actions_addopen(fa, fd, path ? path : "/dev/null", flags, 0644);
}

static int start(const mb_child_spec *sp, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa)) return ENOMEM;
    if (posix_spawnattr_init(&at)) {
        posix_spawn_file_actions_destroy(&fa);
        return ENOMEM;
    }
    int rc = add_fd(&fa, 0, sp->stdin_path);
    if (!rc) rc = add_fd(&fa, 1, sp->stdout_path);
    if (!rc) rc = add_fd(&fa, 2, sp->stderr_path);
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    const int sigs[] = {SIGINT, SIGTERM, SIGQUIT, SIGPIPE, SIGCHLD, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&deflt, sigs[i]);
    if (!rc) rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                    POSIX_SPAWN_SETSIGDEF);
    if (!rc) rc = posix_spawnattr_setpgroup(&at, 0);
    if (!rc) rc = posix_spawnattr_setsigmask(&at, &none);
    if (!rc) rc = posix_spawnattr_setsigdefault(&at, &deflt);
    if (!rc) {
        const char *prog = sp->argv[0];
        rc = strchr(prog, '/') ? posix_spawn(pid, prog, &fa, &at, sp->argv, environ)
                               : posix_spawnp(pid, prog, &fa, &at, sp->argv, environ);
    }
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* 1 once pid has ended (not reaped: its group id cannot be reused yet). */
static int ended(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) return errno != EINTR;
    return si.si_pid == pid;
}

/* 1 when pid (ended, not reaped) was ended by a signal. */
static int killed(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) return 0;
    return si.si_pid == pid && (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED);
}

/* SIGTERM to the group, SIGKILL after the grace (to what is left of it:
 * grandchildren too, even when the leader went first). */
static void stop_group(pid_t pid)
{
    kill(-pid, SIGTERM);
    kill(-pid, SIGCONT);
    double t_end = now_s() + MB_CHILD_GRACE_S;
    while (!ended(pid) && now_s() < t_end) sleep_s(0.005);
    kill(-pid, SIGKILL);
}

static void set_live(const mb_child_spec *sp, pid_t pgid)
{
    n_live_temps = 0;
    for (int i = 0; pgid > 0 && i < MB_CHILD_MAX_TEMPS && sp->temps[i]; i++) {
        snprintf(live_temps[i], sizeof live_temps[i], "%s", sp->temps[i]);
        n_live_temps = i + 1;
    }
    live_pgid = pgid;
}

int mb_child_run(const mb_child_spec *sp, mb_child_result *res, mb_err *err)
{
    memset(res, 0, sizeof *res);
    if (live_pgid > 0) return mb_err_set(err, MB_ERUN, "%s: another child process is running", sp->argv[0]);
    const double t0 = now_s();
    pid_t pid = 0;
    /* the group is known to the handlers before the child can run: signals
     * are held over the spawn */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    int st = start(sp, &pid);
    if (!st) set_live(sp, pid);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (st) {
        res->outcome = MB_CHILD_NOT_STARTED;
        res->status = st;
        for (int i = 0; i < MB_CHILD_MAX_TEMPS && sp->temps[i]; i++) unlink(sp->temps[i]);
        return MB_OK;
    }
    mb_child_outcome why = MB_CHILD_EXITED;
    for (double nap = 0.001; !ended(pid); nap = nap < 0.02 ? nap * 2 : 0.02) {
        if (mb_intr_pending()) why = MB_CHILD_INTERRUPTED;
        else if (sp->timeout_s > 0 && now_s() - t0 >= sp->timeout_s) why = MB_CHILD_TIMED_OUT;
        if (why != MB_CHILD_EXITED) break;
        sleep_s(nap);
    }
    if (why == MB_CHILD_EXITED && mb_intr_pending() && killed(pid))
        why = MB_CHILD_INTERRUPTED; /* by the signal mb_intr_note passed on: ours */
    if (why != MB_CHILD_EXITED) stop_group(pid);
    int status = 0, rc = MB_OK;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno == EINTR) continue;
        rc = mb_err_set(err, MB_ERUN, "%s: waiting for it failed: %s", sp->argv[0], strerror(errno));
        break;
    }
    set_live(sp, 0);
    for (int i = 0; why != MB_CHILD_EXITED && i < MB_CHILD_MAX_TEMPS && sp->temps[i]; i++)
        unlink(sp->temps[i]);
    res->wall_s = now_s() - t0;
    res->outcome = why;
    if (why == MB_CHILD_EXITED && WIFSIGNALED(status)) {
        res->outcome = MB_CHILD_SIGNALED;
        res->status = WTERMSIG(status);
    } else if (why == MB_CHILD_EXITED) {
        res->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return rc;
}

const char *mb_child_describe(const mb_child_result *res, double timeout_s, char *buf, size_t size)
{
    switch (res->outcome) {
    case MB_CHILD_EXITED: snprintf(buf, size, "exit status %d", res->status); break;
    case MB_CHILD_SIGNALED: snprintf(buf, size, "killed by signal %d", res->status); break;
    case MB_CHILD_TIMED_OUT: snprintf(buf, size, "timed out after %g s (killed)", timeout_s); break;
    case MB_CHILD_INTERRUPTED: snprintf(buf, size, "interrupted (killed)"); break;
    case MB_CHILD_NOT_STARTED: snprintf(buf, size, "could not start: %s", strerror(res->status)); break;
    }
    return buf;
}
