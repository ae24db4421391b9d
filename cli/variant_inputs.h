/* variant_inputs.h — the variants a command is given, in the order given:
 * variant files, built-in names and repeated --expr, in any mix. Loads them
 * and refuses a name given twice; computes nothing. */
#ifndef MB_CLI_VARIANT_INPUTS_H
#define MB_CLI_VARIANT_INPUTS_H

#include "membound_model.h"

typedef struct mb_cli_input {
    int is_expr;       /* 1: arg is an --expr string, else a file or built-in name */
    const char *arg;   /* borrowed from argv */
} mb_cli_input;

typedef struct mb_cli_inputs {
    mb_cli_input *v;
    int n, cap;
} mb_cli_inputs;

/* Appends one input (arg borrowed). Returns 0, or 1 after an error line
 * (out of memory). */
int mb_cli_inputs_add(mb_cli_inputs *in, int is_expr, const char *arg);

/* Loads every input at dtype dt, in order (none: every built-in variant);
 * *graphs (malloc'ed, n entries, free with mb_cli_graphs_free) and, when
 * exprs is not NULL, *exprs (malloc'ed, n entries: the --expr string of each
 * graph, NULL for a file or built-in). A variant name given twice is refused
 * naming both inputs. Returns 0, or an exit code after one error line. */
int mb_cli_inputs_load(const mb_cli_inputs *in, mb_dtype dt, mb_graph ***graphs, int *n,
                       const char ***exprs);

/* "--expr 2 ('name a; y = sin(x)')" or "'silu.mb'", the i-th input's place
 * for messages, into buf. */
const char *mb_cli_input_where(const mb_cli_inputs *in, int i, char *buf, size_t size);

void mb_cli_graphs_free(mb_graph **g, int n);
void mb_cli_inputs_free(mb_cli_inputs *in);

#endif
