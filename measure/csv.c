/* csv.c — measurement records as CSV (the design's column contract) with
 * leading '#' provenance lines. Does not open or commit files (mb_outfile). */
#define _POSIX_C_SOURCE 200809L
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
             c->threads > 0 ? c->threads : mb_kern_threads(), mb_kern_exec_name(c->exec), c->check,
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

void mb_meas_csv_provenance(FILE *fp, const mb_meas_provenance *pv)
{
    fprintf(fp, "# membound measurement\n");
    if (pv->cpu_model[0]) fprintf(fp, "# cpu: %s\n", pv->cpu_model);
    if (pv->host[0]) fprintf(fp, "# host: %s\n", pv->host);
    if (pv->compiler[0]) fprintf(fp, "# compiler: %s\n", pv->compiler);
    fprintf(fp, "# git_commit: %s\n", pv->git_commit[0] ? pv->git_commit : "unknown");
    if (pv->date[0]) fprintf(fp, "# date: %s\n", pv->date);
    if (pv->settings[0]) fprintf(fp, "# settings: %s\n", pv->settings);
    const char *e = pv->extra;
    while (*e) {
        const char *nl = strchr(e, '\n');
        int len = nl ? (int)(nl - e) : (int)strlen(e);
        if (len > 0) fprintf(fp, "# %.*s\n", len, e);
        e += len + (nl ? 1 : 0);
    }
}

/* The contract's columns, from their one definition (membound_model.h). */
#define MB_CSV_NAME(name, required) "," #name
static const char *const columns = &(MB_MEAS_CSV_COLUMNS(MB_CSV_NAME))[1];
#undef MB_CSV_NAME

/* Columns after the contract's (and after "kernel" in per-kernel files):
 * readers find columns by name, so older readers skip them. */
static const char *const extra_columns = MB_MEAS_CSV_CONTENDED_COLUMN "," MB_MEAS_CSV_HOST_COLUMNS
                                          "," MB_MEAS_CSV_HOST_MODEL_COLUMN "," MB_MEAS_CSV_MODES_COLUMNS
                                          "," MB_MEAS_CSV_COUNT_COLUMNS "," MB_MEAS_CSV_ACCURACY_COLUMN;

void mb_meas_csv_header(FILE *fp, int per_kernel)
{
    fprintf(fp, "%s%s,%s\n", columns, per_kernel ? ",kernel" : "", extra_columns);
}

/* A text field, quoted (RFC 4180) when it holds a comma, quote or newline. */
static void field(FILE *fp, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"') fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

static void num(FILE *fp, double v)
{
    if (isnan(v)) return; /* empty */
    fprintf(fp, "%.9g", v);
}

void mb_meas_csv_row(FILE *fp, const mb_meas_record *r, int per_kernel)
{
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
    field(fp, r->accuracy);
    fputc('\n', fp);
}

/* Writes text as "# key: line" lines (name, when given, after the key). */
static void prov_lines(FILE *fp, const char *key, const char *name, const char *text)
{
    while (*text) {
        size_t len = strcspn(text, "\n");
        int l = len > 0 && text[len - 1] == '\r' ? (int)len - 1 : (int)len;
        fprintf(fp, "# %s%s%s: %.*s\n", key, name ? " " : "", name ? name : "", l, text);
        text += len + (text[len] == '\n');
    }
}

int mb_meas_csv_embed(FILE *fp, const mb_device *dev, mb_graph *const *graphs, int n_graphs,
                      const char *expr, mb_err *err)
{
    char *spec = mb_device_ini_text(dev, err);
    if (!spec) return MB_EINPUT;
    prov_lines(fp, MB_MEAS_PROV_SPEC, NULL, spec);
    free(spec);
    for (int i = 0; i < n_graphs; i++) {
        const mb_graph *g = graphs[i];
        int dup = 0;
        for (int k = 0; k < i; k++) dup |= !strcmp(graphs[k]->name, g->name);
        if (dup) continue;
        if (!strcmp(g->path, "<expr>")) {
            prov_lines(fp, MB_MEAS_PROV_EXPR, g->name, expr ? expr : "");
            continue;
        }
        FILE *in = fopen(g->path, "rb");
        if (!in) return mb_err_set(err, MB_ERUN, "%s: cannot read back: %s", g->path, strerror(errno));
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        char buf[4096];
        size_t got;
        while (mem && (got = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, got, mem);
        fclose(in);
        if (!mem || fclose(mem) != 0) { free(text); return mb_err_set(err, MB_ERUN, "out of memory"); }
        prov_lines(fp, MB_MEAS_PROV_VARIANT, g->name, text);
        free(text);
    }
    return MB_OK;
}
