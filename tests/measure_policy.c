/* measure_policy.c — measure's policy around the rows, without running any:
 * memory admission refuses a row that cannot fit (naming it and the
 * figures) and admits one that can; what is said of a measured row
 * (contended, drifted, two modes, above the calibrated roof, cache-resident)
 * and the flags it returns; the size and ratio formats the messages use. */
#include "mb_test.h"
#include "calibrate.h"
#include "mb_test_calib.h"

#include <math.h>
#include <string.h>

static char notes[8192];

static void collect(void *ctx, const char *level, const char *msg)
{
    (void)ctx;
    size_t used = strlen(notes);
    snprintf(notes + used, sizeof notes - used, "%s: %s\n", level, msg);
}

static void test_admission(void)
{
    mb_graph *g = NULL;
    mb_err e;
    mb_meas_config c;
    mb_meas_config_default(&c);
    c.note = collect;
    CHECK(mb_parse_expr("y = x * 2", MB_F32, &g, &e) == MB_OK);
    if (!g) return;
    mb_plan *p = NULL;
    CHECK(mb_plan_build(g, MB_PLAN_EAGER, &p, &e) == MB_OK);
    int64_t n = (int64_t)1 << 20;
    int64_t need = mb_meas_host_need_bytes(p, n, &c);
    /* at least the input and the output, and the flush (2x the cache) */
    CHECK(need >= 2 * 4 * n + 2 * mb_meas_llc_bytes(&c));
    mb_plan_free(p);
    mb_meas_job jobs[2] = {{g, MB_PLAN_EAGER, n, need, 0}, {g, MB_PLAN_EAGER, n << 4, 16 * need, 0}};
    CHECK(mb_meas_admit_jobs(MB_MEAS_CPU, &c, jobs, 2, 64 * need, &e) == MB_OK);
    CHECK(mb_meas_admit_jobs(MB_MEAS_CPU, &c, jobs, 2, 0, &e) == MB_OK); /* unknown: admitted */
    CHECK(mb_meas_admit_jobs(MB_MEAS_CPU, &c, jobs, 2, 4 * need, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, " eager f32 at n = 2^24 needs ") && strstr(e.msg, "use a smaller --sizes"));
    mb_graph_free(g);
}

static mb_meas_record row_like(void)
{
    mb_meas_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.variant, sizeof r.variant, "copy");
    snprintf(r.plan, sizeof r.plan, "eager");
    snprintf(r.dtype, sizeof r.dtype, "f32");
    r.n = (int64_t)1 << 26;
    r.reps = 20;
    r.time_s_median = r.time_s_min = 0.1;
    r.read_bytes = r.write_bytes = 4 * r.n; /* 5.4 GB/s */
    r.host_copy_ratio = r.host_op_ratio = r.model_host_time_s = NAN;
    r.time_s_lower_mode = r.time_s_upper_mode = r.upper_mode_share = NAN;
    return r;
}

static void test_row_warnings(void)
{
    mb_meas_config c;
    mb_meas_config_default(&c);
    c.note = collect;
    mb_cal_result cal;
    static mb_device dev;
    mb_test_calib(&cal, 10); /* 10 GB/s calibrated */
    mb_cal_to_device(&cal, "measure_policy", &dev);
    int64_t llc = 8 << 20;

    mb_meas_record r = row_like(); /* a quiet row: nothing said */
    notes[0] = '\0';
    CHECK(mb_meas_row_warn(&r, &dev, MB_MEAS_CPU, llc, 0, &c) == 0);
    CHECK(notes[0] == '\0');

    r.contended = 10; /* half its samples: noisy */
    notes[0] = '\0';
    CHECK(mb_meas_row_warn(&r, &dev, MB_MEAS_CPU, llc, 0, &c) == MB_MEAS_ROW_NOISY);
    CHECK(strstr(notes, "warning: copy eager f32 n = 2^26: 10 of 20 samples contended") != NULL);

    r = row_like(); /* the host ran at 60% of the calibrated copy */
    r.host_copy_ratio = 0.6;
    r.model_host_time_s = 0.11;
    notes[0] = '\0';
    CHECK(mb_meas_row_warn(&r, &dev, MB_MEAS_CPU, llc, 0, &c) == MB_MEAS_ROW_DRIFTED);
    CHECK(strstr(notes, "the host ran at copy 60% of the calibrated copy bandwidth") != NULL);
    CHECK(strstr(notes, "at those rates measured / model - 1 is -9%") != NULL);

    r = row_like(); /* two modes */
    r.time_s_lower_mode = 0.1;
    r.time_s_upper_mode = 0.13;
    r.upper_mode_share = 0.4;
    notes[0] = '\0';
    CHECK(mb_meas_row_warn(&r, &dev, MB_MEAS_CPU, llc, 0, &c) == MB_MEAS_ROW_TWO_MODES);
    CHECK(strstr(notes, "two modes, 100.00 ms and 130.00 ms (40% of them)") != NULL);

    r = row_like(); /* 5.4 GB/s against 1 GB/s calibrated: above the roof, a note even when quiet */
    mb_test_calib(&cal, 1);
    mb_cal_to_device(&cal, "measure_policy", &dev);
    c.quiet = 1;
    notes[0] = '\0';
    mb_meas_row_warn(&r, &dev, MB_MEAS_CPU, llc, 0, &c);
    CHECK(strstr(notes, "note: copy eager f32 n = 2^26: 5.4 GB/s is above the calibrated 1.0 GB/s") != NULL);
    notes[0] = '\0';
    mb_meas_row_warn(&r, &dev, MB_MEAS_CUDA, llc, 0, &c); /* a GPU row: not this rule */
    CHECK(notes[0] == '\0');

    r = row_like(); /* the first row in the cache: a note, dropped when quiet */
    r.n = 1 << 10;
    r.read_bytes = r.write_bytes = 4 << 10;
    notes[0] = '\0';
    mb_meas_row_warn(&r, &dev, MB_MEAS_CPU, llc, 1, &c);
    CHECK(notes[0] == '\0');
    c.quiet = 0;
    mb_meas_row_warn(&r, &dev, MB_MEAS_CPU, llc, 1, &c);
    CHECK(strstr(notes, "n = 2^10 is below 4x the last-level cache (8 MiB)") != NULL);
}

/* A calibrated CPU spec sizes the flush; a GPU spec, the CUDA backend or a
 * size already set do not. */
static void test_config_for_device(void)
{
    mb_meas_config c;
    mb_cal_result cal;
    static mb_device cpu, gpu;
    mb_err e;
    mb_test_calib(&cal, 10); /* an 8 MiB cache */
    mb_cal_to_device(&cal, "measure_policy", &cpu);
    CHECK(mb_device_find("h100-sxm", &gpu, &e) == MB_OK);
    mb_meas_config_default(&c);
    mb_meas_config_for_device(&c, MB_MEAS_CPU, &cpu);
    CHECK_EQ_I64(c.llc_bytes, 8 << 20);
    CHECK_EQ_I64(mb_meas_llc_bytes(&c), 8 << 20);
    mb_meas_config_default(&c);
    mb_meas_config_for_device(&c, MB_MEAS_CUDA, &cpu);
    CHECK(c.llc_bytes <= 0);
    mb_meas_config_for_device(&c, MB_MEAS_CPU, &gpu);
    CHECK(c.llc_bytes <= 0);
    c.llc_bytes = 3 << 20;
    mb_meas_config_for_device(&c, MB_MEAS_CPU, &cpu);
    CHECK_EQ_I64(c.llc_bytes, 3 << 20);
}

static void test_formats(void)
{
    char buf[64];
    CHECK(!strcmp(mb_meas_fmt_n((int64_t)1 << 24, buf, sizeof buf), "2^24"));
    CHECK(!strcmp(mb_meas_fmt_n(1000, buf, sizeof buf), "1000"));
    CHECK(!strcmp(mb_meas_fmt_n(1, buf, sizeof buf), "2^0"));
    mb_meas_record r = row_like();
    r.host_copy_ratio = 0.78;
    r.host_op_ratio = 0.65;
    CHECK(!strcmp(mb_meas_host_ratios(&r, buf, sizeof buf), "copy 78%, ops 65%"));
    r.host_copy_ratio = NAN;
    CHECK(!strcmp(mb_meas_host_ratios(&r, buf, sizeof buf), "ops 65%"));
    int exec = -1;
    mb_err e;
    CHECK(mb_meas_exec_parse("blocked", &exec, &e) == MB_OK && !strcmp(mb_meas_exec_name(exec), "blocked"));
    CHECK(mb_meas_exec_parse("fast", &exec, &e) == MB_EINPUT);
    CHECK(!strcmp(e.msg, "unknown executor 'fast' (executors: auto, opwise, blocked)"));
}

int main(void)
{
    test_admission();
    test_row_warnings();
    test_config_for_device();
    test_formats();
    return mb_test_done();
}
