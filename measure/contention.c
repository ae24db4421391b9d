/* contention.c — did this process get its cores during a timed sample?
 * Reads, before and after each sample (outside the timed region), the time
 * this process's threads spent runnable but waiting for a CPU (the kernel's
 * schedstat run_delay, summed over /proc/self/task/<tid>/schedstat), the
 * host's steal time (/proc/stat) and, where schedstat is missing, the count
 * of involuntary context switches (getrusage). Does not time anything itself
 * and decides nothing about rows (the protocol counts flagged samples). */
#define _GNU_SOURCE
#include "measure.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Sum of run_delay (ns) over this process's threads, or -1 without schedstat. */
static int64_t run_delay_ns(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int64_t sum = 0;
    int seen = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%.20s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* the thread ended between readdir and open */
        unsigned long long on_cpu = 0, waited = 0;
        if (fscanf(f, "%llu %llu", &on_cpu, &waited) == 2) {
            sum += (int64_t)waited;
            seen++;
        }
        fclose(f);
    }
    closedir(d);
    return seen ? sum : -1;
}

/* Host steal time in seconds (all CPUs), 0 where /proc/stat has none. */
static double steal_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0.0;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    return got == 8 && hz > 0 ? (double)v[7] / (double)hz : 0.0;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long involuntary_switches(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_nivcsw : 0;
}

void mb_meas_contention_begin(mb_meas_contention *s)
{
    memset(s, 0, sizeof *s);
    s->run_delay_ns = run_delay_ns();
    s->steal_s = steal_s();
    s->nivcsw = involuntary_switches();
    s->cpu_s = process_cpu_s();
}

int mb_meas_contention_end(mb_meas_contention *s, double wall_s, int threads, double frac)
{
    double cpu = process_cpu_s();
    long nivcsw = involuntary_switches();
    double steal = steal_s();
    int64_t delay = run_delay_ns();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    if (cpus < 1) cpus = 1;
    s->cpu_s = cpu - s->cpu_s;
    s->nivcsw = nivcsw - s->nivcsw;
    /* steal is the whole host's; this process's share is its threads' */
    s->steal_s = (steal - s->steal_s) * (threads < cpus ? (double)threads / (double)cpus : 1.0);
    s->have_schedstat = delay >= 0 && s->run_delay_ns >= 0;
    s->waited_s = s->have_schedstat ? 1e-9 * (double)(delay - s->run_delay_ns) : 0.0;
    s->wall_s = wall_s;
    if (frac <= 0) frac = MB_MEAS_CONTENTION_FRAC;
    if (s->have_schedstat) return s->waited_s + s->steal_s > frac * wall_s;
    /* without schedstat: a preemption per 10 ms of sample is more than the
     * occasional kernel thread of an idle machine */
    return s->nivcsw > 1 + (long)(wall_s / 0.010) || s->steal_s > frac * wall_s;
}

int mb_meas_row_noisy(const mb_meas_record *r)
{
    return MB_MEAS_NOISY(r->contended, r->reps);
}
