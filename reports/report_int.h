/* report_int.h — shared by the files of reports/ only: the lecture's series,
 * a Markdown+HTML document writer, small string helpers. */
#ifndef MEMBOUND_REPORT_INT_H
#define MEMBOUND_REPORT_INT_H

#include "report.h"

#include <stdio.h>

/* One series of the lecture: a variant, a plan and a dtype, the demo panel
 * it belongs to, the lecture's size and count. */
typedef struct rpt_series {
    const char *variant;
    const char *plan;
    mb_dtype dtype;
    int panel;                 /* index into rpt_panel_titles */
    int64_t lecture_n;
    const char *lecture_count; /* "11n": the lecture's traffic in elements */
} rpt_series;

#define RPT_N_LECTURE 9
extern const rpt_series rpt_lecture[RPT_N_LECTURE];
#define RPT_N_PANELS 5
extern const char *const rpt_panel_titles[RPT_N_PANELS];

/* Panel of a variant name (the lecture's demos, else the last, "other"). */
int rpt_panel_of(const char *variant);
/* Lecture count ("11n") of a variant and plan, or NULL. */
const char *rpt_lecture_count(const char *variant, const char *plan, mb_dtype dt);

/* Model estimate of one variant/plan/dtype at n on d. Returns MB_OK or the
 * model's error. out must be freed with mb_estimate_free. graph_out (may be
 * NULL) receives op evaluation counts per element (sum over kernel nodes). */
int rpt_estimate(const char *variant, const char *plan, mb_dtype dt, int64_t n,
                 const mb_device *d, mb_estimate *out, double op_per_elem[MB_OP_COUNT],
                 mb_err *err);

/* A document written as Markdown and HTML at once. */
typedef struct rpt_doc {
    FILE *md, *html;
    int in_table, ncols;
} rpt_doc;

void rpt_doc_begin(rpt_doc *d, const char *title);
void rpt_doc_end(rpt_doc *d);
void rpt_doc_h(rpt_doc *d, int level, const char *text);
/* A paragraph; text is plain (escaped for HTML; `code` spans kept). */
void rpt_doc_p(rpt_doc *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void rpt_doc_table(rpt_doc *d, int ncols, const char *const *head);
void rpt_doc_row(rpt_doc *d, const char *const *cells);
void rpt_doc_table_end(rpt_doc *d);
/* An image: linked in Markdown (relative path), embedded base64 in HTML. */
void rpt_doc_img(rpt_doc *d, const char *dir, const char *relpath, const char *alt);
void rpt_doc_pre(rpt_doc *d, const char *text);

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
