/* join.c — joins measurement rows with the model's prediction for the same
 * variant, plan, dtype, n and device (the spec a CSV carries, else its
 * device column). Does not fit (fit.c) or write anything. */
#include "report_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int estimate_graph(const mb_graph *g, const char *plan, int64_t n, const mb_device *d,
                          mb_estimate *out, double op_per_elem[MB_OP_COUNT], mb_err *err)
{
    mb_plan_kind k;
    if (mb_plan_parse(plan, &k) != MB_OK)
        return mb_err_set(err, MB_EINPUT, "unknown plan '%s' (eager, fused, store, recompute)", plan);
    mb_plan *p = NULL;
    int rc = mb_plan_build(g, k, &p, err);
    if (rc) return rc;
    rc = mb_estimate_plan(p, n, d, out, err);
    if (rc == MB_OK && op_per_elem) {
        for (int i = 0; i < MB_OP_COUNT; i++) op_per_elem[i] = 0;
        for (int k2 = 0; k2 < p->n_kernels; k2++) {
            const mb_kernel *kn = &p->kernels[k2];
            for (int j = 0; j < kn->n_nodes; j++) {
                mb_op op = p->g->nodes[kn->nodes[j]].op;
                if (op != MB_OP_INPUT && (int)op < MB_OP_COUNT) op_per_elem[op] += 1.0;
            }
        }
    }
    mb_plan_free(p);
    return rc;
}

int rpt_estimate(const mb_rpt_set *defs, const char *variant, const char *plan, mb_dtype dt,
                 int64_t n, const mb_device *d, mb_estimate *out,
                 double op_per_elem[MB_OP_COUNT], mb_err *err)
{
    mb_graph *g = NULL;
    memset(out, 0, sizeof *out);
    int rc = mb_rpt_load_variant(defs, -1, variant, dt, &g, err);
    if (rc) return rc;
    rc = estimate_graph(g, plan, n, d, out, op_per_elem, err);
    mb_graph_free(g);
    return rc;
}

/* Loads spec key, trying a relative path beside the CSV too. */
static int load_spec(const char *key, const char *csv_path, mb_device *d, mb_err *err)
{
    int rc = mb_device_find(key, d, err);
    if (rc && key[0] != '/' && (strchr(key, '/') || strstr(key, ".ini")) && csv_path) {
        /* a spec path relative to the CSV that names it */
        const char *slash = strrchr(csv_path, '/');
        if (slash) {
            char alt[1024];
            snprintf(alt, sizeof alt, "%.*s/%s", (int)(slash - csv_path), csv_path, key);
            mb_err e2;
            if (access(alt, R_OK) == 0) {
                rc = mb_device_find(alt, d, &e2);
                if (rc) *err = e2;
            }
        }
    }
    return rc;
}

/* The spec the measurement's own model columns used: the CSV's provenance
 * line "# model_device: ID (--device SPEC)". Copies SPEC into buf, or 0. */
static int provenance_spec(const mb_rpt_set *s, const char *csv_path, char *buf, size_t bufsize)
{
    const char *base = strrchr(csv_path, '/');
    base = base ? base + 1 : csv_path;
    size_t blen = strlen(base);
    for (int i = 0; i < s->n_prov; i++) {
        const char *p = s->prov[i];
        if (strncmp(p, base, blen) != 0 || strncmp(p + blen, ": model_device: ", 16) != 0) continue;
        const char *open = strstr(p, "(--device ");
        const char *close = open ? strrchr(open, ')') : NULL;
        if (!open || !close) continue;
        open += strlen("(--device ");
        snprintf(buf, bufsize, "%.*s", (int)(close - open), open);
        return 1;
    }
    return 0;
}

/* Finds or loads the device named key (a table id or spec file; a relative
 * path is also tried beside the CSV; a CPU's model name falls back to the
 * spec its measurement was modelled with). Returns its index or -1 with err set. */
/* Key of a CSV's embedded spec: a control byte first, so no device column
 * (read as UTF-8 text) is taken for one by accident. */
#define MB_RPT_SPEC_KEY "\x01spec:"

/* The name errors in CSV fi's embedded spec go by: the CSV itself (its '#'
 * lines keep the spec's line numbers), or "CSV:LINE: device_spec"
 * (then the spec's own line). */
static const char *spec_name(const mb_rpt_set *s, int fi, char *buf, size_t size)
{
    if (!s->spec_lines || s->spec_lines[fi] <= 0) return s->files[fi];
    snprintf(buf, size, "%s:%d: " MB_MEAS_PROV_SPEC, s->files[fi], s->spec_lines[fi]);
    return buf;
}

static int device_index(mb_rpt_set *s, const char *key, const char *csv_path, int spec_file, mb_err *err)
{
    for (int i = 0; i < s->n_devices; i++)
        if (!strcmp(s->device_keys[i], key)) return i;
    if (s->n_devices == MB_RPT_MAX_DEVICES) {
        mb_err_set(err, MB_EINPUT, "more than %d devices", MB_RPT_MAX_DEVICES);
        return -1;
    }
    mb_device d;
    int rc;
    if (spec_file >= 0) { /* the spec CSV spec_file carries (never chosen by a device column) */
        int fi = spec_file;
        char name[700];
        if (mb_device_load_ini_text(s->specs[fi], spec_name(s, fi, name, sizeof name), &d, err)) return -1;
        /* the same spec from several CSVs is one device */
        for (int i = 0; i < s->n_devices; i++)
            if (!strncmp(s->device_keys[i], MB_RPT_SPEC_KEY, strlen(MB_RPT_SPEC_KEY)) &&
                !memcmp(&s->devices[i], &d, sizeof d))
                return i;
        s->devices[s->n_devices] = d;
        snprintf(s->device_keys[s->n_devices], sizeof s->device_keys[0], "%s", key);
        return s->n_devices++;
    }
    rc = load_spec(key, csv_path, &d, err);
    char spec[1024];
    if (rc && csv_path && provenance_spec(s, csv_path, spec, sizeof spec)) {
        mb_err e2;
        if (load_spec(spec, csv_path, &d, &e2) == MB_OK) rc = MB_OK;
    }
    if (rc) return -1;
    s->devices[s->n_devices] = d;
    snprintf(s->device_keys[s->n_devices], sizeof s->device_keys[0], "%s", key);
    return s->n_devices++;
}

/* The definition of the row's variant its own CSV carries, or NULL. */
static const mb_rpt_vardef *own_text(const mb_rpt_set *s, const mb_rpt_row *r)
{
    for (int i = 0; i < s->n_vars; i++)
        if (s->vars[i].file == r->file_index && s->vars[i].text && !strcmp(s->vars[i].name, r->variant))
            return &s->vars[i];
    return NULL;
}

/* A row measured from a text its CSV carries must move the bytes that text
 * gives: an edited text, or one of another measurement (three inputs for a
 * one-input row), would otherwise be fitted against the row's times. The
 * lecture's counts (read_bytes, write_bytes) hold on every device; the
 * cache-aware model_dram_* are compared on the CSV's embedded device spec
 * (the harness's model device), and only where the CSV carries one. The
 * model is deterministic: the counts must be equal. A text named like a
 * built-in must also move the built-in's bytes. MB_EINPUT naming the row's
 * line. */
static int check_text_bytes(mb_rpt_set *s, const mb_rpt_row *r, const mb_graph *g,
                            const mb_estimate *est, const char *device_override, mb_err *err)
{
    const mb_rpt_vardef *v = own_text(s, r);
    if (!v) return MB_OK;
    struct { const char *col; int64_t row, model; } c[4] = {
        {"read_bytes", r->read_bytes, est->total.read_bytes},
        {"write_bytes", r->write_bytes, est->total.write_bytes},
        {"model_dram_read_bytes", r->model_dram_read_bytes, -1},
        {"model_dram_write_bytes", r->model_dram_write_bytes, -1},
    };
    int nc = 2;
    if (s->specs[r->file_index] && (r->model_dram_read_bytes >= 0 || r->model_dram_write_bytes >= 0)) {
        mb_estimate on_spec;
        const mb_estimate *e = est;
        if (device_override) { /* r->dev is --device's: model the row on the CSV's spec */
            mb_device d;
            char name[700];
            int rc = mb_device_load_ini_text(s->specs[r->file_index],
                                             spec_name(s, r->file_index, name, sizeof name), &d, err);
            if (rc == MB_OK) rc = estimate_graph(g, r->plan, r->n, &d, &on_spec, NULL, err);
            if (rc) return rc;
            e = &on_spec;
        }
        c[2].model = e->total.dram_read_bytes;
        c[3].model = e->total.dram_write_bytes;
        if (e == &on_spec) mb_estimate_free(&on_spec);
        nc = 4;
    }
    for (int i = 0; i < nc; i++)
        if (c[i].row >= 0 && c[i].row != c[i].model)
            return mb_err_set(err, MB_EINPUT,
                              "%s:%d: column '%s' is %lld, but the text of variant '%s' this CSV "
                              "carries (line %d) gives %lld at n = %lld, plan %s, %s: the text "
                              "is not the one measured", r->file, r->line, c[i].col,
                              (long long)c[i].row, r->variant, v->line, (long long)c[i].model,
                              (long long)r->n, r->plan, r->dtype);
    /* A text named like a built-in stands for it (report judges the lecture's
     * claims by name): it must move the built-in's bytes. */
    mb_graph *bg = NULL;
    mb_err be;
    mb_dtype dt = g->n_inputs ? g->nodes[g->inputs[0]].dtype : MB_F32;
    if (!strchr(r->variant, '/') && !strstr(r->variant, ".mb") &&
        mb_variant_load(r->variant, dt, &bg, &be) == MB_OK) {
        mb_estimate eb;
        int rc = estimate_graph(bg, r->plan, r->n, &s->devices[r->dev], &eb, NULL, &be);
        mb_graph_free(bg);
        if (rc == MB_OK) {
            int differ = eb.total.read_bytes != est->total.read_bytes ||
                         eb.total.write_bytes != est->total.write_bytes;
            long long br = (long long)eb.total.read_bytes, bw = (long long)eb.total.write_bytes;
            mb_estimate_free(&eb);
            if (differ)
                return mb_err_set(err, MB_EINPUT,
                                  "%s:%d: the text of variant '%s' this CSV carries (line %d) is "
                                  "not the built-in '%s' (it moves %lld + %lld bytes at n = %lld, "
                                  "plan %s; the built-in %lld + %lld): a variant of its own needs "
                                  "another name", r->file, r->line, r->variant, v->line, r->variant,
                                  (long long)est->total.read_bytes, (long long)est->total.write_bytes,
                                  (long long)r->n, r->plan, br, bw);
        }
    }
    return MB_OK;
}

int mb_rpt_join(mb_rpt_set *s, const char *device_override, mb_err *err)
{
    mb_err e;
    if (device_override) {
        if (device_index(s, device_override, NULL, -1, &e) < 0)
            return mb_err_set(err, MB_EINPUT, "--device: %s", e.msg);
    }
    for (int i = 0; i < s->n_rows; i++) {
        mb_rpt_row *r = &s->rows[i];
        /* --device, else the spec the CSV's model columns used, else its device column */
        char spec_key[32];
        snprintf(spec_key, sizeof spec_key, MB_RPT_SPEC_KEY "%d", r->file_index);
        int embedded = !device_override && s->specs[r->file_index];
        const char *key = device_override ? device_override : embedded ? spec_key : r->device;
        r->dev = device_index(s, key, r->file, embedded ? r->file_index : -1, &e);
        if (r->dev < 0 && embedded)
            return mb_err_set(err, MB_EINPUT, "%s (the device spec this CSV carries)", e.msg);
        if (r->dev < 0)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column 'device': %s", r->file, r->line,
                              r->device_col, e.msg);
        mb_dtype dt;
        if (mb_dtype_parse(r->dtype, &dt) != MB_OK)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column 'dtype': unknown dtype '%s' "
                              "(f32, bf16, f16)", r->file, r->line, r->col_of[3], r->dtype);
        mb_plan_kind pk;
        if (mb_plan_parse(r->plan, &pk) != MB_OK)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column 'plan': unknown plan '%s' "
                              "(eager, fused, store, recompute)", r->file, r->line,
                              r->col_of[2], r->plan);
        mb_graph *g = NULL;
        if (mb_rpt_load_variant(s, r->file_index, r->variant, dt, &g, &e) != MB_OK)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column 'variant': %s", r->file, r->line,
                              r->col_of[1], e.msg);
        mb_estimate est;
        double ops[MB_OP_COUNT];
        int rc = estimate_graph(g, r->plan, r->n, &s->devices[r->dev], &est, ops, &e);
        /* the same model at the rates the host had during the row */
        r->pred_host_time_s = NAN;
        if (!rc && r->host_copy_ratio > 0 && r->host_op_ratio > 0 && isfinite(r->host_copy_ratio) &&
            isfinite(r->host_op_ratio)) {
            mb_device at_host;
            mb_estimate est_host;
            mb_device_at_rates(&s->devices[r->dev], r->host_copy_ratio, r->host_op_ratio, &at_host);
            rc = estimate_graph(g, r->plan, r->n, &at_host, &est_host, NULL, &e);
            if (rc) {
                mb_estimate_free(&est);
            } else {
                r->pred_host_time_s = est_host.total.time_s;
                mb_estimate_free(&est_host);
            }
        }
        if (!rc && (rc = check_text_bytes(s, r, g, &est, device_override, &e)) != MB_OK) {
            mb_estimate_free(&est);
            mb_graph_free(g);
            if (rc == MB_EINPUT) return mb_err_set(err, rc, "%s", e.msg);
            return mb_err_set(err, rc, "%s:%d: %s", r->file, r->line, e.msg);
        }
        mb_graph_free(g);
        if (rc)
            return mb_err_set(err, rc, "%s:%d:%d: %s", r->file, r->line, r->col_of[2], e.msg);
        r->pred_time_s = est.total.time_s;
        r->pred_mem_s = est.total.mem_s;
        r->pred_compute_s = est.total.compute_s;
        r->pred_launch_s = est.total.launch_s;
        r->pred_read_bytes = est.total.read_bytes;
        r->pred_write_bytes = est.total.write_bytes;
        r->pred_dram_read_bytes = est.total.dram_read_bytes;
        r->pred_dram_write_bytes = est.total.dram_write_bytes;
        r->pred_saved_bytes = est.saved_bytes;
        r->pred_flops = est.total.flops;
        r->pred_sfu_ops = est.total.sfu_ops;
        r->pred_kernels = est.n_kernels;
        r->pred_bound = est.total.bound;
        for (int k = 0; k < MB_OP_COUNT; k++) r->op_evals[k] = ops[k] * (double)r->n;
        mb_estimate_free(&est);
        r->resid_model_rel = r->verified ? r->time_s_median / r->pred_time_s - 1.0 : NAN;
        r->resid_bytes_rel = NAN;
        if (r->has_dram) {
            /* ncu's flushed counts: every kernel cold, the lecture's count */
            double model = !strcmp(r->counters, MB_MEAS_COUNTERS_NCU)
                               ? (double)(r->pred_read_bytes + r->pred_write_bytes)
                               : (double)(r->pred_dram_read_bytes + r->pred_dram_write_bytes);
            if (model > 0)
                r->resid_bytes_rel =
                    (double)(r->dram_read_bytes + r->dram_write_bytes) / model - 1.0;
        }
        r->fit_time_s = r->stud_resid = r->resid_time_rel = NAN;
    }
    return MB_OK;
}
