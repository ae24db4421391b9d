/* cmd_import.c — `membound import ncu|torch-trace FILE -o OUT.csv`: the
 * launches of an Nsight Compute CSV or a PyTorch profiler trace matched to
 * membound's plans, as a measurement CSV that `report` reads. The work is in
 * import/; this file parses options and writes the files whole. */
#include "cli_common.h"
#include "commands.h"
#include "import.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound import ncu|torch-trace FILE -o OUT.csv [options]\n"
            "\n"
            "Reads what a profiler measured on some GPU and writes membound measurement\n"
            "rows: 'ncu' reads `ncu --csv` output (--page details or raw; any units, but\n"
            "auto-scaled ones keep 3-5 digits: profile with --print-units base), 'torch-trace'\n"
            "a torch.profiler Chrome trace (kernel times only). Each launch is matched to a\n"
            "kernel of a plan by sequence, count, the op its name says and its grid against\n"
            "n; marks named membound:VARIANT:PLAN:n=N:DTYPE (NVTX ranges, record_function)\n"
            "separate variants and plans. What matches no plan kernel is noted and left\n"
            "out; too few or too many kernels for a plan is an error. Bytes are compared with\n"
            "the model after the match, never used for it.\n"
            "\n"
            "  -o, --output FILE      the measurement CSV (plan totals) to write\n"
            "  -k, --per-kernel FILE  also one row per plan kernel\n"
            "  --variant NAME|FILE    what the file ran (needed without marks)\n"
            "  --expr EXPR            or its expression\n"
            "  --plan LIST            plans (eager, fused, store, recompute; needed without marks)\n"
            "  --n N, --sizes LIST    sizes in elements (one needed without marks)\n"
            "  --dtype T              f32 (default), bf16, f16\n"
            "  --device SPEC          model device (default: the file's GPU in the table)\n"
            "  --warmup R             repetitions of each plan left out first (default 0)\n"
            "  --cache-control all|none  what ncu ran with (default all, ncu's default)\n"
            "  --clock-control base|none what ncu ran with (default base, ncu's default)\n"
            "  -q, --quiet            no notes\n"
            "  -h, --help             this help\n");
}

typedef struct opts {
    mb_imp_options imp;
    const char *out, *kernels;
    int64_t *sizes;
    int quiet;
    char seen[128];  /* options given, by getopt's code */
    FILE *held;      /* the notes, printed once the import's files are written */
    char *held_text;
    size_t held_len;
    mb_outfile *of, *kf; /* the rows' files, written as the rows are made */
    int write_errno;     /* errno at the first failed write of a row, 0 none */
    FILE *table;         /* the rows' lines for stdout, printed once the files are written */
    char *table_text;
    size_t table_len;
} opts;

/* Notes and warnings are held until the import's files are written: a
 * failed import or write prints its one error line alone. */
static void note(void *ctx, const char *level, const char *msg)
{
    opts *o = ctx;
    if (o->quiet && !strcmp(level, "note")) return;
    if (!o->held) return;
    fprintf(o->held, "membound: %s: %s\n", level, msg);
}

/* The long spelling of option c, for messages. */
static const char *spelling(int c)
{
    static const struct { int c; const char *name; } names[] = {
        {'o', "-o/--output"}, {'k', "-k/--per-kernel"}, {'V', "--variant"}, {'E', "--expr"}, {'P', "--plan"},
        {'N', "--n"}, {'S', "--sizes"}, {'T', "--dtype"}, {'D', "--device"}, {'W', "--warmup"},
        {'C', "--cache-control"}, {'K', "--clock-control"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].c == c) return names[i].name;
    return "an option";
}

static int set_opt(opts *o, int c, const char *arg, int *n_sizes)
{
    mb_err e;
    if (c != 'q' && c >= 0 && c < 128) {
        if (o->seen[c]) return mb_cli_fail(2, "%s given twice: give it once", spelling(c));
        o->seen[c] = 1;
        if ((c == 'N' && o->seen['S']) || (c == 'S' && o->seen['N']))
            return mb_cli_fail(2, "--n and --sizes cannot be combined: give one");
        if ((c == 'V' && o->seen['E']) || (c == 'E' && o->seen['V']))
            return mb_cli_fail(2, "import: --variant or --expr, not both");
    }
    switch (c) {
    case 'o': o->out = arg; return 0;
    case 'k': o->kernels = arg; return 0;
    case 'V': o->imp.variant = arg; return 0;
    case 'E': o->imp.expr = arg; return 0;
    case 'P': return mb_cli_plans(arg, o->imp.plans, &o->imp.n_plans);
    case 'N':
    case 'S':
        if (mb_cli_parse_sizes(arg, &o->sizes, n_sizes, &e)) return mb_cli_fail_err(2, &e);
        return 0;
    case 'T': o->imp.has_dtype = 1; return mb_cli_dtype(arg, &o->imp.dtype);
    case 'D': o->imp.device = arg; return 0;
    case 'W': {
        char *end;
        long w = strtol(arg, &end, 10);
        if (end == arg || *end || w < 0 || w > 1000000)
            return mb_cli_fail(2, "--warmup: expected a count >= 0, got '%s'", arg);
        o->imp.warmup = (int)w;
        return 0;
    }
    case 'C':
    case 'K': {
        int all = !strcmp(arg, c == 'C' ? "all" : "base"), none = !strcmp(arg, "none");
        if (!all && !none)
            return mb_cli_fail(2, "--%s: expected %s or none, got '%s'", c == 'C' ? "cache-control" : "clock-control",
                               c == 'C' ? "all" : "base", arg);
        *(c == 'C' ? &o->imp.cache_all : &o->imp.clock_base) = all;
        o->imp.settings_given = 1;
        return 0;
    }
    case 'q': o->quiet = 1; return 0;
    }
    return 2;
}

static int parse(opts *o, int argc, char **argv, const char **file)
{
    static const struct option lopts[] = {
        {"output", required_argument, 0, 'o'}, {"per-kernel", required_argument, 0, 'k'},
        {"variant", required_argument, 0, 'V'}, {"expr", required_argument, 0, 'E'},
        {"plan", required_argument, 0, 'P'}, {"n", required_argument, 0, 'N'},
        {"sizes", required_argument, 0, 'S'}, {"dtype", required_argument, 0, 'T'},
        {"device", required_argument, 0, 'D'}, {"warmup", required_argument, 0, 'W'},
        {"cache-control", required_argument, 0, 'C'}, {"clock-control", required_argument, 0, 'K'},
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int c, n_sizes = 0, n_pos = 0, rc;
    const char *pos[2] = {NULL, NULL};
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "-:ho:k:q", lopts, NULL)) != -1) {
        if (c == 'h') { usage(stdout); return -1; }
        if (c == '?' || c == ':') return mb_cli_bad_option(c, argv, optind, optopt, "import");
        if (c == 1) {
            if (n_pos == 2) return mb_cli_fail(2, "import: one format and one FILE (got '%s' too)", optarg);
            pos[n_pos++] = optarg;
            continue;
        }
        if ((rc = set_opt(o, c, optarg, &n_sizes))) return rc;
    }
    if (n_pos < 2) return mb_cli_fail(2, "usage: membound import ncu|torch-trace FILE -o OUT.csv (see --help)");
    if (mb_imp_format_parse(pos[0], &o->imp.format))
        return mb_cli_fail(2, "import: unknown format '%s' (expected ncu or torch-trace)", pos[0]);
    if (!o->out) return mb_cli_fail(2, "import: no -o OUT.csv given");
    o->imp.sizes = o->sizes;
    o->imp.kernel_rows = o->kernels != NULL; /* kept only to be written */
    o->imp.n_sizes = n_sizes;
    *file = pos[1];
    return 0;
}

/* The output files, opened before any work (a directory or FIFO where a
 * file belongs is refused first): 0 or an exit code after one error line. */
static int open_outs(const opts *o, mb_outfile *of, mb_outfile *kf)
{
    mb_err e;
    if (mb_outfile_open(of, o->out, &e)) return mb_cli_fail_err(2, &e);
    if (o->kernels && mb_outfile_open(kf, o->kernels, &e)) {
        mb_outfile_abort(of);
        return mb_cli_fail_err(2, &e);
    }
    return 0;
}

/* One line of the rows' table on stdout: what matched, its time and bytes
 * against the model's (count_err: ncu's flushed counts against each
 * kernel's cold one). */
static void table_row(FILE *fp, const mb_meas_record *r)
{
    char t[32], br[24] = "-", bw[24] = "-", ce[24] = "-";
    if (r->dram_read_bytes >= 0) snprintf(br, sizeof br, "%lld", (long long)r->dram_read_bytes);
    if (r->dram_write_bytes >= 0) snprintf(bw, sizeof bw, "%lld", (long long)r->dram_write_bytes);
    if (r->count_err == r->count_err) snprintf(ce, sizeof ce, "%+.2f%%", 100 * r->count_err);
    fprintf(fp, "%-16s %-10s %-5s %10lld %7d %5d %12s %12s %12s %9s  %s\n", r->variant, r->plan, r->dtype,
            (long long)r->n, r->kernels, r->reps, mb_cli_fmt_time(r->time_s_median, t, sizeof t), br, bw, ce,
            r->count_check[0] ? r->count_check : "-");
}

/* Each row to its file as the import makes it (the files are committed
 * whole, or removed, once the import ends), its table line held. A failed
 * write does not stop the import: an error in the file is still the one
 * reported, as when the rows were written after it. */
static int put_row(void *ctx, const mb_meas_record *r, int per_kernel, const mb_meas_csv_texts *t, mb_err *err)
{
    opts *o = ctx;
    FILE *fp = per_kernel ? o->kf->fp : o->of->fp;
    mb_meas_csv_row(fp, r, per_kernel, t);
    if (ferror(fp) && !o->write_errno) o->write_errno = errno ? errno : EIO;
    if (!per_kernel && o->table) table_row(o->table, r);
    (void)err;
    return MB_OK;
}

/* Commits the files the rows went to, or removes them. */
static int write_all(const opts *o, mb_outfile *of, mb_outfile *kf)
{
    mb_err e;
    int rc = o->write_errno ? mb_err_set(&e, MB_ERUN, "writing the CSV: %s", strerror(o->write_errno)) : MB_OK;
    mb_outfile *outs[2] = {of, kf};
    if (!rc) rc = mb_outfile_commit_all(outs, o->kernels ? 2 : 1, &e);
    else {
        mb_outfile_abort(of);
        if (o->kernels) mb_outfile_abort(kf);
    }
    return rc ? mb_cli_fail_err(1, &e) : 0;
}

/* The header of the rows' table. */
static void print_header(void)
{
    printf("%-16s %-10s %-5s %10s %7s %5s %12s %12s %12s %9s  %s\n", "variant", "plan", "dtype", "n", "kernels",
           "reps", "time_median", "dram_read", "dram_write", "vs model", "check");
}

int mb_cmd_import(int argc, char **argv)
{
    opts o = {0};
    mb_imp_options_init(&o.imp);
    o.imp.note = note;
    o.imp.note_ctx = &o;
    const char *file = NULL;
    int rc = parse(&o, argc, argv, &file);
    if (rc) { free(o.sizes); return rc < 0 ? 0 : rc; }
    mb_err e;
    const char *outs[2] = {o.out, o.kernels};
    const char *ins[3] = {file, o.imp.device, o.imp.variant}; /* a built-in name is no file: passed over */
    if (mb_outfile_check_distinct(outs, 2, ins, 3, &e)) { free(o.sizes); return mb_cli_fail_err(2, &e); }
    mb_outfile of, kf;
    if ((rc = open_outs(&o, &of, &kf))) { free(o.sizes); return rc; }
    mb_imp_result res;
    o.held = open_memstream(&o.held_text, &o.held_len);
    o.table = open_memstream(&o.table_text, &o.table_len);
    o.of = &of;
    o.kf = &kf;
    o.imp.row = put_row;
    o.imp.row_ctx = &o;
    mb_meas_csv_header(of.fp, 0);
    if (o.kernels) mb_meas_csv_header(kf.fp, 1);
    rc = mb_imp_run(file, &o.imp, &res, &e);
    free(o.sizes);
    if (o.held) fclose(o.held);
    if (o.table) fclose(o.table);
    if (!rc && !o.table) rc = mb_err_set(&e, MB_ERUN, "out of memory");
    if (rc) {
        free(o.held_text);
        free(o.table_text);
        mb_outfile_abort(&of);
        if (o.kernels) mb_outfile_abort(&kf);
        return mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e);
    }
    /* the notes only once the files are there: a failed write prints its one error line alone */
    rc = write_all(&o, &of, &kf);
    if (!rc && o.held_text) fputs(o.held_text, stderr);
    free(o.held_text);
    if (!rc) {
        print_header();
        if (o.table_text) fwrite(o.table_text, 1, o.table_len, stdout);
    }
    free(o.table_text);
    if (!rc && !o.quiet)
        fprintf(stderr, "membound: note: %s: %d launches, %d matched, %d left out: %d row%s to %s%s%s\n", file,
                res.n_launches, res.n_matched, res.n_left_out, res.n_rows, res.n_rows == 1 ? "" : "s", o.out,
                o.kernels ? ", per kernel to " : "", o.kernels ? o.kernels : "");
    mb_imp_result_free(&res);
    return rc;
}
