/* mb_files.h — files in and out: input text files, CSV reading (the
 * library mb_csv, libcsv), trusted folders for caches and implicit inputs,
 * output files written whole or not at all. Knows no graph or device. */
#ifndef MB_FILES_H
#define MB_FILES_H

#include "mb_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- input text files ------------------------------------------------- */

/* Reads the whole of path into *out (malloc'd, NUL-terminated; *len_out gets
 * its length, may be NULL). Only a regular file is read: a directory, FIFO
 * or device is refused before any read, so nothing can block or run
 * forever. MB_EINPUT with "path: ..." when it cannot be opened, is not a
 * regular file or is larger than max_bytes, or (see mb_text_check) holds a
 * NUL byte or invalid UTF-8. */
int mb_text_read(const char *path, size_t max_bytes, char **out, size_t *len_out, mb_err *err);
/* The same from an open descriptor fd (not closed), path naming it in
 * messages. */
int mb_text_read_fd(int fd, const char *path, size_t max_bytes, char **out, size_t *len_out, mb_err *err);

/* MB_OK when text[0..len) is valid UTF-8 without NUL bytes; else MB_EINPUT
 * with "name:line:col: ..." at the first bad byte. */
int mb_text_check(const char *text, size_t len, const char *name, mb_err *err);
/* The same for a piece of a file that starts at line first_line (whole
 * lines: a piece cut after a '\n' splits no UTF-8 sequence). */
int mb_text_check_at(const char *text, size_t len, const char *name, int first_line, mb_err *err);
/* The checks of mb_text_read over what fd holds from its offset to its
 * end (not kept: read in 1 MiB pieces): at most max_bytes, no NUL byte,
 * valid UTF-8, the same messages at path:line:col. fd is left at its end. */
int mb_text_check_fd(int fd, const char *path, size_t max_bytes, mb_err *err);
/* Opens path for reading (*fd_out, to be closed by the caller) with the
 * checks of mb_text_read that need no read: a regular file of at most
 * max_bytes; the same messages. */
int mb_text_open(const char *path, size_t max_bytes, int *fd_out, mb_err *err);

/* ---- CSV reading (model/csvread.c, libcsv: the library mb_csv) --------- */

/* One field of a record: its text (unquoted, NUL-terminated, modifiable
 * until the record callback returns), its length and where it starts. */
typedef struct mb_csv_field {
    char *s;
    size_t len;
    int line, col;  /* 1-based; col counts bytes */
} mb_csv_field;
typedef struct mb_csv_record {
    mb_csv_field *f;
    int n;          /* fields, >= 1 */
    int line;       /* where the record starts */
    int end_col;    /* the column just after its last byte (before the newline) */
} mb_csv_record;
/* raw_line (may be NULL) sees each line that starts a record before the
 * tokenizer does (without its newline, not NUL-terminated) and sets *taken
 * to 1 to keep it out of the CSV ('#' lines, a profiler's own output);
 * record gets each record. Both return MB_OK, or a status (err set) that
 * stops the read. */
typedef struct mb_csv_ops {
    int (*raw_line)(void *ctx, const char *line, size_t len, int line_no, int *taken, mb_err *err);
    int (*record)(void *ctx, mb_csv_record *rec, mb_err *err);
} mb_csv_ops;

/* Reads text[0..len) as CSV (RFC 4180 quoting, strict: a stray quote is an
 * error; spaces around unquoted fields trimmed; blank lines skipped; CR LF
 * or LF line ends; a leading UTF-8 byte order mark skipped), calling ops on
 * ctx. path names the text in messages. Returns MB_OK; MB_EINPUT with
 * "path:line:col: ..." for a malformed or unterminated quoted field; or the
 * first status a callback returned; MB_ERUN when memory runs out. */
int mb_csv_read(const char *text, size_t len, const char *path, const mb_csv_ops *ops, void *ctx,
                mb_err *err);
/* The same for the file at path, read in 1 MiB pieces (memory: a piece, the
 * longest line and one record, whatever the file's size): refused as
 * mb_text_read refuses (not a regular file, more than max_bytes, a NUL byte
 * or invalid UTF-8 at path:line:col: checked piece by piece, so the records
 * before a bad byte have been handed to ops). *lines (may be NULL) gets the
 * file's lines (a last line without its newline counted; 1 when empty). */
int mb_csv_read_file(const char *path, size_t max_bytes, const mb_csv_ops *ops, void *ctx, int *lines,
                     mb_err *err);
/* The same from an open descriptor fd (from its offset; not closed), path
 * naming it in messages (opened by mb_text_open: a regular file). */
int mb_csv_read_fd(int fd, const char *path, size_t max_bytes, const mb_csv_ops *ops, void *ctx, int *lines,
                   mb_err *err);

/* ---- trusted folders (caches, implicit inputs) -------------------------- */

/* A folder nobody else can change, held open: the rule for every cache and
 * every implicit input (model/trusted_dir.c). */
typedef struct mb_tdir {
    int fd;              /* the folder (O_DIRECTORY), -1 when closed */
    char path[4096];     /* as given, for messages */
} mb_tdir;

/* Opens path (relative: to the working folder), walking it from / one
 * component at a time with O_NOFOLLOW and fstat on each descriptor: every
 * folder on the way must be root's or this user's and not writable by group
 * or others unless sticky (/tmp); the folder itself this user's and writable
 * by nobody else (a folder shared by a group is refused on purpose). A
 * symbolic link on the way is followed only when root or this user owns it.
 * With create, missing folders are made 0700. MB_OK; MB_EINPUT (refused)
 * with one line "PATH not used: why (how to fix it)"; MB_ERUN when it cannot
 * be opened or created. */
int mb_tdir_open(mb_tdir *d, const char *path, int create, mb_err *err);
/* Closes d (and releases its lock); safe on a closed one. */
void mb_tdir_close(mb_tdir *d);
/* Opens the file name (no '/') in d for reading (O_NOFOLLOW) into *fd (the
 * caller closes it): MB_OK when it is this user's regular file writable by
 * nobody else; 1 when there is no such file; MB_EINPUT with "PATH/name not
 * used: why (how to fix it)" for a link, another user's file, one others can
 * write, or one that is not a regular file; MB_ERUN otherwise. */
int mb_tdir_open_file(const mb_tdir *d, const char *name, int *fd, mb_err *err);
/* Writes text[0..len) as d/name, mode 0600, whole or not at all: a temporary
 * in d renamed over name, so a link named name is replaced, never written
 * through. MB_OK or MB_ERUN (nothing replaced). */
int mb_tdir_write_file(const mb_tdir *d, const char *name, const char *text, size_t len, mb_err *err);
/* Takes an exclusive flock on d, waiting up to timeout_s; released by
 * mb_tdir_close (or the process's end: nothing is left behind). MB_OK, or
 * MB_ERUN "PATH is held by another membound run (waited N s)". */
int mb_tdir_lock(mb_tdir *d, double timeout_s, mb_err *err);

/* ---- output files ----------------------------------------------------- */

/* An output file that appears whole or not at all. Its path is walked one
 * folder at a time and its folder held open until commit; a symbolic link on
 * the way (the file itself too) is followed only when nobody else can have
 * planted it: in a folder that only you or root can change, or in a sticky
 * one (/tmp) when you or root own the link. A regular file (or a new one) is
 * written to a temporary in its folder and renamed over it at commit
 * (unnamed where the file system allows: nothing is left even on SIGKILL;
 * else a short hidden .mb-PID-N.tmp, removed on SIGINT/TERM/HUP/PIPE/QUIT);
 * a link's target is replaced, the link kept; a character device
 * (/dev/null, /dev/stdout) is written directly. */
typedef struct mb_outfile {
    void *fp;            /* FILE *, open for writing (its writes through fd) */
    int fd;              /* the file's descriptor, -1 none */
    int write_errno;     /* the first write that failed: its errno (ENOSPC: the
                            disk is full), 0 none: what commit reports */
    char path[4096];     /* for messages: the path given, or, through a link, the file written */
    int dirfd;           /* the file's folder, held open from open to commit */
    int held;            /* 1: dirfd is open */
    char name[256];      /* the file's name in that folder */
    char tmp[64];        /* named temporary in that folder while one exists, else "" */
    char kept[4400];     /* after a commit that kept this file beside path: its path, else "" */
    int anon;            /* 1: unnamed temporary (O_TMPFILE) until commit */
    int direct;          /* 1: a device, written directly */
    int was_there;       /* the file existed at open, as below: a commit replaces only that */
    unsigned long long was_dev, was_ino, was_size;
    long long was_mtime_ns;
} mb_outfile;

/* Opens path for writing as above. Refuses, with MB_EINPUT and before any
 * work is done, a directory, FIFO, socket or block device, a dangling link,
 * a link that nobody else must be trusted with (above: "PATH: not written:
 * LINK is a symbolic link of uid N in a folder others can change"), and a
 * folder that cannot be written. */
int mb_outfile_open(mb_outfile *o, const char *path, mb_err *err);
/* MB_OK when path can be walked to its last name with the link rule above
 * (for an output folder that is not written through mb_outfile: report's
 * -o DIR); else MB_EINPUT with the line mb_outfile_open would give. */
int mb_outfile_check_path(const char *path, mb_err *err);
/* Flushes, syncs, closes and renames into place; MB_ERUN (nothing replaced,
 * temporary removed) on any write error, a full disk included. When another
 * run wrote path since it was opened (checked under an flock on its folder,
 * held for the renames only), nothing is replaced either: this run's file is
 * kept beside it as NAME.conflict-PID (o->kept) and MB_ERUN says so in one
 * line, so neither run's rows are lost unseen. */
int mb_outfile_commit(mb_outfile *o, mb_err *err);
/* Commits n files together: every file is flushed, synced and closed before
 * the first rename, so a write error anywhere replaces none of them. */
int mb_outfile_commit_all(mb_outfile *const *o, int n, mb_err *err);
/* The same for files that hold part of what was asked (an interrupted run):
 * a file that was there at open is never replaced by them. When one of the n
 * was there, all n are kept beside their files as NAME.partial-PID (each
 * o[i]->kept names it) and *kept is 1; else they are committed in place and
 * *kept is 0. */
int mb_outfile_commit_partial(mb_outfile *const *o, int n, int *kept, mb_err *err);
void mb_outfile_abort(mb_outfile *o);              /* close, remove temp, close the folder */
/* MB_OK when none of the n_out outputs is one of the n_in inputs or another
 * of the outputs: the same file (device and inode; through a link or another
 * spelling of its path), or, for an output not there yet, the same folder
 * and name. Else MB_EINPUT, "OUT: is also the input IN: give another
 * output" or "OUT: written twice (also as OUT2)". For checking before any
 * work; an input that is not a file (a built-in name) and a path that
 * cannot be looked up are passed over (mb_outfile_open reports the latter).
 * NULL entries are skipped. */
int mb_outfile_check_distinct(const char *const *outputs, int n_out, const char *const *inputs, int n_in,
                              mb_err *err);
/* Installs SIGINT/TERM/HUP/PIPE/QUIT handlers that remove named temporaries
 * and re-raise the signal; a signal that was ignored at start (nohup) stays
 * ignored. Call once from main. */
void mb_outfile_install_signal_cleanup(void);
/* Those handlers also note the signal (mb_intr_note, mb_child.h), end the
 * child being waited for (mb_child_run) with its group and remove its
 * temporaries, so an interrupted command leaves no child running. And while
 * path is set (not NULL or ""), they remove that folder with what is in it,
 * two levels down (a report's staging folder). NULL stops it. */
void mb_outfile_remove_dir_on_signal(const char *path);

#ifdef __cplusplus
}
#endif
#endif
