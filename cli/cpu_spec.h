/* cpu_spec.h — the CPU spec a `--measure` on this CPU compares with
 * (attention, mlp): --device, else what `measure` would take. Does not
 * run or model anything. */
#ifndef MB_CLI_CPU_SPEC_H
#define MB_CLI_CPU_SPEC_H

#include "membound_model.h"

#include <stddef.h>

/* The model's spec for a run on this CPU: device (one CPU spec, INI or
 * table id), else ./local-cpu.ini, this host's cached calibration for
 * threads (<= 0: all cores), or a calibration now, as `measure` takes it
 * (calibrate's mb_cal_spec_get; command_line is the calibrated spec's
 * source line). say_line: print which calibration it is as a note. desc
 * (descsz bytes) gets a one-line description for provenance. Returns 0, or
 * the exit code after one error line: 2 for a list, a GPU spec or a spec
 * with an error, 1 when the calibration fails. */
int mb_cli_cpu_spec(const char *device, int threads, int quiet, int say_line, const char *command_line,
                    mb_device *dev, char *desc, size_t descsz);

#endif
