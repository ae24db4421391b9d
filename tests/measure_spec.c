/* measure_spec.c — mb_cal_spec_get, the one entry point measure and
 * calibrate take the model device from: a named spec, the CUDA default,
 * ./local-cpu.ini (trusted, broken, refused), the cached calibration (read,
 * skipped), a calibration now (cached, the host's move since the one it
 * replaced), which source each call says it used, and that the cache folder
 * comes from the request's lookup, not the environment. */
#define _POSIX_C_SOURCE 200809L
#include "mb_test.h"
#include "calibrate.h"
#include "mb_test_calib.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache_dir[256], work_dir[256], notes[16384];

static char *fake_lookup(const char *name)
{
    return !strcmp(name, "MEMBOUND_CACHE_DIR") ? cache_dir : NULL;
}

static void collect(void *ctx, const char *level, const char *msg)
{
    (void)ctx;
    size_t used = strlen(notes);
    snprintf(notes + used, sizeof notes - used, "%s: %s\n", level, msg);
}

static mb_cal_spec_req cpu_req(void)
{
    mb_cal_spec_req r = {.backend = MB_MEAS_CPU, .workdir = 1, .cache_read = 1, .cache_write = 1,
                          .threads = 1, .quick = 1, .command_line = "measure_spec test",
                          .lookup = fake_lookup, .note = collect};
    notes[0] = '\0';
    return r;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_named_and_gpu_default(void)
{
    static mb_device d;
    static mb_cal_spec_used u;
    mb_err e;
    char desc[1400];
    mb_cal_spec_req r = cpu_req();
    r.device = "h100-sxm";
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_GIVEN && !strcmp(u.path, "h100-sxm") && !strcmp(d.name, "h100-sxm"));
    mb_cal_spec_describe(&u, &d, desc, sizeof desc);
    CHECK(!strcmp(desc, "h100-sxm (--device h100-sxm)"));
    r.device = "no-such-device";
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "no-such-device") != NULL);
    r.device = NULL;
    r.backend = MB_MEAS_CUDA; /* no device: the GPU default, whatever the CPU steps say */
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_GPU_DEFAULT && !strcmp(d.name, MB_CAL_SPEC_GPU_DEFAULT_ID));
    mb_cal_spec_describe(&u, &d, desc, sizeof desc);
    CHECK(!strcmp(desc, "h100-sxm (default for cuda)"));
}

/* ./local-cpu.ini: used when trusted, an error when broken, passed over
 * (with a warning) in a folder others can write. */
static void test_workdir(const mb_device *fake)
{
    static mb_device d;
    static mb_cal_spec_used u;
    mb_err e;
    char desc[1400];
    CHECK(chdir(work_dir) == 0);
    CHECK(mb_device_write_ini(fake, "local-cpu.ini", &e) == MB_OK);
    mb_cal_spec_req r = cpu_req();
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_WORKDIR && !strcmp(u.path, "./local-cpu.ini"));
    CHECK_NEAR(d.measured_bandwidth_gbs, fake->measured_bandwidth_gbs, 1e-9);
    mb_cal_spec_describe(&u, &d, desc, sizeof desc);
    CHECK(!strcmp(desc, "local-cpu (./local-cpu.ini)"));
    r.workdir = 0; /* calibrate does not read it: the cache instead */
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK && u.source == MB_CAL_SPEC_CACHED);

    write_text("local-cpu.ini", "[device]\nname = x\nmem_bandwidth_gbs = fast\n");
    r = cpu_req();
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_EINPUT);
    CHECK(strstr(e.msg, "./local-cpu.ini:") == e.msg);

    CHECK(chmod(work_dir, 0777) == 0); /* others can write the folder: not used */
    r = cpu_req();
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_CACHED);
    CHECK(strstr(notes, "warning: ./local-cpu.ini not used") != NULL);
    CHECK(chmod(work_dir, 0700) == 0);
    unlink("local-cpu.ini");
}

/* The cache: read when there, with its path and age; skipped when
 * cache_read is 0 (a calibration instead, cached over it, saying how far
 * the host moved); not written when cache_write is 0. */
static void test_cache(const char *cache_path)
{
    static mb_device d;
    static mb_cal_spec_used u;
    mb_err e;
    char desc[1400];
    CHECK(chdir(work_dir) == 0);
    mb_cal_spec_req r = cpu_req();
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_CACHED && !strcmp(u.path, cache_path));
    CHECK(u.age_s >= 0 && u.age_s < 600);
    CHECK(d.measured_bandwidth_gbs == 1000); /* the fake's figure, not this host's */
    mb_cal_spec_describe(&u, &d, desc, sizeof desc);
    CHECK(strstr(desc, "(cached calibration ") && strstr(desc, cache_path));
    CHECK(strstr(notes, "calibrating") == NULL);

    r.cache_read = 0; /* --recalibrate: measured now, cached over the fake */
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_CALIBRATED && u.cached && !strcmp(u.path, cache_path));
    CHECK(u.calib_s > 0 && u.cal.copy_gbs > 0 && u.cal.copy_gbs < 1000);
    CHECK(strstr(u.moved, "this host moved since its calibration") != NULL);
    CHECK(strstr(notes, "calibration cached as ") != NULL);
    mb_cal_spec_describe(&u, &d, desc, sizeof desc);
    CHECK(strstr(desc, "local-cpu (calibrated in-process, cached as ") == desc);
    static mb_device back;
    double age = -1;
    CHECK(mb_cal_cache_load(cache_path, &back, &age, &e) == MB_OK);
    CHECK_NEAR(back.measured_bandwidth_gbs, d.measured_bandwidth_gbs, 1e-6);

    /* no cache to read: calibrated, said why first, and not cached when
     * cache_write is 0 */
    unlink(cache_path);
    r = cpu_req();
    r.cache_write = 0;
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_CALIBRATED && !u.cached && u.path[0] == '\0');
    CHECK(strstr(notes, "no cached calibration: calibrating this CPU first") != NULL);
    CHECK(access(cache_path, F_OK) != 0);
    mb_cal_spec_describe(&u, &d, desc, sizeof desc);
    CHECK(!strcmp(desc, "local-cpu (calibrated in-process)"));
    r.quiet = 1; /* quiet drops the notes, keeps nothing else from running */
    notes[0] = '\0';
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK && notes[0] == '\0');
}

/* Refused calibrations (the test hook refuse_first): taken again with a
 * backoff, then a full one falls back to a quick one (said, marked
 * 'fallback', not cached), a quick one to the cached calibration, and with
 * none every refusal is an error. */
static void test_refusals(const char *cache_path, const mb_device *fake)
{
    static mb_device d;
    static mb_cal_spec_used u;
    mb_err e;
    char line[1600];
    CHECK(chdir(work_dir) == 0);
    unlink(cache_path);
    mb_cal_spec_req r = cpu_req();
    r.quick = 0;
    r.cache_read = 0;
    r.refuse_first = MB_CAL_TRIES; /* every full one: never run */
    r.backoff_s = 0.01;
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_CALIBRATED && u.fallback && u.refused == MB_CAL_TRIES);
    CHECK(!strcmp(d.calibration, "fallback") && !u.cached && access(cache_path, F_OK) != 0);
    CHECK(strstr(notes, "taken again in 0.0 s (try 2 of 3)") && strstr(notes, "taken again in 0.0 s (try 3 of 3)"));
    CHECK(strstr(notes, "warning: falling back to a quick calibration") != NULL);
    CHECK(!strcmp(mb_cal_mark(&u, &d, 0, NULL), "fallback"));
    mb_cal_spec_line(&u, &d, line, sizeof line);
    CHECK(strstr(line, "calibration: fallback (quick, full ones refused), measured now") == line);

    /* quick ones refused: the cached calibration instead */
    CHECK(mb_cal_cache_save(cache_path, fake, NULL, 0, &e) == MB_OK);
    r = cpu_req();
    r.cache_read = 0;
    r.refuse_first = MB_CAL_TRIES;
    r.backoff_s = 0.01;
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_OK);
    CHECK(u.source == MB_CAL_SPEC_CACHED && u.fallback && d.measured_bandwidth_gbs == 1000);
    CHECK(strstr(notes, "falling back to this host's cached calibration") != NULL);
    CHECK(!strcmp(mb_cal_mark(&u, &d, 0, NULL), "fallback"));

    /* and with no cache: an error naming the refusals, nothing else */
    unlink(cache_path);
    r.refuse_first = 2 * MB_CAL_TRIES;
    CHECK(mb_cal_spec_get(&r, &d, &u, &e) == MB_ERUN);
    CHECK(strstr(e.msg, "every calibration was refused (3 tries)") != NULL);
}

/* The marks rows get: by the spec's calibration and age. */
static void test_marks(void)
{
    static mb_device d;
    static mb_cal_spec_used u;
    memset(&u, 0, sizeof u);
    CHECK(mb_device_find("h100-sxm", &d, &(mb_err){0}) == MB_OK);
    u.source = MB_CAL_SPEC_GIVEN;
    CHECK(!strcmp(mb_cal_mark(&u, &d, 0, NULL), "")); /* the table's: none */
    mb_cal_result c;
    mb_test_calib(&c, 50);
    mb_cal_to_device(&c, "marks", &d);
    snprintf(d.measured_at, sizeof d.measured_at, "vm 2026-01-01T00:00:00Z");
    const double at = 1767225600.0; /* 2026-01-01T00:00:00Z */
    double age = 0;
    CHECK(!strcmp(mb_cal_mark(&u, &d, at + 3600, &age), "full") && age == 3600);
    CHECK(!strcmp(mb_cal_mark(&u, &d, at + 2 * 86400.0, NULL), "stale"));
    snprintf(d.calibration, sizeof d.calibration, "quick");
    CHECK(!strcmp(mb_cal_mark(&u, &d, at + 2 * 86400.0, NULL), "quick"));
    snprintf(d.calibration, sizeof d.calibration, "fallback");
    CHECK(!strcmp(mb_cal_mark(&u, &d, at, NULL), "fallback"));
    /* the key reads back from a spec file */
    char *text = mb_device_ini_text(&d, &(mb_err){0});
    CHECK(text && strstr(text, "\ncalibration = fallback\n"));
    static mb_device back;
    CHECK(text && mb_device_load_ini_text(text, "marks.ini", &back, &(mb_err){0}) == MB_OK &&
          !strcmp(back.calibration, "fallback"));
    free(text);
    d.calibration[0] = '\0';
    text = mb_device_ini_text(&d, &(mb_err){0});
    CHECK(text && !strstr(text, "calibration =")); /* unsaid: not written */
    free(text);
}

int main(void)
{
    mb_meas_set_env(getenv); /* as the CLI does: the compiled-kernel cache under $HOME */
    snprintf(cache_dir, sizeof cache_dir, "/tmp/mb-spec-cache-XXXXXX");
    snprintf(work_dir, sizeof work_dir, "/tmp/mb-spec-work-XXXXXX");
    if (!mkdtemp(cache_dir) || !mkdtemp(work_dir)) return 1;
    /* the library reads no environment: a cache folder here is never used */
    setenv("MEMBOUND_CACHE_DIR", "/nonexistent/mb-spec-env", 1);

    mb_cal_result c;
    static mb_device fake;
    mb_test_calib(&c, 1000);
    mb_cal_to_device(&c, "measure_spec fake", &fake);
    char path[1024], note[1200];
    mb_err e;
    CHECK(mb_cal_cache_locate(cache_dir, NULL, NULL, 1, path, sizeof path, note, sizeof note, &e) == MB_OK);
    CHECK(strncmp(path, cache_dir, strlen(cache_dir)) == 0);
    char moved[768];
    CHECK(mb_cal_cache_save(path, &fake, moved, sizeof moved, &e) == MB_OK);

    test_named_and_gpu_default();
    test_workdir(&fake);
    test_cache(path);
    test_refusals(path, &fake);
    test_marks();

    CHECK(chdir("/") == 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", cache_dir, work_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s, %s\n", cache_dir, work_dir);
    return mb_test_done();
}
