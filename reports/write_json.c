/* write_json.c — summary.json: the inputs, their provenance, the rows,
 * fits, verdicts and figures of one report (jansson). Does not write the
 * document or the CSV files (write_doc.c, write_csv.c). */
#include "write_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *ji64(int64_t v) { return v >= 0 ? json_integer((json_int_t)v) : json_null(); }

/* One verdict row of summary.json. */
static json_t *verdict_json(const mb_rpt_verdict *v)
{
    json_t *o = json_object();
    json_object_set_new(o, "claim", json_string(v->claim));
    json_object_set_new(o, "device", json_string(v->device));
    json_object_set_new(o, "backend", json_string(v->backend));
    json_object_set_new(o, "n", v->n > 0 ? json_integer((json_int_t)v->n) : json_null());
    json_object_set_new(o, "lecture", json_string(v->lecture));
    json_object_set_new(o, "lecture_ratio", jnum(v->lecture_ratio));
    json_object_set_new(o, "model_bytes_ratio", jnum(v->model_bytes_ratio));
    json_object_set_new(o, "model_dram_ratio", jnum(v->model_dram_ratio));
    json_object_set_new(o, "model_time_ratio", jnum(v->model_time_ratio));
    json_object_set_new(o, "measured_time_ratio", jnum(v->meas_time_ratio));
    json_object_set_new(o, "measured_bytes_ratio", jnum(v->meas_bytes_ratio));
    json_object_set_new(o, "holds", json_string(v->holds));
    json_object_set_new(o, "model_agrees", json_string(v->model_agrees));
    json_object_set_new(o, "note", json_string(v->note));
    json_object_set_new(o, "measured_min_ratio", jnum(v->meas_min_ratio));
    json_object_set_new(o, "measured_range_lo", jnum(v->meas_range_lo));
    json_object_set_new(o, "measured_range_hi", jnum(v->meas_range_hi));
    json_object_set_new(o, "expected_ratio", jnum(v->expected_ratio));
    json_object_set_new(o, "statistic", json_string(v->statistic ? v->statistic : ""));
    json_object_set_new(o, "bytes", json_string(v->bytes ? v->bytes : ""));
    json_object_set_new(o, "reason", json_string(v->reason));
    json_object_set_new(o, "calibration", json_string(v->calibration));
    json_object_set_new(o, "rerun", json_string(v->rerun));
    json_object_set_new(o, "smoke_test", json_boolean(v->smoke_test));
    return o;
}

/* One fit (device x backend) of summary.json, its op costs when fitted. */
static json_t *fit_json(const mb_rpt_group *g)
{
    json_t *o = json_object();
    json_object_set_new(o, "device", json_string(g->device));
    json_object_set_new(o, "backend", json_string(g->backend));
    json_object_set_new(o, "fitted", json_boolean(g->fitted));
    json_object_set_new(o, "n_points", json_integer(g->line.n_points));
    json_object_set_new(o, "n_used", json_integer(g->line.n_used));
    json_object_set_new(o, "n_rejected", json_integer(g->line.n_rejected));
    json_object_set_new(o, "t0_s", jnum(g->t0_s));
    json_object_set_new(o, "t0_ci_s", jnum(g->t0_ci_s));
    json_object_set_new(o, "bandwidth_gbs", jnum(g->bandwidth_gbs));
    json_object_set_new(o, "bandwidth_lo_gbs", jnum(g->bandwidth_lo_gbs));
    json_object_set_new(o, "bandwidth_hi_gbs", jnum(g->bandwidth_hi_gbs));
    json_object_set_new(o, "r2", jnum(g->fitted ? g->line.r2 : NAN));
    json_object_set_new(o, "impossible", json_boolean(g->impossible));
    json_object_set_new(o, "t0_negative", json_boolean(g->t0_negative));
    json_object_set_new(o, "bytes", json_string(g->bytes_note));
    json_object_set_new(o, "rows", json_string(g->rows_note));
    json_object_set_new(o, "note", json_string(g->why));
    if (g->has_ops) {
        json_t *ops = json_object();
        json_object_set_new(ops, "determined", json_boolean(g->ops.determined));
        json_object_set_new(ops, "rank", json_integer(g->ops.rank));
        json_object_set_new(ops, "r2", jnum(g->ops.r2));
        json_object_set_new(ops, "note", json_string(g->ops.note));
        json_t *terms = json_array();
        for (int j = 0; j < g->ops.p; j++) {
            json_t *t = json_object();
            json_object_set_new(t, "term", json_string(g->ops.names[j]));
            json_object_set_new(t, "value", jnum(g->ops.c[j]));
            json_object_set_new(t, "ci", jnum(g->ops.ci[j]));
            json_array_append_new(terms, t);
        }
        json_object_set_new(ops, "terms", terms);
        json_object_set_new(o, "op_costs", ops);
    }
    return o;
}

/* One measured row of summary.json, joined with the model. */
static json_t *row_json(const mb_rpt_set *s, const mb_rpt_row *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "device", json_string(r->dev >= 0 ? s->devices[r->dev].name : r->device));
    json_object_set_new(o, "backend", json_string(r->backend));
    json_object_set_new(o, "variant", json_string(r->variant));
    json_object_set_new(o, "plan", json_string(r->plan));
    json_object_set_new(o, "dtype", json_string(r->dtype));
    json_object_set_new(o, "n", json_integer((json_int_t)r->n));
    json_object_set_new(o, "verified", json_boolean(r->verified));
    json_object_set_new(o, "noisy", json_boolean(r->noisy));
    json_object_set_new(o, "contended", r->contended >= 0 ? json_integer(r->contended) : json_null());
    json_object_set_new(o, "host_copy_gbs", jnum(r->host_copy_gbs));
    json_object_set_new(o, "host_copy_ratio", jnum(r->host_copy_ratio));
    json_object_set_new(o, "host_op_ratio", jnum(r->host_op_ratio));
    json_object_set_new(o, "drifted", json_boolean(r->drifted));
    json_object_set_new(o, "time_s_lower_mode", jnum(r->time_s_lower_mode));
    json_object_set_new(o, "time_s_upper_mode", jnum(r->time_s_upper_mode));
    json_object_set_new(o, "upper_mode_share", jnum(r->upper_mode_share));
    json_object_set_new(o, "count_check", r->count_check[0] ? json_string(r->count_check) : json_null());
    json_object_set_new(o, "calibration", r->calibration[0] ? json_string(r->calibration) : json_null());
    json_object_set_new(o, "time_s_median", jnum(r->time_s_median));
    json_object_set_new(o, "model_time_s", jnum(r->pred_time_s));
    json_object_set_new(o, "model_bound", json_string(mb_bound_name(r->pred_bound)));
    json_object_set_new(o, "model_host_time_s", jnum(r->pred_host_time_s));
    json_object_set_new(o, "read_bytes", ji64(r->pred_read_bytes));
    json_object_set_new(o, "write_bytes", ji64(r->pred_write_bytes));
    json_object_set_new(o, "model_dram_read_bytes", ji64(r->pred_dram_read_bytes));
    json_object_set_new(o, "model_dram_write_bytes", ji64(r->pred_dram_write_bytes));
    json_object_set_new(o, "dram_read_bytes", r->has_dram ? ji64(r->dram_read_bytes) : json_null());
    json_object_set_new(o, "dram_write_bytes", r->has_dram ? ji64(r->dram_write_bytes) : json_null());
    json_object_set_new(o, "fit_time_s", jnum(r->fit_time_s));
    json_object_set_new(o, "resid_time_rel", jnum(r->resid_time_rel));
    json_object_set_new(o, "resid_model_rel", jnum(r->resid_model_rel));
    json_object_set_new(o, "resid_bytes_rel", jnum(r->resid_bytes_rel));
    json_object_set_new(o, "outlier", json_boolean(r->outlier));
    return o;
}

int rpt_write_json(const mb_rpt_set *s, const mb_rpt_figures *figs, const char *dir, rpt_outs *outs,
                      mb_err *err)
{
    json_t *root = json_object();
    json_t *inputs = json_array(), *prov = json_array(), *verdicts = json_array();
    json_t *fits = json_array(), *rows = json_array(), *figures = json_array();
    for (int i = 0; i < s->n_files; i++) json_array_append_new(inputs, json_string(s->files[i]));
    for (int i = 0; i < s->n_prov; i++) json_array_append_new(prov, json_string(s->prov[i]));
    for (int i = 0; i < s->n_verdicts; i++) json_array_append_new(verdicts, verdict_json(&s->verdicts[i]));
    for (int i = 0; i < s->n_groups; i++) json_array_append_new(fits, fit_json(&s->groups[i]));
    for (int i = 0; i < s->n_rows; i++) json_array_append_new(rows, row_json(s, &s->rows[i]));
    if (figs)
        for (int i = 0; i < figs->n; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "name", json_string(figs->fig[i].name));
            json_object_set_new(o, "title", json_string(figs->fig[i].title));
            json_object_set_new(o, "rendered", json_boolean(figs->fig[i].rendered));
            json_array_append_new(figures, o);
        }
    json_t *tol = json_object();
    json_object_set_new(tol, "time_rel", json_real(MB_RPT_TOL_TIME));
    json_object_set_new(tol, "bytes_rel", json_real(MB_RPT_TOL_BYTES));
    json_object_set_new(root, "inputs", inputs);
    json_object_set_new(root, "provenance", prov);
    json_object_set_new(root, "tolerances", tol);
    json_object_set_new(root, "verdicts", verdicts);
    json_object_set_new(root, "fits", fits);
    json_object_set_new(root, "rows", rows);
    json_object_set_new(root, "figures", figures);
    FILE *fp;
    int rc = rpt_outs_open(outs, dir, mb_rpt_report_files[5], &fp, err);
    if (rc == MB_OK) {
        if (json_dumpf(root, fp, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
            rc = mb_err_set(err, MB_ERUN, "%s/summary.json: JSON write failed", dir);
        else
            fputc('\n', fp);
    }
    json_decref(root);
    return rc;
}

