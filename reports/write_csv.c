/* write_csv.c — the report's CSV files: summary.csv (one row per
 * measured row, joined with the model), fits.csv and verdicts.csv. Does not
 * write the document or JSON (write_doc.c, write_json.c). */
#include "write_int.h"

#include <math.h>
#include <stdio.h>
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
          "time_s_upper_mode,upper_mode_share,count_check,calibration\n", fp);
    for (int i = 0; i < s->n_rows; i++) {
        const mb_rpt_row *r = &s->rows[i];
        csv_str(fp, r->file);
        fprintf(fp, ",%d,", r->line);
        csv_str(fp, r->dev >= 0 ? s->devices[r->dev].name : r->device);
        fputc(',', fp); csv_str(fp, r->backend);
        fputc(',', fp); csv_str(fp, r->variant);
        fprintf(fp, ",%s,%s,%lld,%d", r->plan, r->dtype, (long long)r->n, r->verified);
        csv_num(fp, r->time_s_median);
        csv_num(fp, r->time_s_min);
        csv_num(fp, r->time_s_p90);
        csv_num(fp, r->time_cv);
        csv_num(fp, r->pred_time_s);
        fprintf(fp, ",%s", mb_bound_name(r->pred_bound));
        csv_i64(fp, r->pred_read_bytes);
        csv_i64(fp, r->pred_write_bytes);
        csv_i64(fp, r->pred_dram_read_bytes);
        csv_i64(fp, r->pred_dram_write_bytes);
        csv_i64(fp, r->pred_saved_bytes);
        csv_i64(fp, r->has_dram ? r->dram_read_bytes : -1);
        csv_i64(fp, r->has_dram ? r->dram_write_bytes : -1);
        csv_num(fp, r->fit_time_s);
        csv_num(fp, r->resid_time_rel);
        csv_num(fp, r->resid_model_rel);
        csv_num(fp, r->resid_bytes_rel);
        csv_num(fp, r->stud_resid);
        fprintf(fp, ",%s", !r->verified ? "failed" : r->noisy ? "noisy" : r->outlier ? "outlier"
                             : r->used ? "used" : "unused");
        csv_num(fp, r->host_copy_ratio);
        csv_num(fp, r->host_op_ratio);
        csv_num(fp, r->pred_host_time_s);
        csv_num(fp, r->time_s_lower_mode);
        csv_num(fp, r->time_s_upper_mode);
        csv_num(fp, r->upper_mode_share);
        fputc(',', fp); csv_str(fp, r->count_check);
        fputc(',', fp); csv_str(fp, r->calibration);
        fputc('\n', fp);
    }

    if ((rc = rpt_outs_open(outs, dir, mb_rpt_report_files[3], &fp, err))) return rc;
    fputs("device,backend,fitted,n_points,n_used,n_rejected,t0_s,t0_ci_s,bandwidth_gbs,"
          "bandwidth_lo_gbs,bandwidth_hi_gbs,r2,impossible,t0_negative,bytes,note\n", fp);
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
        fputc('\n', fp);
    }

    if ((rc = rpt_outs_open(outs, dir, mb_rpt_report_files[4], &fp, err))) return rc;
    fputs("claim,device,backend,n,lecture,lecture_ratio,model_bytes_ratio,model_dram_ratio,"
          "model_time_ratio,measured_time_ratio,measured_bytes_ratio,holds,model_agrees,note,"
          "measured_min_ratio,measured_range_lo,measured_range_hi,expected_ratio,statistic,bytes,"
          "reason,calibration,rerun,smoke_test\n", fp);
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
        fprintf(fp, ",%d\n", v->smoke_test);
    }
    return MB_OK;
}

