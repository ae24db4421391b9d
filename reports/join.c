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

/* Plan p's estimate at n elements, or at rows x cols when cols > 0 (a 2-D
 * row, the 'shape' column). */
static int estimate_at(const mb_plan *p, int64_t n, int64_t cols, const mb_device *d,
                       mb_estimate *out, mb_err *err)
{
    if (cols > 0) return mb_estimate_plan_shape(p, (mb_shape){2, n / cols, cols, 0}, d, out, err);
    return mb_estimate_plan(p, n, d, out, err);
}

/* ---- one model evaluation per distinct key ------------------------------
 * A million rows name a few hundred (variant, plan, dtype, n, device)
 * combinations: loading a variant and building its plan took ~200 us a row
 * (10^5 generated rows: 21 s to join, bench/report_scale.sh), so each plan
 * is built once per (its definition, dtype, plan) and each estimate made
 * once per (plan, n, device), both found by hash. */

typedef struct join_plan {
    int kind;                  /* 0: the row's definition (mb_rpt_load_variant), 1: the built-in */
    int file;
    int rank;                  /* 2: built for 2-D rows (ROWSxCOLS), 1 otherwise */
    char variant[MB_NAME_MAX], plan[16];
    char dims[256];            /* the rows' named sizes (the 'dims' column), "" none */
    mb_dtype dt;
    mb_graph *g;
    mb_plan *p;
    double ops[MB_OP_COUNT];   /* op evaluations per element */
    const double *ops_kept;    /* the same, owned by the set (rows point at it) */
} join_plan;

typedef struct join_est {
    int plan, dev;             /* index into the plans; the device */
    int64_t n, cols;           /* cols > 0: a 2-D row's rows x cols = n */
    mb_cost total;
    int64_t saved_bytes;
    int n_kernels;
    int spec_done;             /* spec_dram_* hold the model on the CSV's own spec */
    int64_t spec_dram_read_bytes, spec_dram_write_bytes;
    int text_ok;               /* a row with text_cols passed check_text_bytes */
    int64_t text_cols[4];
} join_est;

typedef struct join_cache {
    join_plan *plans;
    int n_plans, cap_plans;
    size_t *plan_slot;         /* open addressing: index + 1, 0 empty */
    size_t plan_slots;
    join_est *ests;
    size_t n_ests, cap_ests;
    size_t *est_slot;          /* index + 1, 0 empty */
    size_t est_slots;
} join_cache;

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void cache_free(join_cache *c)
{
    for (int i = 0; i < c->n_plans; i++) {
        mb_plan_free(c->plans[i].p);
        mb_graph_free(c->plans[i].g);
    }
    free(c->plans);
    free(c->plan_slot);
    free(c->ests);
    free(c->est_slot);
    memset(c, 0, sizeof *c);
}

/* Grows an open-addressing table of index+1 entries to twice its need. */
static int rehash(size_t **slot, size_t *slots, size_t need,
                  uint64_t (*hash_of)(const join_cache *, size_t), const join_cache *c, size_t n)
{
    if (*slots >= 2 * need + 16) return MB_OK;
    size_t ns = 64;
    while (ns < 4 * need + 16) ns *= 2;
    size_t *t = calloc(ns, sizeof *t);
    if (!t) return MB_ERUN;
    for (size_t i = 0; i < n; i++) {
        size_t j = hash_of(c, i) & (ns - 1);
        while (t[j]) j = (j + 1) & (ns - 1);
        t[j] = i + 1;
    }
    free(*slot);
    *slot = t;
    *slots = ns;
    return MB_OK;
}

static uint64_t plan_hash(int kind, int file, int rank, const char *variant, const char *plan, mb_dtype dt,
                          const char *dims)
{
    uint64_t h = mix(0xcbf29ce484222325ull, &kind, sizeof kind);
    h = mix(h, dims, strlen(dims) + 1);
    h = mix(h, &rank, sizeof rank);
    h = mix(h, &file, sizeof file);
    h = mix(h, variant, strlen(variant) + 1);
    h = mix(h, plan, strlen(plan) + 1);
    return mix(h, &dt, sizeof dt);
}

static uint64_t plan_hash_at(const join_cache *c, size_t i)
{
    const join_plan *p = &c->plans[i];
    return plan_hash(p->kind, p->file, p->rank, p->variant, p->plan, p->dt, p->dims);
}

static uint64_t est_hash(int plan, int64_t n, int64_t cols, int dev)
{
    uint64_t h = mix(0xcbf29ce484222325ull, &plan, sizeof plan);
    h = mix(h, &n, sizeof n);
    h = mix(h, &cols, sizeof cols);
    return mix(h, &dev, sizeof dev);
}

static uint64_t est_hash_at(const join_cache *c, size_t i)
{
    return est_hash(c->ests[i].plan, c->ests[i].n, c->ests[i].cols, c->ests[i].dev);
}

/* The plan of variant (kind 0: as the row's file defines it, 1: the
 * built-in of that name) in plan at dt, built on first use. Its index, or
 * with err set and the code in *rc: -2 when the variant does not load, -1
 * when its plan cannot be built. */
static int plan_of(join_cache *c, mb_rpt_set *s, int kind, int file, int rank, const char *variant,
                   const char *plan, mb_dtype dt, const char *dims, int *rc, mb_err *err)
{
    if (kind) file = -1;
    if (!dims) dims = "";
    uint64_t h = plan_hash(kind, file, rank, variant, plan, dt, dims);
    for (size_t j = c->plan_slots ? h & (c->plan_slots - 1) : 0; c->plan_slots && c->plan_slot[j];
         j = (j + 1) & (c->plan_slots - 1)) {
        const join_plan *q = &c->plans[c->plan_slot[j] - 1];
        if (q->kind == kind && q->file == file && q->rank == rank && q->dt == dt &&
            !strcmp(q->variant, variant) && !strcmp(q->dims, dims) &&
            !strcmp(q->plan, plan))
            return (int)c->plan_slot[j] - 1;
    }
    join_plan jp;
    memset(&jp, 0, sizeof jp);
    jp.kind = kind;
    jp.file = file;
    jp.rank = rank;
    jp.dt = dt;
    snprintf(jp.variant, sizeof jp.variant, "%s", variant);
    snprintf(jp.plan, sizeof jp.plan, "%s", plan);
    snprintf(jp.dims, sizeof jp.dims, "%s", dims);
    mb_plan_kind pk;
    *rc = kind ? mb_variant_load(variant, dt, &jp.g, err)
               : mb_rpt_load_variant(s, file, variant, dt, &jp.g, err);
    if (!*rc && dims[0]) { /* the sizes it ran at: a mask's rows are counted from them */
        mb_shape at;
        *rc = mb_graph_bind_dims(jp.g, dims, &at, err);
        if (*rc) mb_graph_free(jp.g);
    }
    if (*rc) return -2;
    /* a 2-D row's graph at rank 2 first, as measure set it (an elementwise
     * variant measured at ROWSxCOLS too); a 1-D row of a 2-D variant is refused */
    if ((*rc = mb_graph_set_rank(jp.g, rank, err))) {
        mb_graph_free(jp.g);
        return -2;
    }
    if (mb_plan_parse(plan, &pk) != MB_OK)
        *rc = mb_err_set(err, MB_EINPUT, "unknown plan '%s' (eager, fused, store, recompute)", plan);
    else
        *rc = mb_plan_build(jp.g, pk, &jp.p, err);
    if (*rc) {
        mb_graph_free(jp.g);
        return -1;
    }
    for (int k = 0; k < jp.p->n_kernels; k++) {
        const mb_kernel *kn = &jp.p->kernels[k];
        for (int j = 0; j < kn->n_nodes; j++) {
            mb_op op = jp.p->g->nodes[kn->nodes[j]].op;
            if (op != MB_OP_INPUT && (int)op < MB_OP_COUNT) jp.ops[op] += 1.0;
        }
    }
    /* the rows keep pointing at the ops after the join: the set owns a copy */
    double **tabs = realloc(s->op_tables, (size_t)(s->n_op_tables + 1) * sizeof *tabs);
    double *kept = tabs ? malloc(sizeof jp.ops) : NULL;
    if (tabs) s->op_tables = tabs;
    if (!kept) {
        mb_plan_free(jp.p);
        mb_graph_free(jp.g);
        *rc = mb_err_set(err, MB_ERUN, "out of memory");
        return -1;
    }
    memcpy(kept, jp.ops, sizeof jp.ops);
    s->op_tables[s->n_op_tables++] = kept;
    jp.ops_kept = kept;
    if (c->n_plans == c->cap_plans) {
        int cap = c->cap_plans ? 2 * c->cap_plans : 16;
        void *np = realloc(c->plans, (size_t)cap * sizeof *c->plans);
        if (!np) {
            mb_plan_free(jp.p);
            mb_graph_free(jp.g);
            *rc = mb_err_set(err, MB_ERUN, "out of memory");
            return -1;
        }
        c->plans = np;
        c->cap_plans = cap;
    }
    c->plans[c->n_plans++] = jp;
    /* the table holds the others; the new one goes in below */
    if (rehash(&c->plan_slot, &c->plan_slots, (size_t)c->n_plans, plan_hash_at, c,
               (size_t)c->n_plans - 1)) {
        *rc = mb_err_set(err, MB_ERUN, "out of memory");
        return -1;
    }
    size_t j = h & (c->plan_slots - 1);
    while (c->plan_slot[j]) j = (j + 1) & (c->plan_slots - 1);
    c->plan_slot[j] = (size_t)c->n_plans;
    return c->n_plans - 1;
}

/* The estimate of plan pi at n on device dev, made on first use. Its
 * index, or -1 with err set and *rc. */
static long est_of(join_cache *c, const mb_rpt_set *s, int pi, int64_t n, int64_t cols, int dev, int *rc,
                   mb_err *err)
{
    uint64_t h = est_hash(pi, n, cols, dev);
    for (size_t j = c->est_slots ? h & (c->est_slots - 1) : 0; c->est_slots && c->est_slot[j];
         j = (j + 1) & (c->est_slots - 1)) {
        const join_est *q = &c->ests[c->est_slot[j] - 1];
        if (q->plan == pi && q->n == n && q->cols == cols && q->dev == dev) return (long)c->est_slot[j] - 1;
    }
    mb_estimate est;
    if ((*rc = estimate_at(c->plans[pi].p, n, cols, &s->devices[dev], &est, err))) return -1;
    if (c->n_ests == c->cap_ests) {
        size_t cap = c->cap_ests ? 2 * c->cap_ests : 64;
        void *np = realloc(c->ests, cap * sizeof *c->ests);
        if (!np) {
            mb_estimate_free(&est);
            *rc = mb_err_set(err, MB_ERUN, "out of memory");
            return -1;
        }
        c->ests = np;
        c->cap_ests = cap;
    }
    join_est *e = &c->ests[c->n_ests++];
    memset(e, 0, sizeof *e);
    e->plan = pi;
    e->n = n;
    e->cols = cols;
    e->dev = dev;
    e->total = est.total;
    e->saved_bytes = est.saved_bytes;
    e->n_kernels = est.n_kernels;
    mb_estimate_free(&est);
    if (rehash(&c->est_slot, &c->est_slots, c->n_ests, est_hash_at, c, c->n_ests - 1)) {
        *rc = mb_err_set(err, MB_ERUN, "out of memory");
        return -1;
    }
    size_t j = h & (c->est_slots - 1);
    while (c->est_slot[j]) j = (j + 1) & (c->est_slots - 1);
    c->est_slot[j] = c->n_ests;
    return (long)c->n_ests - 1;
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
 * built-in must also move the built-in's bytes. The model's side is worked
 * out once per estimate (ei), a row like the last one that passed is not
 * checked again. MB_EINPUT naming the row's line. */
static int check_text_bytes(mb_rpt_set *s, join_cache *c, const mb_rpt_row *r, int pi, long ei,
                            const char *device_override, mb_err *err)
{
    const mb_rpt_vardef *v = own_text(s, r);
    if (!v) return MB_OK;
    const int64_t cols[4] = {r->read_bytes, r->write_bytes, r->model_dram_read_bytes, r->model_dram_write_bytes};
    if (c->ests[ei].text_ok && !memcmp(cols, c->ests[ei].text_cols, sizeof cols)) return MB_OK;
    join_est *e = &c->ests[ei];
    struct { const char *col; int64_t row, model; } cc[4] = {
        {"read_bytes", r->read_bytes, e->total.read_bytes},
        {"write_bytes", r->write_bytes, e->total.write_bytes},
        {"model_dram_read_bytes", r->model_dram_read_bytes, -1},
        {"model_dram_write_bytes", r->model_dram_write_bytes, -1},
    };
    int nc = 2, rc;
    if (s->specs[r->file_index] && (r->model_dram_read_bytes >= 0 || r->model_dram_write_bytes >= 0)) {
        if (!e->spec_done) {
            e->spec_dram_read_bytes = e->total.dram_read_bytes;
            e->spec_dram_write_bytes = e->total.dram_write_bytes;
            if (device_override) { /* r->dev is --device's: model the row on the CSV's spec */
                mb_device d;
                mb_estimate on_spec;
                char name[700];
                rc = mb_device_load_ini_text(s->specs[r->file_index],
                                             spec_name(s, r->file_index, name, sizeof name), &d, err);
                if (rc == MB_OK) rc = estimate_at(c->plans[pi].p, r->n, r->cols, &d, &on_spec, err);
                if (rc) return rc;
                e->spec_dram_read_bytes = on_spec.total.dram_read_bytes;
                e->spec_dram_write_bytes = on_spec.total.dram_write_bytes;
                mb_estimate_free(&on_spec);
            }
            e->spec_done = 1;
        }
        cc[2].model = e->spec_dram_read_bytes;
        cc[3].model = e->spec_dram_write_bytes;
        nc = 4;
    }
    for (int i = 0; i < nc; i++)
        if (cc[i].row >= 0 && cc[i].row != cc[i].model)
            return mb_err_set(err, MB_EINPUT,
                              "%s:%d: column '%s' is %lld, but the text of variant '%s' this CSV "
                              "carries (line %d) gives %lld at n = %lld, plan %s, %s: the text "
                              "is not the one measured", r->file, r->line, cc[i].col,
                              (long long)cc[i].row, r->variant, v->line, (long long)cc[i].model,
                              (long long)r->n, r->plan, r->dtype);
    /* A text named like a built-in stands for it (report judges the lecture's
     * claims by name): it must move the built-in's bytes. */
    const mb_graph *g = c->plans[pi].g;
    mb_dtype dt = g->n_inputs ? g->nodes[g->inputs[0]].dtype : MB_F32;
    if (!strchr(r->variant, '/') && !strstr(r->variant, ".mb")) {
        mb_err be;
        int brc;
        int bi = plan_of(c, s, 1, -1, r->cols > 0 ? 2 : 1, r->variant, r->plan, dt, r->dims, &brc, &be);
        long bei = bi >= 0 ? est_of(c, s, bi, r->n, r->cols, r->dev, &brc, &be) : -1;
        e = &c->ests[ei]; /* est_of may have moved the table */
        if (bei >= 0) {
            const join_est *b = &c->ests[bei];
            if (b->total.read_bytes != e->total.read_bytes || b->total.write_bytes != e->total.write_bytes)
                return mb_err_set(err, MB_EINPUT,
                                  "%s:%d: the text of variant '%s' this CSV carries (line %d) is "
                                  "not the built-in '%s' (it moves %lld + %lld bytes at n = %lld, "
                                  "plan %s; the built-in %lld + %lld): a variant of its own needs "
                                  "another name", r->file, r->line, r->variant, v->line, r->variant,
                                  (long long)e->total.read_bytes, (long long)e->total.write_bytes,
                                  (long long)r->n, r->plan, (long long)b->total.read_bytes,
                                  (long long)b->total.write_bytes);
        }
    }
    e->text_ok = 1;
    memcpy(e->text_cols, cols, sizeof cols);
    return MB_OK;
}

/* Joins row r through the caches c. */
static int join_row(mb_rpt_set *s, join_cache *c, mb_rpt_row *r, const char *device_override, mb_err *err)
{
    mb_err e;
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
    int rc = MB_OK;
    int pi = plan_of(c, s, 0, r->file_index, r->cols > 0 ? 2 : 1, r->variant, r->plan, dt, r->dims, &rc, &e);
    if (pi == -2)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: column 'variant': %s", r->file, r->line,
                          r->col_of[1], e.msg);
    long ei = pi >= 0 ? est_of(c, s, pi, r->n, r->cols, r->dev, &rc, &e) : -1;
    /* the same model at the rates the host had during the row */
    r->pred_host_time_s = NAN;
    if (ei >= 0 && r->host_copy_ratio > 0 && r->host_op_ratio > 0 && isfinite(r->host_copy_ratio) &&
        isfinite(r->host_op_ratio)) {
        mb_device at_host;
        mb_estimate est_host;
        mb_device_at_rates(&s->devices[r->dev], r->host_copy_ratio, r->host_op_ratio, &at_host);
        rc = estimate_at(c->plans[pi].p, r->n, r->cols, &at_host, &est_host, &e);
        if (!rc) {
            r->pred_host_time_s = est_host.total.time_s;
            mb_estimate_free(&est_host);
        }
    }
    if (!rc && (rc = check_text_bytes(s, c, r, pi, ei, device_override, &e)) != MB_OK) {
        if (rc == MB_EINPUT) return mb_err_set(err, rc, "%s", e.msg);
        return mb_err_set(err, rc, "%s:%d: %s", r->file, r->line, e.msg);
    }
    if (rc) return mb_err_set(err, rc, "%s:%d:%d: %s", r->file, r->line, r->col_of[2], e.msg);
    const join_est *est = &c->ests[ei];
    r->pred_time_s = est->total.time_s;
    r->pred_mem_s = est->total.mem_s;
    r->pred_compute_s = est->total.compute_s;
    r->pred_launch_s = est->total.launch_s;
    r->pred_read_bytes = est->total.read_bytes;
    r->pred_write_bytes = est->total.write_bytes;
    r->pred_dram_read_bytes = est->total.dram_read_bytes;
    r->pred_dram_write_bytes = est->total.dram_write_bytes;
    r->pred_saved_bytes = est->saved_bytes;
    r->pred_flops = est->total.flops;
    r->pred_sfu_ops = est->total.sfu_ops;
    r->pred_kernels = est->n_kernels;
    r->pred_bound = est->total.bound;
    r->op_per_elem = c->plans[pi].ops_kept;
    r->resid_model_rel = r->verified ? r->time_s_median / r->pred_time_s - 1.0 : NAN;
    r->resid_bytes_rel = NAN;
    if (r->has_dram) {
        /* ncu's flushed counts: every kernel cold, the lecture's count */
        double model = !strcmp(r->counters, MB_MEAS_COUNTERS_NCU)
                           ? (double)(r->pred_read_bytes + r->pred_write_bytes)
                           : (double)(r->pred_dram_read_bytes + r->pred_dram_write_bytes);
        if (model > 0)
            r->resid_bytes_rel = ((double)r->dram_read_bytes + (double)r->dram_write_bytes) / model - 1.0;
    }
    r->fit_time_s = r->stud_resid = r->resid_time_rel = NAN;
    return MB_OK;
}

int mb_rpt_join(mb_rpt_set *s, const char *device_override, mb_err *err)
{
    mb_err e;
    if (device_override) {
        if (device_index(s, device_override, NULL, -1, &e) < 0)
            return mb_err_set(err, MB_EINPUT, "--device: %s", e.msg);
    }
    join_cache c;
    memset(&c, 0, sizeof c);
    int rc = MB_OK;
    for (int i = 0; i < s->n_rows && !rc; i++) rc = join_row(s, &c, &s->rows[i], device_override, err);
    cache_free(&c);
    if (!rc) rc = rpt_machines_split(s, err);
    return rc;
}
