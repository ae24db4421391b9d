/* measure_contention.c — the protocol notices when the process does not get
 * its core. The measurement runs on one thread pinned to one CPU: with a
 * busy-looping hog pinned to the same CPU most samples must be flagged and
 * the row marked noisy (library and CLI: the warning and the CSV's
 * 'contended' column); without the hog the row must stay clear. On a shared
 * machine other processes may load that CPU too: the clear case is then
 * skipped (exit 77) with the figure, never passed. */
#define _GNU_SOURCE
#include "mb_test.h"
#include "mb_test_csv.h"
#include "measure.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Busy ticks (user..steal, USER_HZ) of each CPU from /proc/stat; count of CPUs. */
static int cpu_busy_ticks(long long *busy, int max)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        int id;
        long long v[8];
        if (sscanf(line, "cpu%d %lld %lld %lld %lld %lld %lld %lld %lld", &id, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9 || id != n)
            continue;
        busy[n++] = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]; /* all but idle, iowait */
    }
    fclose(f);
    return n;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The allowed CPU that was least busy over 0.3 s. */
static int quietest_cpu(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    long long a[256], b[256];
    int n = cpu_busy_ticks(a, 256);
    struct timespec ts = {0, 300000000};
    nanosleep(&ts, NULL);
    if (cpu_busy_ticks(b, 256) != n) n = 0;
    int best = -1;
    for (int c = 0; c < CPU_SETSIZE && c < (n ? n : CPU_SETSIZE); c++) {
        if (!CPU_ISSET(c, &set)) continue;
        if (best < 0 || (n && b[c] - a[c] < b[best] - a[best])) best = c;
    }
    return best < 0 ? 0 : best;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) perror("sched_setaffinity");
}

static pid_t start_hog(int cpu)
{
    pid_t pid = fork();
    if (pid == 0) {
        pin(cpu);
        volatile unsigned long x = 0;
        for (;;) x++;
    }
    struct timespec ts = {0, 50000000}; /* let it start */
    nanosleep(&ts, NULL);
    return pid;
}

static void stop(pid_t pid)
{
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* One row of copy at 2^22 (32 MiB moved, several ms a sample: a time slice
 * of a hog lands inside most samples) on one thread; *others_frac gets the
 * share of the run other processes used the pinned CPU. */
static int measure_row(int cpu, mb_meas_record *row, double *others_frac)
{
    mb_err err;
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    mb_device dev;
    if (mb_parse_expr("y = copy(x)", MB_F32, &g, &err) || mb_plan_build(g, MB_PLAN_EAGER, &p, &err) ||
        mb_device_find("h100-sxm", &dev, &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        return 1;
    }
    mb_meas_config c;
    mb_meas_config_default(&c);
    c.threads = 1;
    c.llc_bytes = 4 << 20;
    c.min_reps = 20;
    c.max_reps = 30;
    c.timeout_s = 3;
    int64_t n = (int64_t)1 << 23;
    char why[256];
    long long a[256], b[256];
    int ncpu = cpu_busy_ticks(a, 256);
    double cpu0 = process_cpu_s(), t0 = mb_meas_now_s();
    int rc = mb_meas_record_init(row, NULL, "copy", p, n, &dev, &err);
    if (!rc) rc = mb_meas_cpu_run(p, n, &c, row, NULL, why, sizeof why, &err);
    double wall = mb_meas_now_s() - t0, own = process_cpu_s() - cpu0;
    long hz = sysconf(_SC_CLK_TCK);
    *others_frac = 0;
    if (cpu_busy_ticks(b, 256) == ncpu && cpu < ncpu && hz > 0)
        *others_frac = ((double)(b[cpu] - a[cpu]) / (double)hz - own) / wall;
    if (rc) fprintf(stderr, "run: %s\n", err.msg);
    else printf("median sample %.2f ms\n", 1e3 * row->time_s_median);
    mb_plan_free(p);
    mb_graph_free(g);
    return rc;
}

/* The CLI, pinned beside the hog: the warning and the CSV column. */
static void cli_with_hog(int cpu)
{
    const char *bin = getenv("MB_BIN");
    if (!bin || access(bin, X_OK) != 0) return;
    char dir[] = "/tmp/mb_contention_XXXXXX";
    if (!mkdtemp(dir)) return;
    char csv[512], err_path[512];
    snprintf(csv, sizeof csv, "%s/c.csv", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    pid_t hog = start_hog(cpu);
    pid_t pid = fork();
    if (pid == 0) {
        pin(cpu);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fe < 0) _exit(127);
        dup2(fe, 2);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 1);
        execl(bin, bin, "measure", "--backend", "cpu", "--device", "h100-sxm", "--threads", "1",
              "--sizes", "2^22", "--reps", "20", "--timeout", "3", "--plan", "eager", "-o", csv,
              "copy", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    stop(hog);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char text[8192] = "";
    FILE *f = fopen(err_path, "r");
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    CHECK(strstr(text, "samples contended") != NULL && strstr(text, "rows noisy") != NULL);
    /* one summary line, not one per row (those with --verbose) */
    CHECK(strstr(text, "the row is kept and marked in the 'contended' column") == NULL);
    char body[8192] = "";
    if ((f = fopen(csv, "r"))) {
        body[fread(body, 1, sizeof body - 1, f)] = '\0';
        fclose(f);
    }
    char contended[32] = "";
    CHECK(strstr(body, ",verified,contended") != NULL);
    CHECK(mb_test_csv_field(body, 0, "contended", contended, sizeof contended));
    CHECK(atoi(contended) > 0);
    unlink(csv);
    unlink(err_path);
    rmdir(dir);
}

int main(void)
{
    mb_meas_set_env(getenv); /* as the CLI does: the compiled-kernel cache under $HOME */
    int cpu = quietest_cpu();
    pin(cpu);
    mb_meas_record clear, busy;
    double others_clear = 0, others_busy = 0;
    if (measure_row(cpu, &clear, &others_clear)) return 1;
    pid_t hog = start_hog(cpu);
    int rc = measure_row(cpu, &busy, &others_busy);
    stop(hog);
    if (rc) return 1;
    printf("cpu %d: without a hog %d of %d samples contended (other processes used the cpu "
           "%.0f%% of the run); with a hog %d of %d (%.0f%%)\n", cpu, clear.contended, clear.reps,
           100 * others_clear, busy.contended, busy.reps, 100 * others_busy);
    CHECK(busy.verified && clear.verified);
    CHECK(mb_meas_row_noisy(&busy));
    CHECK(3 * busy.contended >= busy.reps);
    cli_with_hog(cpu);
    if (mb_meas_row_noisy(&clear) && others_clear > 0.10) {
        printf("skip: the clear case needs a quiet cpu; other processes used cpu %d for %.0f%% "
               "of the run\n", cpu, 100 * others_clear);
        return mb_test_skip();
    }
    CHECK(!mb_meas_row_noisy(&clear));
    return mb_test_done();
}
