/* stage.c — a report built in a staging folder beside its target and put in
 * place in one step: renamed where the target is not there, else swapped
 * with it (renameat2 RENAME_EXCHANGE) and the old one removed, so a reader of
 * DIR sees the old report or the new one, never a mix. What else the target
 * holds (demo's CSVs and logs/) is carried into the staging folder first, as
 * hard links (same file system: beside it). Where that cannot be (the target
 * is the working folder or holds it, a file cannot be linked), each entry is
 * put in place on its own: figures/ swapped, then the files renamed,
 * report.html last. Does not write any of the report's files (write.c and
 * figures.c do). */
#define _GNU_SOURCE
#include "report_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The report's own entries: what a new report replaces in its target. */
static int report_entry(const char *name)
{
    if (!strcmp(name, "figures")) return 1;
    for (int i = 0; mb_rpt_report_files[i]; i++)
        if (!strcmp(name, mb_rpt_report_files[i])) return 1;
    return 0;
}

/* Removes path and everything under it (no link followed). */
static void remove_tree(const char *path)
{
    struct stat ls;
    if (lstat(path, &ls) != 0) return;
    if (!S_ISDIR(ls.st_mode)) { unlink(path); return; }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[PATH_MAX];
            if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p) continue;
            struct stat st;
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
            else unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

/* dir, with trailing slashes dropped, split into its parent and name. */
static int split_path(const char *dir, char *parent, size_t psz, char *name, size_t nsz)
{
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return -1;
    size_t l = strlen(p);
    while (l > 1 && p[l - 1] == '/') p[--l] = '\0';
    char *slash = strrchr(p, '/');
    const char *nm = slash ? slash + 1 : p;
    if (!*nm || !strcmp(nm, ".") || !strcmp(nm, "..")) return -1;
    if (snprintf(name, nsz, "%s", nm) >= (int)nsz) return -1;
    if (!slash) snprintf(parent, psz, ".");
    else if (slash == p) snprintf(parent, psz, "/");
    else { *slash = '\0'; snprintf(parent, psz, "%s", p); }
    return 0;
}

/* 1 when the working folder is dir or lies under it: swapping dir would
 * leave the process (and the user's shell) in the removed old folder. */
static int holds_cwd(const char *dir)
{
    char cwd[PATH_MAX], real[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || !realpath(dir, real)) return 1;
    size_t l = strlen(real);
    return !strncmp(cwd, real, l) && (cwd[l] == '\0' || cwd[l] == '/' || l == 1);
}

/* MB_EINPUT when an entry of target that the report replaces is not what
 * the report writes there (a folder named summary.json, a file named
 * figures): the swap would remove someone's data unseen. */
static int entries_replaceable(const char *target, mb_err *err)
{
    char p[PATH_MAX + 64];
    struct stat sb;
    for (int i = 0; mb_rpt_report_files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", target, mb_rpt_report_files[i]);
        if (stat(p, &sb) == 0 && !S_ISREG(sb.st_mode))
            return mb_err_set(err, MB_EINPUT, "%s: not a regular file: the report would replace it "
                              "(move it, or give another -o)", p);
    }
    snprintf(p, sizeof p, "%s/figures", target);
    if (stat(p, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return mb_err_set(err, MB_EINPUT, "%s: not a directory: the report would replace it "
                          "(move it, or give another -o)", p);
    return MB_OK;
}

int mb_rpt_stage_begin(const char *target, mb_rpt_stage *st, mb_err *err)
{
    memset(st, 0, sizeof *st);
    snprintf(st->target, sizeof st->target, "%s", target);
    /* a link on the way that another user could have planted is refused
     * before anything is made through it */
    int lrc = mb_outfile_check_path(target, err);
    if (lrc != MB_OK) return lrc;
    char parent[PATH_MAX], name[NAME_MAX + 1];
    struct stat sb, lb;
    int exists = stat(target, &sb) == 0;
    if (exists && !S_ISDIR(sb.st_mode)) return mb_err_set(err, MB_EINPUT, "%s: not a directory", target);
    /* a link to a folder is kept (the swap would replace the link itself) */
    int is_link = lstat(target, &lb) == 0 && S_ISLNK(lb.st_mode);
    st->in_place = split_path(target, parent, sizeof parent, name, sizeof name) != 0 ||
                   (exists && (is_link || holds_cwd(target)));
    int rc;
    if (exists && (rc = entries_replaceable(target, err))) return rc;
    if (st->in_place) { /* staged inside the target, entries moved one by one */
        if ((rc = mb_rpt_mkdirs(target, err))) return rc;
        snprintf(st->dir, sizeof st->dir, "%s/.report-staging.%ld", target, (long)getpid());
    } else {
        if ((rc = mb_rpt_mkdirs(parent, err))) return rc;
        /* .NAME.staging.PID beside it, or a short name where that would pass
         * the 255 bytes a name may have (a legal 255-byte DIR) */
        char stage[NAME_MAX + 1];
        if (snprintf(stage, sizeof stage, ".%s.staging.%ld", name, (long)getpid()) >= (int)sizeof stage)
            snprintf(stage, sizeof stage, ".report-staging.%ld", (long)getpid());
        if (snprintf(st->dir, sizeof st->dir, "%s/%s", parent, stage) >= (int)sizeof st->dir)
            return mb_err_set(err, MB_EINPUT, "%s: path too long", target);
    }
    remove_tree(st->dir); /* a folder of a dead run of ours with our pid */
    int made = mkdir(st->dir, 0777) == 0;
    if (!made && !st->in_place && exists && (errno == EACCES || errno == EROFS || errno == EPERM)) {
        /* a folder we may write in under a parent we may not: staged inside */
        st->in_place = 1;
        snprintf(st->dir, sizeof st->dir, "%s/.report-staging.%ld", target, (long)getpid());
        remove_tree(st->dir);
        made = mkdir(st->dir, 0777) == 0;
    }
    if (!made)
        return mb_err_set(err, MB_ERUN, "%s: cannot create the staging folder: %s", st->dir, strerror(errno));
    mb_outfile_remove_dir_on_signal(st->dir);
    return MB_OK;
}

void mb_rpt_stage_abort(mb_rpt_stage *st)
{
    if (!st->dir[0] || st->done) return;
    remove_tree(st->dir);
    mb_outfile_remove_dir_on_signal(NULL);
    st->done = 1;
}

/* Carries from into to: each entry not the report's own (top level only)
 * as a hard link, folders rebuilt with their files linked, links copied.
 * 0, or -1 when something could not be carried. */
static int carry(const char *from, const char *to, int top)
{
    DIR *d = opendir(from);
    if (!d) return -1;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        const char *n = e->d_name;
        /* the report's entries are replaced; other runs' staging folders
         * are theirs */
        if (!strcmp(n, ".") || !strcmp(n, "..") ||
            (top && (report_entry(n) || !strncmp(n, ".report-staging.", 16))))
            continue;
        char a[PATH_MAX], b[PATH_MAX];
        if (snprintf(a, sizeof a, "%s/%s", from, n) >= (int)sizeof a ||
            snprintf(b, sizeof b, "%s/%s", to, n) >= (int)sizeof b) { rc = -1; break; }
        struct stat sb;
        if (lstat(a, &sb) != 0) { rc = -1; break; }
        if (S_ISDIR(sb.st_mode)) {
            rc = mkdir(b, sb.st_mode & 07777) == 0 ? carry(a, b, 0) : -1;
        } else if (S_ISLNK(sb.st_mode)) {
            char t[PATH_MAX];
            ssize_t l = readlink(a, t, sizeof t - 1);
            if (l < 0) { rc = -1; break; }
            t[l] = '\0';
            rc = symlink(t, b);
        } else {
            rc = link(a, b);
        }
    }
    closedir(d);
    return rc;
}

/* Puts each entry of the staging folder in place on its own (the target
 * holds the working folder, or its other entries could not be carried). */
static int commit_entries(mb_rpt_stage *st, mb_err *err)
{
    char a[PATH_MAX * 2], b[PATH_MAX * 2];
    snprintf(a, sizeof a, "%s/figures", st->dir);
    snprintf(b, sizeof b, "%s/figures", st->target);
    struct stat sb;
    if (lstat(a, &sb) == 0) {
        int rc = renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
        if (rc != 0 && errno == ENOENT) rc = rename(a, b);
        if (rc != 0) return mb_err_set(err, MB_ERUN, "%s: cannot put in place: %s", b, strerror(errno));
    }
    /* the pages last: a reader of report.html finds its figures new */
    static const char *const order[] = {"summary.csv", "fits.csv", "verdicts.csv", "summary.json",
                                        "report.md", "report.html"};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        snprintf(a, sizeof a, "%s/%s", st->dir, order[i]);
        snprintf(b, sizeof b, "%s/%s", st->target, order[i]);
        if (lstat(a, &sb) == 0 && rename(a, b) != 0)
            return mb_err_set(err, MB_ERUN, "%s: cannot put in place: %s", b, strerror(errno));
    }
    return MB_OK;
}

int mb_rpt_stage_commit(mb_rpt_stage *st, mb_err *err)
{
    int rc = MB_OK;
    struct stat sb;
    if (st->in_place) {
        rc = commit_entries(st, err);
    } else if (stat(st->target, &sb) != 0) {
        if (rename(st->dir, st->target) != 0)
            rc = mb_err_set(err, MB_ERUN, "%s: cannot rename the staging folder into place: %s", st->target,
                            strerror(errno));
    } else if (carry(st->target, st->dir, 1) == 0 &&
               renameat2(AT_FDCWD, st->dir, AT_FDCWD, st->target, RENAME_EXCHANGE) == 0) {
        /* the staging path now names the old report */
    } else {
        /* a file system without the swap, or an entry that cannot be linked:
         * what was carried is removed again, the entries go one by one */
        char keep[sizeof st->dir];
        snprintf(keep, sizeof keep, "%s", st->dir);
        DIR *d = opendir(keep);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (report_entry(e->d_name) || !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[PATH_MAX * 2];
            snprintf(p, sizeof p, "%s/%s", keep, e->d_name);
            struct stat lb;
            if (lstat(p, &lb) == 0 && S_ISDIR(lb.st_mode)) remove_tree(p);
            else unlink(p);
        }
        if (d) closedir(d);
        rc = commit_entries(st, err);
    }
    remove_tree(st->dir);
    mb_outfile_remove_dir_on_signal(NULL);
    st->done = 1;
    return rc;
}

void mb_rpt_stage_msg(const mb_rpt_stage *st, char *msg, size_t size)
{
    char staged[sizeof st->dir];
    snprintf(staged, sizeof staged, "%s", st->dir);
    if (!staged[0]) return;
    size_t ls = strlen(staged), lt = strlen(st->target);
    char *out = malloc(size);
    if (!out) return;
    size_t o = 0;
    for (const char *p = msg; *p && o + 1 < size;) {
        if (!strncmp(p, staged, ls)) {
            size_t k = lt < size - 1 - o ? lt : size - 1 - o;
            memcpy(out + o, st->target, k);
            o += k;
            p += ls;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    memcpy(msg, out, o + 1);
    free(out);
}
