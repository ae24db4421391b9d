/* ncu.c — launches from what `ncu --csv` writes, both pages: details (the
 * default: one row per launch and metric, "ID",...,"Metric Name","Metric
 * Unit","Metric Value", newer versions append rule columns whose metric
 * cells are empty) and raw (one row per launch, metric names as columns,
 * then a second row of units). Lines before the header (==PROF==, the
 * program's own output) and "==" lines after it are passed over; values
 * are read whole by imp_number and may carry thousands separators; "n/a"
 * is no value; IDs increase; units in both spellings
 * (byte/Kbyte/Mbyte/Gbyte, nsecond/usecond/msecond and ns/us/ms). Metrics
 * read: dram__bytes_read.sum, dram__bytes_write.sum, gpu__time_duration.sum
 * (the SpeedOfLight section's "Duration" as well). A launch's mark is a
 * "membound:..." NVTX range in a column named NVTX, or its kernel name
 * when ncu renamed it (--nvtx --print-nvtx-rename kernel: the range's name
 * replaces the kernel's, so such launches match by sequence, count and grid
 * only). The tokenizer is the
 * project's one CSV reader, the file read in pieces (mb_csv_read_fd). Does not match launches. */
#include "import_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { M_READ = 0, M_WRITE, M_TIME, M_COUNT };
static const char *const metric_names[M_COUNT] = {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                                  "gpu__time_duration.sum"};

/* Each unit's scale to bytes or seconds, and whether it is ncu's base unit
 * (--print-units base: byte and nsecond, whole numbers at full precision;
 * the others are auto-scaled, "4.19" Mbyte, 3 to 5 digits). */
static const struct {
    const char *unit;
    double scale;
    int is_time, base;
} units[] = {
    {"byte", 1, 0, 1}, {"Kbyte", 1e3, 0, 0}, {"Mbyte", 1e6, 0, 0}, {"Gbyte", 1e9, 0, 0}, {"Tbyte", 1e12, 0, 0},
    {"KB", 1e3, 0, 0}, {"MB", 1e6, 0, 0}, {"GB", 1e9, 0, 0}, {"B", 1, 0, 1},
    {"nsecond", 1e-9, 1, 1}, {"usecond", 1e-6, 1, 0}, {"msecond", 1e-3, 1, 0}, {"second", 1, 1, 0},
    {"ns", 1e-9, 1, 1}, {"us", 1e-6, 1, 0}, {"ms", 1e-3, 1, 0}, {"s", 1, 1, 0},
};

typedef struct ncu_read {
    const char *path;
    imp_launches *L;
    int header_seen, raw, units_seen;
    int c_id, c_name, c_grid, c_block, c_device, c_nvtx, c_mname, c_munit, c_mval;
    int c_metric[M_COUNT];
    char unit[M_COUNT][32];   /* raw page: each metric column's unit */
    int header_fields;
    char last_id[64];         /* details: the launch being filled */
    double last_id_v;         /* the last launch's ID, as a number */
    int n_ids;                /* launches with an ID so far */
    unsigned metrics_seen;    /* the launch's metrics so far, a bit each (M_COUNT: Duration) */
    char scaled[128];         /* the auto-scaled units seen */
    int have_metric[M_COUNT];
} ncu_read;

static int raw_line(void *vctx, const char *line, size_t len, int line_no, int *taken, mb_err *err)
{
    ncu_read *r = vctx;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
    if (!r->header_seen) *taken = !(len - i >= 4 && !strncmp(line + i, "\"ID\"", 4));
    else *taken = len - i >= 2 && line[i] == '=' && line[i + 1] == '=';
    (void)line_no, (void)err;
    return MB_OK;
}

/* The scale of unit u to bytes or seconds (is_time says which is wanted);
 * MB_EINPUT naming the column when it is neither. Auto-scaled ones noted. */
static int unit_scale(ncu_read *r, const mb_csv_field *f, int is_time, double *scale, mb_err *err)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(units[i].unit, f->s) != 0 || units[i].is_time != is_time) continue;
        *scale = units[i].scale;
        if (!units[i].base && !strstr(r->scaled, f->s) && strlen(r->scaled) + strlen(f->s) + 3 < sizeof r->scaled)
            snprintf(r->scaled + strlen(r->scaled), sizeof r->scaled - strlen(r->scaled), "%s%s",
                     r->scaled[0] ? ", " : "", f->s);
        return MB_OK;
    }
    return mb_err_set(err, MB_EINPUT, "%s:%d:%d: unit '%s': expected %s", r->path, f->line, f->col, f->s,
                      is_time ? "a time unit (nsecond, usecond, msecond, second or ns, us, ms, s)"
                              : "a byte unit (byte, Kbyte, Mbyte, Gbyte)");
}

/* Metric m's value in field f, in unit u, into *out (bytes or seconds):
 * imp_number's whole decimal field, thousands separated in threes ("2,5" is
 * no number: a decimal comma would read as 25), then bounded by what a
 * kernel can count (MB_IMP_BYTES_MAX, MB_IMP_TIME_MAX_S). "n/a" or empty
 * gives NAN. MB_EINPUT with the field's line and column. */
static int metric(ncu_read *r, const mb_csv_field *f, const mb_csv_field *u, int m, double *out, mb_err *err)
{
    *out = NAN;
    if (!f->s[0] || !strcasecmp(f->s, "n/a")) return MB_OK;
    double scale, v;
    int rc = unit_scale(r, u, m == M_TIME, &scale, err);
    if (rc) return rc;
    char shown[48];
    size_t n = mb_text_escape(f->s, shown, sizeof shown);
    rc = imp_number(f->s, 1, 0, HUGE_VAL, &v);
    if (rc == MB_ERUN) return mb_err_set(err, rc, "out of memory");
    if (rc)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s value '%s%s': expected a decimal number >= 0 (thousands "
                          "separated by ',' in threes; or n/a)", r->path, f->line, f->col, metric_names[m], shown,
                          n >= sizeof shown ? "..." : "");
    v *= scale;
    double max = m == M_TIME ? MB_IMP_TIME_MAX_S : MB_IMP_BYTES_MAX;
    if (!(v <= max))
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s value '%s%s' %s: more than %s, more than any kernel %s",
                          r->path, f->line, f->col, metric_names[m], shown, n >= sizeof shown ? "..." : "", u->s,
                          m == M_TIME ? "an hour" : "2^53 bytes", m == M_TIME ? "runs" : "moves");
    *out = v;
    return MB_OK;
}

/* "(32768, 1, 1)", "32768 1 1" or "32768" in field f into d[3]; empty: 0
 * (unknown). Each a whole number from 1 to MB_IMP_DIM_MAX, else MB_EINPUT
 * (a negative one is not read as positive). */
static int dims(ncu_read *r, const mb_csv_field *f, const char *what, int d[3], mb_err *err)
{
    d[0] = d[1] = d[2] = 0;
    const char *s = f->s;
    if (!*s) return MB_OK;
    int k = 0, ok = 1, paren = *s == '(';
    s += paren;
    while (ok && k < 3) {
        size_t len = strspn(s, "0123456789");
        char num[16];
        double v;
        ok = len > 0 && len < sizeof num;
        if (ok) {
            memcpy(num, s, len);
            num[len] = '\0';
            ok = imp_number(num, 0, 1, (double)MB_IMP_DIM_MAX, &v) == MB_OK;
        }
        if (ok) d[k++] = (int)v;
        s += len;
        if (!*s || *s == ')') break;
        if (*s == ',') s++;
        if (*s == ' ') s++;
    }
    if (paren) ok = ok && *s == ')' && !s[1];
    else ok = ok && !*s;
    ok = ok && (k == 1 || k == 3);
    if (!ok) {
        char shown[48];
        mb_text_escape(f->s, shown, sizeof shown);
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %s '%s': expected (X, Y, Z), each a whole number from 1 to %lld",
                          r->path, f->line, f->col, what, shown, MB_IMP_DIM_MAX);
    }
    if (k == 1) d[1] = d[2] = 1;
    return MB_OK;
}

/* The "membound:..." mark in s into label; MB_EINPUT when it does not fit
 * (two long marks cut to one would merge their groups). */
static int nvtx_label(ncu_read *r, const mb_csv_field *f, const char *s, char *label, size_t size, mb_err *err)
{
    const char *p = strstr(s, "membound:");
    if (!p) return MB_OK;
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:=.-^");
    if (n >= size)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: a membound: mark of more than %zu bytes", r->path, f->line,
                          f->col, size - 1);
    snprintf(label, size, "%.*s", (int)n, p);
    return MB_OK;
}

/* 1 when h names NVTX ranges ("NVTX", "nvtx__...", any case). */
static int nvtx_column(const char *h)
{
    for (; *h; h++)
        if (!strncasecmp(h, "nvtx", 4)) return 1;
    return 0;
}

static int header(ncu_read *r, const mb_csv_record *rec, mb_err *err)
{
    r->header_seen = 1;
    r->header_fields = rec->n;
    int *cols[] = {&r->c_id, &r->c_name, &r->c_grid, &r->c_block, &r->c_device, &r->c_mname, &r->c_munit,
                   &r->c_mval};
    static const char *const names[] = {"ID", "Kernel Name", "Grid Size", "Block Size", "Device",
                                        "Metric Name", "Metric Unit", "Metric Value"};
    for (int k = 0; k < 8; k++) *cols[k] = -1;
    r->c_nvtx = -1;
    for (int m = 0; m < M_COUNT; m++) r->c_metric[m] = -1;
    for (int i = 0; i < rec->n; i++) {
        const char *h = rec->f[i].s;
        for (int k = 0; k < 8; k++)
            if (!strcmp(h, names[k]) && *cols[k] < 0) *cols[k] = i;
        for (int m = 0; m < M_COUNT; m++) {
            if (strcmp(h, metric_names[m]) != 0) continue;
            if (r->c_metric[m] >= 0)
                return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column '%s' given twice: which one is the launch's?",
                                  r->path, rec->line, rec->f[i].col, h);
            r->c_metric[m] = i;
        }
        if (nvtx_column(h) && r->c_nvtx < 0) r->c_nvtx = i;
    }
    if (r->c_name < 0)
        return mb_err_set(err, MB_EINPUT, "%s:%d:1: no 'Kernel Name' column: not a CSV of ncu --csv", r->path,
                          rec->line);
    r->raw = r->c_mname < 0;
    if (!r->raw && (r->c_munit < 0 || r->c_mval < 0 || r->c_id < 0))
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: 'Metric Name' without 'ID', 'Metric Unit' and 'Metric "
                          "Value': not ncu's details page", r->path, rec->line, rec->end_col);
    if (r->raw && r->c_metric[M_TIME] < 0)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: no column 'gpu__time_duration.sum': profile with "
                          "--metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum",
                          r->path, rec->line, rec->end_col);
    return MB_OK;
}

/* The launch ID in field f, which must be a whole number above the last
 * one's: ncu numbers its results in order, so an ID seen again is two
 * launches that would merge, or a file pasted together. */
static int launch_id(ncu_read *r, const mb_csv_field *f, mb_err *err)
{
    double id;
    if (imp_number(f->s, 0, 0, 9007199254740992.0, &id) != MB_OK || (r->n_ids && !(id > r->last_id_v))) {
        char shown[48];
        mb_text_escape(f->s, shown, sizeof shown);
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: launch ID '%s' after ID %.0f: expected a larger whole number "
                          "(two launches with one ID?)", r->path, f->line, f->col, shown, r->last_id_v);
    }
    r->last_id_v = id;
    r->n_ids++;
    return MB_OK;
}

/* s escaped (mb_text_escape) and interned in L, or NULL when memory runs
 * out; a name of any length (a buffer on the stack for the usual ones). */
static const char *escaped_intern(imp_launches *L, const char *s)
{
    char buf[512];
    if (mb_text_escape(s, buf, sizeof buf) < sizeof buf) return imp_intern(L, buf);
    char *long_one = mb_text_escape_dup(s);
    const char *kept = long_one ? imp_intern(L, long_one) : NULL;
    free(long_one);
    return kept;
}

static int new_launch(ncu_read *r, const mb_csv_record *rec, imp_launch **out, mb_err *err)
{
    int rc = r->c_id >= 0 && (!r->raw || rec->f[r->c_id].s[0]) ? launch_id(r, &rec->f[r->c_id], err) : MB_OK;
    if (rc) return rc;
    imp_launch *x = imp_launch_add(r->L);
    if (!x || !(x->name = escaped_intern(r->L, rec->f[r->c_name].s))) return mb_err_set(err, MB_ERUN, "out of memory");
    x->line = rec->line;
    r->metrics_seen = 0;
    if (r->c_grid >= 0 && (rc = dims(r, &rec->f[r->c_grid], "grid size", x->grid, err))) return rc;
    if (r->c_block >= 0 && (rc = dims(r, &rec->f[r->c_block], "block size", x->block, err))) return rc;
    if (r->c_device >= 0 && strpbrk(rec->f[r->c_device].s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")) {
        char gpu[IMP_GPU_MAX];
        mb_text_escape(rec->f[r->c_device].s, gpu, sizeof gpu);
        if (!(x->gpu = imp_intern(r->L, gpu))) return mb_err_set(err, MB_ERUN, "out of memory");
    }
    char label[IMP_LABEL_MAX] = "";
    if (r->c_nvtx >= 0 &&
        (rc = nvtx_label(r, &rec->f[r->c_nvtx], rec->f[r->c_nvtx].s, label, sizeof label, err)))
        return rc;
    if (!label[0] && /* --print-nvtx-rename kernel */
        (rc = nvtx_label(r, &rec->f[r->c_name], x->name, label, sizeof label, err)))
        return rc;
    if (label[0] && !(x->label = imp_intern(r->L, label))) return mb_err_set(err, MB_ERUN, "out of memory");
    *out = x;
    return MB_OK;
}

static double *slot(imp_launch *x, int m)
{
    return m == M_READ ? &x->dram_read_bytes : m == M_WRITE ? &x->dram_write_bytes : &x->time_s;
}

static int raw_row(ncu_read *r, const mb_csv_record *rec, mb_err *err)
{
    if (!r->units_seen && r->c_id >= 0 && rec->f[r->c_id].s[0]) {
        /* no units row (a file written without one): ncu's base units */
        r->units_seen = 1;
        snprintf(r->unit[M_READ], sizeof r->unit[M_READ], "byte");
        snprintf(r->unit[M_WRITE], sizeof r->unit[M_WRITE], "byte");
        snprintf(r->unit[M_TIME], sizeof r->unit[M_TIME], "nsecond");
    }
    if (!r->units_seen) { /* the units row: "" under the ID columns */
        r->units_seen = 1;
        for (int m = 0; m < M_COUNT; m++) {
            if (r->c_metric[m] < 0) continue;
            double scale;
            int rc = unit_scale(r, &rec->f[r->c_metric[m]], m == M_TIME, &scale, err);
            if (rc) return rc;
            snprintf(r->unit[m], sizeof r->unit[m], "%s", rec->f[r->c_metric[m]].s);
        }
        return MB_OK;
    }
    imp_launch *x;
    int rc = new_launch(r, rec, &x, err);
    for (int m = 0; m < M_COUNT && !rc; m++) {
        if (r->c_metric[m] < 0) continue;
        mb_csv_field u = {r->unit[m], strlen(r->unit[m]), rec->line, 1};
        rc = metric(r, &rec->f[r->c_metric[m]], &u, m, slot(x, m), err);
    }
    return rc;
}

static int details_row(ncu_read *r, const mb_csv_record *rec, mb_err *err)
{
    const mb_csv_field *f = rec->f;
    if (!f[r->c_mname].s[0]) return MB_OK; /* a rule row */
    imp_launch *x = r->L->n ? &r->L->v[r->L->n - 1] : NULL;
    int rc;
    if (!x || strcmp(r->last_id, f[r->c_id].s) != 0) {
        if ((rc = new_launch(r, rec, &x, err))) return rc;
        snprintf(r->last_id, sizeof r->last_id, "%s", f[r->c_id].s);
    } else {
        char *name = mb_text_escape_dup(f[r->c_name].s);
        if (!name) return mb_err_set(err, MB_ERUN, "out of memory");
        int same = !strcmp(name, x->name);
        free(name);
        if (!same)
            return mb_err_set(err, MB_EINPUT, "%s:%d:%d: launch ID %s names another kernel than at line %d: two "
                              "launches with one ID", r->path, rec->line, f[r->c_name].col, r->last_id, x->line);
    }
    const char *mn = f[r->c_mname].s;
    int m = -1, bit = -1;
    for (int k = 0; k < M_COUNT; k++)
        if (!strcmp(mn, metric_names[k])) m = bit = k;
    /* the SpeedOfLight section's Duration is gpu__time_duration.sum; the metric wins when both are there */
    if (m < 0 && !strcmp(mn, "Duration")) m = M_TIME, bit = M_COUNT;
    if (m < 0) return MB_OK;
    if (r->metrics_seen & (1u << bit))
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: metric '%s' given twice for launch ID %s: which one is it?",
                          r->path, rec->line, f[r->c_mname].col, mn, r->last_id);
    r->metrics_seen |= 1u << bit;
    if (bit == M_COUNT && (r->metrics_seen & (1u << M_TIME))) return MB_OK;
    if ((rc = metric(r, &f[r->c_mval], &f[r->c_munit], m, slot(x, m), err))) return rc;
    r->have_metric[m] = 1;
    return MB_OK;
}

static int record(void *vctx, mb_csv_record *rec, mb_err *err)
{
    ncu_read *r = vctx;
    if (!r->header_seen) return header(r, rec, err);
    int n = rec->n;
    if (n == r->header_fields + 1 && !rec->f[n - 1].s[0]) n--; /* a trailing comma */
    if (n != r->header_fields)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %d fields, but the header has %d (a truncated or "
                          "mixed file?)", r->path, rec->line, rec->end_col, n, r->header_fields);
    return r->raw ? raw_row(r, rec, err) : details_row(r, rec, err);
}

int imp_read_ncu(int fd, size_t max_bytes, const char *path, imp_launches *L, mb_err *err)
{
    ncu_read r = {.path = path, .L = L};
    static const mb_csv_ops ops = {raw_line, record};
    int rc = mb_csv_read_fd(fd, path, max_bytes, &ops, &r, NULL, err);
    if (rc) return rc;
    if (!r.header_seen)
        return mb_err_set(err, MB_EINPUT, "%s: no ncu CSV header (a line starting \"ID\",...): write it with "
                          "ncu --csv --log-file FILE", path);
    if (L->n == 0)
        return mb_err_set(err, MB_EINPUT, "%s: no launches after the header: ncu profiled no kernel", path);
    if (!r.raw && !r.have_metric[M_TIME])
        return mb_err_set(err, MB_EINPUT, "%s: no gpu__time_duration.sum (or Duration) metric: profile with "
                          "--metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum", path);
    for (int i = 0; i < L->n; i++)
        if (!(L->v[i].time_s > 0))
            return mb_err_set(err, MB_EINPUT, "%s:%d: launch '%s' has no duration (n/a or 0): a truncated "
                              "file or a failed replay", path, L->v[i].line, L->v[i].name);
    snprintf(L->note, sizeof L->note, "ncu page %s%s%s%s", r.raw ? "raw" : "details",
             r.scaled[0] ? "; auto-scaled units (" : "", r.scaled,
             r.scaled[0] ? ") keep 3-5 significant digits: profile with --print-units base" : "");
    return MB_OK;
}
