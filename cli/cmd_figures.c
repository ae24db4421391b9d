/* cmd_figures.c — `membound figures [VARIANT...] -o DIR`: figures from the
 * model alone (no measurement): the lecture's, or any variants' (names, .mb
 * files, --expr), on chosen devices. Drawing is in reports/. */
#include "cli_common.h"
#include "commands.h"
#include "report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound figures [VARIANT|FILE.mb ...] [--expr EXPR] [-o DIR] [options]\n"
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
            "  --formats LIST     png,svg,pdf (default: png)\n"
            "  --no-render        write data and scripts only\n"
            "  -h, --help         this help\n");
}

int mb_cmd_figures(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"device", required_argument, 0, 'd'},
        {"devices", required_argument, 0, 'D'}, {"expr", required_argument, 0, 'e'},
        {"formats", required_argument, 0, 'f'}, {"no-render", no_argument, 0, 'N'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *dir = "membound-figures", *device = NULL, *devlist = NULL;
    const char *exprs[16];
    int n_exprs = 0;
    unsigned formats = MB_RPT_PNG;
    int render = 1, c;
    mb_err e;
    mb_rpt_set_env(getenv); /* the library reads no environment */
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ho:e:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': dir = optarg; break;
        case 'd': device = optarg; break;
        case 'D': devlist = optarg; break;
        case 'e':
            if (n_exprs == 16) return mb_cli_fail(2, "at most 16 --expr");
            exprs[n_exprs++] = optarg;
            break;
        case 'f':
            if (mb_rpt_parse_formats(optarg, &formats, &e)) return mb_cli_fail_err(2, &e);
            break;
        case 'N': render = 0; break;
        case 'h': usage(stdout); return 0;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "figures");
        }
    }
    int rc = mb_rpt_check_out_dir(dir, &e);
    if (rc) return mb_cli_fail_err(rc, &e);
    mb_rpt_set defs;
    mb_rpt_set_init(&defs);
    for (int i = optind; i < argc && !rc; i++) rc = mb_rpt_define_variant(&defs, argv[i], 0, &e);
    for (int i = 0; i < n_exprs && !rc; i++) rc = mb_rpt_define_variant(&defs, exprs[i], 1, &e);
    if (rc) { mb_rpt_set_free(&defs); return mb_cli_fail_err(rc, &e); }

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
