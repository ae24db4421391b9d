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

/* A walk from / to the folder asked for, one component at a time. */
typedef struct walk {
    const char *path;         /* as asked, for messages */
    char rest[2 * PATH_MAX];  /* what is left to walk, from p */
    const char *p;
    char cur[2 * PATH_MAX];   /* the folders walked so far ("" is /), for messages */
    int fd;                   /* the folder walked so far, and its fstat */
    struct stat st;
    int links;                /* links followed */
} walk;

/* Starts (or, after an absolute link, restarts) the walk at /. */
static int walk_root(walk *w, mb_err *err)
{
    if (w->fd >= 0) close(w->fd);
    w->cur[0] = '\0';
    w->fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->fd < 0 || fstat(w->fd, &w->st) != 0)
        return mb_err_set(err, MB_ERUN, "%s: cannot open /: %s", w->path, strerror(errno));
    return MB_OK;
}

/* The next component of what is left into name ("" at the end). */
static int walk_next(walk *w, char name[NAME_MAX + 1], mb_err *err)
{
    do {
        while (*w->p == '/') w->p++;
        size_t len = strcspn(w->p, "/");
        if (len > NAME_MAX) return mb_err_set(err, MB_ERUN, "%s: a name in it is too long", w->path);
        memcpy(name, w->p, len);
        name[len] = '\0';
        w->p += len;
    } while (!strcmp(name, "."));
    return MB_OK;
}

/* name in the folder walked so far is a link: followed when root or this
 * user owns it (the rest of the walk checks where it leads). */
static int walk_link(walk *w, const char *name, mb_err *err)
{
    struct stat ls;
    char at[sizeof w->cur + NAME_MAX + 2], target[PATH_MAX], spliced[sizeof w->rest];
    snprintf(at, sizeof at, "%s/%s", w->cur, name);
    if (fstatat(w->fd, name, &ls, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(ls.st_mode))
        return mb_err_set(err, MB_EINPUT, "%s not used: %s is not a folder", w->path, at);
    if (ls.st_uid != geteuid() && ls.st_uid != 0)
        return mb_err_set(err, MB_EINPUT, "%s not used: %s is a symbolic link owned by uid %u (remove it)",
                          w->path, at, (unsigned)ls.st_uid);
    ssize_t n = readlinkat(w->fd, name, target, sizeof target - 1);
    if (n <= 0 || ++w->links > MB_TDIR_MAX_LINKS)
        return mb_err_set(err, MB_ERUN, "%s: cannot follow the link %s", w->path, at);
    target[n] = '\0';
    snprintf(spliced, sizeof spliced, "%s%s", target, w->p);
    snprintf(w->rest, sizeof w->rest, "%s", spliced);
    w->p = w->rest;
    return target[0] == '/' ? walk_root(w, err) : MB_OK;
}

/* One step down into name (made 0700 first when missing and create), after
 * checking the folder it leaves as one on the way. */
static int walk_step(walk *w, const char *name, int create, mb_err *err)
{
    int rc = check_ancestor(&w->st, w->path, w->cur[0] ? w->cur : "/", err);
    if (rc != MB_OK) return rc;
    int fd = openat(w->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(w->fd, name, 0700) != 0 && errno != EEXIST)
            return mb_err_set(err, MB_ERUN, "%s: cannot create %s/%s: %s", w->path, w->cur, name,
                              strerror(errno));
        fd = openat(w->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) return walk_link(w, name, err);
    if (fd < 0)
        return mb_err_set(err, MB_ERUN, "%s: cannot open %s/%s: %s", w->path, w->cur, name, strerror(errno));
    close(w->fd);
    w->fd = fd;
    if (!strcmp(name, "..")) { /* the walk's own parent: checked on the way down */
        char *slash = strrchr(w->cur, '/');
        if (slash) *slash = '\0';
    } else {
        size_t len = strlen(w->cur);
        snprintf(w->cur + len, sizeof w->cur - len, "/%s", name);
    }
    if (fstat(w->fd, &w->st) != 0) return mb_err_set(err, MB_ERUN, "%s: %s", w->path, strerror(errno));
    return MB_OK;
}

int mb_tdir_open(mb_tdir *d, const char *path, int create, mb_err *err)
{
    d->fd = -1;
    if (!path || !path[0]) return mb_err_set(err, MB_ERUN, "no folder given");
    snprintf(d->path, sizeof d->path, "%s", path);
    walk w; /* 16 KiB of paths, on the stack */
    char cwd[PATH_MAX];
    w.path = path;
    w.fd = -1;
    w.links = 0;
    if (path[0] == '/') snprintf(w.rest, sizeof w.rest, "%s", path);
    else if (getcwd(cwd, sizeof cwd)) snprintf(w.rest, sizeof w.rest, "%s/%s", cwd, path);
    else return mb_err_set(err, MB_ERUN, "%s: no working folder: %s", path, strerror(errno));
    w.p = w.rest;
    char name[NAME_MAX + 1];
    int rc = walk_root(&w, err);
    while (rc == MB_OK && (rc = walk_next(&w, name, err)) == MB_OK && name[0])
        rc = walk_step(&w, name, create, err);
    if (rc == MB_OK) rc = check_own(&w.st, path, err);
    if (rc != MB_OK) {
        if (w.fd >= 0) close(w.fd);
        return rc;
    }
    d->fd = w.fd;
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
