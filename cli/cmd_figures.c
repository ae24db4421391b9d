/* cmd_figures.c — `membound figures [VARIANT...] -o DIR`: figures from the
 * model alone (no measurement): the lecture's, or any variants' (names, .mb
 * files, --expr), on chosen devices. Drawing is in reports/. */
#include "cli_common.h"
#include "variant_inputs.h"
#include "commands.h"
#include "report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound figures [VARIANT|FILE.mb|--expr EXPR ...] [-o DIR] [options]\n"
            "\n"
            "Figures from the model alone: bytes per element, time against n, the roofline,\n"
            "the what-if across devices and (for sigmoid3) recomputation. Without\n"
            "variants, the lecture's. Writes DIR/index.md, DIR/index.html and, per figure,\n"
            "NAME.dat (data), NAME.gp (script; style.gp is shared) and images.\n"
            "\n"
            "  -o, --output DIR   output directory (default: membound-figures)\n"
            "  --expr EXPR        a variant as an expression; ';' separates statements:\n"
            "                     'name quick_gelu; y = x * sigmoid(1.702 * x)' (repeatable)\n"
            "  --device D         device of the per-device figures: table id or .ini spec\n"
            "                     (default: h100-sxm, or the first of --devices)\n"
            "  --devices LIST     the what-if's devices: ids or .ini specs, comma-separated\n"
            "                     (default: every GPU of the table)\n"
            "  --dtype LIST       the series' dtypes, comma-separated (bf16,f32); default: f32,\n"
            "                     the lecture's own for its variants\n"
            "  --plan LIST        only these plans, comma-separated (eager,fused)\n"
            "  --size S           16:9 (1280x720, the default), 4:3 (960x720) or WxH pixels\n"
            "  --font-scale F     every text times F, 0.5 to 3 (default 1)\n"
            "  --theme T          light (default) or dark (a dark slide's background)\n"
            "  --formats LIST     png,svg,pdf (default: png)\n"
            "  --no-render        write data and scripts only\n"
            "  -h, --help         this help\n");
}

/* Defines the inputs in order, a name given twice refused (naming both). */
static int define_inputs(const mb_cli_inputs *in, mb_rpt_set *defs)
{
    if (in->n == 0) return 0;
    mb_graph **g = NULL;
    int n = 0, rc = mb_cli_inputs_load(in, MB_F32, &g, &n, NULL);
    mb_cli_graphs_free(g, n);
    mb_err e;
    for (int i = 0; i < in->n && !rc; i++)
        if (mb_rpt_define_variant(defs, in->v[i].arg, in->v[i].is_expr, &e)) rc = mb_cli_fail_err(2, &e);
    return rc;
}

int mb_cmd_figures(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"device", required_argument, 0, 'd'},
        {"devices", required_argument, 0, 'D'}, {"expr", required_argument, 0, 'e'},
        {"formats", required_argument, 0, 'f'}, {"no-render", no_argument, 0, 'N'},
        {"dtype", required_argument, 0, 't'}, {"plan", required_argument, 0, 'p'},
        {"size", required_argument, 0, 'S'}, {"font-scale", required_argument, 0, 'F'},
        {"theme", required_argument, 0, 'T'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    mb_rpt_look look = {0, 0, 0, 0};
    const char *dir = "membound-figures", *device = NULL, *devlist = NULL;
    mb_cli_inputs in = {0};
    mb_dtype dtypes[MB_DTYPE_COUNT];
    mb_plan_kind plans[MB_PLAN_COUNT];
    int n_dtypes = 0, n_plans = 0;
    unsigned formats = MB_RPT_PNG;
    int render = 1, c;
    mb_err e;
    mb_rpt_set_env(getenv); /* the library reads no environment */
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "-:ho:e:t:p:", opts, NULL)) != -1) {
        switch (c) {
        case 1:
        case 'e':
            if (mb_cli_inputs_add(&in, c == 'e', optarg)) return 1;
            break;
        case 'o': dir = optarg; break;
        case 'd': device = optarg; break;
        case 'D': devlist = optarg; break;
        case 'f':
            if (mb_rpt_parse_formats(optarg, &formats, &e)) return mb_cli_fail_err(2, &e);
            break;
        case 'N': render = 0; break;
        case 'S':
        case 'F':
        case 'T': {
            int r = c == 'S' ? mb_rpt_parse_size(optarg, &look, &e)
                  : c == 'F' ? mb_rpt_parse_font_scale(optarg, &look, &e) : mb_rpt_parse_theme(optarg, &look, &e);
            if (r) { mb_cli_inputs_free(&in); return mb_cli_fail_err(2, &e); }
            break;
        }
        case 't':
        case 'p': {
            int rc = c == 't' ? mb_cli_dtypes(optarg, dtypes, &n_dtypes) : mb_cli_plans(optarg, plans, &n_plans);
            if (rc) { mb_cli_inputs_free(&in); return rc; }
            break;
        }
        case 'h': usage(stdout); mb_cli_inputs_free(&in); return 0;
        default: mb_cli_inputs_free(&in); return mb_cli_bad_option(c, argv, optind, optopt, "figures");
        }
    }
    int rc = mb_rpt_check_out_dir(dir, &e);
    if (rc) { mb_cli_inputs_free(&in); return mb_cli_fail_err(rc, &e); }
    mb_rpt_set defs;
    mb_rpt_set_init(&defs);
    memcpy(defs.fig_dtypes, dtypes, (size_t)n_dtypes * sizeof *dtypes);
    defs.n_fig_dtypes = n_dtypes;
    memcpy(defs.fig_plans, plans, (size_t)n_plans * sizeof *plans);
    defs.n_fig_plans = n_plans;
    defs.look = look;
    if ((rc = define_inputs(&in, &defs))) { mb_cli_inputs_free(&in); mb_rpt_set_free(&defs); return rc; }
    mb_cli_inputs_free(&in);

    /* the per-device figures' device; the what-if's devices */
    mb_device dev, *list = NULL;
    int n_list = 0;
    if (devlist && (rc = mb_cli_devices(devlist, &list, &n_list))) { mb_rpt_set_free(&defs); return rc; }
    if (device || !n_list) {
        if ((rc = mb_device_find(device ? device : "h100-sxm", &dev, &e))) {
            free(list);
            mb_rpt_set_free(&defs);
            return mb_cli_fail_err(2, &e);
        }
    } else {
        dev = list[0];
    }
    static mb_rpt_figures figs;
    mb_err fe;
    fe.msg[0] = '\0';
    int frc = mb_rpt_model_figures(&defs, &dev, list, n_list, dir,
                                   formats | (render ? MB_RPT_PNG : 0), render, &figs, &fe);
    free(list);
    if (frc && !figs.n) { mb_rpt_set_free(&defs); return mb_cli_fail_err(frc == MB_EINPUT ? 2 : 1, &fe); }
    rc = mb_rpt_write_model_index(&defs, &dev, &figs, dir, &e);
    mb_rpt_set_free(&defs);
    if (rc) return mb_cli_fail_err(rc, &e);
    for (int i = 0; i < figs.n; i++)
        printf("%-12s %s%s\n", figs.fig[i].name, figs.fig[i].title,
               figs.fig[i].rendered ? "" : " (data only)");
    printf("figures: %s/index.html\n", dir);
    if (frc) return mb_cli_fail_err(1, &fe);
    return 0;
}
