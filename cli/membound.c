/* membound.c — argument parsing and subcommand dispatch only.
 * Every subcommand lives in cli/cmd_NAME.c; a build without one (no GSL, say)
 * says so instead of running it. */
#include "cli_common.h"
#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Weak references: a subcommand whose module is not built is NULL here. */
#pragma weak mb_cmd_calibrate
#pragma weak mb_cmd_measure
#pragma weak mb_cmd_report
#pragma weak mb_cmd_figures
#pragma weak mb_cmd_demo
#pragma weak mb_cmd_import

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
    const char *needs; /* what a build without it lacks */
} command;

static const command commands[] = {
    {"devices", mb_cmd_devices, "list the device table", ""},
    {"model", mb_cmd_model, "bytes, kernels and time of each variant and plan on a device", ""},
    {"whatif", mb_cmd_whatif, "the same across many devices", ""},
    {"gemm", mb_cmd_gemm, "a matrix multiply: FLOPs, bytes, time, bound; --measure runs it", ""},
    {"attention", mb_cmd_attention, "attention, standard against FlashAttention; --measure runs both", ""},
    {"mlp", mb_cmd_mlp, "a transformer MLP: eager against fused, checkpointing; --measure", ""},
    {"plan", mb_cmd_plan, "the optimal recompute plan (min-cut) and the memory-traffic frontier", ""},
    {"trace", mb_cmd_trace, "a variant from a PyTorch function of one's own (needs python3 with torch)", ""},
    {"calibrate", mb_cmd_calibrate, "measure this machine's bandwidth and op rates into a spec file", "the measure module"},
    {"measure", mb_cmd_measure, "run variants for real (CPU or CUDA) and write a CSV", "the measure module"},
    {"report", mb_cmd_report, "fit the model to measurements, write report and figures", "GSL (reports module)"},
    {"figures", mb_cmd_figures, "the model-only lecture figures", "GSL (reports module)"},
    {"demo", mb_cmd_demo, "the lecture's demos end to end on this machine", "GSL (reports module)"},
    {"import", mb_cmd_import, "Nsight Compute CSVs or PyTorch profiler traces as measurement rows", "libcsv (import module)"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound COMMAND [OPTIONS]\n"
            "\n"
            "Models, measures and plots memory-bound GPU work: bytes each kernel moves,\n"
            "its roofline time on a device, and the same variants run for real.\n"
            "\n"
            "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(fp, "  %-10s %s%s\n", commands[i].name, commands[i].summary,
                commands[i].fn ? "" : " (not in this build)");
    char fns[512];
    mb_op_call_list(fns, sizeof fns);
    fprintf(fp,
            "\n"
            "Variant expressions: + - * / ** and unary minus on tensors and numbers;\n"
            "functions: %s.\n", fns);
    fprintf(fp,
            "\n"
            "Run 'membound COMMAND --help' for a command's options.\n"
            "Exit codes: 0 success; 1 a failure of the environment during a run (no GPU,\n"
            "a full disk, a failed check); 2 bad usage or input, an unusable path given on\n"
            "the command line; 130/143 interrupted (SIGINT/SIGTERM).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) return mb_cli_fail(2, "no command given (run 'membound --help' for the list)");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("membound %s\n", MB_VERSION);
        return 0;
    }
    mb_outfile_install_signal_cleanup();
    mb_variant_set_dir(getenv("MEMBOUND_VARIANTS")); /* the libraries read no environment */
    for (int i = 0; i < N_COMMANDS; i++) {
        if (strcmp(argv[1], commands[i].name) != 0) continue;
        if (!commands[i].fn)
            return mb_cli_fail(1, "'%s' is not in this build: it needs %s", commands[i].name,
                               commands[i].needs);
        int rc = commands[i].fn(argc - 1, argv + 1);
        /* a table or JSON on standard output that did not get out (a full
         * disk, /dev/full) is a failed run, not a success */
        if (fflush(stdout) != 0 || ferror(stdout)) {
            int e = errno;
            return mb_cli_fail(rc ? rc : 1, "cannot write standard output: %s", strerror(e ? e : EIO));
        }
        return rc;
    }
    return mb_cli_fail(2, "unknown command '%s' (run 'membound --help')", argv[1]);
}
