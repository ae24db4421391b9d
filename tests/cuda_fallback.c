/* cuda_fallback.c — a CUDA build on a machine without a usable GPU falls back
 * cleanly: the backend says why in one line, a CUDA run fails with a message
 * (no crash, no CUPTI call), and the CLI's `measure --backend cuda` exits 1
 * with an error while `--backend auto` runs on the CPU and says so.
 * Exits 77 (skipped) where a GPU is present: the fallback cannot be seen there. */
#define _GNU_SOURCE
#include "kernels_cuda.h"
#include "mb_cupti.h"
#include "mb_test.h"
#include "calibrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs cmd with stderr merged; output into out, returns the exit status. */
static int run(const char *cmd, char *out, size_t n)
{
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *fp = popen(full, "r");
    if (!fp) return -1;
    size_t len = 0;
    out[0] = '\0';
    char line[1024];
    while (fgets(line, sizeof line, fp)) {
        size_t l = strlen(line);
        if (len + l + 1 < n) {
            memcpy(out + len, line, l + 1);
            len += l;
        }
    }
    int st = pclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int one_line(const char *s)
{
    return s[0] != '\0' && strchr(s, '\n') == NULL;
}

int main(void)
{
    char why[512];
    int count = mb_kern_cuda_device_count(why, sizeof why);
    if (count > 0) {
        printf("a CUDA device is present: the no-driver fallback is not observable here\n");
        return 77;
    }
    printf("no GPU: %s\n", why);
    CHECK(one_line(why));

    why[0] = '\0';
    CHECK_EQ_I64(mb_meas_cuda_available(why, sizeof why), 0);
    CHECK(one_line(why));

    mb_err e;
    mb_kern_cuda_device dev;
    CHECK_EQ_I64(mb_kern_cuda_open(0, &dev, &e), MB_ERUN);
    CHECK(one_line(e.msg));

    /* CUPTI is gated on the driver: a clean error naming the CUDA call; a
     * build without CUPTI says so instead */
    mb_cupti *s = (mb_cupti *)1;
    CHECK_EQ_I64(mb_cupti_open(&s, &e), MB_ERUN);
    CHECK(s == NULL);
    CHECK(one_line(e.msg));
#ifdef MB_TEST_HAVE_CUPTI
    CHECK(strstr(e.msg, "cudaGetDeviceCount") != NULL);
#else
    CHECK(strstr(e.msg, "built without CUPTI") != NULL);
    char reason[128];
    CHECK(!strcmp(mb_cupti_reason(&e, reason, sizeof reason), "built without CUPTI at mb_cupti_open"));
#endif

    /* a CUDA run of a real plan fails with the reason, nothing else */
    mb_graph *g = NULL;
    mb_plan *p = NULL;
    CHECK_EQ_I64(mb_parse_expr("y = sin(x)**2 + cos(x)**2", MB_F32, &g, &e), MB_OK);
    if (g && mb_plan_build(g, MB_PLAN_FUSED, &p, &e) == MB_OK) {
        mb_meas_config c;
        mb_meas_config_default(&c);
        mb_meas_record row, pk[1];
        memset(&row, 0, sizeof row);
        memset(pk, 0, sizeof pk);
        snprintf(row.variant, sizeof row.variant, "expr");
        CHECK_EQ_I64(mb_meas_cuda_run(p, 4096, &c, &row, pk, why, sizeof why, &e), MB_ERUN);
        CHECK(one_line(e.msg));
        mb_meas_backend got = MB_MEAS_CUDA;
        char note[256] = "";
        CHECK_EQ_I64(mb_meas_resolve_backend(MB_MEAS_AUTO, &got, note, sizeof note, &e), MB_OK);
        CHECK_EQ_I64(got, MB_MEAS_CPU);
        CHECK(strstr(note, "cpu") != NULL);
        CHECK_EQ_I64(mb_meas_resolve_backend(MB_MEAS_CUDA, &got, note, sizeof note, &e), MB_ERUN);
        /* the GPU calibration too */
        mb_device d;
        char summary[256] = "x";
        CHECK_EQ_I64(mb_cal_cuda(&c, &d, summary, sizeof summary, &e), MB_ERUN);
        CHECK(one_line(e.msg));
        CHECK(summary[0] == '\0');
    }
    mb_plan_free(p);
    mb_graph_free(g);

    /* the CLI */
    const char *bin = getenv("MB_BIN");
    char out[8192], cmd[1024];
    if (bin && access(bin, X_OK) == 0) {
        snprintf(cmd, sizeof cmd, "'%s' measure --help", bin);
        if (run(cmd, out, sizeof out) == 0) {
            char csv[] = "/tmp/mb_cuda_fallback_XXXXXX";
            int fd = mkstemp(csv);
            CHECK(fd >= 0);
            if (fd >= 0) close(fd);
            snprintf(cmd, sizeof cmd, "'%s' measure copy --backend cuda --device h100-sxm --sizes 2^12 --timeout 1 -q -o '%s'", bin, csv);
            int rc = run(cmd, out, sizeof out);
            printf("--backend cuda: exit %d: %s", rc, out);
            CHECK_EQ_I64(rc, 1);
            CHECK(strstr(out, "membound: error:") != NULL);
            snprintf(cmd, sizeof cmd, "'%s' measure copy --backend auto --device h100-sxm --sizes 2^12 --timeout 1 -o '%s'", bin, csv);
            rc = run(cmd, out, sizeof out);
            printf("--backend auto: exit %d: %s", rc, out);
            CHECK_EQ_I64(rc, 0);
            CHECK(strstr(out, "cpu") != NULL);
            FILE *fp = fopen(csv, "r");
            int cpu_rows = 0;
            if (fp) {
                char line[2048];
                while (fgets(line, sizeof line, fp))
                    if (line[0] != '#' && strstr(line, ",cpu,copy,")) cpu_rows++;
                fclose(fp);
            }
            CHECK(cpu_rows > 0);
            unlink(csv);
        } else {
            printf("this build's membound has no measure command: CLI checks skipped\n");
        }
    } else {
        printf("MB_BIN not set or not executable: CLI checks skipped\n");
    }
    return mb_test_done();
}
