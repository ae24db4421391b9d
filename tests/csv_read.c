/* csv_read.c — the one CSV reader (model/csvread.c, libcsv): fields,
 * quoting, their lines and columns, lines taken before the tokenizer, and
 * the errors, each case one row, from a text and from a file; a file read
 * in pieces gives what its whole text gives. */
#include "mb_test.h"
#include "membound_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct got {
    char text[1024]; /* records as "f1|f2|...;", each field "s@line:col" */
    int raw;         /* lines taken by raw_line */
} got;

static int on_raw(void *ctx, const char *line, size_t len, int line_no, int *taken, mb_err *err)
{
    got *g = ctx;
    (void)line_no, (void)err;
    if (len && line[0] == '#') { *taken = 1; g->raw++; }
    return MB_OK;
}

static int on_record(void *ctx, mb_csv_record *rec, mb_err *err)
{
    got *g = ctx;
    for (int i = 0; i < rec->n; i++)
        snprintf(g->text + strlen(g->text), sizeof g->text - strlen(g->text), "%s%s@%d:%d", i ? "|" : "",
                 rec->f[i].s, rec->f[i].line, rec->f[i].col);
    snprintf(g->text + strlen(g->text), sizeof g->text - strlen(g->text), ";");
    if (!strcmp(rec->f[0].s, "stop")) return mb_err_set(err, MB_EINPUT, "stopped at line %d", rec->line);
    return MB_OK;
}

static const struct {
    const char *in;
    int rc;
    const char *want; /* records, or the error's text */
    int raw;
} cases[] = {
    {"a,b\n1,2\n", MB_OK, "a@1:1|b@1:3;1@2:1|2@2:3;", 0},
    {"a,\"b, c\",\"d\"\"e\"\n", MB_OK, "a@1:1|b, c@1:3|d\"e@1:10;", 0},
    {" a , b \t\n", MB_OK, "a@1:1|b@1:5;", 0},            /* spaces around unquoted fields trimmed */
    {"a,b\r\n\r\n1,2\r\n", MB_OK, "a@1:1|b@1:3;1@3:1|2@3:3;", 0}, /* CR LF, a blank line */
    {"\xEF\xBB\xBFx,y\n", MB_OK, "x@1:1|y@1:3;", 0},       /* byte order mark */
    {"# a \"comment, with quotes\nx\n", MB_OK, "x@2:1;", 1},
    {"\"x\ny\",z\n", MB_OK, "x\ny@1:1|z@2:4;", 0},         /* a quoted newline */
    {"a,,\n", MB_OK, "a@1:1|@1:3|@1:4;", 0},              /* empty fields, a trailing comma */
    {"a,b", MB_OK, "a@1:1|b@1:3;", 0},                    /* no newline at the end */
    {"a,\"b\"x\n", MB_EINPUT, "t.csv:1:6: malformed quoted field", 0},
    {"a,b\"c\n", MB_EINPUT, "t.csv:1:4: malformed quoted field", 0},
    {"a,b\n1,\"unterminated\n", MB_EINPUT, "t.csv:2:3: unterminated quoted field", 0},
    {"x\nstop,1\nnever\n", MB_EINPUT, "stopped at line 2", 0}, /* a callback's status stops the read */
};

/* A digest of every record of a big input: count, fields, a hash of their
 * text and positions. */
typedef struct digest {
    long records, fields;
    unsigned long long h;
    int raw; /* '#' lines taken */
} digest;

/* on_raw for a digest: on_raw's got is larger than a digest (its raw count
 * lay past the digest, in the caller's stack: ASan saw it at -O1) */
static int on_raw_digest(void *ctx, const char *line, size_t len, int line_no, int *taken, mb_err *err)
{
    digest *d = ctx;
    (void)line_no, (void)err;
    if (len && line[0] == '#') { *taken = 1; d->raw++; }
    return MB_OK;
}

static int on_record_digest(void *ctx, mb_csv_record *rec, mb_err *err)
{
    digest *d = ctx;
    (void)err;
    d->records++;
    for (int i = 0; i < rec->n; i++, d->fields++) {
        for (const char *c = rec->f[i].s; *c; c++) d->h = (d->h ^ (unsigned char)*c) * 0x100000001b3ull;
        d->h = (d->h ^ (unsigned)rec->f[i].line * 31u ^ (unsigned)rec->f[i].col) * 0x100000001b3ull;
    }
    return MB_OK;
}

static char path[64];

static void write_file(const char *text, size_t len)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp && fwrite(text, 1, len, fp) == len);
    if (fp) fclose(fp);
}

/* A file read in pieces gives what the whole text gives: records that cross
 * the 1 MiB pieces, a line of 3 MiB, a quoted field over lines at a piece's
 * end; a bad byte past the first piece at its own line. */
static void pieces(void)
{
    size_t cap = (size_t)12 << 20, len = 0;
    char *t = malloc(cap);
    CHECK(t != NULL);
    if (!t) return;
    len += (size_t)snprintf(t, cap, "\xEF\xBB\xBF" "a,b,c\n# note\n");
    for (int i = 0; len < ((size_t)5 << 20); i++) {
        len += (size_t)snprintf(t + len, cap - len, i % 5000 == 4999 ? "%d,\"q\nx,\"\"y\",%d\n" : "%d,row,%d\n",
                                i, i * 7);
        if (i == 60000) { /* one line of 3 MiB */
            len += (size_t)snprintf(t + len, cap - len, "long,");
            memset(t + len, 'z', (size_t)3 << 20);
            len += (size_t)3 << 20;
            len += (size_t)snprintf(t + len, cap - len, ",end\n");
        }
    }
    len += (size_t)snprintf(t + len, cap - len, "last,no,newline");
    static const mb_csv_ops dops = {on_raw_digest, on_record_digest};
    digest whole = {0}, file = {0};
    mb_err e = {{0}};
    CHECK_EQ_I64(mb_csv_read(t, len, "t.csv", &dops, &whole, &e), MB_OK);
    write_file(t, len);
    int lines = 0;
    CHECK_EQ_I64(mb_csv_read_file(path, (size_t)1 << 30, &dops, &file, &lines, &e), MB_OK);
    CHECK(whole.records > 100000 && whole.records == file.records && whole.fields == file.fields &&
          whole.h == file.h && whole.raw == 1 && file.raw == 1);
    int nl = 0;
    for (size_t i = 0; i < len; i++) nl += t[i] == '\n';
    CHECK_EQ_I64(lines, nl + 1);
    /* over the limit while reading: refused, in the limit's words */
    CHECK_EQ_I64(mb_csv_read_file(path, len - 1, &dops, &file, NULL, &e), MB_EINPUT);
    CHECK(strstr(e.msg, "this input may have") != NULL);
    /* invalid UTF-8 on a line in the third piece */
    size_t at = ((size_t)2 << 20) + 100;
    char *bad = (char *)memchr(t + at, '\n', len - at) + 1;
    int bad_line = 1;
    for (const char *c = t; c < bad; c++) bad_line += *c == '\n';
    *bad = (char)0xff;
    write_file(t, len);
    char want[64];
    snprintf(want, sizeof want, "%s:%d:1: invalid UTF-8", path, bad_line);
    CHECK_EQ_I64(mb_csv_read_file(path, (size_t)1 << 30, &dops, &file, NULL, &e), MB_EINPUT);
    CHECK(strstr(e.msg, want) != NULL);
    if (!strstr(e.msg, want)) fprintf(stderr, "  got '%s', want '%s'\n", e.msg, want);
    free(t);
}

int main(void)
{
    static const mb_csv_ops ops = {on_raw, on_record};
    snprintf(path, sizeof path, "/tmp/csv_read.%ld.csv", (long)getpid());
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int from_file = 0; from_file < 2; from_file++) {
            got g = {{0}, 0};
            mb_err e = {{0}};
            int rc;
            if (from_file) {
                write_file(cases[i].in, strlen(cases[i].in));
                rc = mb_csv_read_file(path, 1 << 20, &ops, &g, NULL, &e);
            } else {
                rc = mb_csv_read(cases[i].in, strlen(cases[i].in), "t.csv", &ops, &g, &e);
            }
            CHECK_EQ_I64(rc, cases[i].rc);
            const char *have = rc ? e.msg : g.text, *want = cases[i].want;
            if (rc && from_file && !strncmp(want, "t.csv", 5)) have = strstr(have, ".csv") ? strstr(have, ".csv") + 4 : have, want += 5;
            if (!strstr(have, want) || (!rc && strcmp(have, want) != 0)) {
                CHECK(!"case output");
                fprintf(stderr, "  case %zu%s: got '%s', want '%s'\n", i, from_file ? " (file)" : "", have, want);
            }
            CHECK_EQ_I64(g.raw, cases[i].raw);
        }
    }
    pieces();
    unlink(path);
    return mb_test_done();
}
