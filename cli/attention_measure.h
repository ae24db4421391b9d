/* attention_measure.h — `membound attention --measure`: both plans run on
 * this CPU beside the model on its calibrated spec. */
#ifndef MB_CLI_ATTENTION_MEASURE_H
#define MB_CLI_ATTENTION_MEASURE_H

#include "membound_model.h"
#include "mb_attention.h"

/* What --measure takes besides the shape. */
typedef struct mb_cli_attn_measure_opts {
    const char *device; /* a CPU spec (INI or table id); NULL: ./local-cpu.ini, the cached calibration, or calibrate */
    int threads;        /* <= 0: all cores */
    double min_time_s;  /* sampling per plan */
    int json;
    int quiet;
} mb_cli_attn_measure_opts;

/* Runs standard and flash at a, prints model against measurement (text or
 * JSON); the exit code: 0, 1 when a run failed or its float64 check did,
 * 2 for bad input (after one error line). */
int mb_cli_attention_measure(const mb_attn *a, const mb_cli_attn_measure_opts *o);

#endif
