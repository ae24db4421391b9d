/* fuzz_jit.c — libFuzzer target for the JIT's C generator (kernels/jit_cpu.c):
 * any bytes as a random lowered kernel (reads, nodes of every op with values
 * or scalars of any bits as operands, sin/cos pairs, writes), its generated
 * source through the compiler the JIT builds with (-fsyntax-only). A source
 * that does not compile is a finding: it is kept (its path on stderr) and the
 * target aborts. Slow by nature (a compiler run per input). Without SLEEF
 * (no JIT) every input is a no-op. */
#include "kernels_int.h"

#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NODES 40

typedef struct bytes {
    const uint8_t *p;
    size_t n;
} bytes;

static unsigned next(bytes *b)
{
    if (!b->n) return 0;
    b->n--;
    return *b->p++;
}

static float next_float(bytes *b)
{
    uint32_t u = 0;
    for (int k = 0; k < 4; k++) u = u << 8 | next(b);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Operand of node j: a value before it, or a scalar of any bits. */
static void pick_operand(bytes *b, int n_vals, int *v, float *s)
{
    unsigned k = next(b);
    *s = 0.0f;
    *v = -1;
    if (k & 1) *s = k & 2 ? next_float(b) : (float)(int)(k >> 2) - 16.0f;
    else *v = (int)(k >> 1) % n_vals;
}

/* Decodes a kernel as exec_cpu.c lowers one; returns the node count. */
static int decode(bytes *b, int *n_reads, mb_kern_pnode *nodes, int *w_val, int *n_writes)
{
    *n_reads = 1 + (int)(next(b) % 4);
    int n_nodes = 1 + (int)(next(b) % MAX_NODES);
    for (int j = 0; j < n_nodes; j++) {
        mb_kern_pnode *pn = &nodes[j];
        memset(pn, 0, sizeof *pn);
        pn->op = (mb_op)(1 + next(b) % (MB_OP_COUNT - 1));
        pn->pair = -1;
        pick_operand(b, *n_reads + j, &pn->va, &pn->sa);
        pn->vb = -1;
        if (mb_op_arity(pn->op) == 2) pick_operand(b, *n_reads + j, &pn->vb, &pn->sb);
    }
    /* sin/cos pairs on one operand: the later one is skipped (computed with the first) */
    for (int j = 0; j + 1 < n_nodes; j++) {
        if ((nodes[j].op != MB_OP_SIN && nodes[j].op != MB_OP_COS) || nodes[j].skip || !(next(b) & 1))
            continue;
        mb_kern_pnode *q = &nodes[j + 1];
        memset(q, 0, sizeof *q);
        q->op = nodes[j].op == MB_OP_SIN ? MB_OP_COS : MB_OP_SIN;
        q->va = nodes[j].va;
        q->sa = nodes[j].sa;
        q->vb = -1;
        q->pair = -1;
        q->skip = 1;
        nodes[j].pair = *n_reads + j + 1;
        j++;
    }
    *n_writes = 1 + (int)(next(b) % 4);
    for (int w = 0; w < *n_writes; w++) w_val[w] = (int)(next(b) % (unsigned)(*n_reads + n_nodes));
    return n_nodes;
}

/* The build's compiler with its flags and -fsyntax-only on path: 0 when it compiles. */
static int syntax_check(const char *path)
{
    static char flags[4096];
    char *argv[128];
    int n = 0;
    argv[n++] = (char *)mb_kern_jit_build_cc();
    snprintf(flags, sizeof flags, "%s", mb_kern_jit_build_cflags());
    char *save = NULL;
    for (char *tok = strtok_r(flags, " ", &save); tok && n < 120; tok = strtok_r(NULL, " ", &save))
        if (strcmp(tok, "-shared")) argv[n++] = tok;
    argv[n++] = (char *)"-fsyntax-only";
    argv[n++] = (char *)path;
    argv[n] = NULL;
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ)) abort(); /* no compiler: a broken setup */
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) abort(); /* libFuzzer's timer interrupts the wait */
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!mb_kern_jit_build_cflags()[0] || !mb_kern_jit_build_cc()[0]) return 0; /* no JIT here */
    bytes b = {data, size};
    mb_kern_pnode nodes[MAX_NODES];
    int w_val[4], n_reads = 0, n_writes = 0;
    int n_nodes = decode(&b, &n_reads, nodes, w_val, &n_writes);
    char *src = mb_kern_jit_source(n_reads, nodes, n_nodes, w_val, n_writes);
    if (!src) return 0; /* the interpreter runs such a kernel */
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/fuzz_jit_XXXXXX.c", tmp && tmp[0] ? tmp : "/tmp");
    int fd = mkstemps(path, 2);
    if (fd < 0) abort();
    size_t len = strlen(src);
    if (write(fd, src, len) != (ssize_t)len) abort();
    close(fd);
    free(src);
    if (syntax_check(path)) {
        fprintf(stderr, "fuzz_jit: generated source does not compile: %s\n", path);
        abort();
    }
    unlink(path);
    return 0;
}
