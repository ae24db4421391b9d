/* device_ini.c — device spec files: load and write the [device] INI format.
 * Parsing is inih's (Debian's libinih); this file maps keys to mb_device,
 * checks every value and reports file:line: key. Does not hold the built-in
 * table (device_table.c). */
#include "model_int.h"

#include <ini.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest line accepted. source is at most 511 characters, so a written file
 * never comes near this; longer lines are an error, never split silently. */
#define LINE_MAX_CHARS 4096

enum key_type { KEY_STR, KEY_NUM };
enum key_need {
    KEY_OPTIONAL = 0, /* may be absent (numbers: 0) */
    KEY_REQUIRED,     /* must be present; strings non-empty */
    KEY_REQUIRED_GPU  /* must be present for kind gpu */
};

typedef struct key_spec {
    const char *key;
    enum key_type type;
    enum key_need need;
    size_t offset, size;
    double lo, hi;       /* numbers: the plausible range, inclusive */
    int zero_none;       /* numbers: 0 is accepted below lo and means "none" */
} key_spec;

#define FIELD(f) offsetof(mb_device, f), sizeof(((mb_device *)0)->f)

/* Plausible ranges. Wide enough for any real CPU core or GPU, narrow enough
 * that every time the model derives stays finite (an f32 tensor of 2^62
 * elements over 0.1 GB/s is 1.8e11 s; 1e-320 GB/s made times inf and dropped
 * them from JSON):
 * - bandwidths 0.1..1e5 GB/s (optional ones, cited_bandwidth_gbs too, 0: none):
 *   a single DRAM channel of an old PC moves ~1 GB/s,
 *   an HBM3e GPU 8 TB/s, a last-level cache some 20 TB/s; 100 TB/s is 5x that;
 * - cache_mb and cache_resident_mb 1e-3..1e6 MiB: from a 1 KiB buffer to
 *   1 TiB (the largest on-package caches are ~1 GiB); cache_resident_mb 0: none;
 *   alloc_mmap_threshold_mb the same range, 0: glibc's 32 MiB;
 * - fp32_tflops 1e-4..1e5 (100 MFLOP/s, a microcontroller, to 50x a B200),
 *   bf16_tflops and sfu_tops 0 (none) or 1e-4..1e5;
 * - launch_overhead_us 1e-6..1e5: per-pass overheads of a few ns on a CPU to
 *   0.1 s, 20000x a GPU's 5 us; graph_launch_overhead_us the same, 0: none;
 * - mem_gb 1e-3..1e6 (1 MB to 1 PB), 0: unknown;
 * - op rates 1e-4..1e6 G elements/s (1e5/s, a soft-float core, to 1e15/s,
 *   250x an H100's special-function units), 0: not measured;
 * - stream penalty and gain 0..100 per extra stream (calibrate measures
 *   0..0.3); serial fractions 0..1; write_allocate and stream_at_cache_size 0 or 1;
 * - max_threads_per_sm 32..16384, 0: none (a warp to 8x the 2048 of an
 *   H100 SM or a CDNA CU). */
#define BW 0.1, 1e5
#define RATE 1e-4, 1e6
#define STR(f) FIELD(f), 0, 0, 0

/* The contract keys of the design's "Device specs", in the order written. */
static const key_spec spec_keys[] = {
    {"name", KEY_STR, KEY_REQUIRED, STR(name)},
    {"label", KEY_STR, KEY_OPTIONAL, STR(label)},
    {"kind", KEY_STR, KEY_OPTIONAL, STR(kind)},
    {"mem_bandwidth_gbs", KEY_NUM, KEY_REQUIRED, FIELD(mem_bandwidth_gbs), BW, 0},
    {"measured_bandwidth_gbs", KEY_NUM, KEY_OPTIONAL, FIELD(measured_bandwidth_gbs), BW, 1},
    {"cited_bandwidth_gbs", KEY_NUM, KEY_OPTIONAL, FIELD(cited_bandwidth_gbs), BW, 1},
    {"read_bandwidth_gbs", KEY_NUM, KEY_OPTIONAL, FIELD(read_bandwidth_gbs), BW, 1},
    {"read_stream_penalty", KEY_NUM, KEY_OPTIONAL, FIELD(read_stream_penalty), 0, 100, 0},
    {"read_stream_gain", KEY_NUM, KEY_OPTIONAL, FIELD(read_stream_gain), 0, 100, 0},
    {"serial_fraction", KEY_NUM, KEY_OPTIONAL, FIELD(serial_fraction), 0, 1, 0},
    {"serial_fraction_compiled", KEY_NUM, KEY_OPTIONAL, FIELD(serial_fraction_compiled), 0, 1, 0},
    {"serial_fraction_rows", KEY_NUM, KEY_OPTIONAL, FIELD(serial_fraction_rows), 0, 1, 0},
    {"serial_fraction_rows_l2", KEY_NUM, KEY_OPTIONAL, FIELD(serial_fraction_rows_l2), 0, 1, 0},
    {"write_allocate", KEY_NUM, KEY_OPTIONAL, FIELD(write_allocate), 0, 1, 0},
    {"stream_at_cache_size", KEY_NUM, KEY_OPTIONAL, FIELD(stream_at_cache_size), 0, 1, 0},
    {"cache_bandwidth_gbs", KEY_NUM, KEY_OPTIONAL, FIELD(cache_bandwidth_gbs), BW, 1},
    {"cache_mb", KEY_NUM, KEY_REQUIRED, FIELD(cache_mb), 1e-3, 1e6, 0},
    {"cache_resident_mb", KEY_NUM, KEY_OPTIONAL, FIELD(cache_resident_mb), 1e-3, 1e6, 1},
    {"onchip_kib", KEY_NUM, KEY_OPTIONAL, FIELD(onchip_kib), 1e-3, 1e9, 1},
    {"l1_kib", KEY_NUM, KEY_OPTIONAL, FIELD(l1_kib), 1e-3, 1e9, 1},
    {"sm_count", KEY_NUM, KEY_OPTIONAL, FIELD(sm_count), 1, 1e6, 1},
    {"max_threads_per_sm", KEY_NUM, KEY_OPTIONAL, FIELD(max_threads_per_sm), 32, 16384, 1},
    {"fp32_tflops", KEY_NUM, KEY_REQUIRED, FIELD(fp32_tflops), 1e-4, 1e5, 0},
    {"bf16_tflops", KEY_NUM, KEY_REQUIRED_GPU, FIELD(bf16_tflops), 1e-4, 1e5, 1},
    {"sfu_tops", KEY_NUM, KEY_OPTIONAL, FIELD(sfu_tops), 1e-4, 1e5, 1},
    {"launch_overhead_us", KEY_NUM, KEY_REQUIRED, FIELD(launch_overhead_us), 1e-6, 1e5, 0},
    {"graph_launch_overhead_us", KEY_NUM, KEY_OPTIONAL, FIELD(graph_launch_overhead_us), 1e-6, 1e5, 1},
    {"mem_gb", KEY_NUM, KEY_OPTIONAL, FIELD(mem_gb), 1e-3, 1e6, 1},
    {"op_sincos_geps", KEY_NUM, KEY_OPTIONAL, FIELD(sincos_geps), RATE, 1},
    {"op_sincos_compiled_geps", KEY_NUM, KEY_OPTIONAL, FIELD(sincos_compiled_geps), RATE, 1},
    {"exp_nonpos_gain", KEY_NUM, KEY_OPTIONAL, FIELD(exp_nonpos_gain), 0.1, 100, 1},
    {"host_ref_copy_gbs", KEY_NUM, KEY_OPTIONAL, FIELD(host_ref_copy_gbs), BW, 1},
    {"host_ref_sin_geps", KEY_NUM, KEY_OPTIONAL, FIELD(host_ref_sin_geps), RATE, 1},
    {"host_ref_sigmoid_geps", KEY_NUM, KEY_OPTIONAL, FIELD(host_ref_sigmoid_geps), RATE, 1},
    {"first_touch_gbs", KEY_NUM, KEY_OPTIONAL, FIELD(first_touch_gbs), BW, 1},
    {"alloc_mmap_threshold_mb", KEY_NUM, KEY_OPTIONAL, FIELD(alloc_mmap_threshold_mb), 1e-3, 1e6, 1},
    {"source", KEY_STR, KEY_REQUIRED, STR(source)},
    {"measured_at", KEY_STR, KEY_OPTIONAL, STR(measured_at)},
    /* written only when set: specs without it read and write as before */
    {"calibration", KEY_STR, KEY_OPTIONAL, STR(calibration)},
};

/* The range of op_<name>_geps and op_<name>_compiled_geps (0: not measured). */
static const key_spec op_rate_spec = {"op_<name>_geps", KEY_NUM, KEY_OPTIONAL, 0, 0, RATE, 1};

/* The reason v is outside k's range, into buf; NULL when inside. */
static const char *range_problem(const key_spec *k, double v, char *buf, size_t size)
{
    if (!isfinite(v)) return "must be a finite number";
    if (!strcmp(k->key, "write_allocate") || !strcmp(k->key, "stream_at_cache_size"))
        return v == 0 || v == 1 ? NULL : "must be 0 or 1";
    if (v >= k->lo && v <= k->hi) return NULL;
    if (k->zero_none && v == 0) return NULL;
    snprintf(buf, size, "must be %sin [%g, %g]", k->zero_none ? "0 (none) or " : "", k->lo, k->hi);
    return buf;
}

#define N_KEYS ((int)(sizeof spec_keys / sizeof spec_keys[0]))

/* Position of key in spec_keys (key must be one of them). */
static int key_index(const char *key)
{
    int i = 0;
    while (i < N_KEYS - 1 && strcmp(spec_keys[i].key, key) != 0) i++;
    return i;
}

/* Parser state, shared by the line reader and the key handler. */
typedef struct ini_state {
    FILE *fp;
    const char *path;
    int line;            /* number of the line being parsed, from 1 */
    int at_line_start;   /* next read starts a new line */
    size_t line_chars;   /* characters of the current line so far */
    int read_errno;      /* errno of a failed read, else 0 */
    int device_line;     /* line of the [device] header, 0 if none yet */
    int key_line[N_KEYS];          /* line where each key was set, 0 if not */
    int op_line[2][MB_OP_COUNT];   /* same for op_<name>_geps, op_<name>_compiled_geps */
    mb_device dev;
    int code;            /* first error (MB_OK while none) */
    mb_err err;
} ini_state;

static int fail(ini_state *st, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Records the first error only; returns 0 so inih stops. */
static int fail(ini_state *st, int code, const char *fmt, ...)
{
    if (st->code == MB_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->err.msg, sizeof st->err.msg, fmt, ap);
        va_end(ap);
        st->code = code;
    }
    return 0;
}


/* "op_<name>_geps" for op, into buf; returns 0 when op has no name. */
/* The key of op's rate: "op_<name>_geps", or with compiled != 0 the rate in
 * compiled kernels, "op_<name>_compiled_geps". */
static int op_key(int op, int compiled, char *buf, size_t size)
{
    const char *n = mb_op_name((mb_op)op);
    if (!n || !*n || !strcmp(n, "?")) return 0;
    int w = snprintf(buf, size, compiled ? "op_%s_compiled_geps" : "op_%s_geps", n);
    return w > 0 && (size_t)w < size;
}

static double *op_rate_field(mb_device *d, int op, int compiled)
{
    return compiled ? &d->op_compiled_geps[op] : &d->op_geps[op];
}

/* The valid key closest to an unknown one, or NULL when none is close. */
static const char *closest_key(const char *key, char *buf, size_t size)
{
    int best = 3; /* at most two edits away */
    const char *found = NULL;
    for (int i = 0; i < N_KEYS; i++) {
        int d = mb_edit_distance(key, spec_keys[i].key);
        if (d < best) { best = d; found = spec_keys[i].key; }
    }
    char k[64];
    for (int c = 0; c < 2; c++)
        for (int op = 0; op < MB_OP_COUNT; op++) {
            if (!op_key(op, c, k, sizeof k)) continue;
            int d = mb_edit_distance(key, k);
            if (d < best) { best = d; snprintf(buf, size, "%s", k); found = buf; }
        }
    return found;
}

/* Bytes a string value may not hold: they would garble tables and JSON. */
static int is_control(char c)
{
    unsigned char u = (unsigned char)c;
    return (u < 0x20 && c != '\t') || u == 0x7f;
}

/* A device id: letters, digits and "-_.+", so it is safe in CSV and JSON. */
static int valid_id(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == '+'))
            return 0;
    }
    return 1;
}

/* Section headers are seen by the reader (inih calls the handler only for
 * keys): anything but one [device] is an error at its own line. */
static void check_section(ini_state *st, const char *s)
{
    if (st->line == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        s += 3;
    while (*s == ' ' || *s == '\t') s++;
    if (*s != '[') return;
    const char *end = strchr(s + 1, ']');
    if (!end) return; /* inih reports the syntax error */
    int len = (int)(end - (s + 1));
    if (len != 6 || strncmp(s + 1, "device", 6) != 0) {
        fail(st, MB_EINPUT, "%s:%d: section [%.*s]: only [device] is accepted", st->path,
             st->line, len > 64 ? 64 : len, s + 1);
        return;
    }
    if (st->device_line) {
        fail(st, MB_EINPUT, "%s:%d: a second [device] section (the first is on line %d)",
             st->path, st->line, st->device_line);
        return;
    }
    st->device_line = st->line;
}

/* fgets-style reader for ini_parse_stream that counts lines, since Debian's
 * inih is built without line numbers for the handler. inih calls it again
 * with the rest of the buffer while a long line continues. */
static char *read_line(char *str, int num, void *stream)
{
    ini_state *st = stream;
    if (st->code != MB_OK) return NULL;
    errno = 0;
    if (!fgets(str, num, st->fp)) {
        if (ferror(st->fp)) st->read_errno = errno ? errno : EIO;
        return NULL;
    }
    size_t n = strlen(str);
    if (st->at_line_start) {
        st->line++;
        st->line_chars = 0;
        check_section(st, str);
        if (st->code != MB_OK) return NULL;
    }
    st->line_chars += n;
    if (st->line_chars > LINE_MAX_CHARS) {
        fail(st, MB_EINPUT, "%s:%d: line longer than %d characters", st->path, st->line,
             LINE_MAX_CHARS);
        return NULL;
    }
    st->at_line_start = n > 0 && str[n - 1] == '\n';
    return str;
}

static int set_number(ini_state *st, const key_spec *k, const char *key, const char *value,
                      double *out)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (end == value || *end != '\0')
        return fail(st, MB_EINPUT, "%s:%d: key '%s': expected a number, got '%s'", st->path,
                    st->line, key, value);
    if (!isfinite(v))
        return fail(st, MB_EINPUT, "%s:%d: key '%s': expected a finite number, got '%s'",
                    st->path, st->line, key, value);
    char buf[96];
    const char *why = range_problem(k, v, buf, sizeof buf);
    if (why)
        return fail(st, MB_EINPUT, "%s:%d: key '%s': %s, got '%s'", st->path, st->line, key, why,
                    value);
    *out = v;
    return 1;
}

static int set_string(ini_state *st, const key_spec *k, const char *value)
{
    size_t len = strlen(value);
    char *dst = (char *)&st->dev + k->offset;
    if (len >= k->size)
        return fail(st, MB_EINPUT, "%s:%d: key '%s': value too long (%zu characters, at most %zu)",
                    st->path, st->line, k->key, len, k->size - 1);
    if (k->need == KEY_REQUIRED && len == 0)
        return fail(st, MB_EINPUT, "%s:%d: key '%s': empty value", st->path, st->line, k->key);
    for (size_t i = 0; i < len; i++)
        if (is_control(value[i]))
            return fail(st, MB_EINPUT, "%s:%d: key '%s': control character 0x%02x in value",
                        st->path, st->line, k->key, (unsigned)(unsigned char)value[i]);
    if (!strcmp(k->key, "name") && !valid_id(value))
        return fail(st, MB_EINPUT,
                    "%s:%d: key 'name': '%s' is not a valid id (use letters, digits, '-', '_', "
                    "'.', '+')", st->path, st->line, value);
    if (!strcmp(k->key, "kind") && strcmp(value, "gpu") && strcmp(value, "cpu"))
        return fail(st, MB_EINPUT, "%s:%d: key 'kind': expected 'gpu' or 'cpu', got '%s'",
                    st->path, st->line, value);
    if (!strcmp(k->key, "calibration") && strcmp(value, "full") && strcmp(value, "quick") &&
        strcmp(value, "fallback"))
        return fail(st, MB_EINPUT, "%s:%d: key 'calibration': expected 'full', 'quick' or 'fallback', "
                    "got '%s'", st->path, st->line, value);
    memcpy(dst, value, len + 1);
    return 1;
}

/* inih's handler: one key = value of the file. */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
    ini_state *st = user;
    if (st->code != MB_OK) return 0;
    if (strcmp(section, "device") != 0)
        return fail(st, MB_EINPUT, "%s:%d: key '%s' is outside the [device] section", st->path,
                    st->line, name);
    for (int i = 0; i < N_KEYS; i++) {
        const key_spec *k = &spec_keys[i];
        if (strcmp(name, k->key) != 0) continue;
        if (st->key_line[i])
            return fail(st, MB_EINPUT, "%s:%d: key '%s' given twice (first on line %d)",
                        st->path, st->line, name, st->key_line[i]);
        st->key_line[i] = st->line;
        if (k->type == KEY_STR) return set_string(st, k, value);
        return set_number(st, k, name, value, (double *)((char *)&st->dev + k->offset));
    }
    char key[64];
    for (int c = 0; c < 2; c++)
        for (int op = 0; op < MB_OP_COUNT; op++) {
            if (!op_key(op, c, key, sizeof key) || strcmp(name, key) != 0) continue;
            if (st->op_line[c][op])
                return fail(st, MB_EINPUT, "%s:%d: key '%s' given twice (first on line %d)",
                            st->path, st->line, name, st->op_line[c][op]);
            st->op_line[c][op] = st->line;
            return set_number(st, &op_rate_spec, name, value, op_rate_field(&st->dev, op, c));
        }
    char buf[64];
    const char *near = closest_key(name, buf, sizeof buf);
    if (near)
        return fail(st, MB_EINPUT, "%s:%d: unknown key '%s' in [device] (did you mean '%s'?)",
                    st->path, st->line, name, near);
    return fail(st, MB_EINPUT, "%s:%d: unknown key '%s' in [device]", st->path, st->line, name);
}

/* Checks presence of the required keys after a clean parse. */
static void check_required(ini_state *st)
{
    int is_gpu = strcmp(st->dev.kind, "cpu") != 0;
    char list[256] = "";
    size_t used = 0;
    int missing = 0;
    for (int i = 0; i < N_KEYS; i++) {
        const key_spec *k = &spec_keys[i];
        int need = k->need == KEY_REQUIRED || (k->need == KEY_REQUIRED_GPU && is_gpu);
        if (!need || st->key_line[i]) continue;
        int w = snprintf(list + used, sizeof list - used, "%s'%s'", missing ? ", " : "", k->key);
        if (w > 0 && (size_t)w < sizeof list - used) used += (size_t)w;
        missing++;
    }
    if (missing)
        fail(st, MB_EINPUT, "%s: missing required key%s %s in [device]", st->path,
             missing > 1 ? "s" : "", list);
}

/* Loads the spec file at path into *out (written only on success).
 * Returns MB_EINPUT with "path:line: key '...': ..." for a bad value,
 * "path: missing required key ..." for an incomplete file and
 * "path: cannot open: <reason>" when it cannot be read; MB_ERUN when inih
 * runs out of memory. */
static int load_stream(FILE *fp, const char *path, mb_device *out, mb_err *err)
{
    ini_state *st = calloc(1, sizeof *st);
    if (!st) { fclose(fp); return mb_err_set(err, MB_ERUN, "%s: out of memory", path); }
    st->path = path;
    st->at_line_start = 1;
    st->fp = fp;

    /* Debian's libinih exposes its build settings as globals: lines may
     * grow past 200 characters (source strings do), continuation lines and
     * keys without values are errors, and the first error stops the parse.
     * Restored afterwards; not thread-safe, like the rest of inih's globals. */
    bool old_stack = ini_use_stack, old_realloc = ini_allow_realloc;
    bool old_multi = ini_allow_multiline, old_stop = ini_stop_on_first_error;
    bool old_novalue = ini_allow_no_value;
    int old_max = ini_max_line;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_max_line = LINE_MAX_CHARS + 8;
    ini_allow_multiline = false;
    ini_stop_on_first_error = true;
    ini_allow_no_value = false;
    int rc = ini_parse_stream(read_line, st, on_key, st);
    ini_use_stack = old_stack;
    ini_allow_realloc = old_realloc;
    ini_max_line = old_max;
    ini_allow_multiline = old_multi;
    ini_stop_on_first_error = old_stop;
    ini_allow_no_value = old_novalue;
    fclose(st->fp);

    if (st->code == MB_OK) {
        if (st->read_errno)
            fail(st, MB_EINPUT, "%s: cannot read: %s", path, strerror(st->read_errno));
        else if (rc == -2)
            fail(st, MB_ERUN, "%s: out of memory while parsing", path);
        else if (rc > 0)
            fail(st, MB_EINPUT, "%s:%d: expected 'key = value', '[device]' or a comment", path,
                 rc);
        else if (rc != 0)
            fail(st, MB_EINPUT, "%s: cannot parse (inih error %d)", path, rc);
        else if (!st->device_line)
            fail(st, MB_EINPUT, st->line == 0 ? "%s: empty file: expected a [device] section"
                                              : "%s: no [device] section", path);
        else
            check_required(st);
    }
    if (st->code == MB_OK) {
        if (!st->key_line[key_index("kind")]) snprintf(st->dev.kind, sizeof st->dev.kind, "gpu");
        st->dev.has_serial_fraction_compiled = st->key_line[key_index("serial_fraction_compiled")] != 0;
        st->dev.has_serial_fraction_rows = st->key_line[key_index("serial_fraction_rows")] != 0;
        st->dev.has_serial_fraction_rows_l2 = st->key_line[key_index("serial_fraction_rows_l2")] != 0;
        if (!st->key_line[key_index("label")])
            snprintf(st->dev.label, sizeof st->dev.label, "%s", st->dev.name);
        *out = st->dev;
    } else if (err) {
        *err = st->err;
    }
    int code = st->code;
    free(st);
    return code;
}

int mb_device_load_ini(const char *path, mb_device *out, mb_err *err)
{
    char *text = NULL;
    int rc = mb_text_read(path, (size_t)1 << 20, &text, NULL, err);
    if (rc != MB_OK) return rc;
    rc = mb_device_load_ini_text(text, path, out, err);
    free(text);
    return rc;
}

/* 1 when a line of text is a [device] header (leading blanks and a UTF-8
 * byte-order mark allowed). */
static int has_device_section(const char *text)
{
    if (!strncmp(text, "\xEF\xBB\xBF", 3)) text += 3;
    for (const char *l = text; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        while (*l == ' ' || *l == '\t') l++;
        if (!strncmp(l, "[device]", 8)) return 1;
    }
    return 0;
}

int mb_device_load_ini_text(const char *text, const char *name, mb_device *out, mb_err *err)
{
    if (!text[0]) return mb_err_set(err, MB_EINPUT, "%s: empty file: expected a [device] section", name);
    /* Only a file with a [device] section is read as a spec, and nothing of
     * another is echoed (a path such as /etc/shadow in a CSV's device column
     * would otherwise show its first key). */
    if (!has_device_section(text))
        return mb_err_set(err, MB_EINPUT, "%s: not a device spec (no [device] section): not read", name);
    int rc = mb_text_check(text, strlen(text), name, err);
    if (rc != MB_OK) return rc;
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    if (!fp) return mb_err_set(err, MB_ERUN, "%s: cannot read: %s", name, strerror(errno));
    return load_stream(fp, name, out, err);
}

/* Shortest of %.15g..%.17g that reads back as exactly v. */
static void format_number(double v, char *buf, size_t size)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* A string value survives write and load unchanged: inih strips outer
 * whitespace, ends the value at " ;" (inline comment) and at a newline. */
static const char *string_problem(const char *s, size_t size)
{
    size_t len = 0;
    while (len < size && s[len]) len++;
    if (len == size) return "is not terminated";
    if (len && (s[0] == ' ' || s[0] == '\t' || s[len - 1] == ' ' || s[len - 1] == '\t'))
        return "starts or ends with white space";
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\n' || s[i] == '\r') return "contains a line break";
        if (is_control(s[i])) return "contains a control character";
        if (s[i] == ';' && i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t'))
            return "contains ' ;', which starts a comment";
    }
    return NULL;
}

/* Refuses a device that the loader would refuse or read back differently. */
static int check_device(const mb_device *d, const char *path, mb_err *err)
{
    for (int i = 0; i < N_KEYS; i++) {
        const key_spec *k = &spec_keys[i];
        const char *p = (const char *)d + k->offset;
        if (k->type == KEY_STR) {
            const char *why = string_problem(p, k->size);
            if (why) return mb_err_set(err, MB_EINPUT, "%s: field '%s' %s", path, k->key, why);
            if (k->need == KEY_REQUIRED && !p[0])
                return mb_err_set(err, MB_EINPUT, "%s: field '%s' is empty", path, k->key);
            continue;
        }
        double v = *(const double *)p;
        char buf[96];
        const char *why = range_problem(k, v, buf, sizeof buf);
        if (why) return mb_err_set(err, MB_EINPUT, "%s: field '%s' = %g %s", path, k->key, v, why);
    }
    if (!valid_id(d->name))
        return mb_err_set(err, MB_EINPUT, "%s: name '%s' is not a valid id", path, d->name);
    if (d->kind[0] && strcmp(d->kind, "gpu") && strcmp(d->kind, "cpu"))
        return mb_err_set(err, MB_EINPUT, "%s: kind '%s' is not 'gpu' or 'cpu'", path, d->kind);
    for (int c = 0; c < 2; c++)
        for (int op = 0; op < MB_OP_COUNT; op++) {
            double v = *op_rate_field((mb_device *)d, op, c);
            char buf[96];
            const char *why = range_problem(&op_rate_spec, v, buf, sizeof buf);
            if (why)
                return mb_err_set(err, MB_EINPUT, "%s: %s of '%s' = %g %s", path,
                                  c ? "op_compiled_geps" : "op_geps", mb_op_name((mb_op)op), v, why);
        }
    return MB_OK;
}

static void write_keys(const mb_device *d, FILE *fp);

/* Writes d to path as a [device] spec that mb_device_load_ini reads back
 * field for field (numbers in their shortest round-trip form; op_geps only
 * where non-zero). Goes through mb_outfile: the file appears whole or not at
 * all. Returns MB_EINPUT for a device the loader would refuse, MB_ERUN when
 * the file cannot be written. */
int mb_device_write_ini(const mb_device *d, const char *path, mb_err *err)
{
    int rc = check_device(d, path, err);
    if (rc != MB_OK) return rc;
    mb_outfile of;
    rc = mb_outfile_open(&of, path, err);
    if (rc != MB_OK) return rc;
    FILE *fp = of.fp;
    fprintf(fp, "# device spec written by membound (keys: see 'membound devices'); "
                "use with --device FILE\n");
    write_keys(d, fp);
    return mb_outfile_commit(&of, err);
}

char *mb_device_ini_text(const mb_device *d, mb_err *err)
{
    if (check_device(d, d->name, err) != MB_OK) return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    if (!fp) { mb_err_set(err, MB_ERUN, "out of memory"); return NULL; }
    write_keys(d, fp);
    if (fclose(fp) != 0) { free(buf); mb_err_set(err, MB_ERUN, "out of memory"); return NULL; }
    return buf;
}

/* The [device] section of d, one key a line. */
static void write_keys(const mb_device *d, FILE *fp)
{
    fprintf(fp, "[device]\n");
    char num[64];
    for (int i = 0; i < N_KEYS; i++) {
        const key_spec *k = &spec_keys[i];
        const char *p = (const char *)d + k->offset;
        if (k->type == KEY_STR) {
            if (!strcmp(k->key, "kind") && !p[0]) p = "gpu";
            if (!strcmp(k->key, "calibration") && !p[0]) continue;
            fprintf(fp, p[0] ? "%s = %s\n" : "%s =\n", k->key, p);
        } else {
            /* an optional figure that stands for another when absent */
            if (!strcmp(k->key, "serial_fraction_compiled") && !d->has_serial_fraction_compiled)
                continue;
            if (!strcmp(k->key, "serial_fraction_rows") && !d->has_serial_fraction_rows) continue;
            if (!strcmp(k->key, "serial_fraction_rows_l2") && !d->has_serial_fraction_rows_l2) continue;
            /* a framework's allocation figures: only where measured; a
             * GPU's resident threads and a core's L1: only where known
             * (specs read and write as before the keys) */
            if ((!strcmp(k->key, "first_touch_gbs") || !strcmp(k->key, "alloc_mmap_threshold_mb") ||
                 !strcmp(k->key, "max_threads_per_sm") || !strcmp(k->key, "l1_kib")) &&
                *(const double *)p == 0)
                continue;
            /* a calibration's figure: only where measured */
            if ((!strcmp(k->key, "exp_nonpos_gain") || !strcmp(k->key, "stream_at_cache_size")) &&
                *(const double *)p == 0)
                continue;
            format_number(*(const double *)p, num, sizeof num);
            fprintf(fp, "%s = %s\n", k->key, num);
        }
    }
    char key[64];
    for (int c = 0; c < 2; c++)
        for (int op = 0; op < MB_OP_COUNT; op++) {
            double v = *op_rate_field((mb_device *)d, op, c);
            if (v == 0 || !op_key(op, c, key, sizeof key)) continue;
            format_number(v, num, sizeof num);
            fprintf(fp, "%s = %s\n", key, num);
        }
}
