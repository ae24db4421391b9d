/* write_csv.c — the report's CSV files: summary.csv (one row per
 * measured row, joined with the model), fits.csv and verdicts.csv. Does not
 * write the document or JSON (write_doc.c, write_json.c). */
#include "write_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void csv_str(FILE *fp, const char *s)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', fp);
        for (; *s; s++) {
            if (*s == '"') fputc('"', fp);
            fputc(*s == '\n' ? ' ' : *s, fp);
        }
        fputc('"', fp);
    } else {
        fputs(s, fp);
    }
}

static void csv_num(FILE *fp, double v)
{
    if (isfinite(v)) fprintf(fp, ",%.9g", v);
    else fputs(",", fp);
}

static void csv_i64(FILE *fp, int64_t v)
{
    if (v >= 0) fprintf(fp, ",%lld", (long long)v);
    else fputs(",", fp);
}

/* ---- summary.csv: a million rows, built in memory and written in 1 MiB
 * pieces (a stdio call per field, each taking the stream's lock, and
 * printf's numbers were most of its time); the same bytes as the stdio
 * helpers above. */

typedef struct cbuf {
    char *p;
    size_t n, cap;
    int oom;
} cbuf;

static void cput(cbuf *b, const char *s, size_t len)
{
    if (b->oom) return;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : (size_t)1 << 21;
        while (b->n + len > cap) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
}

static void cputs(cbuf *b, const char *s) { cput(b, s, strlen(s)); }

/* ",TEXT" as csv_str writes TEXT (comma first when comma). */
static void cstr(cbuf *b, const char *s, int comma)
{
    if (comma) cput(b, ",", 1);
    if (!strpbrk(s, ",\"\n")) { cputs(b, s); return; }
    cput(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"') cput(b, "\"", 1);
        cput(b, *s == '\n' ? " " : s, 1);
    }
    cput(b, "\"", 1);
}

/* ",%.9g" or "," for a non-finite value (csv_num). */
static void cnum(cbuf *b, double v)
{
    char t[40];
    t[0] = ',';
    cput(b, t, isfinite(v) ? 1 + (size_t)rpt_fmt_g(t + 1, sizeof t - 1, v, 9) : 1);
}

/* ",%lld" or "," for a negative value (csv_i64). */
static void ci64(cbuf *b, int64_t v)
{
    char t[32];
    t[0] = ',';
    cput(b, t, v >= 0 ? 1 + (size_t)rpt_fmt_int(t + 1, (long long)v) : 1);
}

static void summary_row(cbuf *b, const mb_rpt_set *s, const mb_rpt_row *r)
{
    char t[32];
    cstr(b, r->file, 0);
    cput(b, ",", 1);
    cput(b, t, (size_t)rpt_fmt_int(t, r->line));
    cstr(b, r->dev >= 0 ? s->devices[r->dev].name : r->device, 1);
    cstr(b, r->backend, 1);
    cstr(b, r->variant, 1);
    cput(b, ",", 1), cputs(b, r->plan);
    cput(b, ",", 1), cputs(b, r->dtype);
    ci64(b, r->n); /* n >= 1 */
    cputs(b, r->verified ? ",1" : ",0");
    cnum(b, r->time_s_median);
    cnum(b, r->time_s_min);
    cnum(b, r->time_s_p90);
    cnum(b, r->time_cv);
    cnum(b, r->pred_time_s);
    cput(b, ",", 1), cputs(b, mb_bound_name(r->pred_bound));
    ci64(b, r->pred_read_bytes);
    ci64(b, r->pred_write_bytes);
    ci64(b, r->pred_dram_read_bytes);
    ci64(b, r->pred_dram_write_bytes);
    ci64(b, r->pred_saved_bytes);
    ci64(b, r->has_dram ? r->dram_read_bytes : -1);
    ci64(b, r->has_dram ? r->dram_write_bytes : -1);
    cnum(b, r->fit_time_s);
    cnum(b, r->resid_time_rel);
    cnum(b, r->resid_model_rel);
    cnum(b, r->resid_bytes_rel);
    cnum(b, r->stud_resid);
    cput(b, ",", 1);
    cputs(b, !r->verified ? "failed" : r->noisy ? "noisy" : r->outlier ? "outlier" : r->used ? "used" : "unused");
    cnum(b, r->host_copy_ratio);
    cnum(b, r->host_op_ratio);
    cnum(b, r->pred_host_time_s);
    cnum(b, r->time_s_lower_mode);
    cnum(b, r->time_s_upper_mode);
    cnum(b, r->upper_mode_share);
    cstr(b, r->count_check, 1);
    cstr(b, r->calibration, 1);
    if (r->cols > 0) {
        cput(b, ",", 1);
        cput(b, t, (size_t)rpt_fmt_int(t, (long long)(r->n / r->cols)));
        cput(b, "x", 1);
        cput(b, t, (size_t)rpt_fmt_int(t, (long long)r->cols));
    } else {
        cput(b, ",", 1);
    }
    cput(b, "\n", 1);
}

int rpt_write_csvs(const mb_rpt_set *s, const char *dir, rpt_outs *outs, mb_err *err)
{
    FILE *fp;
    int rc = rpt_outs_open(outs, dir, mb_rpt_report_files[2], &fp, err);
    if (rc) return rc;
    fputs("file,line,device,backend,variant,plan,dtype,n,verified,time_s_median,time_s_min,"
          "time_s_p90,time_cv,model_time_s,model_bound,read_bytes,write_bytes,"
          "model_dram_read_bytes,model_dram_write_bytes,saved_bytes,dram_read_bytes,"
          "dram_write_bytes,fit_time_s,resid_time_rel,resid_model_rel,resid_bytes_rel,"
          "stud_resid,fit,host_copy_ratio,host_op_ratio,model_host_time_s,time_s_lower_mode,"
          "time_s_upper_mode,upper_mode_share,count_check,calibration,shape\n", fp);
    cbuf b = {0};
    for (int i = 0; i < s->n_rows && !b.oom; i++) {
        summary_row(&b, s, &s->rows[i]);
        if (b.n > ((size_t)1 << 20) || i + 1 == s->n_rows) {
            if (!b.oom) fwrite(b.p, 1, b.n, fp);
            b.n = 0;
        }
    }
    free(b.p);
    if (b.oom) return mb_err_set(err, MB_ERUN, "%s/%s: out of memory", dir, mb_rpt_report_files[2]);

    if ((rc = rpt_outs_open(outs, dir, mb_rpt_report_files[3], &fp, err))) return rc;
    fputs("device,backend,fitted,n_points,n_used,n_rejected,t0_s,t0_ci_s,bandwidth_gbs,"
          "bandwidth_lo_gbs,bandwidth_hi_gbs,r2,impossible,t0_negative,bytes,note,above_calibrated\n", fp);
    for (int i = 0; i < s->n_groups; i++) {
        const mb_rpt_group *g = &s->groups[i];
        csv_str(fp, g->device);
        fputc(',', fp);
        csv_str(fp, g->backend);
        fprintf(fp, ",%d,%d,%d,%d", g->fitted, g->line.n_points, g->line.n_used, g->line.n_rejected);
        csv_num(fp, g->t0_s);
        csv_num(fp, g->t0_ci_s);
        csv_num(fp, g->bandwidth_gbs);
        csv_num(fp, g->bandwidth_lo_gbs);
        csv_num(fp, g->bandwidth_hi_gbs);
        csv_num(fp, g->fitted ? g->line.r2 : NAN);
        fprintf(fp, ",%d,%d,", g->impossible, g->t0_negative);
        csv_str(fp, g->bytes_note);
        fputc(',', fp);
        csv_str(fp, g->why[0] ? g->why : g->rows_note);
        fprintf(fp, ",%d\n", g->above_calibrated);
    }

    if ((rc = rpt_outs_open(outs, dir, mb_rpt_report_files[4], &fp, err))) return rc;
    fputs("claim,device,backend,n,lecture,lecture_ratio,model_bytes_ratio,model_dram_ratio,"
          "model_time_ratio,measured_time_ratio,measured_bytes_ratio,holds,model_agrees,note,"
          "measured_min_ratio,measured_range_lo,measured_range_hi,expected_ratio,statistic,bytes,"
          "reason,calibration,rerun,smoke_test,claim_kind,measured_ratio\n", fp);
    for (int i = 0; i < s->n_verdicts; i++) {
        const mb_rpt_verdict *v = &s->verdicts[i];
        csv_str(fp, v->claim);
        fputc(',', fp);
        csv_str(fp, v->device);
        fputc(',', fp);
        csv_str(fp, v->backend);
        csv_i64(fp, v->n > 0 ? v->n : -1);
        fputc(',', fp);
        csv_str(fp, v->lecture);
        csv_num(fp, v->lecture_ratio);
        csv_num(fp, v->model_bytes_ratio);
        csv_num(fp, v->model_dram_ratio);
        csv_num(fp, v->model_time_ratio);
        csv_num(fp, v->meas_time_ratio);
        csv_num(fp, v->meas_bytes_ratio);
        fprintf(fp, ",%s,%s,", v->holds, v->model_agrees);
        csv_str(fp, v->note);
        csv_num(fp, v->meas_min_ratio);
        csv_num(fp, v->meas_range_lo);
        csv_num(fp, v->meas_range_hi);
        csv_num(fp, v->expected_ratio);
        const char *texts[] = {v->statistic, v->bytes, v->reason, v->calibration, v->rerun};
        for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
            fputc(',', fp);
            csv_str(fp, texts[k] ? texts[k] : "");
        }
        fprintf(fp, ",%d,%s", v->smoke_test, mb_rpt_claim_kind_name(v->kind));
        csv_num(fp, v->meas_ratio);
        fputc('\n', fp);
    }
    return MB_OK;
}

