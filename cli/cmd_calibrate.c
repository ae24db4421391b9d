/* cmd_calibrate.c — `membound calibrate`: measure this machine's bandwidth,
 * op rates and per-pass overhead into a device spec INI that `model`,
 * `whatif` and `measure` accept with --device FILE. Measures and prints no
 * figure itself (calibrate/: cpu.c, summary.c) and chooses no cache
 * (calibrate/choice.c: the entry point measure shares). */
#include "cli_common.h"
#include "commands.h"
#include "calibrate.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound calibrate [--backend cpu|cuda] [-o FILE.ini] [options]\n"
            "\n"
            "Measures this machine and writes a device spec (INI) for --device FILE:\n"
            "STREAM-style copy, read and write bandwidth on all cores (arrays >= 4x the\n"
            "last-level cache, requested bytes, interleaved rounds), the FP32 FMA peak,\n"
            "the throughput of every op through the CPU executor (op_<name>_geps) and in\n"
            "compiled kernels (op_<name>_compiled_geps, chains of the op), and the\n"
            "overhead of one executor pass (launch_overhead_us), each a median over\n"
            "interleaved rounds; the last-level cache from the knee of warm copy bandwidth.\n"
            "Samples during which the process did not get its cores are taken again;\n"
            "figures that cannot be true are measured again, then refused (exit 1,\n"
            "nothing written). Takes ~8 s on an idle 2-core machine, ~16 s the first\n"
            "time (its probe kernels are compiled once, then cached). Each full CPU\n"
            "calibration is cached for measure; one that finds the host more than 20%%\n"
            "away from the cached one (bandwidths, sin, sigmoid) warns: a shared host drifts.\n"
            "\n"
            "  --backend B   cpu (default) or cuda (when the build has a GPU calibration;\n"
            "                MB_CUDA_DEVICE and MB_CUDA_NO_BLOCK as for measure)\n"
            "  -o FILE       output spec, default local-cpu.ini (written atomically)\n"
            "  --threads N   threads (default: all cores)\n"
            "  --name ID     the spec's name (default local-cpu or local-gpu): what\n"
            "                measure's device column and report call this machine\n"
            "                (letters, digits, '-', '_', '.', '+'; scripts/slurm/ names\n"
            "                each node's spec by its target)\n"
            "  --quick       short, cache-sized run (for tests; numbers not for the model)\n"
            "  -q, --quiet   no progress notes (warnings still shown)\n"
            "  --cached      use this host's cached calibration when there is one (as\n"
            "                'measure' does) instead of measuring again; with --quick,\n"
            "                a quick one only where none is cached\n"
            "  --first-touch only the first-touch probe (--framework pytorch's figure, a\n"
            "                few seconds): prints it, writes no spec; to see whether a\n"
            "                spec's first_touch_gbs still holds on a shared host\n"
            "  -h, --help    this help\n"
            "\n"
            "example: membound calibrate -o local-cpu.ini && membound model --device local-cpu.ini\n");
}

static void progress(const char *label)
{
    mb_cli_note("calibrate: %s", label);
}

typedef struct cal_opts {
    const char *out_path;
    const char *name;             /* --name, or NULL */
    mb_meas_backend backend;
    int threads, quick, quiet, cached, touch_only, out_given;
} cal_opts;

/* The GPU: measured, its summary printed, the spec into *d. */
static int calibrate_gpu(const cal_opts *o, mb_device *d)
{
    /* the device and the blocking kernel as measure takes them: MB_CUDA_DEVICE, ... */
    mb_meas_config cfg;
    mb_err e;
    mb_meas_config_default(&cfg);
    cfg.note = mb_cli_meas_note;
    cfg.quiet = o->quiet;
    mb_meas_config_env(&cfg, getenv);
    char summary[2048];
    if (mb_cal_cuda(&cfg, d, summary, sizeof summary, &e)) return mb_cli_fail_err(1, &e);
    fputs(summary, stdout);
    return 0;
}

/* This CPU through measure's entry point (mb_cal_spec_get): the cached
 * calibration with --cached (--quick too), else measured now and cached
 * (not --quick).
 * from (fromsz bytes) gets the cache file when the cached one was taken,
 * else "". */
static int calibrate_cpu(const cal_opts *o, const char *cmdline, mb_device *d, char *from, size_t fromsz)
{
    mb_cal_spec_req req = {
        .backend = MB_MEAS_CPU, .cache_read = o->cached, .cache_write = !o->quick,
        .threads = o->threads, .quick = o->quick, .command_line = cmdline, .lookup = getenv,
        .progress = progress, .note = mb_cli_meas_note, .quiet = o->quiet};
    mb_cli_calib_test_hook(&req.refuse_first, &req.backoff_s);
    static mb_cal_spec_used used; /* holds the calibration's figures: not on the stack */
    mb_err e;
    int rc = mb_cal_spec_get(&req, d, &used, &e);
    if (rc) return mb_cli_fail_err(rc, &e);
    from[0] = '\0';
    char line[1600];
    mb_cal_spec_line(&used, d, line, sizeof line);
    mb_cli_note("%s", line);
    if (used.source == MB_CAL_SPEC_CACHED) {
        snprintf(from, fromsz, "%s", used.path);
        return 0;
    }
    if (used.moved[0])
        mb_cli_warn("%s; figures measured against the one it replaces carry up to that much (a shared host "
                    "drifts: compare several runs)", used.moved);
    mb_cal_print_cpu(stdout, d, &used.cal,
                     mb_meas_jit_why_not() ? mb_meas_jit_why_not() : "no C compiler or vector ISA");
    if (o->quick) mb_cli_note("--quick: cache-sized arrays, few repetitions; not for the model");
    if (used.fallback)
        mb_cli_warn("a fallback: full calibrations were refused %d times (the last: %s), so this is a quick "
                    "one; rows measured against it are marked 'fallback'", used.refused, used.refused_why);
    return 0;
}

static int parse_opts(cal_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        {"backend", required_argument, 0, 'b'}, {"output", required_argument, 0, 'o'},
        {"threads", required_argument, 0, 'T'}, {"quick", no_argument, 0, 'Q'},
        {"quiet", no_argument, 0, 'q'},
        {"cached", no_argument, 0, 'c'}, {"first-touch", no_argument, 0, 't'},
        {"name", required_argument, 0, 'n'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hb:o:T:q", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (mb_meas_backend_parse(optarg, &o->backend) != MB_OK || o->backend == MB_MEAS_AUTO)
                return mb_cli_fail(2, "unknown backend '%s' (backends: cpu, cuda)", optarg);
            break;
        case 'o': o->out_path = optarg; o->out_given = 1; break;
        case 'T': {
            char *end = NULL;
            long v = strtol(optarg, &end, 10);
            if (!end || *end || v < 1 || v > 4096)
                return mb_cli_fail(2, "--threads: expected a count in [1, 4096], got '%s'", optarg);
            o->threads = (int)v;
            break;
        }
        case 'n': {
            size_t len = strlen(optarg);
            int ok = len > 0 && len < sizeof ((mb_device *)0)->name;
            for (const char *p = optarg; ok && *p; p++)
                ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                     *p == '-' || *p == '_' || *p == '.' || *p == '+';
            if (!ok)
                return mb_cli_fail(2, "--name '%s': a device id is 1 to %zu letters, digits, '-', '_', '.' "
                                   "or '+'", optarg, sizeof ((mb_device *)0)->name - 1);
            o->name = optarg;
            break;
        }
        case 'Q': o->quick = 1; break;
        case 'q': o->quiet = 1; break;
        case 'c': o->cached = 1; break;
        case 't': o->touch_only = 1; break;
        case 'h': usage(stdout); return -1;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "calibrate");
        }
    }
    if (optind < argc)
        return mb_cli_fail(2, "unexpected argument '%s' (see 'membound calibrate --help')", argv[optind]);
    return 0;
}

/* --first-touch: the probe alone, printed; no spec, no cache. */
static int touch_only(const cal_opts *o)
{
    if (o->backend != MB_MEAS_CPU)
        return mb_cli_fail(2, "--first-touch: the probe is the CPU's (no --backend cuda)");
    if (o->cached) return mb_cli_fail(2, "--first-touch measures now: no --cached");
    if (o->out_given) return mb_cli_fail(2, "--first-touch writes no spec: no -o");
    if (o->name) return mb_cli_fail(2, "--first-touch writes no spec: no --name");
    static mb_cal_result cal; /* large: not on the stack */
    mb_err e;
    if (!o->quiet) progress("first touch of fresh allocations, 8-128 MiB");
    if (mb_cal_first_touch_probe(o->threads, o->quick, &cal, &e)) return mb_cli_fail_err(1, &e);
    printf("first touch, %d threads:\n", cal.threads);
    mb_cal_print_touch(stdout, &cal);
    return 0;
}

int mb_cmd_calibrate(int argc, char **argv)
{
    cal_opts o = {.out_path = "local-cpu.ini", .backend = MB_MEAS_CPU};
    mb_meas_set_env(getenv); /* the libraries read no environment */
    mb_meas_set_jit_warn(mb_cli_warn_line); /* a refused compiled-kernel cache says so */
    int rc = parse_opts(&o, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;

    if (o.touch_only) return touch_only(&o);

    /* the command line, as provenance in the spec's source */
    char cmdline[256] = "membound";
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(cmdline);
        snprintf(cmdline + used, sizeof cmdline - used, " %s", argv[i]);
    }
    mb_err e;
    static mb_device d; /* large: not on the stack */
    /* open the output first: an unwritable path fails before measuring */
    mb_outfile of;
    int orc = mb_outfile_open(&of, o.out_path, &e);
    if (orc) return mb_cli_fail_err(orc, &e);
    mb_outfile_abort(&of);

    char from[1024] = "";
    rc = o.backend == MB_MEAS_CUDA ? calibrate_gpu(&o, &d) : calibrate_cpu(&o, cmdline, &d, from, sizeof from);
    if (rc) return rc;
    if (o.name) snprintf(d.name, sizeof d.name, "%s", o.name);
    if (mb_device_write_ini(&d, o.out_path, &e)) return mb_cli_fail_err(1, &e);
    if (from[0]) printf("wrote %s from %s (use: --device %s)\n", o.out_path, from, o.out_path);
    else printf("wrote %s (use: --device %s)\n", o.out_path, o.out_path);
    return 0;
}
