/* mlp_measure.h — `membound mlp --measure`: the eager and fused plans run
 * on this CPU beside the model on its CPU spec. */
#ifndef MB_CLI_MLP_MEASURE_H
#define MB_CLI_MLP_MEASURE_H

#include "membound_model.h"
#include "mb_mlp.h"

/* What --measure takes besides the layer. */
typedef struct mb_cli_mlp_measure_opts {
    const char *device; /* a CPU spec (INI or table id); NULL: ./local-cpu.ini, the cached calibration, or calibrate */
    int threads;        /* <= 0: the spec's sm_count (the threads it was calibrated on), else all cores */
    double min_s;       /* seconds of samples per plan and phase at least */
    int json;
    int fault; /* the test hook MEMBOUND_TEST_MLP_FAULT (mb_meas_mlp's fault); 0 in use */
} mb_cli_mlp_measure_opts;

/* Runs m (gpt2 or llama, f32; its backward too with m->backward) under
 * both plans on this CPU and prints model against measurement (text or
 * JSON). The exit code: 0; 1 when a run failed or a plan failed its
 * float64 check; 2 for bad input (another layer or dtype, a list, a GPU
 * spec, sizes beyond the host's memory), after one error line. */
int mb_cli_mlp_measure(const mb_mlp *m, const mb_cli_mlp_measure_opts *o);

struct mb_mmvar;
/* Runs layer v's eager forward, and its backward when v has one (f32,
 * bound to its sizes), on this CPU kernel by kernel and prints each beside
 * the model's eager plan on the CPU spec (text or JSON). Exit codes as mb_cli_mlp_measure's. */
int mb_cli_mmvar_measure(const struct mb_mmvar *v, const mb_cli_mlp_measure_opts *o);

#endif
