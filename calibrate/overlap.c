/* overlap.c — calibrate's overlap probes: cold runs of y = copy(x),
 * y = sin(x), y = x * sin(x) (compiled), y = log_softmax(x, -1) (a compiled
 * row kernel in one pass) and y = a + b + c + d against the model's estimate
 * of each, in interleaved rounds, giving serial_fraction (how much of the
 * shorter of memory and compute does not hide behind the longer), its
 * compiled and row-kernel forms, and the read-stream penalty or gain. Does
 * not measure bandwidth or op rates (streams.c, ops.c). */
#include "cal_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A probe kernel: one plan through the executor, cold, with the model's
 * estimate of it on the calibration so far. */
typedef struct probe {
    mb_graph *g;
    mb_plan *p;
    mb_kern_tensors t;
    int have_t;
    mb_estimate est;
} probe;

static void probe_free(probe *pb)
{
    if (pb->have_t) mb_kern_tensors_free(&pb->t);
    mb_estimate_free(&pb->est);
    mb_plan_free(pb->p);
    mb_graph_free(pb->g);
    memset(pb, 0, sizeof *pb);
}

/* At shape s: rank 1 (n elements) or rank 2 (rows x cols, the row executor). */
static int probe_init(probe *pb, const char *expr, mb_plan_kind k, mb_shape s, const mb_device *d,
                      mb_err *err)
{
    memset(pb, 0, sizeof *pb);
    int rc = mb_parse_expr(expr, MB_F32, &pb->g, err);
    if (!rc) rc = mb_graph_set_rank(pb->g, s.rank, err);
    if (!rc) rc = mb_plan_build(pb->g, k, &pb->p, err);
    if (!rc) rc = mb_estimate_plan_shape(pb->p, s, d, &pb->est, err);
    if (!rc && (rc = mb_kern_tensors_alloc_shape(pb->p, s, 0, &pb->t, err)) == MB_OK) pb->have_t = 1;
    if (!rc) rc = mb_kern_run_plan(&pb->t, MB_KERN_EXEC_AUTO, err); /* warm-up, page faults */
    if (rc) probe_free(pb);
    return rc;
}

/* One cold run of the probe (the sampler's fn; the cache flush is its before). */
typedef struct probe_run {
    probe *pb;
    int rc;
    mb_err *err;
} probe_run;

static void probe_run_once(void *p)
{
    probe_run *r = p;
    if (!r->rc) r->rc = mb_kern_run_plan(&r->pb->t, MB_KERN_EXEC_AUTO, r->err);
}

static void probe_flush(void *fl) { mb_meas_flush_cpu(fl); }

/* Median of reps cold runs of the probe. */
static int probe_time(probe *pb, mb_meas_flusher *fl, int reps, double *time_s, mb_err *err)
{
    double s[16];
    if (reps > 16) reps = 16;
    probe_run run = {pb, MB_OK, err};
    /* quick runs (one rep) keep what they get: a retry costs a flush */
    mb_meas_sampler sm = {probe_run_once, &run, probe_flush, fl, 1, mb_kern_threads(),
                          reps == 1 ? 0 : CAL_RETRIES};
    for (int r = 0; r < reps; r++) {
        s[r] = mb_meas_sample_s(&sm, NULL, NULL);
        if (run.rc) return run.rc;
    }
    mb_meas_stats st;
    mb_meas_stats_compute(s, reps, &st);
    *time_s = st.median_s;
    return MB_OK;
}

/* 1 when the probe's one kernel runs as compiled code. */
static int runs_compiled(probe *pb)
{
    mb_kern_eval_info info;
    mb_err e;
    return pb->p->n_kernels == 1 && !mb_kern_kernel_info(&pb->t, 0, &info, &e) && info.compiled;
}

static double clamp01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

double mb_cal_overlap_beta(double t_s, double launch_s, double mem_s, double compute_s,
                            double ref_geps, double now_geps)
{
    if (ref_geps > 0 && now_geps > 0) compute_s *= ref_geps / now_geps;
    double lo = fmin(mem_s, compute_s), hi = fmax(mem_s, compute_s);
    return lo > 0 ? clamp01((t_s - launch_s - hi) / lo) : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rounds of the probes, interleaved so that the machine's drift (shared
 * hosts swing memory bandwidth by tens of percent over minutes) cancels in
 * each round's ratios; the figures are the medians over rounds. */
#define OVERLAP_ROUNDS 9
/* sin probes (~1 ms each, 4-7% apart from one to the next here) before and
 * after each round's sin kernel */
#define OVERLAP_SIN_PROBES 3
/* the row probes' row lengths, f32: 4096 (16 KiB) or half the L1 where that
 * is smaller, and twice the L1 (a 48 KiB L1: 24576 elements, 96 KiB) */
#define ROWS_IN_L1_COLS 4096

/* Sorts v (n values) and gives its median and quartiles. */
static void median_quartiles(double *v, int n, double *med, double *q1, double *q3)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    *med = v[n / 2];
    *q1 = v[n / 4];
    *q3 = v[(3 * n) / 4];
}

/* The row probes' shapes: [0] rows in the L1, [1] beyond it (cols 0 when
 * the L1 is unknown or the rows would not fit n). */
static void row_probe_shapes(int64_t n, int64_t l1_bytes, mb_shape s[2])
{
    int64_t in = ROWS_IN_L1_COLS, out = l1_bytes > 0 ? 2 * l1_bytes / (int64_t)sizeof(float) : 0;
    while (l1_bytes > 0 && in > 256 && in * (int64_t)sizeof(float) > l1_bytes / 2) in /= 2;
    s[0] = (mb_shape){2, n / in, n >= in ? in : 0, 0};
    s[1] = (mb_shape){2, out > 0 ? n / out : 0, out > 0 && n >= out ? out : 0, 0};
}

int mb_cal_overlap(mb_cal_result *c, int64_t n, int reps, mb_err *err)
{
    mb_device d;
    c->serial_fraction = c->serial_fraction_q1 = c->serial_fraction_q3 = 0;
    c->serial_fraction_compiled = c->serial_fraction_compiled_q1 = c->serial_fraction_compiled_q3 = 0;
    c->has_serial_fraction_compiled = 0;
    c->serial_fraction_rows = c->serial_fraction_rows_q1 = c->serial_fraction_rows_q3 = 0;
    c->serial_fraction_rows_l2 = c->serial_fraction_rows_l2_q1 = c->serial_fraction_rows_l2_q3 = 0;
    c->has_serial_fraction_rows = c->has_serial_fraction_rows_l2 = 0;
    c->read_stream_penalty = c->read_stream_gain = 0;
    mb_cal_to_device(c, NULL, &d);
    probe copy = {0}, sine = {0}, xsin = {0}, rowp[2] = {{0}, {0}}, sum4 = {0};
    mb_meas_flusher fl;
    /* twice the cache, or twice a probe array when that is smaller (it is
     * evicted either way; a reported 508 MiB cache would read 1 GiB a sample) */
    int64_t flush_llc = n * (int64_t)sizeof(float);
    if (reps > 1 && c->llc_bytes < flush_llc) flush_llc = c->llc_bytes;
    int rc = mb_meas_flusher_init(&fl, flush_llc, err);
    if (rc) return rc;
    /* copy: memory only; sin: one read, one write, compute about as long as
     * the memory time (interpreted: one op); x * sin(x): the same compiled;
     * log_softmax over rows in the core's L1 and beyond it (one pass either
     * way): a max, exp(x - max), the sum and x - max - log(sum) on each,
     * about as much compute as memory again, none of the variants `measure`
     * is judged by; a+b+c+d: four read streams, next to no compute */
    const mb_shape s1 = mb_shape_1d(n);
    mb_shape s_rows[2];
    row_probe_shapes(n, c->l1_bytes, s_rows);
    if (!(rc = probe_init(&copy, "y = copy(x)", MB_PLAN_EAGER, s1, &d, err)) &&
        !(rc = probe_init(&sine, "y = sin(x)", MB_PLAN_EAGER, s1, &d, err)) &&
        !(rc = probe_init(&xsin, "y = x * sin(x)", MB_PLAN_FUSED, s1, &d, err)))
        rc = probe_init(&sum4, "y = a + b + c + d", MB_PLAN_FUSED, s1, &d, err);
    for (int i = 0; i < 2 && !rc; i++)
        if (s_rows[i].cols > 0) rc = probe_init(&rowp[i], "y = log_softmax(x, -1)", MB_PLAN_FUSED, s_rows[i], &d, err);
    /* the compiled probes count only when they run compiled, the row ones in one pass */
    int compiled = !rc && runs_compiled(&xsin), row_on[2];
    for (int i = 0; i < 2; i++)
        row_on[i] = !rc && rowp[i].p && runs_compiled(&rowp[i]) && rowp[i].est.per_kernel[0].passes == 1;
    row_on[1] &= row_on[0]; /* the beyond-L1 figure refines the other */
    double beta[OVERLAP_ROUNDS], beta_c[OVERLAP_ROUNDS], beta_r[2][OVERLAP_ROUNDS], gamma[OVERLAP_ROUNDS],
        gain[OVERLAP_ROUNDS];
    int rounds = 0;
    int n_rounds = reps == 1 ? 3 : OVERLAP_ROUNDS;
    for (int r = 0; r < n_rounds && !rc; r++) {
        double t_copy, t_sin, t_xsin = 0, t_row[2] = {0, 0}, t_sum4, sin_geps[2 * OVERLAP_SIN_PROBES] = {0};
        if ((rc = probe_time(&copy, &fl, reps, &t_copy, err))) break;
        for (int i = 0; i < OVERLAP_SIN_PROBES && c->ref_op_geps[0] > 0; i++)
            sin_geps[i] = mb_meas_hostref_op_geps(0);
        if ((rc = probe_time(&sine, &fl, reps, &t_sin, err))) break;
        if (compiled && (rc = probe_time(&xsin, &fl, reps, &t_xsin, err))) break;
        for (int i = 0; i < 2 && !rc; i++)
            if (row_on[i]) rc = probe_time(&rowp[i], &fl, reps, &t_row[i], err);
        if (rc) break;
        for (int i = 0; i < OVERLAP_SIN_PROBES && c->ref_op_geps[0] > 0; i++)
            sin_geps[OVERLAP_SIN_PROBES + i] = mb_meas_hostref_op_geps(0);
        if ((rc = probe_time(&sum4, &fl, reps, &t_sum4, err))) break;
        /* this round's streaming rate, from the copy: 8n bytes */
        double copy_gbs = (double)(copy.est.total.read_bytes + copy.est.total.write_bytes) / t_copy / 1e9;
        const double now_sin_geps = mb_meas_median_rate(sin_geps, 2 * OVERLAP_SIN_PROBES);
        const mb_cost *k = &xsin.est.per_kernel[0];
        double mem_s = (double)(k->read_bytes + k->write_bytes) / (copy_gbs * 1e9);
        if (compiled)
            beta_c[rounds] = mb_cal_overlap_beta(t_xsin, k->launch_s, mem_s, k->compute_s,
                                                  c->ref_op_geps[0], now_sin_geps);
        for (int i = 0; i < 2; i++) {
            if (!row_on[i]) continue;
            k = &rowp[i].est.per_kernel[0];
            mem_s = (double)(k->read_bytes + k->write_bytes) / (copy_gbs * 1e9);
            beta_r[i][rounds] = mb_cal_overlap_beta(t_row[i], k->launch_s, mem_s, k->compute_s,
                                                     c->ref_op_geps[0], now_sin_geps);
        }
        k = &sine.est.per_kernel[0];
        mem_s = (double)(k->read_bytes + k->write_bytes) / (copy_gbs * 1e9);
        beta[rounds] = mb_cal_overlap_beta(t_sin, k->launch_s, mem_s, k->compute_s, c->ref_op_geps[0],
                                            now_sin_geps);
        /* the four-stream kernel's reads against a single read stream, which
         * calibration found to run at read_gbs / copy_gbs of the copy rate */
        k = &sum4.est.per_kernel[0];
        double read1_gbs = copy_gbs * c->read_gbs / c->copy_gbs;
        double read4_s = t_sum4 - k->launch_s - beta[rounds] * k->compute_s;
        double read4_gbs = read4_s > 0 ? (double)k->read_bytes / read4_s / 1e9 : read1_gbs;
        gamma[rounds] = fmax(0, (read1_gbs / read4_gbs - 1) / 3);
        gain[rounds] = fmax(0, (read4_gbs / read1_gbs - 1) / 3);
        rounds++;
    }
    if (!rc && rounds) {
        median_quartiles(beta, rounds, &c->serial_fraction, &c->serial_fraction_q1, &c->serial_fraction_q3);
        if ((c->has_serial_fraction_compiled = compiled))
            median_quartiles(beta_c, rounds, &c->serial_fraction_compiled, &c->serial_fraction_compiled_q1,
                             &c->serial_fraction_compiled_q3);
        if ((c->has_serial_fraction_rows = row_on[0]))
            median_quartiles(beta_r[0], rounds, &c->serial_fraction_rows, &c->serial_fraction_rows_q1,
                             &c->serial_fraction_rows_q3);
        if ((c->has_serial_fraction_rows_l2 = row_on[1]))
            median_quartiles(beta_r[1], rounds, &c->serial_fraction_rows_l2, &c->serial_fraction_rows_l2_q1,
                             &c->serial_fraction_rows_l2_q3);
        qsort(gamma, (size_t)rounds, sizeof gamma[0], cmp_double);
        qsort(gain, (size_t)rounds, sizeof gain[0], cmp_double);
        c->read_stream_penalty = gamma[rounds / 2];
        /* one of the two: the median round's direction */
        c->read_stream_gain = c->read_stream_penalty > 0 ? 0 : gain[rounds / 2];
    }
    probe_free(&copy);
    probe_free(&sine);
    probe_free(&xsin);
    probe_free(&rowp[0]);
    probe_free(&rowp[1]);
    probe_free(&sum4);
    mb_meas_flusher_free(&fl);
    return rc;
}

/* Why the probes cannot be trusted, into why; 0 when they can: a probe
 * with half its samples contended, then mb_cal_implausible. */
