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
            "       membound devices --keys [--json|--markdown]\n"
            "\n"
            "Lists the built-in device table: datasheet and measured bandwidth (1e9 B/s),\n"
            "last-level cache (MiB), FP32 and dense BF16 tensor peaks, launch overhead.\n"
            "With --device, shows one device or spec file, including its source.\n"
            "\n"
            "  --json          one JSON object: {\"devices\": [...]}, every key of each\n"
            "                  device (null: a key the spec leaves to its fallback)\n"
            "  --device D      only device D (a table id or an INI spec file)\n"
            "  --keys          the keys a spec file may hold: type, unit, range, what an\n"
            "                  absent key means, who measures it, what it is\n"
            "  --markdown      with --keys: as a Markdown table (docs/devices.md's)\n"
            "  -h, --help      this help\n");
}

static int is_text(const mb_device_key *k)
{
    return k->type == MB_DKT_STR || k->type == MB_DKT_ID || k->type == MB_DKT_ENUM;
}

/* Every key of d, in the table's order: text as strings, numbers as reals,
 * op families as {op: rate} of the ops with a rate; a GIVEN-written key the
 * spec did not give is null (absent: its fallback applies). */
static json_t *device_json(const mb_device *d)
{
    json_t *o = json_object();
    for (int i = 0; i < mb_device_key_count(); i++) {
        const mb_device_key *k = mb_device_key_at(i);
        json_t *v;
        if (is_text(k)) {
            v = json_string(mb_device_str(d, k));
        } else if (k->type == MB_DKT_OPS) {
            v = json_object();
            for (int op = 0; op < MB_OP_COUNT; op++)
                if (mb_device_num(d, k, op) != 0)
                    json_object_set_new(v, mb_op_name((mb_op)op), json_real(mb_device_num(d, k, op)));
        } else if (k->write == MB_DKW_GIVEN && !mb_device_given(d, (mb_dk_id)i)) {
            v = json_null();
        } else {
            v = json_real(mb_device_num(d, k, 0));
        }
        json_object_set_new(o, k->key, v);
    }
    return o;
}

static const char *type_name(mb_dk_type t)
{
    static const char *const names[] = {"text", "id", "choice", "number", "0 or 1", "number per op", "whole number"};
    return names[t];
}

/* The values k accepts, in words, into buf. */
static void range_text(const mb_device_key *k, char *buf, size_t size)
{
    switch (k->type) {
    case MB_DKT_STR: snprintf(buf, size, "at most %zu characters", k->size - 1); break;
    case MB_DKT_ID: snprintf(buf, size, "letters, digits, -_.+"); break;
    case MB_DKT_ENUM: snprintf(buf, size, "%s", k->def); break;
    case MB_DKT_FLAG: snprintf(buf, size, "0 or 1"); break;
    default: snprintf(buf, size, "%s%g..%g", k->zero_none ? "0 or " : "", k->lo, k->hi); break;
    }
}

static const char *need_text(const mb_device_key *k)
{
    return k->need == MB_DKN_REQ ? "required" : k->need == MB_DKN_REQ_GPU ? "required (gpu)" : "optional";
}

static const char *cal_text(const mb_device_key *k)
{
    static const char *const by[] = {"-", "calibrate", "calibrate --backend cuda", "calibrate (cpu, cuda)"};
    return by[k->cal & 3];
}

/* What an absent key means. */
static const char *absent_text(const mb_device_key *k)
{
    if (k->need == MB_DKN_REQ) return "-";
    if (k->type == MB_DKT_ENUM) return k->write == MB_DKW_ALWAYS ? "the first choice" : "unsaid";
    if (k->type == MB_DKT_STR) return !strcmp(k->def, "$name") ? "the name" : k->def[0] ? k->def : "empty";
    return k->def[0] ? k->def : "0";
}

/* The key table: plain text, Markdown (docs/devices.md holds it: a test
 * compares the two) or JSON. */
static int print_keys(int json, int markdown)
{
    int n = mb_device_key_count();
    char range[96];
    if (json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++) {
            const mb_device_key *k = mb_device_key_at(i);
            range_text(k, range, sizeof range);
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "key", k->key,
                                                 "type", type_name(k->type), "need", need_text(k), "unit", k->unit,
                                                 "range", range, "absent", absent_text(k), "measured_by",
                                                 cal_text(k), "table", k->source, "doc", k->doc));
        }
        json_t *root = json_pack("{s:o}", "keys", arr);
        char *s = json_dumps(root, JSON_INDENT(1));
        puts(s);
        free(s);
        json_decref(root);
        return 0;
    }
    if (markdown) {
        printf("| key | unit | values | absent | measured by | the table's rows | what it is |\n");
        printf("|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < n; i++) {
            const mb_device_key *k = mb_device_key_at(i);
            range_text(k, range, sizeof range);
            printf("| `%s`%s | %s | %s | %s | %s | %s | %s |\n", k->key, k->need == MB_DKN_OPT ? "" : " (required)",
                   k->unit[0] ? k->unit : "-", range, absent_text(k), cal_text(k), k->source, k->doc);
        }
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const mb_device_key *k = mb_device_key_at(i);
        range_text(k, range, sizeof range);
        printf("%-26s %-8s %s; %s; %s; absent: %s; measured by %s\n    %s\n", k->key, k->unit[0] ? k->unit : "-",
               type_name(k->type), need_text(k), range, absent_text(k), cal_text(k), k->doc);
    }
    printf("\nop_geps and op_compiled_geps are written one key per op: op_exp_geps, "
           "op_exp_compiled_geps, ...\n");
    return 0;
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
        {"keys", no_argument, 0, 'k'}, {"markdown", no_argument, 0, 'm'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, keys = 0, markdown = 0, c;
    const char *only = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hjd:", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = 1; break;
        case 'd': only = optarg; break;
        case 'k': keys = 1; break;
        case 'm': markdown = 1; break;
        case 'h': usage(stdout); return 0;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "devices");
        }
    }
    if (optind < argc) return mb_cli_fail(2, "unexpected argument '%s'", argv[optind]);
    if (markdown && !keys) return mb_cli_fail(2, "--markdown goes with --keys");
    if (keys && only) return mb_cli_fail(2, "--keys lists the keys of every spec: no --device");
    if (keys && json && markdown) return mb_cli_fail(2, "--json or --markdown, not both");
    if (keys) return print_keys(json, markdown);

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
