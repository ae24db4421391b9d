/* model_args.h — the options `model`, `whatif` and `plan` share: variants
 * and --expr (in any mix, in order), plans, dtypes, sizes, output format.
 * Parses, loads the graphs and reports bad input; computes nothing. */
#ifndef MB_CLI_MODEL_ARGS_H
#define MB_CLI_MODEL_ARGS_H

#include "membound_model.h"
#include "variant_inputs.h"

typedef enum { MB_FMT_TABLE = 0, MB_FMT_CSV, MB_FMT_JSON } mb_out_format;

typedef struct {
    mb_cli_inputs inputs; /* variant files, built-in names, --expr, in order */
    mb_graph **graphs;    /* each input at each dtype: input-major, dtypes in --dtype's order */
    int n_graphs;
    int plan_given;
    mb_plan_kind plans[MB_PLAN_COUNT]; /* --plan's list, in order */
    int n_plans;
    mb_dtype dtype;       /* the first of dtypes */
    mb_dtype dtypes[MB_DTYPE_COUNT];
    int n_dtypes;
    mb_shape *sizes;     /* from --n / --sizes / --shape / --dims; NULL: each variant's own */
    char *dims;          /* --dims name=SIZE,...: the sizes of the variants' named
                            dimensions (sizes is set from it once they are loaded) */
    int n_sizes;
    mb_out_format fmt;
    int per_kernel;
    mb_framework framework; /* --framework (model only): MB_FW_NONE by default */
    mb_colsum colsum;    /* --colsum, when colsum_given (else each variant's
                            'colsum' line) */
    int colsum_given;
    unsigned given;      /* options seen so far (MB_ARG_* bits), for conflicts */
    int given_as[6];     /* the option code that set each bit, for messages */
} mb_model_args;

/* Handles one option shared by `model`, `whatif` and `plan`, by its getopt
 * code: 1 a variant (getopt's "-" mode: non-options in order), 'e' --expr,
 * 'p' --plan LIST, 'n' --n, 's' --sizes, 'S' --shape LIST, 't' --dtype LIST, 'J' --json,
 * 'C' --csv, 'F' --framework, MB_OPT_DIMS --dims LIST, MB_OPT_COLSUM --colsum
 * written|partial|reread (sets every loaded graph's colsum). Returns 0 when handled, -1 when c is none of them, or an exit
 * code after printing one error line: a bad value, an option given twice, or
 * one that conflicts with an earlier one (--n with --sizes, --json with --csv). */
int mb_model_args_option(mb_model_args *a, int c, const char *arg);

/* Loads the graphs of the inputs (or all built-ins when none), at each
 * dtype, and sizes --dims for them (every variant must name those
 * dimensions and give the same shape). Returns 0, or an exit code after
 * printing one error line. */
int mb_model_args_load(mb_model_args *a);

/* Sizes to use for graph g: the given ones, or its default (its 'shape'
 * line, its 'size' line, else 2^24). */
int mb_model_args_sizes(const mb_model_args *a, const mb_graph *g, const mb_shape **sizes, mb_shape *one);

/* Plans to run for g, in order; returns their count. */
int mb_model_args_plans(const mb_model_args *a, const mb_graph *g, mb_plan_kind plans[MB_PLAN_COUNT]);

/* The --dtype graph i was loaded at. */
mb_dtype mb_model_args_dtype(const mb_model_args *a, int i);

/* Warns, one line per variant and dtype, when the inputs and outputs of a
 * graph at its largest size exceed the memory (mem_gb > 0) of devices of
 * devs: the model's figures are then for a size they cannot hold. */
void mb_model_args_warn_memory(const mb_model_args *a, const mb_device *devs, int n_devs);

void mb_model_args_free(mb_model_args *a);

#endif
