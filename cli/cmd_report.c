/* cmd_report.c — `membound report FILE.csv... -o DIR`: joins measurements
 * with the model, fits, draws the figures and writes the report. The work is
 * in reports/; this file parses options and prints the verdict summary. */
#include "cli_common.h"
#include "variant_inputs.h"
#include "commands.h"
#include "report.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound report FILE.csv... [FILE.mb|--expr EXPR ...] [-o DIR] [options]\n"
            "\n"
            "Joins measurement CSVs (from 'membound measure') with the model, fits\n"
            "time = t0 + bytes / bandwidth per device and backend (GSL, 95%% intervals),\n"
            "checks the lecture's claims and writes DIR/report.md, DIR/report.html\n"
            "(figures embedded), DIR/summary.csv, fits.csv, verdicts.csv, summary.json\n"
            "and DIR/figures/ (data, gnuplot scripts, images). A CSV from 'measure'\n"
            "carries its device spec and variant texts, so it reports from any folder;\n"
            "per-kernel CSVs (a 'kernel' column) are recognised and noted. Older CSVs\n"
            "of custom variants need their definition: a FILE.mb or --expr.\n"
            "\n"
            "  --expr EXPR        a variant's definition; ';' separates statements:\n"
            "                     'name quick_gelu; y = x * sigmoid(1.702 * x)' (repeatable)\n"
            "  -o, --output DIR   output directory (default: membound-report)\n"
            "  --device SPEC      model every row on this device (table id or .ini file)\n"
            "                     instead of the CSV's device column; a device of another\n"
            "                     kind than the rows' backend (a GPU for CPU rows) is refused\n"
            "  --formats LIST     figure formats besides png: png,svg,pdf (default: png)\n"
            "  --no-figures       write the figure data and scripts but do not run gnuplot\n"
            "  --variants LIST    only these variants on the figures, comma-separated\n"
            "                     (sigmoid3,gelu_tanh); the tables keep every row\n"
            "  --plan LIST        only these plans on the figures (eager,fused)\n"
            "  --size S           figures at 16:9 (1280x720, the default), 4:3 (960x720)\n"
            "                     or WxH pixels\n"
            "  --font-scale F     every text of the figures times F, 0.5 to 3 (default 1)\n"
            "  --theme T          figures light (default) or dark\n"
            "  --fleet TASKS.csv  a fleet run's task table (scripts/slurm/merge.sh): the\n"
            "                     report lists every task, the rows it delivered, and the\n"
            "                     missing ones with their reason\n"
            "  --smoke-test       label every verdict a smoke test's (demo --quick: small\n"
            "                     sizes, figures that say nothing about the machine)\n"
            "  -q, --quiet        no progress notes (printed for inputs of 100000 rows or\n"
            "                     more, a step at a time with its seconds)\n"
            "  -h, --help         this help\n"
            "\n"
            "Without gnuplot (or with MEMBOUND_GNUPLOT not executable) everything else is\n"
            "written, the report says the figures are missing, and the exit status is 1.\n");
}

/* The output folder is usable and none of its files is an input (report -o
 * . summary.csv); a --device of another kind than the rows is checked in
 * read_inputs. 0 or an exit code after one error line. */
static int check_args(const char *dir, const char *device, const char *fleet, const mb_cli_inputs *in,
                      const char **csvs, int n_csv)
{
    mb_err e;
    if (n_csv == 0)
        return mb_cli_fail(2, in->n ? "no measurement CSV given, only variant definitions"
                                    : "no measurement CSV given (usage: membound report FILE.csv... -o DIR)");
    int rc = mb_rpt_check_out_dir(dir, &e);
    if (rc) return mb_cli_fail_err(rc, &e);
    char outs[8][4200];
    const char *out_ptrs[8];
    int n_outs = 0;
    for (; mb_rpt_report_files[n_outs] && n_outs < 8; n_outs++) {
        snprintf(outs[n_outs], sizeof outs[n_outs], "%s/%s", dir, mb_rpt_report_files[n_outs]);
        out_ptrs[n_outs] = outs[n_outs];
    }
    if (mb_outfile_check_distinct(out_ptrs, n_outs, csvs, n_csv, &e) ||
        mb_outfile_check_distinct(out_ptrs, n_outs, &device, 1, &e) ||
        mb_outfile_check_distinct(out_ptrs, n_outs, &fleet, 1, &e))
        return mb_cli_fail_err(2, &e);
    return 0;
}

/* A --device whose kind (cpu or a GPU) is not the rows' backend's: a GPU's
 * model does not describe a CPU's rows (measured/model would compare a CPU
 * with a GPU), nor the other way round. MB_EINPUT naming the first such row. */
static int device_kind_matches(const mb_rpt_set *s, const char *device, mb_err *e)
{
    mb_device d;
    if (!device || mb_device_find(device, &d, e) != MB_OK) return MB_OK; /* join names a bad one */
    int cpu = !strcmp(d.kind, "cpu");
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        if (cpu == !strcmp(r->backend, "cpu")) continue;
        return mb_err_set(e, MB_EINPUT, "%s:%d: --device %s is a %s but this row was measured on the %s "
                          "backend: the model of one kind of device does not predict the other's times "
                          "(no projection between them is made); give a %s spec, or leave --device out",
                          r->file, r->line, device, cpu ? "CPU" : "GPU", r->backend, cpu ? "GPU" : "CPU");
    }
    return MB_OK;
}

/* Progress notes on stderr, one a step with its seconds, for inputs of
 * PROGRESS_ROWS rows or more (a report of seconds, not the usual instant;
 * decided by the rows, so that small reports print the same every run);
 * -q silences them. */
#define PROGRESS_ROWS 100000

typedef struct {
    int quiet, on;
    double t_s; /* the last step's end */
} progress;

static void step_done(progress *p, const char *what, long long count)
{
    double now_s = mb_cli_now_s();
    if (p->on) {
        if (count >= 0) fprintf(stderr, "membound report: %lld %s in %.1f s\n", count, what, now_s - p->t_s);
        else fprintf(stderr, "membound report: %s in %.1f s\n", what, now_s - p->t_s);
    }
    p->t_s = now_s;
}

/* Defines the variants (in order, a name given twice refused), reads the
 * CSVs, joins and fits. 0 or an exit code after one error line. */
static int read_inputs(mb_rpt_set *s, const mb_cli_inputs *in, const char **csvs, int n_csv, const char *device,
                       const char *fleet, progress *p)
{
    mb_err e;
    int rc = 0;
    if (in->n) {
        mb_graph **g = NULL;
        int n = 0;
        rc = mb_cli_inputs_load(in, MB_F32, &g, &n, NULL);
        mb_cli_graphs_free(g, n);
        if (rc) return rc;
    }
    for (int i = 0; i < in->n && !rc; i++) rc = mb_rpt_define_variant(s, in->v[i].arg, in->v[i].is_expr, &e);
    for (int i = 0; i < n_csv && !rc; i++) rc = mb_rpt_read_csv(s, csvs[i], &e);
    if (!rc && fleet) rc = mb_rpt_read_fleet(s, fleet, &e);
    p->on = !rc && !p->quiet && s->n_rows >= PROGRESS_ROWS;
    step_done(p, "rows read", rc ? -1 : s->n_rows);
    if (!rc && s->n_rows == 0)
        rc = mb_err_set(&e, MB_EINPUT, "%s: per-kernel rows only: give the plan CSV too", s->files[0]);
    if (!rc) rc = device_kind_matches(s, device, &e);
    for (int k = 0; !rc && k < s->n_fig_variants; k++) { /* --variants names rows' variants */
        int found = 0;
        for (int i = 0; i < s->n_rows && !found; i++) found = !strcmp(s->rows[i].variant, s->fig_variants[k]);
        if (!found) rc = mb_err_set(&e, MB_EINPUT, "--variants: no row of these CSVs measured '%s'", s->fig_variants[k]);
    }
    if (!rc) rc = mb_rpt_join(s, device, &e);
    if (!rc) step_done(p, "rows modelled", s->n_rows);
    if (!rc) rc = mb_rpt_fit(s, &e);
    if (!rc) step_done(p, "fits and verdicts", -1);
    return rc ? mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e) : 0;
}

static const char *ratio_cell(char *buf, size_t size, double v)
{
    if (isfinite(v)) snprintf(buf, size, "%.2fx", v);
    else snprintf(buf, size, "-");
    return buf;
}

/* A fleet run's tasks: how many delivered rows, and each missing one with
 * its state and reason. */
static void print_tasks(const mb_rpt_set *s)
{
    int delivered = 0;
    for (int i = 0; i < s->n_tasks; i++) delivered += mb_rpt_task_rows(s, &s->tasks[i], NULL) > 0;
    if (s->n_tasks) printf("fleet: %d of %d tasks delivered rows\n", delivered, s->n_tasks);
    for (int i = 0; i < s->n_tasks; i++) {
        const mb_rpt_task *t = &s->tasks[i];
        if (mb_rpt_task_rows(s, t, NULL) > 0) continue;
        printf("missing: task %s (%s%s%s): %s%s%s\n", t->task, t->target, t->node[0] ? " on " : ", never ran",
               t->node, t->state, t->reason[0] ? ": " : "", t->reason);
    }
}

/* The verdicts, one line each (a claim's text never cut: the column is as
 * wide as the longest): the lecture's ratio, the model's on this device,
 * the measured one and the statistic that gave it, then the two separate
 * judgements, the lecture's claim here and the model's expectation here;
 * below a line the reason wherever they part from the lecture. */
static void print_summary(const mb_rpt_set *s)
{
    int cw = 5, smoke = 0, quick = 0;
    for (int i = 0; i < s->n_verdicts; i++) {
        int len = (int)strlen(s->verdicts[i].claim);
        if (len > cw) cw = len;
        smoke |= s->verdicts[i].smoke_test;
        quick |= strstr(s->verdicts[i].calibration, "quick") != NULL;
    }
    if (smoke)
        printf("SMOKE TEST: rows measured at small sizes%s; these verdicts say nothing about this machine\n",
               quick ? " against a quick calibration" : "");
    if (s->n_verdicts)
        printf("%-*s  %-22s %8s %8s %9s %-7s %-15s %s\n", cw, "claim", "device (backend)", "lecture",
               "model", "measured", "by", "lecture's claim", "model's expectation");
    for (int i = 0; i < s->n_verdicts; i++) {
        const mb_rpt_verdict *v = &s->verdicts[i];
        char dev[200], m1[24], m2[24], m3[24], how[96];
        snprintf(dev, sizeof dev, "%s (%s)", v->device, v->backend);
        snprintf(how, sizeof how, "%s", v->statistic && v->statistic[0] ? v->statistic : "-");
        printf("%-*s  %-22.22s %8s %8s %9s %-7s %-15s %-13s%s%s\n", cw, v->claim, dev,
               ratio_cell(m1, sizeof m1, v->lecture_ratio), ratio_cell(m2, sizeof m2, v->expected_ratio),
               ratio_cell(m3, sizeof m3, v->meas_ratio), how, v->holds, v->model_agrees,
               v->calibration[0] ? " calibration: " : "", v->calibration);
        if (v->reason[0] && strcmp(v->holds, "holds")) printf("    why: %s\n", v->reason);
        if (v->rerun[0]) printf("    inconclusive: rerun with: %s\n", v->rerun);
    }
    if (!s->n_verdicts) printf("no lecture variant in these rows: no claim checked\n");
    print_tasks(s);
    for (int g = 0; g < s->n_groups; g++) {
        const mb_rpt_group *gr = &s->groups[g];
        char t0[32], flag[256] = "";
        const mb_device *dev = &s->devices[gr->dev];
        if (gr->impossible)
            snprintf(flag, sizeof flag, "; IMPOSSIBLE: bandwidth above the %s (%.4g GB/s%s)",
                     mb_rpt_peak_what(dev), dev->mem_bandwidth_gbs,
                     gr->host_copy_ratio_max > 1 && !strcmp(dev->kind, "cpu")
                         ? ", raised by the host's drift during the rows" : "");
        else if (gr->above_calibrated)
            snprintf(flag, sizeof flag, "; above the calibrated %.4g GB/s, as the host's own reference "
                     "copy was during the rows (up to %.0f%% of its calibrated figure): the host drifted",
                     dev->mem_bandwidth_gbs, 100 * gr->host_copy_ratio_max);
        if (gr->fitted && isfinite(gr->bandwidth_gbs))
            printf("fit %s (%s): bandwidth %.4g GB/s [%.4g, %.4g], t0 %s%s, R^2 %.4f, %d of %d "
                   "rows%s\n", gr->device, gr->backend, gr->bandwidth_gbs, gr->bandwidth_lo_gbs,
                   gr->bandwidth_hi_gbs, mb_cli_fmt_time(gr->t0_s, t0, sizeof t0),
                   gr->t0_negative ? " (below zero: not a launch time)" : "", gr->line.r2,
                   gr->line.n_used, gr->line.n_points, flag);
        else
            printf("fit %s (%s): %s\n", gr->device, gr->backend, gr->why[0] ? gr->why : "none");
    }
}

/* --variants a,b: the figures' variants (names as the rows give them). 0
 * or 2 after one error line. */
static int fig_variants(mb_rpt_set *s, const char *list)
{
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= MB_NAME_MAX)
            return mb_cli_fail(2, "--variants '%s': give variant names, comma-separated", list);
        if (s->n_fig_variants >= MB_RPT_MAX_FIG_VARIANTS)
            return mb_cli_fail(2, "--variants: at most %d variants", MB_RPT_MAX_FIG_VARIANTS);
        snprintf(s->fig_variants[s->n_fig_variants++], MB_NAME_MAX, "%.*s", (int)len, p);
        p += len;
        if (*p) p++;
    }
    if (!s->n_fig_variants) return mb_cli_fail(2, "--variants needs at least one name");
    return 0;
}

int mb_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"device", required_argument, 0, 'd'},
        {"formats", required_argument, 0, 'f'}, {"no-figures", no_argument, 0, 'N'},
        {"smoke-test", no_argument, 0, 'S'}, {"fleet", required_argument, 0, 'L'},
        {"variants", required_argument, 0, 'V'}, {"plan", required_argument, 0, 'p'},
        {"size", required_argument, 0, 'z'}, {"font-scale", required_argument, 0, 'F'},
        {"theme", required_argument, 0, 'T'}, {"quiet", no_argument, 0, 'q'},
        {"expr", required_argument, 0, 'e'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *dir = "membound-report", *device = NULL, *fleet = NULL;
    mb_cli_inputs in = {0};  /* .mb files and --expr, in order */
    const char **csvs = calloc((size_t)argc + 1, sizeof *csvs);
    int n_csv = 0;
    unsigned formats = MB_RPT_PNG;
    int render = 1, c, rc = 0;
    progress prog = {0, 0, mb_cli_now_s()};
    mb_err e;
    mb_rpt_set_env(getenv); /* the library reads no environment */
    opterr = 0;
    optind = 1;
    mb_rpt_set s;
    mb_rpt_set_init(&s);
    if (!csvs) return mb_cli_fail(1, "out of memory");
    while ((c = getopt_long(argc, argv, "-:hqo:e:", opts, NULL)) != -1) {
        size_t len = c == 1 ? strlen(optarg) : 0;
        switch (c) {
        case 1:
            if (len > 3 && !strcmp(optarg + len - 3, ".mb")) {
                if (mb_cli_inputs_add(&in, 0, optarg)) { rc = 1; goto free_args; }
            } else {
                csvs[n_csv++] = optarg;
            }
            break;
        case 'o': dir = optarg; break;
        case 'd': device = optarg; break;
        case 'L': fleet = optarg; break;
        case 'f':
            if (mb_rpt_parse_formats(optarg, &formats, &e)) { rc = mb_cli_fail_err(2, &e); goto free_args; }
            formats |= MB_RPT_PNG; /* the report embeds PNGs */
            break;
        case 'N': render = 0; break;
        case 'q': prog.quiet = 1; break;
        case 'S': s.smoke_test = 1; break;
        case 'V':
            if ((rc = fig_variants(&s, optarg))) goto free_args;
            break;
        case 'p':
            if ((rc = mb_cli_plans(optarg, s.fig_plans, &s.n_fig_plans))) goto free_args;
            break;
        case 'z':
        case 'F':
        case 'T': {
            int r = c == 'z' ? mb_rpt_parse_size(optarg, &s.look, &e)
                  : c == 'F' ? mb_rpt_parse_font_scale(optarg, &s.look, &e) : mb_rpt_parse_theme(optarg, &s.look, &e);
            if (r) { rc = mb_cli_fail_err(2, &e); goto free_args; }
            break;
        }
        case 'e':
            if (mb_cli_inputs_add(&in, 1, optarg)) { rc = 1; goto free_args; }
            break;
        case 'h': usage(stdout); goto free_args;
        case ':': rc = mb_cli_fail(2, "option '%s' needs a value (see 'membound report --help')", argv[optind - 1]); goto free_args;
        default: rc = mb_cli_fail(2, "unknown option '%s' (see 'membound report --help')", argv[optind - 1]); goto free_args;
        }
    }
    rc = check_args(dir, device, fleet, &in, csvs, n_csv);
    if (!rc) rc = read_inputs(&s, &in, csvs, n_csv, device, fleet, &prog);
free_args:
    mb_cli_inputs_free(&in);
    free(csvs);
    if (rc || c == 'h') {
        mb_rpt_set_free(&s);
        return rc;
    }
    /* built in a staging folder, put in place whole (mb_rpt_stage_*): a
     * reader sees the old report or the new one; a failure leaves the old */
    static mb_rpt_stage st;
    if ((rc = mb_rpt_stage_begin(dir, &st, &e))) {
        mb_rpt_set_free(&s);
        return mb_cli_fail_err(rc, &e);
    }
    char figdir[sizeof st.dir + 16];
    snprintf(figdir, sizeof figdir, "%s/figures", st.dir);
    static mb_rpt_figures figs;
    mb_err fe;
    fe.msg[0] = '\0';
    int frc = mb_rpt_set_figures(&s, figdir, formats, render, &figs, &fe);
    mb_rpt_stage_msg(&st, fe.msg, sizeof fe.msg);
    step_done(&prog, render ? "figures drawn" : "figures' data and scripts written", figs.n);
    if (frc && !figs.n) { /* nothing at all written: a real failure */
        mb_rpt_stage_abort(&st);
        mb_rpt_set_free(&s);
        return mb_cli_fail_err(1, &fe);
    }
    rc = mb_rpt_write(&s, &figs, st.dir, &e);
    if (!rc) step_done(&prog, "tables written", -1);
    if (!rc) rc = mb_rpt_stage_commit(&st, &e);
    else mb_rpt_stage_abort(&st);
    mb_rpt_stage_msg(&st, e.msg, sizeof e.msg);
    if (rc) {
        mb_rpt_set_free(&s);
        return mb_cli_fail_err(rc, &e);
    }
    print_summary(&s);
    printf("report: %s/report.html (and report.md, summary.csv, summary.json)\n", dir);
    mb_rpt_set_free(&s);
    if (frc) return mb_cli_fail_err(1, &fe);
    return 0;
}
