/* mb_test_csv.h — one field of a measurement CSV for the ctest executables,
 * read with the project's one CSV reader (mb_csv_read): a test that includes
 * it links mb_csv. */
#ifndef MB_TEST_CSV_H
#define MB_TEST_CSV_H
#include "membound_model.h"

#include <stdio.h>
#include <string.h>

typedef struct mb_test_csv_ctx {
    const char *name;
    int row, col, seen, found;
    char *out;
    size_t outsz;
} mb_test_csv_ctx;

static inline int mb_test_csv_raw(void *ctx, const char *line, size_t len, int line_no, int *taken, mb_err *err)
{
    (void)ctx, (void)line_no, (void)err;
    *taken = len > 0 && line[0] == '#';
    return MB_OK;
}

static inline int mb_test_csv_rec(void *vctx, mb_csv_record *rec, mb_err *err)
{
    mb_test_csv_ctx *c = vctx;
    (void)err;
    if (c->col == -2) { /* the header */
        c->col = -1;
        for (int i = 0; i < rec->n && c->col < 0; i++)
            if (!strcmp(rec->f[i].s, c->name)) c->col = i;
        return MB_OK;
    }
    if (c->col >= 0 && c->seen++ == c->row && c->col < rec->n) {
        snprintf(c->out, c->outsz, "%s", rec->f[c->col].s);
        c->found = 1;
    }
    return MB_OK;
}

/* The field of column name in data row row (0-based) of a measurement CSV
 * text ('#' lines, a header, rows) into out; 0 when there is no such column
 * or row. Columns are found by name, as readers of the contract do. */
static inline int mb_test_csv_field(const char *csv, int row, const char *name, char *out, size_t outsz)
{
    static const mb_csv_ops ops = {mb_test_csv_raw, mb_test_csv_rec};
    mb_test_csv_ctx c = {name, row, -2, 0, 0, out, outsz};
    mb_err e;
    if (outsz) out[0] = '\0';
    if (!csv || mb_csv_read(csv, strlen(csv), "csv", &ops, &c, &e) != MB_OK) return 0;
    return c.found;
}
#endif
