/* measure_stats.c — sample statistics and the stop rule against hand-computed
 * values, CSV rows against the column contract, model columns against
 * mb_estimate_plan, and one small CPU run through the protocol. */
#include "calibrate.h"
#include "mb_test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void stats(void)
{
    /* 1..10: median 5.5, p90 = 9.1 (linear), mean 5.5, sd = sqrt(55/6) */
    double s[10] = {3, 1, 4, 10, 5, 9, 2, 6, 8, 7};
    mb_meas_stats st;
    mb_meas_stats_compute(s, 10, &st);
    CHECK_EQ_I64(st.n, 10);
    CHECK_NEAR(st.median_s, 5.5, 1e-12);
    CHECK_NEAR(st.min_s, 1.0, 1e-12);
    CHECK_NEAR(st.p90_s, 9.1, 1e-12);
    CHECK_NEAR(st.cv, sqrt(55.0 / 6.0) / 5.5, 1e-12);
    CHECK(s[0] == 3 && s[3] == 10); /* input untouched */
    double one = 2.0;
    mb_meas_stats_compute(&one, 1, &st);
    CHECK(st.median_s == 2.0 && st.p90_s == 2.0 && st.cv == 0.0);

    mb_meas_config c;
    mb_meas_config_default(&c);
    double flat[20];
    for (int i = 0; i < 20; i++) flat[i] = 1.0 + 1e-4 * (i % 2);
    CHECK(!mb_meas_should_stop(&c, flat, 9, 100.0));   /* never under 10 samples */
    CHECK(mb_meas_should_stop(&c, flat, 10, 1.0));     /* quiet and long enough */
    CHECK(!mb_meas_should_stop(&c, flat, 10, 0.01));   /* quiet but too short */
    double noisy[20];
    for (int i = 0; i < 20; i++) noisy[i] = 1.0 + 0.5 * (i % 2);
    CHECK(!mb_meas_should_stop(&c, noisy, 12, 1.0));   /* noisy: keep sampling */
    CHECK(mb_meas_should_stop(&c, noisy, 12, 11.0));   /* until the timeout */
    c.max_reps = 12;
    CHECK(mb_meas_should_stop(&c, noisy, 12, 1.0));    /* or max_reps */
}

/* A built-in variant's plan and the H100's spec (the model device of these
 * tests); *g and *p are the caller's to free. */
static void lecture_plan(const char *variant, mb_dtype dt, mb_plan_kind kind, mb_graph **g,
                         mb_plan **p, mb_device *dev)
{
    mb_err err;
    *g = NULL;
    *p = NULL;
    CHECK(mb_variant_load(variant, dt, g, &err) == MB_OK);
    CHECK(mb_plan_build(*g, kind, p, &err) == MB_OK);
    CHECK(mb_device_find("h100-sxm", dev, &err) == MB_OK);
}

static void csv_and_records(void)
{
    mb_err err;
    mb_graph *g;
    mb_plan *p;
    mb_device dev;
    lecture_plan("sin2_plus_cos2", MB_BF16, MB_PLAN_EAGER, &g, &p, &dev);
    mb_meas_record row, pk[8];
    CHECK(p->n_kernels <= 8);
    int64_t n = (int64_t)1 << 24;
    CHECK(mb_meas_record_init(&row, pk, g->name, p, n, &dev, &err) == MB_OK);
    mb_estimate est;
    CHECK(mb_estimate_plan(p, n, &dev, &est, &err) == MB_OK);
    CHECK_EQ_I64(row.read_bytes, est.total.read_bytes);
    CHECK_EQ_I64(row.write_bytes, est.total.write_bytes);
    CHECK_EQ_I64(row.read_bytes, 6 * 2 * n); /* the lecture's 6n reads, bf16 */
    CHECK_EQ_I64(row.model_dram_write_bytes, est.total.dram_write_bytes);
    CHECK_NEAR(row.model_time_s, est.total.time_s, 1e-12);
    CHECK_EQ_I64(pk[0].read_bytes, est.per_kernel[0].read_bytes);
    CHECK(!strcmp(pk[0].kernel, p->kernels[0].name));
    CHECK(!strcmp(row.dtype, "bf16") && !strcmp(row.plan, "eager"));
    CHECK_EQ_I64(row.dram_read_bytes, -1);
    mb_estimate_free(&est);

    snprintf(row.device, sizeof row.device, "CPU, \"quoted\"");
    snprintf(row.backend, sizeof row.backend, "cpu");
    snprintf(row.counters, sizeof row.counters, "none-cpu");
    row.reps = 10;
    row.time_s_median = 0.5;
    row.verified = 1;
    row.max_rel_err = 1e-7;
    FILE *f = tmpfile();
    CHECK(f != NULL);
    mb_meas_csv_header(f, 0);
    mb_meas_csv_row(f, &row, 0, NULL);
    rewind(f);
    char head[1024], line[1024];
    CHECK(fgets(head, sizeof head, f) != NULL);
    CHECK(fgets(line, sizeof line, f) != NULL);
    fclose(f);
    CHECK(!strcmp(head, "device,backend,variant,plan,dtype,n,kernels,reps,time_s_median,"
                        "time_s_min,time_s_p90,time_cv,model_time_s,read_bytes,write_bytes,"
                        "model_dram_read_bytes,model_dram_write_bytes,dram_read_bytes,"
                        "dram_write_bytes,counters,max_rel_err,verified,contended,host_copy_gbs,"
                        "host_copy_ratio,host_op_ratio,model_host_time_s,time_s_lower_mode,"
                        "time_s_upper_mode,upper_mode_share,count_err,count_check,accuracy,variant_text,"
                        "variant_expr,device_spec,provenance,calibration,shape,dims\n"));
    const char *want = "\"CPU, \"\"quoted\"\"\",cpu,sin2_plus_cos2,eager,bf16,16777216,5,10,0.5,";
    CHECK(!strncmp(line, want, strlen(want)));
    /* empty measured dram columns, then counters, error, verified, and an
     * empty contended (not watched), no host reference, no model at its
     * rates, one mode, no count to judge, no accuracy verdict, no texts */
    CHECK(strstr(line, ",,none-cpu,1e-07,1,,,,,,,,,,,,,,,,,,\n") != NULL); /* no calibration, 1-D: no shape, no dims */
    /* 40 columns: 39 commas outside the quoted field (no texts given: empty; shape, dims last) */
    int commas = 0, inq = 0;
    for (const char *q = line; *q; q++) {
        if (*q == '"') inq = !inq;
        else if (*q == ',' && !inq) commas++;
    }
    CHECK_EQ_I64(commas, 39);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* The model at the host's rates: bandwidths times the row's copy ratio, op
 * rates and peaks times its op ratio; nothing without both ratios. */
static void host_model(void)
{
    mb_err err;
    mb_graph *g;
    mb_plan *p;
    mb_device dev;
    lecture_plan("sin2_plus_cos2", MB_F32, MB_PLAN_FUSED, &g, &p, &dev);
    mb_meas_record row, pk[2];
    int64_t n = (int64_t)1 << 24;
    CHECK(mb_meas_record_init(&row, pk, g->name, p, n, &dev, &err) == MB_OK);
    CHECK(mb_meas_record_host_model(&row, pk, p, n, &dev, &err) == MB_OK);
    CHECK(isnan(row.model_host_time_s) && isnan(pk[0].model_host_time_s)); /* no reference */
    row.host_copy_ratio = 0.5;
    CHECK(mb_meas_record_host_model(&row, pk, p, n, &dev, &err) == MB_OK);
    CHECK(isnan(row.model_host_time_s)); /* no op ratio */

    /* memory-bound on an H100: half the bandwidth, twice the memory time */
    mb_estimate e;
    CHECK(mb_estimate_plan(p, n, &dev, &e, &err) == MB_OK);
    CHECK(e.total.mem_s > e.total.compute_s && dev.serial_fraction == 0);
    row.host_op_ratio = 1;
    CHECK(mb_meas_record_host_model(&row, pk, p, n, &dev, &err) == MB_OK);
    CHECK_NEAR(row.model_host_time_s, e.total.launch_s + 2 * e.total.mem_s, 1e-9);
    CHECK_NEAR(pk[0].model_host_time_s, row.model_host_time_s, 1e-12);
    CHECK_NEAR(row.model_time_s, e.total.time_s, 1e-12); /* the model column as it was */
    mb_estimate_free(&e);

    /* compute-bound (a slow device): a quarter of the op rate, four times the
     * compute time and the launch overhead; the bandwidth ratio changes nothing */
    dev.fp32_tflops = 1e-3;
    dev.sfu_tops = 1e-4;
    CHECK(mb_estimate_plan(p, n, &dev, &e, &err) == MB_OK);
    CHECK(e.total.compute_s > 10 * e.total.mem_s);
    row.host_copy_ratio = 1.2;
    row.host_op_ratio = 0.25;
    CHECK(mb_meas_record_host_model(&row, pk, p, n, &dev, &err) == MB_OK);
    CHECK_NEAR(row.model_host_time_s, 4 * e.total.launch_s + 4 * e.total.compute_s, 1e-9);
    mb_estimate_free(&e);

    /* measured op rates scale too */
    dev.op_geps[MB_OP_SIN] = dev.op_geps[MB_OP_COS] = dev.op_geps[MB_OP_MUL] = 1e-3;
    dev.op_geps[MB_OP_ADD] = dev.op_geps[MB_OP_POW] = 1e-3;
    mb_device slow;
    mb_device_at_rates(&dev, 1, 0.5, &slow);
    CHECK_NEAR(slow.op_geps[MB_OP_SIN], 0.5e-3, 1e-15);
    CHECK_NEAR(slow.launch_overhead_us, 2 * dev.launch_overhead_us, 1e-15);
    dev.cache_bandwidth_gbs = 100;
    mb_device_at_rates(&dev, 0.25, 0.5, &slow);
    CHECK_NEAR(slow.cache_bandwidth_gbs, 50, 1e-15); /* the cores' side */
    CHECK_NEAR(slow.mem_bandwidth_gbs, 0.25 * dev.mem_bandwidth_gbs, 1e-15);
    dev.cache_bandwidth_gbs = 0;
    CHECK(mb_estimate_plan(p, n, &dev, &e, &err) == MB_OK);
    row.host_copy_ratio = 1;
    row.host_op_ratio = 0.5;
    CHECK(mb_meas_record_host_model(&row, pk, p, n, &dev, &err) == MB_OK);
    CHECK_NEAR(row.model_host_time_s, 2 * e.total.launch_s + 2 * e.total.compute_s, 1e-6);
    mb_estimate_free(&e);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* One small run through the CPU protocol: verified, sane statistics. */
static void small_cpu_run(void)
{
    mb_err err;
    mb_graph *g;
    mb_plan *p;
    mb_device dev;
    lecture_plan("sigmoid3", MB_F32, MB_PLAN_RECOMPUTE, &g, &p, &dev);
    mb_meas_config c;
    mb_meas_config_default(&c);
    c.cold = 1;
    c.llc_bytes = 1 << 20; /* small flush: a fast test */
    c.timeout_s = 2;
    mb_meas_record row, pk[4];
    CHECK(mb_meas_record_init(&row, pk, g->name, p, 1 << 14, &dev, &err) == MB_OK);
    char why[256];
    CHECK(mb_meas_cpu_run(p, 1 << 14, &c, &row, pk, why, sizeof why, &err) == MB_OK);
    if (!row.verified) fprintf(stderr, "not verified: %s\n", why);
    CHECK(row.verified);
    CHECK(row.reps >= 10);
    CHECK(row.time_s_min > 0 && row.time_s_min <= row.time_s_median &&
          row.time_s_median <= row.time_s_p90);
    CHECK(!strcmp(row.counters, "none-cpu") && !strcmp(row.backend, "cpu"));
    CHECK(row.contended >= 0 && row.contended <= row.reps); /* watched */
    CHECK(row.max_rel_err < 1e-4);
    double ksum = 0;
    for (int k = 0; k < p->n_kernels; k++) ksum += pk[k].time_s_median;
    CHECK(ksum > 0 && ksum < 3 * row.time_s_p90);
    mb_plan_free(p);
    mb_graph_free(g);
}

/* The gradient of sin^2 + cos^2 is zero in exact arithmetic: f32 leaves
 * rounding residue of the cancelled terms (~1e-7), which the check judges
 * against those terms, not against the zero (every plan verifies). */
static void zero_result_verified(void)
{
    char path[] = "/tmp/mb_s2c2b_XXXXXX.mb";
    int fd = mkstemps(path, 3);
    CHECK(fd >= 0);
    if (fd < 0) return;
    FILE *f = fdopen(fd, "w");
    fputs("name s2c2b\ninput x\ny = sin(x)**2 + cos(x)**2\noutput y\nbackward\n", f);
    fclose(f);
    mb_err err;
    mb_graph *g = NULL;
    CHECK(mb_variant_load(path, MB_F32, &g, &err) == MB_OK);
    mb_device dev;
    CHECK(mb_device_find("h100-sxm", &dev, &err) == MB_OK);
    mb_meas_config c;
    mb_meas_config_default(&c);
    c.cold = 0;
    c.timeout_s = 0.2;
    const mb_plan_kind kinds[] = {MB_PLAN_EAGER, MB_PLAN_STORE, MB_PLAN_RECOMPUTE};
    for (int k = 0; g && k < 3; k++) {
        mb_plan *p = NULL;
        CHECK(mb_plan_build(g, kinds[k], &p, &err) == MB_OK);
        if (!p) continue;
        mb_meas_record row;
        char why[256] = "";
        CHECK(mb_meas_record_init(&row, NULL, g->name, p, 1 << 12, &dev, &err) == MB_OK);
        CHECK(mb_meas_cpu_run(p, 1 << 12, &c, &row, NULL, why, sizeof why, &err) == MB_OK);
        if (!row.verified) fprintf(stderr, "%s: %s\n", mb_plan_name(kinds[k]), why);
        CHECK(row.verified && row.max_rel_err < 1e-5);
        mb_plan_free(p);
    }
    mb_graph_free(g);
    unlink(path);
}

/* the cache knee from a warm copy bandwidth curve (1 MiB doubling) */
static void knee(void)
{
    /* the 2-vCPU EPYC guest, 3-sweep medians: 32 MiB (index 5) is its L3;
     * the 64 MiB point, 1.52x DRAM, still hits in part (a 1.5x margin took
     * it) */
    const double guest[] = {277.0, 199.5, 176.5, 156.4, 142.3, 108.5, 79.0, 57.1, 51.5, 51.9};
    CHECK_EQ_I64(mb_cal_knee_pick(guest, 10), 5);
    /* another sweep of it: 32 MiB at 1.8x DRAM */
    const double guest2[] = {264.8, 187.8, 159.0, 150.8, 142.6, 97.1, 65.5, 47.9, 45.2, 54.0};
    CHECK_EQ_I64(mb_cal_knee_pick(guest2, 10), 5);
    /* no level 1.5x faster than DRAM: no knee */
    const double flat[] = {60, 58, 57, 55, 55, 54, 50};
    CHECK_EQ_I64(mb_cal_knee_pick(flat, 7), -1);
    CHECK_EQ_I64(mb_cal_knee_pick(flat, 1), -1);
    /* a cache plateau that ends at 8 MiB (index 3) */
    const double desk[] = {300, 250, 200, 180, 60, 42, 40};
    CHECK_EQ_I64(mb_cal_knee_pick(desk, 7), 3);
    CHECK(mb_cal_retained_bytes(desk, 7, -1) == 0); /* no knee: no share */
    CHECK(mb_cal_retained_bytes(desk, 7, 5) == 0);  /* no size between the knee and DRAM */
}

/* What the cache still serves above its knee, recovered from a sweep made
 * with a known share: a 64 MiB knee (index 6), a 140 GB/s plateau, DRAM 45
 * GB/s at 512 MiB, and a cache that keeps 32 MiB of a larger stream (a
 * quarter of 128 MiB, an eighth of 256 MiB); then the guest's own sweep,
 * whose 64 MiB point ran 1.52x DRAM: a share there, so a retained size
 * between a quarter and all of the 32 MiB knee. */
static void retained(void)
{
    double gbs[10];
    const double plateau = 140, dram = 45, R = 32.0 * 1048576;
    for (int i = 0; i < 10; i++) {
        double w = (double)((int64_t)1 << (20 + i)), h = i <= 6 ? 1 : i == 9 ? 0 : R / w;
        gbs[i] = i == 6 ? 80 : 1 / ((1 - h) / dram + h / plateau);
    }
    CHECK_EQ_I64(mb_cal_knee_pick(gbs, 10), 6);
    CHECK_NEAR(mb_cal_retained_bytes(gbs, 10, 6), R, 1e-6 * R);
    const double guest[] = {277.0, 199.5, 176.5, 156.4, 142.3, 108.5, 79.0, 57.1, 51.5, 51.9};
    double r = mb_cal_retained_bytes(guest, 10, 5);
    CHECK(r > 8.0 * 1048576 && r < 32.0 * 1048576);
}

/* a round of the overlap fit: memory 4 ms, compute 6 ms at the calibrated
 * op rate; a kernel of 8 ms hides all but 2 of the 4 ms */
static void overlap_beta(void)
{
    CHECK_NEAR(mb_cal_overlap_beta(8e-3, 0, 4e-3, 6e-3, 0, 0), 0.5, 1e-12);
    CHECK_NEAR(mb_cal_overlap_beta(8e-3, 0, 4e-3, 6e-3, 5, 5), 0.5, 1e-12);
    /* the ops ran at 0.75 of their calibrated rate beside it: compute 8 ms,
     * the kernel hid all of the memory (unscaled: 0.5) */
    CHECK_NEAR(mb_cal_overlap_beta(8e-3, 0, 4e-3, 6e-3, 4, 3), 0, 1e-12);
    /* they ran 1.5x faster: compute 4 ms, nothing hidden (unscaled: 0.5) */
    CHECK_NEAR(mb_cal_overlap_beta(8e-3, 0, 4e-3, 6e-3, 4, 6), 1, 1e-12);
    /* the pass's own time is not overlap; clamped to [0, 1] */
    CHECK_NEAR(mb_cal_overlap_beta(9e-3, 1e-3, 4e-3, 6e-3, 0, 0), 0.5, 1e-12);
    CHECK_NEAR(mb_cal_overlap_beta(20e-3, 0, 4e-3, 6e-3, 0, 0), 1, 1e-12);
    CHECK_NEAR(mb_cal_overlap_beta(5e-3, 0, 4e-3, 6e-3, 0, 0), 0, 1e-12);
}

/* Two modes: tight clusters far apart are; a spread of one mode, a small
 * cluster of outliers and too few samples are not. */
static void modes(void)
{
    mb_meas_stats st;
    double s[200];
    for (int i = 0; i < 12; i++) s[i] = (i % 2 ? 15.0 : 11.0) + 0.05 * (i / 2); /* 6 and 6 */
    mb_meas_stats_compute(s, 12, &st);
    CHECK_NEAR(st.lower_mode_s, 11.125, 1e-9);
    CHECK_NEAR(st.upper_mode_s, 15.125, 1e-9);
    CHECK_NEAR(st.upper_mode_share, 0.5, 1e-12);
    s[0] = 19.0; /* 5 low, 7 high: still two */
    mb_meas_stats_compute(s, 12, &st);
    CHECK_NEAR(st.upper_mode_share, 7.0 / 12.0, 1e-12);
    mb_meas_stats_compute(s, 9, &st); /* under 10 samples */
    CHECK(isnan(st.upper_mode_s) && st.upper_mode_share == 0);
    for (int i = 0; i < 10; i++) s[i] = 1 + i; /* 1..10: one spread */
    mb_meas_stats_compute(s, 10, &st);
    CHECK(isnan(st.lower_mode_s) && isnan(st.upper_mode_s) && st.upper_mode_share == 0);
    for (int i = 0; i < 20; i++) s[i] = i < 18 ? 10.0 + 0.01 * i : 20.0; /* 2 outliers */
    mb_meas_stats_compute(s, 20, &st);
    CHECK(isnan(st.upper_mode_s));
    /* one mode, CV 20%: 200 normal samples (Box-Muller over a fixed LCG) */
    unsigned long long x = 12345;
    for (int i = 0; i < 200; i += 2) {
        double u[2];
        for (int k = 0; k < 2; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            u[k] = ((double)(x >> 11) + 0.5) * 0x1.0p-53;
        }
        double r = sqrt(-2 * log(u[0]));
        s[i] = 12 + 2.4 * r * cos(6.283185307179586 * u[1]);
        s[i + 1] = 12 + 2.4 * r * sin(6.283185307179586 * u[1]);
    }
    mb_meas_stats_compute(s, 200, &st);
    CHECK(st.cv > 0.15 && st.cv < 0.25);
    CHECK(isnan(st.upper_mode_s) && st.upper_mode_share == 0);
}

int main(void)
{
    modes();
    knee();
    retained();
    overlap_beta();
    stats();
    csv_and_records();
    host_model();
    small_cpu_run();
    zero_result_verified();
    return mb_test_done();
}
