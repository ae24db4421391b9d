/* csvread.c — the one CSV reader of the project: libcsv (strict RFC 4180
 * quoting) splits a text into records and fields; this file adds what libcsv
 * does not give: each field's line and column, lines taken whole before they
 * reach the tokenizer ('#' provenance, a profiler's own output), a byte order
 * mark. Does not interpret fields (reports/csv.c, import/ do). */
#define _GNU_SOURCE /* memrchr */
#include "membound_model.h"

#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct reader {
    const mb_csv_ops *ops;
    void *ctx;
    const char *path;
    mb_err *err;
    int rc;              /* first status a callback returned */
    int line;            /* the raw line being fed, 1-based */
    int field_line, field_col; /* where the next field starts */
    int next_col;        /* column just after the chunk being fed */
    int in_record;       /* a record is open (a quoted field spans lines) */
    int rec_line;        /* where the open record started */
    char *buf;           /* the open record's fields, each NUL-terminated */
    size_t len, cap;
    struct pos { size_t off, len; int line, col; } *pos;
    int n, cap_pos;
    mb_csv_field *fields; /* handed to ops->record */
    int cap_fields;
    int end_col;         /* the column after the record's last byte */
} reader;

static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->rc) return;
    if (r->len + len + 1 > r->cap || r->n == r->cap_pos) {
        size_t cap = r->cap ? r->cap : 256;
        while (cap < r->len + len + 1) cap *= 2;
        char *b = realloc(r->buf, cap);
        struct pos *p = b ? realloc(r->pos, (size_t)(r->cap_pos + 16) * sizeof *p) : NULL;
        if (b) r->buf = b, r->cap = cap;
        if (!p) { r->rc = mb_err_set(r->err, MB_ERUN, "out of memory"); return; }
        r->pos = p;
        r->cap_pos += 16;
    }
    if (len) memcpy(r->buf + r->len, s, len);
    r->buf[r->len + len] = '\0';
    r->pos[r->n++] = (struct pos){r->len, len, r->field_line, r->field_col};
    r->len += len + 1;
    r->field_line = r->line;
    r->field_col = r->next_col;
}

static void on_record(int c, void *data)
{
    reader *r = data;
    r->in_record = 0;
    r->field_line = r->line + 1;
    r->field_col = 1;
    if (r->rc) return;
    if (r->n > r->cap_fields) {
        mb_csv_field *f = realloc(r->fields, (size_t)r->n * sizeof *f);
        if (!f) { r->rc = mb_err_set(r->err, MB_ERUN, "out of memory"); return; }
        r->fields = f;
        r->cap_fields = r->n;
    }
    for (int i = 0; i < r->n; i++)
        r->fields[i] = (mb_csv_field){r->buf + r->pos[i].off, r->pos[i].len, r->pos[i].line, r->pos[i].col};
    mb_csv_record rec = {r->fields, r->n, r->rec_line, r->end_col};
    r->rc = r->ops->record(r->ctx, &rec, r->err);
    r->n = 0;
    r->len = 0;
    (void)c;
}

/* Feeds one raw line (with its '\n' if any) to libcsv in chunks that end at
 * each comma, so that a field's column is known: a field ends at the end of
 * a chunk. Returns MB_OK or the status set. */
static int feed_line(reader *r, struct csv_parser *p, const char *ls, size_t n)
{
    size_t body = n;
    while (body && (ls[body - 1] == '\n' || ls[body - 1] == '\r')) body--;
    if (!r->in_record) {
        r->in_record = 1;
        r->rec_line = r->line;
        r->field_line = r->line;
        r->field_col = 1;
    }
    r->end_col = (int)body + 1;
    for (size_t off = 0; off < n;) {
        const char *comma = memchr(ls + off, ',', n - off);
        size_t end = comma ? (size_t)(comma - ls) + 1 : n;
        r->next_col = (int)end + 1;
        size_t done = csv_parse(p, ls + off, end - off, on_field, on_record, r);
        if (r->rc) return r->rc;
        if (done < end - off) {
            if (csv_error(p) == CSV_EPARSE)
                return mb_err_set(r->err, MB_EINPUT, "%s:%d:%d: malformed quoted field (a quote inside a "
                                  "field must be doubled, and nothing may follow the closing quote)",
                                  r->path, r->line, (int)(off + done) + 1);
            return mb_err_set(r->err, MB_ERUN, "%s:%d: %s", r->path, r->line, csv_strerror(csv_error(p)));
        }
        off = end;
    }
    return MB_OK;
}

/* 1 when the line holds only spaces and tabs (a blank line: libcsv skips it
 * too, but it reaches no raw_line callback either). */
static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
    return 1;
}

/* Feeds the whole lines of text[0..len) (the last one may lack its '\n'
 * only at the end of the input); first: the input's first bytes (a byte
 * order mark skipped). */
static int read_lines(reader *r, struct csv_parser *p, const char *text, size_t len, int first)
{
    const char *t = text, *end = text + len;
    if (first && len >= 3 && !memcmp(t, "\xEF\xBB\xBF", 3)) t += 3; /* UTF-8 byte order mark */
    while (t < end) {
        const char *nl = memchr(t, '\n', (size_t)(end - t));
        size_t n = nl ? (size_t)(nl - t) + 1 : (size_t)(end - t);
        r->line++;
        if (!r->in_record) {
            size_t body = n;
            while (body && (t[body - 1] == '\n' || t[body - 1] == '\r')) body--;
            int taken = blank(t, body);
            if (!taken && r->ops->raw_line) {
                int rc = r->ops->raw_line(r->ctx, t, body, r->line, &taken, r->err);
                if (rc) return rc;
            }
            if (taken) { t += n; continue; }
        }
        int rc = feed_line(r, p, t, n);
        if (rc) return rc;
        t += n;
    }
    return MB_OK;
}

/* The end of the input: the last record closed, an open quote reported. */
static int finish(reader *r, struct csv_parser *p)
{
    int open_line = r->field_line, open_col = r->field_col, was_open = r->in_record;
    if (csv_fini(p, on_field, on_record, r) != 0 || (was_open && csv_error(p) == CSV_EPARSE))
        return mb_err_set(r->err, MB_EINPUT, "%s:%d:%d: unterminated quoted field at the end of the file (a truncated file?)",
                          r->path, open_line, open_col);
    return r->rc;
}

static void reader_free(reader *r, struct csv_parser *p)
{
    csv_free(p);
    free(r->buf);
    free(r->pos);
    free(r->fields);
}

/* A strict parser whose field buffer grows 64 KiB at a time: libcsv grows it
 * by its block size (128 B by default) and copies it each time, so a field
 * of a CSV's embedded texts (a 3 MiB provenance field in tests/csv_read.c)
 * cost thousands of reallocations: 80 s of that test's run under ASan. */
static int parser_init(struct csv_parser *p)
{
    if (csv_init(p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) return -1;
    csv_set_blk_size(p, 65536);
    return 0;
}

int mb_csv_read(const char *text, size_t len, const char *path, const mb_csv_ops *ops, void *ctx,
                mb_err *err)
{
    struct csv_parser p;
    if (parser_init(&p) != 0) return mb_err_set(err, MB_ERUN, "out of memory");
    reader r = {.ops = ops, .ctx = ctx, .path = path, .err = err, .field_line = 1, .field_col = 1};
    int rc = read_lines(&r, &p, text, len, 1);
    if (!rc) rc = finish(&r, &p);
    reader_free(&r, &p);
    return rc;
}

/* ---- a file read in pieces ----------------------------------------------
 * 1 MiB at a time: the whole lines of each piece are checked as text
 * (mb_text_check_at) and fed; a partial last line waits for the next piece
 * (the piece grows for a longer line). Memory: the piece and one record. */

#define PIECE ((size_t)1 << 20)

typedef struct piece {
    char *buf;
    size_t cap, have;    /* bytes held (a partial line at the start) */
    size_t total;        /* bytes read so far */
    size_t newlines;
    int line;            /* lines checked so far */
    char last;           /* the file's last byte */
} piece;

/* Checks and feeds buf[0..n) (whole lines, or the end of the file). */
static int take(reader *r, struct csv_parser *p, piece *pc, size_t n, int first)
{
    int rc = mb_text_check_at(pc->buf, n, r->path, pc->line + 1, r->err);
    if (!rc) rc = read_lines(r, p, pc->buf, n, first);
    pc->line = r->line;
    return rc;
}

static int read_pieces(reader *r, struct csv_parser *p, int fd, size_t max_bytes, piece *pc)
{
    int first = 1;
    for (;;) {
        if (pc->have == pc->cap) {
            size_t cap = pc->cap ? 2 * pc->cap : PIECE;
            char *nb = realloc(pc->buf, cap);
            if (!nb) return mb_err_set(r->err, MB_ERUN, "%s: out of memory", r->path);
            pc->buf = nb;
            pc->cap = cap;
        }
        ssize_t got = read(fd, pc->buf + pc->have, pc->cap - pc->have);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return mb_err_set(r->err, MB_EINPUT, "%s: cannot read: %s", r->path, strerror(errno));
        if (got == 0) break;
        pc->total += (size_t)got;
        if (pc->total > max_bytes)
            return mb_err_set(r->err, MB_EINPUT, "%s: more than the %zu bytes this input may have", r->path,
                              max_bytes);
        for (ssize_t i = 0; i < got; i++) pc->newlines += pc->buf[pc->have + (size_t)i] == '\n';
        pc->last = pc->buf[pc->have + (size_t)got - 1];
        pc->have += (size_t)got;
        const char *nl = memrchr(pc->buf, '\n', pc->have);
        if (!nl) continue; /* a line longer than the piece: read more */
        size_t whole = (size_t)(nl - pc->buf) + 1;
        int rc = take(r, p, pc, whole, first);
        if (rc) return rc;
        first = 0;
        memmove(pc->buf, pc->buf + whole, pc->have - whole);
        pc->have -= whole;
    }
    return pc->have ? take(r, p, pc, pc->have, first) : MB_OK;
}

int mb_csv_read_fd(int fd, const char *path, size_t max_bytes, const mb_csv_ops *ops, void *ctx, int *lines,
                   mb_err *err)
{
    if (lines) *lines = 1;
    struct csv_parser p;
    if (parser_init(&p) != 0) return mb_err_set(err, MB_ERUN, "out of memory");
    reader r = {.ops = ops, .ctx = ctx, .path = path, .err = err, .field_line = 1, .field_col = 1};
    piece pc = {0};
    int rc = read_pieces(&r, &p, fd, max_bytes, &pc);
    if (!rc) rc = finish(&r, &p);
    if (lines) *lines = (int)pc.newlines + (pc.total == 0 || pc.last != '\n');
    free(pc.buf);
    reader_free(&r, &p);
    return rc;
}

int mb_csv_read_file(const char *path, size_t max_bytes, const mb_csv_ops *ops, void *ctx, int *lines,
                     mb_err *err)
{
    if (lines) *lines = 1;
    int fd;
    int rc = mb_text_open(path, max_bytes, &fd, err);
    if (rc) return rc;
    rc = mb_csv_read_fd(fd, path, max_bytes, ops, ctx, lines, err);
    close(fd);
    return rc;
}
