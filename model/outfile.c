/* outfile.c — output files that appear whole or not at all.
 * The path is walked one folder at a time from / or the working folder, and
 * its folder is held open from open to commit, so nothing renamed on the way
 * meanwhile moves the output elsewhere. A symbolic link on the way (the file
 * itself included) is followed only where nobody else could have planted or
 * swapped it: in a folder only you or root can change, or, in a sticky one
 * (/tmp), when you or root own the link. A regular file (or a new one) is
 * written to an unnamed temporary in its folder (O_TMPFILE: nothing to leave
 * behind even on SIGKILL; a short hidden .mb-PID-N.tmp where the file system
 * lacks it, so a 255-byte name still has room) and renamed over it at commit;
 * a link's target is replaced, the link stays; a character device
 * (/dev/null) is written directly; a directory, FIFO, socket or block device
 * is refused at open, before any work. The renames happen under an flock on
 * each file's folder, and only when the file is still the one seen at open:
 * when another run wrote it meanwhile, this run's file is kept beside it
 * (NAME.conflict-PID) and the commit fails with one line naming it. A
 * partial commit (mb_outfile_commit_partial) never replaces a file that was
 * there: it is kept beside it as NAME.partial-PID. Named temporaries are
 * removed on the signals that end a process. An output that is also an
 * input is found by mb_outfile_check_distinct. Does not decide what is
 * written. */
#define _GNU_SOURCE /* O_TMPFILE, linkat */
#include "membound_model.h"
#include "mb_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <dirent.h>
#include <unistd.h>

/* Named temporaries that exist now, for the signal handler (async-signal-safe:
 * it only calls unlinkat on fixed buffers). */
#define MB_OUTFILE_MAX 32
static mb_outfile *volatile live[MB_OUTFILE_MAX];

static void track(mb_outfile *o, int on)
{
    for (int i = 0; i < MB_OUTFILE_MAX; i++) {
        if (on && live[i] == NULL) { live[i] = o; return; }
        if (!on && live[i] == o) { live[i] = NULL; return; }
    }
}

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

/* Symbolic links followed in one walk before it is refused (the kernel's
 * own limit, MAXSYMLINKS). */
#define MB_OUTFILE_MAX_LINKS 40

/* A walk to the folder of an output, one component at a time. */
typedef struct out_walk {
    const char *given;        /* the path as given, for messages */
    char rest[2 * PATH_MAX];  /* what is left to walk, from p */
    const char *p;
    char cur[2 * PATH_MAX];   /* the folder walked so far, for messages ("" at /, "." at the start) */
    int fd;                   /* that folder */
    int links;                /* links followed */
    int via_link;             /* the file named is a link's target */
} out_walk;

static int walk_open(out_walk *w, const char *from, mb_err *err)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (w->fd < 0 && errno == EACCES) w->fd = open(from, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (w->fd < 0) return mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", w->given, strerror(errno));
    snprintf(w->cur, sizeof w->cur, "%s", strcmp(from, "/") ? from : "");
    return MB_OK;
}

/* The next component into name; *last when nothing follows it. */
static int walk_next(out_walk *w, char name[NAME_MAX + 1], int *last, mb_err *err)
{
    for (;;) {
        while (*w->p == '/') w->p++;
        size_t len = strcspn(w->p, "/");
        if (len > NAME_MAX) return mb_err_set(err, MB_EINPUT, "%s: a name in it is too long", w->given);
        memcpy(name, w->p, len);
        name[len] = '\0';
        w->p += len;
        *last = w->p[strspn(w->p, "/")] == '\0';
        if (strcmp(name, ".") || *last) return MB_OK;
    }
}

/* name in the walked folder is a link: MB_OK when nobody else could have
 * planted or swapped it (the caches' rule, model/trusted_dir.c): the folder
 * is changed by you or root alone, or it is sticky (/tmp) and you or root
 * own the link. */
static int link_trusted(const out_walk *w, const char *name, const struct stat *ls, mb_err *err)
{
    struct stat ds;
    uid_t me = geteuid();
    if (fstat(w->fd, &ds) != 0) return mb_err_set(err, MB_ERUN, "%s: %s", w->given, strerror(errno));
    int others_can_change = (ds.st_uid != me && ds.st_uid != 0) || (ds.st_mode & (S_IWGRP | S_IWOTH));
    int ours = ls->st_uid == me || ls->st_uid == 0;
    if (!others_can_change || (ours && (ds.st_mode & S_ISVTX))) return MB_OK;
    const char *cur = !strcmp(w->cur, ".") ? "" : !strncmp(w->cur, "./", 2) ? w->cur + 2 : w->cur;
    return mb_err_set(err, MB_EINPUT, "%s: not written: %s%s%s is a symbolic link of uid %u in a folder others "
                      "can change, not followed (remove it, or give another path)", w->given, cur,
                      cur[0] || w->cur[0] != '.' ? "/" : "", name, (unsigned)ls->st_uid);
}

/* Follows the trusted link name: what it names is walked next. */
static int walk_link(out_walk *w, const char *name, mb_err *err)
{
    char target[PATH_MAX], spliced[sizeof w->rest];
    ssize_t n = readlinkat(w->fd, name, target, sizeof target - 1);
    if (n <= 0 || ++w->links > MB_OUTFILE_MAX_LINKS)
        return mb_err_set(err, MB_EINPUT, "%s: cannot follow the link %s", w->given, name);
    target[n] = '\0';
    if (strlen(target) + strlen(w->p) >= sizeof spliced)
        return mb_err_set(err, MB_EINPUT, "%s: path too long", w->given);
    snprintf(spliced, sizeof spliced, "%s%s", target, w->p);
    snprintf(w->rest, sizeof w->rest, "%s", spliced);
    w->p = w->rest;
    return target[0] == '/' ? walk_open(w, "/", err) : MB_OK;
}

/* One step down into the folder name. */
static int walk_down(out_walk *w, const char *name, mb_err *err)
{
    int fd = openat(w->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == EACCES) fd = openat(w->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", w->given, strerror(errno));
    close(w->fd);
    w->fd = fd;
    size_t len = strlen(w->cur);
    snprintf(w->cur + len, sizeof w->cur - len, "/%s", name);
    return MB_OK;
}

/* Walks path to the folder of the file it names: o->dirfd and o->name, and
 * o->path when a link was followed (the file written). *st gets the file
 * (links followed for a device), *exists whether it is there. missing_ok:
 * a missing folder on the way ends the walk without an error. */
static int resolve(mb_outfile *o, const char *path, struct stat *st, int *exists, int missing_ok, mb_err *err)
{
    out_walk w; /* 16 KB */
    memset(&w, 0, sizeof w);
    w.given = path;
    w.fd = -1;
    snprintf(w.rest, sizeof w.rest, "%s", path);
    w.p = w.rest;
    int rc = walk_open(&w, path[0] == '/' ? "/" : ".", err);
    char name[NAME_MAX + 1];
    while (rc == MB_OK) {
        int last;
        if ((rc = walk_next(&w, name, &last, err))) break;
        struct stat ls;
        int there = name[0] && fstatat(w.fd, name, &ls, AT_SYMLINK_NOFOLLOW) == 0;
        if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..")) {
            if (last) { rc = mb_err_set(err, MB_EINPUT, "%s: is a directory: give a file name", path); break; }
            rc = walk_down(&w, name, err);
        } else if (!there && missing_ok && errno == ENOENT) {
            *exists = 0; /* the rest is made later, by the caller */
            break;
        } else if (!there && (!last || errno != ENOENT)) {
            rc = mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", path, strerror(errno));
        } else if (!there && w.via_link) {
            rc = mb_err_set(err, MB_EINPUT, "%s: a symbolic link to nothing: not written", path);
        } else if (!there) {
            *exists = 0;
            break;
        } else if (S_ISLNK(ls.st_mode)) {
            struct stat ts;
            if ((rc = link_trusted(&w, name, &ls, err))) break;
            /* a link to a device or the like (/dev/stdout, /proc/self/fd/1)
             * is not spelled out: opened through the kernel below */
            if (last && fstatat(w.fd, name, &ts, 0) == 0 && !S_ISREG(ts.st_mode) && !S_ISDIR(ts.st_mode)) {
                *st = ts;
                *exists = 1;
                break;
            }
            if (last) w.via_link = 1; /* what it names must be there */
            rc = walk_link(&w, name, err);
        } else if (!last) {
            rc = walk_down(&w, name, err);
        } else {
            *st = ls;
            *exists = 1;
            break;
        }
    }
    if (rc != MB_OK) {
        if (w.fd >= 0) close(w.fd);
        return rc;
    }
    o->dirfd = w.fd;
    o->held = 1;
    snprintf(o->name, sizeof o->name, "%s", name);
    if (w.links && *exists && S_ISREG(st->st_mode) && strlen(w.cur) + strlen(name) + 2 <= sizeof o->path)
        snprintf(o->path, sizeof o->path, "%s/%s", w.cur, name);
    return MB_OK;
}

int mb_outfile_check_path(const char *path, mb_err *err)
{
    mb_outfile o; /* 13 KB */
    memset(&o, 0, sizeof o);
    o.dirfd = o.fd = -1;
    if (!path || !*path) return mb_err_set(err, MB_EINPUT, "output path is empty");
    struct stat st;
    int exists = 0;
    int rc = resolve(&o, path, &st, &exists, 1, err);
    if (rc == MB_OK) mb_outfile_abort(&o);
    return rc;
}

/* The short hidden name of this process's next temporary: room for it
 * beside a 255-byte name. */
static void temp_name(mb_outfile *o)
{
    static unsigned seq;
    snprintf(o->tmp, sizeof o->tmp, ".mb-%ld-%u.tmp", (long)getpid(), seq++);
}

/* An unnamed temporary in the folder, or -1 (no O_TMPFILE here, or no
 * /proc to link it from at commit). */
static int open_anon(int dirfd, mode_t mode)
{
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) != 0) return -1;
    return openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
#else
    (void)dirfd, (void)mode;
    return -1;
#endif
}

/* The file at open, for the commit's check that nobody replaced it. */
static void remember(mb_outfile *o, const struct stat *st)
{
    o->was_there = 1;
    o->was_dev = (unsigned long long)st->st_dev;
    o->was_ino = (unsigned long long)st->st_ino;
    o->was_size = (unsigned long long)st->st_size;
    o->was_mtime_ns = (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

/* The stream's writes: write(2) on the file's descriptor, the first
 * failure's errno kept (stdio keeps only a flag). */
static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
    mb_outfile *o = cookie;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(o->fd, buf + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (!o->write_errno) o->write_errno = n < 0 ? errno : ENOSPC;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static int cookie_close(void *cookie)
{
    mb_outfile *o = cookie;
    int rc = o->fd >= 0 ? close(o->fd) : 0;
    o->fd = -1;
    return rc;
}

/* A stream writing fd for o (o->fd set), NULL when memory runs out (fd left open). */
static FILE *stream_of(mb_outfile *o, int fd)
{
    static const cookie_io_functions_t io = {.write = cookie_write, .close = cookie_close};
    o->fd = fd;
    o->write_errno = 0;
    FILE *fp = fopencookie(o, "w", io);
    if (!fp) o->fd = -1;
    return fp;
}

int mb_outfile_open(mb_outfile *o, const char *path, mb_err *err)
{
    memset(o, 0, sizeof *o);
    o->dirfd = -1;
    o->fd = -1;
    if (!path || !*path) return mb_err_set(err, MB_EINPUT, "output path is empty");
    if (strlen(path) >= sizeof o->path) return mb_err_set(err, MB_EINPUT, "%s: path too long", path);
    snprintf(o->path, sizeof o->path, "%s", path);

    struct stat st;
    int exists = 0;
    int rc = resolve(o, path, &st, &exists, 0, err);
    if (rc != MB_OK) return rc;
    if (exists && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
        mb_outfile_abort(o);
        return mb_err_set(err, MB_EINPUT, "%s: is %s: give a file name", path, kind_of(st.st_mode));
    }

    if (exists && S_ISREG(st.st_mode)) remember(o, &st);
    FILE *fp = NULL;
    if (exists && S_ISCHR(st.st_mode)) {
        /* a device: written directly, errors seen at commit */
        int fd = openat(o->dirfd, o->name, O_WRONLY | O_CLOEXEC);
        fp = fd >= 0 ? stream_of(o, fd) : NULL;
        if (!fp) {
            int e = errno;
            if (fd >= 0) close(fd);
            mb_outfile_abort(o);
            return mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", path, strerror(e));
        }
        o->direct = 1;
    } else {
        mode_t mode = exists ? (st.st_mode & 07777) : 0666;
        int fd = open_anon(o->dirfd, mode);
        if (fd >= 0) {
            o->anon = 1;
            if (exists) (void)fchmod(fd, mode); /* keep the replaced file's mode */
        } else {
            temp_name(o);
            fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
            if (fd < 0) {
                int e = errno;
                o->tmp[0] = '\0';
                mb_outfile_abort(o);
                return mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", path, strerror(e));
            }
            track(o, 1);
        }
        fp = stream_of(o, fd);
        if (!fp) {
            int e = errno;
            close(fd);
            mb_outfile_abort(o);
            return mb_err_set(err, MB_ERUN, "%s: %s", path, strerror(e));
        }
    }
    o->fp = fp;
    return MB_OK;
}

/* Phase 1 of a commit: every byte written and flushed, no error so far. */
static int flush_one(mb_outfile *o, mb_err *err)
{
    FILE *fp = o->fp;
    if (!fp) return mb_err_set(err, MB_ERUN, "%s: not open", o->path);
    errno = 0;
    if (fflush(fp) != 0 || ferror(fp) || (!o->direct && fsync(o->fd) != 0 && errno != EINVAL)) {
        /* the first failed write's reason (a full disk's ENOSPC), which the
         * stream's error flag alone would have lost */
        int e = o->write_errno ? o->write_errno : errno ? errno : EIO;
        return mb_err_set(err, MB_ERUN, "%s: write failed: %s", o->path, strerror(e));
    }
    return MB_OK;
}

/* Phase 2: an unnamed temporary gets its short hidden name. */
static int name_one(mb_outfile *o, mb_err *err)
{
    if (!o->anon) return MB_OK;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
    temp_name(o);
    (void)unlinkat(o->dirfd, o->tmp, 0); /* a stale one of a process with this pid */
    if (linkat(AT_FDCWD, proc, o->dirfd, o->tmp, AT_SYMLINK_FOLLOW) != 0) {
        int e = errno;
        o->tmp[0] = '\0';
        return mb_err_set(err, MB_ERUN, "%s: cannot name the file: %s", o->path, strerror(e));
    }
    track(o, 1);
    return MB_OK;
}

/* Phase 3: closed (a device reports a late error here). */
static int close_one(mb_outfile *o, mb_err *err)
{
    FILE *fp = o->fp;
    o->fp = NULL;
    if (fp && fclose(fp) != 0)
        return mb_err_set(err, MB_ERUN, "%s: write failed: %s", o->path, strerror(errno));
    return MB_OK;
}

/* How long a commit waits for another run's renames in the same folder, s
 * (they take milliseconds; a run holding it longer is stuck). */
#define MB_OUTFILE_LOCK_WAIT_S 10

/* The distinct folders of a commit, locked in (device, inode) order so two
 * runs never wait on each other crosswise. */
typedef struct folder_locks {
    int fd[MB_OUTFILE_MAX];
    int n;
} folder_locks;

static int by_identity(const void *a, const void *b)
{
    struct stat sa, sb;
    if (fstat(*(const int *)a, &sa) != 0 || fstat(*(const int *)b, &sb) != 0) return 0;
    if (sa.st_dev != sb.st_dev) return sa.st_dev < sb.st_dev ? -1 : 1;
    return sa.st_ino < sb.st_ino ? -1 : sa.st_ino > sb.st_ino;
}

static void unlock_folders(folder_locks *l)
{
    for (int i = 0; i < l->n; i++) close(l->fd[i]); /* releases the flock */
    l->n = 0;
}

/* Locks the folder of every file of the commit once, through a descriptor
 * of its own (closing it releases the lock); a folder that cannot be read
 * is passed over: the check below still runs. */
static int lock_folders(mb_outfile *const *o, int n, folder_locks *l, mb_err *err)
{
    l->n = 0;
    for (int i = 0; i < n && l->n < MB_OUTFILE_MAX; i++) {
        if (o[i]->direct || !o[i]->tmp[0]) continue;
        int fd = openat(o[i]->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) continue;
        int dup = 0;
        for (int j = 0; j < l->n && !dup; j++) dup = by_identity(&fd, &l->fd[j]) == 0;
        if (dup) close(fd);
        else l->fd[l->n++] = fd;
    }
    qsort(l->fd, (size_t)l->n, sizeof l->fd[0], by_identity);
    for (int i = 0; i < l->n; i++) {
        mb_tdir held = {l->fd[i], "the folder of an output"};
        if (mb_tdir_lock(&held, MB_OUTFILE_LOCK_WAIT_S, err) != MB_OK) {
            unlock_folders(l);
            return MB_ERUN;
        }
    }
    return MB_OK;
}

/* 1 when o's file is still what it was at open (or still absent). */
static int still_as_opened(const mb_outfile *o)
{
    struct stat st;
    int there = fstatat(o->dirfd, o->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    long long mtime_ns = there ? (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec : 0;
    return there == o->was_there &&
           (!there || ((unsigned long long)st.st_dev == o->was_dev &&
                       (unsigned long long)st.st_ino == o->was_ino &&
                       (unsigned long long)st.st_size == o->was_size && mtime_ns == o->was_mtime_ns));
}

/* Gives o's complete temporary the name NAME.why-PID beside its file (never
 * replacing anything: a name taken gets -2, -3, ...; a name with no room
 * for the suffix becomes membound.why-PID) and o->kept that path. */
static int keep_beside(mb_outfile *o, const char *why, mb_err *err)
{
    char name[NAME_MAX + 1];
    int e = EEXIST;
    for (int k = 1; k < 100 && e == EEXIST; k++) {
        char suffix[48];
        if (k == 1) snprintf(suffix, sizeof suffix, ".%s-%ld", why, (long)getpid());
        else snprintf(suffix, sizeof suffix, ".%s-%ld-%d", why, (long)getpid(), k);
        if (strlen(o->name) + strlen(suffix) <= NAME_MAX) snprintf(name, sizeof name, "%s%s", o->name, suffix);
        else snprintf(name, sizeof name, "membound%s", suffix);
        e = linkat(o->dirfd, o->tmp, o->dirfd, name, 0) == 0 ? 0 : errno;
    }
    if (e) return mb_err_set(err, MB_ERUN, "%s: cannot keep this run's file beside it: %s", o->path, strerror(e));
    (void)unlinkat(o->dirfd, o->tmp, 0);
    track(o, 0);
    o->tmp[0] = '\0';
    /* the path as given with its last name replaced */
    const char *slash = strrchr(o->path, '/');
    int dir_len = slash ? (int)(slash - o->path) + 1 : 0;
    snprintf(o->kept, sizeof o->kept, "%.*s%s", dir_len, o->path, name);
    return MB_OK;
}

/* Commits n files: in place, or (beside_why set) all beside their files
 * under NAME.beside_why-PID; when another run wrote one of them since open,
 * all beside as NAME.conflict-PID and MB_ERUN. */
static int commit(mb_outfile *const *o, int n, const char *beside_why, mb_err *err)
{
    int rc = MB_OK;
    for (int i = 0; i < n && rc == MB_OK; i++) rc = flush_one(o[i], err);
    for (int i = 0; i < n && rc == MB_OK; i++) rc = name_one(o[i], err);
    for (int i = 0; i < n && rc == MB_OK; i++) rc = close_one(o[i], err);
    if (rc != MB_OK) {
        for (int i = 0; i < n; i++) mb_outfile_abort(o[i]);
        return rc;
    }
    /* every file is complete: the renames are the only step left, under the
     * folders' locks, and only over what each run saw at open */
    folder_locks locks;
    rc = lock_folders(o, n, &locks, err);
    if (rc != MB_OK) {
        for (int i = 0; i < n; i++) mb_outfile_abort(o[i]);
        return rc;
    }
    int lost = -1; /* the first file another run wrote meanwhile */
    for (int i = 0; i < n && lost < 0; i++)
        if (!o[i]->direct && o[i]->tmp[0] && !still_as_opened(o[i])) lost = i;
    if (lost >= 0) beside_why = "conflict";
    for (int i = 0; i < n; i++) {
        if (o[i]->direct || !o[i]->tmp[0]) continue;
        if (beside_why) {
            if (keep_beside(o[i], beside_why, err) != MB_OK && rc == MB_OK) rc = MB_ERUN;
            continue;
        }
        if (renameat(o[i]->dirfd, o[i]->tmp, o[i]->dirfd, o[i]->name) != 0 && rc == MB_OK)
            rc = mb_err_set(err, MB_ERUN, "%s: cannot rename into place: %s", o[i]->path, strerror(errno));
        (void)unlinkat(o[i]->dirfd, o[i]->tmp, 0); /* no-op after a rename */
        track(o[i], 0);
        o[i]->tmp[0] = '\0';
    }
    unlock_folders(&locks);
    if (rc == MB_OK && lost >= 0)
        rc = mb_err_set(err, MB_ERUN, "%s: written by another run while this one ran: not replaced; this "
                        "run's file is %s%s (give each run its own output)", o[lost]->path, o[lost]->kept,
                        n > 1 ? ", its other files beside theirs alike" : "");
    for (int i = 0; i < n; i++) mb_outfile_abort(o[i]); /* the folders closed; nothing else left */
    return rc;
}

int mb_outfile_commit_all(mb_outfile *const *o, int n, mb_err *err)
{
    return commit(o, n, NULL, err);
}

int mb_outfile_commit_partial(mb_outfile *const *o, int n, int *kept, mb_err *err)
{
    int there = 0;
    for (int i = 0; i < n; i++) there |= !o[i]->direct && o[i]->was_there;
    *kept = there;
    return commit(o, n, there ? "partial" : NULL, err);
}

int mb_outfile_commit(mb_outfile *o, mb_err *err)
{
    return mb_outfile_commit_all(&o, 1, err);
}

void mb_outfile_abort(mb_outfile *o)
{
    if (o->fp) {
        fclose(o->fp);
        o->fp = NULL;
    }
    if (o->tmp[0]) {
        unlinkat(o->dirfd, o->tmp, 0);
        o->tmp[0] = '\0';
    }
    track(o, 0);
    if (o->held) close(o->dirfd);
    o->held = 0;
    o->dirfd = -1;
}

/* The folder of path into dir ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, n, ".");
    else if (slash == path) snprintf(dir, n, "/");
    else snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* A file's identity: itself when it exists (through links), else its
 * folder's and its name. 0 when neither can be looked up. */
typedef struct file_id {
    unsigned long long dev, ino;
    const char *name; /* NULL: the file itself */
} file_id;

static int identify(const char *path, file_id *id)
{
    struct stat st;
    id->name = NULL;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) return 0;
        char dir[4096];
        dir_of(path, dir, sizeof dir);
        if (stat(dir, &st) != 0) return 0;
        const char *slash = strrchr(path, '/');
        id->name = slash ? slash + 1 : path;
    }
    id->dev = (unsigned long long)st.st_dev;
    id->ino = (unsigned long long)st.st_ino;
    return 1;
}

static int same_file(const file_id *a, const file_id *b)
{
    return a->dev == b->dev && a->ino == b->ino && !a->name == !b->name &&
           (!a->name || !strcmp(a->name, b->name));
}

int mb_outfile_check_distinct(const char *const *outputs, int n_out, const char *const *inputs, int n_in,
                              mb_err *err)
{
    for (int i = 0; i < n_out; i++) {
        file_id out, other;
        if (!outputs[i] || !identify(outputs[i], &out)) continue;
        struct stat st;
        if (!out.name && stat(outputs[i], &st) == 0 && S_ISCHR(st.st_mode)) continue; /* /dev/null */
        for (int j = 0; j < n_in; j++)
            if (inputs[j] && identify(inputs[j], &other) && !other.name && same_file(&out, &other))
                return mb_err_set(err, MB_EINPUT, "%s: is also the input %s: give another output", outputs[i],
                                  inputs[j]);
        for (int j = i + 1; j < n_out; j++)
            if (outputs[j] && identify(outputs[j], &other) && same_file(&out, &other))
                return mb_err_set(err, MB_EINPUT, "%s: written twice (also as %s): give each output its own "
                                  "file", outputs[i], outputs[j]);
    }
    return MB_OK;
}

/* A folder being built (report's staging folder), removed with what is in
 * it (two levels down) by the handlers: by raw getdents64 and unlinkat,
 * which are async-signal-safe where opendir (malloc) is not. */
static char signal_dir[4096];

struct mb_dirent64 {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void remove_tree_at(int parent, const char *name, int depth)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096];
        for (;;) {
            long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (n <= 0) break;
            for (long off = 0; off < n;) {
                struct mb_dirent64 *d = (struct mb_dirent64 *)(void *)(buf + off);
                off += d->d_reclen;
                const char *e = d->d_name;
                if (!strcmp(e, ".") || !strcmp(e, "..")) continue;
                if (d->d_type == DT_DIR && depth > 0) remove_tree_at(fd, e, depth - 1);
                else unlinkat(fd, e, 0);
            }
        }
        close(fd);
    }
    unlinkat(parent, name, AT_REMOVEDIR);
}

static void remove_dir_on_signal(const char *path)
{
    remove_tree_at(AT_FDCWD, path, 2);
}

void mb_outfile_remove_dir_on_signal(const char *path)
{
    signal_dir[0] = '\0';
    if (path && strlen(path) < sizeof signal_dir) memcpy(signal_dir, path, strlen(path) + 1);
}

static void on_signal(int sig)
{
    for (int i = 0; i < MB_OUTFILE_MAX; i++) {
        mb_outfile *o = live[i];
        if (o && o->tmp[0]) unlinkat(o->dirfd, o->tmp, 0);
    }
    mb_intr_note(sig);
    mb_child_kill_on_signal(sig); /* the child we wait for (mb_child_run) ends with us */
    if (signal_dir[0]) remove_dir_on_signal(signal_dir);
    signal(sig, SIG_DFL);
    raise(sig);
}

void mb_outfile_install_signal_cleanup(void)
{
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* a signal ignored by whoever started us (nohup, a shell's trap '')
         * stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}
