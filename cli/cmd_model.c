/* cmd_model.c — `membound model`: kernels, bytes and roofline time of each
 * variant and plan on one device. */
#include "cli_common.h"
#include "commands.h"
#include "model_args.h"
#include "model_out.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound model [VARIANT|FILE.mb|--expr EXPR ...] [options]\n"
            "\n"
            "Predicts, for each variant and plan, the kernels it launches, the bytes each\n"
            "reads and writes (the lecture's count and the cache-aware DRAM count for a\n"
            "cold start), and its time on a device: launch + max(memory, compute).\n"
            "With no VARIANT, every built-in variant (see model/variants/). Variant files,\n"
            "built-in names and --expr mix, in the order given; each name once.\n"
            "\n"
            "  --expr EXPR      a Python-syntax expression, e.g. 'y = sin(x)**2 + cos(x)**2';\n"
            "                   free names are inputs, the last assignment is the output;\n"
            "                   repeat it for several\n"
            "  --plan LIST      eager | fused | online (forward; online: softmax), eager |\n"
            "                   store | recompute | optimal\n"
            "                   (backward; optimal: see membound plan), comma-separated;\n"
            "                   default: every plan the variant supports\n"
            "  --device LIST    device ids (membound devices) or INI specs, comma-separated,\n"
            "                   or 'all'; default h100-sxm (--devices: the same)\n"
            "  --n N            elements per tensor: 16777216, 2^24 or 16M; default: the\n"
            "                   variant's lecture size (2^24 when it has none)\n"
            "  --sizes LIST     several sizes: 2^20,2^24 or a range 2^16..2^28[:STEP], or\n"
            "                   shapes: 4096x1024,64x2^22\n"
            "  --shape LIST     2-D sizes ROWSxCOLS: 4096x1024 or 2^12x2^12 (reductions run\n"
            "                   over the last dimension); default: the variant's 'shape'\n"
            "  --dims LIST      sizes of the variant's named dimensions: batch=8,seq=4096,\n"
            "                   dim=1024 (input x [batch, seq, dim]); default: the\n"
            "                   variant's 'dims' line\n"
            "  --dtype LIST     f32 (default), bf16, f16, comma-separated: bf16,f32\n"
            "  --colsum HOW     written, partial or reread: how store, recompute and optimal\n"
            "                   sum a [cols] weight's gradient over the rows: the fused\n"
            "                   backward writes each row's term and a column kernel reads it\n"
            "                   back; or adds it into per-block partial sums (f32, one block\n"
            "                   an SM or thread: Liger's) that a small kernel adds up; or the\n"
            "                   column kernel reads the row kernel's inputs again and\n"
            "                   computes the term itself (Inductor's); default: the\n"
            "                   variant's 'colsum' line, else written\n"
            "  --per-kernel     one line per kernel under each result (table output)\n"
            "  --framework F    none (default: the executors' preallocated buffers) or\n"
            "                   pytorch: every kernel's output a fresh allocation, whose\n"
            "                   first touch above the mmap threshold costs bytes /\n"
            "                   first_touch_gbs (a calibrated CPU spec: membound calibrate);\n"
            "                   on a GPU the host issues every kernel (per op, per\n"
            "                   backward node, per autograd.Function call, per generated\n"
            "                   launch) and a kernel starts no earlier than its issue;\n"
            "                   an eager kernel that casts runs PyTorch's unrolled loop\n"
            "  --phase P        all (default), forward or backward: the kernels timed\n"
            "                   (y = f(x) alone, or y.backward(dy) alone)\n"
            "  --flush-mb MB    device work queued ahead of the timed region: a cache\n"
            "                   flush writing MB (Triton's do_bench: 256), run at the\n"
            "                   device's bandwidth while the host starts issuing\n"
            "  --json | --csv   machine-readable output (see the design's JSON contract)\n"
            "  -h, --help       this help\n"
            "\n"
            "example: membound model sin2_plus_cos2 --n 2^24 --device h100-sxm --json\n");
}

/* The table's first line: the device and the figures the model uses. */
static void table_head(const mb_device *dev)
{
    const char *src;
    double bw = mb_device_bandwidth_gbs(dev, &src);
    char resident[48] = "";
    if (dev->cache_resident_mb > 0)
        snprintf(resident, sizeof resident, " (%.1f resident while streaming)", dev->cache_resident_mb);
    printf("device %s (%s): %.0f GB/s (%s), last-level cache %.1f MiB%s, launch %.1f us\n\n",
           dev->name, dev->label, bw, src, dev->cache_mb, resident, dev->launch_overhead_us);
    mb_model_table_header(stdout, 0);
}

int mb_cmd_model(int argc, char **argv)
{
    static const struct option opts[] = {
        {"expr", required_argument, 0, 'e'}, {"plan", required_argument, 0, 'p'},
        {"device", required_argument, 0, 'd'}, {"devices", required_argument, 0, 'd'},
        {"n", required_argument, 0, 'n'},
        {"sizes", required_argument, 0, 's'}, {"dtype", required_argument, 0, 't'},
        {"shape", required_argument, 0, 'S'}, {"dims", required_argument, 0, MB_OPT_DIMS},
        {"colsum", required_argument, 0, MB_OPT_COLSUM},
        {"json", no_argument, 0, 'J'}, {"csv", no_argument, 0, 'C'},
        {"per-kernel", no_argument, 0, 'k'}, {"framework", required_argument, 0, 'F'},
        {"phase", required_argument, 0, MB_OPT_PHASE}, {"flush-mb", required_argument, 0, MB_OPT_FLUSH},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    mb_model_args a = {0};
    mb_timing timing = {0};
    int phase_given = 0, flush_given = 0;
    const char *device = "h100-sxm";
    int c, rc = 0;
    mb_err e;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "-:he:p:d:n:s:S:t:JCkF:", opts, NULL)) != -1) {
        switch (c) {
        case 'd': device = optarg; break;
        case 'k': a.per_kernel = 1; break;
        case MB_OPT_PHASE:
            if (phase_given++) { mb_model_args_free(&a); return mb_cli_fail(2, "--phase given twice: give it once"); }
            if (mb_phase_parse(optarg, &timing.phase) != MB_OK) {
                mb_model_args_free(&a);
                return mb_cli_fail(2, "--phase '%s': expected all, forward or backward", optarg);
            }
            break;
        case MB_OPT_FLUSH: {
            char *end = NULL;
            if (flush_given++) { mb_model_args_free(&a); return mb_cli_fail(2, "--flush-mb given twice: give it once"); }
            timing.flush_mb = strtod(optarg, &end);
            if (!*optarg || *end || !(timing.flush_mb >= 0 && timing.flush_mb <= 1e9)) {
                mb_model_args_free(&a);
                return mb_cli_fail(2, "--flush-mb '%s': expected megabytes, 0..1e9", optarg);
            }
            break;
        }
        case 'h': usage(stdout); mb_model_args_free(&a); return 0;
        default:
            rc = mb_model_args_option(&a, c, optarg);
            if (rc == 0) break;
            mb_model_args_free(&a);
            return rc > 0 ? rc : mb_cli_bad_option(c, argv, optind, optopt, "model");
        }
    }
    mb_device *devs = NULL;
    int ndev = 0;
    if ((rc = mb_cli_devices(device, &devs, &ndev))) { mb_model_args_free(&a); return rc; }
    if ((rc = mb_model_args_load(&a))) { free(devs); mb_model_args_free(&a); return rc; }
    mb_model_args_warn_memory(&a, devs, ndev);

    json_t *results = json_array();
    int64_t common_n = -1; /* the n every result shares, or 0 when they differ */
    if (a.fmt == MB_FMT_CSV) mb_model_csv_header(stdout, NULL);
    for (int d = 0; d < ndev && !rc; d++) {
        mb_device *dev = &devs[d];
        if (a.fmt == MB_FMT_TABLE) {
            if (d) putchar('\n');
            table_head(dev);
        }
        for (int i = 0; i < a.n_graphs && !rc; i++) {
            mb_plan_kind plans[MB_PLAN_COUNT];
            int np = mb_model_args_plans(&a, a.graphs[i], plans);
            mb_shape one;
            const mb_shape *sizes;
            int ns = mb_model_args_sizes(&a, a.graphs[i], &sizes, &one);
            for (int s = 0; s < ns && !rc; s++)
                for (int k = 0; k < np && !rc; k++) {
                    mb_model_row row;
                    timing.fw = a.framework;
                    if ((rc = mb_model_row_make_timed(&row, a.graphs[i], plans[k], sizes[s], dev,
                                                      mb_model_args_dtype(&a, i), &timing, &e))) {
                        mb_cli_fail_err(rc, &e);
                        break;
                    }
                    if (a.fmt == MB_FMT_TABLE) {
                        mb_model_table_row(stdout, &row, 0, a.per_kernel);
                        mb_model_knee_lines(stdout, &row);
                    }
                    else if (a.fmt == MB_FMT_CSV) mb_model_csv_row(stdout, &row, NULL);
                    else if (json_array_append_new(results, mb_model_row_json(&row, ndev > 1)) != 0)
                        rc = mb_cli_fail(1, "model %s, plan %s: the JSON result could not be built",
                                         a.graphs[i]->name, mb_plan_name(plans[k]));
                    common_n = common_n < 0 || common_n == mb_shape_elems(sizes[s]) ? mb_shape_elems(sizes[s]) : 0;
                    mb_model_row_free(&row);
                }
        }
    }
    if (!rc && a.fmt == MB_FMT_JSON) {
        json_t *root = json_object();
        /* several devices, several dtypes: null at the top, each result has its own */
        json_object_set_new(root, "device", ndev == 1 ? json_string(devs[0].name) : json_null());
        /* results at several sizes: "n" is null and each result has its own */
        json_object_set_new(root, "n", common_n > 0 ? json_integer((json_int_t)common_n) : json_null());
        json_object_set_new(root, "dtype", a.n_dtypes == 1 ? json_string(mb_dtype_name(a.dtype)) : json_null());
        json_object_set_new(root, "results", json_incref(results));
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
