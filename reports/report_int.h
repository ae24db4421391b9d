/* report_int.h — shared by the files of reports/ only: the lecture's series,
 * a Markdown+HTML document writer, small string helpers. */
#ifndef MEMBOUND_REPORT_INT_H
#define MEMBOUND_REPORT_INT_H

#include "report.h"

#include <stdio.h>

/* Display name of a variant: the lecture's ("sin^2+cos^2"), else its name. */
const char *rpt_display(const char *variant);

/* The lecture's demo whose series differ in dtype (copy f32 vs bf16: its
 * series are told apart by dtype), and its recomputation demo (a series
 * with the recompute plan: sigmoid^3); NULL when the table has none. */
const mb_rpt_demo *rpt_dtype_demo(void);
const mb_rpt_demo *rpt_recompute_demo(void);
/* The lecture's count ("11n") of a variant, plan and dtype, or NULL. */
const char *rpt_lecture_count(const char *variant, const char *plan, mb_dtype dt);

/* Model estimate of one variant/plan/dtype at n on d; the variant is found
 * as mb_rpt_load_variant does (defs may be NULL: built-ins and "expr:TEXT"
 * only). out must be freed with mb_estimate_free. op_per_elem (may be NULL)
 * receives op evaluations per element (sum over kernel nodes). */
int rpt_estimate(const mb_rpt_set *defs, const char *variant, const char *plan, mb_dtype dt,
                 int64_t n, const mb_device *d, mb_estimate *out,
                 double op_per_elem[MB_OP_COUNT], mb_err *err);

/* One series of a figure or table: a variant, a plan and a dtype. */
typedef struct rpt_series {
    char variant[MB_NAME_MAX], plan[16], dtype[8];
    int panel;                 /* index into the figure's panels */
    int64_t n;                 /* size for one-size figures (the lecture's, or the variant's) */
    const char *iv, *ip, *idt; /* variant, plan, dtype as the set's rows hold them
                                  (rpt_interned; NULL: no row has it), for rows
                                  matched by pointer */
} rpt_series;

/* The model-only series: the lecture's, or every plan (f32) of each
 * variant defined on the command line in defs (a lecture variant: its own
 * series). Returns their count (at most max). */
int rpt_model_series(const mb_rpt_set *defs, rpt_series *out, int max);

/* The set's interned copy of str (a row's strings are one pointer per
 * distinct value, csv.c), or NULL when no row holds that string: rows match
 * a string by pointer. */
const char *rpt_interned(const mb_rpt_set *s, const char *str);

/* Appends one line of an embedded variant text (a CSV's "# variant_text
 * NAME: line" or "# variant_expr NAME: line", at line_no of the file) to the
 * definition of name in file. An expression is one line: a second
 * variant_expr line for the name, or variant_text and variant_expr lines for
 * one name, are MB_EINPUT ("file:line: ..." naming both lines). MB_ERUN when
 * out of memory. */
int rpt_add_embedded(mb_rpt_set *s, int file, int line_no, const char *name, int is_expr,
                     const char *line, mb_err *err);

/* The machine CSV fi was measured on, from its provenance: its host into
 * host ("" when not recorded) and its GPU and driver, else its CPU, into
 * what (machines.c). */
void rpt_machine_of(const mb_rpt_set *s, int fi, char *host, size_t host_size, char *what,
                    size_t what_size);
/* After the join: a device whose rows come from several machines becomes
 * one device per machine, and devices of one name on different machines
 * are renamed NAME@HOST (NAME@HOST#K, NAME#K where hosts do not tell them
 * apart); fills s->device_machines. MB_EINPUT past MB_RPT_MAX_DEVICES,
 * MB_ERUN when out of memory. */
int rpt_machines_split(mb_rpt_set *s, mb_err *err);

/* The p10, median and p90 of measured / model time over group gi's
 * verified, quiet rows into q (NaN when none); returns their count, -1
 * when out of memory (fig_error.c). */
int rpt_error_quantiles(const mb_rpt_set *s, int gi, double q[3]);

/* A document written as Markdown: rpt_doc_end writes it and its HTML
 * (rendered by cmark, images embedded). Paragraph text is Markdown; every
 * other string (headings, cells, alt text) is data and shown as written. */
typedef struct rpt_doc {
    FILE *md, *hmd;            /* GitHub Markdown; CommonMark with HTML tables */
    char *md_buf, *hmd_buf;
    size_t md_len, hmd_len;
    int in_table, ncols;
    char title[256];
} rpt_doc;

void rpt_doc_begin(rpt_doc *d, const char *title);
/* Writes the Markdown to md and the HTML page to html (images relative to
 * dir embedded as base64). MB_ERUN when out of memory. */
int rpt_doc_end(rpt_doc *d, FILE *md, FILE *html, const char *dir, mb_err *err);
void rpt_doc_h(rpt_doc *d, int level, const char *text);
/* A paragraph of Markdown (printf-style). */
void rpt_doc_p(rpt_doc *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void rpt_doc_table(rpt_doc *d, int ncols, const char *const *head);
void rpt_doc_row(rpt_doc *d, const char *const *cells);
void rpt_doc_table_end(rpt_doc *d);
/* An image, relpath relative to the document's folder. */
void rpt_doc_img(rpt_doc *d, const char *relpath, const char *alt);
void rpt_doc_pre(rpt_doc *d, const char *text);

/* s with Markdown's markup characters backslash-escaped (data in a
 * paragraph), into buf; returns buf. */
const char *rpt_md(char *buf, size_t size, const char *s);

/* printf into a fixed buffer, returns buf. */
const char *rpt_fmt(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "%.3g"-style number, or "—" for NaN. */
const char *rpt_num(char *buf, size_t size, double v, int digits);
/* Bytes per element, seconds, Gbytes: short human forms. */
const char *rpt_time(char *buf, size_t size, double s);

/* Joins dir and name into buf (dir may be ""). */
const char *rpt_path(char *buf, size_t size, const char *dir, const char *name);

#endif
