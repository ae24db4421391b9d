/* write.c — the report's files as one group: report.md and report.html
 * (write_doc.c), summary.csv, fits.csv and verdicts.csv (write_csv.c) and
 * summary.json (write_json.c), each written whole and committed together or
 * not at all (write_outs.c). Does not compute anything the set does not
 * already hold. */
#include "write_int.h"

#include <stdlib.h>

int mb_rpt_write(const mb_rpt_set *s, const mb_rpt_figures *figs, const char *dir, mb_err *err)
{
    int rc = mb_rpt_mkdirs(dir, err);
    if (rc) return rc;
    rpt_outs *outs = calloc(1, sizeof *outs);
    if (!outs) return mb_err_set(err, MB_ERUN, "out of memory");
    rc = rpt_write_csvs(s, dir, outs, err);
    if (!rc) rc = rpt_write_json(s, figs, dir, outs, err);
    if (!rc) rc = rpt_write_doc(s, figs, dir, outs, err);
    return rpt_outs_finish(outs, rc, err);
}
