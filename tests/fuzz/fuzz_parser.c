/* fuzz_parser.c — libFuzzer target: any bytes as a variant file and as an
 * --expr string; whatever parses is planned and costed with every plan. */
#include "membound_model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const mb_graph *g)
{
    mb_device d, cpu;
    mb_err e;
    if (mb_device_find("h100-sxm", &d, &e) != MB_OK) abort();
    cpu = d;
    strcpy(cpu.kind, "cpu");
    if (g->n_dims) { /* named dimensions: each name sized 3, once ([seq, seq] is one name) */
        char dims[MB_MAX_DIMS * (MB_DIM_NAME_MAX + 3)] = "";
        for (int k = 0; k < g->n_dims; k++) {
            int seen = 0;
            for (int j = 0; j < k; j++) seen |= !strcmp(g->dim_names[j], g->dim_names[k]);
            if (!seen)
                snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s=3", dims[0] ? "," : "",
                         g->dim_names[k]);
        }
        mb_shape s;
        if (mb_graph_dims_shape(g, dims, &s, &e) != MB_OK) abort(); /* every name once: always a shape */
    }
    for (int k = 0; k < 2 * MB_PLAN_COUNT; k++) {
        mb_plan *p;
        if (mb_plan_build_on(g, (mb_plan_kind)(k % MB_PLAN_COUNT), k < MB_PLAN_COUNT ? &d : &cpu, &p, &e) != MB_OK)
            continue;
        mb_estimate est;
        if (mb_estimate_plan(p, 1 << 20, &d, &est, &e) == MB_OK) {
            if (est.total.dram_read_bytes > est.total.read_bytes) abort(); /* cache can only save */
            mb_estimate_free(&est);
        }
        mb_plan_free(p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mb_graph *g;
    mb_err e;
    if (mb_parse_variant(text, "fuzz.mb", MB_F32, &g, &e) == MB_OK) {
        exercise(g);
        mb_graph_free(g);
    } else if (strlen(e.msg) == 0) {
        abort(); /* every failure explains itself */
    }
    if (mb_parse_expr(text, MB_BF16, &g, &e) == MB_OK) {
        exercise(g);
        mb_graph_free(g);
    }
    free(text);
    return 0;
}
