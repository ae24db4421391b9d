/* kernels_mlp.c — the transformer MLP on the CPU (kernels/mlp_cpu.c): GPT-2's
 * and Llama's, eager and fused, against float64 on sampled entries; a fused
 * epilogue that is wrong on the last panel only (the activation or the bias /
 * the multiply left out) caught; the panel rule; bad sizes refused. */
#include "kernels.h"
#include "mb_test.h"

#include <math.h>
#include <stdlib.h>

/* the plan's y checked on 12 rows x 12 columns; returns the check's figure */
static double run(mb_kern_mlp *c, mb_kern_mlp_plan plan, float **y_out)
{
    mb_kern_mlp_bufs b;
    mb_err e;
    CHECK(mb_kern_mlp_alloc(c, &b, 11, &e) == MB_OK);
    CHECK(mb_kern_mlp_run(c, plan, &b, &e) == MB_OK);
    double err = mb_kern_mlp_check(c, &b, 12, 12, 5);
    if (y_out) {
        *y_out = malloc((size_t)(c->tokens * c->d_model) * sizeof(float));
        for (int64_t i = 0; i < c->tokens * c->d_model; i++) (*y_out)[i] = b.y[i];
    }
    mb_kern_mlp_free(&b);
    return err;
}

int main(void)
{
    if (!mb_kern_blas_load()) {
        printf("no OpenBLAS: %s\n", mb_kern_blas_desc());
        return mb_test_skip();
    }
    { /* the bytes alloc takes, counted by hand: 4 B x (x, y: 2 T D; GPT-2's
       * w1, w2, b1, b2: 2 D F + F + D; h, g: 2 T F), T 40, D 32, F 96; the
       * backward adds dy, dx, the gradients of the weights and dh */
        mb_kern_mlp g = {.kind = MB_KERN_MLP_GPT2, .tokens = 40, .d_model = 32, .d_ff = 96};
        CHECK(mb_kern_mlp_bytes(&g) == 4.0 * (2 * 40 * 32 + 2 * 32 * 96 + 96 + 32 + 2 * 40 * 96));
        g.backward = 1;
        CHECK(mb_kern_mlp_bytes(&g) == 4.0 * (2 * 40 * 32 + 2 * 32 * 96 + 96 + 32 + 2 * 40 * 96) +
                                           4.0 * (2 * 40 * 32 + 2 * 32 * 96 + 96 + 32 + 40 * 96));
        /* Llama: three weights, no biases; h, u, g, p; with backward dh, du */
        mb_kern_mlp l = {.kind = MB_KERN_MLP_LLAMA, .tokens = 40, .d_model = 32, .d_ff = 96, .backward = 1};
        CHECK(mb_kern_mlp_bytes(&l) == 4.0 * (2 * 40 * 32 + 3 * 32 * 96 + 4 * 40 * 96) +
                                           4.0 * (2 * 40 * 32 + 3 * 32 * 96 + 2 * 40 * 96));
    }
    for (int kind = 0; kind < 2; kind++) {
        /* 100 tokens in panels of 32: the last panel has 4 rows */
        mb_kern_mlp c = {.kind = kind ? MB_KERN_MLP_LLAMA : MB_KERN_MLP_GPT2, .tokens = 100, .d_model = 64,
                         .d_ff = 160, .panel_rows = 32, .threads = 2};
        float *ye = NULL, *yf = NULL;
        double ee = run(&c, MB_KERN_MLP_EAGER, &ye), ef = run(&c, MB_KERN_MLP_FUSED, &yf);
        printf("%s: eager %.3g, fused %.3g of the f32 bound\n", kind ? "llama" : "gpt2", ee, ef);
        CHECK(ee <= 1);
        CHECK(ef <= 1);
        /* the two plans compute the same products: equal to a few ulps */
        double d = 0;
        for (int64_t i = 0; i < c.tokens * c.d_model; i++) d = fmax(d, fabs(ye[i] - yf[i]) / (1e-3 + fabs(ye[i])));
        CHECK(d < 1e-4);
        free(ye), free(yf);
        /* a wrong epilogue on the last panel alone: caught (the check takes
         * the last token first of its rows) */
        for (int fault = 1; fault <= 2; fault++) {
            c.fault = fault;
            double ew = run(&c, MB_KERN_MLP_FUSED, NULL);
            printf("  fault %d: %.3g\n", fault, ew);
            CHECK(ew > 10);
            c.fault = 0;
        }
        /* one panel (panel_rows beyond the tokens) and the rule's panels */
        c.panel_rows = 1000;
        CHECK(mb_kern_mlp_panel_rows(&c) == 100);
        CHECK(run(&c, MB_KERN_MLP_FUSED, NULL) <= 1);
        c.panel_rows = 0;
        c.tokens = 5000;
        /* half of 768000 B over 160 (x 2 for Llama) floats a row: 600 (300)
         * rows, to 592 (288, raised to the floor of 512) */
        c.cache_bytes = 768000;
        CHECK(mb_kern_mlp_panel_rows(&c) == (kind ? MB_KERN_MLP_MIN_PANEL : 592));
        c.cache_bytes = 1024; /* at least the floor */
        CHECK(mb_kern_mlp_panel_rows(&c) == MB_KERN_MLP_MIN_PANEL);
        c.tokens = 300; /* all tokens at most */
        CHECK(mb_kern_mlp_panel_rows(&c) == 300);
        c.cache_bytes = 0;
        c.tokens = 100;
        CHECK(mb_kern_mlp_flops(&c) == 2.0 * 100 * 64 * 160 * (kind ? 3 : 2));
    }
    /* the backward, after an eager forward */
    for (int kind = 0; kind < 2; kind++) {
        mb_kern_mlp c = {.kind = kind ? MB_KERN_MLP_LLAMA : MB_KERN_MLP_GPT2, .tokens = 100, .d_model = 64,
                         .d_ff = 160, .panel_rows = 32, .threads = 2, .backward = 1};
        mb_kern_mlp_bufs b;
        mb_err e;
        CHECK(mb_kern_mlp_alloc(&c, &b, 21, &e) == MB_OK);
        CHECK(mb_kern_mlp_run(&c, MB_KERN_MLP_EAGER, &b, &e) == MB_OK);
        CHECK(mb_kern_mlp_backward(&c, MB_KERN_MLP_EAGER, &b, &e) == MB_OK);
        double ee = mb_kern_mlp_check_backward(&c, &b, 8, 9);
        float *dx = malloc((size_t)(100 * 64) * sizeof(float));
        for (int i = 0; i < 100 * 64; i++) dx[i] = b.dx[i];
        CHECK(mb_kern_mlp_backward(&c, MB_KERN_MLP_FUSED, &b, &e) == MB_OK);
        double ef = mb_kern_mlp_check_backward(&c, &b, 8, 9);
        double d = 0;
        for (int i = 0; i < 100 * 64; i++) d = fmax(d, fabs(dx[i] - b.dx[i]) / (1e-3 + fabs(dx[i])));
        printf("%s backward: eager %.3g, fused %.3g of the bound; plans differ by %.2g\n", kind ? "llama" : "gpt2", ee,
               ef, d);
        CHECK(ee <= 1);
        CHECK(ef <= 1);
        CHECK(d < 1e-4);
        for (int fault = 1; fault <= 2; fault++) {
            c.fault = fault;
            CHECK(mb_kern_mlp_backward(&c, MB_KERN_MLP_FUSED, &b, &e) == MB_OK);
            double ew = mb_kern_mlp_check_backward(&c, &b, 8, 9);
            printf("  fault %d: %.3g\n", fault, ew);
            CHECK(ew > 10);
            c.fault = 0;
        }
        CHECK(mb_kern_mlp_backward_flops(&c) == 2 * mb_kern_mlp_flops(&c));
        free(dx);
        mb_kern_mlp_free(&b);
        /* without the backward's tensors */
        c.backward = 0;
        CHECK(mb_kern_mlp_alloc(&c, &b, 21, &e) == MB_OK);
        CHECK(mb_kern_mlp_backward(&c, MB_KERN_MLP_EAGER, &b, &e) == MB_EINPUT);
        CHECK(mb_kern_mlp_check_backward(&c, &b, 2, 1) == INFINITY);
        mb_kern_mlp_free(&b);
    }
    /* bad sizes */
    mb_kern_mlp bad = {.kind = MB_KERN_MLP_GPT2, .tokens = 0, .d_model = 8, .d_ff = 8};
    mb_kern_mlp_bufs b;
    mb_err e;
    CHECK(mb_kern_mlp_alloc(&bad, &b, 1, &e) == MB_EINPUT);
    CHECK(b.x == NULL);
    bad.tokens = 1 << 21, bad.d_ff = 1 << 20;
    CHECK(mb_kern_mlp_alloc(&bad, &b, 1, &e) == MB_EINPUT);
    return mb_test_done();
}
