/* torch_trace.c — launches from the PyTorch profiler's Chrome trace
 * (torch.profiler export_chrome_trace; Kineto's libkineto/src/
 * output_json.cpp): events with "cat": "kernel", "name" (cxxabi-demangled),
 * "ts" and "dur" in microseconds, "args": {"grid": [x,y,z], "block": [x,y,z],
 * "correlation": id}, and "gpu_memcpy" "Memcpy DtoD" events (a contiguous
 * clone). Times only (no bytes). A launch's mark is the
 * innermost "membound:..." record_function around it: its
 * "gpu_user_annotation" span on the GPU timeline, else the "user_annotation"
 * span (CPU) around the "cuda_runtime" launch with the kernel's correlation
 * id. The GPU's name comes from "deviceProperties". JSON through jansson.
 * Does not match launches. */
#include "import_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    const char *name;
    double ts, dur;
} span;

typedef struct spans {
    span *v;
    int n, cap;
} spans;

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

/* The innermost span of s around time t, or NULL. */
static const char *innermost(const spans *s, double t)
{
    const span *best = NULL;
    for (int i = 0; i < s->n; i++)
        if (t >= s->v[i].ts && t < s->v[i].ts + s->v[i].dur && (!best || s->v[i].dur < best->dur)) best = &s->v[i];
    return best ? best->name : NULL;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v)) return json_number_value(v);
    if (json_is_string(v)) return strtod(json_string_value(v), NULL); /* some writers quote them */
    return NAN;
}

static void dims3(json_t *a, long long d[3])
{
    for (int k = 0; k < 3; k++) {
        json_t *v = json_is_array(a) ? json_array_get(a, (size_t)k) : NULL;
        d[k] = json_is_integer(v) ? (long long)json_integer_value(v) : 0;
        if (d[k] < 0 || d[k] > MB_IMP_DIM_MAX) d[k] = 0; /* not a CUDA launch's: unknown */
    }
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

static int runtime_index(json_t *events, launch_ts **out, size_t *n_out)
{
    size_t i, n = 0;
    json_t *e;
    launch_ts *v = malloc((json_array_size(events) + 1) * sizeof *v);
    if (!v) return MB_ERUN;
    json_array_foreach(events, i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || strcmp(cat, "cuda_runtime") != 0) continue;
        double corr = num(json_object_get(e, "args"), "correlation"), ts = num(e, "ts");
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
    int rc = MB_OK;
    if (cpu->n && !gpu->n && runtime_index(events, &rt, &n_rt)) return mb_err_set(err, MB_ERUN, "out of memory");
    json_array_foreach(events, i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        const char *name = json_string_value(json_object_get(e, "name"));
        /* a contiguous clone is a device-to-device copy, not a kernel */
        int memcpy_dtod = cat && !strcmp(cat, "gpu_memcpy") && name && strstr(name, "DtoD");
        if (!cat || (strcmp(cat, "kernel") != 0 && !memcpy_dtod)) continue;
        double ts = num(e, "ts"), dur = num(e, "dur");
        if (!name || !isfinite(ts) || !(dur > 0)) {
            rc = mb_err_set(err, MB_EINPUT, "%s: traceEvents[%zu]: a kernel event needs \"name\", \"ts\" and "
                            "\"dur\" > 0", path, i);
            break;
        }
        imp_launch *x = imp_launch_add(L);
        if (!x || !(x->name = strdup(name))) { rc = mb_err_set(err, MB_ERUN, "out of memory"); break; }
        x->event = (int)i + 1;
        x->ts_us = ts;
        x->time_s = dur * 1e-6;
        json_t *args = json_object_get(e, "args");
        dims3(json_object_get(args, "grid"), x->grid);
        dims3(json_object_get(args, "block"), x->block);
        snprintf(x->gpu, sizeof x->gpu, "%s", gpu_name);
        const char *mark = innermost(gpu, ts);
        if (!mark && cpu->n) {
            double corr = num(args, "correlation");
            double t = isfinite(corr) && rt ? runtime_ts(rt, n_rt, corr) : NAN;
            if (isfinite(t)) mark = innermost(cpu, t);
        }
        if (mark) snprintf(x->label, sizeof x->label, "%s", mark);
    }
    free(rt);
    if (!rc) qsort(L->v, (size_t)L->n, sizeof *L->v, by_ts);
    return rc;
}

int imp_read_torch_trace(const char *text, size_t len, const char *path, imp_launches *L, mb_err *err)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root)
        return mb_err_set(err, MB_EINPUT, "%s:%d:%d: not JSON: %s", path, je.line, je.column, je.text);
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
    if (pn) snprintf(gpu_name, sizeof gpu_name, "%s", pn);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!cat || !name || strncmp(name, "membound:", 9) != 0) continue;
        spans *s = !strcmp(cat, "gpu_user_annotation") ? &gpu : !strcmp(cat, "user_annotation") ? &cpu : NULL;
        if (s && span_add(s, name, num(e, "ts"), num(e, "dur"))) { rc = mb_err_set(err, MB_ERUN, "out of memory"); goto out; }
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
    free(gpu.v);
    free(cpu.v);
    json_decref(root);
    return rc;
}
