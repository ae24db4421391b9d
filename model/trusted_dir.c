/* trusted_dir.c — folders and files nobody else can change (OpenSSH's
 * StrictModes): the rule every cache (JIT, calibration) and every implicit
 * input (./local-cpu.ini) goes through. A folder is walked from / one
 * component at a time, each opened relative to the last with
 * O_DIRECTORY|O_NOFOLLOW and checked with fstat on that descriptor: every
 * folder on the way is root's or this user's and writable by nobody else
 * unless sticky (/tmp); the folder itself is this user's and writable by
 * nobody else (a folder shared by a group is refused on purpose). A symbolic
 * link on the way is followed only when root or this user owns it. Files are
 * opened relative to the folder with O_NOFOLLOW and checked on the open
 * descriptor (this user's regular file, writable by nobody else), so no path
 * is checked first and opened later. Does not decide what a refusal means:
 * callers fall back (no cache, recompile, measure again). */
#define _GNU_SOURCE
#include "membound_model.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Symbolic links followed in one walk before it is refused (the kernel's
 * own limit, MAXSYMLINKS). */
#define MB_TDIR_MAX_LINKS 40

/* A folder on the way to the one asked for (cur): root's or ours, and
 * writable by group or others only when sticky (they cannot rename or remove
 * our entries there). MB_OK or MB_EINPUT: "PATH not used: ...". */
static int check_ancestor(const struct stat *st, const char *path, const char *cur, mb_err *err)
{
    if (st->st_uid != geteuid() && st->st_uid != 0)
        return mb_err_set(err, MB_EINPUT, "%s not used: the folder %s on its way is owned by uid %u, "
                          "not you or root (use a folder of your own)", path, cur, (unsigned)st->st_uid);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return mb_err_set(err, MB_EINPUT, "%s not used: the folder %s on its way is writable by others "
                          "(chmod go-w %s)", path, cur, cur);
    return MB_OK;
}

/* The folder itself: ours and writable by nobody else. */
static int check_own(const struct stat *st, const char *path, mb_err *err)
{
    uid_t me = geteuid();
    if (st->st_uid != me)
        return mb_err_set(err, MB_EINPUT, "%s not used: owned by uid %u, not you (chown %u %s, or "
                          "remove it)", path, (unsigned)st->st_uid, (unsigned)me, path);
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return mb_err_set(err, MB_EINPUT, "%s not used: writable by %s (chmod 700 %s)", path,
                          st->st_mode & S_IWOTH ? "others" : "its group", path);
    return MB_OK;
}

/* cur + "/" + name, or cur less its last component for "..". */
static void step_path(char *cur, size_t size, const char *name)
{
    if (strcmp(name, "..") == 0) {
        char *slash = strrchr(cur, '/');
        if (slash) *slash = '\0';
        return;
    }
    size_t len = strlen(cur);
    snprintf(cur + len, size - len, "/%s", name);
}

int mb_tdir_open(mb_tdir *d, const char *path, int create, mb_err *err)
{
    d->fd = -1;
    if (!path || !path[0]) return mb_err_set(err, MB_ERUN, "no folder given");
    snprintf(d->path, sizeof d->path, "%s", path);
    char rest[2 * PATH_MAX], cwd[PATH_MAX];
    if (path[0] == '/') snprintf(rest, sizeof rest, "%s", path);
    else if (getcwd(cwd, sizeof cwd)) snprintf(rest, sizeof rest, "%s/%s", cwd, path);
    else return mb_err_set(err, MB_ERUN, "%s: no working folder: %s", path, strerror(errno));

    char cur[2 * PATH_MAX] = ""; /* the folders walked so far, for messages ("" is /) */
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), links = 0, rc = MB_OK;
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        rc = mb_err_set(err, MB_ERUN, "%s: cannot open /: %s", path, strerror(errno));
    const char *p = rest;
    while (rc == MB_OK) {
        while (*p == '/') p++;
        if (!*p) break;
        size_t len = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (len > NAME_MAX) {
            rc = mb_err_set(err, MB_ERUN, "%s: a name in it is too long", path);
            break;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        p += len;
        if (strcmp(name, ".") == 0) continue;
        /* the folder walked so far is on the way to the one asked for */
        if ((rc = check_ancestor(&st, path, cur[0] ? cur : "/", err)) != MB_OK) break;
        int nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nfd < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, name, 0700) != 0 && errno != EEXIST) {
                rc = mb_err_set(err, MB_ERUN, "%s: cannot create%s/%s: %s", path, cur, name,
                                strerror(errno));
                break;
            }
            nfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (nfd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
            struct stat ls;
            char at[sizeof cur];
            snprintf(at, sizeof at, "%s/%s", cur, name);
            if (fstatat(fd, name, &ls, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(ls.st_mode)) {
                rc = mb_err_set(err, MB_EINPUT, "%s not used: %s is not a folder", path, at);
                break;
            }
            if (ls.st_uid != geteuid() && ls.st_uid != 0) {
                rc = mb_err_set(err, MB_EINPUT, "%s not used: %s is a symbolic link owned by uid %u "
                                "(remove it)", path, at, (unsigned)ls.st_uid);
                break;
            }
            char target[PATH_MAX], spliced[sizeof rest];
            ssize_t n = readlinkat(fd, name, target, sizeof target - 1);
            if (n <= 0 || ++links > MB_TDIR_MAX_LINKS) {
                rc = mb_err_set(err, MB_ERUN, "%s: cannot follow the link %s", path, at);
                break;
            }
            target[n] = '\0';
            snprintf(spliced, sizeof spliced, "%s%s", target, p);
            snprintf(rest, sizeof rest, "%s", spliced);
            p = rest;
            if (target[0] == '/') {
                close(fd);
                fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                cur[0] = '\0';
                if (fd < 0 || fstat(fd, &st) != 0) rc = mb_err_set(err, MB_ERUN, "%s: cannot open /", path);
            }
            continue;
        }
        if (nfd < 0) {
            rc = mb_err_set(err, MB_ERUN, "%s: cannot open%s/%s: %s", path, cur, name, strerror(errno));
            break;
        }
        close(fd);
        fd = nfd;
        step_path(cur, sizeof cur, name);
        if (fstat(fd, &st) != 0) rc = mb_err_set(err, MB_ERUN, "%s: %s", path, strerror(errno));
    }
    if (rc == MB_OK) rc = check_own(&st, path, err);
    if (rc != MB_OK) {
        if (fd >= 0) close(fd);
        return rc;
    }
    d->fd = fd;
    return MB_OK;
}

void mb_tdir_close(mb_tdir *d)
{
    if (d->fd >= 0) close(d->fd); /* also releases mb_tdir_lock's lock */
    d->fd = -1;
}

int mb_tdir_open_file(const mb_tdir *d, const char *name, int *fd_out, mb_err *err)
{
    *fd_out = -1;
    if (strchr(name, '/')) return mb_err_set(err, MB_ERUN, "%s: not a plain file name", name);
    /* O_NONBLOCK: a FIFO planted here must not hang the open */
    int fd = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 1;
    if (fd < 0 && errno == ELOOP)
        return mb_err_set(err, MB_EINPUT, "%s/%s not used: a symbolic link (remove it)", d->path, name);
    if (fd < 0) return mb_err_set(err, MB_ERUN, "%s/%s: cannot open: %s", d->path, name, strerror(errno));
    struct stat st;
    uid_t me = geteuid();
    int rc = MB_OK;
    if (fstat(fd, &st) != 0)
        rc = mb_err_set(err, MB_ERUN, "%s/%s: %s", d->path, name, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = mb_err_set(err, MB_EINPUT, "%s/%s not used: not a regular file (remove it)", d->path, name);
    else if (st.st_uid != me)
        rc = mb_err_set(err, MB_EINPUT, "%s/%s not used: owned by uid %u, not you (chown %u %s/%s, or "
                        "remove it)", d->path, name, (unsigned)st.st_uid, (unsigned)me, d->path, name);
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        rc = mb_err_set(err, MB_EINPUT, "%s/%s not used: writable by %s (chmod 600 %s/%s)", d->path,
                        name, st.st_mode & S_IWOTH ? "others" : "its group", d->path, name);
    if (rc != MB_OK) {
        close(fd);
        return rc;
    }
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *fd_out = fd;
    return MB_OK;
}

int mb_tdir_write_file(const mb_tdir *d, const char *name, const char *text, size_t len, mb_err *err)
{
    char tmp[NAME_MAX + 32];
    if (strchr(name, '/') || strlen(name) > NAME_MAX - 24)
        return mb_err_set(err, MB_ERUN, "%s: not a plain file name", name);
    snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", name, (long)getpid());
    (void)unlinkat(d->fd, tmp, 0); /* a stale one of a process with this pid */
    int fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return mb_err_set(err, MB_ERUN, "%s/%s: cannot write: %s", d->path, name, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    int e = errno;
    int ok = done == len && fsync(fd) == 0;
    if (!ok && done == len) e = errno;
    ok = close(fd) == 0 && ok;
    /* renameat replaces whatever name is, a link included, never its target */
    if (ok && renameat(d->fd, tmp, d->fd, name) == 0) return MB_OK;
    if (ok) e = errno;
    (void)unlinkat(d->fd, tmp, 0);
    return mb_err_set(err, MB_ERUN, "%s/%s: cannot write: %s", d->path, name, strerror(e ? e : EIO));
}

int mb_tdir_lock(mb_tdir *d, double timeout_s, mb_err *err)
{
    struct timespec nap = {0, 50 * 1000 * 1000}; /* 50 ms between tries */
    for (double waited = 0;; waited += 0.05) {
        if (flock(d->fd, LOCK_EX | LOCK_NB) == 0) return MB_OK;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return mb_err_set(err, MB_ERUN, "%s: cannot lock: %s", d->path, strerror(errno));
        if (waited >= timeout_s) break;
        nanosleep(&nap, NULL);
    }
    return mb_err_set(err, MB_ERUN, "%s is held by another membound run (waited %.0f s)", d->path,
                      timeout_s);
}
