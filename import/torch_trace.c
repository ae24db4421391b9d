/* torch_trace.c — launches from the PyTorch profiler's Chrome trace
 * (torch.profiler export_chrome_trace; Kineto's libkineto/src/
 * output_json.cpp): events with "cat": "kernel", "name" (cxxabi-demangled),
 * "ts" and "dur" in microseconds, "args": {"grid": [x,y,z], "block": [x,y,z],
 * "correlation": id}, and "gpu_memcpy" "Memcpy DtoD" events (a contiguous
 * clone). Times only (no bytes). A launch's mark is the
 * innermost "membound:..." record_function around it: its
 * "gpu_user_annotation" span on the GPU timeline, else the "user_annotation"
 * span (CPU) around the "cuda_runtime" launch with the kernel's correlation
 * id. The GPU's name comes from "deviceProperties". JSON read as a stream
 * (yajl): each event's fields are kept until its object closes, never the
 * document's tree (jansson's tree of a 179 MiB trace took 2.6 GiB); a key
 * given twice in one object refused; numbers, quoted or not, through
 * imp_number. Does not match launches. */
#include "import_int.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

typedef struct span {
    const char *name;       /* the mark, escaped (interned in the launches) */
    double ts, dur;
} span;

typedef struct spans {
    span *v;
    int n, cap;
} spans;

static void spans_free(spans *s)
{
    free(s->v);
}

static int span_add(spans *s, const char *name, double ts, double dur)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        void *p = realloc(s->v, (size_t)cap * sizeof *s->v);
        if (!p) return MB_ERUN;
        s->v = p;
        s->cap = cap;
    }
    s->v[s->n++] = (span){name, ts, dur};
    return MB_OK;
}

/* A span or a query time in the sweep's order. */
typedef struct timed {
    double t;
    int i;
} timed;

static int by_time(const void *a, const void *b)
{
    const timed *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->i - y->i;
}

/* 1 when span i is inner to span j: shorter, or as long and earlier in the
 * file (the first of equals wins, as a scan in file order would have it). */
static int inner(const spans *s, int i, int j)
{
    return s->v[i].dur < s->v[j].dur || (s->v[i].dur == s->v[j].dur && i < j);
}

static void heap_push(const spans *s, int *h, int *n, int i)
{
    int k = (*n)++;
    for (; k > 0 && inner(s, i, h[(k - 1) / 2]); k = (k - 1) / 2) h[k] = h[(k - 1) / 2];
    h[k] = i;
}

static void heap_pop(const spans *s, int *h, int *n)
{
    int last = h[--*n], k = 0;
    for (;;) {
        int c = 2 * k + 1;
        if (c >= *n) break;
        if (c + 1 < *n && inner(s, h[c + 1], h[c])) c++;
        if (!inner(s, h[c], last)) break;
        h[k] = h[c];
        k = c;
    }
    if (*n) h[k] = last;
}

/* The innermost span of s around each time t[q] (ts <= t < ts + dur; NAN:
 * none) into mark[q], NULL when none. One sweep in time order with the
 * spans begun so far in a heap, innermost on top, ended ones dropped from
 * the top as time passes: O((spans + queries) log spans), where a scan of
 * every span for every launch took 57 s for 10^5 launches under 5 * 10^4
 * marks. MB_ERUN when memory runs out. */
static int innermost_all(const spans *s, const double *t, int n, const char **mark)
{
    timed *so = malloc(((size_t)s->n + 1) * sizeof *so), *qo = malloc(((size_t)n + 1) * sizeof *qo);
    int *h = malloc(((size_t)s->n + 1) * sizeof *h);
    if (!so || !h || !qo) { free(so); free(h); free(qo); return MB_ERUN; }
    int ns = 0, nq = 0, nh = 0;
    for (int i = 0; i < s->n; i++)
        if (isfinite(s->v[i].ts) && isfinite(s->v[i].dur)) so[ns++] = (timed){s->v[i].ts, i};
    for (int q = 0; q < n; q++) {
        mark[q] = NULL;
        if (isfinite(t[q])) qo[nq++] = (timed){t[q], q};
    }
    qsort(so, (size_t)ns, sizeof *so, by_time);
    qsort(qo, (size_t)nq, sizeof *qo, by_time);
    for (int k = 0, j = 0; k < nq; k++) {
        double tq = qo[k].t;
        for (; j < ns && so[j].t <= tq; j++) heap_push(s, h, &nh, so[j].i);
        while (nh && !(tq < s->v[h[0]].ts + s->v[h[0]].dur)) heap_pop(s, h, &nh);
        if (nh) mark[qo[k].i] = s->v[h[0]].name;
    }
    free(so);
    free(h);
    free(qo);
    return MB_OK;
}

/* ---- the stream: yajl hands over each token once; an event's fields are
 * held until its object closes, then read as one event, and dropped. ---- */

/* A JSON string of any length, NUL-terminated (strings with \u0000 are
 * refused, so the C string is the whole of it). */
typedef struct sbuf {
    char *s;
    size_t len, cap;
} sbuf;

static int sbuf_set(sbuf *b, const unsigned char *s, size_t len)
{
    if (len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < len + 1) cap *= 2;
        void *p = realloc(b->s, cap);
        if (!p) return MB_ERUN;
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s, s, len);
    b->s[len] = '\0';
    b->len = len;
    return MB_OK;
}

/* A value's JSON type, as much of it as a message needs. */
typedef enum jtype { J_ABSENT, J_NULL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT, J_BOOL } jtype;

/* A number field as the file gives it: a number, or a string kept whole for
 * imp_number (some writers quote numbers), or what else it is. */
typedef struct jnum {
    jtype type;
    double x;
    sbuf s;
} jnum;

/* "grid" or "block": absent, or present and ok when it was [x, y, z], each a
 * whole number from 1 to MB_IMP_DIM_MAX. */
typedef struct jdims {
    int present, ok;
    long long d[3];
} jdims;

/* The fields of one traceEvents object that the importer reads. */
typedef struct event {
    size_t index;          /* in traceEvents, from 0 */
    int has_cat, has_name; /* each given as a JSON string */
    sbuf cat, name;
    jnum ts, dur, corr;    /* corr: args.correlation */
    jdims grid, block;     /* args.grid, args.block */
} event;

/* What a container is to the importer, and what the key just read names. */
typedef enum role { R_OTHER, R_ROOT, R_EVENTS, R_EVENT, R_ARGS, R_DIMS, R_PROPS, R_PROP0 } role;
typedef enum field { F_OTHER, F_EVENTS, F_PROPS, F_CAT, F_NAME, F_TS, F_DUR, F_ARGS, F_CORR, F_GRID, F_BLOCK,
                     F_GPU_NAME } field;

typedef struct level {
    role role;
    field key;   /* an object's: what its last key names */
    size_t n;    /* an array's: its elements so far */
    jdims *dims; /* R_DIMS: where the elements go */
} level;

/* The keys of one open object, to refuse a key given twice ("dur": 2.5,
 * "dur": 999), as jansson's JSON_REJECT_DUPLICATES did. One table per
 * nesting depth, reused by every object at that depth: a slot counts only
 * when its gen is the current object's, so opening an object clears nothing
 * (an events array has 10^6 objects of ~6 keys each). */
typedef struct keyslot {
    uint64_t hash;
    uint32_t gen, len;
    size_t off; /* into keys */
} keyslot;

typedef struct keyset {
    keyslot *v;
    size_t cap, n; /* cap: a power of two */
    uint32_t gen;
    char *keys;
    size_t keys_len, keys_cap;
} keyset;

static void keyset_open(keyset *k)
{
    if (++k->gen == 0) { /* wrapped: old stamps could match again */
        if (k->v) memset(k->v, 0, k->cap * sizeof *k->v);
        k->gen = 1;
    }
    k->n = k->keys_len = 0;
}

static uint64_t fnv1a(const unsigned char *s, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

/* 1 when the open object has key s already, 0 when added, -1: memory. */
static int keyset_add(keyset *k, const unsigned char *s, size_t len)
{
    if (2 * (k->n + 1) > k->cap) { /* at most half full: probes stay short */
        size_t cap = k->cap ? 2 * k->cap : 16;
        keyslot *v = calloc(cap, sizeof *v);
        if (!v) return -1;
        for (size_t i = 0; i < k->cap; i++) {
            if (k->v[i].gen != k->gen) continue;
            size_t j = k->v[i].hash & (cap - 1);
            while (v[j].gen == k->gen) j = (j + 1) & (cap - 1);
            v[j] = k->v[i];
        }
        free(k->v);
        k->v = v;
        k->cap = cap;
    }
    uint64_t h = fnv1a(s, len);
    size_t j = h & (k->cap - 1);
    for (; k->v[j].gen == k->gen; j = (j + 1) & (k->cap - 1))
        if (k->v[j].hash == h && k->v[j].len == len && !memcmp(k->keys + k->v[j].off, s, len)) return 1;
    if (!k->keys || k->keys_len + len > k->keys_cap) { /* an empty key "" too: no offset on NULL */
        size_t cap = k->keys_cap ? k->keys_cap : 256;
        while (cap < k->keys_len + len) cap *= 2;
        void *p = realloc(k->keys, cap);
        if (!p) return -1;
        k->keys = p;
        k->keys_cap = cap;
    }
    memcpy(k->keys + k->keys_len, s, len);
    k->v[j] = (keyslot){h, k->gen, (uint32_t)len, k->keys_len};
    k->keys_len += len;
    k->n++;
    return 0;
}

/* As jansson: a document nested deeper is refused (and the stack bounded). */
#define DEPTH_MAX 2048

/* Pieces the file is read and handed to yajl in: the reader keeps no token
 * of the text past its callback, so memory is one piece whatever the
 * file's size (the whole text of a 179 MiB trace was held before). */
#define PIECE_BYTES ((size_t)1 << 16)

/* A runtime call's CPU launch time ("cuda_runtime" events), by correlation id. */
typedef struct launch_ts {
    double corr, ts;
} launch_ts;

typedef struct reader {
    const char *path;
    const char *piece; /* the piece being parsed */
    size_t len;  /* bytes read so far */
    size_t base; /* the offset of the piece being parsed */
    size_t lines_before, line_start; /* before the piece: its '\n's, the offset after the last */
    yajl_handle h;
    imp_launches *L;
    level *lv;
    keyset *ks;
    int depth, events_level; /* events_level: lv's index of traceEvents, -1 none */
    int root_object, have_events;
    event e;
    char gpu_name[128];
    spans gpu, cpu;
    launch_ts *rt; /* the runtime calls: (correlation, ts) */
    size_t n_rt, cap_rt;
    double *corr; /* each launch's args.correlation, NAN none */
    size_t cap_corr;
    /* the first bad span, runtime call and kernel in file order, reported
     * in the order the checks ran when the trace was read as one tree */
    int span_bad, rt_bad, kern_bad;
    mb_err span_err, rt_err, kern_err;
    int rc; /* a callback's stop: MB_EINPUT or MB_ERUN, in *err */
    mb_err *err;
} reader;

/* The file position of the token that ends at off, for a message: its
 * line, and its last byte's column (as jansson counted: a bad first byte
 * is 1:1). */
static void position(const reader *r, size_t off, size_t *line, size_t *col)
{
    size_t nl = r->lines_before, start = r->line_start;
    for (size_t i = r->base; i < off; i++)
        if (r->piece[i - r->base] == '\n') nl++, start = i + 1;
    *line = nl + 1;
    *col = off > start ? off - start : 1;
}

/* The offset just past the token yajl read last. */
static size_t consumed(const reader *r)
{
    size_t off = r->base + yajl_get_bytes_consumed(r->h);
    return off > r->len ? r->len : off;
}

/* Stops the parse with a message of the token's place. */
static int stop(reader *r, int code, const char *why, const unsigned char *key, size_t key_len)
{
    size_t line, col;
    position(r, consumed(r), &line, &col);
    char ev[48] = "", k[48] = "";
    if (r->events_level >= 0 && r->depth > r->events_level + 1)
        snprintf(ev, sizeof ev, " traceEvents[%zu]:", r->lv[r->events_level].n - 1);
    if (key) {
        char raw[40];
        size_t n = key_len < sizeof raw - 1 ? key_len : sizeof raw - 1;
        memcpy(raw, key, n);
        raw[n] = '\0';
        mb_text_escape(raw, k, sizeof k);
    }
    r->rc = code == MB_ERUN ? mb_err_set(r->err, MB_ERUN, "out of memory")
                            : mb_err_set(r->err, code, "%s:%zu:%zu:%s not JSON: %s%s%s%s", r->path, line, col, ev,
                                         why, key ? " \"" : "", k, key ? "\"" : "");
    return 0;
}

static int oom(reader *r)
{
    r->rc = mb_err_set(r->err, MB_ERUN, "out of memory");
    return 0;
}

/* What a bad value was, for its message: a string escaped and cut, a
 * number as written, else its JSON type. */
static const char *shown(const jnum *v, char *buf, size_t size)
{
    if (v->type == J_STRING) {
        char e[48];
        size_t n = mb_text_escape(v->s.s, e, sizeof e);
        snprintf(buf, size, "\"%s%s\"", e, n >= sizeof e ? "..." : "");
    } else if (v->type == J_NUMBER) {
        snprintf(buf, size, "%.17g", v->x);
    } else {
        snprintf(buf, size, "a JSON %s", v->type == J_ARRAY ? "array" : v->type == J_OBJECT ? "object" : "true/false");
    }
    return buf;
}

/* Field key of event ev into *out: a JSON number, or a string holding one in
 * plain decimal form (imp_number), in [lo, hi]. MB_OK with NAN when the key
 * is absent or null; MB_EINPUT naming the event, the key and the value
 * otherwise. */
static int num(const char *path, size_t ev, const jnum *v, const char *key, double lo, double hi, double *out,
               mb_err *err)
{
    *out = NAN;
    if (v->type == J_ABSENT || v->type == J_NULL) return MB_OK;
    double x = NAN;
    int rc = MB_EINPUT;
    if (v->type == J_NUMBER) {
        x = v->x;
        rc = isfinite(x) && x >= lo && x <= hi ? MB_OK : MB_EINPUT;
    } else if (v->type == J_STRING) {
        rc = imp_number(v->s.s, 0, lo, hi, &x);
    }
    if (rc == MB_ERUN) return mb_err_set(err, MB_ERUN, "out of memory");
    if (rc) {
        char b[80];
        return mb_err_set(err, MB_EINPUT, "%s: traceEvents[%zu]: \"%s\": %s: expected a decimal number from %g to "
                          "%g%s", path, ev, key, shown(v, b, sizeof b), lo, hi,
                          !strcmp(key, "dur") || !strcmp(key, "ts") ? " (microseconds, no unit)" : "");
    }
    *out = x;
    return MB_OK;
}

/* The largest "ts" or span "dur", in microseconds: 10^18 us is 31,700
 * years, past any clock's epoch; a kernel's "dur" is bounded by
 * MB_IMP_TIME_MAX_S instead. Correlation ids are counters: at most 2^53. */
#define TS_MAX_US 1e18
#define CORR_MAX 9007199254740992.0

/* "grid" or "block" of event ev into d; absent: 0 (unknown). */
static int dims3(const char *path, size_t ev, const char *key, const jdims *a, int d[3], mb_err *err)
{
    d[0] = d[1] = d[2] = 0;
    if (!a->present) return MB_OK;
    if (!a->ok)
        return mb_err_set(err, MB_EINPUT, "%s: traceEvents[%zu]: \"%s\": expected [x, y, z], each a whole number "
                          "from 1 to %lld", path, ev, key, MB_IMP_DIM_MAX);
    for (int k = 0; k < 3; k++) d[k] = (int)a->d[k]; /* each at most MB_IMP_DIM_MAX */
    return MB_OK;
}

static int by_ts(const void *a, const void *b)
{
    const imp_launch *x = a, *y = b;
    if (x->ts_us != y->ts_us) return x->ts_us < y->ts_us ? -1 : 1;
    return x->event - y->event;
}

static int by_corr(const void *a, const void *b)
{
    const launch_ts *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* The launch time of correlation id corr, NAN when none. */
static double runtime_ts(const launch_ts *v, size_t n, double corr)
{
    launch_ts key = {corr, 0};
    const launch_ts *hit = bsearch(&key, v, n, sizeof *v, by_corr);
    return hit ? hit->ts : NAN;
}

/* A "membound:..." span; a bad one is kept as the first span error. */
static int span_event(reader *r, spans *s, const char *name)
{
    event *e = &r->e;
    double ts, dur;
    int rc;
    if ((rc = num(r->path, e->index, &e->ts, "ts", 0, TS_MAX_US, &ts, &r->span_err)) ||
        (rc = num(r->path, e->index, &e->dur, "dur", 0, TS_MAX_US, &dur, &r->span_err))) {
        if (rc == MB_ERUN) return oom(r);
        r->span_bad = 1;
        return 1;
    }
    /* escaped, and whole: two long marks cut to one would merge their groups */
    char label[IMP_LABEL_MAX];
    if (mb_text_escape(name, label, sizeof label) >= sizeof label) {
        mb_err_set(&r->span_err, MB_EINPUT, "%s: traceEvents[%zu]: a membound: mark of more than %zu bytes",
                   r->path, e->index, sizeof label - 1);
        r->span_bad = 1;
        return 1;
    }
    const char *kept = imp_intern(r->L, label);
    if (!kept || span_add(s, kept, ts, dur)) return oom(r);
    return 1;
}

/* A "cuda_runtime" call: its CPU time by correlation id, for the launches'
 * marks when the marks are CPU spans. */
static int runtime_event(reader *r)
{
    event *e = &r->e;
    double corr, ts;
    int rc;
    if ((rc = num(r->path, e->index, &e->corr, "correlation", 0, CORR_MAX, &corr, &r->rt_err)) ||
        (rc = num(r->path, e->index, &e->ts, "ts", 0, TS_MAX_US, &ts, &r->rt_err))) {
        if (rc == MB_ERUN) return oom(r);
        r->rt_bad = 1;
        return 1;
    }
    if (!isfinite(corr) || !isfinite(ts)) return 1;
    if (r->n_rt == r->cap_rt) {
        size_t cap = r->cap_rt ? 2 * r->cap_rt : 64;
        void *p = realloc(r->rt, cap * sizeof *r->rt);
        if (!p) return oom(r);
        r->rt = p;
        r->cap_rt = cap;
    }
    r->rt[r->n_rt++] = (launch_ts){corr, ts};
    return 1;
}

/* A kernel (or a device-to-device copy) into L. */
static int kernel_event(reader *r, const char *name)
{
    event *e = &r->e;
    mb_err *ke = &r->kern_err;
    double ts, dur, corr;
    int rc;
    if ((rc = num(r->path, e->index, &e->ts, "ts", 0, TS_MAX_US, &ts, ke)) ||
        (rc = num(r->path, e->index, &e->dur, "dur", 0, MB_IMP_TIME_MAX_S * 1e6, &dur, ke)) ||
        (rc = num(r->path, e->index, &e->corr, "correlation", 0, CORR_MAX, &corr, ke))) {
        if (rc == MB_ERUN) return oom(r);
        r->kern_bad = 1;
        return 1;
    }
    if (!name || !isfinite(ts) || !(dur > 0)) {
        mb_err_set(ke, MB_EINPUT, "%s: traceEvents[%zu]: a kernel event needs \"name\", \"ts\" and \"dur\" > 0",
                   r->path, e->index);
        r->kern_bad = 1;
        return 1;
    }
    imp_launch *x = imp_launch_add(r->L);
    if (!x) return oom(r);
    char buf[512], *long_one = NULL;
    if (mb_text_escape(name, buf, sizeof buf) >= sizeof buf && !(long_one = mb_text_escape_dup(name))) return oom(r);
    x->name = imp_intern(r->L, long_one ? long_one : buf);
    free(long_one);
    if (!x->name) return oom(r);
    x->event = (int)e->index + 1;
    x->ts_us = ts;
    x->time_s = dur * 1e-6;
    if (dims3(r->path, e->index, "grid", &e->grid, x->grid, ke) ||
        dims3(r->path, e->index, "block", &e->block, x->block, ke)) {
        r->kern_bad = 1;
        return 1;
    }
    if ((size_t)r->L->n > r->cap_corr) {
        void *p = realloc(r->corr, (size_t)r->L->cap * sizeof *r->corr);
        if (!p) return oom(r);
        r->corr = p;
        r->cap_corr = (size_t)r->L->cap;
    }
    r->corr[r->L->n - 1] = corr;
    return 1;
}

/* An event object has closed: a span, a runtime call, a kernel or none. */
static int event_done(reader *r)
{
    if (r->span_bad) return 1; /* that error is the one reported */
    event *e = &r->e;
    const char *cat = e->has_cat ? e->cat.s : NULL, *name = e->has_name ? e->name.s : NULL;
    if (!cat) return 1;
    if (name && !strncmp(name, "membound:", 9)) {
        spans *s = !strcmp(cat, "gpu_user_annotation") ? &r->gpu : !strcmp(cat, "user_annotation") ? &r->cpu : NULL;
        if (s) return span_event(r, s, name);
    }
    if (!strcmp(cat, "cuda_runtime")) return r->rt_bad ? 1 : runtime_event(r);
    /* a contiguous clone is a device-to-device copy, not a kernel */
    int memcpy_dtod = !strcmp(cat, "gpu_memcpy") && name && strstr(name, "DtoD");
    if (strcmp(cat, "kernel") != 0 && !memcpy_dtod) return 1;
    return r->kern_bad ? 1 : kernel_event(r, name);
}

static level *top(reader *r)
{
    return r->depth ? &r->lv[r->depth - 1] : NULL;
}

static int set_num(reader *r, jnum *v, jtype t, double x, const unsigned char *s, size_t len)
{
    v->type = t;
    v->x = x;
    if (t == J_STRING && sbuf_set(&v->s, s, len)) return oom(r);
    return 1;
}

/* A scalar: where it lands, if the importer reads it. is_int: a JSON
 * number without fraction or exponent (a dimension must be one). */
static int scalar(reader *r, jtype t, int is_int, double x, const unsigned char *s, size_t len)
{
    level *p = top(r);
    if (!p) return 1; /* a bare scalar document: no traceEvents */
    event *e = &r->e;
    switch (p->role) {
    case R_DIMS:
        if (!(t == J_NUMBER && is_int && x >= 1 && x <= MB_IMP_DIM_MAX && p->n < 3)) p->dims->ok = 0;
        else p->dims->d[p->n] = (long long)x;
        p->n++;
        return 1;
    case R_EVENTS:
    case R_PROPS:
        p->n++;
        return 1;
    case R_EVENT:
        if (p->key == F_CAT && t == J_STRING) {
            e->has_cat = 1;
            if (sbuf_set(&e->cat, s, len)) return oom(r);
        } else if (p->key == F_NAME && t == J_STRING) {
            e->has_name = 1;
            if (sbuf_set(&e->name, s, len)) return oom(r);
        } else if (p->key == F_TS || p->key == F_DUR) {
            return set_num(r, p->key == F_TS ? &e->ts : &e->dur, t, x, s, len);
        }
        return 1;
    case R_ARGS:
        if (p->key == F_CORR) return set_num(r, &e->corr, t, x, s, len);
        if (p->key == F_GRID || p->key == F_BLOCK) *(p->key == F_GRID ? &e->grid : &e->block) = (jdims){1, 0, {0}};
        return 1;
    case R_PROP0:
        if (p->key == F_GPU_NAME && t == J_STRING) {
            char *raw = malloc(len + 1);
            if (!raw) return oom(r);
            memcpy(raw, s, len);
            raw[len] = '\0';
            mb_text_escape(raw, r->gpu_name, sizeof r->gpu_name);
            free(raw);
        }
        return 1;
    default:
        return 1;
    }
}

/* An object or array opens: what it is to the importer. */
static int open_container(reader *r, int is_map)
{
    level *p = top(r);
    role child = R_OTHER;
    jdims *dims = NULL;
    event *e = &r->e;
    jtype t = is_map ? J_OBJECT : J_ARRAY;
    if (!p) {
        r->root_object = is_map;
        if (is_map) child = R_ROOT;
    } else {
        switch (p->role) {
        case R_ROOT:
            if (p->key == F_EVENTS && !is_map) {
                child = R_EVENTS;
                r->have_events = 1;
                r->events_level = r->depth;
            }
            if (p->key == F_PROPS && !is_map) child = R_PROPS;
            break;
        case R_EVENTS:
            if (is_map) {
                child = R_EVENT;
                e->index = p->n;
                e->has_cat = e->has_name = 0;
                e->ts.type = e->dur.type = e->corr.type = J_ABSENT;
                e->grid.present = e->block.present = 0;
            }
            p->n++;
            break;
        case R_PROPS:
            if (p->n++ == 0 && is_map) child = R_PROP0;
            break;
        case R_EVENT:
            if (p->key == F_ARGS && is_map) child = R_ARGS;
            if (p->key == F_TS || p->key == F_DUR) (p->key == F_TS ? &e->ts : &e->dur)->type = t;
            break;
        case R_ARGS:
            if (p->key == F_CORR) e->corr.type = t;
            if (p->key == F_GRID || p->key == F_BLOCK) {
                dims = p->key == F_GRID ? &e->grid : &e->block;
                *dims = (jdims){1, !is_map, {0}};
                if (!is_map) child = R_DIMS;
            }
            break;
        case R_DIMS:
            p->dims->ok = 0;
            p->n++;
            break;
        default:
            break;
        }
    }
    if (r->depth == DEPTH_MAX) return stop(r, MB_EINPUT, "more than 2048 levels of nesting", NULL, 0);
    r->lv[r->depth] = (level){child, F_OTHER, 0, dims};
    if (is_map) keyset_open(&r->ks[r->depth]);
    r->depth++;
    return 1;
}

static int close_container(reader *r)
{
    level *p = top(r);
    int ok = 1;
    if (p->role == R_DIMS) p->dims->ok = p->dims->ok && p->n == 3;
    if (p->role == R_EVENT) ok = event_done(r);
    if (p->role == R_EVENTS) r->events_level = -1;
    r->depth--;
    return ok;
}

static field key_field(role in, const unsigned char *s, size_t len)
{
    static const struct {
        role in;
        const char *key;
        field f;
    } keys[] = {
        {R_ROOT, "traceEvents", F_EVENTS}, {R_ROOT, "deviceProperties", F_PROPS}, {R_EVENT, "cat", F_CAT},
        {R_EVENT, "name", F_NAME}, {R_EVENT, "ts", F_TS}, {R_EVENT, "dur", F_DUR}, {R_EVENT, "args", F_ARGS},
        {R_ARGS, "correlation", F_CORR}, {R_ARGS, "grid", F_GRID}, {R_ARGS, "block", F_BLOCK},
        {R_PROP0, "name", F_GPU_NAME},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i].in == in && strlen(keys[i].key) == len && !memcmp(keys[i].key, s, len)) return keys[i].f;
    return F_OTHER;
}

static int on_key(void *ctx, const unsigned char *s, size_t len)
{
    reader *r = ctx;
    if (memchr(s, '\0', len)) return stop(r, MB_EINPUT, "\\u0000 in a key", NULL, 0);
    int dup = keyset_add(&r->ks[r->depth - 1], s, len);
    if (dup < 0) return oom(r);
    /* a key given twice is refused, not settled by the last ("dur": 2.5, "dur": 999) */
    if (dup) return stop(r, MB_EINPUT, "duplicate object key", s, len);
    level *p = top(r);
    p->key = key_field(p->role, s, len);
    return 1;
}

static int on_null(void *ctx) { return scalar(ctx, J_NULL, 0, NAN, NULL, 0); }
static int on_bool(void *ctx, int b) { (void)b; return scalar(ctx, J_BOOL, 0, NAN, NULL, 0); }
static int on_int(void *ctx, long long v) { return scalar(ctx, J_NUMBER, 1, (double)v, NULL, 0); }
static int on_double(void *ctx, double v) { return scalar(ctx, J_NUMBER, 0, v, NULL, 0); }
static int on_start_map(void *ctx) { return open_container(ctx, 1); }
static int on_start_array(void *ctx) { return open_container(ctx, 0); }
static int on_end(void *ctx) { return close_container(ctx); }

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
    if (memchr(s, '\0', len)) return stop(ctx, MB_EINPUT, "\\u0000 in a string", NULL, 0);
    return scalar(ctx, J_STRING, 0, NAN, s, len);
}

static const yajl_callbacks callbacks = {
    on_null, on_bool, on_int, on_double, NULL, on_string, on_start_map, on_key, on_end, on_start_array, on_end,
};

/* The file from fd's offset through yajl, piece by piece: MB_OK with the
 * document's events in r, or the one line saying where it is not JSON
 * (or that the file passed max_bytes or could not be read). */
static int parse(reader *r, int fd, size_t max_bytes, mb_err *err)
{
    char *buf = malloc(PIECE_BYTES);
    r->h = buf ? yajl_alloc(&callbacks, NULL, r) : NULL;
    if (!r->h) { free(buf); return mb_err_set(err, MB_ERUN, "out of memory"); }
    r->piece = buf;
    yajl_status st = yajl_status_ok;
    int rc = MB_OK;
    for (;;) {
        ssize_t got = read(fd, buf, PIECE_BYTES);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) { rc = mb_err_set(err, MB_EINPUT, "%s: cannot read: %s", r->path, strerror(errno)); break; }
        if (got == 0) break;
        if (r->len + (size_t)got > max_bytes) { /* grown since it was checked */
            rc = mb_err_set(err, MB_EINPUT, "%s: more than the %zu bytes this input may have", r->path, max_bytes);
            break;
        }
        r->len += (size_t)got;
        st = yajl_parse(r->h, (const unsigned char *)buf, (size_t)got);
        if (st != yajl_status_ok) break;
        for (ssize_t i = 0; i < got; i++)
            if (buf[i] == '\n') r->lines_before++, r->line_start = r->base + (size_t)i + 1;
        r->base += (size_t)got;
    }
    if (!rc && st == yajl_status_ok) st = yajl_complete_parse(r->h);
    if (rc) {
    } else if (st == yajl_status_client_canceled) {
        rc = r->rc;
    } else if (st != yajl_status_ok) {
        size_t line, col;
        position(r, consumed(r), &line, &col);
        unsigned char *msg = yajl_get_error(r->h, 0, NULL, 0);
        char why[160] = "";
        if (msg) {
            msg[strcspn((char *)msg, "\n")] = '\0';
            mb_text_escape((char *)msg, why, sizeof why);
            yajl_free_error(r->h, msg);
        }
        rc = mb_err_set(err, MB_EINPUT, "%s:%zu:%zu: not JSON: %s", r->path, line, col, why);
    }
    yajl_free(r->h);
    free(buf);
    return rc;
}

/* Each launch's mark: the innermost span of the GPU's marks around its
 * start, else of the CPU's around its launch call. */
static int marks_of(reader *r)
{
    imp_launches *L = r->L;
    const spans *marks = r->gpu.n ? &r->gpu : &r->cpu;
    if (!marks->n || !L->n) return MB_OK;
    double *qt = malloc((size_t)L->n * sizeof *qt); /* each launch's time in its marks' clock */
    const char **mark = malloc((size_t)L->n * sizeof *mark);
    int rc = qt && mark ? MB_OK : MB_ERUN;
    if (!rc && !r->gpu.n) qsort(r->rt, r->n_rt, sizeof *r->rt, by_corr);
    for (int k = 0; !rc && k < L->n; k++)
        qt[k] = r->gpu.n ? L->v[k].ts_us : isfinite(r->corr[k]) ? runtime_ts(r->rt, r->n_rt, r->corr[k]) : NAN;
    if (!rc) rc = innermost_all(marks, qt, L->n, mark);
    for (int k = 0; !rc && k < L->n; k++)
        if (mark[k]) L->v[k].label = mark[k];
    free(mark);
    free(qt);
    return rc;
}

int imp_read_torch_trace(int fd, size_t max_bytes, const char *path, imp_launches *L, mb_err *err)
{
    reader *r = calloc(1, sizeof *r);
    level *lv = malloc(DEPTH_MAX * sizeof *lv);
    keyset *ks = calloc(DEPTH_MAX, sizeof *ks);
    if (!r || !lv || !ks) {
        free(r);
        free(lv);
        free(ks);
        return mb_err_set(err, MB_ERUN, "out of memory");
    }
    *r = (reader){.path = path, .L = L, .lv = lv, .ks = ks, .events_level = -1, .err = err};
    int rc = parse(r, fd, max_bytes, err);
    if (!rc && !(r->root_object && r->have_events))
        rc = mb_err_set(err, MB_EINPUT, "%s: no \"traceEvents\" array: not a Chrome trace of the PyTorch profiler",
                        path);
    /* the first bad span, else runtime call (read only when the marks are
     * CPU spans), else kernel: the order the checks ran over the tree */
    const mb_err *bad = r->span_bad ? &r->span_err
                        : r->rt_bad && r->cpu.n && !r->gpu.n ? &r->rt_err
                        : r->kern_bad ? &r->kern_err : NULL;
    if (!rc && bad) rc = mb_err_set(err, MB_EINPUT, "%s", bad->msg);
    const char *gpu = rc ? NULL : imp_intern(L, r->gpu_name);
    if (!rc && !gpu) rc = mb_err_set(err, MB_ERUN, "out of memory");
    for (int k = 0; !rc && k < L->n; k++) L->v[k].gpu = gpu;
    if (!rc && marks_of(r)) rc = mb_err_set(err, MB_ERUN, "out of memory");
    if (!rc) qsort(L->v, (size_t)L->n, sizeof *L->v, by_ts);
    if (!rc && L->n == 0)
        rc = mb_err_set(err, MB_EINPUT, "%s: no kernel events (\"cat\": \"kernel\"): profile with "
                        "activities=[ProfilerActivity.CUDA]", path);
    if (!rc)
        snprintf(L->note, sizeof L->note, "torch profiler trace: kernel durations (CUPTI activity), %s",
                 r->gpu.n ? "marks from gpu_user_annotation spans" : r->cpu.n ? "marks from user_annotation spans"
                                                                          : "no membound: marks");
    spans_free(&r->gpu);
    spans_free(&r->cpu);
    for (int d = 0; d < DEPTH_MAX; d++) {
        free(ks[d].v);
        free(ks[d].keys);
    }
    free(ks);
    free(lv);
    free(r->rt);
    free(r->corr);
    free(r->e.cat.s);
    free(r->e.name.s);
    free(r->e.ts.s.s);
    free(r->e.dur.s.s);
    free(r->e.corr.s.s);
    free(r);
    return rc;
}
