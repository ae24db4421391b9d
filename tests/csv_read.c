/* csv_read.c — the one CSV reader (model/csvread.c, libcsv): fields,
 * quoting, their lines and columns, lines taken before the tokenizer, and
 * the errors, each case one row. */
#include "mb_test.h"
#include "membound_model.h"

#include <stdio.h>
#include <string.h>

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

int main(void)
{
    static const mb_csv_ops ops = {on_raw, on_record};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        got g = {{0}, 0};
        mb_err e = {{0}};
        int rc = mb_csv_read(cases[i].in, strlen(cases[i].in), "t.csv", &ops, &g, &e);
        CHECK_EQ_I64(rc, cases[i].rc);
        const char *have = rc ? e.msg : g.text;
        if (!strstr(have, cases[i].want) || (!rc && strcmp(have, cases[i].want) != 0)) {
            CHECK(!"case output");
            fprintf(stderr, "  case %zu: got '%s', want '%s'\n", i, have, cases[i].want);
        }
        CHECK_EQ_I64(g.raw, cases[i].raw);
    }
    return mb_test_done();
}
