/* test_outfile.c — output files appear whole or not at all, and only where
 * a file belongs: regular files are replaced atomically (mode kept), links
 * are written through, devices written directly, directories / FIFOs /
 * dangling links refused at open; a write error (/dev/full) replaces
 * nothing, in a group of files too; SIGKILL mid-write leaves no temporary;
 * a signal ignored at start (nohup) stays ignored; a 255-byte name works;
 * a partial commit or one that lost a race to another run keeps its file
 * beside the one that is there. Links another user planted: tests/
 * outputs_catalogue.sh (as root). */
#define _GNU_SOURCE
#include "mb_test.h"
#include "membound_model.h"
#include "mb_child.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static const char *at(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static int file_is(const char *path, const char *text)
{
    char buf[256] = {0};
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return !strcmp(buf, text);
}

/* Entries of dir other than . and .. */
static int entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static int put(const char *path, const char *text, mb_err *e)
{
    mb_outfile o;
    int rc = mb_outfile_open(&o, path, e);
    if (rc) return rc;
    fputs(text, (FILE *)o.fp);
    return mb_outfile_commit(&o, e);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/mb_outfile_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) return 1;
    mb_err e;

    /* a full device: the commit names the reason, not EIO (the failed
     * write's errno used to be cleared before the stream's error flag was read) */
    {
        mb_outfile o;
        CHECK_EQ_I64(mb_outfile_open(&o, "/dev/full", &e), MB_OK);
        for (int i = 0; i < 100000; i++) fputs("a row of a report that does not fit\n", (FILE *)o.fp);
        CHECK_EQ_I64(mb_outfile_commit(&o, &e), MB_ERUN);
        if (!strstr(e.msg, strerror(ENOSPC))) fprintf(stderr, "  /dev/full: %s\n", e.msg);
        CHECK(strstr(e.msg, strerror(ENOSPC)) != NULL);
    }

    /* a new file, then a replacement that keeps the old file's mode */
    CHECK_EQ_I64(put(at("a.csv"), "one\n", &e), MB_OK);
    CHECK(file_is(at("a.csv"), "one\n"));
    chmod(at("a.csv"), 0640);
    CHECK_EQ_I64(put(at("a.csv"), "two\n", &e), MB_OK);
    CHECK(file_is(at("a.csv"), "two\n"));
    struct stat st;
    CHECK(stat(at("a.csv"), &st) == 0 && (st.st_mode & 07777) == 0640);
    CHECK_EQ_I64(entries(), 1);

    /* an open file is invisible until commit; abort leaves nothing */
    mb_outfile o;
    CHECK_EQ_I64(mb_outfile_open(&o, at("b.csv"), &e), MB_OK);
    fputs("partial", (FILE *)o.fp);
    CHECK(access(at("b.csv"), F_OK) != 0);
    mb_outfile_abort(&o);
    CHECK_EQ_I64(entries(), 1);

    /* a link is written through: the target replaced, the link kept */
    CHECK(symlink("a.csv", at("link.csv")) == 0);
    CHECK_EQ_I64(put(at("link.csv"), "three\n", &e), MB_OK);
    struct stat lst;
    CHECK(lstat(at("link.csv"), &lst) == 0 && S_ISLNK(lst.st_mode));
    CHECK(file_is(at("a.csv"), "three\n"));
    CHECK(symlink("nowhere.csv", at("dangling.csv")) == 0);
    CHECK_EQ_I64(put(at("dangling.csv"), "x", &e), MB_EINPUT);
    CHECK(strstr(e.msg, "link to nothing") != NULL);

    /* refused at open: a directory, a FIFO, a missing folder */
    CHECK(mkdir(at("sub"), 0755) == 0);
    CHECK_EQ_I64(mb_outfile_open(&o, at("sub"), &e), MB_EINPUT);
    CHECK(strstr(e.msg, "is a directory") != NULL);
    CHECK(mkfifo(at("fifo"), 0600) == 0);
    CHECK_EQ_I64(mb_outfile_open(&o, at("fifo"), &e), MB_EINPUT);
    CHECK(strstr(e.msg, "FIFO") != NULL);
    CHECK_EQ_I64(mb_outfile_open(&o, at("no/such/x.csv"), &e), MB_EINPUT);
    CHECK_EQ_I64(mb_outfile_open(&o, "", &e), MB_EINPUT);
    int n_before = entries();

    /* devices: /dev/null written directly and still a device; /dev/full
     * reports the full disk */
    CHECK_EQ_I64(put("/dev/null", "nothing\n", &e), MB_OK);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    if (access("/dev/full", W_OK) == 0) {
        CHECK_EQ_I64(put("/dev/full", "x\n", &e), MB_ERUN);
        CHECK(strstr(e.msg, "write failed") != NULL);

        /* a group: the error in one file replaces none */
        mb_outfile g1, g2;
        CHECK_EQ_I64(mb_outfile_open(&g1, at("a.csv"), &e), MB_OK);
        CHECK_EQ_I64(mb_outfile_open(&g2, "/dev/full", &e), MB_OK);
        fputs("four\n", (FILE *)g1.fp);
        fputs("four\n", (FILE *)g2.fp);
        mb_outfile *both[] = {&g1, &g2};
        CHECK_EQ_I64(mb_outfile_commit_all(both, 2, &e), MB_ERUN);
        CHECK(file_is(at("a.csv"), "three\n"));
    }
    CHECK_EQ_I64(entries(), n_before);

    /* SIGKILL while writing leaves no temporary behind */
    pid_t pid = fork();
    if (pid == 0) {
        mb_outfile k;
        if (mb_outfile_open(&k, at("killed.csv"), &e) != MB_OK) _exit(3);
        fputs("half", (FILE *)k.fp);
        fflush((FILE *)k.fp);
        raise(SIGKILL);
        _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK_EQ_I64(entries(), n_before);

    /* a signal ignored at start stays ignored (nohup); others get handlers */
    pid = fork();
    if (pid == 0) {
        signal(SIGHUP, SIG_IGN);
        mb_outfile_install_signal_cleanup();
        struct sigaction hup, pipe_;
        sigaction(SIGHUP, NULL, &hup);
        sigaction(SIGPIPE, NULL, &pipe_);
        _exit(hup.sa_handler == SIG_IGN && pipe_.sa_handler != SIG_DFL && pipe_.sa_handler != SIG_IGN ? 0 : 1);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* a child being waited for (mb_child_run) ends with its parent, and
     * its whole process group with it: here the shell's own child, which
     * signals the parent and then sleeps */
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        mb_outfile_install_signal_cleanup();
        char cmd[128];
        snprintf(cmd, sizeof cmd, "sleep 30 & echo $! >&%d; kill -TERM $PPID; wait", pfd[1]);
        char *argv[] = {(char *)"sh", (char *)"-c", cmd, NULL};
        mb_child_spec sp = {argv, NULL, NULL, NULL, 20, {NULL}};
        mb_child_result res;
        mb_child_run(&sp, &res, &e);
        _exit(3);
    }
    close(pfd[1]);
    pid_t kid = 0;
    char kbuf[32] = {0};
    CHECK(read(pfd[0], kbuf, sizeof kbuf - 1) > 0);
    kid = (pid_t)atoi(kbuf);
    close(pfd[0]);
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) {
        /* the grandchild is reparented: gone once kill(pid, 0) fails or it is a zombie */
        char stp[64], buf[256] = {0};
        snprintf(stp, sizeof stp, "/proc/%d/stat", (int)kid);
        FILE *sf = fopen(stp, "r");
        if (!sf) { gone = 1; break; }
        size_t nr = fread(buf, 1, sizeof buf - 1, sf);
        fclose(sf);
        buf[nr] = '\0';
        const char *rp = strrchr(buf, ')');
        if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X')) gone = 1;
        else usleep(10000);
    }
    CHECK(gone);
    if (!gone && kid > 0) kill(kid, SIGKILL);

    /* a 255-byte name: its temporary is short and hidden, so it has room */
    char name255[256];
    memset(name255, 'n', 255);
    name255[255] = '\0';
    CHECK_EQ_I64(put(at(name255), "long\n", &e), MB_OK);
    CHECK(file_is(at(name255), "long\n"));
    CHECK(unlink(at(name255)) == 0);

    /* a partial commit never replaces a file that was there: kept beside
     * it as NAME.partial-PID; where nothing was, written in place */
    char kept_name[64];
    snprintf(kept_name, sizeof kept_name, "a.csv.partial-%ld", (long)getpid());
    int kept = -1;
    CHECK_EQ_I64(mb_outfile_open(&o, at("a.csv"), &e), MB_OK);
    fputs("part\n", (FILE *)o.fp);
    mb_outfile *one[] = {&o};
    CHECK_EQ_I64(mb_outfile_commit_partial(one, 1, &kept, &e), MB_OK);
    CHECK(kept == 1 && file_is(at("a.csv"), "three\n") && file_is(at(kept_name), "part\n"));
    CHECK(strcmp(o.kept, at(kept_name)) == 0);
    CHECK(unlink(at(kept_name)) == 0);
    CHECK_EQ_I64(mb_outfile_open(&o, at("new.csv"), &e), MB_OK);
    fputs("part\n", (FILE *)o.fp);
    CHECK_EQ_I64(mb_outfile_commit_partial(one, 1, &kept, &e), MB_OK);
    CHECK(kept == 0 && file_is(at("new.csv"), "part\n") && o.kept[0] == '\0');
    CHECK(unlink(at("new.csv")) == 0);

    /* another run wrote the file meanwhile: not replaced, this one's kept
     * beside it as NAME.conflict-PID and named in the message */
    CHECK_EQ_I64(mb_outfile_open(&o, at("a.csv"), &e), MB_OK);
    fputs("mine\n", (FILE *)o.fp);
    CHECK_EQ_I64(put(at("a.csv"), "theirs\n", &e), MB_OK);
    CHECK_EQ_I64(mb_outfile_commit(&o, &e), MB_ERUN);
    snprintf(kept_name, sizeof kept_name, "a.csv.conflict-%ld", (long)getpid());
    CHECK(file_is(at("a.csv"), "theirs\n") && file_is(at(kept_name), "mine\n"));
    CHECK(strstr(e.msg, "written by another run") && strstr(e.msg, kept_name));
    CHECK(unlink(at(kept_name)) == 0);
    CHECK_EQ_I64(entries(), n_before);

    /* a long path keeps its reason in the message */
    char longp[3000];
    memset(longp, 'd', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    longp[0] = '/';
    CHECK(mb_outfile_open(&o, longp, &e) != MB_OK);
    CHECK(strstr(e.msg, "cannot write") != NULL || strstr(e.msg, "too long") != NULL);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return mb_test_done();
}
