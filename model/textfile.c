/* textfile.c — reading a whole input text file (variant, device spec, CSV)
 * safely: only a regular file (a FIFO, device or directory is refused before
 * any read, so /dev/zero or a FIFO with no writer cannot hang a run), at most
 * a given size, no NUL byte, valid UTF-8, errors at file:line:col. Does not
 * parse what it reads. */
#include "membound_model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static int utf8_len(const unsigned char *s, size_t left)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int n;
    unsigned min;
    if ((c & 0xe0) == 0xc0) n = 2, min = 0x80, c &= 0x1f;
    else if ((c & 0xf0) == 0xe0) n = 3, min = 0x800, c &= 0x0f;
    else if ((c & 0xf8) == 0xf0) n = 4, min = 0x10000, c &= 0x07;
    else return 0;
    if ((size_t)n > left) return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    return n;
}

int mb_text_check(const char *text, size_t len, const char *name, mb_err *err)
{
    return mb_text_check_at(text, len, name, 1, err);
}

int mb_text_check_at(const char *text, size_t len, const char *name, int first_line, mb_err *err)
{
    const unsigned char *s = (const unsigned char *)text;
    int line = first_line, col = 1;
    for (size_t i = 0; i < len;) {
        if (s[i] == '\0')
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: a NUL byte: not a text file", name, line, col);
        if (s[i] < 0x80) { /* ASCII: most of a CSV */
            if (s[i] == '\n') line++, col = 1;
            else col++;
            i++;
            continue;
        }
        int n = utf8_len(s + i, len - i);
        if (n == 0)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: invalid UTF-8 (byte 0x%02x)", name, line, col, s[i]);
        col++;
        i += (size_t)n;
    }
    return MB_OK;
}

static int check_fd(int fd, const char *path, size_t max_bytes, mb_err *err);

/* The checks of mb_text_check over s[0..len) from *line, *col on; with
 * more to come (!last), a UTF-8 sequence cut by the end of s is left for
 * the next piece: *done gets the bytes checked. */
static int check_piece(const unsigned char *s, size_t len, int last, const char *name, int *line, int *col,
                       size_t *done, mb_err *err)
{
    size_t i = 0;
    while (i < len) {
        if (s[i] == '\0')
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: a NUL byte: not a text file", name, *line, *col);
        if (s[i] < 0x80) {
            if (s[i] == '\n') ++*line, *col = 1;
            else ++*col;
            i++;
            continue;
        }
        size_t want = (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3 : (s[i] & 0xf8) == 0xf0 ? 4 : 1;
        if (!last && want > len - i) break;
        int n = utf8_len(s + i, len - i);
        if (n == 0)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: invalid UTF-8 (byte 0x%02x)", name, *line, *col, s[i]);
        ++*col;
        i += (size_t)n;
    }
    *done = i;
    return MB_OK;
}

/* Pieces the file is checked in by mb_text_check_fd: memory is one piece
 * whatever the file's size (a 1 GiB trace on one line included). */
#define CHECK_PIECE_BYTES ((size_t)1 << 20)

int mb_text_check_fd(int fd, const char *path, size_t max_bytes, mb_err *err)
{
    unsigned char *buf = malloc(CHECK_PIECE_BYTES);
    if (!buf) return mb_err_set(err, MB_ERUN, "%s: out of memory", path);
    size_t have = 0, total = 0;
    int line = 1, col = 1, rc = MB_OK;
    for (;;) {
        ssize_t got = read(fd, buf + have, CHECK_PIECE_BYTES - have);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            rc = mb_err_set(err, MB_EINPUT, "%s: cannot read: %s", path, strerror(errno));
            break;
        }
        total += (size_t)got;
        if (total > max_bytes) {
            rc = mb_err_set(err, MB_EINPUT, "%s: more than the %zu bytes this input may have", path, max_bytes);
            break;
        }
        have += (size_t)got;
        size_t done = 0;
        if ((rc = check_piece(buf, have, got == 0, path, &line, &col, &done, err)) || got == 0) break;
        memmove(buf, buf + done, have - done); /* at most 3 bytes of a cut sequence */
        have -= done;
    }
    free(buf);
    return rc;
}

/* Opens path for reading when it is a regular file of at most max_bytes
 * (refused before any read otherwise). */
static int open_checked(const char *path, size_t max_bytes, int *fd_out, mb_err *err)
{
    /* O_NONBLOCK: opening a FIFO with no writer would block; fstat first */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return mb_err_set(err, MB_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    int rc = check_fd(fd, path, max_bytes, err);
    if (rc) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return MB_OK;
}

int mb_text_open(const char *path, size_t max_bytes, int *fd_out, mb_err *err)
{
    *fd_out = -1;
    return open_checked(path, max_bytes, fd_out, err);
}

int mb_text_read(const char *path, size_t max_bytes, char **out, size_t *len_out, mb_err *err)
{
    *out = NULL;
    if (len_out) *len_out = 0;
    /* O_NONBLOCK: opening a FIFO with no writer would block; fstat first */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return mb_err_set(err, MB_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    int rc = mb_text_read_fd(fd, path, max_bytes, out, len_out, err);
    close(fd);
    return rc;
}

/* A regular file of at most max_bytes, made blocking again. */
static int check_fd(int fd, const char *path, size_t max_bytes, mb_err *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return mb_err_set(err, MB_EINPUT, "%s: cannot read: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return mb_err_set(err, MB_EINPUT, "%s: is %s: expected a regular file", path, kind_of(st.st_mode));
    if ((uint64_t)st.st_size > max_bytes)
        return mb_err_set(err, MB_EINPUT, "%s: %lld bytes, more than the %zu this input may have", path,
                          (long long)st.st_size, max_bytes);
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return MB_OK;
}

int mb_text_read_fd(int fd, const char *path, size_t max_bytes, char **out, size_t *len_out, mb_err *err)
{
    *out = NULL;
    if (len_out) *len_out = 0;
    int crc = check_fd(fd, path, max_bytes, err);
    if (crc) return crc;
    struct stat st;
    if (fstat(fd, &st) != 0) return mb_err_set(err, MB_EINPUT, "%s: cannot read: %s", path, strerror(errno));
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) return mb_err_set(err, MB_ERUN, "%s: out of memory", path);
    /* read to the end (the file may have grown since fstat, up to the cap) */
    for (;;) {
        ssize_t got = read(fd, buf + len, cap - len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            return mb_err_set(err, MB_EINPUT, "%s: cannot read: %s", path, strerror(e));
        }
        if (got == 0) break;
        len += (size_t)got;
        if (len == cap) {
            if (cap > max_bytes) {
                free(buf);
                return mb_err_set(err, MB_EINPUT, "%s: more than the %zu bytes this input may have", path,
                                  max_bytes);
            }
            size_t ncap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                return mb_err_set(err, MB_ERUN, "%s: out of memory", path);
            }
            buf = nb;
            cap = ncap;
        }
    }
    buf[len] = '\0';
    int rc = mb_text_check(buf, len, path, err);
    if (rc != MB_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    if (len_out) *len_out = len;
    return MB_OK;
}
