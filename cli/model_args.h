/* model_args.h — the options `model` and `whatif` share: variants or
 * --expr, plans, dtype, sizes, output format. Parses, loads the graphs and
 * reports bad input; computes nothing. */
#ifndef MB_CLI_MODEL_ARGS_H
#define MB_CLI_MODEL_ARGS_H

#include "membound_model.h"

typedef enum { MB_FMT_TABLE = 0, MB_FMT_CSV, MB_FMT_JSON } mb_out_format;

typedef struct {
    mb_graph **graphs;
    int n_graphs;
    int plan_given;
    mb_plan_kind plan;
    mb_dtype dtype;
    int64_t *sizes;      /* from --n / --sizes; NULL: each variant's own */
    int n_sizes;
    mb_out_format fmt;
    int per_kernel;
    unsigned given;      /* options seen so far (MB_ARG_* bits), for conflicts */
    int given_as[4];     /* the option code that set each bit, for messages */
} mb_model_args;

/* Handles one option shared by `model` and `whatif`, by its getopt code:
 * 'p' --plan, 'n' --n, 's' --sizes, 't' --dtype, 'J' --json, 'C' --csv.
 * Returns 0 when handled, -1 when c is none of them, or an exit code after
 * printing one error line: a bad value, an option given twice, or one that
 * conflicts with an earlier one (--n with --sizes, --json with --csv). */
int mb_model_args_option(mb_model_args *a, int c, const char *arg);

/* Loads the graphs named in argv[first..] (or all built-ins, or expr when
 * non-NULL). Returns 0, or an exit code after printing one error line. */
int mb_model_args_load(mb_model_args *a, int argc, char **argv, int first, const char *expr);

/* Sizes to use for graph g: the given ones, or its default (2^24 if none). */
int mb_model_args_sizes(const mb_model_args *a, const mb_graph *g, const int64_t **sizes, int64_t *one);

/* Plans to run for g, in order; returns their count. */
int mb_model_args_plans(const mb_model_args *a, const mb_graph *g, mb_plan_kind plans[MB_PLAN_COUNT]);

void mb_model_args_free(mb_model_args *a);

#endif
