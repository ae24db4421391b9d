/* report_fleet.c — report over many machines: CSVs of three fictitious
 * machines (node-a and node-b both modelled on a spec named "gpu-x", node-c
 * on "gpu-y"), each row's time made from the model's DRAM bytes on its spec
 * and the machine's own line (t0, bandwidth) with ±1% noise, are read,
 * joined and fitted: three devices, the two gpu-x kept apart as
 * gpu-x@node-a and gpu-x@node-b, each fit recovering its machine's
 * bandwidth and t0 within its 95% interval; a machine whose calibration
 * changed between two CSVs stays one group; two GPUs of one host with one
 * name become NAME@HOST#K. A fleet run's task table read (and refused
 * where malformed), the missing task named in report.md, the Machines
 * section and the model-error figure's data written. */
#include "mb_test.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/mb_report_fleet.XXXXXX";

typedef struct machine {
    const char *file, *spec_name, *host, *gpu, *driver;
    double spec_bw_gbs; /* the spec's measured bandwidth (the model's) */
    double t0_s, bw_gbs; /* the machine's own line, the truth the fit must find */
} machine;

/* The spec's INI text with newlines as the CSV's text columns write them ("\n"). */
static char *escaped_spec(const machine *m)
{
    mb_device d;
    mb_err e;
    if (mb_device_find("h100-sxm", &d, &e)) return NULL;
    snprintf(d.name, sizeof d.name, "%s", m->spec_name);
    d.measured_bandwidth_gbs = m->spec_bw_gbs;
    char *ini = mb_device_ini_text(&d, &e);
    if (!ini) return NULL;
    char *out = malloc(2 * strlen(ini) + 1), *w = out;
    for (const char *r = ini; out && *r; r++) {
        if (*r == '\n') { *w++ = '\\'; *w++ = 'n'; }
        else if (*r == '"') *w++ = '\'';
        else *w++ = *r;
    }
    if (out) *w = '\0';
    free(ini);
    return out;
}

/* Writes m's CSV: copy f32 eager at 2^22..2^28, time = t0 + DRAM bytes / bw. */
static int write_machine(const machine *m, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", tmpdir, m->file);
    char *spec = escaped_spec(m);
    mb_device d;
    mb_err e;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    if (!spec || mb_device_find("h100-sxm", &d, &e) || mb_variant_load("copy", MB_F32, &g, &e) ||
        mb_plan_build(g, MB_PLAN_EAGER, &p, &e))
        return -1;
    d.measured_bandwidth_gbs = m->spec_bw_gbs;
    FILE *fp = fopen(path, "w");
    if (!fp) return -1;
    fprintf(fp, "device,backend,variant,plan,dtype,n,time_s_median,time_s_min,time_s_p90,time_cv,verified,"
                "device_spec,provenance\n");
    static const double noise[] = {0.01, -0.008, 0.004, -0.01, 0.006, -0.002, 0.009};
    for (int lg = 22, k = 0; lg <= 28; lg++, k++) {
        int64_t n = (int64_t)1 << lg;
        mb_estimate est;
        if (mb_estimate_plan(p, n, &d, &est, &e)) { fclose(fp); return -1; }
        double bytes = (double)(est.total.dram_read_bytes + est.total.dram_write_bytes);
        double t = (m->t0_s + bytes / (m->bw_gbs * 1e9)) * (1 + noise[k]);
        fprintf(fp, "%s,cuda,copy,eager,f32,%lld,%.9g,%.9g,%.9g,0.01,1,\"%s\",\"host: %s\\ngpu: %s\\n"
                    "gpu_driver: %s\"\n", m->spec_name, (long long)n, t, 0.99 * t, 1.02 * t, spec, m->host,
                m->gpu, m->driver);
        mb_estimate_free(&est);
    }
    mb_plan_free(p);
    mb_graph_free(g);
    free(spec);
    return fclose(fp);
}

static const mb_rpt_group *group_named(const mb_rpt_set *s, const char *name)
{
    for (int i = 0; i < s->n_groups; i++)
        if (!strcmp(s->groups[i].device, name)) return &s->groups[i];
    return NULL;
}

/* Reads, joins and fits the n machines' CSVs into s. */
static int load(mb_rpt_set *s, const machine *ms, int n)
{
    mb_err e;
    mb_rpt_set_init(s);
    for (int i = 0; i < n; i++) {
        char path[600];
        if (write_machine(&ms[i], path, sizeof path) || mb_rpt_read_csv(s, path, &e)) {
            fprintf(stderr, "%s: %s\n", ms[i].file, e.msg);
            return -1;
        }
    }
    if (mb_rpt_join(s, NULL, &e) || mb_rpt_fit(s, &e)) { fprintf(stderr, "%s\n", e.msg); return -1; }
    return 0;
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    static char buf[1 << 20];
    size_t got = fread(buf, 1, sizeof buf - 1, fp);
    buf[got] = '\0';
    fclose(fp);
    return buf;
}

int main(void)
{
    if (!mkdtemp(tmpdir)) return 1;
    static const machine three[] = {
        {"a.csv", "gpu-x", "node-a", "GPU X (0000:01:00.0) cc 9.0", "535.104; cuda_runtime: 12.2", 2900, 5e-6, 1000},
        {"b.csv", "gpu-x", "node-b", "GPU X (0000:01:00.0) cc 9.0", "550.54; cuda_runtime: 12.4", 2900, 8e-6, 800},
        {"c.csv", "gpu-y", "node-c", "GPU Y (0000:81:00.0) cc 9.0", "550.54; cuda_runtime: 12.4", 2900, 3e-6, 2000},
    };
    static mb_rpt_set s;
    CHECK(load(&s, three, 3) == 0);
    CHECK_EQ_I64(s.n_groups, 3);
    const char *names[] = {"gpu-x@node-a", "gpu-x@node-b", "gpu-y"};
    for (int i = 0; i < 3; i++) {
        const mb_rpt_group *g = group_named(&s, names[i]);
        CHECK(g != NULL);
        if (!g) continue;
        CHECK(g->fitted);
        CHECK_NEAR(g->bandwidth_gbs, three[i].bw_gbs, 0.03);
        CHECK(g->bandwidth_lo_gbs <= three[i].bw_gbs && three[i].bw_gbs <= g->bandwidth_hi_gbs);
        CHECK(fabs(g->t0_s - three[i].t0_s) <= g->t0_ci_s + 1e-7);
        /* every row of the group from its own machine's file */
        for (int r = 0; r < s.n_rows; r++)
            if (s.rows[r].group == g - s.groups) CHECK(strstr(s.rows[r].file, three[i].file) != NULL);
        CHECK(strstr(s.device_machines[g->dev], three[i].host) == s.device_machines[g->dev]);
        CHECK(strstr(s.device_machines[g->dev], three[i].driver) != NULL);
    }

    /* the figure of the model's error: a line per device, its quantiles */
    char figdir[600];
    snprintf(figdir, sizeof figdir, "%s/figs", tmpdir);
    static mb_rpt_figures figs;
    mb_err e;
    CHECK(mb_rpt_set_figures(&s, figdir, MB_RPT_PNG, 0, &figs, &e) == MB_OK);
    char dat[700];
    snprintf(dat, sizeof dat, "%s/model_error.dat", figdir);
    const char *d = slurp(dat);
    CHECK(d && strstr(d, "lines 3"));
    CHECK(d && strstr(d, "\"gpu-x-node-a (cuda)\"") && strstr(d, "\"gpu-x-node-b (cuda)\"") &&
          strstr(d, "\"gpu-y (cuda)\""));

    /* a fleet's task table: task 2 delivered nothing */
    char tasks[600];
    snprintf(tasks, sizeof tasks, "%s/tasks.csv", tmpdir);
    FILE *fp = fopen(tasks, "w");
    fprintf(fp, "task,target,node,state,exit,step,reason,csv\n"
                "0,constraint=x,node-a,COMPLETED,0:0,,,a.csv\n1,constraint=x2,node-b,COMPLETED,0:0,,,b.csv\n"
                "2,node=node-c,node-c,FAILED,1:0,measure,\"exit 1: membound: error: out of memory\",\n"
                "3,node=node-d,,MISSING,,,\"no status file\",\n");
    fclose(fp);
    CHECK(mb_rpt_read_fleet(&s, tasks, &e) == MB_OK);
    CHECK_EQ_I64(s.n_tasks, 4);
    int given = 0;
    CHECK_EQ_I64(mb_rpt_task_rows(&s, &s.tasks[0], &given), 7);
    CHECK(given == 1);
    CHECK_EQ_I64(mb_rpt_task_rows(&s, &s.tasks[2], &given), 0);
    CHECK(given == 0);
    char out[600];
    snprintf(out, sizeof out, "%s/report", tmpdir);
    CHECK(mb_rpt_mkdirs(out, &e) == MB_OK);
    CHECK(mb_rpt_write(&s, &figs, out, &e) == MB_OK);
    char md_path[700];
    snprintf(md_path, sizeof md_path, "%s/report.md", out);
    const char *md = slurp(md_path);
    CHECK(md && strstr(md, "## Machines"));
    CHECK(md && strstr(md, "**2 of 4 tasks delivered rows; missing:** task 2 (node=node-c on node-c): FAILED"));
    CHECK(md && strstr(md, "task 3 (node=node-d, never ran): MISSING"));
    CHECK(md && strstr(md, "| gpu-x@node-b | node-b: GPU X"));
    mb_rpt_set_free(&s);

    /* task tables refused: a missing column, an empty state, a path for a csv */
    static const struct { const char *text, *msg; } badt[] = {
        {"task,target,state\n0,a,OK\n", "tasks.csv:1: no column 'csv'"},
        {"task,target,state,csv\n0,a,,x.csv\n", "tasks.csv:2:5: column 'state' is empty"},
        {"task,target,state,csv\n0,a,OK,../x.csv\n", "column 'csv': a file name in the run's folder"},
        {"task,target,state,csv\n", "no tasks"},
    };
    for (size_t i = 0; i < sizeof badt / sizeof badt[0]; i++) {
        mb_rpt_set_init(&s);
        fp = fopen(tasks, "w");
        fputs(badt[i].text, fp);
        fclose(fp);
        CHECK(mb_rpt_read_fleet(&s, tasks, &e) == MB_EINPUT);
        if (!strstr(e.msg, badt[i].msg)) fprintf(stderr, "got: %s\n", e.msg);
        CHECK(strstr(e.msg, badt[i].msg) != NULL);
        mb_rpt_set_free(&s);
    }

    /* one machine calibrated twice (two specs named gpu-x, one host): one group */
    static const machine again[] = {
        {"r1.csv", "gpu-x", "node-a", "GPU X (0000:01:00.0) cc 9.0", "535.104", 2900, 5e-6, 1000},
        {"r2.csv", "gpu-x", "node-a", "GPU X (0000:01:00.0) cc 9.0", "535.104", 2850, 5e-6, 1000},
    };
    CHECK(load(&s, again, 2) == 0);
    CHECK_EQ_I64(s.n_groups, 1);
    CHECK(group_named(&s, "gpu-x") != NULL);
    mb_rpt_set_free(&s);

    /* two GPUs of one host under one name: told apart by number */
    static const machine two[] = {
        {"g0.csv", "gpu-x", "node-a", "GPU X (0000:01:00.0) cc 9.0", "535.104", 2900, 5e-6, 1000},
        {"g1.csv", "gpu-x", "node-a", "GPU X (0000:41:00.0) cc 9.0", "535.104", 2900, 5e-6, 900},
        {"g2.csv", "gpu-x", "node-e", "GPU X (0000:01:00.0) cc 9.0", "535.104", 2900, 5e-6, 950},
    };
    CHECK(load(&s, two, 3) == 0);
    CHECK_EQ_I64(s.n_groups, 3);
    CHECK(group_named(&s, "gpu-x@node-a#1") && group_named(&s, "gpu-x@node-a#2") && group_named(&s, "gpu-x@node-e"));
    mb_rpt_set_free(&s);

    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return mb_test_done();
}
