/* attention_fig.c — `membound attention --figures DIR`: the data of the
 * attention figures, from the model alone, and their drawing through the
 * reports module (plots/attn_seq.gp, attn_tflops.gp, attn_frontier.gp,
 * attn_oom.gp). Per device: attn_DEV.dat (time, DRAM bytes, saved memory
 * and the papers' TFLOP/s of each plan against seq) drawn as attn_seq_DEV
 * and attn_tflops_DEV; attn_frontier_DEV (saved memory against time at one
 * seq). Across devices: attn_oom (the longest seq each plan fits). Measures
 * nothing. */
#include "attention_out.h"
#include "cli_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* From the reports module when it is built (it needs GSL), NULL without it,
 * as cmd_plan.c declares it (report.h is not there without the module). */
#pragma weak mb_rpt_draw_figure
int mb_rpt_draw_figure(const char *stem, const char *data, const char *image,
                       char *(*env)(const char *name), mb_err *err);

/* The seq of the frontier figure when --dims gives none. */
#define FRONTIER_SEQ_DEFAULT 8192

static const int order[MB_ATTN_N_PLANS] = {MB_ATTN_STANDARD, MB_ATTN_RECOMPUTE, MB_ATTN_FLASH};

/* "attention, batch 1, heads 32, head_dim 128, bf16[, causal]" */
static void shape_title(const mb_attn *a, char *buf, size_t size)
{
    snprintf(buf, size, "attention forward and backward, batch %lld, %lld heads of dim %lld, %s%s",
             (long long)a->batch, (long long)a->heads, (long long)a->head_dim, mb_dtype_name(a->dtype),
             a->causal ? ", causal" : "");
}

typedef struct figs {
    const char *dir;
    int drawn, failed;
    char first_err[512];
} figs;

/* Draws DIR/IMAGE.png from DIR/DAT with plots/STEM.gp; a failure is noted
 * once and the data stays. */
static void draw(figs *f, const char *stem, const char *dat, const char *image)
{
    char dpath[4200], ipath[4200];
    snprintf(dpath, sizeof dpath, "%s/%s", f->dir, dat);
    snprintf(ipath, sizeof ipath, "%s/%s.png", f->dir, image);
    mb_err e;
    if (!mb_rpt_draw_figure) {
        if (!f->failed++)
            snprintf(f->first_err, sizeof f->first_err, "drawing needs the reports module (GSL): run gnuplot -c "
                                                        "plots/%s.gp %s %s", stem, dpath, ipath);
        return;
    }
    if (mb_rpt_draw_figure(stem, dpath, ipath, getenv, &e)) {
        if (!f->failed++) snprintf(f->first_err, sizeof f->first_err, "%s", e.msg);
        return;
    }
    f->drawn++;
    printf("%s\n", ipath);
}

/* Opens DIR/NAME for writing whole; 0 or the exit code after one line. */
static int open_dat(const figs *f, const char *name, mb_outfile *of)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    mb_err e;
    int rc = mb_outfile_open(of, path, &e);
    return rc ? mb_cli_fail_err(rc, &e) : 0;
}

static int close_dat(mb_outfile *of)
{
    mb_err e;
    int rc = mb_outfile_commit(of, &e);
    return rc ? mb_cli_fail_err(rc, &e) : 0;
}

/* time, DRAM, saved and TFLOP/s against seq on one device */
static int seq_data(figs *f, const mb_attn *a, const mb_device *d, const int64_t *seqs, int n)
{
    char name[300], title[300];
    snprintf(name, sizeof name, "attn_%s.dat", d->name);
    mb_outfile of;
    int rc = open_dat(f, name, &of);
    if (rc) return rc;
    FILE *fp = of.fp;
    shape_title(a, title, sizeof title);
    mb_attn t = *a;
    t.seq = seqs[0];
    fprintf(fp, "title \"%s\"\ndevice \"%s (%s)\"\n", title, d->label[0] ? d->label : d->name, d->name);
    fprintf(fp, "mem_gb %.6g\n", d->mem_gb);
    for (int k = 0; k < MB_ATTN_N_PLANS; k++) {
        int64_t m = d->mem_gb > 0 ? mb_attn_max_seq(&t, (mb_attn_plan_id)order[k], d->mem_gb * 1e9) : 0;
        fprintf(fp, "max_seq_%s %lld\n", mb_attn_plan_name((mb_attn_plan_id)order[k]), (long long)m);
    }
    mb_attn_est e;
    mb_err err;
    if ((rc = mb_attn_estimate(&t, d, &e, &err))) {
        mb_outfile_abort(&of);
        return mb_cli_fail_err(2, &err);
    }
    fprintf(fp, "peak_tflops %.6g\npeak_key \"%s\"\n\n\n", e.peak_flops_s / 1e12, e.peak_key);
    fprintf(fp, "# seq, time ms (standard recompute flash), DRAM GB (same), saved GB (same), TFLOP/s forward and "
                "backward (same), TFLOP/s forward (standard flash)\n");
    for (int i = 0; i < n; i++) {
        t.seq = seqs[i];
        if ((rc = mb_attn_estimate(&t, d, &e, &err))) {
            mb_outfile_abort(&of);
            return mb_cli_fail_err(2, &err);
        }
        const double fwd_flops = e.model_flops / 3.5;
        fprintf(fp, "%lld", (long long)seqs[i]);
        for (int k = 0; k < MB_ATTN_N_PLANS; k++) fprintf(fp, " %.6g", e.plan[order[k]].time_s * 1e3);
        for (int k = 0; k < MB_ATTN_N_PLANS; k++)
            fprintf(fp, " %.6g", (e.plan[order[k]].dram_read_bytes + e.plan[order[k]].dram_write_bytes) / 1e9);
        for (int k = 0; k < MB_ATTN_N_PLANS; k++) fprintf(fp, " %.6g", e.plan[order[k]].saved_bytes / 1e9);
        for (int k = 0; k < MB_ATTN_N_PLANS; k++) fprintf(fp, " %.6g", e.model_flops / e.plan[order[k]].time_s / 1e12);
        fprintf(fp, " %.6g %.6g\n", fwd_flops / e.plan[MB_ATTN_STANDARD].fwd_time_s / 1e12,
                fwd_flops / e.plan[MB_ATTN_FLASH].fwd_time_s / 1e12);
    }
    if ((rc = close_dat(&of))) return rc;
    char img[300];
    snprintf(img, sizeof img, "attn_seq_%s", d->name);
    draw(f, "attn_seq", name, img);
    snprintf(img, sizeof img, "attn_tflops_%s", d->name);
    draw(f, "attn_tflops", name, img);
    return 0;
}

/* saved memory against time at one seq, the frontier's steps */
static void steps(FILE *fp, const mb_attn_est *e, unsigned mask)
{
    int ord[MB_ATTN_N_PLANS], n = mb_attn_frontier(e, mask, ord);
    double xmax = 0;
    for (int p = 0; p < MB_ATTN_N_PLANS; p++)
        if (e->plan[p].saved_bytes > xmax) xmax = e->plan[p].saved_bytes;
    for (int i = 0; i < n; i++) fprintf(fp, "%.6g %.6g\n", e->plan[ord[i]].saved_bytes / 1e6, e->plan[ord[i]].time_s * 1e3);
    if (n) fprintf(fp, "%.6g %.6g\n", 1.5 * xmax / 1e6, e->plan[ord[n - 1]].time_s * 1e3);
    fprintf(fp, "\n\n");
}

static int frontier_data(figs *f, const mb_attn *a, const mb_device *d)
{
    mb_attn t = *a;
    if (t.seq < 1) t.seq = FRONTIER_SEQ_DEFAULT;
    t.backward = 1;
    mb_attn_est e;
    mb_err err;
    int rc = mb_attn_estimate(&t, d, &e, &err);
    if (rc) return mb_cli_fail_err(2, &err);
    char name[300], title[300];
    snprintf(name, sizeof name, "attn_frontier_%s.dat", d->name);
    mb_outfile of;
    if ((rc = open_dat(f, name, &of))) return rc;
    FILE *fp = of.fp;
    shape_title(&t, title, sizeof title);
    fprintf(fp, "title \"%s, seq %lld: memory kept for backward against time\"\ndevice \"%s (%s)\"\n\n\n", title,
            (long long)t.seq, d->label[0] ? d->label : d->name, d->name);
    int ord[MB_ATTN_N_PLANS], n = mb_attn_frontier(&e, MB_ATTN_ALL_PLANS, ord);
    for (int k = 0; k < MB_ATTN_N_PLANS; k++) {
        const mb_attn_plan *p = &e.plan[order[k]];
        int on = 0;
        for (int i = 0; i < n; i++) on |= ord[i] == order[k];
        mb_attn_tensor kt[MB_ATTN_MAX_KEPT];
        int nk = mb_attn_kept(&t, p->id, kt);
        char kept[128] = "";
        for (int j = 0; j < nk; j++)
            snprintf(kept + strlen(kept), sizeof kept - strlen(kept), "%s%s", j ? " + " : "", kt[j].name);
        fprintf(fp, "%s %.6g %.6g %d \"%s: keeps %s\"\n", mb_attn_plan_name(p->id), p->saved_bytes / 1e6,
                p->time_s * 1e3, on, mb_attn_plan_name(p->id), kept);
    }
    fprintf(fp, "\n\n");
    steps(fp, &e, MB_ATTN_ALL_PLANS);
    steps(fp, &e, MB_ATTN_UNFUSED_PLANS);
    if ((rc = close_dat(&of))) return rc;
    char img[300];
    snprintf(img, sizeof img, "attn_frontier_%s", d->name);
    draw(f, "attn_frontier", name, img);
    return 0;
}

static int oom_data(figs *f, const mb_attn *a, const mb_device *dv, const int *ok, int nd)
{
    mb_outfile of;
    int rc = open_dat(f, "attn_oom.dat", &of);
    if (rc) return rc;
    FILE *fp = of.fp;
    char title[300];
    shape_title(a, title, sizeof title);
    fprintf(fp, "title \"%s: the longest seq that fits\"\n\n\n", title);
    mb_attn t = *a;
    t.backward = 1;
    int rows = 0;
    for (int i = 0; i < nd; i++) {
        if (!ok[i] || !(dv[i].mem_gb > 0)) continue;
        fprintf(fp, "%s %.6g", dv[i].name, dv[i].mem_gb);
        for (int k = 0; k < MB_ATTN_N_PLANS; k++)
            fprintf(fp, " %lld", (long long)mb_attn_max_seq(&t, (mb_attn_plan_id)order[k], dv[i].mem_gb * 1e9));
        fprintf(fp, "\n");
        rows++;
    }
    if ((rc = close_dat(&of))) return rc;
    if (rows) draw(f, "attn_oom", "attn_oom.dat", "attn_oom");
    return 0;
}

int mb_cli_attn_figures(const mb_attn *a, const mb_device *dv, const int *ok, int nd, const char *dir,
                        const int64_t *seqs, int n_seqs)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return mb_cli_fail(2, "--figures '%s': %s", dir, strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return mb_cli_fail(2, "--figures '%s': not a folder", dir);
    mb_attn t = *a;
    t.backward = 1;
    figs f = {dir, 0, 0, ""};
    int rc = 0;
    for (int i = 0; i < nd && !rc; i++) {
        if (!ok[i]) continue;
        rc = seq_data(&f, &t, &dv[i], seqs, n_seqs);
        if (!rc) rc = frontier_data(&f, &t, &dv[i]);
    }
    if (!rc) rc = oom_data(&f, &t, dv, ok, nd);
    if (rc) return rc;
    if (f.failed) return mb_cli_fail(1, "%d figure(s) not drawn (data in %s): %s", f.failed, dir, f.first_err);
    return 0;
}
