/* attention_out.h — `membound attention`'s planner, sequence sweep and
 * figures: what --plan, --mem-budget, --seq-sweep and --figures print and
 * write (attention_planner.c, attention_fig.c). The model is
 * model/attn_plan.c's; option parsing stays in cmd_attention.c. */
#ifndef MB_CLI_ATTENTION_OUT_H
#define MB_CLI_ATTENTION_OUT_H

#include "membound_model.h"

#include <jansson.h>
#include <stdint.h>

/* The seq range of --seq-sweep's doubling search. */
#define MB_CLI_ATTN_SWEEP_LO 16
#define MB_CLI_ATTN_SWEEP_HI ((int64_t)1 << 22)

/* A memory budget: bytes as sizes are written elsewhere (1073741824, 2^30,
 * 1G and 1GiB binary) or decimal with a unit (40GB = 40e9, 512MB, 1.5e9B).
 * Returns 0, or 2 after one error line naming the option. */
int mb_cli_attn_parse_bytes(const char *opt, const char *s, double *out);

/* The planner's section for one device (d's estimate e of a, with its
 * backward): the three plans' time, DRAM bytes, saved and peak bytes and
 * what each keeps, the cost of recomputing against storing P, the frontier
 * and the choice with its reason. budget_bytes <= 0: no budget. */
void mb_cli_attn_plan_print(const mb_attn *a, const mb_device *d, const mb_attn_est *e, double budget_bytes);
/* One row a device of the same: its header (once) and rows. */
void mb_cli_attn_plan_header(double budget_bytes);
void mb_cli_attn_plan_row(const mb_device *d, const mb_attn_est *e, double budget_bytes);
/* The planner as a JSON object (new reference). */
json_t *mb_cli_attn_plan_json(const mb_attn *a, const mb_device *d, const mb_attn_est *e, double budget_bytes);

/* --seq-sweep: per device of dv (ok[i] 0: skipped) the longest seq each
 * plan fits (forward and backward) and where its time per token doubles
 * (mb_attn_doubling_seq over MB_CLI_ATTN_SWEEP_LO..HI), as a table or one
 * JSON object. Returns the exit code (after one error line). */
int mb_cli_attn_sweep(const mb_attn *a, const mb_device *dv, const int *ok, int nd, int json);

/* --figures DIR: per device of dv, time, DRAM bytes and saved memory against
 * seq (attn_seq_DEV), the model's TFLOP/s (attn_tflops_DEV) and the
 * frontier at a's seq (attn_frontier_DEV); across them the longest seq
 * (attn_oom). Data files and PNGs in dir (created when missing). seqs: the
 * sweep's sequence lengths. Returns the exit code. */
int mb_cli_attn_figures(const mb_attn *a, const mb_device *dv, const int *ok, int nd, const char *dir,
                        const int64_t *seqs, int n_seqs);

#endif
