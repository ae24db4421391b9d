/* fuzz_parser.c — libFuzzer target: any bytes as a variant file and as an
 * --expr string; whatever parses is planned and costed with every plan. */
#include "membound_model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const mb_graph *g)
{
    mb_device d;
    mb_err e;
    if (mb_device_find("h100-sxm", &d, &e) != MB_OK) abort();
    for (int k = 0; k < MB_PLAN_COUNT; k++) {
        mb_plan *p;
        if (mb_plan_build(g, (mb_plan_kind)k, &p, &e) != MB_OK) continue;
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
