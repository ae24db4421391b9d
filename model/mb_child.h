/* mb_child.h — the one way membound runs a child process (the JIT's C
 * compiler, gnuplot, demo's own subcommands): its own process group, a
 * deadline, killed with its group on timeout or when we are interrupted,
 * its temporaries removed whatever happens; and the process-wide pending
 * interrupt that long loops poll. libc only. Does not choose what to run or
 * what a failure means: its callers do. */
#ifndef MEMBOUND_CHILD_H
#define MEMBOUND_CHILD_H

#include "membound_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- pending interrupts ----------------------------------------------- */

/* Records sig as pending (the first one is kept) and sends it to the group
 * of the child being run, if any (SIGPIPE as SIGTERM). Async-signal-safe:
 * for signal handlers (cmd_measure's stop handler, outfile's cleanup). */
void mb_intr_note(int sig);
/* The pending signal, 0 when none. One volatile read: cheap enough for a
 * loop to call every few milliseconds of work (a chunk of 2^20 elements). */
int mb_intr_pending(void);
/* Forgets a pending signal (a command that handled it and goes on). */
void mb_intr_clear(void);

/* ---- running a child --------------------------------------------------- */

#define MB_CHILD_MAX_TEMPS 4

typedef enum mb_child_outcome {
    MB_CHILD_EXITED,       /* it exited: status holds the exit code */
    MB_CHILD_SIGNALED,     /* a signal not sent by us ended it: status holds it */
    MB_CHILD_TIMED_OUT,    /* past its deadline: its group was killed */
    MB_CHILD_INTERRUPTED,  /* we were interrupted (mb_intr_pending): its group was killed */
    MB_CHILD_NOT_STARTED   /* it could not be started: status holds the errno */
} mb_child_outcome;

typedef struct mb_child_spec {
    char *const *argv;     /* argv[0]: the program, a path or a name looked up on $PATH */
    const char *stdin_path;/* NULL: /dev/null */
    const char *stdout_path;/* NULL: /dev/null; "" inherits ours */
    const char *stderr_path;/* NULL: /dev/null; "" inherits ours; "=": stdout's */
    double timeout_s;      /* wall seconds from the start; <= 0: no deadline */
    const char *temps[MB_CHILD_MAX_TEMPS]; /* what it writes, removed when it is killed
                              (timeout, interrupt), does not start, or a signal ends us while
                              it runs; after it exits by itself they are the caller's. NULL
                              ends the list */
} mb_child_spec;

typedef struct mb_child_result {
    mb_child_outcome outcome;
    int status;            /* exit code, signal or errno, as outcome says */
    double wall_s;
} mb_child_result;

/* Runs spec's program in a new process group with the default signal
 * dispositions and an empty mask, and waits for it. At the deadline, or
 * when an interrupt is pending (checked every few ms, and woken at once by
 * mb_intr_note), the group gets SIGTERM, then SIGKILL 0.5 s later, and is
 * reaped, and spec->temps are removed. One child at a time
 * (a second concurrent call is MB_ERUN). Returns MB_OK with res filled for
 * every outcome (a non-zero exit, a timeout and not starting included);
 * MB_ERUN only when the wait itself fails. */
int mb_child_run(const mb_child_spec *spec, mb_child_result *res, mb_err *err);
/* A clause for messages: "exit status 2", "killed by signal 9", "timed out
 * after 60 s", "interrupted", "could not start: No such file or directory".
 * Into buf; returns buf. */
const char *mb_child_describe(const mb_child_result *res, double timeout_s, char *buf, size_t size);
/* Async-signal-safe, for a handler that ends the process (outfile's
 * cleanup): sends sig (SIGPIPE as SIGTERM) and SIGCONT to the running
 * child's group and removes its temporaries. */
void mb_child_kill_on_signal(int sig);

#ifdef __cplusplus
}
#endif
#endif
