/* write_outs.c — the group of files a report or an index commits together
 * (rpt_outs: opened one by one, committed all or none), a document's two
 * pages into it, and the names of the report's files. Decides no content:
 * the writers (write_csv.c, write_json.c, write_doc.c) do, below write.c. */
#include "write_int.h"

#include <stdio.h>
#include <stdlib.h>

const char *const mb_rpt_report_files[] = {"report.md", "report.html", "summary.csv", "fits.csv",
                                           "verdicts.csv", "summary.json", NULL};

/* Opens dir/name as the group's next file; *fp gets its stream. */
int rpt_outs_open(rpt_outs *o, const char *dir, const char *name, FILE **fp, mb_err *err)
{
    char p[2048];
    if (o->n == RPT_MAX_OUTS) return mb_err_set(err, MB_ERUN, "too many report files");
    int rc = mb_outfile_open(&o->f[o->n], rpt_path(p, sizeof p, dir, name), err);
    if (rc) return rc;
    *fp = o->f[o->n++].fp;
    return MB_OK;
}

/* Commits every file of the group when rc is MB_OK, else removes them all;
 * frees the group. Returns rc, or the commit's error. */
int rpt_outs_finish(rpt_outs *o, int rc, mb_err *err)
{
    mb_outfile *all[RPT_MAX_OUTS];
    for (int i = 0; i < o->n; i++) all[i] = &o->f[i];
    if (rc == MB_OK) rc = mb_outfile_commit_all(all, o->n, err);
    else
        for (int i = 0; i < o->n; i++) mb_outfile_abort(all[i]);
    free(o);
    return rc;
}

/* Writes dir/STEM.md and dir/STEM.html from d into the group o. */
int rpt_write_pages(rpt_doc *d, const char *dir, const char *stem, rpt_outs *o, mb_err *err)
{
    char name[64];
    FILE *fm, *fh;
    snprintf(name, sizeof name, "%s.md", stem);
    int rc = rpt_outs_open(o, dir, name, &fm, err);
    snprintf(name, sizeof name, "%s.html", stem);
    if (!rc) rc = rpt_outs_open(o, dir, name, &fh, err);
    if (rc) {
        rpt_doc_end(d, NULL, NULL, NULL, NULL);
        return rc;
    }
    return rpt_doc_end(d, fm, fh, dir, err);
}
