/* cpu_spec.c — the CPU spec of `attention --measure` and `mlp --measure`
 * (cpu_spec.h), through calibrate's one entry point. Does not calibrate
 * itself (calibrate/). */
#include "cpu_spec.h"
#include "calibrate.h"
#include "cli_common.h"

#include <stdlib.h>
#include <string.h>

static void calib_progress(const char *label) { mb_cli_note("calibrating this CPU for the model: %s", label); }

int mb_cli_cpu_spec(const char *device, int threads, int quiet, int say_line, const char *command_line,
                    mb_device *dev, char *desc, size_t descsz)
{
    if (device && (strchr(device, ',') || !strcmp(device, "all")))
        return mb_cli_fail(2, "--measure runs on this CPU: give --device one CPU spec, not a list ('%s')", device);
    mb_cal_spec_req req = {.device = device, .backend = MB_MEAS_CPU, .workdir = 1, .cache_read = 1,
                           .cache_write = 1, .threads = threads, .command_line = command_line, .lookup = getenv,
                           .progress = calib_progress, .note = mb_cli_meas_note, .quiet = quiet};
    static mb_cal_spec_used used; /* the calibration's figures: not on the stack */
    mb_err e;
    int rc = mb_cal_spec_get(&req, dev, &used, &e);
    if (rc) return mb_cli_fail_err(rc == MB_EINPUT ? 2 : 1, &e);
    if (strcmp(dev->kind, "cpu"))
        return mb_cli_fail(2, "--measure runs on this CPU and compares with a CPU spec: '%s' is a %s "
                              "(make one with 'membound calibrate -o spec.ini', or leave --device out)",
                           dev->name, dev->kind);
    char line[1600];
    mb_cal_spec_line(&used, dev, line, sizeof line);
    if (say_line) mb_cli_note("%s", line);
    mb_cal_spec_describe(&used, dev, desc, descsz);
    return 0;
}
