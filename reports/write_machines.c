/* write_machines.c — the report's "Machines" section, written when a report
 * covers more than one device × backend or a fleet run's task table
 * (report --fleet): one line per device × backend (the machine it ran on,
 * its rows, its fitted bandwidth, the model's error over its rows, how its
 * claims came out), then each one's verdicts as a table of its own, then
 * the fleet's tasks with the rows each delivered and the missing ones with
 * their reason. Computes nothing the set does not hold but the error's
 * quantiles (fig_error.c). */
#include "write_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *ratio_cell(char *buf, size_t size, double v)
{
    if (!isfinite(v)) return "—";
    snprintf(buf, size, "%.2fx", v);
    return buf;
}

/* One line per device x backend. */
static void devices_table(rpt_doc *d, const mb_rpt_set *s)
{
    static const char *head[] = {"device", "machine", "backend", "rows (verified of all)",
                                 "bandwidth GB/s (95% CI)", "model's bandwidth",
                                 "measured / model (p10, median, p90)", "claims"};
    rpt_doc_table(d, 8, head);
    for (int g = 0; g < s->n_groups; g++) {
        const mb_rpt_group *gr = &s->groups[g];
        const mb_device *dev = &s->devices[gr->dev];
        int total = 0, verified = 0;
        for (int i = 0; i < s->n_rows; i++)
            if (s->rows[i].group == g) { total++; verified += s->rows[i].verified == 1; }
        /* the claims by outcome, each outcome the verdicts' own word */
        const char *word[8];
        int count[8], nw = 0;
        for (int i = 0; i < s->n_verdicts; i++) {
            const mb_rpt_verdict *v = &s->verdicts[i];
            if (strcmp(v->device, gr->device) || strcmp(v->backend, gr->backend)) continue;
            const char *h = v->holds ? v->holds : "no data";
            int k = 0;
            while (k < nw && strcmp(word[k], h)) k++;
            if (k == nw && nw < 8) { word[nw] = h; count[nw++] = 0; }
            if (k < nw) count[k]++;
        }
        char rows[64], bw[160], mbw[96], err[160], claims[256], q[3][32];
        snprintf(rows, sizeof rows, "%d of %d", verified, total);
        if (gr->fitted && isfinite(gr->bandwidth_gbs) && isfinite(gr->bandwidth_hi_gbs))
            snprintf(bw, sizeof bw, "%.4g [%.4g, %.4g]", gr->bandwidth_gbs, gr->bandwidth_lo_gbs,
                     gr->bandwidth_hi_gbs);
        else snprintf(bw, sizeof bw, "not fitted");
        const char *src = "";
        double model_bw = mb_device_bandwidth_gbs(dev, &src);
        snprintf(mbw, sizeof mbw, "%.4g (%s)", model_bw, src);
        double qv[3];
        int m = rpt_error_quantiles(s, g, qv);
        if (m > 0)
            snprintf(err, sizeof err, "%s, %s, %s over %d rows", ratio_cell(q[0], sizeof q[0], qv[0]),
                     ratio_cell(q[1], sizeof q[1], qv[1]), ratio_cell(q[2], sizeof q[2], qv[2]), m);
        else snprintf(err, sizeof err, "no verified, quiet row");
        claims[0] = '\0';
        for (int k = 0; k < nw; k++) {
            size_t at = strlen(claims);
            snprintf(claims + at, sizeof claims - at, "%s%s: %d", k ? ", " : "", word[k], count[k]);
        }
        if (!nw) snprintf(claims, sizeof claims, "none measured");
        const char *cells[] = {gr->device, s->device_machines[gr->dev], gr->backend, rows, bw, mbw, err, claims};
        rpt_doc_row(d, cells);
    }
    rpt_doc_table_end(d);
}

/* Each device x backend's verdicts, a table of its own. */
static void device_verdicts(rpt_doc *d, const mb_rpt_set *s)
{
    for (int g = 0; g < s->n_groups; g++) {
        const mb_rpt_group *gr = &s->groups[g];
        int any = 0;
        for (int i = 0; i < s->n_verdicts; i++)
            any |= !strcmp(s->verdicts[i].device, gr->device) && !strcmp(s->verdicts[i].backend, gr->backend);
        if (!any) continue;
        char h[200];
        snprintf(h, sizeof h, "Verdicts on %s (%s)", gr->device, gr->backend);
        rpt_doc_h(d, 3, h);
        static const char *head[] = {"claim", "lecture", "expected time", "measured (min)",
                                     "holds?", "model agrees?"};
        rpt_doc_table(d, 6, head);
        for (int i = 0; i < s->n_verdicts; i++) {
            const mb_rpt_verdict *v = &s->verdicts[i];
            if (strcmp(v->device, gr->device) || strcmp(v->backend, gr->backend)) continue;
            char a[32], b[32];
            const char *cells[] = {v->claim, v->lecture, ratio_cell(a, sizeof a, v->expected_ratio),
                                   ratio_cell(b, sizeof b, v->meas_min_ratio), v->holds, v->model_agrees};
            rpt_doc_row(d, cells);
        }
        rpt_doc_table_end(d);
    }
}

/* The fleet's tasks: each with the rows it delivered, the missing named. */
static void tasks_table(rpt_doc *d, const mb_rpt_set *s)
{
    int delivered = 0;
    char missing[2000] = "";
    size_t at = 0;
    for (int i = 0; i < s->n_tasks; i++) {
        const mb_rpt_task *t = &s->tasks[i];
        int given = 0, rows = mb_rpt_task_rows(s, t, &given);
        if (rows > 0) { delivered++; continue; }
        char md[1100], tg[300], nd[300], tk[80], sta[80];
        int w = snprintf(missing + at, sizeof missing - at, "%stask %s (%s%s%s): %s%s%s", at ? "; " : "",
                         rpt_md(tk, sizeof tk, t->task), rpt_md(tg, sizeof tg, t->target),
                         t->node[0] ? " on " : ", never ran", rpt_md(nd, sizeof nd, t->node),
                         rpt_md(sta, sizeof sta, t->state), t->reason[0] ? " — " : "",
                         rpt_md(md, sizeof md, t->reason));
        at = w > 0 && (size_t)w < sizeof missing - at ? at + (size_t)w : sizeof missing - 1;
    }
    rpt_doc_h(d, 3, "The fleet's tasks");
    if (delivered == s->n_tasks)
        rpt_doc_p(d, "All %d tasks of the fleet run delivered rows.", s->n_tasks);
    else
        rpt_doc_p(d, "**%d of %d tasks delivered rows; missing:** %s.", delivered, s->n_tasks, missing);
    static const char *head[] = {"task", "target", "node", "state", "exit", "failed step", "rows", "CSV",
                                 "reason"};
    rpt_doc_table(d, 9, head);
    for (int i = 0; i < s->n_tasks; i++) {
        const mb_rpt_task *t = &s->tasks[i];
        int given = 0, rows = mb_rpt_task_rows(s, t, &given);
        char nrows[32], csv[300];
        snprintf(nrows, sizeof nrows, "%d", rows);
        snprintf(csv, sizeof csv, "%s%s", t->csv[0] ? t->csv : "none",
                 t->csv[0] && !given ? " (not among the report's inputs)" : "");
        const char *cells[] = {t->task, t->target, t->node[0] ? t->node : "—", t->state,
                               t->exit[0] ? t->exit : "—", t->step[0] ? t->step : "—", nrows, csv,
                               t->reason[0] ? t->reason : "—"};
        rpt_doc_row(d, cells);
    }
    rpt_doc_table_end(d);
}

void rpt_machines_section(rpt_doc *d, const mb_rpt_set *s)
{
    if (s->n_groups < 2 && s->n_tasks == 0) return;
    rpt_doc_h(d, 2, "Machines");
    rpt_doc_p(d, "%d device%s × backend%s. A device is one machine: rows whose CSVs name another host, "
                 "CPU or GPU are another device, and devices of one name on different machines are "
                 "told apart as NAME@HOST. *measured / model* is each verified row's median time over "
                 "the model's time on its device; the figure *model error across devices* draws every "
                 "row of it.", s->n_groups, s->n_groups == 1 ? "" : "s", s->n_groups == 1 ? "" : "s");
    devices_table(d, s);
    device_verdicts(d, s);
    if (s->n_tasks) tasks_table(d, s);
}
