/* measure_cli.c — `membound measure` and `membound calibrate` as a user runs
 * them ($MB_BIN): oversize sizes refused with exit 2 before allocating,
 * unknown plans and variants list the valid ones, SIGINT keeps the rows measured
 * (none: no CSV), a small
 * run writes a verified CSV, a quick calibration yields a spec the model
 * accepts. */
#define _POSIX_C_SOURCE 200809L
#include "mb_test.h"
#include "mb_test_csv.h"
#include "kernels.h"
#include "membound_model.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bin;
static char dir[256];

static char *slurp(const char *name);

/* > 0: the address-space limit (RLIMIT_AS) of the next child, bytes */
static rlim_t child_as_bytes;

/* Runs bin with args (NULL-terminated), stderr and stdout into files under dir.
 * kill_after_s > 0: SIGINT after that long; kill_on (when not NULL): SIGINT
 * once stdout holds it (or after 120 s). Returns the wait status. */
static int run_until(double kill_after_s, const char *kill_on, const char *const *args)
{
    char out_path[512], err_path[512];
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || chdir(dir) != 0) _exit(127);
        if (child_as_bytes > 0) {
            struct rlimit rl = {child_as_bytes, child_as_bytes};
            if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(127);
        }
        dup2(fo, 1);
        dup2(fe, 2);
        char *argv[32];
        int i = 0;
        argv[i++] = (char *)bin;
        for (; args[i - 1] && i < 31; i++) argv[i] = (char *)args[i - 1];
        argv[i] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    if (kill_after_s > 0) {
        struct timespec ts = {(time_t)kill_after_s, (long)((kill_after_s - (time_t)kill_after_s) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGINT);
    }
    if (kill_on) {
        for (int t = 0; t < 1200 && !strstr(slurp("stdout.txt"), kill_on); t++) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        kill(pid, SIGINT);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static int run(double kill_after_s, const char *const *args)
{
    return run_until(kill_after_s, NULL, args);
}

static int exit_code(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : -1; }

static char *slurp(const char *name)
{
    static char buf[65536];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    buf[k] = '\0';
    fclose(f);
    return buf;
}

/* The host reference's columns (host_copy_gbs, host_copy_ratio,
 * host_op_ratio) of the first row of a measurement CSV: how many of them
 * are non-empty (-1: no row). */
static int csv_host3(const char *csv, double *gbs, double *ratio, double *op)
{
    static const char *name[3] = {"host_copy_gbs", "host_copy_ratio", "host_op_ratio"};
    double *dst[3] = {gbs, ratio, op};
    int got = 0;
    char f[64];
    for (int c = 0; c < 3; c++) {
        if (!csv || !mb_test_csv_field(csv, 0, name[c], f, sizeof f)) return -1;
        if (f[0]) *dst[c] = strtod(f, NULL), got++;
    }
    return got;
}

static int exists(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Files in dir other than stdout.txt / stderr.txt / keep. */
static int stray_files(const char *keep)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "stdout.txt") ||
            !strcmp(e->d_name, "stderr.txt") || (keep && !strcmp(e->d_name, keep)))
            continue;
        fprintf(stderr, "stray file: %s\n", e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

int main(void)
{
    bin = getenv("MB_BIN");
    if (!bin || access(bin, X_OK) != 0) {
        fprintf(stderr, "MB_BIN not set or not executable\n");
        return 77;
    }
    snprintf(dir, sizeof dir, "/tmp/mb_measure_cli_XXXXXX");
    if (!mkdtemp(dir)) return 1;

    /* oversize: refused with the figure, exit 2, quickly (nothing allocated) */
    time_t t0 = time(NULL);
    const char *big[] = {"measure", "copy", "--backend", "cpu", "--device", "h100-sxm",
                         "--sizes", "2^40", "-o", "big.csv", NULL};
    CHECK_EQ_I64(exit_code(run(0, big)), 2);
    CHECK(strstr(slurp("stderr.txt"), "needs") && strstr(slurp("stderr.txt"), "GB"));
    CHECK(time(NULL) - t0 < 5);
    CHECK(!exists("big.csv"));

    /* unknown plan: the valid ones are listed */
    const char *badplan[] = {"measure", "--plan", "sideways", "copy", NULL};
    CHECK_EQ_I64(exit_code(run(0, badplan)), 2);
    CHECK(strstr(slurp("stderr.txt"), "eager") && strstr(slurp("stderr.txt"), "recompute"));
    /* a plan the variant does not support: its valid plans are named */
    const char *wrongplan[] = {"measure", "--backend", "cpu", "--device", "h100-sxm", "--plan",
                               "fused", "sigmoid3", NULL};
    CHECK_EQ_I64(exit_code(run(0, wrongplan)), 2);
    CHECK(strstr(slurp("stderr.txt"), "store") != NULL);
    /* unknown variant: the built-ins are listed */
    const char *badvar[] = {"measure", "--backend", "cpu", "nosuchvariant", NULL};
    CHECK_EQ_I64(exit_code(run(0, badvar)), 2);
    CHECK(strstr(slurp("stderr.txt"), "sin2_plus_cos2") != NULL);
    /* bad --reps */
    const char *badreps[] = {"measure", "--reps", "3", "copy", NULL};
    CHECK_EQ_I64(exit_code(run(0, badreps)), 2);

    /* a small run: CSV with the contract header, verified rows, no counters */
    /* one thread: CI runs tests side by side on 2 cores */
    const char *small[] = {"measure", "--backend", "auto", "--threads", "1", "--timeout", "0.2", "--device", "h100-sxm", "--sizes",
                           "2^12", "--dtype", "f32,bf16", "-o", "small.csv", "--per-kernel",
                           "kern.csv", "sigmoid3", "copy", NULL};
    CHECK_EQ_I64(exit_code(run(0, small)), 0);
    CHECK(strstr(slurp("stderr.txt"), "backend auto: using") != NULL);
    char *csv = slurp("small.csv");
    /* plain: the header first, no '#' line; the provenance in its column */
    static const char head[] = "device,backend,variant,plan,dtype,n,kernels,reps,";
    CHECK(!strncmp(csv, head, sizeof head - 1));
    CHECK(strstr(csv, "\n#") == NULL);
    char prov[4096];
    CHECK(mb_test_csv_field(csv, 0, "provenance", prov, sizeof prov) && strstr(prov, "\\ngit_commit: ") != NULL);
    CHECK(mb_test_csv_field(csv, 0, "device_spec", prov, sizeof prov) &&
          !strncmp(prov, "[device]\\nname = h100-sxm\\n", sizeof "[device]\\nname = h100-sxm\\n" - 1));
    /* the device column is the spec's id, as report names the device */
    CHECK(mb_test_csv_field(csv, 0, "device", prov, sizeof prov) && !strcmp(prov, "h100-sxm"));
    int rows = 0, verified = 0;
    char field[64];
    for (; mb_test_csv_field(csv, rows, "verified", field, sizeof field); rows++) {
        verified += !strcmp(field, "1");
        CHECK(mb_test_csv_field(csv, rows, "accuracy", field, sizeof field) && !strcmp(field, "ok"));
    }
    /* (sigmoid3: 3 plans, 4 with optimal (igraph) + copy: 2) x 2 dtypes */
    CHECK_EQ_I64(rows, 2 * (3 + mb_plan_optimal_available() + 2));
    CHECK_EQ_I64(verified, rows);
    CHECK(strstr(csv, ",none-cpu,") != NULL);
    CHECK(strstr(slurp("kern.csv"), ",kernel,contended,host_copy_gbs,host_copy_ratio,host_op_ratio,"
                                    "model_host_time_s,time_s_lower_mode,time_s_upper_mode,"
                                    "upper_mode_share,count_err,count_check,accuracy,variant_text,variant_expr,"
                                    "device_spec,provenance,calibration,shape,dims\n") != NULL);
    CHECK(stray_files(NULL) == 2); /* small.csv and kern.csv, no temporaries */

    /* faithful to f32: an overflow where float64 stays finite and an input
     * range that makes the expression ill-conditioned in f32 verify (exit 0),
     * marked inaccurate with a warning that says which */
    const struct { const char *expr, *says; } f32_cases[] = {
        {"y = exp(((x + x - 2.041)**3)**2)", "float32 overflows or underflows where float64 does not"},
        {"y = sin(exp(x**2))", "inaccurate: the input range makes this expression ill-conditioned in f32"},
    };
    for (int k = 0; k < 2; k++) {
        const char *f32run[] = {"measure", "--backend", "cpu", "--threads", "1", "--device", "h100-sxm",
                                "--plan", "fused", "--sizes", "2^12", "--timeout", "0.2", "--verbose", "--expr",
                                f32_cases[k].expr, "-o", "f32.csv", NULL};
        CHECK_EQ_I64(exit_code(run(0, f32run)), 0);
        CHECK(strstr(slurp("stderr.txt"), f32_cases[k].says) != NULL);
        char *f32csv = slurp("f32.csv");
        CHECK(mb_test_csv_field(f32csv, 0, "verified", field, sizeof field) && !strcmp(field, "1"));
        CHECK(mb_test_csv_field(f32csv, 0, "accuracy", field, sizeof field) && !strcmp(field, "inaccurate"));
        CHECK(mb_test_csv_field(f32csv, 0, "max_rel_err", field, sizeof field) && isfinite(atof(field)));
        char f32path[512];
        snprintf(f32path, sizeof f32path, "%s/f32.csv", dir);
        CHECK(remove(f32path) == 0);
    }

    /* interrupted before a row finished: exit 130, no CSV and no temporary */
    const char *longrun[] = {"measure", "--backend", "cpu", "--device", "h100-sxm", "--sizes",
                             "2^22", "--reps", "200", "-o", "int.csv", "sin2_plus_cos2", NULL};
    int st = run(1.0, longrun);
    CHECK_EQ_I64(exit_code(st), 130);
    CHECK(strstr(slurp("stderr.txt"), "interrupted by SIGINT before the first row") != NULL);
    CHECK(!exists("int.csv"));
    CHECK(stray_files("kern.csv") == 1); /* only small.csv besides kern.csv */

    /* interrupted during the second row: the first is written, marked partial */
    const char *tworows[] = {"measure", "--backend", "cpu", "--device", "h100-sxm", "--threads",
                             "1", "--warm", "--plan", "eager", "--sizes", "2^12,2^24", "--reps",
                             "1000", "--timeout", "60", "-o", "part.csv", "copy", NULL};
    st = run_until(0, " 2^12 ", tworows);
    CHECK_EQ_I64(exit_code(st), 130);
    CHECK(strstr(slurp("stderr.txt"), "interrupted by SIGINT: 1 of 2 rows") != NULL);
    char *part = slurp("part.csv");
    CHECK(strstr(part, "\\npartial: interrupted by SIGINT after 1 of 2 rows\",,,\n") != NULL); /* no calibration: h100-sxm; 1-D: no shape, no dims */
    CHECK(strstr(part, ",copy,eager,f32,4096,") != NULL);
    CHECK(strstr(part, ",16777216,") == NULL); /* the row in flight is not kept */
    CHECK(stray_files("kern.csv") == 2); /* small.csv and part.csv */

    /* one failure costs one row: with 1 GiB of address space beside the
     * cache flush buffer (2x LLC: 960 MiB where a VM reports a 480 MiB L3)
     * the 2^27 copy (two 512 MiB tensors) cannot be allocated; the rows before and after
     * it are measured and kept, the file names the failed row in a
     * 'partial:' line of the provenance column, the exit is 1. (Not under ASan, whose shadow memory
     * needs more address space than any such limit.) */
#if defined(__SANITIZE_ADDRESS__)
    printf("skipped the row-failure case: ASan build\n");
#else
    const char *oom[] = {"measure", "--backend", "cpu", "--device", "h100-sxm", "--threads", "1", "--plan",
                         "eager", "--sizes", "2^12,2^27,2^14", "-o", "oom.csv", "copy", NULL};
    child_as_bytes = ((rlim_t)1 << 30) + 2 * (rlim_t)mb_kern_llc_bytes();
    st = run(0, oom);
    child_as_bytes = 0;
    CHECK_EQ_I64(exit_code(st), 1);
    const char *oerr = slurp("stderr.txt");
    CHECK(strstr(oerr, "copy eager f32 n = 2^27: ") != NULL && strstr(oerr, "the row is left out") != NULL);
    CHECK(strstr(oerr, "1 of 3 rows failed to run: the others are kept") != NULL);
    char *oc = slurp("oom.csv");
    CHECK(strstr(oc, ",copy,eager,f32,4096,") != NULL);
    CHECK(strstr(oc, ",copy,eager,f32,16384,") != NULL);
    CHECK(strstr(oc, ",134217728,") == NULL);
    CHECK(strstr(oc, "\\npartial: copy eager f32 n = 2^27 failed: ") != NULL);
    if (!strstr(oc, "\\npartial: copy eager f32 n = 2^27 failed: ")) fprintf(stderr, "stderr: %s\n", oerr);
    char oom_path[512];
    snprintf(oom_path, sizeof oom_path, "%s/oom.csv", dir);
    unlink(oom_path);
#endif

    /* -q is --quiet, as for measure (not --quick): no progress notes, the
     * warning that a quick spec is not for the model still shown */
    const char *calq[] = {"calibrate", "-q", "--quick", "--threads", "1", "-o", "cpuq.ini", NULL};
    CHECK_EQ_I64(exit_code(run(0, calq)), 0);
    CHECK(strstr(slurp("stderr.txt"), "note: calibrate:") == NULL);
    CHECK(strstr(slurp("stderr.txt"), "--quick: cache-sized arrays") != NULL);

    /* quick calibration: a spec that the model accepts */
    const char *cal[] = {"calibrate", "--quick", "--threads", "1", "-o", "cpu.ini", NULL};
    CHECK_EQ_I64(exit_code(run(0, cal)), 0);
    CHECK(strstr(slurp("stderr.txt"), "note: calibrate: [") != NULL); /* progress */
    /* the serial fraction is the median of its rounds, with their quartiles */
    /* (the summary's key lines: key, value, how its probe got it) */
    const char *sfl = strstr(slurp("stdout.txt"), "\n  serial_fraction ");
    double sf = -1, q1 = -1, q3 = -1;
    CHECK(sfl && sscanf(sfl, "\n  serial_fraction %lf rounds' quartiles %lf-%lf", &sf, &q1, &q3) == 3);
    CHECK(q1 >= 0 && q1 <= sf && sf <= q3 && q3 <= 1);
    /* where kernels run compiled, the row kernels' figure too, in the spec */
    const char *sfc = strstr(slurp("stdout.txt"), "\n  serial_fraction_compiled ");
    const int jit = sfc && sscanf(sfc, "\n  serial_fraction_compiled %lf", &sf) == 1;
    const char *sfr = strstr(slurp("stdout.txt"), "\n  serial_fraction_rows ");
    const int row_fig = sfr && sscanf(sfr, "\n  serial_fraction_rows %lf rounds' quartiles %lf-%lf", &sf, &q1, &q3) == 3;
    CHECK(sfc && sfr && !jit == !row_fig);
    if (row_fig) CHECK(q1 >= 0 && q1 <= sf && sf <= q3 && q3 <= 1);
    char *ini = slurp("cpu.ini");
    CHECK(!jit == !strstr(ini, "\nserial_fraction_rows = "));
    /* and, where the system gives the L1's size, the figure beyond it */
    if (jit && strstr(ini, "\nl1_kib = ")) CHECK(strstr(ini, "\nserial_fraction_rows_l2 = ") != NULL);
    CHECK(strstr(ini, "name = local-cpu") && strstr(ini, "kind = cpu") &&
          strstr(ini, "op_sin_geps") && strstr(ini, "measured_at"));
    CHECK(strstr(ini, "\nwrite_allocate = 1\n") != NULL && strstr(ini, "\nstream_at_cache_size = 1\n") != NULL);
    CHECK(strstr(ini, "overlap from y = sin(x) (rounds' quartiles ") != NULL);
    /* the compiled chains' rates: as many op_<name>_compiled_geps keys as the
     * source line counts (a quick run on a loaded machine may drop a rate
     * that does not come out positive, or all of them; the count says so) */
    const char *chains = strstr(ini, " in compiled chains (");
    int n_rates = -1, n_built = -1, n_keys = 0;
    while (chains && chains > ini && chains[-1] >= '0' && chains[-1] <= '9') chains--;
    CHECK(chains && sscanf(chains, "%d in compiled chains (%d chains built)", &n_rates,
                           &n_built) == 2);
    /* neg has no chain: its key is the compiled add's */
    for (const char *k = ini; (k = strstr(k, "_compiled_geps = ")) != NULL; k++)
        n_keys += strncmp(k - 6, "sincos", 6) != 0 && strncmp(k - 6, "op_neg", 6) != 0;
    CHECK_EQ_I64(n_keys, n_rates);
    CHECK(n_rates == 0 || strstr(ini, "op_neg_compiled_geps = ") != NULL);
    CHECK(n_rates == 0 || n_rates < n_built); /* the shallow add chain gives no op key */
    if (strstr(ini, "(sleef-")) { /* a SLEEF build (the source line names it): all chains built,
                                    * the shallow adds, sincos and one per op_table.h row with one */
        int want = 2;
        for (int op = 1; op < MB_OP_COUNT; op++) want += mb_op_info_of((mb_op)op)->probe_pre != NULL;
        CHECK_EQ_I64(n_built, want);
    }
    char says[96];
    snprintf(says, sizeof says, "compiled probe chains: %d built, %d op rates from them", n_built,
             n_rates);
    CHECK(n_built == 0 || strstr(slurp("stdout.txt"), says) != NULL);
    const char *model[] = {"model", "copy", "--device", "cpu.ini", "--json", NULL};
    CHECK_EQ_I64(exit_code(run(0, model)), 0);
    CHECK(strstr(slurp("stdout.txt"), "\"local-cpu\"") != NULL);
    /* the first-touch probe: its figures in the spec (a threshold glibc can
     * have: its 128 KiB start, a probed size, its 32 MiB ceiling), one line
     * per size in the summary, and the model takes them with --framework */
    ini = slurp("cpu.ini");
    double ft = 0, thr = 0;
    const char *ftl = strstr(ini, "\nfirst_touch_gbs = "), *thl = strstr(ini, "\nalloc_mmap_threshold_mb = ");
    CHECK(ftl && sscanf(ftl, "\nfirst_touch_gbs = %lf", &ft) == 1 && ft >= 0.1 && ft <= 1e5);
    CHECK(thl && sscanf(thl, "\nalloc_mmap_threshold_mb = %lf", &thr) == 1 &&
          (thr == 0.125 || thr == 8 || thr == 16 || thr == 24 || thr == 32));
    const char *fwm[] = {"model", "sin2_plus_cos2", "--n", "2^24", "--device", "cpu.ini", "--framework",
                         "pytorch", "--json", NULL};
    CHECK_EQ_I64(exit_code(run(0, fwm)), 0);
    CHECK(strstr(slurp("stdout.txt"), "\"framework\": \"pytorch\"") != NULL);
    CHECK(strstr(slurp("stdout.txt"), "\"alloc_s\": ") != NULL);
    /* the probe alone (calibrate --first-touch): its figure per byte and per
     * page, the page and the THP mode printed, no spec written; it measures
     * now and writes nothing, so --cached and -o are refused */
    const char *ft1[] = {"calibrate", "--first-touch", "--quick", "--threads", "1", NULL};
    CHECK(!exists("local-cpu.ini"));
    CHECK_EQ_I64(exit_code(run(0, ft1)), 0);
    const char *ftp = strstr(slurp("stdout.txt"), "-> first_touch_gbs ");
    double ftg = 0, upp = 0;
    int kib = 0;
    CHECK(ftp && sscanf(ftp, "-> first_touch_gbs %lf above the mmap threshold, %*s MiB (--framework pytorch); "
                             "%lf us per %d KiB page (transparent huge pages: ", &ftg, &upp, &kib) == 3);
    CHECK(ftg > 0 && upp >= 0 && (kib == 2048 || kib == (int)(sysconf(_SC_PAGESIZE) / 1024)));
    CHECK(!exists("local-cpu.ini"));
    const char *ft2[] = {"calibrate", "--first-touch", "--cached", NULL};
    CHECK_EQ_I64(exit_code(run(0, ft2)), 2);
    const char *ft3[] = {"calibrate", "--first-touch", "-o", "t.ini", NULL};
    CHECK_EQ_I64(exit_code(run(0, ft3)), 2);
    CHECK(strstr(slurp("stderr.txt"), "--first-touch writes no spec") != NULL && !exists("t.ini"));

    /* the host check: a CPU spec's rows are framed by the host reference copy
     * now, against the calibrated one; 1e5 GB/s calibrated is far off:
     * warned. A quick calibration (a smoke test's small arrays) has no
     * reference: measure says so and checks nothing */
    ini = strdup(slurp("cpu.ini")); /* slurp's buffer is reused */
    const char *zero_ref = "\nhost_ref_copy_gbs = 0\nhost_ref_sin_geps = 0\nhost_ref_sigmoid_geps = 0\n";
    char *ref = ini ? strstr(ini, zero_ref) : NULL;
    CHECK(ref != NULL);
    const char *noref[] = {"measure", "--backend", "cpu", "--threads", "1", "--timeout", "0.2",
                           "--device", "cpu.ini", "--plan", "eager", "--sizes", "2^12", "-o",
                           "hc.csv", "copy", NULL};
    CHECK_EQ_I64(exit_code(run(0, noref)), 0);
    CHECK(strstr(slurp("stderr.txt"), "the spec has no host reference") != NULL);
    /* a quick calibration's spec says why it has none, not as an old spec's */
    CHECK(strstr(slurp("stderr.txt"), "calibration times none (its arrays are cache-sized)") != NULL);
    CHECK(strstr(slurp("stderr.txt"), "calibrated before measure checked") == NULL);
    CHECK(strstr(slurp("hc.csv"), "host_check") == NULL);
    if (ref) {
        char fast[512];
        snprintf(fast, sizeof fast, "%s/fast.ini", dir);
        FILE *fp = fopen(fast, "w");
        CHECK(fp != NULL);
        /* and a 16 MiB cache: the reference arrays (>= 4x the cache) and the
         * sweep before each sample (2x) follow the spec's cache, which a quick
         * calibration takes from the system; a 2-vCPU guest reports 480 MiB,
         * and these two runs took 58 s there, 9 s with 16 MiB, the same lines */
        char *cache = strstr(ini, "\ncache_mb = ");
        char *cache_end = cache && cache < ref ? strchr(cache + 1, '\n') : NULL;
        CHECK(cache_end != NULL);
        if (fp && cache_end) {
            fprintf(fp, "%.*s\ncache_mb = 16%.*s\nhost_ref_copy_gbs = 100000\nhost_ref_sin_geps = 0.001\n"
                    "host_ref_sigmoid_geps = 0\n%s", (int)(cache - ini), ini, (int)(ref - cache_end), cache_end,
                    ref + strlen(zero_ref));
        }
        if (fp) fclose(fp);
        const char *hc[] = {"measure", "--backend", "cpu", "--threads", "1", "--timeout", "0.2",
                            "--device", "fast.ini", "--plan", "eager", "--sizes", "2^12", "-o",
                            "hc.csv", "--verbose", "copy", NULL};
        CHECK_EQ_I64(exit_code(run(0, hc)), 0);
        CHECK(strstr(slurp("stderr.txt"), "warning: the host's copy bandwidth was") != NULL);
        CHECK(strstr(slurp("hc.csv"), "\\nhost_check: copy ") != NULL);
        CHECK(strstr(slurp("hc.csv"), " after, 100000.0 calibrated\",") != NULL);
        /* and row by row: the reference copy beside the samples, its ratio
         * to the calibrated figure in the row, a warning and the table's mark */
        CHECK(strstr(slurp("stderr.txt"), "during the row the host ran at copy 0%, ops ") != NULL);
        CHECK(strstr(slurp("stderr.txt"), "1 of 1 rows measured while the host's copy") != NULL);
        CHECK(strstr(slurp("stdout.txt"), "[host copy 0%, ops ") != NULL);
        double gbs = 0, ratio = 0, op = 0;
        CHECK_EQ_I64(csv_host3(slurp("hc.csv"), &gbs, &ratio, &op), 3);
        CHECK(gbs > 0.1 && gbs < 100000);
        CHECK_NEAR(ratio, gbs / 100000, 1e-6 * ratio + 1e-12);
        CHECK(op > 10); /* 0.001 Gelem/s calibrated: far below */
        /* the model again at those rates: the copy at a sliver of the
         * calibrated bandwidth takes far longer than the model column says */
        char mh[64] = "", mt[64] = "";
        CHECK(mb_test_csv_field(slurp("hc.csv"), 0, "model_host_time_s", mh, sizeof mh));
        CHECK(mb_test_csv_field(slurp("hc.csv"), 0, "model_time_s", mt, sizeof mt));
        CHECK(strtod(mt, NULL) > 0 && strtod(mh, NULL) > 100 * strtod(mt, NULL));
        CHECK(strstr(slurp("stderr.txt"), "(at those rates measured / model - 1 is -") != NULL);
        CHECK(strstr(slurp("stdout.txt"), " of calibrated; at those rates err -") != NULL); /* measured / model - 1 */
        /* --warm rows: no reference (it would evict the cache), no mark */
        const char *warm[] = {"measure", "--backend", "cpu", "--threads", "1", "--timeout", "0.2",
                              "--device", "fast.ini", "--plan", "eager", "--sizes", "2^12", "--warm",
                              "-o", "hc.csv", "copy", NULL};
        CHECK_EQ_I64(exit_code(run(0, warm)), 0);
        CHECK(strstr(slurp("stderr.txt"), "during the row") == NULL);
        CHECK_EQ_I64(csv_host3(slurp("hc.csv"), &gbs, &ratio, &op), 0);
    }
    free(ini);
    CHECK(strstr(slurp("small.csv"), "host_check") == NULL); /* a GPU spec: no check */
    double gbs = 0, ratio = 0, op = 0;
    CHECK_EQ_I64(csv_host3(slurp("small.csv"), &gbs, &ratio, &op), 0); /* nor row references */

    /* clean up */
    const char *files[] = {"small.csv", "kern.csv", "part.csv", "cpu.ini", "fast.ini", "hc.csv",
                           "stdout.txt", "stderr.txt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return mb_test_done();
}
