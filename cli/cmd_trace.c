/* cmd_trace.c — `membound trace SCRIPT.py:FUNCTION --input ...`: a variant
 * from the user's own PyTorch function. The tracing is Python's
 * (share/membound/trace/membound_trace.py beside the binary, run under
 * python3 -I -B: no PYTHON* environment, no user site, no bytecode written);
 * this file finds it, checks nobody else can change it, runs it and writes
 * its variant whole or not at all. Only this command needs PyTorch. */
#include "cli_common.h"
#include "commands.h"
#include "mb_mmvar.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MB_TRACE_INSTALL_DIR
#define MB_TRACE_INSTALL_DIR "/usr/local/share/membound/trace"
#endif
#define HELPER "membound_trace.py"
#define NO_TORCH 3 /* the helper's exit when its python has no torch */

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: membound trace SCRIPT.py:FUNCTION --input NAME=SHAPE[:DTYPE][:nograd] ...\n"
            "                      [--backward] [--name NAME] [-o FILE.mb] [--python PYTHON]\n"
            "\n"
            "Runs FUNCTION of SCRIPT.py under PyTorch on meta tensors (shapes and dtypes, no\n"
            "data) and writes the operations it calls (torch.sin, *, .to(torch.float32),\n"
            "F.rms_norm, ...: recorded above PyTorch's per-device kernels) as a variant in\n"
            "membound's language, for model, whatif, plan and measure. FUNCTION may be a\n"
            "torch.autograd.Function (traced through its forward; the backward modelled is\n"
            "membound's own); one with @ or F.linear is a layer (membound mlp --variant).\n"
            "An operation the language lacks (indexing, a reshape, ...)\n"
            "stops the trace with its name, the script's file:line and what is supported.\n"
            "Needs python3 with torch (1.13 or later); no other command does.\n"
            "\n"
            "  --input NAME=SHAPE[:DTYPE][:nograd]\n"
            "                  one per tensor argument, in the function's order (or by its\n"
            "                  parameter names): SHAPE is sizes joined by x, each a number or\n"
            "                  DIM=number to name the dimension (4096x1024,\n"
            "                  batch=8xheads=16xseq=1024xseq=1024); DTYPE f32 (default), bf16\n"
            "                  or f16; nograd for a tensor without a gradient (a mask, a label)\n"
            "  --backward      model the backward pass too (a 'backward' line)\n"
            "  --name NAME     the variant's name line (default: none)\n"
            "  -o FILE         write the variant there (default: standard output)\n"
            "  --python PY     the python to run (default: python3, then /usr/bin/python3 when\n"
            "                  python3 has no torch)\n"
            "  -h, --help      this help\n");
}

/* helper's path into buf: share/membound/trace beside the binary, else the
 * installed one; 0, or 1 after an error line when it is missing or others
 * could have changed it. */
static int find_helper(char *buf, size_t size)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    buf[0] = '\0';
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(buf, size, "%s/../share/membound/trace/" HELPER, exe);
            if (access(buf, F_OK) != 0) buf[0] = '\0';
        }
    }
    if (!buf[0]) snprintf(buf, size, "%s/" HELPER, MB_TRACE_INSTALL_DIR);
    char real[PATH_MAX];
    if (!realpath(buf, real))
        return mb_cli_fail(1, "%s: the tracer is missing (%s): reinstall membound", buf, strerror(errno));
    snprintf(buf, size, "%s", real);
    /* the file and its folder: root's or this user's, writable by nobody else */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", real);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    const char *paths[2] = {real, dir};
    for (int i = 0; i < 2; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) return mb_cli_fail(1, "%s: %s", paths[i], strerror(errno));
        if (st.st_uid != 0 && st.st_uid != getuid())
            return mb_cli_fail(1, "%s not run: %s is of uid %u, neither root's nor yours: only a tracer that "
                               "nobody else can change is run", real, paths[i], (unsigned)st.st_uid);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
            return mb_cli_fail(1, "%s not run: %s is writable by others (mode %03o): only a tracer that nobody "
                               "else can change is run (chmod go-w)", real, paths[i], (unsigned)(st.st_mode & 0777));
    }
    return 0;
}

/* Runs argv, its standard output into *out (malloc'd, NUL-ended); its exit
 * status, 127 when it could not be run, or -1 on a failure here. */
static int run_capture(char **argv, char **out, size_t *out_len)
{
    int p[2];
    if (pipe(p) != 0) return -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b) break;
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) { free(b); b = NULL; break; }
            b = nb, cap *= 2;
        }
        ssize_t r = read(p[0], b + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(p[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) { free(b); return -1; }
    if (!b) return -1;
    b[n] = '\0';
    *out = b;
    *out_len = n;
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

int mb_cmd_trace(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"input", required_argument, 0, 'i'}, {"backward", no_argument, 0, 'b'},
        {"name", required_argument, 0, 'n'},  {"output", required_argument, 0, 'o'},
        {"python", required_argument, 0, 'p'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *inputs[64];
    int n_in = 0, backward = 0;
    const char *name = NULL, *out_path = NULL, *python = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (n_in == 64) return mb_cli_fail(2, "too many --input (at most 64)");
            inputs[n_in++] = optarg;
            break;
        case 'b': backward = 1; break;
        case 'n': name = optarg; break;
        case 'o': out_path = optarg; break;
        case 'p': python = optarg; break;
        case 'h': usage(stdout); return 0;
        default: return mb_cli_bad_option(c, argv, optind, optopt, "trace");
        }
    }
    if (optind >= argc) return mb_cli_fail(2, "trace: give SCRIPT.py:FUNCTION (run 'membound trace --help')");
    if (optind + 1 < argc) return mb_cli_fail(2, "trace: one SCRIPT.py:FUNCTION, got also '%s'", argv[optind + 1]);
    if (!n_in) return mb_cli_fail(2, "trace: no --input given: one per tensor argument (x=4096x1024:bf16)");
    const char *target = argv[optind];
    const char *colon = strrchr(target, ':');
    if (!colon || colon == target || !colon[1])
        return mb_cli_fail(2, "trace: '%s': expected SCRIPT.py:FUNCTION (layer.py:forward)", target);
    char script[PATH_MAX];
    if ((size_t)(colon - target) >= sizeof script) return mb_cli_fail(2, "trace: '%s': path too long", target);
    memcpy(script, target, (size_t)(colon - target));
    script[colon - target] = '\0';
    struct stat st;
    if (stat(script, &st) != 0) return mb_cli_fail(2, "%s: %s", script, strerror(errno));
    if (!S_ISREG(st.st_mode)) return mb_cli_fail(2, "%s: not a file", script);

    mb_err e;
    mb_outfile of;
    if (out_path && mb_outfile_open(&of, out_path, &e)) return mb_cli_fail_err(2, &e);
    char helper[PATH_MAX];
    if (find_helper(helper, sizeof helper)) {
        if (out_path) mb_outfile_abort(&of);
        return 1;
    }
    const char *pythons[2] = {python ? python : "python3", python ? NULL : "/usr/bin/python3"};
    char *args[16 + 2 * 64];
    char *text = NULL;
    size_t len = 0;
    int rc = 127;
    for (int k = 0; k < 2 && pythons[k]; k++) {
        int a = 0;
        args[a++] = (char *)pythons[k];
        args[a++] = "-I";
        args[a++] = "-B";
        args[a++] = helper;
        args[a++] = script;
        args[a++] = (char *)(colon + 1);
        args[a++] = "-";
        if (backward) args[a++] = "--backward";
        if (name) args[a++] = "--name", args[a++] = (char *)name;
        if (k == 0 && pythons[1]) args[a++] = "--quiet-no-torch";
        for (int i = 0; i < n_in; i++) args[a++] = "--input", args[a++] = (char *)inputs[i];
        args[a] = NULL;
        free(text);
        text = NULL;
        rc = run_capture(args, &text, &len);
        if (rc != NO_TORCH && rc != 127) break;
    }
    if (rc != 0) {
        free(text);
        if (out_path) mb_outfile_abort(&of);
        if (rc == 127) return mb_cli_fail(1, "trace: cannot run %s: install python3 with PyTorch (Debian: "
                                          "apt-get install python3-torch) or give --python", pythons[0]);
        if (rc == NO_TORCH) return 1;
        if (rc < 0) return mb_cli_fail(1, "trace: cannot run the tracer: %s", strerror(errno));
        return rc == 2 ? 2 : 1; /* the tracer printed its one error line */
    }
    /* the variant must parse as written: a trace that membound cannot read is a bug here, said so */
    mb_graph *g = NULL;
    mb_mmvar *mv = NULL;
    const int layer = mb_mmvar_text_multiplies(text); /* a product: membound mlp --variant models it */
    if (layer ? mb_mmvar_parse(text, "<trace>", MB_F32, &mv, &e) : mb_parse_variant(text, "<trace>", MB_F32, &g, &e)) {
        fprintf(stderr, "%s", text);
        free(text);
        if (out_path) mb_outfile_abort(&of);
        return mb_cli_fail(1, "trace: the variant written does not parse: %s", e.msg);
    }
    mb_graph_free(g);
    mb_mmvar_free(mv);
    if (!out_path) {
        fwrite(text, 1, len, stdout);
        free(text);
        return 0;
    }
    fwrite(text, 1, len, (FILE *)of.fp);
    free(text);
    if (mb_outfile_commit(&of, &e)) return mb_cli_fail_err(1, &e);
    fprintf(stderr, "membound: wrote %s (use: membound %s %s)\n", of.path, layer ? "mlp --variant" : "model", of.path);
    return 0;
}
