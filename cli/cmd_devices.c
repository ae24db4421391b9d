/* cmd_devices.c — `membound devices`: the device table, or one spec file. */
#include "cli_common.h"
#include "commands.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound devices [--json] [--device ID|FILE.ini]\n"
            "\n"
            "Lists the built-in device table: datasheet and measured bandwidth (1e9 B/s),\n"
            "last-level cache (MiB), FP32 and dense BF16 tensor peaks, launch overhead.\n"
            "With --device, shows one device or spec file, including its source.\n"
            "\n"
            "  --json          one JSON object: {\"devices\": [...]}\n"
            "  --device D      only device D (a table id or an INI spec file)\n"
            "  -h, --help      this help\n");
}

static json_t *device_json(const mb_device *d)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s}",
                          "name", d->name, "label", d->label, "kind", d->kind,
                          "mem_bandwidth_gbs", d->mem_bandwidth_gbs,
                          "measured_bandwidth_gbs", d->measured_bandwidth_gbs, "cache_mb", d->cache_mb,
                          "fp32_tflops", d->fp32_tflops, "bf16_tflops", d->bf16_tflops,
                          "sfu_tops", d->sfu_tops, "launch_overhead_us", d->launch_overhead_us,
                          "mem_gb", d->mem_gb, "source", d->source);
    if (d->measured_at[0]) json_object_set_new(o, "measured_at", json_string(d->measured_at));
    if (d->cited_bandwidth_gbs > 0)
        json_object_set_new(o, "cited_bandwidth_gbs", json_real(d->cited_bandwidth_gbs));
    if (d->cache_resident_mb > 0)
        json_object_set_new(o, "cache_resident_mb", json_real(d->cache_resident_mb));
    if (d->graph_launch_overhead_us > 0)
        json_object_set_new(o, "graph_launch_overhead_us", json_real(d->graph_launch_overhead_us));
    /* the row kernels' keys: one pass or several, and the rows in flight */
    if (d->onchip_kib > 0) json_object_set_new(o, "onchip_kib", json_real(d->onchip_kib));
    if (d->sm_count > 0) json_object_set_new(o, "sm_count", json_real(d->sm_count));
    if (d->max_threads_per_sm > 0) json_object_set_new(o, "max_threads_per_sm", json_real(d->max_threads_per_sm));
    json_t *ops = json_object();
    for (int i = 0; i < MB_OP_COUNT; i++)
        if (d->op_geps[i] > 0) json_object_set_new(ops, mb_op_name((mb_op)i), json_real(d->op_geps[i]));
    if (json_object_size(ops)) json_object_set_new(o, "op_geps", ops);
    else json_decref(ops);
    return o;
}

/* One table row; labels are never cut: the column is as wide as the widest. */
static void row(const mb_device *d, int label_w)
{
    char meas[16] = "-";
    if (d->measured_bandwidth_gbs > 0) snprintf(meas, sizeof meas, "%.0f", d->measured_bandwidth_gbs);
    printf("%-16s %-*s %9.0f %9s %8.1f %8.1f %8.1f %7.1f %6.0f\n", d->name, label_w, d->label,
           d->mem_bandwidth_gbs, meas, d->cache_mb, d->fp32_tflops, d->bf16_tflops,
           d->launch_overhead_us, d->mem_gb);
}

int mb_cmd_devices(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, 0, 'j'}, {"device", required_argument, 0, 'd'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, c;
    const char *only = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hjd:", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'd': only = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "devices");
        }
    }
    if (optind < argc) return mb_cli_fail(2, "unexpected argument '%s'", argv[optind]);

    mb_device one;
    int count = mb_device_count();
    if (only) {
        mb_err e;
        int rc = mb_device_find(only, &one, &e);
        if (rc) return mb_cli_fail_err(rc, &e);
        count = 1;
    }
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < count; i++) json_array_append_new(arr, device_json(only ? &one : mb_device_at(i)));
        json_t *root = json_pack("{s:o}", "devices", arr);
        char *s = json_dumps(root, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        puts(s);
        free(s);
        json_decref(root);
        return 0;
    }
    int label_w = 5;
    for (int i = 0; i < count; i++) {
        int w = (int)strlen((only ? &one : mb_device_at(i))->label);
        if (w > label_w) label_w = w;
    }
    printf("%-16s %-*s %9s %9s %8s %8s %8s %7s %6s\n", "id", label_w, "label", "BW GB/s",
           "meas GB/s", "LLC MiB", "FP32 TF", "BF16 TF", "launch", "mem GB");
    for (int i = 0; i < count; i++) row(only ? &one : mb_device_at(i), label_w);
    if (only) printf("\nsource: %s\n", one.source);
    else printf("\nGB/s = 1e9 B/s; BF16 TF dense (no sparsity); launch in us per kernel. "
                "Sources: 'membound devices --device ID' or --json.\n");
    return 0;
}
