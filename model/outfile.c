/* outfile.c — output files that appear whole or not at all.
 * Temporary file + rename; open temporaries are removed on SIGINT/SIGTERM.
 * Does not decide what is written. */
#include "membound_model.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Temporaries currently open, for the signal handler (async-signal-safe:
 * it only calls unlink on fixed buffers). */
#define MB_OUTFILE_MAX 32
static mb_outfile *volatile open_files[MB_OUTFILE_MAX];

static void track(mb_outfile *o, int on)
{
    for (int i = 0; i < MB_OUTFILE_MAX; i++) {
        if (on && open_files[i] == NULL) { open_files[i] = o; return; }
        if (!on && open_files[i] == o) { open_files[i] = NULL; return; }
    }
}

int mb_outfile_open(mb_outfile *o, const char *path, mb_err *err)
{
    memset(o, 0, sizeof *o);
    if (strlen(path) >= sizeof o->path)
        return mb_err_set(err, MB_EINPUT, "%s: path too long", path);
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *fp = fopen(o->tmp, "w");
    if (!fp)
        return mb_err_set(err, MB_ERUN, "%s: cannot write: %s", path, strerror(errno));
    o->fp = fp;
    track(o, 1);
    return MB_OK;
}

int mb_outfile_commit(mb_outfile *o, mb_err *err)
{
    FILE *fp = o->fp;
    if (!fp)
        return mb_err_set(err, MB_ERUN, "%s: not open", o->path);
    int bad = ferror(fp);
    if (fclose(fp) != 0) bad = 1;
    o->fp = NULL;
    if (bad) {
        unlink(o->tmp);
        track(o, 0);
        return mb_err_set(err, MB_ERUN, "%s: write failed: %s", o->path, strerror(errno));
    }
    if (rename(o->tmp, o->path) != 0) {
        int e = errno;
        unlink(o->tmp);
        track(o, 0);
        return mb_err_set(err, MB_ERUN, "%s: cannot rename into place: %s", o->path, strerror(e));
    }
    track(o, 0);
    return MB_OK;
}

void mb_outfile_abort(mb_outfile *o)
{
    if (o->fp) {
        fclose(o->fp);
        o->fp = NULL;
        unlink(o->tmp);
    }
    track(o, 0);
}

static void on_signal(int sig)
{
    for (int i = 0; i < MB_OUTFILE_MAX; i++) {
        mb_outfile *o = open_files[i];
        if (o) unlink(o->tmp);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

void mb_outfile_install_signal_cleanup(void)
{
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
}
