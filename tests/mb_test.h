/* mb_test.h — a tiny assertion kit for the ctest executables.
 * Each CHECK prints file:line and the failing expression and counts a
 * failure; mb_test_done() prints "N passed, N failed" and returns the exit code. */
#ifndef MB_TEST_H
#define MB_TEST_H
#include <math.h>
#include <stdio.h>
#include <string.h>

static int mb_t_pass, mb_t_fail;

#define CHECK(cond) do { if (cond) mb_t_pass++; else { mb_t_fail++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ_I64(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); \
    if (a_ == b_) mb_t_pass++; else { mb_t_fail++; fprintf(stderr, \
    "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, a_, #b, b_); } } while (0)
#define CHECK_NEAR(a, b, rel) do { double a_ = (a), b_ = (b); \
    if (fabs(a_ - b_) <= (rel) * fabs(b_) + 1e-300) mb_t_pass++; else { mb_t_fail++; \
    fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g (rel %g)\n", __FILE__, __LINE__, \
    #a, a_, b_, (double)(rel)); } } while (0)

/* Field col (0-based) of line (up to its newline) into out, quotes (RFC
 * 4180) removed; 0 when the line has fewer fields. */
static inline int mb_test_csv_nth(const char *line, int col, char *out, size_t outsz)
{
    size_t k = 0;
    int c = 0, inq = 0;
    for (const char *q = line; *q && (inq || (*q != '\n' && *q != '\r')); q++) {
        if (*q == '"') {
            if (inq && q[1] == '"') q++;
            else { inq = !inq; continue; }
        } else if (*q == ',' && !inq) {
            if (c++ == col) break;
            continue;
        }
        if (c == col && k + 1 < outsz) out[k++] = *q;
    }
    if (outsz) out[k] = '\0';
    return c >= col;
}

/* The field of column name in data row row (0-based) of a measurement CSV
 * text ('#' lines, a header, rows) into out; 0 when there is no such column
 * or row. Columns are found by name, as readers of the contract do. */
static inline int mb_test_csv_field(const char *csv, int row, const char *name, char *out,
                                    size_t outsz)
{
    const char *l = csv;
    while (l && *l == '#') l = (l = strchr(l, '\n')) ? l + 1 : NULL;
    if (!l || !*l) return 0;
    int col = -1;
    char f[64];
    for (int i = 0; col < 0 && mb_test_csv_nth(l, i, f, sizeof f); i++)
        if (!strcmp(f, name)) col = i;
    if (col < 0) return 0;
    for (int r = 0; r <= row; r++)
        if (!(l = strchr(l, '\n')) || !*++l) return 0;
    return mb_test_csv_nth(l, col, out, outsz);
}

static inline int mb_test_done(void)
{
    printf("%d passed, %d failed\n", mb_t_pass, mb_t_fail);
    return mb_t_fail ? 1 : 0;
}
#endif
