/* meas_csv.h — the measurement CSV (model/mb_records.h's contract):
 * provenance, rows, the texts that make a CSV self-contained. Does not read
 * CSVs (reports/, import/). */
#ifndef MB_MEAS_CSV_H
#define MB_MEAS_CSV_H

#include "meas_record.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CSV --------------------------------------------------------------------- */

/* The run's provenance (the CSV's provenance column). Strings may be empty. */
typedef struct mb_meas_provenance {
    char cpu_model[128];
    char compiler[128];
    char git_commit[64];
    char date[64];        /* ISO 8601, UTC */
    char host[128];
    char settings[512];   /* e.g. "cold=1 min_reps=10 max_cv=0.02 threads=2 exec=auto" */
    char extra[1024];     /* more "key: value" lines (backend, model device), '\n'-separated */
} mb_meas_provenance;

/* Fills cpu_model (/proc/cpuinfo), compiler, git commit (MB_GIT_COMMIT at
 * build time, else "unknown"), date, host; settings from c (may be NULL). */
void mb_meas_provenance_fill(mb_meas_provenance *pv, const mb_meas_config *c);

/* Settings line of a config ("cold=1 reps>=10 ..."), into buf. */
void mb_meas_settings_str(const mb_meas_config *c, const char *exec_extra, char *buf,
                          size_t bufsz);

/* The text columns of a run's CSVs (MB_MEAS_CSV_TEXT_COLUMNS), escaped to
 * one line each and owned: the device spec, the provenance lines, the text
 * of each distinct variant. */
typedef struct mb_meas_csv_var {
    char name[MB_NAME_MAX];
    int is_expr;           /* 1: the text is an --expr string */
    char *text;            /* escaped */
} mb_meas_csv_var;
typedef struct mb_meas_csv_texts {
    char *spec;            /* escaped INI text of the model device */
    char *prov;            /* escaped provenance lines; grows with mb_meas_csv_texts_add */
    mb_meas_csv_var *vars;
    int n_vars;
} mb_meas_csv_texts;

/* Fills t: the spec of dev (the device the model columns used), pv's lines,
 * and the text of each distinct variant of graphs: exprs[i] (an --expr
 * string) when exprs and exprs[i] are not NULL, else graphs[i]'s file read
 * back from g->path. MB_ERUN when a file cannot be read back or memory runs
 * out, MB_EINPUT when dev cannot be written as a spec; t is then empty. */
int mb_meas_csv_texts_init(mb_meas_csv_texts *t, const mb_meas_provenance *pv, const mb_device *dev,
                           mb_graph *const *graphs, const char *const *exprs, int n_graphs, mb_err *err);

/* Adds the text of graph g's variant to t (expr when not NULL, else g's
 * file read back from g->path), unless t has a variant of g's name already:
 * what mb_meas_csv_texts_init does for each of its graphs, for a run that
 * loads its variants as it goes. MB_ERUN (err set) when the file cannot be
 * read back or memory runs out; t keeps what it had. */
int mb_meas_csv_texts_add_variant(mb_meas_csv_texts *t, const mb_graph *g, const char *expr, mb_err *err);

/* Appends one provenance line ("key: value"; newlines become spaces) to t:
 * what is known only after the rows (host_check, partial, GPU clocks).
 * MB_ERUN when memory runs out. */
int mb_meas_csv_texts_add(mb_meas_csv_texts *t, const char *line);
void mb_meas_csv_texts_free(mb_meas_csv_texts *t);

/* Writes the header row: the contract's columns, "kernel" when per_kernel,
 * the later columns, the text columns. */
void mb_meas_csv_header(FILE *fp, int per_kernel);

/* Writes one row, one line (fields quoted where needed; newlines in a field
 * become spaces; dram -1 written empty), with the texts of t (NULL: the text
 * columns empty). */
void mb_meas_csv_row(FILE *fp, const mb_meas_record *r, int per_kernel, const mb_meas_csv_texts *t);

/* Rows held until the run ends, so that every row carries the provenance
 * known only then (mb_meas_csv_texts_add): add rows, then write the file. */
typedef struct mb_meas_csv_rows {
    mb_meas_record *rows;
    int n, cap;
    int per_kernel;
} mb_meas_csv_rows;

/* Copies r into b. MB_ERUN when memory runs out. */
int mb_meas_csv_rows_add(mb_meas_csv_rows *b, const mb_meas_record *r);
/* Writes the header and b's rows with the texts of t. MB_ERUN (err set) on
 * a write error. */
int mb_meas_csv_rows_write(const mb_meas_csv_rows *b, const mb_meas_csv_texts *t, FILE *fp, mb_err *err);
void mb_meas_csv_rows_free(mb_meas_csv_rows *b);

#ifdef __cplusplus
}
#endif
#endif
