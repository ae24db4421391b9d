/* cpu_mlp.c — the CPU MLP executor's two plans (kernels/mlp_cpu.c) timed
 * side by side: rounds alternate eager and fused on the same tensors, so a
 * shared machine's drift falls on both; each plan's result checked against
 * float64 first. A benchmark, not a test: bench/cpu_mlp.py runs it beside
 * PyTorch. Prints one JSON object.
 *
 * usage: cpu_mlp_bench --kind gpt2|llama --tokens T --d-model D --d-ff F
 *                      [--threads N] [--rounds R] [--reps N] [--panel P]
 *                      [--cache-bytes B] [--backward]
 * --backward times the backward instead (after one eager forward, whose
 * saved tensors both plans read). */
#include "kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int64_t arg_i(int argc, char **argv, const char *name, int64_t dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) {
            char *end;
            long long v = strtoll(argv[i + 1], &end, 10);
            if (end == argv[i + 1] || *end || v < 0) {
                fprintf(stderr, "cpu_mlp_bench: %s '%s': a count\n", name, argv[i + 1]);
                exit(2);
            }
            return v;
        }
    return dflt;
}

int main(int argc, char **argv)
{
    const char *kind = "gpt2";
    int backward = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--kind")) kind = argv[i + 1];
        if (!strcmp(argv[i], "--backward")) backward = 1;
    }
    if (strcmp(kind, "gpt2") && strcmp(kind, "llama")) {
        fprintf(stderr, "cpu_mlp_bench: --kind gpt2 or llama\n");
        return 2;
    }
    mb_kern_mlp c = {.kind = strcmp(kind, "llama") ? MB_KERN_MLP_GPT2 : MB_KERN_MLP_LLAMA,
                     .tokens = arg_i(argc, argv, "--tokens", 1024),
                     .d_model = arg_i(argc, argv, "--d-model", 768),
                     .d_ff = arg_i(argc, argv, "--d-ff", 3072),
                     .threads = (int)arg_i(argc, argv, "--threads", 0),
                     .panel_rows = arg_i(argc, argv, "--panel", 0),
                     .cache_bytes = arg_i(argc, argv, "--cache-bytes", 0),
                     .backward = backward};
    const int rounds = (int)arg_i(argc, argv, "--rounds", 5), reps = (int)arg_i(argc, argv, "--reps", 3);
    if (rounds < 1 || reps < 1) {
        fprintf(stderr, "cpu_mlp_bench: --rounds and --reps are at least 1\n");
        return 2;
    }
    mb_kern_mlp_bufs b;
    mb_err e;
    if (mb_kern_mlp_alloc(&c, &b, 1, &e)) {
        fprintf(stderr, "cpu_mlp_bench: %s\n", e.msg);
        return 2;
    }
    double check[2];
    if (backward && mb_kern_mlp_run(&c, MB_KERN_MLP_EAGER, &b, &e)) { /* the saved tensors */
        fprintf(stderr, "cpu_mlp_bench: %s\n", e.msg);
        return 1;
    }
    for (int p = 0; p < 2; p++) { /* warm-up and the check */
        if ((backward ? mb_kern_mlp_backward : mb_kern_mlp_run)(&c, (mb_kern_mlp_plan)p, &b, &e)) {
            fprintf(stderr, "cpu_mlp_bench: %s\n", e.msg);
            return 1;
        }
        check[p] = backward ? mb_kern_mlp_check_backward(&c, &b, 3, 3) : mb_kern_mlp_check(&c, &b, 6, 16, 3);
        if (!(check[p] <= 1)) {
            fprintf(stderr, "cpu_mlp_bench: plan %d failed its float64 check (%.3g of the bound)\n", p, check[p]);
            return 1;
        }
    }
    double *t[2];
    t[0] = malloc((size_t)(rounds * reps) * sizeof(double));
    t[1] = malloc((size_t)(rounds * reps) * sizeof(double));
    for (int r = 0; r < rounds; r++)
        for (int q = 0; q < 2; q++) {
            const int p = (q + r) % 2; /* each plan first in every other round */
            for (int i = 0; i < reps; i++) {
                double t0 = now_s();
                (backward ? mb_kern_mlp_backward : mb_kern_mlp_run)(&c, (mb_kern_mlp_plan)p, &b, &e);
                t[p][r * reps + i] = now_s() - t0;
            }
        }
    const int n = rounds * reps;
    printf("{\"pass\": \"%s\", \"kind\": \"%s\", \"tokens\": %lld, \"d_model\": %lld, \"d_ff\": %lld, \"threads\": %d, "
           "\"panel_rows\": %lld, \"flops\": %.17g, \"blas\": \"%s\"",
           backward ? "backward" : "forward", kind, (long long)c.tokens, (long long)c.d_model, (long long)c.d_ff,
           c.threads > 0 ? c.threads : mb_kern_threads(), (long long)mb_kern_mlp_panel_rows(&c),
           backward ? mb_kern_mlp_backward_flops(&c) : mb_kern_mlp_flops(&c),
           mb_kern_blas_desc());
    const char *names[2] = {"eager", "fused"};
    for (int p = 0; p < 2; p++) {
        qsort(t[p], (size_t)n, sizeof(double), cmp);
        printf(", \"%s\": {\"median_s\": %.9g, \"min_s\": %.9g, \"check\": %.3g, \"samples\": %d}", names[p],
               n % 2 ? t[p][n / 2] : 0.5 * (t[p][n / 2 - 1] + t[p][n / 2]), t[p][0], check[p], n);
    }
    printf("}\n");
    free(t[0]), free(t[1]);
    mb_kern_mlp_free(&b);
    return 0;
}
