/* write_int.h — shared by the report's writers (write*.c) and no other file:
 * the group of files one report commits together (write_outs.c, below every
 * writer), and each writer (called by write.c's mb_rpt_write). */
#ifndef MB_WRITE_INT_H
#define MB_WRITE_INT_H

#include "report_int.h"

#include <stdio.h>

/* The files of one report, written whole and then committed together
 * (mb_outfile_commit_all): a failure anywhere replaces none of them. */
#define RPT_MAX_OUTS 8
typedef struct rpt_outs {
    mb_outfile f[RPT_MAX_OUTS];
    int n;
} rpt_outs;

/* Opens dir/name as the group's next file; *fp gets its stream. */
int rpt_outs_open(rpt_outs *o, const char *dir, const char *name, FILE **fp, mb_err *err);

/* Commits every file of the group when rc is MB_OK, else removes them all;
 * frees the group. Returns rc, or the commit's error. */
int rpt_outs_finish(rpt_outs *o, int rc, mb_err *err);

/* Writes dir/STEM.md and dir/STEM.html from d into the group o. */
int rpt_write_pages(rpt_doc *d, const char *dir, const char *stem, rpt_outs *o, mb_err *err);

/* Each writer adds its files to outs (names from mb_rpt_report_files);
 * write.c calls them in turn and commits the group. */
int rpt_write_doc(const mb_rpt_set *s, const mb_rpt_figures *figs, const char *dir, rpt_outs *outs,
                  mb_err *err);
int rpt_write_csvs(const mb_rpt_set *s, const char *dir, rpt_outs *outs, mb_err *err);
int rpt_write_json(const mb_rpt_set *s, const mb_rpt_figures *figs, const char *dir, rpt_outs *outs,
                   mb_err *err);

/* The "Machines" section (write_machines.c): for a report of several
 * devices x backends or a fleet run's tasks, one line per device x backend,
 * its verdicts, the tasks and the missing ones with their reason; nothing
 * otherwise. */
void rpt_machines_section(rpt_doc *d, const mb_rpt_set *s);

/* v as snprintf(buf, size, "%.*g", prec, v) writes it, byte for byte (and
 * faster, numfmt.c); returns its length. size >= 32 for the fast path. */
int rpt_fmt_g(char *buf, size_t size, double v, int prec);
/* v as "%lld" writes it into buf (at least 21 bytes); returns its length. */
int rpt_fmt_int(char *buf, long long v);

#endif
