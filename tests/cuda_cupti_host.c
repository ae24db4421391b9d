/* cuda_cupti_host.c — the CUPTI wrapper's host side, which needs no GPU: the
 * three DRAM/time metrics fit one pass on Hopper, Ampere and Blackwell chips;
 * a bad chip name fails with CUPTI's code in the reason; and libcupti /
 * libnvperf_host are found through the binary's DT_RPATH alone (re-run
 * under the dynamic loader with its cache off and LD_LIBRARY_PATH unset),
 * and that RPATH has no empty entry (the current folder). */
#define _GNU_SOURCE
#include "mb_cupti.h"
#include "mb_test.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int child_check(void)
{
    mb_err e;
    int passes = 0;
    if (mb_cupti_host_passes("GH100", &passes, &e) != MB_OK) {
        fprintf(stderr, "child: %s\n", e.msg);
        return 1;
    }
    return passes == 1 ? 0 : 1;
}

/* This executable's DT_RPATH (kind "RPATH") or DT_RUNPATH ("RUNPATH") string,
 * read from its ELF file's .dynamic section. Returns 0, or -1 when unreadable. */
static int rpath_of_self(char *kind, char *value, size_t n)
{
    kind[0] = value[0] = '\0';
    FILE *fp = fopen("/proc/self/exe", "rb");
    if (!fp) return -1;
    int rc = -1;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    char *str = NULL;
    Elf64_Dyn *dyn = NULL;
    if (fread(&eh, sizeof eh, 1, fp) != 1 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr))
        goto out;
    sh = calloc(eh.e_shnum, sizeof *sh);
    if (!sh || fseek(fp, (long)eh.e_shoff, SEEK_SET) || fread(sh, sizeof *sh, eh.e_shnum, fp) != eh.e_shnum) goto out;
    for (int i = 0; i < eh.e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNAMIC || sh[i].sh_link >= eh.e_shnum) continue;
        const Elf64_Shdr *ss = &sh[sh[i].sh_link];
        dyn = malloc(sh[i].sh_size);
        str = malloc(ss->sh_size + 1);
        if (!dyn || !str || fseek(fp, (long)sh[i].sh_offset, SEEK_SET) || fread(dyn, 1, sh[i].sh_size, fp) != sh[i].sh_size ||
            fseek(fp, (long)ss->sh_offset, SEEK_SET) || fread(str, 1, ss->sh_size, fp) != ss->sh_size)
            goto out;
        str[ss->sh_size] = '\0';
        for (size_t d = 0; d < sh[i].sh_size / sizeof *dyn && dyn[d].d_tag != DT_NULL; d++) {
            if (dyn[d].d_tag != DT_RPATH && dyn[d].d_tag != DT_RUNPATH) continue;
            if (dyn[d].d_un.d_val >= ss->sh_size) goto out;
            strcpy(kind, dyn[d].d_tag == DT_RPATH ? "RPATH" : "RUNPATH");
            snprintf(value, n, "%s", str + dyn[d].d_un.d_val);
        }
        rc = 0;
        break;
    }
out:
    free(sh);
    free(str);
    free(dyn);
    fclose(fp);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--child")) return child_check();

    mb_err e;
    int passes = -1;
    const char *chips[] = {"GH100", "GA100", "GB100"};
    for (int i = 0; i < 3; i++) {
        int rc = mb_cupti_host_passes(chips[i], &passes, &e);
        CHECK_EQ_I64(rc, MB_OK);
        if (rc) fprintf(stderr, "%s: %s\n", chips[i], e.msg);
        CHECK_EQ_I64(passes, 1);
    }

    int rc = mb_cupti_host_passes("NOCHIP9", &passes, &e);
    CHECK_EQ_I64(rc, MB_ERUN);
    CHECK(strstr(e.msg, "at cuptiProfilerHostInitialize") != NULL);
    char reason[128];
    mb_cupti_reason(&e, reason, sizeof reason);
    CHECK(strncmp(reason, "CUPTI_ERROR_", 12) == 0);
    CHECK(strchr(reason, ':') == NULL && strchr(reason, ',') == NULL);

    mb_err made;
    mb_err_set(&made, MB_ERUN, "X (1) at a, b: message: more");
    CHECK(!strcmp(mb_cupti_reason(&made, reason, sizeof reason), "X (1) at a; b"));

    /* DT_RPATH, not RUNPATH: only the former reaches libcupti's dlopen */
    char kind[16], value[2048];
    CHECK_EQ_I64(rpath_of_self(kind, value, sizeof value), 0);
    printf("%s: %s\n", kind[0] ? kind : "no rpath", value);
    CHECK(!strcmp(kind, "RPATH"));
    /* no empty entry: the loader reads one as the current folder */
    size_t vlen = strlen(value);
    CHECK(vlen > 0 && value[0] != ':' && value[vlen - 1] != ':' && !strstr(value, "::"));

    /* the same check in a process that can find the libraries only through
     * the RPATH: loader cache off, LD_LIBRARY_PATH unset */
    const char *loaders[] = {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"};
    const char *ld = NULL;
    for (int i = 0; i < 2; i++)
        if (access(loaders[i], X_OK) == 0) ld = loaders[i];
    if (ld) {
        char self[4096];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        CHECK(len > 0);
        if (len > 0) {
            self[len] = '\0';
            pid_t pid = fork();
            if (pid == 0) {
                unsetenv("LD_LIBRARY_PATH");
                execl(ld, ld, "--inhibit-cache", self, "--child", (char *)NULL);
                _exit(127);
            }
            int status = 0;
            waitpid(pid, &status, 0);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            printf("cache-less run through %s: exit %d\n", ld, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
    } else {
        printf("no known dynamic loader path: cache-less run skipped\n");
    }
    return mb_test_done();
}
