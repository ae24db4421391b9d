/* model_out.h — one model result (variant × plan × dtype × n × device) and
 * its three renderings: an aligned table row, a CSV row, a JSON object.
 * Shared by `model` and `whatif`; computes nothing itself. */
#ifndef MB_CLI_MODEL_OUT_H
#define MB_CLI_MODEL_OUT_H

#include "membound_model.h"

#include <jansson.h>
#include <stdio.h>

typedef struct {
    const mb_graph *g;
    const mb_plan *plan;
    const mb_device *dev;
    mb_dtype dtype;
    int64_t n;          /* elements: rows x cols */
    mb_shape shape;     /* rank 1 (n) or 2 (rows x cols) */
    mb_framework fw;    /* whose allocations the time includes (MB_FW_NONE: none) */
    mb_phase phase;     /* the kernels timed (MB_PHASE_ALL: every one) */
    int host;           /* 1: the time is the host's timeline (pytorch on a GPU) */
    mb_estimate est;
} mb_model_row;

/* Builds plan k of g and estimates it at n on dev into row (row->plan is
 * owned: free with mb_model_row_free). */
int mb_model_row_make(mb_model_row *row, const mb_graph *g, mb_plan_kind k, mb_shape shape,
                      const mb_device *dev, mb_dtype dtype, mb_err *err);

/* One line per kernel of r's plan that makes several passes over a row
 * when the row does not fit on chip: the longest row it keeps on chip on
 * r's device, and what it makes beyond it; and one line naming the eager
 * kernels that run PyTorch's unrolled casting loop (their memory time
 * scaled: mb_cost.cast_loop). Nothing for other plans. */
void mb_model_knee_lines(FILE *fp, const mb_model_row *r);

/* The same with framework fw's allocations in the time (mb_estimate_plan_fw;
 * 1-D shapes only); the JSON object then says "framework" and each cost its
 * "alloc_s". */
int mb_model_row_make_fw(mb_model_row *row, const mb_graph *g, mb_plan_kind k, mb_shape shape,
                         const mb_device *dev, mb_dtype dtype, mb_framework fw, mb_err *err);
/* The same as timing t times it (mb_estimate_plan_timed): a phase, the
 * host's timeline under PyTorch on a GPU (2-D shapes too), a flush ahead. */
int mb_model_row_make_timed(mb_model_row *row, const mb_graph *g, mb_plan_kind k, mb_shape shape,
                            const mb_device *dev, mb_dtype dtype, const mb_timing *t, mb_err *err);
void mb_model_row_free(mb_model_row *row);

/* Table: header then rows. with_device adds a device column. */
void mb_model_table_header(FILE *fp, int with_device);
void mb_model_table_row(FILE *fp, const mb_model_row *r, int with_device, int per_kernel);
/* Traffic in elements of n: tensors read plus tensors written, over all
 * kernels (the lecture's "11n"), whatever their dtypes; a tensor of another
 * shape counts its own elements over n ([rows, 1] is rows / n), a row
 * kernel's re-read once per pass it makes. */
double mb_model_row_elements(const mb_model_row *r);
/* The inputs' dtype, or "mixed" when they differ. */
const char *mb_model_row_dtype(const mb_model_row *r);

/* The model's CSV: header and rows, one line each; more (NULL: none) is
 * appended to the line: whatif's ",speedup_vs_eager" and its values. */
void mb_model_csv_header(FILE *fp, const char *more);
void mb_model_csv_row(FILE *fp, const mb_model_row *r, const char *more);

/* The design's result object; with_device adds "device". New reference, or
 * NULL when a value could not be stored (no memory, or a figure that is not
 * finite): never an object with a key left out. */
json_t *mb_model_row_json(const mb_model_row *r, int with_device);

#endif
