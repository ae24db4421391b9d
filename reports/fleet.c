/* fleet.c — the task table of a fleet run (scripts/slurm/merge.sh writes
 * it: one line per array task, what it was to measure, where it ran, how it
 * ended, why, and the CSV it left), read for report --fleet so that the
 * report names the nodes whose rows are missing and why. Columns by name:
 * task, target, state and csv required; node, exit, step, reason optional.
 * Does not run or query the scheduler (the scripts do). */
#include "report_int.h"

#include <stdlib.h>
#include <string.h>

enum { F_TASK, F_TARGET, F_NODE, F_STATE, F_EXIT, F_STEP, F_REASON, F_CSV, F_COUNT };
static const char *const col_names[F_COUNT] = {"task", "target", "node", "state", "exit", "step", "reason", "csv"};
static const int col_required[F_COUNT] = {1, 1, 0, 1, 0, 0, 0, 1};

/* More tasks than any partition's node types; a table past it is not one. */
#define MAX_TASKS 4096

typedef struct fleet_read {
    mb_rpt_set *s;
    const char *path;
    int pos[F_COUNT];
    int have_header;
} fleet_read;

static int raw_line(void *ctx, const char *line, size_t len, int line_no, int *taken, mb_err *err)
{
    (void)ctx, (void)line_no, (void)err;
    *taken = len > 0 && line[0] == '#';
    return MB_OK;
}

/* The field of column k, copied into out ("" when the column is absent). */
static void take(const fleet_read *fr, const mb_csv_record *rec, int k, char *out, size_t size)
{
    int p = fr->pos[k];
    snprintf(out, size, "%s", p >= 0 && p < rec->n ? rec->f[p].s : "");
}

static int record(void *ctx, mb_csv_record *rec, mb_err *err)
{
    fleet_read *fr = ctx;
    mb_rpt_set *s = fr->s;
    if (!fr->have_header) {
        for (int k = 0; k < F_COUNT; k++) {
            fr->pos[k] = -1;
            for (int i = 0; i < rec->n; i++)
                if (!strcmp(rec->f[i].s, col_names[k])) fr->pos[k] = i;
            if (col_required[k] && fr->pos[k] < 0)
                return mb_err_set(err, MB_EINPUT, "%s:%d: no column '%s' (a fleet task table has task, "
                                  "target, state and csv)", fr->path, rec->line, col_names[k]);
        }
        fr->have_header = 1;
        return MB_OK;
    }
    if (s->n_tasks >= MAX_TASKS)
        return mb_err_set(err, MB_EINPUT, "%s:%d: more than %d tasks", fr->path, rec->line, MAX_TASKS);
    if (s->n_tasks % 32 == 0) {
        void *p = realloc(s->tasks, (size_t)(s->n_tasks + 32) * sizeof *s->tasks);
        if (!p) return mb_err_set(err, MB_ERUN, "out of memory");
        s->tasks = p;
    }
    mb_rpt_task *t = &s->tasks[s->n_tasks];
    memset(t, 0, sizeof *t);
    take(fr, rec, F_TASK, t->task, sizeof t->task);
    take(fr, rec, F_TARGET, t->target, sizeof t->target);
    take(fr, rec, F_NODE, t->node, sizeof t->node);
    take(fr, rec, F_STATE, t->state, sizeof t->state);
    take(fr, rec, F_EXIT, t->exit, sizeof t->exit);
    take(fr, rec, F_STEP, t->step, sizeof t->step);
    take(fr, rec, F_REASON, t->reason, sizeof t->reason);
    take(fr, rec, F_CSV, t->csv, sizeof t->csv);
    if (!t->task[0] || !t->state[0]) {
        int k = !t->task[0] ? F_TASK : F_STATE;
        int col = fr->pos[k] < rec->n ? rec->f[fr->pos[k]].col : rec->end_col;
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column '%s' is empty", fr->path, rec->line, col,
                          col_names[k]);
    }
    if (strchr(t->csv, '/')) {
        int col = rec->f[fr->pos[F_CSV]].col;
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column 'csv': a file name in the run's folder, "
                          "not a path: '%s'", fr->path, rec->line, col, t->csv);
    }
    s->n_tasks++;
    return MB_OK;
}

int mb_rpt_read_fleet(mb_rpt_set *s, const char *path, mb_err *err)
{
    static const mb_csv_ops ops = {raw_line, record};
    fleet_read fr;
    memset(&fr, 0, sizeof fr);
    fr.s = s;
    fr.path = path;
    int before = s->n_tasks;
    int rc = mb_csv_read_file(path, (size_t)16 << 20, &ops, &fr, NULL, err);
    if (rc) return rc;
    if (!fr.have_header || s->n_tasks == before)
        return mb_err_set(err, MB_EINPUT, "%s: no tasks (a header and a line per task expected)", path);
    return MB_OK;
}

/* The rows of the set that came from the task's CSV (matched by file name). */
int mb_rpt_task_rows(const mb_rpt_set *s, const mb_rpt_task *t, int *given)
{
    int file = -1, n = 0;
    for (int i = 0; t->csv[0] && i < s->n_files && file < 0; i++) {
        const char *base = strrchr(s->files[i], '/');
        if (!strcmp(base ? base + 1 : s->files[i], t->csv)) file = i;
    }
    if (given) *given = file >= 0;
    for (int i = 0; file >= 0 && i < s->n_rows; i++) n += s->rows[i].file_index == file;
    return n;
}
