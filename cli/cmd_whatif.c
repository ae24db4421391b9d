/* cmd_whatif.c — `membound whatif`: the model across many devices, with each
 * variant's speed-up over its eager plan. */
#include "cli_common.h"
#include "commands.h"
#include "model_args.h"
#include "model_out.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound whatif [VARIANT|FILE.mb|--expr EXPR ...] [options]\n"
            "\n"
            "The model of every variant and plan on many devices: time, the term that\n"
            "bounds it, and the speed-up of each plan over eager. Each device's bandwidth\n"
            "is named: measured, datasheet, or (an INI spec without measured_bandwidth_gbs)\n"
            "derived as the table derives it: the median streaming-benchmark fraction of\n"
            "the datasheet peak over the table's devices of its kind, times its peak.\n"
            "Variant files, built-in names and --expr mix, in order; each name once.\n"
            "\n"
            "  --devices LIST   comma-separated ids or INI files, or 'all' (default)\n"
            "  --expr EXPR      a Python-syntax expression; repeat it for several\n"
            "  --plan LIST      only these plans, comma-separated: eager,fused\n"
            "  --n N            elements per tensor (default: each variant's lecture size)\n"
            "  --sizes LIST     several sizes: 2^20,2^24 or 2^16..2^28[:STEP], or shapes\n"
            "  --shape LIST     2-D sizes ROWSxCOLS: 4096x1024 or 2^12x2^12\n"
            "  --dims LIST      sizes of the variant's named dimensions: batch=8,seq=4096,\n"
            "                   dim=1024; default: its 'dims' line\n"
            "  --dtype LIST     f32 (default), bf16, f16, comma-separated: bf16,f32\n"
            "  --colsum HOW     written, partial or reread: a [cols] gradient's sum over the\n"
            "                   rows in store, recompute and optimal (membound model --help)\n"
            "  --json | --csv   machine-readable output ({\"results\": [...]}, each with \"device\";\n"
            "                   the CSV's speedup_vs_eager is the table's \"vs eager\")\n"
            "  -h, --help       this help\n");
}

/* 1 when d is a row of the built-in table as it stands. */
static int from_table(const mb_device *d)
{
    for (int i = 0; i < mb_device_count(); i++)
        if (!memcmp(mb_device_at(i), d, sizeof *d)) return 1;
    return 0;
}

/* A spec file's GPU without measured_bandwidth_gbs: the table's rule
 * (mb_device_derive_bandwidth). Table rows keep what the table says. */
static void derive_bandwidth(mb_device *d)
{
    if (d->measured_bandwidth_gbs > 0 || from_table(d)) return;
    double bw = mb_device_derive_bandwidth(d, NULL, NULL, NULL, NULL);
    if (bw > 0) {
        d->measured_bandwidth_gbs = bw;
        d->measured_derived = 1;
    }
}

/* "bandwidth of h100-sxm: 2680 GB/s, measured (...)", the figure the rows use. */
static void bandwidth_line(const mb_device *d)
{
    const char *src;
    double bw = mb_device_bandwidth_gbs(d, &src);
    if (d->measured_derived) {
        double f = 0, lo = 0, hi = 0;
        int rows = 0;
        mb_device peak = *d;
        mb_device_derive_bandwidth(&peak, &f, &lo, &hi, &rows);
        printf("bandwidth of %s: %.0f GB/s, derived: the spec has no measured_bandwidth_gbs, so %.2f x "
               "its datasheet %.0f GB/s (the median streaming fraction of the table's %d %s devices "
               "with a benchmark, %.2f-%.2f)\n", d->name, bw, f, d->mem_bandwidth_gbs, rows, d->kind, lo, hi);
    } else if (!strcmp(src, "measured")) {
        printf("bandwidth of %s: %.0f GB/s, measured (datasheet %.0f GB/s)\n", d->name, bw, d->mem_bandwidth_gbs);
    } else {
        printf("bandwidth of %s: %.0f GB/s, datasheet (no measured figure%s)\n", d->name, bw,
               from_table(d) ? ": the table has no streaming benchmark for it" : " and none to derive one from");
    }
}

int mb_cmd_whatif(int argc, char **argv)
{
    static const struct option opts[] = {
        {"devices", required_argument, 0, 'D'}, {"device", required_argument, 0, 'D'},
        {"expr", required_argument, 0, 'e'},
        {"plan", required_argument, 0, 'p'}, {"n", required_argument, 0, 'n'},
        {"sizes", required_argument, 0, 's'}, {"dtype", required_argument, 0, 't'},
        {"shape", required_argument, 0, 'S'}, {"dims", required_argument, 0, MB_OPT_DIMS},
        {"colsum", required_argument, 0, MB_OPT_COLSUM},
        {"json", no_argument, 0, 'J'}, {"csv", no_argument, 0, 'C'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    mb_model_args a = {0};
    const char *devlist = "all";
    int c, rc = 0;
    mb_err e;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "-:hD:e:p:n:s:S:t:JC", opts, NULL)) != -1) {
        switch (c) {
        case 'D': devlist = optarg; break;
        case 'h': usage(stdout); mb_model_args_free(&a); return 0;
        default:
            rc = mb_model_args_option(&a, c, optarg);
            if (rc == 0) break;
            mb_model_args_free(&a);
            return rc > 0 ? rc : mb_cli_bad_option(c, argv, optind, optopt, "whatif");
        }
    }
    mb_device *devs;
    int ndev;
    if ((rc = mb_cli_devices(devlist, &devs, &ndev))) { mb_model_args_free(&a); return rc; }
    if ((rc = mb_model_args_load(&a))) { free(devs); mb_model_args_free(&a); return rc; }
    for (int d = 0; d < ndev; d++) derive_bandwidth(&devs[d]);
    mb_model_args_warn_memory(&a, devs, ndev);

    json_t *results = json_array();
    if (a.fmt == MB_FMT_CSV) mb_model_csv_header(stdout, ",speedup_vs_eager");
    if (a.fmt == MB_FMT_TABLE) {
        for (int d = 0; d < ndev; d++) bandwidth_line(&devs[d]);
        putchar('\n');
        printf("%-16s %-16s %-10s %-5s %11s %7s %12s %12s %-8s %9s\n", "device", "variant", "plan", "dtype",
               "n", "kernels", "DRAM MB", "time", "bound", "vs eager");
    }
    for (int i = 0; i < a.n_graphs && !rc; i++) {
        mb_plan_kind plans[MB_PLAN_COUNT];
        int np = mb_model_args_plans(&a, a.graphs[i], plans);
        mb_shape one;
        const mb_shape *sizes;
        int ns = mb_model_args_sizes(&a, a.graphs[i], &sizes, &one);
        for (int d = 0; d < ndev && !rc; d++)
            for (int s = 0; s < ns && !rc; s++) {
                double eager_s = NAN; /* eager time for the speed-up column */
                {
                    mb_model_row er;
                    if (mb_model_row_make(&er, a.graphs[i], MB_PLAN_EAGER, sizes[s], &devs[d],
                                          mb_model_args_dtype(&a, i), &e) == MB_OK) {
                        eager_s = er.est.total.time_s;
                        mb_model_row_free(&er);
                    }
                }
                for (int k = 0; k < np && !rc; k++) {
                    mb_model_row row;
                    if ((rc = mb_model_row_make(&row, a.graphs[i], plans[k], sizes[s], &devs[d],
                                                mb_model_args_dtype(&a, i), &e))) {
                        mb_cli_fail_err(rc, &e);
                        break;
                    }
                    if (a.fmt == MB_FMT_TABLE) {
                        const mb_cost *t = &row.est.total;
                        char tm[32];
                        printf("%-16s %-16s %-10s %-5s %11lld %7d %12.3f %12s %-8s %8.2fx\n", devs[d].name,
                               a.graphs[i]->name, mb_plan_name(plans[k]), mb_model_row_dtype(&row), (long long)mb_shape_elems(sizes[s]),
                               row.plan->n_kernels, (t->dram_read_bytes + t->dram_write_bytes) / 1e6,
                               mb_cli_fmt_time(t->time_s, tm, sizeof tm), mb_bound_name(t->bound),
                               eager_s / t->time_s);
                    } else if (a.fmt == MB_FMT_CSV) {
                        char more[40] = ",";
                        if (isfinite(eager_s) && row.est.total.time_s > 0)
                            snprintf(more, sizeof more, ",%.9g", eager_s / row.est.total.time_s);
                        mb_model_csv_row(stdout, &row, more);
                    } else {
                        json_t *o = mb_model_row_json(&row, 1);
                        if (o && isfinite(eager_s) && row.est.total.time_s > 0)
                            json_object_set_new(o, "speedup_vs_eager", json_real(eager_s / row.est.total.time_s));
                        if (json_array_append_new(results, o) != 0)
                            rc = mb_cli_fail(1, "whatif %s, plan %s: the JSON result could not be "
                                             "built", a.graphs[i]->name, mb_plan_name(plans[k]));
                    }
                    mb_model_row_free(&row);
                }
            }
    }
    if (!rc && a.fmt == MB_FMT_JSON) {
        json_t *root = json_pack("{s:O}", "results", results);
        char *s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
        puts(s);
        free(s);
        json_decref(root);
    }
    json_decref(results);
    free(devs);
    mb_model_args_free(&a);
    return rc;
}
