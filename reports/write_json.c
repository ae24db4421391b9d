/* write_json.c — summary.json: the inputs, their provenance, the rows,
 * fits, verdicts and figures of one report (jansson). Does not write the
 * document or the CSV files (write_doc.c, write_csv.c). */
#include "write_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

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
    json_object_set_new(o, "claim_kind", json_string(mb_rpt_claim_kind_name(v->kind)));
    json_object_set_new(o, "measured_ratio", jnum(v->meas_ratio));
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
    json_object_set_new(o, "above_calibrated", json_boolean(g->above_calibrated));
    json_object_set_new(o, "host_copy_ratio_max", jnum(g->fitted ? g->host_copy_ratio_max : NAN));
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

/* ---- one row, written directly ------------------------------------------
 * A row's text as json_dumps(JSON_INDENT(1) | JSON_PRESERVE_ORDER) gives it
 * two levels down (jansson 2.14's number and string forms): building a
 * jansson object per row and dumping it was half of report's time at 10^5
 * rows (3.9 s of CPU, now 1.3). Checked byte for byte against json_dumps on
 * the 30 reports of reports/data's CSVs and 10^5 generated rows; the goldens
 * hold the text, tests/report_limits.sh parses a 10^5-row one. */

typedef struct jbuf {
    char *p;
    size_t n, cap;
    int oom;
    int first;         /* the next key is an object's first: no comma before it */
} jbuf;

static void jput(jbuf *b, const char *s, size_t len)
{
    if (b->oom) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->n + len + 1 > cap) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static void jkey(jbuf *b, const char *key)
{
    jput(b, b->first ? "\n   \"" : ",\n   \"", b->first ? 5 : 6);
    b->first = 0;
    jput(b, key, strlen(key));
    jput(b, "\": ", 3);
}

/* A string as jansson escapes it: quote, backslash and the C escapes, other
 * control bytes as \u00XX; UTF-8 as it is. */
static void jstr(jbuf *b, const char *key, const char *v)
{
    jkey(b, key);
    jput(b, "\"", 1);
    const char *run = v;
    for (const char *c = v;; c++) {
        unsigned char u = (unsigned char)*c;
        if (u >= 0x20 && u != '"' && u != '\\') continue;
        jput(b, run, (size_t)(c - run));
        if (!u) break;
        char esc[8];
        switch (u) {
        case '"': jput(b, "\\\"", 2); break;
        case '\\': jput(b, "\\\\", 2); break;
        case '\b': jput(b, "\\b", 2); break;
        case '\f': jput(b, "\\f", 2); break;
        case '\n': jput(b, "\\n", 2); break;
        case '\r': jput(b, "\\r", 2); break;
        case '\t': jput(b, "\\t", 2); break;
        default: snprintf(esc, sizeof esc, "\\u%04X", u); jput(b, esc, 6); break;
        }
        run = c + 1;
    }
    jput(b, "\"", 1);
}

static void jraw(jbuf *b, const char *key, const char *v)
{
    jkey(b, key);
    jput(b, v, strlen(v));
}

static void jbool(jbuf *b, const char *key, int v) { jraw(b, key, v ? "true" : "false"); }

static void jint(jbuf *b, const char *key, long long v, int is_null)
{
    char t[32];
    if (is_null) { jraw(b, key, "null"); return; }
    jkey(b, key);
    jput(b, t, (size_t)rpt_fmt_int(t, v));
}

/* A real as jansson's dtostr writes it: %.17g, ".0" when it has neither a
 * point nor an exponent, the exponent without '+' or leading zeros; NaN and
 * infinities (jnum) as null. */
static void jreal(jbuf *b, const char *key, double v)
{
    if (!isfinite(v)) { jraw(b, key, "null"); return; }
    char t[48];
    int len = rpt_fmt_g(t, sizeof t - 3, v, 17); /* snprintf's "%.17g", faster */
    if (!strchr(t, '.') && !strchr(t, 'e')) { t[len++] = '.'; t[len++] = '0'; t[len] = '\0'; }
    char *start = strchr(t, 'e');
    if (start) {
        start++;
        char *end = start + 1;
        if (*start == '-') start++;
        while (*end == '0') end++;
        if (end != start) memmove(start, end, strlen(end) + 1);
    }
    jraw(b, key, t);
}

/* One measured row of summary.json, joined with the model, appended to b
 * (its separator and indentation first). */
static void row_text(jbuf *b, const mb_rpt_set *s, const mb_rpt_row *r, int first)
{
    jput(b, first ? "\n  {" : ",\n  {", first ? 4 : 5);
    b->first = 1;
    jstr(b, "device", r->dev >= 0 ? s->devices[r->dev].name : r->device);
    jstr(b, "backend", r->backend);
    jstr(b, "variant", r->variant);
    jstr(b, "plan", r->plan);
    jstr(b, "dtype", r->dtype);
    jint(b, "n", (long long)r->n, 0);
    jbool(b, "verified", r->verified);
    jbool(b, "noisy", r->noisy);
    jint(b, "contended", r->contended, r->contended < 0);
    jreal(b, "host_copy_gbs", r->host_copy_gbs);
    jreal(b, "host_copy_ratio", r->host_copy_ratio);
    jreal(b, "host_op_ratio", r->host_op_ratio);
    jbool(b, "drifted", r->drifted);
    jreal(b, "time_s_lower_mode", r->time_s_lower_mode);
    jreal(b, "time_s_upper_mode", r->time_s_upper_mode);
    jreal(b, "upper_mode_share", r->upper_mode_share);
    if (r->count_check[0]) jstr(b, "count_check", r->count_check);
    else jraw(b, "count_check", "null");
    if (r->calibration[0]) jstr(b, "calibration", r->calibration);
    else jraw(b, "calibration", "null");
    jreal(b, "time_s_median", r->time_s_median);
    jreal(b, "model_time_s", r->pred_time_s);
    jstr(b, "model_bound", mb_bound_name(r->pred_bound));
    jreal(b, "model_host_time_s", r->pred_host_time_s);
    jint(b, "read_bytes", (long long)r->pred_read_bytes, r->pred_read_bytes < 0);
    jint(b, "write_bytes", (long long)r->pred_write_bytes, r->pred_write_bytes < 0);
    jint(b, "model_dram_read_bytes", (long long)r->pred_dram_read_bytes, r->pred_dram_read_bytes < 0);
    jint(b, "model_dram_write_bytes", (long long)r->pred_dram_write_bytes, r->pred_dram_write_bytes < 0);
    jint(b, "dram_read_bytes", (long long)r->dram_read_bytes, !r->has_dram || r->dram_read_bytes < 0);
    jint(b, "dram_write_bytes", (long long)r->dram_write_bytes, !r->has_dram || r->dram_write_bytes < 0);
    jreal(b, "fit_time_s", r->fit_time_s);
    jreal(b, "resid_time_rel", r->resid_time_rel);
    jreal(b, "resid_model_rel", r->resid_model_rel);
    jreal(b, "resid_bytes_rel", r->resid_bytes_rel);
    jbool(b, "outlier", r->outlier);
    jput(b, "\n  }", 4);
}

/* summary.json without the rows in memory at once (a million rows were
 * gigabytes as one jansson tree): the document is dumped with a mark where
 * the rows go, and each row is dumped on its own in its place, indented as
 * json_dumpf would have at that depth (strings hold no raw newline: their
 * newlines are escaped). Byte for byte json_dumpf's text. */
#define ROWS_MARK "\x01rows\x01"
#define JSON_FLAGS (JSON_INDENT(1) | JSON_PRESERVE_ORDER)

static int write_streamed(const mb_rpt_set *s, const json_t *root, FILE *fp)
{
    char *text = json_dumps(root, JSON_FLAGS);
    if (!text) return -1;
    const char *mark = strstr(text, "\"\\u0001rows\\u0001\"");
    if (!mark) {
        free(text);
        return -1;
    }
    fwrite(text, 1, (size_t)(mark - text), fp);
    fputs(s->n_rows ? "[" : "[]", fp);
    jbuf b = {0};
    for (int i = 0; i < s->n_rows && !b.oom; i++) {
        row_text(&b, s, &s->rows[i], i == 0);
        if (b.n > ((size_t)1 << 20) || i + 1 == s->n_rows) { /* out in 1 MiB pieces */
            if (!b.oom) fwrite(b.p, 1, b.n, fp);
            b.n = 0;
        }
    }
    free(b.p);
    if (b.oom) {
        free(text);
        return -1;
    }
    if (s->n_rows) fputs("\n ]", fp);
    fputs(mark + strlen("\"\\u0001rows\\u0001\""), fp);
    fputc('\n', fp);
    free(text);
    return ferror(fp) ? -1 : 0;
}

int rpt_write_json(const mb_rpt_set *s, const mb_rpt_figures *figs, const char *dir, rpt_outs *outs,
                      mb_err *err)
{
    json_t *root = json_object();
    json_t *inputs = json_array(), *prov = json_array(), *verdicts = json_array();
    json_t *fits = json_array(), *figures = json_array();
    for (int i = 0; i < s->n_files; i++) json_array_append_new(inputs, json_string(s->files[i]));
    for (int i = 0; i < s->n_prov; i++) json_array_append_new(prov, json_string(s->prov[i]));
    for (int i = 0; i < s->n_verdicts; i++) json_array_append_new(verdicts, verdict_json(&s->verdicts[i]));
    for (int i = 0; i < s->n_groups; i++) json_array_append_new(fits, fit_json(&s->groups[i]));
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
    json_object_set_new(root, "rows", json_string(ROWS_MARK)); /* written row by row below */
    json_object_set_new(root, "figures", figures);
    FILE *fp;
    int rc = rpt_outs_open(outs, dir, mb_rpt_report_files[5], &fp, err);
    if (rc == MB_OK && write_streamed(s, root, fp) != 0) {
        int e = outs->f[outs->n - 1].write_errno; /* the failed write's reason: a full disk's ENOSPC */
        rc = mb_err_set(err, MB_ERUN, "%s/summary.json: JSON write failed: %s", dir,
                        e ? strerror(e) : "the JSON encoder failed");
    }
    json_decref(root);
    return rc;
}
