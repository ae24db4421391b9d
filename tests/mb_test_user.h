/* mb_test_user.h — another local user, for tests of files membound must not
 * trust: a child process becomes an unused uid (no passwd or group entry: no
 * user added, nothing changed on the host), plants files in the test's own
 * temporary folder and exits. Needs root; callers exit 77 elsewhere. Include
 * after defining _GNU_SOURCE (setgroups). */
#ifndef MB_TEST_USER_H
#define MB_TEST_USER_H
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The first uid from 54321 up with no passwd and no group entry; 0 when
 * none of the next thousand is free. */
static inline uid_t mb_test_other_uid(void)
{
    for (uid_t u = 54321; u < 54321 + 1000; u++)
        if (!getpwuid(u) && !getgrgid((gid_t)u)) return u;
    return 0;
}

/* Runs fn(ctx) in a child process as uid (and gid) uid, umask 022; 1 when
 * it returned 0, else 0. The parent must be root. */
static inline int mb_test_as_user(uid_t uid, int (*fn)(void *ctx), void *ctx)
{
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid(uid) != 0) _exit(126);
        umask(022);
        _exit(fn(ctx) == 0 ? 0 : 1);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
#endif
