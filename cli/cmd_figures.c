/* cmd_figures.c — `membound figures -o DIR`: the lecture's figures from the
 * model alone (no measurement), for one device. Drawing is in reports/. */
#include "cli_common.h"
#include "commands.h"
#include "report.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound figures [-o DIR] [--device D] [options]\n"
            "\n"
            "The lecture's figures from the model alone: bytes per element, time against n,\n"
            "the roofline with the lecture's operations, recomputation, and the what-if\n"
            "across every GPU of the table. Writes DIR/index.md, DIR/index.html and, per\n"
            "figure, NAME.dat (data), NAME.gp (script; style.gp is shared) and images.\n"
            "\n"
            "  -o, --output DIR   output directory (default: membound-figures)\n"
            "  --device D         table id or .ini spec (default: h100-sxm)\n"
            "  --formats LIST     png,svg,pdf (default: png)\n"
            "  --no-render        write data and scripts only\n"
            "  -h, --help         this help\n");
}

int mb_cmd_figures(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"device", required_argument, 0, 'd'},
        {"formats", required_argument, 0, 'f'}, {"no-render", no_argument, 0, 'N'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *dir = "membound-figures", *device = "h100-sxm";
    unsigned formats = MB_RPT_PNG;
    int render = 1, c;
    mb_err e;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': dir = optarg; break;
        case 'd': device = optarg; break;
        case 'f':
            if (mb_rpt_parse_formats(optarg, &formats, &e)) return mb_cli_fail_err(2, &e);
            break;
        case 'N': render = 0; break;
        case 'h': usage(stdout); return 0;
        case ':': return mb_cli_fail(2, "option '%s' needs a value (see 'membound figures --help')", argv[optind - 1]);
        default: return mb_cli_fail(2, "unknown option '%s' (see 'membound figures --help')", argv[optind - 1]);
        }
    }
    if (optind < argc) return mb_cli_fail(2, "unexpected argument '%s' (see 'membound figures --help')", argv[optind]);
    mb_device d;
    int rc = mb_device_find(device, &d, &e);
    if (rc) return mb_cli_fail_err(2, &e);
    static mb_rpt_figures figs;
    mb_err fe;
    fe.msg[0] = '\0';
    int frc = mb_rpt_model_figures(&d, dir, formats | (render ? MB_RPT_PNG : 0), render, &figs, &fe);
    if (frc && !figs.n) return mb_cli_fail_err(frc == MB_EINPUT ? 2 : 1, &fe);
    rc = mb_rpt_write_model_index(&d, &figs, dir, &e);
    if (rc) return mb_cli_fail_err(1, &e);
    for (int i = 0; i < figs.n; i++)
        printf("%-12s %s%s\n", figs.fig[i].name, figs.fig[i].title,
               figs.fig[i].rendered ? "" : " (data only)");
    printf("figures: %s/index.html\n", dir);
    if (frc) return mb_cli_fail_err(1, &fe);
    return 0;
}
