/* cmd_measure.c — `membound measure`: run variants for real on the CPU or a
 * GPU, check them against the float64 reference and write the measurement
 * CSV with the model's prediction beside each row. The protocol lives in
 * measure/, and so does the policy (which spec, memory admission, the host
 * check, what is said of a row); this file parses options, calls it, and
 * writes. */
#include "cli_common.h"
#include "commands.h"
#include "mb_child.h"
#include "calibrate.h"
#include "variant_inputs.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound measure [VARIANT|FILE.mb|--expr EXPR ...] [options]\n"
            "\n"
            "Runs each variant x plan x dtype x size for real, checks every run against a\n"
            "float64 reference (backward plans also against finite differences), and\n"
            "writes one CSV row each, the model's prediction beside the measured times.\n"
            "With no VARIANT, every built-in; files, names and --expr mix, each once.\n"
            "\n"
            "  --backend B      auto (default: cuda when a usable GPU is present), cpu, cuda\n"
            "  --expr EXPR      a Python-syntax expression; repeat it for several\n"
            "  --plan LIST      eager | fused | store | recompute | optimal (default: all)\n"
            "  --sizes LIST     2^20,2^24 or 2^16..2^26[:STEP], or shapes 2^12x2^12;\n"
            "                   default: each variant's lecture size or 'shape' line\n"
            "  --shape LIST     2-D sizes only, ROWSxCOLS (reductions over the last dim)\n"
            "  --dims LIST      sizes of named dimensions: batch=8,seq=4096,dim=1024\n"
            "  --n N            one size\n"
            "  --dtype T[,T]    f32 (default), bf16, f16; several: f32,bf16\n"
            "  --device SPEC    the model columns' device: a table id or an INI spec\n"
            "                   (cpu default: ./local-cpu.ini, else this host's cached\n"
            "                   calibration, else a new one; cuda default: h100-sxm)\n"
            "  --recalibrate    calibrate this CPU again and replace the cached calibration\n"
            "  --reps N         at least N timed samples (>= 10, default 10); sampling\n"
            "                   stops when CV <= 2%% or after --timeout\n"
            "  --timeout S      stop sampling a row after S seconds (default 10)\n"
            "  --warm           do not evict the last-level cache between samples\n"
            "  --threads N      CPU threads (default: all cores)\n"
            "  --exec E         CPU executor: auto (default), opwise, blocked\n"
            "  -o FILE.csv      write the CSV there (atomically) and a table on stdout;\n"
            "                   without -o the CSV goes to stdout when the run ends\n"
            "  --per-kernel F   also one row per kernel into F (same columns + kernel)\n"
            "  -q, --quiet      no progress notes (warnings still shown)\n"
            "  -v, --verbose    each row's warnings in full (default: a summary per kind)\n"
            "  -h, --help       this help\n"
            "\n"
            "err%% = measured / model - 1 (positive: slower than the model). Exit: 0 all\n"
            "rows verified, 1 a run or check failed (rows kept, verified=0), 2 bad usage or\n"
            "a size that does not fit in memory, 128+N killed by signal N (the rows so far\n"
            "are written; an existing -o file is kept and they go beside it).\n"
            "More (the CSV's columns, the host checks, the cache and the environment\n"
            "variables of the cuda backend): docs/cpu.md, docs/cuda.md, docs/cli.md.\n"
            "example: membound measure copy --dtype f32,bf16 --sizes 2^25 --device local-cpu.ini -o copy.csv\n");
}

static int parse_dtypes(const char *s, mb_dtype *out, int *count)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    *count = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        mb_dtype t;
        if (mb_dtype_parse(tok, &t) != MB_OK)
            return mb_cli_fail(2, "unknown dtype '%s' (dtypes: f32, bf16, f16)", tok);
        for (int i = 0; i < *count; i++)
            if (out[i] == t) return mb_cli_fail(2, "--dtype: '%s' given twice in '%s'", tok, s);
        if (*count >= MB_DTYPE_COUNT) return mb_cli_fail(2, "--dtype: too many dtypes in '%s'", s);
        out[(*count)++] = t;
    }
    if (!*count) return mb_cli_fail(2, "--dtype: empty list");
    return 0;
}

static int parse_count(const char *opt, const char *s, int lo, int hi, int *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!end || *end || end == s || v < lo || v > hi)
        return mb_cli_fail(2, "%s: expected a whole number in [%d, %d], got '%s'", opt, lo, hi, s);
    *out = (int)v;
    return 0;
}

/* The signals that end a run (a closed terminal or ssh session sends
 * SIGHUP; a reader of stdout gone, SIGPIPE): while measuring, each stops it
 * and keeps the rows measured so far. */
static const int stop_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
#define N_STOP_SIGS (int)(sizeof stop_sigs / sizeof stop_sigs[0])

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
    }
}

/* The signal that stopped the rows loop and the protocol (which stops its
 * sampling); a second one ends the process through the handlers that were
 * there before, except SIGPIPE (a note written to a terminal gone after a
 * SIGHUP must not lose the rows). */
static volatile sig_atomic_t stop_signal;
static struct sigaction stop_old[N_STOP_SIGS];

static void on_stop(int sig)
{
    if (stop_signal) {
        if (sig == SIGPIPE) return;
        for (int i = 0; i < N_STOP_SIGS; i++)
            if (stop_sigs[i] == sig) sigaction(sig, &stop_old[i], NULL);
        raise(sig);
        return;
    }
    stop_signal = sig;
    mb_intr_note(sig); /* for the long loops below the protocol; ends a compiler we wait for */
}

/* install = 1: catch the stop signals (unless ignored: nohup); 0: restore. */
static void stop_handlers(int install)
{
    for (int i = 0; i < N_STOP_SIGS; i++) {
        if (!install) {
            sigaction(stop_sigs[i], &stop_old[i], NULL);
            continue;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop; /* no SA_RESTART: a blocked write returns */
        sigemptyset(&sa.sa_mask);
        if (sigaction(stop_sigs[i], NULL, &stop_old[i]) == 0 && stop_old[i].sa_handler == SIG_IGN)
            continue;
        sigaction(stop_sigs[i], &sa, NULL);
    }
}

typedef struct opts {
    mb_cli_inputs inputs; /* variant files, built-in names, --expr, in order */
    const char *device, *out_path, *kernel_path;
    mb_meas_backend backend;
    int plan_given;
    mb_plan_kind plans[MB_PLAN_COUNT]; /* --plan's list, in order */
    int n_plans;
    mb_dtype dtypes[MB_DTYPE_COUNT];
    int n_dtypes;
    mb_shape *sizes;     /* --n, --sizes or --shape: all 1-D or all 2-D */
    int n_sizes;
    const char *dims;    /* --dims name=SIZE,...: each variant's named dimensions */
    mb_meas_config cfg;
    int quiet;
    int recalibrate; /* 1: calibrate even when a cached calibration exists */
    int verbose;     /* 1: each row's warnings in full */
    int help;        /* 1: --help was given (usage printed) */
} opts;

/* One measure run: its rows, outputs and counts. */
typedef struct run {
    opts o;
    mb_meas_job *jobs;
    int n_jobs;
    mb_graph **all_graphs[MB_DTYPE_COUNT];
    const char **all_exprs[MB_DTYPE_COUNT]; /* each graph's --expr string, NULL for a file */
    int n_all[MB_DTYPE_COUNT];
    mb_meas_record *rows;
    mb_meas_csv_texts texts;             /* provenance columns, written after the rows */
    mb_meas_csv_rows out_rows, out_kernels;
    mb_outfile of, kf;
    int have_of, have_kf;
    FILE *csv;
    char *partial; /* 'partial: ...' provenance lines of the rows that failed to run */
    mb_meas_backend backend;
    mb_device dev;
    char dev_desc[1400];
    int64_t avail, llc;
    mb_meas_hostcheck hc;
    char calib_mark[16]; /* every row's calibration column (mb_cal_mark) */
    int *same_as;        /* per job: an earlier job of the same kernels (measured once), or -1 */
    int *out_at;         /* per job: its row in out_rows, -1 none (yet) */
    int *kernel_first;   /* per job: its first row in out_kernels, -1 none */
    int failed, noisy, drifted, two_modes, above_roof, inaccurate, shared;
    int done_rows, row_errors, not_run;
} run;

static int load_graphs(const opts *o, mb_dtype dt, mb_graph ***graphs, int *n_graphs, const char ***exprs)
{
    return mb_cli_inputs_load(&o->inputs, dt, graphs, n_graphs, exprs);
}

static void free_graphs(mb_graph **g, int n)
{
    for (int i = 0; i < n; i++) mb_graph_free(g[i]);
    free(g);
}

static void print_table_header(FILE *fp)
{
    fprintf(fp, "%-16s %-10s %-5s %9s %4s %11s %11s %7s %11s %7s %9s %8s %s\n", "variant", "plan",
            "dtype", "size", "reps", "median", "min", "cv", "model", "err%", "GB/s", "max_err",
            "verified [contended samples] [host drift] [two modes]");
}

static void print_table_row(FILE *fp, const mb_meas_record *r)
{
    char nb[32], t1[32], t2[32], t3[32];
    /* one sign everywhere, report's too: measured / model - 1 (positive: slower than modelled) */
    double err_pct = 100.0 * (r->time_s_median / r->model_time_s - 1.0);
    double gbs = (double)(r->read_bytes + r->write_bytes) / r->time_s_median / 1e9;
    char cont[48] = "";
    if (r->contended > 0)
        snprintf(cont, sizeof cont, " [%d/%d%s]", r->contended, r->reps,
                 mb_meas_row_noisy(r) ? " noisy" : "");
    char host[128] = "", ratios[64], at_host[48] = "";
    if (isfinite(r->model_host_time_s))
        snprintf(at_host, sizeof at_host, "; at those rates err %+.1f%%",
                 100.0 * (r->time_s_median / r->model_host_time_s - 1.0));
    if (MB_MEAS_HOST_DRIFTED(r->host_copy_ratio, r->host_op_ratio))
        snprintf(host, sizeof host, " [host %s of calibrated%s]", mb_meas_host_ratios(r, ratios, sizeof ratios),
                 at_host);
    char modes[96] = "";
    if (isfinite(r->upper_mode_share))
        snprintf(modes, sizeof modes, " [two modes: %s, %s (%.0f%%)]",
                 mb_cli_fmt_time(r->time_s_lower_mode, t1, sizeof t1),
                 mb_cli_fmt_time(r->time_s_upper_mode, t2, sizeof t2), 100 * r->upper_mode_share);
    fprintf(fp, "%-16s %-10s %-5s %9s %4d %11s %11s %6.1f%% %11s %+6.1f%% %9.2f %8.2g %s%s%s%s\n",
            r->variant, r->plan, r->dtype, mb_meas_fmt_size(r->n, r->cols, nb, sizeof nb), r->reps,
            mb_cli_fmt_time(r->time_s_median, t1, sizeof t1),
            mb_cli_fmt_time(r->time_s_min, t2, sizeof t2), 100.0 * r->time_cv,
            mb_cli_fmt_time(r->model_time_s, t3, sizeof t3), err_pct, gbs, r->max_rel_err,
            !r->verified ? "FAILED" : strcmp(r->accuracy, "inaccurate") ? "yes" : "yes, inaccurate", cont,
            host, modes);
}

/* Appends "partial: <fmt>\n" to *lines (a malloc'ed text, NULL at first);
 * newlines of the message become spaces (one line each). Returns 1 when
 * memory runs out. */
static int add_partial(char **lines, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add_partial(char **lines, const char *fmt, ...)
{
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    size_t old = *lines ? strlen(*lines) : 0, add = strlen(msg) + sizeof "partial: \n";
    char *grown = realloc(*lines, old + add);
    if (!grown) return 1;
    snprintf(grown + old, add, "partial: %s\n", msg);
    *lines = grown;
    return 0;
}

static void calib_progress(const char *label)
{
    mb_cli_note("calibrating this CPU for the model columns: %s", label);
}

/* The model device (mb_cal_spec_get: --device, or the defaults described
 * in usage), its notes and its provenance line into r->dev_desc. */
static int model_device(run *r)
{
    const opts *o = &r->o;
    mb_cal_spec_req req = {
        .device = o->device, .backend = r->backend, .workdir = !o->recalibrate,
        .cache_read = !o->recalibrate, .cache_write = 1, .threads = o->cfg.threads,
        .command_line = "membound measure (in-process calibration)", .lookup = getenv,
        .progress = calib_progress, .note = mb_cli_meas_note, .quiet = o->quiet};
    mb_cli_calib_test_hook(&req.refuse_first, &req.backoff_s);
    static mb_cal_spec_used used; /* holds the calibration's figures: not on the stack */
    mb_err e;
    if (o->recalibrate && !o->device && r->backend == MB_MEAS_CPU && !o->quiet)
        mb_cli_note("--recalibrate: calibrating this CPU first");
    int rc = mb_cal_spec_get(&req, &r->dev, &used, &e);
    if (rc) return mb_cli_fail_err(rc, &e);
    mb_cal_spec_describe(&used, &r->dev, r->dev_desc, sizeof r->dev_desc);
    snprintf(r->calib_mark, sizeof r->calib_mark, "%s",
             mb_cal_mark(&used, &r->dev, (double)time(NULL), NULL));
    char line[1600];
    mb_cal_spec_line(&used, &r->dev, line, sizeof line);
    mb_cli_note("%s%s", line, used.source == MB_CAL_SPEC_CACHED ? " (--recalibrate measures again)" : "");
    if (used.moved[0])
        mb_cli_warn("%s; the model columns take the new figures (a shared host drifts: compare several runs)",
                    used.moved);
    return 0;
}

/* --sizes LIST or --n N into o (sizes_opt: the option that set them before). */
static int parse_size_opt(opts *o, int c, int *sizes_opt)
{
    mb_err e;
    if (*sizes_opt)
        return *sizes_opt == c ? mb_cli_fail(2, "--%s given twice: give it once", c == 'n' ? "n" : c == 'S' ? "shape" : c == 's' ? "sizes" : "dims")
                               : mb_cli_fail(2, "--n, --sizes, --shape and --dims cannot be combined: give one");
    *sizes_opt = c;
    if (c == MB_OPT_DIMS) {
        o->dims = optarg;
        return 0;
    }
    if (c == 's' || c == 'S') {
        if (mb_cli_parse_shapes(optarg, &o->sizes, &o->n_sizes, &e)) return mb_cli_fail_err(2, &e);
        if (c == 'S' && o->sizes[0].rank != 2)
            return mb_cli_fail(2, "--shape '%s': expected ROWSxCOLS, e.g. 4096x1024 (1-D sizes: --n)", optarg);
        return 0;
    }
    int64_t n1;
    if (mb_cli_size(optarg, &n1)) return 2;
    o->sizes = malloc(sizeof *o->sizes);
    if (!o->sizes) return mb_cli_fail(1, "out of memory");
    o->sizes[0] = mb_shape_1d(n1);
    o->n_sizes = 1;
    return 0;
}

/* --timeout S into o->cfg. */
static int parse_timeout(opts *o)
{
    char *end = NULL;
    double v = strtod(optarg, &end);
    if (!end || *end || end == optarg || !(v > 0) || v > 86400)
        return mb_cli_fail(2, "--timeout: expected seconds in (0, 86400], got '%s'", optarg);
    o->cfg.timeout_s = v;
    if (o->cfg.min_time_s > v) o->cfg.min_time_s = v;
    return 0;
}

/* One option c (getopt_long's) into o; an exit code after one line when bad. */
static int parse_one(opts *o, int c, char **argv, int *sizes_opt, int *cold_opt)
{
    mb_err e;
    switch (c) {
    case 'b':
        if (mb_meas_backend_parse(optarg, &o->backend) != MB_OK)
            return mb_cli_fail(2, "unknown backend '%s' (backends: auto, cpu, cuda)", optarg);
        return 0;
    case 1:
    case 'e': return mb_cli_inputs_add(&o->inputs, c == 'e', optarg);
    case 'p': {
        int rc = mb_cli_plans(optarg, o->plans, &o->n_plans);
        if (!rc) o->plan_given = 1;
        return rc;
    }
    case 's':
    case 'S':
    case MB_OPT_DIMS:
    case 'n': return parse_size_opt(o, c, sizes_opt);
    case 't': return parse_dtypes(optarg, o->dtypes, &o->n_dtypes);
    case 'd': o->device = optarg; return 0;
    case 'r': {
        int rc = parse_count("--reps", optarg, 10, 100000, &o->cfg.min_reps);
        if (!rc && o->cfg.max_reps < o->cfg.min_reps) o->cfg.max_reps = o->cfg.min_reps;
        return rc;
    }
    case 'O': return parse_timeout(o);
    case 'W':
    case 'C':
        if (*cold_opt && *cold_opt != c) return mb_cli_fail(2, "--warm and --cold cannot be combined: give one");
        *cold_opt = c;
        o->cfg.cold = c == 'C';
        return 0;
    case 'T': return parse_count("--threads", optarg, 1, 4096, &o->cfg.threads);
    case 'x': return mb_meas_exec_parse(optarg, &o->cfg.exec, &e) ? mb_cli_fail_err(2, &e) : 0;
    case 'o': o->out_path = optarg; return 0;
    case 'k': o->kernel_path = optarg; return 0;
    case 'q': o->quiet = o->cfg.quiet = 1; return 0;
    case 'v': o->verbose = o->cfg.row_details = 1; return 0;
    case 'R': o->recalibrate = 1; return 0;
    case 'h':
        usage(stdout);
        o->help = 1;
        return 0;
    default: return mb_cli_bad_option(c, argv, optind, optopt, "measure");
    }
}

/* The command line into o (defaults first); an exit code after one line. */
static int parse_opts(opts *o, int argc, char **argv)
{
    static const struct option lopts[] = {
        {"backend", required_argument, 0, 'b'}, {"expr", required_argument, 0, 'e'},
        {"plan", required_argument, 0, 'p'}, {"sizes", required_argument, 0, 's'},
        {"shape", required_argument, 0, 'S'}, {"dims", required_argument, 0, MB_OPT_DIMS},
        {"n", required_argument, 0, 'n'}, {"dtype", required_argument, 0, 't'},
        {"device", required_argument, 0, 'd'}, {"reps", required_argument, 0, 'r'},
        {"timeout", required_argument, 0, 'O'}, {"warm", no_argument, 0, 'W'}, {"cold", no_argument, 0, 'C'},
        {"threads", required_argument, 0, 'T'}, {"exec", required_argument, 0, 'x'},
        {"output", required_argument, 0, 'o'}, {"per-kernel", required_argument, 0, 'k'},
        {"quiet", no_argument, 0, 'q'}, {"verbose", no_argument, 0, 'v'}, {"help", no_argument, 0, 'h'},
        {"recalibrate", no_argument, 0, 'R'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->backend = MB_MEAS_AUTO;
    o->dtypes[0] = MB_F32;
    o->n_dtypes = 1;
    mb_meas_config_default(&o->cfg);
    o->cfg.note = mb_cli_meas_note;
    mb_meas_config_env(&o->cfg, getenv);
    o->cfg.row_details = 0; /* one summary line per kind (finish), --verbose for each row's */
    int c, rc, sizes_opt = 0, cold_opt = 0; /* the option that set them, for conflicts */
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "-:hqvb:e:p:s:S:n:t:d:r:WCT:x:o:k:O:", lopts, NULL)) != -1) {
        if ((rc = parse_one(o, c, argv, &sizes_opt, &cold_opt))) return rc;
        if (o->help) return 0;
    }
    /* an output that is an input (a variant file, the spec) or the other
     * output would be lost: refused before any work */
    const char *out_paths[] = {o->out_path, o->kernel_path};
    const char *files[64];
    int n_files = 0;
    for (int i = 0; i < o->inputs.n && n_files < 64; i++)
        if (!o->inputs.v[i].is_expr) files[n_files++] = o->inputs.v[i].arg;
    mb_err e;
    if (mb_outfile_check_distinct(out_paths, 2, files, n_files, &e) ||
        mb_outfile_check_distinct(out_paths, 2, &o->device, 1, &e))
        return mb_cli_fail_err(2, &e);
    return 0;
}

/* Appends one row to r->jobs. */
static int add_job(run *r, int *cap, mb_meas_job jb)
{
    if (r->n_jobs == *cap) {
        int grown_cap = *cap ? 2 * *cap : 16;
        mb_meas_job *nj = realloc(r->jobs, (size_t)grown_cap * sizeof *nj);
        if (!nj) return mb_cli_fail(1, "out of memory");
        r->jobs = nj;
        *cap = grown_cap;
    }
    r->jobs[r->n_jobs++] = jb;
    return 0;
}

/* The rows of graph g: each plan (the one given, else every supported one)
 * at each size (the given ones, else the variant's own). */
static int add_graph_jobs(run *r, mb_graph *g, int *cap)
{
    const opts *o = &r->o;
    mb_err e;
    int rc;
    for (int k = 0; o->plan_given && k < o->n_plans; k++)
        if (!mb_plan_supported(g, o->plans[k])) {
            mb_plan *p = NULL;
            rc = mb_plan_build(g, o->plans[k], &p, &e); /* fails, naming the valid plans */
            return mb_cli_fail_err(rc ? rc : 2, &e);
        }
    mb_shape one = g->default_shape.rank == 2 ? g->default_shape
                                              : mb_shape_1d(g->default_n ? g->default_n : ((int64_t)1 << 24));
    if (o->dims && (rc = mb_graph_bind_dims(g, o->dims, &one, &e))) return mb_cli_fail_err(rc, &e);
    if (g->has_gcol && g->dim_size[0] <= 0 && (rc = mb_graph_check_shape(g, one, &e))) /* before any run */
        return mb_cli_fail_err(rc, &e);
    const mb_shape *sizes = o->sizes ? o->sizes : &one;
    int ns = o->sizes ? o->n_sizes : 1;
    /* every built-in at 1-D sizes: the 2-D ones (softmax, ...) are left out */
    if (o->sizes && sizes[0].rank == 1 && o->inputs.n == 0 && g->rank_declared && g->rank == 2) return 0;
    /* the sizes fix the rank: a 1-D variant at ROWSxCOLS reduces rows */
    if ((rc = mb_graph_set_rank(g, sizes[0].rank, &e))) return mb_cli_fail_err(rc, &e);
    for (int si = 0; si < ns; si++) /* a mask's rows need named sizes: before any run */
        if ((rc = mb_graph_check_shape(g, mb_graph_shape_at(g, sizes[si]), &e))) return mb_cli_fail_err(rc, &e);
    int n_pk = o->plan_given ? o->n_plans : MB_PLAN_COUNT;
    for (int ki = 0; ki < n_pk; ki++) {
        int pk = o->plan_given ? (int)o->plans[ki] : ki; /* --plan's order, else the table's */
        if (!o->plan_given && !mb_plan_supported(g, (mb_plan_kind)pk)) continue;
        for (int si = 0; si < ns; si++) {
            /* the host memory each row needs, for the admission before any runs */
            mb_plan *p = NULL;
            if ((rc = mb_plan_build(g, (mb_plan_kind)pk, &p, &e))) return mb_cli_fail_err(rc, &e);
            int64_t n = mb_shape_elems(sizes[si]);
            int64_t need = mb_meas_host_need_bytes(p, n, &o->cfg);
            mb_plan_free(p);
            mb_shape at = mb_graph_shape_at(g, sizes[si]);
            int64_t cols = at.rank == 2 ? at.cols : 0;
            if ((rc = add_job(r, cap, (mb_meas_job){g, (mb_plan_kind)pk, n, need, cols}))) return rc;
        }
    }
    return 0;
}

/* 1 when arrays a and b of count entries of size sz hold the same (both
 * absent counts as the same). */
static int same_array(const void *a, const void *b, int count, size_t sz)
{
    if (!a || !b) return a == b;
    return !memcmp(a, b, (size_t)count * sz);
}

/* 1 when plans p and q of one graph are the same kernels (copy's eager and
 * fused: one kernel either way): the same nodes, reads and writes, and the
 * same row passes (model/passes.c: online sums, what each pass evaluates and
 * reads), for the executors run that, not a plan's name, so one measurement
 * stands for both. Only at one size: the caller compares shapes. */
static int same_kernels(const mb_plan *p, const mb_plan *q)
{
    if (p->n_kernels != q->n_kernels || p->n_saved != q->n_saved) return 0;
    for (int k = 0; k < p->n_kernels; k++) {
        const mb_kernel *a = &p->kernels[k], *b = &q->kernels[k];
        if (a->n_nodes != b->n_nodes || a->n_reads != b->n_reads || a->n_writes != b->n_writes ||
            a->is_backward != b->is_backward || a->passes != b->passes ||
            a->live_bytes_per_col != b->live_bytes_per_col ||
            memcmp(a->nodes, b->nodes, (size_t)a->n_nodes * sizeof *a->nodes) ||
            memcmp(a->reads, b->reads, (size_t)a->n_reads * sizeof *a->reads) ||
            memcmp(a->writes, b->writes, (size_t)a->n_writes * sizeof *a->writes) ||
            !same_array(a->read_passes, b->read_passes, a->n_reads, sizeof *a->read_passes) ||
            !same_array(a->eval_mask, b->eval_mask, a->n_nodes, sizeof *a->eval_mask) ||
            !same_array(a->stat_pass, b->stat_pass, a->n_nodes, sizeof *a->stat_pass) ||
            !same_array(a->online, b->online, a->n_nodes, sizeof *a->online))
            return 0;
    }
    return 1;
}

/* r->same_as: each job whose kernels an earlier job of the same graph and
 * size (n and, for a 2-D row, its shape) runs (shared_row says so when it
 * writes the first of them). */
static int find_shared(run *r)
{
    mb_err e;
    r->same_as = malloc((size_t)(r->n_jobs + 1) * sizeof *r->same_as);
    r->kernel_first = malloc((size_t)(r->n_jobs + 1) * sizeof *r->kernel_first);
    r->out_at = malloc((size_t)(r->n_jobs + 1) * sizeof *r->out_at);
    if (!r->same_as || !r->kernel_first || !r->out_at) return mb_cli_fail(1, "out of memory");
    for (int j = 0; j < r->n_jobs; j++) {
        r->same_as[j] = r->kernel_first[j] = r->out_at[j] = -1;
        const mb_meas_job *jb = &r->jobs[j];
        for (int i = 0; i < j && r->same_as[j] < 0; i++) {
            const mb_meas_job *ib = &r->jobs[i];
            if (ib->g != jb->g || ib->n != jb->n || ib->cols != jb->cols || r->same_as[i] >= 0) continue;
            mb_plan *p = NULL, *q = NULL;
            int rc = mb_plan_build(jb->g, jb->plan, &p, &e);
            if (!rc) rc = mb_plan_build(ib->g, ib->plan, &q, &e);
            if (!rc && same_kernels(p, q)) r->same_as[j] = i;
            mb_plan_free(p);
            mb_plan_free(q);
            if (rc) return mb_cli_fail_err(rc, &e);
        }
    }
    return 0;
}

/* 1. every graph, plan and size: bad input fails before anything runs */
static int build_jobs(run *r)
{
    int cap = 0, rc;
    for (int d = 0; d < r->o.n_dtypes; d++) {
        if ((rc = load_graphs(&r->o, r->o.dtypes[d], &r->all_graphs[d], &r->n_all[d], &r->all_exprs[d])))
            return rc;
        for (int gi = 0; gi < r->n_all[d]; gi++)
            if ((rc = add_graph_jobs(r, r->all_graphs[d][gi], &cap))) return rc;
    }
    return find_shared(r);
}

/* 2. outputs open before anything runs (calibration included): an unusable
 * path fails now (exit 2), and an interrupted run leaves no file (mb_outfile) */
static int open_outputs(run *r)
{
    mb_err e;
    int rc;
    r->csv = stdout;
    if (r->o.out_path) {
        if ((rc = mb_outfile_open(&r->of, r->o.out_path, &e))) return mb_cli_fail_err(rc, &e);
        r->have_of = 1;
        r->csv = r->of.fp;
    }
    if (r->o.kernel_path) {
        if ((rc = mb_outfile_open(&r->kf, r->o.kernel_path, &e))) return mb_cli_fail_err(rc, &e);
        r->have_kf = 1;
    }
    return 0;
}

/* 3. backend and model device, then the files' provenance and headers */
static int prepare(run *r)
{
    mb_err e;
    char note[320];
    int rc;
    if (mb_meas_resolve_backend(r->o.backend, &r->backend, note, sizeof note, &e)) return mb_cli_fail_err(1, &e);
    if ((rc = mb_meas_admit_jobs(r->backend, &r->o.cfg, r->jobs, r->n_jobs, r->avail, &e)))
        return mb_cli_fail_err(rc, &e);
    if ((rc = model_device(r))) return rc;
    if (note[0] && !r->o.quiet) mb_cli_note("%s", note);
    mb_meas_config_for_device(&r->o.cfg, r->backend, &r->dev); /* the flush: a calibrated CPU's cache */
    if (r->o.cfg.llc_bytes > 0) r->llc = r->o.cfg.llc_bytes; /* the notes below name that cache */

    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, &r->o.cfg);
    snprintf(pv.extra, sizeof pv.extra, "backend: %s\nmodel_device: %s\nmemory: %.2f GB available of "
             "%.2f GB (host, at the start)", mb_meas_backend_name(r->backend), r->dev_desc,
             (double)r->avail / 1e9, (double)mb_meas_host_memory_bytes("MemTotal") / 1e9);
    char sched[400];
    mb_cli_scheduler_line(sched, sizeof sched);
    if (sched[0]) {
        size_t used = strlen(pv.extra);
        snprintf(pv.extra + used, sizeof pv.extra - used, "\n%s", sched);
    }
    /* provenance with the spec and variant texts, in columns of every row
     * (written after the rows): the CSV reports anywhere, alone */
    if (mb_meas_csv_texts_init(&r->texts, &pv, &r->dev, r->all_graphs[0], r->all_exprs[0], r->n_all[0], &e))
        return mb_cli_fail_err(1, &e);
    if (r->o.out_path) print_table_header(stdout);
    return 0;
}


/* A row that could not run: said, left out, a '# partial:' line for it; when
 * the GPU became unusable, the rows after it are not run (*stop). */
static int row_failed(run *r, int j, const char *dtype, const mb_err *e, int *stop)
{
    const mb_meas_job *jb = &r->jobs[j];
    char nb[96];
    mb_cli_fail(1, "%s %s %s %s: %s: the row is left out", jb->g->name, mb_plan_name(jb->plan), dtype,
                mb_meas_fmt_at(jb->n, jb->cols, nb, sizeof nb), e->msg);
    if (add_partial(&r->partial, "%s %s %s %s failed: %s", jb->g->name, mb_plan_name(jb->plan), dtype, nb,
                    e->msg))
        return mb_cli_fail(1, "out of memory");
    r->row_errors++;
    char why_not[256];
    if (r->backend != MB_MEAS_CUDA || mb_meas_cuda_available(why_not, sizeof why_not)) return 0;
    *stop = 1;
    r->not_run = r->n_jobs - j - 1;
    if (r->not_run <= 0) return 0;
    mb_cli_fail(1, "the GPU is no longer usable (%s): the %d rows after it are not run", why_not, r->not_run);
    if (add_partial(&r->partial, "the GPU became unusable (%s): %d rows not run", why_not, r->not_run))
        return mb_cli_fail(1, "out of memory");
    return 0;
}

/* 1 when job k is a copy (r->same_as) of a job of plan `of` that, like job j,
 * is of j's graph and plan. */
static int same_pair(const run *r, int k, int j, mb_plan_kind of)
{
    return r->same_as[k] >= 0 && r->jobs[k].g == r->jobs[j].g && r->jobs[k].plan == r->jobs[j].plan &&
           r->jobs[r->same_as[k]].plan == of;
}

/* The note on the first copy of each pair of plans: the sizes at which the
 * plan of job j runs the kernels of job i's (a size's kernels differ from
 * another's, so each size is a row of its own). */
static void shared_note(const run *r, int j, int i)
{
    const mb_plan_kind of = r->jobs[i].plan;
    for (int k = 0; k < j; k++)
        if (same_pair(r, k, j, of)) return; /* said already */
    char sizes[512] = "", sb[72];
    size_t at = 0;
    for (int k = j; k < r->n_jobs && at + 8 < sizeof sizes; k++) {
        if (!same_pair(r, k, j, of)) continue;
        const mb_meas_job *kb = &r->jobs[k];
        int w = snprintf(sizes + at, sizeof sizes - at, "%s%s", at ? ", " : "",
                         at ? mb_meas_fmt_size(kb->n, kb->cols, sb, sizeof sb)
                            : mb_meas_fmt_at(kb->n, kb->cols, sb, sizeof sb));
        at = w > 0 && (size_t)w < sizeof sizes - at ? at + (size_t)w : sizeof sizes;
    }
    mb_cli_note("%s: plans %s and %s are the same kernels: measured once, reported under both (%s)",
                r->jobs[j].g->name, mb_plan_name(of), mb_plan_name(r->jobs[j].plan), sizes);
}

/* Row j as the row of job i, whose kernels it runs (r->same_as), under its
 * own plan's name: its row and its kernel rows again. An exit code after one
 * line when memory runs out. */
static int shared_row(run *r, int j, int i)
{
    const mb_meas_job *jb = &r->jobs[j];
    if (!r->o.quiet) shared_note(r, j, i);
    mb_meas_record row = r->out_rows.rows[r->out_at[i]];
    snprintf(row.plan, sizeof row.plan, "%s", mb_plan_name(r->jobs[j].plan));
    r->rows[j] = row;
    r->out_at[j] = r->out_rows.n;
    int orc = mb_meas_csv_rows_add(&r->out_rows, &row);
    mb_plan *p = NULL;
    mb_err e;
    if (!orc && r->kernel_first[i] >= 0) { /* the kernels as this plan names them */
        if (mb_plan_build(jb->g, jb->plan, &p, &e)) return mb_cli_fail_err(1, &e);
        r->kernel_first[j] = r->out_kernels.n;
        for (int k = 0; k < row.kernels && k < p->n_kernels && !orc; k++) {
            mb_meas_record kr = r->out_kernels.rows[r->kernel_first[i] + k];
            snprintf(kr.plan, sizeof kr.plan, "%s", row.plan);
            snprintf(kr.kernel, sizeof kr.kernel, "%s", p->kernels[k].name);
            orc = mb_meas_csv_rows_add(&r->out_kernels, &kr);
        }
        mb_plan_free(p);
    }
    if (orc) return mb_cli_fail(1, "out of memory");
    r->shared++;
    r->failed += !row.verified;
    if (r->o.out_path) print_table_row(stdout, &row);
    r->done_rows++;
    return 0;
}

/* Row j, measured and written; *stop when the rows after it are not run. An
 * exit code after one line for a failure that ends the run. */
static int run_row(run *r, int j, int *stop)
{
    const mb_meas_job *jb = &r->jobs[j];
    if (r->same_as[j] >= 0 && r->out_at[r->same_as[j]] >= 0) return shared_row(r, j, r->same_as[j]);
    mb_plan *p = NULL;
    mb_err e;
    int rc;
    if ((rc = mb_plan_build(jb->g, jb->plan, &p, &e))) return mb_cli_fail_err(rc, &e);
    mb_meas_record *pk = r->have_kf ? calloc((size_t)p->n_kernels + 1, sizeof *pk) : NULL;
    mb_meas_record *row = &r->rows[j];
    char why[512] = "", nb[96];
    if (r->have_kf && !pk) { mb_plan_free(p); return mb_cli_fail(1, "out of memory"); }
    mb_shape shape = jb->cols ? (mb_shape){2, jb->n / jb->cols, jb->cols, 0} : mb_shape_1d(jb->n);
    rc = mb_meas_record_init_shape(row, pk, jb->g->name, p, shape, &r->dev, &e);
    if (!rc) rc = mb_meas_run(r->backend, p, jb->n, &r->o.cfg, row, pk, why, sizeof why, &e);
    if (!rc) rc = mb_meas_record_host_model(row, pk, p, jb->n, &r->dev, &e);
    /* the device column names the spec the model columns were computed on, as
     * report names the device (the hardware is the provenance's cpu/gpu line) */
    for (int k = 0; !rc && k <= (pk ? p->n_kernels : 0); k++) {
        mb_meas_record *w = k ? &pk[k - 1] : row;
        snprintf(w->calibration, sizeof w->calibration, "%s", r->calib_mark);
        snprintf(w->device, sizeof w->device, "%s", r->dev.name);
    }
    if (rc) { /* one failure costs one row: the others are kept, the file says which */
        free(pk);
        mb_plan_free(p);
        if (stop_signal) return 0; /* the row in flight is dropped, not half-kept */
        return row_failed(r, j, row->dtype, &e, stop);
    }
    if (!row->verified) {
        r->failed++;
        mb_cli_fail(1, "%s %s %s %s failed its check: %s", row->variant, row->plan, row->dtype,
                    mb_meas_fmt_at(jb->n, jb->cols, nb, sizeof nb), why[0] ? why : "not verified");
    } else if (!strcmp(row->accuracy, "inaccurate") && ++r->inaccurate && r->o.verbose) {
        /* the math, not the kernel: verified, marked in the 'accuracy' column (counted
         * for the summary line; said of the row with --verbose) */
        fprintf(stderr, "membound: warning: %s %s %s %s: %s; the row is verified and marked "
                "in the 'accuracy' column\n", row->variant, row->plan, row->dtype,
                mb_meas_fmt_at(jb->n, jb->cols, nb, sizeof nb), why);
    }
    int flags = mb_meas_row_warn(row, &r->dev, r->backend, r->llc, j == 0, &r->o.cfg);
    r->noisy += !!(flags & MB_MEAS_ROW_NOISY);
    r->drifted += !!(flags & MB_MEAS_ROW_DRIFTED);
    r->two_modes += !!(flags & MB_MEAS_ROW_TWO_MODES);
    r->above_roof += !!(flags & MB_MEAS_ROW_ABOVE_ROOF);
    r->out_at[j] = r->out_rows.n;
    if (r->have_kf) r->kernel_first[j] = r->out_kernels.n;
    int orc = mb_meas_csv_rows_add(&r->out_rows, row); /* written after the rows, with the provenance */
    for (int k = 0; r->have_kf && k < p->n_kernels && !orc; k++) orc = mb_meas_csv_rows_add(&r->out_kernels, &pk[k]);
    if (orc) {
        free(pk);
        mb_plan_free(p);
        return mb_cli_fail(1, "out of memory");
    }
    if (r->o.out_path) print_table_row(stdout, row);
    fflush(stdout);
    free(pk);
    mb_plan_free(p);
    r->done_rows++;
    return 0;
}

/* 4. run: every row in turn, until a signal; the host checked before and after */
static int run_rows(run *r)
{
    r->rows = calloc((size_t)r->n_jobs + 1, sizeof *r->rows);
    if (!r->rows) return mb_cli_fail(1, "out of memory");
    mb_meas_hostcheck_begin(&r->hc, r->backend, &r->dev, &r->o.cfg, r->llc);
    double t_start = mb_meas_now_s();
    /* an interrupted run keeps the rows it measured (see finish) */
    stop_signal = 0;
    r->o.cfg.stop = &stop_signal;
    stop_handlers(1);
    int stop = 0, rc = 0;
    for (int j = 0; j < r->n_jobs && !stop_signal && !stop && !rc; j++) {
        int before = r->done_rows;
        rc = run_row(r, j, &stop);
        if (!rc && r->done_rows > before && !r->o.quiet && mb_meas_now_s() - t_start > 1.0) {
            const mb_meas_record *row = &r->rows[j];
            char t1[32], t2[32], nb[96];
            /* past ten seconds, the time left at the pace so far */
            double spent = mb_meas_now_s() - t_start, left = spent / (j + 1) * (r->n_jobs - j - 1);
            char eta[48] = "";
            if (spent > 10 && j + 1 < r->n_jobs) snprintf(eta, sizeof eta, "; about %.0f s to go", left);
            mb_cli_note("[%d/%d] %s %s %s %s: %s (model %s)%s%s", j + 1, r->n_jobs, row->variant, row->plan,
                        row->dtype, mb_meas_fmt_at(row->n, row->cols, nb, sizeof nb),
                        mb_cli_fmt_time(row->time_s_median, t1, sizeof t1),
                        mb_cli_fmt_time(row->model_time_s, t2, sizeof t2), row->verified ? "" : " FAILED", eta);
        }
    }
    stop_handlers(0);
    return rc;
}

/* The provenance known only after the rows (the host check, rows that
 * failed or were not run, an interruption, the GPU's clocks and driver), as
 * lines of every row's provenance column. An exit code after one line when
 * memory runs out. */
static int add_trailer(run *r)
{
    int trc = 0;
    if (!stop_signal && mb_meas_hostcheck_end(&r->hc, &r->o.cfg)) {
        char line[200];
        snprintf(line, sizeof line, "host_check: copy %.1f GB/s before the rows, %.1f after, %.1f "
                 "calibrated", r->hc.before_gbs, r->hc.after_gbs, r->hc.calibrated_gbs);
        trc = mb_meas_csv_texts_add(&r->texts, line);
    }
    for (char *save = NULL, *line = r->partial ? strtok_r(r->partial, "\n", &save) : NULL; line && !trc;
         line = strtok_r(NULL, "\n", &save))
        trc = mb_meas_csv_texts_add(&r->texts, line);
    if (stop_signal && !trc) {
        char line[160];
        snprintf(line, sizeof line, "partial: interrupted by %s after %d of %d rows", sig_name(stop_signal),
                 r->done_rows, r->n_jobs);
        trc = mb_meas_csv_texts_add(&r->texts, line);
    }
    if (r->backend == MB_MEAS_CUDA && !trc) {
        char gpu[2048];
        mb_meas_cuda_provenance(gpu, sizeof gpu);
        for (char *save = NULL, *line = strtok_r(gpu, "\n", &save); line && !trc; line = strtok_r(NULL, "\n", &save))
            trc = mb_meas_csv_texts_add(&r->texts, line);
    }
    return trc ? mb_cli_fail(1, "out of memory") : 0;
}

/* What was found of the rows, one line per kind (each row's in full with
 * --verbose; the CSV's columns hold the details). */
static void print_warning_summary(const run *r)
{
    const char *more = r->o.verbose ? "" : "; --verbose for each row";
    if (r->noisy)
        mb_cli_warn("%d of %d rows noisy (samples contended: other processes or steal): their minimum times "
                    "still tell, their medians are slowed; column 'contended'%s; rerun on a quieter machine",
                    r->noisy, r->n_jobs, more);
    if (r->drifted)
        mb_cli_warn("%d of %d rows measured while the host's copy bandwidth or op rate was more than %.0f%% off "
                    "the calibrated figure: their model errors say as much about the host as about the model; "
                    "columns 'host_copy_ratio', 'host_op_ratio', 'model_host_time_s'%s",
                    r->drifted, r->n_jobs, 100 * MB_MEAS_DRIFT_MAX, more);
    if (r->two_modes)
        mb_cli_warn("%d of %d rows' samples fall in two modes (the median is one of them); columns "
                    "'time_s_lower_mode', 'time_s_upper_mode', 'upper_mode_share'%s", r->two_modes, r->n_jobs, more);
    if (r->above_roof)
        mb_cli_note("%d of %d rows ran above the calibrated bandwidth: check the byte count or the "
                    "calibration%s", r->above_roof, r->n_jobs, more);
    if (r->inaccurate)
        mb_cli_warn("%d of %d rows verified but inaccurate (off float64 as correct f32 evaluation is: the math, "
                    "not the kernel); column 'accuracy'%s", r->inaccurate, r->n_jobs, more);
}

/* Both files or neither (a write error in one replaces none), then the
 * summary lines; the exit code. */
static int finish(run *r)
{
    const char *sig = sig_name(stop_signal);
    int rc = add_trailer(r);
    if (rc) return rc;
    if (stop_signal && r->done_rows == 0) /* nothing measured: no file */
        return mb_cli_fail(128 + stop_signal, "interrupted by %s before the first row: nothing written", sig);
    if (r->row_errors && r->done_rows == 0) /* every row failed: no file */
        return mb_cli_fail(1, "no row could be measured (%d failed): nothing written", r->row_errors);
    mb_err e;
    if (mb_meas_csv_rows_write(&r->out_rows, &r->texts, r->csv, &e) ||
        (r->have_kf && mb_meas_csv_rows_write(&r->out_kernels, &r->texts, r->kf.fp, &e)))
        return mb_cli_fail_err(1, &e);
    mb_outfile *outs[2];
    int n_outs = 0;
    if (r->have_of) outs[n_outs++] = &r->of;
    if (r->have_kf) outs[n_outs++] = &r->kf;
    r->have_of = r->have_kf = 0;
    /* rows missing (interrupted, or the GPU lost): a file that was there is
     * not replaced by them; they go beside it, and the lines below say where */
    int partial = stop_signal || r->not_run, beside = 0;
    if (n_outs && (partial ? mb_outfile_commit_partial(outs, n_outs, &beside, &e)
                           : mb_outfile_commit_all(outs, n_outs, &e)))
        return mb_cli_fail_err(1, &e);
    const char *out = r->o.out_path;
    char where[9000] = "";
    if (out && beside)
        snprintf(where, sizeof where, "%s (%s, there before, kept)", r->of.kept, out);
    else if (out)
        snprintf(where, sizeof where, "%s", out);
    if (beside && r->kf.kept[0]) {
        size_t len = strlen(where);
        snprintf(where + len, sizeof where - len, "%sper-kernel rows in %s", len ? "; " : "", r->kf.kept);
    }
    if (out && !r->o.quiet && !stop_signal) mb_cli_note("wrote %s (%d rows)", where, r->done_rows);
    if (r->row_errors)
        mb_cli_fail(1, "%d of %d rows failed to run%s%s (a 'partial:' line for each in the file's "
                    "provenance column)", r->row_errors,
                    r->n_jobs, r->not_run ? " and the rest were not run" : "", out ? ": the others are kept" : "");
    print_warning_summary(r);
    if (stop_signal) {
        mb_cli_fail(128 + stop_signal, "interrupted by %s: %d of %d rows measured%s%s", sig, r->done_rows,
                    r->n_jobs, out ? " and written to " : where[0] ? "; " : "", where);
        return 128 + stop_signal;
    }
    return r->failed || r->row_errors ? 1 : 0;
}

static void run_free(run *r)
{
    free(r->partial);
    if (r->have_of) mb_outfile_abort(&r->of);
    if (r->have_kf) mb_outfile_abort(&r->kf);
    mb_meas_hostcheck_free(&r->hc);
    mb_meas_csv_texts_free(&r->texts);
    mb_meas_csv_rows_free(&r->out_rows);
    mb_meas_csv_rows_free(&r->out_kernels);
    free(r->rows);
    free(r->jobs);
    free(r->same_as);
    free(r->out_at);
    free(r->kernel_first);
    for (int d = 0; d < MB_DTYPE_COUNT; d++) {
        free_graphs(r->all_graphs[d], r->n_all[d]);
        free(r->all_exprs[d]);
    }
    free(r->o.sizes);
    mb_cli_inputs_free(&r->o.inputs);
}

int mb_cmd_measure(int argc, char **argv)
{
    static run r; /* large (the model device, the host check): not on the stack */
    memset(&r, 0, sizeof r);
    r.out_kernels.per_kernel = 1;
    mb_meas_set_env(getenv); /* the libraries read no environment */
    mb_meas_set_jit_warn(mb_cli_warn_line); /* a refused compiled-kernel cache says so */
    int rc = parse_opts(&r.o, argc, argv);
    if (!rc && !r.o.help) {
        r.avail = mb_meas_host_memory_bytes("MemAvailable");
        r.llc = mb_meas_llc_bytes(&r.o.cfg);
        if (!(rc = build_jobs(&r)) && !(rc = open_outputs(&r)) && !(rc = prepare(&r)) &&
            !(rc = run_rows(&r)))
            rc = finish(&r);
    }
    run_free(&r);
    return rc;
}
