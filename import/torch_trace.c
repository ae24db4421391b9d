/* torch_trace.c — launches from the PyTorch profiler's Chrome trace
 * (torch.profiler export_chrome_trace; Kineto's libkineto/src/
 * output_json.cpp): events with "cat": "kernel", "name" (cxxabi-demangled),
 * "ts" and "dur" in microseconds, "args": {"grid": [x,y,z], "block": [x,y,z],
 * "correlation": id}, and "gpu_memcpy" "Memcpy DtoD" events (a contiguous
 * clone). Times only (no bytes). A launch's mark is the
 * innermost "membound:..." record_function around it: its
 * "gpu_user_annotation" span on the GPU timeline, else the "user_annotation"
 * span (CPU) around the "cuda_runtime" launch with the kernel's correlation
 * id. The GPU's name comes from "deviceProperties". JSON through jansson,
 * a key given twice refused; numbers, quoted or not, through imp_number.
 * Does not match launches. */
#include "import_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    char *name;             /* the mark, escaped (owned) */
    double ts, dur;
} span;

typedef struct spans {
    span *v;
    int n, cap;
} spans;

static void spans_free(spans *s)
{
    for (int i = 0; i < s->n; i++) free(s->v[i].name);
    free(s->v);
}

static int span_add(spans *s, char *name, double ts, double dur)
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

/* What a bad value was, for its message: a string escaped and cut, a
 * number as written, else its JSON type. */
static const char *shown(json_t *v, char *buf, size_t size)
{
    if (json_is_string(v)) {
        char e[48];
        size_t n = mb_text_escape(json_string_value(v), e, sizeof e);
        snprintf(buf, size, "\"%s%s\"", e, n >= sizeof e ? "..." : "");
    } else if (json_is_number(v)) {
        snprintf(buf, size, "%.17g", json_number_value(v));
    } else {
        snprintf(buf, size, "a JSON %s", json_is_array(v) ? "array" : json_is_object(v) ? "object" : "true/false");
    }
    return buf;
}

/* Key of event ev's object o into *out: a JSON number, or a string holding
 * one in plain decimal form (some writers quote them; imp_number), in
 * [lo, hi]. MB_OK with NAN when the key is absent or null; MB_EINPUT naming
 * the event, the key and the value otherwise. */
static int num(const char *path, size_t ev, json_t *o, const char *key, double lo, double hi, double *out,
               mb_err *err)
{
    json_t *v = json_object_get(o, key);
    *out = NAN;
    if (!v || json_is_null(v)) return MB_OK;
    double x = NAN;
    int rc = MB_EINPUT;
    if (json_is_number(v)) {
        x = json_number_value(v);
        rc = isfinite(x) && x >= lo && x <= hi ? MB_OK : MB_EINPUT;
    } else if (json_is_string(v)) {
        rc = imp_number(json_string_value(v), 0, lo, hi, &x);
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

/* "grid" or "block" [x, y, z] of event ev into d; absent: 0 (unknown).
 * Each must be a whole number from 1 to MB_IMP_DIM_MAX (CUDA's limit). */
static int dims3(const char *path, size_t ev, const char *key, json_t *a, long long d[3], mb_err *err)
{
    d[0] = d[1] = d[2] = 0;
    if (!a) return MB_OK;
    int ok = json_is_array(a) && json_array_size(a) == 3;
    for (int k = 0; k < 3 && ok; k++) {
        json_t *v = json_array_get(a, (size_t)k);
        ok = json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= MB_IMP_DIM_MAX;
        if (ok) d[k] = (long long)json_integer_value(v);
    }
    if (!ok)
        return mb_err_set(err, MB_EINPUT, "%s: traceEvents[%zu]: \"%s\": expected [x, y, z], each a whole number "
                          "from 1 to %lld", path, ev, key, MB_IMP_DIM_MAX);
    return MB_OK;
}

static int by_ts(const void *a, const void *b)
{
    const imp_launch *x = a, *y = b;
    if (x->ts_us != y->ts_us) return x->ts_us < y->ts_us ? -1 : 1;
    return x->event - y->event;
}

/* The CPU launch times of the trace's runtime calls ("cuda_runtime" events)
 * by correlation id, sorted for lookup. */
typedef struct launch_ts {
    double corr, ts;
} launch_ts;

static int by_corr(const void *a, const void *b)
{
    const launch_ts *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int runtime_index(const char *path, json_t *events, launch_ts **out, size_t *n_out, mb_err *err)
{
    size_t i, n = 0;
    json_t *e;
    launch_ts *v = malloc((json_array_size(events) + 1) * sizeof *v);
    if (!v) return mb_err_set(err, MB_ERUN, "out of memory");
    json_array_foreach(events, i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || strcmp(cat, "cuda_runtime") != 0) continue;
        double corr, ts;
        int rc = num(path, i, json_object_get(e, "args"), "correlation", 0, CORR_MAX, &corr, err);
        if (!rc) rc = num(path, i, e, "ts", 0, TS_MAX_US, &ts, err);
        if (rc) { free(v); return rc; }
        if (isfinite(corr) && isfinite(ts)) v[n++] = (launch_ts){corr, ts};
    }
    qsort(v, n, sizeof *v, by_corr);
    *out = v;
    *n_out = n;
    return MB_OK;
}

/* The launch time of correlation id corr, NAN when none. */
static double runtime_ts(const launch_ts *v, size_t n, double corr)
{
    launch_ts key = {corr, 0};
    const launch_ts *hit = bsearch(&key, v, n, sizeof *v, by_corr);
    return hit ? hit->ts : NAN;
}

static int kernels(const char *path, json_t *events, const spans *gpu, const spans *cpu, const char *gpu_name,
                   imp_launches *L, mb_err *err)
{
    size_t i, n_rt = 0;
    json_t *e;
    launch_ts *rt = NULL;
    double *qt = NULL; /* each launch's time in its marks' clock */
    int rc = MB_OK, n_qt = 0;
    if (cpu->n && !gpu->n && (rc = runtime_index(path, events, &rt, &n_rt, err))) return rc;
    json_array_foreach(events, i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        const char *name = json_string_value(json_object_get(e, "name"));
        /* a contiguous clone is a device-to-device copy, not a kernel */
        int memcpy_dtod = cat && !strcmp(cat, "gpu_memcpy") && name && strstr(name, "DtoD");
        if (!cat || (strcmp(cat, "kernel") != 0 && !memcpy_dtod)) continue;
        double ts, dur, corr = NAN;
        json_t *args = json_object_get(e, "args");
        if ((rc = num(path, i, e, "ts", 0, TS_MAX_US, &ts, err)) ||
            (rc = num(path, i, e, "dur", 0, MB_IMP_TIME_MAX_S * 1e6, &dur, err)) ||
            (rc = num(path, i, args, "correlation", 0, CORR_MAX, &corr, err)))
            break;
        if (!name || !isfinite(ts) || !(dur > 0)) {
            rc = mb_err_set(err, MB_EINPUT, "%s: traceEvents[%zu]: a kernel event needs \"name\", \"ts\" and "
                            "\"dur\" > 0", path, i);
            break;
        }
        imp_launch *x = imp_launch_add(L);
        if (!x || !(x->name = mb_text_escape_dup(name))) { rc = mb_err_set(err, MB_ERUN, "out of memory"); break; }
        x->event = (int)i + 1;
        x->ts_us = ts;
        x->time_s = dur * 1e-6;
        if ((rc = dims3(path, i, "grid", json_object_get(args, "grid"), x->grid, err)) ||
            (rc = dims3(path, i, "block", json_object_get(args, "block"), x->block, err)))
            break;
        snprintf(x->gpu, sizeof x->gpu, "%s", gpu_name);
        /* the mark's time: the kernel's on the GPU, else its launch call's on the CPU */
        if (L->n > n_qt) {
            void *p = realloc(qt, (size_t)(2 * L->n) * sizeof *qt);
            if (!p) { rc = mb_err_set(err, MB_ERUN, "out of memory"); break; }
            qt = p;
            n_qt = 2 * L->n;
        }
        qt[L->n - 1] = gpu->n ? ts : isfinite(corr) && rt ? runtime_ts(rt, n_rt, corr) : NAN;
    }
    free(rt);
    const spans *marks = gpu->n ? gpu : cpu;
    if (!rc && marks->n && L->n) {
        const char **mark = malloc((size_t)L->n * sizeof *mark);
        if (!mark || innermost_all(marks, qt, L->n, mark)) rc = mb_err_set(err, MB_ERUN, "out of memory");
        for (int k = 0; !rc && k < L->n; k++)
            if (mark[k]) snprintf(L->v[k].label, sizeof L->v[k].label, "%s", mark[k]);
        free(mark);
    }
    free(qt);
    if (!rc) qsort(L->v, (size_t)L->n, sizeof *L->v, by_ts);
    return rc;
}

int imp_read_torch_trace(const char *text, size_t len, const char *path, imp_launches *L, mb_err *err)
{
    json_error_t je;
    /* a key given twice is refused, not settled by the last ("dur": 2.5, "dur": 999) */
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char why[sizeof je.text];
        mb_text_escape(je.text, why, sizeof why);
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: not JSON: %s", path, je.line, je.column, why);
    }
    json_t *events = json_object_get(root, "traceEvents");
    int rc = MB_OK;
    spans gpu = {0}, cpu = {0};
    if (!json_is_array(events)) {
        rc = mb_err_set(err, MB_EINPUT, "%s: no \"traceEvents\" array: not a Chrome trace of the PyTorch profiler",
                        path);
        goto out;
    }
    char gpu_name[128] = "";
    json_t *props = json_object_get(root, "deviceProperties");
    const char *pn = json_string_value(json_object_get(json_array_get(props, 0), "name"));
    if (pn) mb_text_escape(pn, gpu_name, sizeof gpu_name);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!cat || !name || strncmp(name, "membound:", 9) != 0) continue;
        spans *s = !strcmp(cat, "gpu_user_annotation") ? &gpu : !strcmp(cat, "user_annotation") ? &cpu : NULL;
        if (!s) continue;
        double ts, dur;
        if ((rc = num(path, i, e, "ts", 0, TS_MAX_US, &ts, err)) ||
            (rc = num(path, i, e, "dur", 0, TS_MAX_US, &dur, err)))
            goto out;
        /* escaped, and whole: two long marks cut to one would merge their groups */
        char label[sizeof L->v[0].label];
        if (mb_text_escape(name, label, sizeof label) >= sizeof label) {
            rc = mb_err_set(err, MB_EINPUT, "%s: traceEvents[%zu]: a membound: mark of more than %zu bytes", path, i,
                            sizeof label - 1);
            goto out;
        }
        char *own = strdup(label);
        if (!own || span_add(s, own, ts, dur)) {
            free(own);
            rc = mb_err_set(err, MB_ERUN, "out of memory");
            goto out;
        }
    }
    rc = kernels(path, events, &gpu, &cpu, gpu_name, L, err);
    if (!rc && L->n == 0)
        rc = mb_err_set(err, MB_EINPUT, "%s: no kernel events (\"cat\": \"kernel\"): profile with "
                        "activities=[ProfilerActivity.CUDA]", path);
    if (!rc)
        snprintf(L->note, sizeof L->note, "torch profiler trace: kernel durations (CUPTI activity), %s",
                 gpu.n ? "marks from gpu_user_annotation spans" : cpu.n ? "marks from user_annotation spans"
                                                                        : "no membound: marks");
out:
    spans_free(&gpu);
    spans_free(&cpu);
    json_decref(root);
    return rc;
}
