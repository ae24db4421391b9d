/* outfile.c — output files that appear whole or not at all.
 * A regular file (or a new one) is written to an unnamed temporary in its
 * folder (O_TMPFILE: nothing to leave behind even on SIGKILL; a named
 * PATH.tmp.PID where the file system lacks it) and renamed over it at commit;
 * a symbolic link is written through (its target is replaced, the link
 * stays); a character device (/dev/null, /dev/stdout) is written directly;
 * a directory, FIFO, socket or block device is refused at open, before any
 * work. The renames happen under an flock on each file's folder, and only
 * when the file is still the one seen at open (another run writing it
 * meanwhile fails this one, with one line). Named temporaries are removed on
 * the signals that end a process. An output that is also an input is found
 * by mb_outfile_check_distinct. Does not decide what is written. */
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
 * it only calls unlink on fixed buffers). */
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

/* The folder of path into dir ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, n, ".");
    else if (slash == path) snprintf(dir, n, "/");
    else snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* An unnamed temporary in dir, or -1 (no O_TMPFILE here, or no /proc to
 * link it from at commit). */
static int open_anon(const char *dir, mode_t mode)
{
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) != 0) return -1;
    return open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
#else
    (void)dir, (void)mode;
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

int mb_outfile_open(mb_outfile *o, const char *path, mb_err *err)
{
    memset(o, 0, sizeof *o);
    if (!path || !*path) return mb_err_set(err, MB_EINPUT, "output path is empty");
    if (strlen(path) >= sizeof o->path) return mb_err_set(err, MB_EINPUT, "%s: path too long", path);
    snprintf(o->path, sizeof o->path, "%s", path);

    struct stat lst, st;
    int is_link = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode);
    int exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", path, strerror(errno));
    if (!exists && is_link)
        return mb_err_set(err, MB_EINPUT, "%s: a symbolic link to nothing: not written", path);
    if (exists && is_link) {
        /* written through the link: its final target is replaced */
        char real[PATH_MAX];
        if (!realpath(path, real) || strlen(real) >= sizeof o->path)
            return mb_err_set(err, MB_EINPUT, "%s: cannot resolve the link: %s", path, strerror(errno));
        snprintf(o->path, sizeof o->path, "%s", real);
    }
    if (exists && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
        return mb_err_set(err, MB_EINPUT, "%s: is %s: give a file name", path, kind_of(st.st_mode));

    if (exists && S_ISREG(st.st_mode)) remember(o, &st);
    FILE *fp = NULL;
    if (exists && S_ISCHR(st.st_mode)) {
        /* a device: written directly, errors seen at commit */
        fp = fopen(o->path, "w");
        if (!fp) return mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", path, strerror(errno));
        o->direct = 1;
    } else {
        mode_t mode = exists ? (st.st_mode & 07777) : 0666;
        char dir[sizeof o->path];
        dir_of(o->path, dir, sizeof dir);
        int fd = open_anon(dir, mode);
        if (fd >= 0) {
            o->anon = 1;
            if (exists) (void)fchmod(fd, mode); /* keep the replaced file's mode */
        } else {
            snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->path, (long)getpid());
            fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
            if (fd < 0) {
                int e = errno;
                o->tmp[0] = '\0';
                return mb_err_set(err, MB_EINPUT, "%s: cannot write: %s", path, strerror(e));
            }
            track(o, 1);
        }
        fp = fdopen(fd, "w");
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
    if (fflush(fp) != 0 || ferror(fp) || (!o->direct && fsync(fileno(fp)) != 0 && errno != EINVAL))
        return mb_err_set(err, MB_ERUN, "%s: write failed: %s", o->path, strerror(errno ? errno : EIO));
    return MB_OK;
}

/* Phase 2: an unnamed temporary gets its name PATH.tmp.PID. */
static int name_one(mb_outfile *o, mb_err *err)
{
    if (!o->anon) return MB_OK;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno((FILE *)o->fp));
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->path, (long)getpid());
    (void)unlink(o->tmp); /* a stale one of a process with this pid */
    if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) != 0) {
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

/* Locks the folder of every file of the commit once (a folder that cannot
 * be opened for reading is passed over: the check below still runs). */
static int lock_folders(mb_outfile *const *o, int n, folder_locks *l, mb_err *err)
{
    l->n = 0;
    for (int i = 0; i < n && l->n < MB_OUTFILE_MAX; i++) {
        if (o[i]->direct || !o[i]->tmp[0]) continue;
        char dir[sizeof o[i]->path];
        dir_of(o[i]->path, dir, sizeof dir);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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

/* MB_OK when o's path is still what it was at open (or still absent). */
static int still_as_opened(const mb_outfile *o, mb_err *err)
{
    struct stat st;
    int there = stat(o->path, &st) == 0;
    long long mtime_ns = there ? (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec : 0;
    int same = there == o->was_there &&
               (!there || ((unsigned long long)st.st_dev == o->was_dev &&
                           (unsigned long long)st.st_ino == o->was_ino &&
                           (unsigned long long)st.st_size == o->was_size && mtime_ns == o->was_mtime_ns));
    if (same) return MB_OK;
    return mb_err_set(err, MB_ERUN, "%s: written by another run while this one ran: not replaced "
                      "(give each run its own output)", o->path);
}

int mb_outfile_commit_all(mb_outfile *const *o, int n, mb_err *err)
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
    for (int i = 0; i < n && rc == MB_OK; i++)
        if (!o[i]->direct && o[i]->tmp[0]) rc = still_as_opened(o[i], err);
    if (rc != MB_OK) {
        unlock_folders(&locks);
        for (int i = 0; i < n; i++) mb_outfile_abort(o[i]);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        if (o[i]->direct || !o[i]->tmp[0]) continue;
        if (rename(o[i]->tmp, o[i]->path) != 0 && rc == MB_OK)
            rc = mb_err_set(err, MB_ERUN, "%s: cannot rename into place: %s", o[i]->path, strerror(errno));
        (void)unlink(o[i]->tmp); /* no-op after a rename */
        track(o[i], 0);
        o[i]->tmp[0] = '\0';
    }
    unlock_folders(&locks);
    return rc;
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
        unlink(o->tmp);
        o->tmp[0] = '\0';
    }
    track(o, 0);
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
        if (o && o->tmp[0]) unlink(o->tmp);
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
