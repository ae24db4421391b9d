/* csv.c — measurement records as CSV (the design's column contract): a
 * header, then one row per line, no comment lines; the provenance, the
 * device spec and the variant texts in the text columns of every row
 * (MB_MEAS_CSV_TEXT_COLUMNS). Does not open or commit files (mb_outfile). */
#define _POSIX_C_SOURCE 200809L
#include "kernels.h"
#include "measure.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mb_git_commit.h" /* generated at build time: MB_GIT_COMMIT */

static void trim(char *s)
{
    size_t k = strlen(s);
    while (k && (s[k - 1] == '\n' || s[k - 1] == ' ' || s[k - 1] == '\t')) s[--k] = '\0';
}

/* "model name : AMD EPYC" from /proc/cpuinfo, else "". */
static void cpu_model(char *buf, size_t bufsz)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *c = strchr(line, ':');
        if (!c) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        snprintf(buf, bufsz, "%s", c);
        trim(buf);
        break;
    }
    fclose(f);
}

void mb_meas_settings_str(const mb_meas_config *c, const char *exec_extra, char *buf, size_t bufsz)
{
    snprintf(buf, bufsz,
             "cold=%d llc_flush_bytes=%lld warmup=%d min_reps=%d max_reps=%d max_cv=%g "
             "min_time_s=%g timeout_s=%g threads=%d exec=%s check=%d tol=%s vector_math=%s%s%s",
             c->cold, (long long)(2 * (c->llc_bytes > 0 ? c->llc_bytes : mb_kern_llc_bytes())),
             c->warmup, c->min_reps, c->max_reps, c->max_cv, c->min_time_s, c->timeout_s,
             c->threads > 0 ? c->threads : mb_kern_threads(), mb_kern_exec_name((mb_kern_exec)c->exec), c->check,
             c->tol > 0 ? "custom" : "default", mb_kern_vector_isa(), exec_extra ? " " : "",
             exec_extra ? exec_extra : "");
}

void mb_meas_provenance_fill(mb_meas_provenance *pv, const mb_meas_config *c)
{
    memset(pv, 0, sizeof *pv);
    cpu_model(pv->cpu_model, sizeof pv->cpu_model);
#if defined(__clang__)
    snprintf(pv->compiler, sizeof pv->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(pv->compiler, sizeof pv->compiler, "gcc %s", __VERSION__);
#else
    snprintf(pv->compiler, sizeof pv->compiler, "unknown");
#endif
    snprintf(pv->git_commit, sizeof pv->git_commit, "%s", MB_GIT_COMMIT);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(pv->date, sizeof pv->date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    if (gethostname(pv->host, sizeof pv->host - 1) != 0) pv->host[0] = '\0';
    if (c) mb_meas_settings_str(c, NULL, pv->settings, sizeof pv->settings);
}

/* The contract's columns, from their one definition (membound_model.h). */
#define MB_CSV_NAME(name, required) "," #name
static const char *const columns = &(MB_MEAS_CSV_COLUMNS(MB_CSV_NAME))[1];
#undef MB_CSV_NAME

/* Columns after the contract's (and after "kernel" in per-kernel files):
 * readers find columns by name, so older readers skip them. */
static const char *const extra_columns = MB_MEAS_CSV_CONTENDED_COLUMN "," MB_MEAS_CSV_HOST_COLUMNS
                                          "," MB_MEAS_CSV_HOST_MODEL_COLUMN "," MB_MEAS_CSV_MODES_COLUMNS
                                          "," MB_MEAS_CSV_COUNT_COLUMNS "," MB_MEAS_CSV_ACCURACY_COLUMN
                                          "," MB_MEAS_CSV_TEXT_COLUMNS "," MB_MEAS_CSV_CALIBRATION_COLUMN
                                          "," MB_MEAS_CSV_SHAPE_COLUMN "," MB_MEAS_CSV_DIMS_COLUMN;

void mb_meas_csv_header(FILE *fp, int per_kernel)
{
    fprintf(fp, "%s%s,%s\n", columns, per_kernel ? ",kernel" : "", extra_columns);
}

/* A text field, quoted (RFC 4180) when it holds a comma, quote or space at
 * either end; a newline becomes a space (one row, one line). Written in
 * runs between the characters that change (strcspn, fwrite), not a byte
 * at a time: each row carries the spec, provenance and variant texts, most
 * of a 1.0 GB import of 10^6 launches (bench/import_scale.sh). */
static void field(FILE *fp, const char *s)
{
    size_t len = strlen(s);
    if (strcspn(s, ",\"\n\r") == len && !(len && (s[0] == ' ' || s[len - 1] == ' '))) {
        fwrite(s, 1, len, fp);
        return;
    }
    putc('"', fp);
    for (;;) {
        size_t run = strcspn(s, "\"\n\r");
        fwrite(s, 1, run, fp);
        s += run;
        if (!*s) break;
        if (*s == '"') fputs("\"\"", fp);
        else putc(' ', fp);
        s++;
    }
    putc('"', fp);
}

static void num(FILE *fp, double v)
{
    if (isnan(v)) return; /* empty */
    fprintf(fp, "%.9g", v);
}

/* The text of variant name in t, or "" (is_expr tells which column). */
static const char *var_text(const mb_meas_csv_texts *t, const char *name, int is_expr)
{
    for (int i = 0; t && i < t->n_vars; i++)
        if (!strcmp(t->vars[i].name, name)) return t->vars[i].is_expr == is_expr ? t->vars[i].text : "";
    return "";
}

void mb_meas_csv_row(FILE *fp, const mb_meas_record *r, int per_kernel, const mb_meas_csv_texts *t)
{
    flockfile(fp); /* once a row, not once a character (each call below takes the lock again, cheaply) */
    field(fp, r->device); fputc(',', fp);
    field(fp, r->backend); fputc(',', fp);
    field(fp, r->variant); fputc(',', fp);
    field(fp, r->plan); fputc(',', fp);
    field(fp, r->dtype); fputc(',', fp);
    fprintf(fp, "%lld,%d,%d,", (long long)r->n, r->kernels, r->reps);
    num(fp, r->time_s_median); fputc(',', fp);
    num(fp, r->time_s_min); fputc(',', fp);
    num(fp, r->time_s_p90); fputc(',', fp);
    num(fp, r->time_cv); fputc(',', fp);
    num(fp, r->model_time_s); fputc(',', fp);
    fprintf(fp, "%lld,%lld,%lld,%lld,", (long long)r->read_bytes, (long long)r->write_bytes,
            (long long)r->model_dram_read_bytes, (long long)r->model_dram_write_bytes);
    if (r->dram_read_bytes >= 0) fprintf(fp, "%lld", (long long)r->dram_read_bytes);
    fputc(',', fp);
    if (r->dram_write_bytes >= 0) fprintf(fp, "%lld", (long long)r->dram_write_bytes);
    fputc(',', fp);
    field(fp, r->counters); fputc(',', fp);
    num(fp, r->max_rel_err); fputc(',', fp);
    fprintf(fp, "%d", r->verified ? 1 : 0);
    if (per_kernel) {
        fputc(',', fp);
        field(fp, r->kernel);
    }
    fputc(',', fp);
    if (r->contended >= 0) fprintf(fp, "%d", r->contended);
    fputc(',', fp);
    num(fp, r->host_copy_gbs); fputc(',', fp);
    num(fp, r->host_copy_ratio); fputc(',', fp);
    num(fp, r->host_op_ratio); fputc(',', fp);
    num(fp, r->model_host_time_s); fputc(',', fp);
    num(fp, r->time_s_lower_mode); fputc(',', fp);
    num(fp, r->time_s_upper_mode); fputc(',', fp);
    num(fp, r->upper_mode_share); fputc(',', fp);
    num(fp, r->count_err); fputc(',', fp);
    field(fp, r->count_check); fputc(',', fp);
    field(fp, r->accuracy); fputc(',', fp);
    field(fp, var_text(t, r->variant, 0)); fputc(',', fp);
    field(fp, var_text(t, r->variant, 1)); fputc(',', fp);
    field(fp, t && t->spec ? t->spec : ""); fputc(',', fp);
    field(fp, t && t->prov ? t->prov : "");
    fputc(',', fp);
    field(fp, r->calibration);
    fputc(',', fp);
    if (r->rows > 0 && r->cols > 0) fprintf(fp, "%lldx%lld", (long long)r->rows, (long long)r->cols);
    fputc(',', fp);
    field(fp, r->dims);
    fputc('\n', fp);
    funlockfile(fp);
}

/* Appends text to the escaped string *dst (malloc'ed, NULL at first): a
 * newline as "\n", a backslash as "\\", carriage returns dropped; sep
 * ("\n" or "") first when *dst is not empty. Returns MB_ERUN when memory
 * runs out. */
static int esc_append(char **dst, const char *sep, const char *text)
{
    size_t old = *dst ? strlen(*dst) : 0, add = 2 * (strlen(text) + strlen(sep)) + 1;
    char *t = realloc(*dst, old + add);
    if (!t) return MB_ERUN;
    char *w = t + old;
    const char *src[2] = {old ? sep : "", text};
    for (int k = 0; k < 2; k++)
        for (const char *c = src[k]; *c; c++) {
            if (*c == '\r') continue;
            if (*c == '\n' || *c == '\\') *w++ = '\\';
            *w++ = *c == '\n' ? 'n' : *c;
        }
    *w = '\0';
    *dst = t;
    return MB_OK;
}

int mb_meas_csv_texts_add(mb_meas_csv_texts *t, const char *line)
{
    char *one = strdup(line);
    if (!one) return MB_ERUN;
    for (char *c = one; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    int rc = esc_append(&t->prov, "\n", one);
    free(one);
    return rc;
}

void mb_meas_csv_texts_free(mb_meas_csv_texts *t)
{
    free(t->spec);
    free(t->prov);
    for (int i = 0; i < t->n_vars; i++) free(t->vars[i].text);
    free(t->vars);
    memset(t, 0, sizeof *t);
}

/* The provenance lines of pv, in the order the '#' lines had. */
static int prov_init(mb_meas_csv_texts *t, const mb_meas_provenance *pv)
{
    struct { const char *key, *val; } kv[] = {
        {"cpu", pv->cpu_model}, {"host", pv->host}, {"compiler", pv->compiler},
        {"git_commit", pv->git_commit[0] ? pv->git_commit : "unknown"}, {"date", pv->date},
        {"settings", pv->settings}};
    char line[1200];
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        if (!kv[i].val[0]) continue;
        snprintf(line, sizeof line, "%s: %s", kv[i].key, kv[i].val);
        if (mb_meas_csv_texts_add(t, line)) return MB_ERUN;
    }
    for (const char *e = pv->extra; *e;) {
        size_t len = strcspn(e, "\n");
        if (len > 0) {
            snprintf(line, sizeof line, "%.*s", (int)len, e);
            if (mb_meas_csv_texts_add(t, line)) return MB_ERUN;
        }
        e += len + (e[len] == '\n');
    }
    return MB_OK;
}

/* A variant file's text, read back: MB_OK and *out (malloc'ed), or MB_ERUN. */
static int read_back(const char *path, char **out, mb_err *err)
{
    FILE *in = fopen(path, "rb");
    if (!in) return mb_err_set(err, MB_ERUN, "%s: cannot read back: %s", path, strerror(errno));
    size_t len = 0;
    FILE *mem = open_memstream(out, &len);
    char buf[4096];
    size_t got;
    while (mem && (got = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, got, mem);
    fclose(in);
    if (!mem || fclose(mem) != 0) { free(*out); *out = NULL; return mb_err_set(err, MB_ERUN, "out of memory"); }
    return MB_OK;
}

int mb_meas_csv_texts_add_variant(mb_meas_csv_texts *t, const mb_graph *g, const char *expr, mb_err *err)
{
    for (int k = 0; k < t->n_vars; k++)
        if (!strcmp(t->vars[k].name, g->name)) return MB_OK; /* the first of a name is the one rows get */
    char *text = NULL;
    int rc = expr ? MB_OK : read_back(g->path, &text, err);
    if (rc) return rc;
    mb_meas_csv_var *vars = realloc(t->vars, (size_t)(t->n_vars + 1) * sizeof *vars);
    if (!vars) { free(text); return mb_err_set(err, MB_ERUN, "out of memory"); }
    t->vars = vars;
    mb_meas_csv_var *v = &t->vars[t->n_vars];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", g->name);
    v->is_expr = expr != NULL;
    rc = esc_append(&v->text, "", expr ? expr : text);
    free(text);
    if (rc) return mb_err_set(err, MB_ERUN, "out of memory");
    t->n_vars++;
    return MB_OK;
}

int mb_meas_csv_texts_init(mb_meas_csv_texts *t, const mb_meas_provenance *pv, const mb_device *dev,
                           mb_graph *const *graphs, const char *const *exprs, int n_graphs, mb_err *err)
{
    memset(t, 0, sizeof *t);
    char *spec = mb_device_ini_text(dev, err);
    if (!spec) return MB_EINPUT;
    int rc = esc_append(&t->spec, "", spec);
    free(spec);
    if (!rc) rc = prov_init(t, pv);
    if (rc) { mb_meas_csv_texts_free(t); return mb_err_set(err, MB_ERUN, "out of memory"); }
    for (int i = 0; i < n_graphs; i++) {
        if ((rc = mb_meas_csv_texts_add_variant(t, graphs[i], exprs ? exprs[i] : NULL, err))) {
            mb_meas_csv_texts_free(t);
            return rc;
        }
    }
    return MB_OK;
}

int mb_meas_csv_rows_add(mb_meas_csv_rows *b, const mb_meas_record *r)
{
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 64;
        mb_meas_record *p = realloc(b->rows, (size_t)cap * sizeof *p);
        if (!p) return MB_ERUN;
        b->rows = p;
        b->cap = cap;
    }
    b->rows[b->n++] = *r;
    return MB_OK;
}

int mb_meas_csv_rows_write(const mb_meas_csv_rows *b, const mb_meas_csv_texts *t, FILE *fp, mb_err *err)
{
    mb_meas_csv_header(fp, b->per_kernel);
    for (int i = 0; i < b->n; i++) mb_meas_csv_row(fp, &b->rows[i], b->per_kernel, t);
    if (ferror(fp)) return mb_err_set(err, MB_ERUN, "writing the CSV: %s", strerror(errno));
    return MB_OK;
}

void mb_meas_csv_rows_free(mb_meas_csv_rows *b)
{
    free(b->rows);
    memset(b, 0, sizeof *b);
}
