/* cmd_measure.c — `membound measure`: run variants for real on the CPU or a
 * GPU, check them against the float64 reference and write the measurement
 * CSV with the model's prediction beside each row. The protocol lives in
 * measure/; this file parses options, refuses what cannot fit, and writes. */
#include "cli_common.h"
#include "commands.h"
#include "measure.h"
#include "variant_inputs.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound measure [VARIANT|FILE.mb|--expr EXPR ...] [options]\n"
            "\n"
            "Runs each variant x plan x dtype x size for real, checks every run against a\n"
            "float64 reference (outputs poisoned first; backward plans also pass a\n"
            "finite-difference gradient check), and writes one CSV row each with the\n"
            "model's prediction beside the measured times. With no VARIANT, every built-in.\n"
            "Variant files, built-in names and --expr mix, in the order given; each name\n"
            "once. The CSV is plain (header, one row per line, no comment lines): the\n"
            "device spec, each row's variant text and the run's provenance are in its\n"
            "variant_text, variant_expr, device_spec and provenance columns.\n"
            "\n"
            "  --backend B      auto (default: cuda when a usable GPU is present, else cpu),\n"
            "                   cpu, cuda\n"
            "  --expr EXPR      a Python-syntax expression; repeat it for several\n"
            "  --plan LIST      eager | fused | store | recompute | optimal, comma-separated;\n"
            "                   default: every plan\n"
            "  --sizes LIST     2^20,2^24 or 2^16..2^26[:STEP]; default: each variant's\n"
            "                   lecture size (--n N: one size)\n"
            "  --dtype T[,T]    f32 (default), bf16, f16; several: f32,bf16\n"
            "  --device SPEC    device for the model columns: a table id or an INI spec.\n"
            "                   Default: cpu backend: ./local-cpu.ini when present, else\n"
            "                   this host's cached calibration (per user: $MEMBOUND_CACHE_DIR,\n"
            "                   $XDG_CACHE_HOME/membound or ~/.cache/membound), else a\n"
            "                   calibration of this CPU, then cached; cuda backend: h100-sxm.\n"
            "                   ./local-cpu.ini and the cache are used only when yours and\n"
            "                   writable by nobody else (a warning says why not)\n"
            "  --recalibrate    calibrate this CPU again and replace the cached calibration\n"
            "  --reps N         at least N timed samples (>= 10, default 10); sampling\n"
            "                   stops when CV <= 2%% or after 10 s\n"
            "  --timeout S      stop sampling a row after S seconds (default 10; the\n"
            "                   minimum of samples is always taken)\n"
            "  --warm           do not evict the last-level cache between samples\n"
            "                   (default: cold, 2x LLC read sweep outside the timed region)\n"
            "  --threads N      CPU threads (default: all cores)\n"
            "  --exec E         CPU executor: auto (default), opwise, blocked\n"
            "  -o FILE.csv      write the CSV there (atomically) and a table on stdout;\n"
            "                   without -o the CSV goes to stdout (when the run ends: every\n"
            "                   row carries provenance known only then)\n"
            "  --per-kernel F   also one row per kernel into F (same columns + kernel)\n"
            "  -q, --quiet      no progress notes (warnings still shown)\n"
            "  -h, --help       this help\n"
            "\n");
    mb_meas_env_usage(fp);
    fprintf(fp,
            "\n"
            "With a calibrated CPU spec, this host's copy bandwidth is measured again\n"
            "before and after the rows (~1 s each) and written as a 'host_check:'\n"
            "line of the provenance column; beside each cold row's samples (every 0.5 s, not timed) that copy\n"
            "(~9 ms) and calibrate's sin and sigmoid rate probes (~1 ms each) are\n"
            "timed again into its host_copy_gbs, host_copy_ratio and host_op_ratio\n"
            "columns (the op ratio farther from 1); a warning says\n"
            "when one is more than 20%% off the calibrated figure the model columns\n"
            "assume (a shared host drifts). model_host_time_s is the model again with\n"
            "the spec's memory bandwidths times host_copy_ratio and its op rates, FLOP\n"
            "peaks and cache bandwidth times host_op_ratio (launch overhead over it):\n"
            "the model at the rates the host had during the row. A row whose samples\n"
            "fall in two modes (each with a fifth of them at least, 20%% apart) is warned\n"
            "and marked: time_s_lower_mode, time_s_upper_mode, upper_mode_share.\n"
            "\n"
            "GPU rows with counted DRAM bytes get count_err (counted / model - 1) and\n"
            "count_check: ok within 3%%, off beyond, 'below 4x L2' not judged.\n"
            "\n"
            "Exit: 0 all rows verified, 1 a run failed or a check failed (rows kept with\n"
            "verified=0; a row that could not run is left out, the others kept, with a\n"
            "'partial: ... failed: <reason>' provenance line for it), 2 bad usage or a size that\n"
            "does not fit in memory (CUDA: the GPU's free memory), 130 / 143\n"
            "interrupted by SIGINT / SIGTERM: the rows measured so far are written, with a\n"
            "'partial: ...' provenance line (none measured: no file).\n"
            "example: membound measure copy --dtype f32,bf16 --sizes 2^25 --device local-cpu.ini -o copy.csv\n");
}

/* The harness's notes and warnings (measure/ reports through the config;
 * it drops notes itself when quiet). */
/* A /proc/meminfo figure ("MemAvailable", "MemTotal") in bytes, or -1. */
static int64_t meminfo_bytes(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    size_t kl = strlen(key);
    int64_t v = -1;
    while (fgets(line, sizeof line, f)) {
        long long kb;
        if (!strncmp(line, key, kl) && line[kl] == ':' && sscanf(line + kl + 1, "%lld kB", &kb) == 1) {
            v = (int64_t)kb * 1024;
            break;
        }
    }
    fclose(f);
    return v;
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

/* "2^24" when n is a power of two, else the number. */
static const char *fmt_n(int64_t n, char *buf, size_t sz)
{
    if (n > 0 && (n & (n - 1)) == 0) {
        int k = 0;
        while (((int64_t)1 << k) < n) k++;
        snprintf(buf, sz, "2^%d", k);
    } else {
        snprintf(buf, sz, "%lld", (long long)n);
    }
    return buf;
}

/* SIGINT / SIGTERM while measuring: the signal, for the rows loop and the
 * protocol (which stops its sampling); a second one ends the process through
 * the handlers that were there before. */
static volatile sig_atomic_t stop_signal;
static struct sigaction stop_old[2];

static void on_stop(int sig)
{
    if (stop_signal) {
        sigaction(sig, &stop_old[sig == SIGTERM], NULL);
        raise(sig);
        return;
    }
    stop_signal = sig;
}

/* install = 1: catch SIGINT and SIGTERM (unless ignored); 0: restore. */
static void stop_handlers(int install)
{
    static const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        if (!install) {
            sigaction(sigs[i], &stop_old[i], NULL);
            continue;
        }
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop; /* no SA_RESTART: a blocked write returns */
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], NULL, &stop_old[i]) == 0 && stop_old[i].sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* One row to run. */
typedef struct job {
    mb_graph *g; /* borrowed from the graph list */
    mb_plan_kind plan;
    int64_t n;
    int64_t host_bytes; /* the CPU executor's peak at n, plus the flush */
} job;

typedef struct opts {
    mb_cli_inputs inputs; /* variant files, built-in names, --expr, in order */
    const char *device, *out_path, *kernel_path;
    mb_meas_backend backend;
    int plan_given;
    mb_plan_kind plans[MB_PLAN_COUNT]; /* --plan's list, in order */
    int n_plans;
    mb_dtype dtypes[MB_DTYPE_COUNT];
    int n_dtypes;
    int64_t *sizes;
    int n_sizes;
    mb_meas_config cfg;
    int quiet;
    int recalibrate; /* 1: calibrate even when a cached calibration exists */
} opts;

static void calib_progress(const char *label)
{
    mb_cli_note("calibrating this CPU for the model columns: %s", label);
}

/* The model device from the cached calibration at cache (NULL: no cache),
 * else calibrated now (and cached). */
static int cached_or_calibrated(const opts *o, const char *cache, mb_device *dev, char *desc, size_t descsz)
{
    mb_err e;
    double age_s = 0;
    int rc = cache && !o->recalibrate ? mb_meas_cache_load(cache, dev, &age_s, &e) : 1;
    if (rc == MB_OK) {
        snprintf(desc, descsz, "%s (cached calibration %s)", dev->name, cache);
        if (!o->quiet)
            mb_cli_note("model columns from the cached calibration %s (%.1f h old; "
                        "--recalibrate measures again)", cache, age_s / 3600.0);
        return 0;
    }
    if (rc == MB_EINPUT) mb_cli_warn("%s", e.msg);
    else if (rc != 1 && !o->quiet) mb_cli_note("ignoring the cached calibration: %s", e.msg);
    if (!o->quiet)
        mb_cli_note("%s: calibrating this CPU first", o->recalibrate ? "--recalibrate"
                    : "no --device, no ./local-cpu.ini and no cached calibration");
    mb_meas_calib cal;
    if (mb_meas_calibrate_cpu(o->cfg.threads, 0, o->quiet ? NULL : calib_progress, &cal, &e))
        return mb_cli_fail_err(1, &e);
    mb_meas_calib_to_device(&cal, "membound measure (in-process calibration)", dev);
    snprintf(desc, descsz, "local-cpu (calibrated in-process)");
    if (cache) {
        char moved[768];
        if (mb_meas_cache_save(cache, dev, moved, sizeof moved, &e)) {
            if (!o->quiet) mb_cli_note("calibration not cached: %s", e.msg);
        } else {
            snprintf(desc, descsz, "local-cpu (calibrated in-process, cached as %s)", cache);
            if (!o->quiet) mb_cli_note("calibration cached as %s", cache);
        }
        if (moved[0])
            fprintf(stderr, "membound: warning: %s; the model columns take the new figures (a shared "
                    "host drifts: compare several runs)\n", moved);
    }
    return 0;
}

/* ./local-cpu.ini, an implicit input, read only when the working folder and
 * the file pass the trusted-folder rule (model/trusted_dir.c): MB_OK with
 * *dev; 1 when there is none or it was not used (one warning says why);
 * else an exit code after one error line (a spec with an error). */
static int working_folder_spec(mb_device *dev)
{
    static const char name[] = "local-cpu.ini";
    char cwd[4096];
    mb_tdir here;
    mb_err e;
    int fd = -1;
    int rc = getcwd(cwd, sizeof cwd) ? mb_tdir_open(&here, cwd, 0, &e) : MB_ERUN;
    if (rc == MB_OK) {
        rc = mb_tdir_open_file(&here, name, &fd, &e);
        mb_tdir_close(&here);
    } else if (access(name, F_OK) != 0) {
        return 1; /* nothing to say about a folder without one */
    }
    if (rc == 1) return 1;
    if (rc != MB_OK) {
        mb_cli_warn("./%s not used (%s); --device ./%s uses it anyway", name, e.msg, name);
        return 1;
    }
    char *text = NULL;
    rc = mb_text_read_fd(fd, "./local-cpu.ini", (size_t)1 << 20, &text, NULL, &e);
    close(fd);
    if (rc == MB_OK) rc = mb_device_load_ini_text(text, "./local-cpu.ini", dev, &e);
    free(text);
    return rc == MB_OK ? MB_OK : mb_cli_fail_err(2, &e);
}

/* The model device: --device, or the defaults described in usage. */
static int model_device(const opts *o, mb_meas_backend b, mb_device *dev, char *desc, size_t descsz)
{
    mb_err e;
    if (o->device) {
        if (mb_device_find(o->device, dev, &e)) return mb_cli_fail_err(2, &e);
        snprintf(desc, descsz, "%s (--device %s)", dev->name, o->device);
        return 0;
    }
    if (b == MB_MEAS_CUDA) {
        if (mb_device_find("h100-sxm", dev, &e)) return mb_cli_fail_err(1, &e);
        snprintf(desc, descsz, "h100-sxm (default for cuda)");
        return 0;
    }
    int rc = o->recalibrate ? 1 : working_folder_spec(dev);
    if (rc == MB_OK) {
        snprintf(desc, descsz, "%s (./local-cpu.ini)", dev->name);
        if (!o->quiet) mb_cli_note("model columns from ./local-cpu.ini");
        return 0;
    }
    if (rc != 1) return rc;
    /* this host's cached calibration, else calibrate once and cache it; one
     * run calibrates at a time (another waits, then reads what it cached) */
    char cache[1024];
    mb_tdir lock;
    mb_kern_set_threads(o->cfg.threads);
    int have_cache = mb_meas_cache_claim(getenv("MEMBOUND_CACHE_DIR"), getenv("XDG_CACHE_HOME"), getenv("HOME"),
                                         mb_kern_threads(), cache, sizeof cache, mb_cli_warn_line,
                                         o->quiet ? NULL : mb_cli_note_line, &lock) == MB_OK;
    rc = cached_or_calibrated(o, have_cache ? cache : NULL, dev, desc, descsz);
    mb_tdir_close(&lock);
    return rc;
}

static int load_graphs(const opts *o, mb_dtype dt, mb_graph ***graphs, int *n_graphs, const char ***exprs)
{
    return mb_cli_inputs_load(&o->inputs, dt, graphs, n_graphs, exprs);
}

static void free_graphs(mb_graph **g, int n)
{
    for (int i = 0; i < n; i++) mb_graph_free(g[i]);
    free(g);
}

/* "copy 78%, ops 65%": the host reference's ratios of a row, as percentages
 * of the calibrated figures (those it has). */
static const char *host_ratios(const mb_meas_record *r, char *buf, size_t size)
{
    int len = 0;
    buf[0] = '\0';
    if (r->host_copy_ratio > 0) len = snprintf(buf, size, "copy %.0f%%", 100 * r->host_copy_ratio);
    if (r->host_op_ratio > 0 && len >= 0 && (size_t)len < size)
        snprintf(buf + len, size - (size_t)len, "%sops %.0f%%", len ? ", " : "", 100 * r->host_op_ratio);
    return buf;
}

static void print_table_header(FILE *fp)
{
    fprintf(fp, "%-16s %-10s %-5s %6s %4s %11s %11s %7s %11s %7s %9s %8s %s\n", "variant", "plan",
            "dtype", "n", "reps", "median", "min", "cv", "model", "err%", "GB/s", "max_err",
            "verified [contended samples] [host drift] [two modes]");
}

static void print_table_row(FILE *fp, const mb_meas_record *r)
{
    char nb[32], t1[32], t2[32], t3[32];
    double err_pct = 100.0 * (r->model_time_s - r->time_s_median) / r->time_s_median;
    double gbs = (double)(r->read_bytes + r->write_bytes) / r->time_s_median / 1e9;
    char cont[48] = "";
    if (r->contended > 0)
        snprintf(cont, sizeof cont, " [%d/%d%s]", r->contended, r->reps,
                 mb_meas_row_noisy(r) ? " noisy" : "");
    char host[128] = "", ratios[64], at_host[48] = "";
    if (isfinite(r->model_host_time_s))
        snprintf(at_host, sizeof at_host, "; at those rates err %+.1f%%",
                 100.0 * (r->model_host_time_s - r->time_s_median) / r->time_s_median);
    if (MB_MEAS_HOST_DRIFTED(r->host_copy_ratio, r->host_op_ratio))
        snprintf(host, sizeof host, " [host %s of calibrated%s]", host_ratios(r, ratios, sizeof ratios),
                 at_host);
    char modes[96] = "";
    if (isfinite(r->upper_mode_share))
        snprintf(modes, sizeof modes, " [two modes: %s, %s (%.0f%%)]",
                 mb_cli_fmt_time(r->time_s_lower_mode, t1, sizeof t1),
                 mb_cli_fmt_time(r->time_s_upper_mode, t2, sizeof t2), 100 * r->upper_mode_share);
    fprintf(fp, "%-16s %-10s %-5s %6s %4d %11s %11s %6.1f%% %11s %+6.1f%% %9.2f %8.2g %s%s%s%s\n",
            r->variant, r->plan, r->dtype, fmt_n(r->n, nb, sizeof nb), r->reps,
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

/* Refuses (exit 2), before anything runs, a row that cannot fit. CPU: the
 * executor's peak and the flush against the host's MemAvailable. CUDA: the
 * plan's device tensors against the GPU's free memory (less the margin a
 * row's own check keeps); the host holds a copy of each tensor for the
 * checks, held against MemTotal (a VM whose memory grows on demand reports
 * little available at the start: more than that is a note, not a refusal). */
static int admit_jobs(const opts *o, mb_meas_backend backend, const job *jobs, int n_jobs, int64_t avail)
{
    int64_t total = meminfo_bytes("MemTotal");
    int noted = 0;
    char nb[32];
    for (int j = 0; j < n_jobs; j++) {
        const job *jb = &jobs[j];
        const char *what = jb->g->name, *plan = mb_plan_name(jb->plan), *dt = mb_dtype_name(jb->g->nodes[jb->g->inputs[0]].dtype);
        if (backend != MB_MEAS_CUDA) {
            if (avail > 0 && jb->host_bytes > avail)
                return mb_cli_fail(2, "%s %s %s at n = %s needs %.2f GB of memory, %.2f GB available: use a "
                                   "smaller --sizes", what, plan, dt, fmt_n(jb->n, nb, sizeof nb),
                                   (double)jb->host_bytes / 1e9, (double)avail / 1e9);
            continue;
        }
        mb_plan *p = NULL;
        mb_err e;
        int64_t need = 0, dev_free = 0, dev_total = 0;
        int rc = mb_plan_build(jb->g, jb->plan, &p, &e);
        if (!rc) rc = mb_meas_cuda_plan_memory(&o->cfg, p, jb->n, &need, &dev_free, &dev_total, &e);
        mb_plan_free(p);
        if (rc) return mb_cli_fail_err(1, &e);
        if (need > dev_free - MB_MEAS_CUDA_MARGIN_BYTES)
            return mb_cli_fail(2, "%s %s %s at n = %s needs %.2f GB of device memory, %.2f GB free of %.2f GB "
                               "(%.2f GB kept free): use a smaller --sizes", what, plan, dt,
                               fmt_n(jb->n, nb, sizeof nb), (double)need / 1e9, (double)dev_free / 1e9,
                               (double)dev_total / 1e9, (double)MB_MEAS_CUDA_MARGIN_BYTES / 1e9);
        if (total > 0 && need > total)
            return mb_cli_fail(2, "%s %s %s at n = %s needs %.2f GB of host memory for its checks, the host "
                               "has %.2f GB: use a smaller --sizes", what, plan, dt, fmt_n(jb->n, nb, sizeof nb),
                               (double)need / 1e9, (double)total / 1e9);
        if (avail > 0 && need > avail && !noted++ && !o->quiet)
            mb_cli_note("%s %s %s at n = %s needs %.2f GB of host memory for its checks, %.2f GB available "
                        "now (of %.2f GB): measuring anyway; a row that cannot get it fails alone", what, plan,
                        dt, fmt_n(jb->n, nb, sizeof nb), (double)need / 1e9, (double)avail / 1e9,
                        (double)total / 1e9);
    }
    return 0;
}

int mb_cmd_measure(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"backend", required_argument, 0, 'b'}, {"expr", required_argument, 0, 'e'},
        {"plan", required_argument, 0, 'p'}, {"sizes", required_argument, 0, 's'},
        {"n", required_argument, 0, 'n'}, {"dtype", required_argument, 0, 't'},
        {"device", required_argument, 0, 'd'}, {"reps", required_argument, 0, 'r'},
        {"timeout", required_argument, 0, 'O'}, {"warm", no_argument, 0, 'W'}, {"cold", no_argument, 0, 'C'},
        {"threads", required_argument, 0, 'T'}, {"exec", required_argument, 0, 'x'},
        {"output", required_argument, 0, 'o'}, {"per-kernel", required_argument, 0, 'k'},
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'},
        {"recalibrate", no_argument, 0, 'R'}, {0, 0, 0, 0}};
    opts o;
    memset(&o, 0, sizeof o);
    o.backend = MB_MEAS_AUTO;
    o.dtypes[0] = MB_F32;
    o.n_dtypes = 1;
    mb_meas_config_default(&o.cfg);
    o.cfg.note = mb_cli_meas_note;
    mb_meas_config_env(&o.cfg, getenv);
    mb_err e;
    mb_meas_hostref href = {0}; /* the host reference (CPU rows, calibrated spec) */
    int c, rc;
    int sizes_opt = 0, cold_opt = 0; /* the option that set them, for conflicts */
    mb_kern_jit_set_warn(mb_cli_warn_line); /* a refused compiled-kernel cache says so */
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "-:hqb:e:p:s:n:t:d:r:WCT:x:o:k:O:", lopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (mb_meas_backend_parse(optarg, &o.backend) != MB_OK) {
                rc = mb_cli_fail(2, "unknown backend '%s' (backends: auto, cpu, cuda)", optarg);
                goto out;
            }
            break;
        case 1:
        case 'e':
            if ((rc = mb_cli_inputs_add(&o.inputs, c == 'e', optarg))) goto out;
            break;
        case 'p':
            if ((rc = mb_cli_plans(optarg, o.plans, &o.n_plans))) goto out;
            o.plan_given = 1;
            break;
        case 's':
        case 'n':
            if (sizes_opt) {
                rc = sizes_opt == c ? mb_cli_fail(2, "--%s given twice: give it once", c == 'n' ? "n" : "sizes")
                                    : mb_cli_fail(2, "--n and --sizes cannot be combined: give one");
                goto out;
            }
            sizes_opt = c;
            if (c == 'n') {
                int64_t n1;
                if (mb_cli_size(optarg, &n1)) return 2;
                o.sizes = malloc(sizeof *o.sizes);
                if (!o.sizes) return mb_cli_fail(1, "out of memory");
                o.sizes[0] = n1;
                o.n_sizes = 1;
            } else if (mb_cli_parse_sizes(optarg, &o.sizes, &o.n_sizes, &e)) {
                return mb_cli_fail_err(2, &e);
            }
            break;
        case 't':
            if ((rc = parse_dtypes(optarg, o.dtypes, &o.n_dtypes))) goto out;
            break;
        case 'd': o.device = optarg; break;
        case 'r':
            if ((rc = parse_count("--reps", optarg, 10, 100000, &o.cfg.min_reps))) goto out;
            if (o.cfg.max_reps < o.cfg.min_reps) o.cfg.max_reps = o.cfg.min_reps;
            break;
        case 'O': {
            char *end = NULL;
            double v = strtod(optarg, &end);
            if (!end || *end || end == optarg || !(v > 0) || v > 86400) {
                rc = mb_cli_fail(2, "--timeout: expected seconds in (0, 86400], got '%s'", optarg);
                goto out;
            }
            o.cfg.timeout_s = v;
            if (o.cfg.min_time_s > v) o.cfg.min_time_s = v;
            break;
        }
        case 'W':
        case 'C':
            if (cold_opt && cold_opt != c) {
                rc = mb_cli_fail(2, "--warm and --cold cannot be combined: give one");
                goto out;
            }
            cold_opt = c;
            o.cfg.cold = c == 'C';
            break;
        case 'T':
            if ((rc = parse_count("--threads", optarg, 1, 4096, &o.cfg.threads))) goto out;
            break;
        case 'x': {
            int found = 0;
            for (int k = 0; k < MB_KERN_EXEC_COUNT; k++)
                if (!strcmp(optarg, mb_kern_exec_name((mb_kern_exec)k))) {
                    o.cfg.exec = (mb_kern_exec)k;
                    found = 1;
                }
            if (!found) {
                rc = mb_cli_fail(2, "unknown executor '%s' (executors: auto, opwise, blocked)", optarg);
                goto out;
            }
            break;
        }
        case 'o': o.out_path = optarg; break;
        case 'k': o.kernel_path = optarg; break;
        case 'q': o.quiet = o.cfg.quiet = 1; break;
        case 'R': o.recalibrate = 1; break;
        case 'h':
            usage(stdout);
            free(o.sizes);
            return 0;
        default:
            rc = mb_cli_bad_option(c, argv, optind, optopt, "measure");
            goto out;
        }
    }
    /* an output that is an input (a variant file, the spec) or the other
     * output would be lost: refused before any work */
    const char *out_paths[] = {o.out_path, o.kernel_path};
    const char *files[64];
    int n_files = 0;
    for (int i = 0; i < o.inputs.n && n_files < 64; i++)
        if (!o.inputs.v[i].is_expr) files[n_files++] = o.inputs.v[i].arg;
    if (mb_outfile_check_distinct(out_paths, 2, files, n_files, &e) ||
        mb_outfile_check_distinct(out_paths, 2, &o.device, 1, &e)) {
        rc = mb_cli_fail_err(2, &e);
        goto out;
    }

    /* 1. every graph, plan and size: bad input fails before anything runs */
    int n_jobs = 0, cap_jobs = 16;
    job *jobs = malloc((size_t)cap_jobs * sizeof *jobs);
    mb_graph **all_graphs[MB_DTYPE_COUNT] = {0};
    const char **all_exprs[MB_DTYPE_COUNT] = {0}; /* each graph's --expr string, NULL for a file */
    int n_all[MB_DTYPE_COUNT] = {0};
    mb_meas_csv_texts texts = {0};
    mb_meas_csv_rows out_rows = {0}, out_kernels = {.per_kernel = 1};
    mb_meas_record *rows = NULL;
    if (!jobs) { rc = mb_cli_fail(1, "out of memory"); goto out; }
    int64_t avail = meminfo_bytes("MemAvailable");
    int64_t llc = mb_kern_llc_bytes();
    for (int d = 0; d < o.n_dtypes; d++) {
        if ((rc = load_graphs(&o, o.dtypes[d], &all_graphs[d], &n_all[d], &all_exprs[d])))
            goto out_jobs;
        for (int gi = 0; gi < n_all[d]; gi++) {
            mb_graph *g = all_graphs[d][gi];
            for (int k = 0; o.plan_given && k < o.n_plans; k++)
                if (!mb_plan_supported(g, o.plans[k])) {
                    mb_plan *p = NULL;
                    rc = mb_plan_build(g, o.plans[k], &p, &e); /* fails, naming the valid plans */
                    rc = mb_cli_fail_err(rc ? rc : 2, &e);
                    goto out_jobs;
                }
            int64_t one = g->default_n ? g->default_n : ((int64_t)1 << 24);
            const int64_t *sizes = o.sizes ? o.sizes : &one;
            int ns = o.sizes ? o.n_sizes : 1;
            int n_pk = o.plan_given ? o.n_plans : MB_PLAN_COUNT;
            for (int ki = 0; ki < n_pk; ki++) {
                int pk = o.plan_given ? (int)o.plans[ki] : ki; /* --plan's order, else the table's */
                if (!o.plan_given && !mb_plan_supported(g, (mb_plan_kind)pk)) continue;
                for (int si = 0; si < ns; si++) {
                    /* refuse sizes that cannot fit, with the figure, before allocating */
                    mb_plan *p = NULL;
                    if ((rc = mb_plan_build(g, (mb_plan_kind)pk, &p, &e))) {
                        rc = mb_cli_fail_err(rc, &e);
                        goto out_jobs;
                    }
                    int64_t need = mb_kern_plan_peak_bytes(p, sizes[si], o.cfg.exec) + 2 * llc;
                    mb_plan_free(p);
                    if (n_jobs == cap_jobs) {
                        cap_jobs *= 2;
                        job *nj = realloc(jobs, (size_t)cap_jobs * sizeof *jobs);
                        if (!nj) { rc = mb_cli_fail(1, "out of memory"); goto out_jobs; }
                        jobs = nj;
                    }
                    jobs[n_jobs++] = (job){g, (mb_plan_kind)pk, sizes[si], need};
                }
            }
        }
    }

    /* 2. outputs open before anything runs (calibration included): an
     * unusable path fails now (exit 2), and an interrupted run leaves no
     * file (mb_outfile) */
    mb_outfile of = {0}, kf = {0};
    char *partial = NULL; /* 'partial: ...' provenance lines of the rows that failed to run */
    int have_of = 0, have_kf = 0;
    FILE *csv = stdout;
    if (o.out_path) {
        if ((rc = mb_outfile_open(&of, o.out_path, &e))) { rc = mb_cli_fail_err(rc, &e); goto out_jobs; }
        have_of = 1;
        csv = of.fp;
    }
    if (o.kernel_path) {
        if ((rc = mb_outfile_open(&kf, o.kernel_path, &e))) {
            rc = mb_cli_fail_err(rc, &e);
            goto out_files;
        }
        have_kf = 1;
    }
    /* 3. backend and model device */
    mb_meas_backend backend;
    char note[320];
    if ((rc = mb_meas_resolve_backend(o.backend, &backend, note, sizeof note, &e))) {
        rc = mb_cli_fail_err(1, &e);
        goto out_files;
    }
    mb_device dev;
    char dev_desc[256];
    if ((rc = admit_jobs(&o, backend, jobs, n_jobs, avail))) goto out_files;
    if ((rc = model_device(&o, backend, &dev, dev_desc, sizeof dev_desc))) goto out_files;
    if (note[0] && !o.quiet) mb_cli_note("%s", note);
    /* a calibrated CPU spec knows the cache this process gets (the measured
     * knee; a guest may report far more): it sizes the flush between samples */
    if (backend == MB_MEAS_CPU && !strcmp(dev.kind, "cpu") && o.cfg.llc_bytes <= 0 &&
        dev.cache_mb > 0)
        o.cfg.llc_bytes = (int64_t)(dev.cache_mb * 1048576.0);
    if (o.cfg.llc_bytes > 0) llc = o.cfg.llc_bytes; /* the notes below name that cache */

    mb_meas_provenance pv;
    mb_meas_provenance_fill(&pv, &o.cfg);
    snprintf(pv.extra, sizeof pv.extra, "backend: %s\nmodel_device: %s\nmemory: %.2f GB available of "
             "%.2f GB (host, at the start)", mb_meas_backend_name(backend), dev_desc, (double)avail / 1e9,
             (double)meminfo_bytes("MemTotal") / 1e9);
    /* provenance with the spec and variant texts, in columns of every row
     * (written after the rows): the CSV reports anywhere, alone */
    if (mb_meas_csv_texts_init(&texts, &pv, &dev, all_graphs[0], all_exprs[0], n_all[0], &e)) {
        rc = mb_cli_fail_err(1, &e);
        goto out_files;
    }
    if (o.out_path) print_table_header(stdout);

    /* 4. run */
    rows = calloc((size_t)n_jobs + 1, sizeof *rows);
    if (!rows) { rc = mb_cli_fail(1, "out of memory"); goto out_files; }
    int failed = 0, noisy = 0, drifted = 0, done_rows = 0, row_errors = 0, not_run = 0;
    /* the host's copy bandwidth against the calibrated spec's, before and
     * after the rows: the model columns assume the calibrated figure */
    const int cpu_spec = backend == MB_MEAS_CPU && !strcmp(dev.kind, "cpu");
    int host_check = cpu_spec && dev.host_ref_copy_gbs > 0;
    double host_gbs[2] = {0, 0};
    if (cpu_spec && !host_check && dev.measured_bandwidth_gbs > 0 && !o.quiet)
        mb_cli_note("the spec has no host reference (host_ref_copy_gbs: calibrated before measure "
                    "checked the host's drift): --recalibrate for the host checks");
    if (host_check) {
        mb_kern_set_threads(o.cfg.threads);
        if (mb_meas_hostref_init(&href, mb_meas_stream_elements(llc, 0), dev.host_ref_copy_gbs,
                                 &e) != MB_OK) {
            mb_cli_note("no host checks: %s", e.msg); /* the rows still run */
            host_check = 0;
        }
    }
    if (host_check) {
        href.calibrated_op_geps[0] = dev.host_ref_sin_geps;
        href.calibrated_op_geps[1] = dev.host_ref_sigmoid_geps;
        host_gbs[0] = mb_meas_hostref_median_gbs(&href, 5);
        o.cfg.hostref = &href;
        if (!o.quiet)
            mb_cli_note("host check: copy at %.1f GB/s before the rows (calibrated %.1f GB/s)",
                        host_gbs[0], dev.host_ref_copy_gbs);
    }
    double t_start = mb_meas_now_s();
    /* an interrupted run keeps the rows it measured (see after the loop) */
    stop_signal = 0;
    o.cfg.stop = &stop_signal;
    stop_handlers(1);
    for (int j = 0; j < n_jobs && !stop_signal; j++) {
        job *jb = &jobs[j];
        mb_plan *p = NULL;
        if ((rc = mb_plan_build(jb->g, jb->plan, &p, &e))) { rc = mb_cli_fail_err(rc, &e); goto out_files; }
        mb_meas_record *pk = have_kf ? calloc((size_t)p->n_kernels + 1, sizeof *pk) : NULL;
        mb_meas_record *row = &rows[j];
        char why[512] = "", nb[32];
        if (have_kf && !pk) { mb_plan_free(p); rc = mb_cli_fail(1, "out of memory"); goto out_files; }
        rc = mb_meas_record_init(row, pk, jb->g->name, p, jb->n, &dev, &e);
        if (!rc) rc = mb_meas_run(backend, p, jb->n, &o.cfg, row, pk, why, sizeof why, &e);
        if (!rc) rc = mb_meas_record_host_model(row, pk, p, jb->n, &dev, &e);
        if (rc && stop_signal) { /* the row in flight is dropped, not half-kept */
            free(pk);
            mb_plan_free(p);
            break;
        }
        if (rc) { /* one failure costs one row: the others are kept, the file says which */
            free(pk);
            mb_plan_free(p);
            mb_cli_fail(rc, "%s %s %s n = %s: %s: the row is left out", jb->g->name, mb_plan_name(jb->plan),
                        row->dtype, fmt_n(jb->n, nb, sizeof nb), e.msg);
            if (add_partial(&partial, "%s %s %s n = %s failed: %s", jb->g->name, mb_plan_name(jb->plan),
                            row->dtype, fmt_n(jb->n, nb, sizeof nb), e.msg)) {
                stop_handlers(0);
                rc = mb_cli_fail(1, "out of memory");
                goto out_files;
            }
            row_errors++;
            rc = 0;
            char why_not[256];
            if (backend == MB_MEAS_CUDA && !mb_meas_cuda_available(why_not, sizeof why_not)) {
                not_run = n_jobs - j - 1;
                if (not_run > 0)
                    mb_cli_fail(1, "the GPU is no longer usable (%s): the %d rows after it are not run", why_not,
                                not_run);
                if (not_run > 0 &&
                    add_partial(&partial, "the GPU became unusable (%s): %d rows not run", why_not, not_run)) {
                    stop_handlers(0);
                    rc = mb_cli_fail(1, "out of memory");
                    goto out_files;
                }
                break;
            }
            continue;
        }
        if (!row->verified) {
            failed++;
            mb_cli_fail(1, "%s %s %s n = %s failed its check: %s", row->variant, row->plan,
                        row->dtype, fmt_n(jb->n, nb, sizeof nb), why[0] ? why : "not verified");
        } else if (!strcmp(row->accuracy, "inaccurate")) {
            /* the math, not the kernel: verified, marked in the 'accuracy' column */
            fprintf(stderr, "membound: warning: %s %s %s n = %s: %s; the row is verified and marked "
                    "in the 'accuracy' column\n", row->variant, row->plan, row->dtype,
                    fmt_n(jb->n, nb, sizeof nb), why);
        }
        if (mb_meas_row_noisy(row)) {
            noisy++;
            fprintf(stderr, "membound: warning: %s %s %s n = %s: %d of %d samples contended (the "
                    "process waited for its cores: other processes or steal); the row is kept "
                    "and marked in the 'contended' column\n",
                    row->variant, row->plan, row->dtype, fmt_n(jb->n, nb, sizeof nb),
                    row->contended, row->reps);
        }
        if (MB_MEAS_HOST_DRIFTED(row->host_copy_ratio, row->host_op_ratio)) {
            char ratios[64], at_host[96] = "";
            drifted++;
            if (isfinite(row->model_host_time_s))
                snprintf(at_host, sizeof at_host, " (at those rates the model is %+.0f%% off, "
                         "column 'model_host_time_s')", 100.0 * (row->model_host_time_s -
                         row->time_s_median) / row->time_s_median);
            fprintf(stderr, "membound: warning: %s %s %s n = %s: during the row the host ran at "
                    "%s of the calibrated copy bandwidth (%.1f GB/s) and op rate the model column "
                    "assumes (a shared host drifts): its model error is off by up to as much%s; the "
                    "row is kept and marked in 'host_copy_ratio' and 'host_op_ratio'\n",
                    row->variant, row->plan, row->dtype, fmt_n(jb->n, nb, sizeof nb),
                    host_ratios(row, ratios, sizeof ratios), dev.host_ref_copy_gbs, at_host);
        }
        if (isfinite(row->upper_mode_share)) {
            char lo[32], hi[32], med[32];
            fprintf(stderr, "membound: warning: %s %s %s n = %s: its samples fall in two modes, %s and "
                    "%s (%.0f%% of them): the median (%s) is one of them, and so is its model error; "
                    "the row is kept and marked in 'time_s_lower_mode', 'time_s_upper_mode' and "
                    "'upper_mode_share'\n",
                    row->variant, row->plan, row->dtype, fmt_n(jb->n, nb, sizeof nb),
                    mb_cli_fmt_time(row->time_s_lower_mode, lo, sizeof lo),
                    mb_cli_fmt_time(row->time_s_upper_mode, hi, sizeof hi), 100 * row->upper_mode_share,
                    mb_cli_fmt_time(row->time_s_median, med, sizeof med));
        }
        /* An achieved bandwidth well above the calibrated one points at a wrong
         * byte count or calibration. A CPU's calibration is a measurement, not
         * a hardware peak (a shared host's bandwidth drifts by tens of percent),
         * so this is a note; the CUDA backend checks against the driver's peak
         * and marks such rows untrusted. */
        double gbs = (double)(row->read_bytes + row->write_bytes) / row->time_s_min / 1e9;
        double roof = dev.mem_bandwidth_gbs > dev.measured_bandwidth_gbs ? dev.mem_bandwidth_gbs
                                                                         : dev.measured_bandwidth_gbs;
        int64_t bytes = row->read_bytes + row->write_bytes;
        if (!strcmp(dev.kind, "cpu") && backend == MB_MEAS_CPU && bytes > 4 * llc &&
            gbs > 1.25 * roof)
            mb_cli_note("%s %s %s n = %s: %.1f GB/s is above the calibrated %.1f GB/s: check the "
                        "byte count or the calibration", row->variant, row->plan, row->dtype,
                        fmt_n(jb->n, nb, sizeof nb), gbs, roof);
        if (bytes < 4 * llc && !o.quiet && backend == MB_MEAS_CPU && j == 0)
            mb_cli_note("n = %s is below 4x the last-level cache (%.0f MiB): cache-resident, not a "
                        "cold-memory figure", fmt_n(jb->n, nb, sizeof nb), (double)llc / 1048576.0);
        int orc = mb_meas_csv_rows_add(&out_rows, row);
        for (int k = 0; have_kf && k < p->n_kernels && !orc; k++) orc = mb_meas_csv_rows_add(&out_kernels, &pk[k]);
        if (orc) {
            free(pk);
            mb_plan_free(p);
            stop_handlers(0);
            rc = mb_cli_fail(1, "out of memory");
            goto out_files;
        }
        if (o.out_path) print_table_row(stdout, row);
        fflush(stdout);
        if (!o.quiet && mb_meas_now_s() - t_start > 1.0) {
            char t1[32], t2[32];
            mb_cli_note("[%d/%d] %s %s %s n = %s: %s (model %s)%s", j + 1, n_jobs, row->variant,
                        row->plan, row->dtype, fmt_n(jb->n, nb, sizeof nb),
                        mb_cli_fmt_time(row->time_s_median, t1, sizeof t1),
                        mb_cli_fmt_time(row->model_time_s, t2, sizeof t2),
                        row->verified ? "" : " FAILED");
        }
        free(pk);
        mb_plan_free(p);
        done_rows++;
    }
    stop_handlers(0);
    if (host_check && host_gbs[0] > 0 && !stop_signal &&
        (host_gbs[1] = mb_meas_hostref_median_gbs(&href, 5)) > 0) {
        double cal = dev.host_ref_copy_gbs, worst = 1;
        for (int i = 0; i < 2; i++) {
            double r = host_gbs[i] / cal;
            if (fabs(r - 1) > fabs(worst - 1)) worst = r;
        }
        char line[200];
        snprintf(line, sizeof line, "host_check: copy %.1f GB/s before the rows, %.1f after, %.1f "
                 "calibrated", host_gbs[0], host_gbs[1], cal);
        if (mb_meas_csv_texts_add(&texts, line)) { rc = mb_cli_fail(1, "out of memory"); goto out_files; }
        if (fabs(worst - 1) > MB_MEAS_DRIFT_MAX)
            fprintf(stderr, "membound: warning: the host's copy bandwidth was %.1f GB/s before the rows "
                    "and %.1f after, %.0f%% of the calibrated %.1f GB/s the model columns assume (a "
                    "shared host drifts): times and model errors may be off by about as much; "
                    "--recalibrate, or measure again when the host is steady\n",
                    host_gbs[0], host_gbs[1], 100 * worst, cal);
        else if (!o.quiet)
            mb_cli_note("host check: copy at %.1f GB/s after the rows (calibrated %.1f GB/s)",
                        host_gbs[1], cal);
    }
    int trc = 0;
    for (char *save = NULL, *line = partial ? strtok_r(partial, "\n", &save) : NULL; line && !trc;
         line = strtok_r(NULL, "\n", &save))
        trc = mb_meas_csv_texts_add(&texts, line);
    if (stop_signal && !trc) {
        char line[160];
        snprintf(line, sizeof line, "partial: interrupted by %s after %d of %d rows",
                 stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", done_rows, n_jobs);
        trc = mb_meas_csv_texts_add(&texts, line);
    }
    /* GPU clocks, driver and the counter sanity gate are known only after the
     * runs: the rows are written after them */
    if (backend == MB_MEAS_CUDA && !trc) {
        char gpu[2048];
        mb_meas_cuda_provenance(gpu, sizeof gpu);
        for (char *save = NULL, *line = strtok_r(gpu, "\n", &save); line && !trc; line = strtok_r(NULL, "\n", &save))
            trc = mb_meas_csv_texts_add(&texts, line);
    }
    if (trc) { rc = mb_cli_fail(1, "out of memory"); goto out_files; }
    if (stop_signal && done_rows == 0) { /* nothing measured: no file */
        rc = mb_cli_fail(128 + stop_signal, "interrupted by %s before the first row: nothing written",
                         stop_signal == SIGTERM ? "SIGTERM" : "SIGINT");
        goto out_files;
    }
    if (row_errors && done_rows == 0) { /* every row failed: no file */
        rc = mb_cli_fail(1, "no row could be measured (%d failed): nothing written", row_errors);
        goto out_files;
    }
    if (mb_meas_csv_rows_write(&out_rows, &texts, csv, &e) ||
        (have_kf && mb_meas_csv_rows_write(&out_kernels, &texts, kf.fp, &e))) {
        rc = mb_cli_fail_err(1, &e);
        goto out_files;
    }
    /* both files or neither: a write error in one replaces none */
    mb_outfile *outs[2];
    int n_outs = 0;
    if (have_of) outs[n_outs++] = &of;
    if (have_kf) outs[n_outs++] = &kf;
    have_of = have_kf = 0;
    if (n_outs && mb_outfile_commit_all(outs, n_outs, &e)) { rc = mb_cli_fail_err(1, &e); goto out_files; }
    if (o.out_path && !o.quiet && !stop_signal) mb_cli_note("wrote %s (%d rows)", o.out_path, done_rows);
    if (row_errors)
        mb_cli_fail(1, "%d of %d rows failed to run%s%s (a 'partial:' line for each in the file's provenance column)", row_errors,
                    n_jobs, not_run ? " and the rest were not run" : "", o.out_path ? ": the others are kept" : "");
    if (noisy)
        fprintf(stderr, "membound: warning: %d of %d rows noisy: rerun them on a quieter machine\n",
                noisy, n_jobs);
    if (drifted)
        fprintf(stderr, "membound: warning: %d of %d rows measured while the host's copy bandwidth "
                "or op rate was more than %.0f%% off the calibrated figure: their model errors say as much "
                "about the host as about the model\n",
                drifted, n_jobs, 100 * MB_MEAS_DRIFT_MAX);
    rc = failed || row_errors ? 1 : 0;
    if (stop_signal) {
        mb_cli_fail(128 + stop_signal, "interrupted by %s: %d of %d rows measured%s%s",
                    stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", done_rows, n_jobs,
                    o.out_path ? " and written to " : "", o.out_path ? o.out_path : "");
        rc = 128 + stop_signal;
    }

out_files:
    free(partial);
    mb_meas_csv_texts_free(&texts);
    mb_meas_csv_rows_free(&out_rows);
    mb_meas_csv_rows_free(&out_kernels);
    if (have_of) mb_outfile_abort(&of);
    if (have_kf) mb_outfile_abort(&kf);
    mb_meas_hostref_free(&href);
out_jobs:
    free(rows);
    free(jobs);
    for (int d = 0; d < MB_DTYPE_COUNT; d++) {
        free_graphs(all_graphs[d], n_all[d]);
        free(all_exprs[d]);
    }
out:
    free(o.sizes);
    mb_cli_inputs_free(&o.inputs);
    return rc;
}
