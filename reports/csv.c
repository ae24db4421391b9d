/* csv.c — reads measurement CSVs (design.md, "Measurement records") into
 * mb_rpt_row records, with their provenance, device spec and variant texts:
 * in the text columns of each row (MB_MEAS_CSV_TEXT_COLUMNS), or, in files
 * written before them, in "#" lines. Columns are found by name. Does not
 * interpret rows against the model (join.c does). */
#include "report_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Columns of the contract (their one definition is MB_MEAS_CSV_COLUMNS),
 * then the per-kernel files' "kernel". Required ones must be in the header. */
#define MB_COL_ENUM(name, required) C_##name,
enum { MB_MEAS_CSV_COLUMNS(MB_COL_ENUM) C_KERNEL, C_CONTENDED, C_HOST_GBS, C_HOST_RATIO, C_HOST_OP,
       C_LO_MODE, C_HI_MODE, C_HI_SHARE, C_COUNT_ERR, C_COUNT_CHECK, C_VTEXT, C_VEXPR, C_SPEC, C_PROV,
       C_CALIBRATION, C_SHAPE, C_DIMS, C_COUNT };
#undef MB_COL_ENUM
#define MB_COL_ROW(name, required) {#name, required},
static const struct {
    const char *name;
    int required;
} columns[C_COUNT] = {MB_MEAS_CSV_COLUMNS(MB_COL_ROW){MB_MEAS_CSV_KERNEL_COLUMN, 0},
                      {MB_MEAS_CSV_CONTENDED_COLUMN, 0}, {"host_copy_gbs", 0},
                      {"host_copy_ratio", 0}, {"host_op_ratio", 0},
                      /* MB_MEAS_CSV_MODES_COLUMNS */
                      {"time_s_lower_mode", 0}, {"time_s_upper_mode", 0}, {"upper_mode_share", 0},
                      /* MB_MEAS_CSV_COUNT_COLUMNS: the harness's verdict (count_err is
                         re-derived by join.c as resid_bytes_rel; read only to refuse a
                         value that is not a number) */
                      {"count_err", 0}, {"count_check", 0},
                      /* MB_MEAS_CSV_TEXT_COLUMNS */
                      {MB_MEAS_PROV_VARIANT, 0}, {MB_MEAS_PROV_EXPR, 0}, {MB_MEAS_PROV_SPEC, 0},
                      {MB_MEAS_PROV_LINES, 0},
                      {MB_MEAS_CSV_CALIBRATION_COLUMN, 0}, {MB_MEAS_CSV_SHAPE_COLUMN, 0},
                      {MB_MEAS_CSV_DIMS_COLUMN, 0}};
#undef MB_COL_ROW
/* short names for the parser below */
enum {
    C_DEVICE = C_device, C_BACKEND = C_backend, C_VARIANT = C_variant, C_PLAN = C_plan,
    C_DTYPE = C_dtype, C_N = C_n, C_KERNELS = C_kernels, C_REPS = C_reps,
    C_TMED = C_time_s_median, C_TMIN = C_time_s_min, C_TP90 = C_time_s_p90, C_CV = C_time_cv,
    C_MODEL_T = C_model_time_s, C_READ = C_read_bytes, C_WRITE = C_write_bytes,
    C_DRAM_R = C_dram_read_bytes, C_DRAM_W = C_dram_write_bytes, C_COUNTERS = C_counters,
    C_MAXERR = C_max_rel_err, C_VERIFIED = C_verified
};

/* A field as the one CSV reader (mb_csv_read) gives it: unquoted text, its
 * 1-based column. */
typedef mb_csv_field field;

typedef struct ctx {
    const char *path;
    int line;
    mb_err *err;
} ctx;

static int bad(ctx *c, const field *f, int colid, const char *what)
{
    return mb_err_set(c->err, MB_EINPUT, "%s:%d:%d: column '%s': expected %s, got '%s'", c->path,
                      f->line, f->col, columns[colid].name, what, f->s);
}

/* A double; empty gives NaN when allow_empty, else an error. */
static int get_double(ctx *c, const field *f, int colid, int allow_empty, double *out)
{
    if (f->s[0] == '\0') {
        if (allow_empty) { *out = NAN; return MB_OK; }
        return bad(c, f, colid, "a number");
    }
    char *end;
    errno = 0;
    double v = strtod(f->s, &end);
    if (end == f->s || *end != '\0' || errno == ERANGE)
        return bad(c, f, colid, "a number");
    if (!isfinite(v)) {
        /* "nan" is how some writers spell "not measured" */
        if (isnan(v) && allow_empty) { *out = NAN; return MB_OK; }
        return bad(c, f, colid, "a finite number");
    }
    *out = v;
    return MB_OK;
}

/* A non-negative integer; empty gives -1 when allow_empty. */
static int get_i64(ctx *c, const field *f, int colid, int allow_empty, int64_t *out)
{
    if (f->s[0] == '\0') {
        if (allow_empty) { *out = -1; return MB_OK; }
        return bad(c, f, colid, "an integer");
    }
    const char *s = f->s;
    if (!isdigit((unsigned char)s[0])) return bad(c, f, colid, "a non-negative integer");
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || v < 0)
        return bad(c, f, colid, "a non-negative integer");
    *out = (int64_t)v;
    return MB_OK;
}

/* ---- row storage: interned strings ------------------------------------
 * A row's strings repeat across rows (a million rows name one file, one
 * device, a few variants): each distinct value is kept once, in blocks that
 * never move, found by hash; rows hold pointers. */

#define RPT_STR_BLOCK ((size_t)1 << 16)

struct rpt_strings {
    char **blocks;
    size_t n_blocks, used;          /* bytes used in the last block */
    const char **slot;              /* open addressing, NULL empty */
    size_t n_slots, n;
};

static uint64_t str_hash(const char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

static void strings_free(struct rpt_strings *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n_blocks; i++) free(t->blocks[i]);
    free(t->blocks);
    free(t->slot);
    free(t);
}

static int strings_grow(struct rpt_strings *t)
{
    size_t ns = t->n_slots ? 2 * t->n_slots : 256;
    const char **sl = calloc(ns, sizeof *sl);
    if (!sl) return MB_ERUN;
    for (size_t i = 0; i < t->n_slots; i++) {
        if (!t->slot[i]) continue;
        size_t j = str_hash(t->slot[i], strlen(t->slot[i])) & (ns - 1);
        while (sl[j]) j = (j + 1) & (ns - 1);
        sl[j] = t->slot[i];
    }
    free(t->slot);
    t->slot = sl;
    t->n_slots = ns;
    return MB_OK;
}

/* The set's one copy of the first len bytes of p (cut at max - 1 bytes, as
 * the fixed fields were), or NULL when out of memory. */
static const char *intern(mb_rpt_set *s, const char *p, size_t max)
{
    size_t len = strlen(p);
    if (len > max - 1) len = max - 1;
    struct rpt_strings *t = s->strings;
    if (!t && !(t = s->strings = calloc(1, sizeof *t))) return NULL;
    if (2 * (t->n + 1) > t->n_slots && strings_grow(t)) return NULL;
    size_t j = str_hash(p, len) & (t->n_slots - 1);
    for (; t->slot[j]; j = (j + 1) & (t->n_slots - 1))
        if (!strncmp(t->slot[j], p, len) && t->slot[j][len] == '\0') return t->slot[j];
    if (!t->n_blocks || t->used + len + 1 > RPT_STR_BLOCK) {
        size_t size = len + 1 > RPT_STR_BLOCK ? len + 1 : RPT_STR_BLOCK;
        char **nb = realloc(t->blocks, (t->n_blocks + 1) * sizeof *nb);
        if (!nb) return NULL;
        t->blocks = nb;
        if (!(t->blocks[t->n_blocks] = malloc(size))) return NULL;
        t->n_blocks++;
        t->used = 0;
    }
    char *q = t->blocks[t->n_blocks - 1] + t->used;
    memcpy(q, p, len);
    q[len] = '\0';
    t->used += len + 1;
    t->slot[j] = q;
    t->n++;
    return q;
}

const char *rpt_interned(const mb_rpt_set *s, const char *str)
{
    const struct rpt_strings *t = s ? s->strings : NULL; /* s NULL: the model's figures */
    if (!t || !t->n_slots) return NULL;
    size_t len = strlen(str);
    for (size_t j = str_hash(str, len) & (t->n_slots - 1); t->slot[j]; j = (j + 1) & (t->n_slots - 1))
        if (!strcmp(t->slot[j], str)) return t->slot[j];
    return NULL;
}

void mb_rpt_set_init(mb_rpt_set *s)
{
    memset(s, 0, sizeof *s);
}

void mb_rpt_set_free(mb_rpt_set *s)
{
    free(s->rows);
    free(s->files);
    free(s->prov);
    free(s->groups);
    free(s->verdicts);
    for (int i = 0; i < s->n_files; i++) free(s->specs ? s->specs[i] : NULL);
    free(s->specs);
    free(s->spec_lines);
    for (int i = 0; i < s->n_vars; i++) free(s->vars[i].text);
    free(s->vars);
    strings_free(s->strings);
    for (int i = 0; i < s->n_op_tables; i++) free(s->op_tables[i]);
    free(s->op_tables);
    free(s->tasks);
    memset(s, 0, sizeof *s);
}

static int add_prov(mb_rpt_set *s, const char *path, const char *text)
{
    if (s->n_prov % 32 == 0) {
        void *p = realloc(s->prov, (size_t)(s->n_prov + 32) * sizeof *s->prov);
        if (!p) return MB_ERUN;
        s->prov = p;
    }
    const char *base = strrchr(path, '/');
    snprintf(s->prov[s->n_prov++], sizeof s->prov[0], "%s: %s", base ? base + 1 : path, text);
    return MB_OK;
}

/* A provenance line that carries a text (measure's mb_meas_csv_embed):
 * "device_spec: LINE", "variant_text NAME: LINE", "variant_expr NAME: LINE",
 * at line_no. Returns 1 when it was one (*rc: MB_ERUN when out of memory,
 * MB_EINPUT with err set for a second text of one variant), else 0. */
static int embedded(mb_rpt_set *s, int file, int line_no, const char *q, int *rc, mb_err *err)
{
    static const char spec[] = MB_MEAS_PROV_SPEC ":";
    *rc = MB_OK;
    if (!strncmp(q, spec, sizeof spec - 1)) {
        const char *line = q + sizeof spec - 1;
        if (*line == ' ') line++;
        /* padded with empty lines so that the spec's line k is the CSV's line
         * k: an error in it names the CSV's file:line */
        char *old = s->specs[file];
        size_t ol = old ? strlen(old) : 0, al = strlen(line), have = 0;
        for (size_t i = 0; i < ol; i++) have += old[i] == '\n';
        size_t pad = line_no > 0 && (size_t)line_no > have + 1 ? (size_t)line_no - have - 1 : 0;
        char *t = realloc(old, ol + pad + al + 2);
        if (!t) { *rc = MB_ERUN; return 1; }
        memset(t + ol, '\n', pad);
        memcpy(t + ol + pad, line, al);
        t[ol + pad + al] = '\n';
        t[ol + pad + al + 1] = '\0';
        s->specs[file] = t;
        return 1;
    }
    int is_expr = !strncmp(q, MB_MEAS_PROV_EXPR " ", sizeof MB_MEAS_PROV_EXPR);
    if (!is_expr && strncmp(q, MB_MEAS_PROV_VARIANT " ", sizeof MB_MEAS_PROV_VARIANT)) return 0;
    _Static_assert(sizeof MB_MEAS_PROV_EXPR == sizeof MB_MEAS_PROV_VARIANT, "same length");
    const char *name = q + sizeof MB_MEAS_PROV_VARIANT; /* after the key and its space */
    const char *colon = strchr(name, ':');
    if (!colon || colon == name || colon - name >= MB_NAME_MAX) return 0;
    char nm[MB_NAME_MAX];
    snprintf(nm, sizeof nm, "%.*s", (int)(colon - name), name);
    const char *line = colon + 1;
    if (*line == ' ') line++;
    *rc = rpt_add_embedded(s, file, line_no, nm, is_expr, line, err);
    return 1;
}

#define LIMITS_TEXT "report reads at most 2000000 rows in all and 1 GiB per CSV"
_Static_assert(MB_RPT_MAX_ROWS == 2000000 && MB_RPT_MAX_CSV_BYTES == (size_t)1 << 30, "LIMITS_TEXT");

/* The limits' wording added to mb_text_open's or the reader's refusal. */
static int limits_said(int rc, mb_err *err)
{
    if (rc == MB_EINPUT && strstr(err->msg, "this input may have") && !strstr(err->msg, LIMITS_TEXT)) {
        size_t l = strlen(err->msg);
        snprintf(err->msg + l, sizeof err->msg - l, " (" LIMITS_TEXT ": split the file)");
    }
    return rc;
}

/* Statistics of one row that contradict each other (a writer's bug or an
 * edit) are refused: a minimum above the median, a p90 below it, a share
 * outside [0, 1], the lower mode above the upper, more contended samples
 * than samples; a harness count error must be a finite number. Absent
 * values (NaN, -1) are not compared. */
static int check_stats(ctx *c, const int *pos, const field *f, const mb_rpt_row *r)
{
    if (r->time_s_min > r->time_s_median) return bad(c, &f[pos[C_TMIN]], C_TMIN, "time_s_min <= time_s_median");
    if (r->time_s_p90 < r->time_s_median) return bad(c, &f[pos[C_TP90]], C_TP90, "time_s_p90 >= time_s_median");
    if (r->upper_mode_share > 1) return bad(c, &f[pos[C_HI_SHARE]], C_HI_SHARE, "a share in [0, 1]");
    if (r->time_s_lower_mode > r->time_s_upper_mode)
        return bad(c, &f[pos[C_LO_MODE]], C_LO_MODE, "time_s_lower_mode <= time_s_upper_mode");
    if (r->reps >= 0 && r->contended > r->reps)
        return bad(c, &f[pos[C_CONTENDED]], C_CONTENDED, "contended samples <= reps");
    if (pos[C_COUNT_ERR] >= 0) {
        double v;
        int rc = get_double(c, &f[pos[C_COUNT_ERR]], C_COUNT_ERR, 1, &v);
        if (rc) return rc;
    }
    return MB_OK;
}

static int parse_row(mb_rpt_set *s, ctx *c, const int *pos, field *f, int nf, mb_rpt_row *r)
{
    int rc;
    memset(r, 0, sizeof *r);
    const char *empty = intern(s, "", 1);
    r->file = intern(s, c->path, 512);
    r->counters = r->count_check = r->calibration = empty;
    if (!empty || !r->file) return mb_err_set(c->err, MB_ERUN, "out of memory");
    r->line = c->line;
    r->group = -1;
    r->dev = -1;
    /* strings */
    const field *fd = &f[pos[C_DEVICE]];
    if (!fd->s[0]) return bad(c, fd, C_DEVICE, "a device id or spec file");
    if (!(r->device = intern(s, fd->s, 256))) return mb_err_set(c->err, MB_ERUN, "out of memory");
    r->device_col = fd->col;
    static const int strcols[] = {C_BACKEND, C_VARIANT, C_PLAN, C_DTYPE};
    const char **dst[] = {&r->backend, &r->variant, &r->plan, &r->dtype};
    static const size_t sz[] = {32, MB_NAME_MAX, 16, 8};
    for (int i = 0; i < 4; i++) {
        const field *x = &f[pos[strcols[i]]];
        if (!x->s[0]) return bad(c, x, strcols[i], "a name");
        if (strlen(x->s) >= sz[i]) return bad(c, x, strcols[i], "a shorter name");
        if (!(*dst[i] = intern(s, x->s, sz[i]))) return mb_err_set(c->err, MB_ERUN, "out of memory");
        r->col_of[i] = x->col;
    }
    r->col_of[4] = f[pos[C_N]].col;
    if ((rc = get_i64(c, &f[pos[C_N]], C_N, 0, &r->n))) return rc;
    if (r->n < 1 || r->n > MB_N_MAX) return bad(c, &f[pos[C_N]], C_N, "n in [1, 2^44]");

    /* verified first: a failed row may leave its times empty */
    const field *fv = &f[pos[C_VERIFIED]];
    if (!strcmp(fv->s, "1") || !strcmp(fv->s, "true")) r->verified = 1;
    else if (!strcmp(fv->s, "0") || !strcmp(fv->s, "false")) r->verified = 0;
    else return bad(c, fv, C_VERIFIED, "1 or 0");

    double d;
    if ((rc = get_double(c, &f[pos[C_TMED]], C_TMED, !r->verified, &r->time_s_median))) return rc;
    if (r->verified && !(r->time_s_median > 0))
        return bad(c, &f[pos[C_TMED]], C_TMED, "a time > 0 s");
    struct { int col; double *dst; } opt_d[] = {
        {C_TMIN, &r->time_s_min}, {C_TP90, &r->time_s_p90}, {C_CV, &r->time_cv},
        {C_MODEL_T, &r->model_time_s}, {C_MAXERR, &r->max_rel_err},
        {C_HOST_GBS, &r->host_copy_gbs}, {C_HOST_RATIO, &r->host_copy_ratio},
        {C_HOST_OP, &r->host_op_ratio}, {C_LO_MODE, &r->time_s_lower_mode},
        {C_HI_MODE, &r->time_s_upper_mode}, {C_HI_SHARE, &r->upper_mode_share},
    };
    for (size_t i = 0; i < sizeof opt_d / sizeof opt_d[0]; i++) {
        *opt_d[i].dst = NAN;
        if (pos[opt_d[i].col] < 0) continue;
        if ((rc = get_double(c, &f[pos[opt_d[i].col]], opt_d[i].col, 1, &d))) return rc;
        if (d < 0) return bad(c, &f[pos[opt_d[i].col]], opt_d[i].col, "a number >= 0");
        *opt_d[i].dst = d;
    }
    struct { int col; int64_t *dst; } opt_i[] = {
        {C_READ, &r->read_bytes}, {C_WRITE, &r->write_bytes},
        {C_model_dram_read_bytes, &r->model_dram_read_bytes},
        {C_model_dram_write_bytes, &r->model_dram_write_bytes},
        {C_DRAM_R, &r->dram_read_bytes}, {C_DRAM_W, &r->dram_write_bytes},
    };
    for (size_t i = 0; i < sizeof opt_i / sizeof opt_i[0]; i++) {
        *opt_i[i].dst = -1;
        if (pos[opt_i[i].col] < 0) continue;
        if ((rc = get_i64(c, &f[pos[opt_i[i].col]], opt_i[i].col, 1, opt_i[i].dst))) return rc;
        /* no plan moves an exbibyte (n <= 2^44 elements): a larger count is
         * corrupt, and two of them would overflow a sum */
        if (*opt_i[i].dst > MB_RPT_MAX_BYTES) return bad(c, &f[pos[opt_i[i].col]], opt_i[i].col, "bytes below 2^60");
    }
    r->has_dram = r->dram_read_bytes >= 0 && r->dram_write_bytes >= 0;
    if ((r->dram_read_bytes >= 0) != (r->dram_write_bytes >= 0)) {
        int colid = r->dram_read_bytes >= 0 ? C_DRAM_W : C_DRAM_R;
        return bad(c, &f[pos[colid]], colid, "both dram_read_bytes and dram_write_bytes, or neither");
    }
    /* counts: a value beyond what any run makes is refused, not clamped */
    struct { int col; int *dst; int64_t max; const char *what; } opt_n[] = {
        {C_KERNELS, &r->kernels, 1000000, "a kernel count <= 1000000"},
        {C_REPS, &r->reps, 1000000000, "a repetition count <= 10^9"},
        {C_CONTENDED, &r->contended, 1000000000, "a sample count <= 10^9"},
    };
    for (size_t i = 0; i < sizeof opt_n / sizeof opt_n[0]; i++) {
        int64_t k = -1;
        if (pos[opt_n[i].col] >= 0 && (rc = get_i64(c, &f[pos[opt_n[i].col]], opt_n[i].col, 1, &k))) return rc;
        if (k > opt_n[i].max) return bad(c, &f[pos[opt_n[i].col]], opt_n[i].col, opt_n[i].what);
        *opt_n[i].dst = (int)k;
    }
    if ((rc = check_stats(c, pos, f, r))) return rc;
    r->noisy = MB_MEAS_NOISY(r->contended, r->reps);
    r->drifted = MB_MEAS_HOST_DRIFTED(r->host_copy_ratio, r->host_op_ratio);
    r->two_modes = r->time_s_lower_mode > 0 && r->time_s_upper_mode > 0 && r->upper_mode_share > 0;
    if (pos[C_COUNTERS] >= 0 && !(r->counters = intern(s, f[pos[C_COUNTERS]].s, 160)))
        return mb_err_set(c->err, MB_ERUN, "out of memory");
    if (pos[C_COUNT_CHECK] >= 0) {
        const field *x = &f[pos[C_COUNT_CHECK]];
        if (x->s[0] && strcmp(x->s, "ok") && strcmp(x->s, "off") && strcmp(x->s, "below 4x L2"))
            return bad(c, x, C_COUNT_CHECK, "ok, off, below 4x L2 or empty");
        if (!(r->count_check = intern(s, x->s, 16))) return mb_err_set(c->err, MB_ERUN, "out of memory");
    }
    if (pos[C_CALIBRATION] >= 0) {
        const field *x = &f[pos[C_CALIBRATION]];
        static const char *const marks[] = MB_MEAS_CALIBRATION_MARKS;
        int known = !x->s[0];
        for (size_t i = 0; i < sizeof marks / sizeof marks[0] && !known; i++) known = !strcmp(x->s, marks[i]);
        if (!known) return bad(c, x, C_CALIBRATION, "full, quick, fallback, stale or empty");
        if (!(r->calibration = intern(s, x->s, 16))) return mb_err_set(c->err, MB_ERUN, "out of memory");
    }
    r->rows = r->cols = 0; /* 2-D rows: "ROWSxCOLS", rows x cols = n */
    if (pos[C_SHAPE] >= 0 && f[pos[C_SHAPE]].s[0]) {
        mb_shape sh;
        mb_err e;
        if (mb_shape_parse(f[pos[C_SHAPE]].s, &sh, &e) || sh.rank != 2 || sh.rows * sh.cols != r->n)
            return bad(c, &f[pos[C_SHAPE]], C_SHAPE, "ROWSxCOLS with rows x cols = n, or empty");
        r->rows = sh.rows;
        r->cols = sh.cols;
    }
    r->dims = "";
    if (pos[C_DIMS] >= 0 && f[pos[C_DIMS]].s[0]) {
        const field *x = &f[pos[C_DIMS]];
        if (!r->rows) return bad(c, x, C_DIMS, "empty on a 1-D row (dims go with a ROWSxCOLS shape)");
        if (strlen(x->s) > 255) return bad(c, x, C_DIMS, "name=SIZE,... of at most 255 bytes");
        if (!(r->dims = intern(s, x->s, 256))) return mb_err_set(c->err, MB_ERUN, "out of memory");
    }
    /* counts the CUDA backend's sanity gate rejected are kept in the file
     * for inspection, never used as measurements */
    if (!strncmp(r->counters, "untrusted", 9)) r->has_dram = 0;
    (void)nf;
    return MB_OK;
}

/* Undoes the text columns' escape in place: "\n" a newline, "\\" a
 * backslash (any other backslash kept as it is). */
static void unescape(char *t)
{
    char *w = t;
    for (const char *r = t; *r; r++) {
        if (*r == '\\' && (r[1] == 'n' || r[1] == '\\')) {
            *w++ = r[1] == 'n' ? '\n' : '\\';
            r++;
            continue;
        }
        *w++ = *r;
    }
    *w = '\0';
}

/* The variant text a row carries: the first row of a variant in a file
 * defines it, later rows must carry the same text (or none). */
static int row_variant_text(mb_rpt_set *s, int file, ctx *c, const char *variant, field *fv, int is_expr)
{
    unescape(fv->s);
    for (int i = 0; i < s->n_vars; i++) {
        mb_rpt_vardef *v = &s->vars[i];
        if (v->file != file || strcmp(v->name, variant) != 0) continue;
        if ((v->is_expr == is_expr && v->text && !strcmp(v->text, fv->s))) return MB_OK;
        return mb_err_set(c->err, MB_EINPUT, "%s:%d:%d: column '%s': a second text of variant '%s' (the "
                          "first is on line %d): one text per variant in a file", c->path, c->line, fv->col,
                          is_expr ? MB_MEAS_PROV_EXPR : MB_MEAS_PROV_VARIANT, variant, v->line);
    }
    int rc = MB_OK;
    for (char *line = fv->s, *nl; line && !rc; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        rc = rpt_add_embedded(s, file, c->line, variant, is_expr, line, c->err);
    }
    return rc;
}

/* The text columns of one row (after parse_row): its variant's text, the
 * file's device spec (one per file) and provenance lines (kept once per
 * distinct value: every row repeats them). *last_prov: the provenance field
 * last kept (owned, freed by the caller). */
static int row_texts(mb_rpt_set *s, int file, ctx *c, const int *pos, field *f, const char *variant,
                     char **last_prov, int *cold_kernels)
{
    int rc = MB_OK;
    if (pos[C_VTEXT] >= 0 && f[pos[C_VTEXT]].s[0])
        rc = row_variant_text(s, file, c, variant, &f[pos[C_VTEXT]], 0);
    if (!rc && pos[C_VEXPR] >= 0 && f[pos[C_VEXPR]].s[0])
        rc = row_variant_text(s, file, c, variant, &f[pos[C_VEXPR]], 1);
    if (!rc && pos[C_SPEC] >= 0 && f[pos[C_SPEC]].s[0]) {
        field *fs = &f[pos[C_SPEC]];
        unescape(fs->s);
        if (!s->specs[file]) {
            if (!(s->specs[file] = strdup(fs->s))) return mb_err_set(c->err, MB_ERUN, "out of memory");
            s->spec_lines[file] = c->line;
        } else if (strcmp(s->specs[file], fs->s) != 0) {
            return mb_err_set(c->err, MB_EINPUT, "%s:%d:%d: column '%s' differs from an earlier row's: "
                              "one model device per file (split the file by device_spec)", c->path,
                              c->line, fs->col, MB_MEAS_PROV_SPEC);
        }
    }
    if (!rc && pos[C_PROV] >= 0 && f[pos[C_PROV]].s[0] && !(*last_prov && !strcmp(*last_prov, f[pos[C_PROV]].s))) {
        free(*last_prov);
        if (!(*last_prov = strdup(f[pos[C_PROV]].s))) return mb_err_set(c->err, MB_ERUN, "out of memory");
        char *t = f[pos[C_PROV]].s;
        unescape(t);
        for (char *line = t, *nl; line && !rc; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            if (nl) *nl = '\0';
            if (*line && add_prov(s, c->path, line)) rc = mb_err_set(c->err, MB_ERUN, "out of memory");
            if (!strncmp(line, MB_MEAS_PROV_COLD_KERNELS, strlen(MB_MEAS_PROV_COLD_KERNELS))) *cold_kernels = 1;
        }
    }
    return rc;
}

/* One file's read: the set, the file, where its header is. */
typedef struct file_read {
    mb_rpt_set *s;
    int file_index;
    int cold_kernels;          /* its provenance says MB_MEAS_PROV_COLD_KERNELS */
    ctx c;
    int pos[C_COUNT];
    int have_header, header_fields, header_line, rows, kernel_rows;
    char *last_prov; /* the provenance column as last kept */
} file_read;

/* A '#' line: provenance, or an embedded text (files written before the
 * text columns). */
static int raw_line(void *vctx, const char *line, size_t len, int line_no, int *taken, mb_err *err)
{
    file_read *fr = vctx;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i == len || line[i] != '#') return MB_OK;
    *taken = 1;
    for (i++; i < len && line[i] == ' '; i++) {}
    char *q = strndup(line + i, len - i);
    if (!q) return mb_err_set(err, MB_ERUN, "out of memory");
    int erc = MB_OK;
    if (!embedded(fr->s, fr->file_index, line_no, q, &erc, err)) erc = add_prov(fr->s, fr->c.path, q);
    free(q);
    if (erc == MB_EINPUT) return erc;
    if (erc) return mb_err_set(err, MB_ERUN, "out of memory");
    return MB_OK;
}

static int header(file_read *fr, const mb_csv_record *rec, mb_err *err)
{
    const char *path = fr->c.path;
    const field *f = rec->f;
    fr->have_header = 1;
    fr->header_fields = rec->n;
    fr->header_line = rec->line;
    int *pos = fr->pos;
    /* a report's own summary.csv (its first columns file,line and the fit's
     * residuals) is no measurement: its device column names the calibrated
     * spec's id, which only its measure CSVs carry */
    int own = rec->n >= 2 && !strcmp(f[0].s, "file") && !strcmp(f[1].s, "line");
    for (int i = 0; own && i < rec->n; i++)
        if (!strcmp(f[i].s, "resid_model_rel"))
            return mb_err_set(err, MB_EINPUT, "%s: this is a report's summary (summary.csv, written by "
                              "'membound report'), not measurements: pass the measure CSVs it was made from "
                              "(its 'file' column names them)", path);
    for (int i = 0; i < rec->n; i++) {
        for (int k = 0; k < C_COUNT; k++) {
            if (strcmp(f[i].s, columns[k].name) != 0) continue;
            if (pos[k] >= 0)
                return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column '%s' appears twice", path, f[i].line,
                                  f[i].col, f[i].s);
            pos[k] = i;
        }
    }
    for (int k = 0; k < C_COUNT; k++) {
        if (columns[k].required && pos[k] < 0)
            return mb_err_set(err, MB_EINPUT,
                              "%s:%d:%d: missing column '%s' (the header must name "
                              "device, backend, variant, plan, dtype, n, time_s_median "
                              "and verified)",
                              path, rec->line, rec->end_col, columns[k].name);
    }
    if ((pos[C_DRAM_R] < 0) != (pos[C_DRAM_W] < 0))
        return mb_err_set(err, MB_EINPUT,
                          "%s:%d:%d: column '%s' without '%s': counted bytes need both, or neither",
                          path, rec->line, f[pos[C_DRAM_R] >= 0 ? pos[C_DRAM_R] : pos[C_DRAM_W]].col,
                          columns[pos[C_DRAM_R] >= 0 ? C_DRAM_R : C_DRAM_W].name,
                          columns[pos[C_DRAM_R] >= 0 ? C_DRAM_W : C_DRAM_R].name);
    return MB_OK;
}

static int record(void *vctx, mb_csv_record *rec, mb_err *err)
{
    file_read *fr = vctx;
    mb_rpt_set *s = fr->s;
    field *f = rec->f;
    int nf = rec->n;
    fr->c.line = rec->line;
    if (!fr->have_header) return header(fr, rec, err);
    if (nf != fr->header_fields) {
        int col = nf > fr->header_fields ? f[fr->header_fields].col : rec->end_col;
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: %d fields, but the header (line %d) has %d",
                          fr->c.path, rec->line, col, nf, fr->header_line, fr->header_fields);
    }
    if (fr->pos[C_KERNEL] >= 0 && f[fr->pos[C_KERNEL]].s[0]) {
        s->n_kernel_rows_skipped++; /* per-kernel rows: the totals file carries the claims */
        fr->kernel_rows++;
        return MB_OK;
    }
    if (s->n_rows == MB_RPT_MAX_ROWS)
        return mb_err_set(err, MB_EINPUT, "%s:%d:1: more than %d measurement rows (" LIMITS_TEXT
                          "): split the input, or report fewer rows at once", fr->c.path, rec->line,
                          MB_RPT_MAX_ROWS);
    if (s->n_rows == s->cap_rows) {
        int cap = s->cap_rows ? 2 * s->cap_rows : 64;
        if (cap > MB_RPT_MAX_ROWS) cap = MB_RPT_MAX_ROWS;
        void *np = realloc(s->rows, (size_t)cap * sizeof *s->rows);
        if (!np) return mb_err_set(err, MB_ERUN, "out of memory");
        s->rows = np;
        s->cap_rows = cap;
    }
    int rc = parse_row(s, &fr->c, fr->pos, f, nf, &s->rows[s->n_rows]);
    if (!rc)
        rc = row_texts(s, fr->file_index, &fr->c, fr->pos, f, s->rows[s->n_rows].variant, &fr->last_prov,
                       &fr->cold_kernels);
    if (rc) return rc;
    s->rows[s->n_rows].file_index = fr->file_index;
    s->rows[s->n_rows].cold_kernels = fr->cold_kernels;
    s->n_rows++;
    fr->rows++;
    return MB_OK;
}

int mb_rpt_read_csv(mb_rpt_set *s, const char *path, mb_err *err)
{
    /* refused before anything is kept when it is no regular file or too big */
    int fd;
    int rc = limits_said(mb_text_open(path, MB_RPT_MAX_CSV_BYTES, &fd, err), err);
    if (rc) return rc;
    close(fd);
    if (s->n_files % 8 == 0) {
        void *p = realloc(s->files, (size_t)(s->n_files + 8) * sizeof *s->files);
        void *q = p ? realloc(s->specs, (size_t)(s->n_files + 8) * sizeof *s->specs) : NULL;
        if (p) s->files = p;
        if (q) s->specs = q;
        void *l = q ? realloc(s->spec_lines, (size_t)(s->n_files + 8) * sizeof *s->spec_lines) : NULL;
        if (l) s->spec_lines = l;
        if (!p || !q || !l) return mb_err_set(err, MB_ERUN, "out of memory");
    }
    int file_index = s->n_files++;
    snprintf(s->files[file_index], sizeof s->files[0], "%s", path);
    s->specs[file_index] = NULL;
    s->spec_lines[file_index] = 0;

    file_read fr = {.s = s, .file_index = file_index, .c = {path, 0, err}};
    for (int i = 0; i < C_COUNT; i++) fr.pos[i] = -1;
    static const mb_csv_ops ops = {raw_line, record};
    int lines = 1;
    /* streamed: memory is the rows kept, not the file */
    rc = limits_said(mb_csv_read_file(path, MB_RPT_MAX_CSV_BYTES, &ops, &fr, &lines, err), err);
    if (rc == MB_OK && !fr.have_header)
        rc = mb_err_set(err, MB_EINPUT, "%s:%d:1: no header row (expected device,backend,...)", path,
                        lines + 1);
    else if (rc == MB_OK && fr.rows == 0 && fr.kernel_rows > 0)
        s->n_kernel_files++; /* a per-kernel file: noted in the report, not an error */
    else if (rc == MB_OK && fr.rows == 0)
        rc = mb_err_set(err, MB_EINPUT, "%s:%d:1: no measurement rows after the header (line %d)",
                        path, lines + 1, fr.header_line);
    free(fr.last_prov);
    return rc;
}
