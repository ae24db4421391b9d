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

#define N_KEYS MB_DK_COUNT

/* A string key's field in d. */
static char *str_field(mb_device *d, const mb_device_key *k) { return (char *)d + k->offset; }
/* A number key's field in d (OPS: op's). */
static double *num_field(mb_device *d, const mb_device_key *k, int op)
{
    return (double *)((char *)d + k->offset) + (k->type == MB_DKT_OPS ? op : 0);
}
static int is_text(const mb_device_key *k)
{
    return k->type == MB_DKT_STR || k->type == MB_DKT_ID || k->type == MB_DKT_ENUM;
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
    int op_line[N_KEYS][MB_OP_COUNT]; /* same for each op of an op family */
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


/* The valid key closest to an unknown one, or NULL when none is close. */
static const char *closest_key(const char *key, char *buf, size_t size)
{
    int best = 3; /* at most two edits away */
    const char *found = NULL;
    char k[64];
    for (int i = 0; i < N_KEYS; i++) {
        const mb_device_key *dk = mb_device_key_at(i);
        for (int op = 0; op < (dk->type == MB_DKT_OPS ? MB_OP_COUNT : 1); op++) {
            const char *name = dk->key;
            if (dk->type == MB_DKT_OPS) {
                if (!mb_device_op_key(dk, op, k, sizeof k)) continue;
                name = k;
            }
            int d = mb_edit_distance(key, name);
            if (d < best) { best = d; snprintf(buf, size, "%s", name); found = buf; }
        }
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

static int set_number(ini_state *st, const mb_device_key *k, const char *key, const char *value,
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
    const char *why = mb_device_key_problem(k, v, buf, sizeof buf);
    if (why)
        return fail(st, MB_EINPUT, "%s:%d: key '%s': %s, got '%s'", st->path, st->line, key, why,
                    value);
    *out = v;
    return 1;
}

/* 1 when value is one of ENUM k's choices (def, '|'-separated). */
static int enum_choice(const mb_device_key *k, const char *value)
{
    size_t len = strlen(value);
    for (const char *c = k->def; *c;) {
        const char *bar = strchr(c, '|');
        size_t n = bar ? (size_t)(bar - c) : strlen(c);
        if (n == len && !strncmp(c, value, n)) return 1;
        if (!bar) break;
        c = bar + 1;
    }
    return 0;
}

/* k's choices as a phrase: "'gpu' or 'cpu'", "'full', 'quick' or 'fallback'". */
static void enum_phrase(const mb_device_key *k, char *buf, size_t size)
{
    int n = 1;
    for (const char *c = k->def; *c; c++) n += *c == '|';
    size_t used = 0;
    const char *c = k->def;
    for (int i = 0; i < n && used < size; i++) {
        const char *bar = strchr(c, '|');
        int len = bar ? (int)(bar - c) : (int)strlen(c);
        int w = snprintf(buf + used, size - used, "%s'%.*s'", i == 0 ? "" : i == n - 1 ? " or " : ", ", len, c);
        if (w < 0) break;
        used += (size_t)w;
        c = bar ? bar + 1 : c + len;
    }
}

static int set_string(ini_state *st, const mb_device_key *k, const char *value)
{
    size_t len = strlen(value);
    char *dst = str_field(&st->dev, k);
    if (len >= k->size)
        return fail(st, MB_EINPUT, "%s:%d: key '%s': value too long (%zu characters, at most %zu)",
                    st->path, st->line, k->key, len, k->size - 1);
    if (k->need == MB_DKN_REQ && len == 0)
        return fail(st, MB_EINPUT, "%s:%d: key '%s': empty value", st->path, st->line, k->key);
    for (size_t i = 0; i < len; i++)
        if (is_control(value[i]))
            return fail(st, MB_EINPUT, "%s:%d: key '%s': control character 0x%02x in value",
                        st->path, st->line, k->key, (unsigned)(unsigned char)value[i]);
    if (k->type == MB_DKT_ID && !valid_id(value))
        return fail(st, MB_EINPUT,
                    "%s:%d: key '%s': '%s' is not a valid id (use letters, digits, '-', '_', "
                    "'.', '+')", st->path, st->line, k->key, value);
    if (k->type == MB_DKT_ENUM && !enum_choice(k, value)) {
        char choices[128];
        enum_phrase(k, choices, sizeof choices);
        return fail(st, MB_EINPUT, "%s:%d: key '%s': expected %s, got '%s'", st->path, st->line, k->key,
                    choices, value);
    }
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
    int op = 0;
    const mb_device_key *k = mb_device_key_find(name, &op);
    if (k) {
        int i = (int)(k - mb_device_key_at(0));
        int *seen = k->type == MB_DKT_OPS ? &st->op_line[i][op] : &st->key_line[i];
        if (*seen)
            return fail(st, MB_EINPUT, "%s:%d: key '%s' given twice (first on line %d)",
                        st->path, st->line, name, *seen);
        *seen = st->line;
        st->dev.given[i] = 1;
        if (is_text(k)) return set_string(st, k, value);
        return set_number(st, k, name, value, num_field(&st->dev, k, op));
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
        const mb_device_key *k = mb_device_key_at(i);
        int need = k->need == MB_DKN_REQ || (k->need == MB_DKN_REQ_GPU && is_gpu);
        if (!need || st->key_line[i]) continue;
        int w = snprintf(list + used, sizeof list - used, "%s'%s'", missing ? ", " : "", k->key);
        if (w > 0 && (size_t)w < sizeof list - used) used += (size_t)w;
        missing++;
    }
    if (missing)
        fail(st, MB_EINPUT, "%s: missing required key%s %s in [device]", st->path,
             missing > 1 ? "s" : "", list);
}

/* The values absent text keys take (device_keys.def's def): a STR key's
 * ("$name": the name's), an ENUM key written always its first choice. */
static void apply_defaults(mb_device *d, const int *key_line)
{
    for (int i = 0; i < N_KEYS; i++) {
        const mb_device_key *k = mb_device_key_at(i);
        if (key_line[i] || !k->def[0]) continue;
        char *dst = str_field(d, k);
        if (k->type == MB_DKT_STR)
            snprintf(dst, k->size, "%s", !strcmp(k->def, "$name") ? d->name : k->def);
        else if (k->type == MB_DKT_ENUM && k->write == MB_DKW_ALWAYS)
            snprintf(dst, k->size, "%.*s", (int)strcspn(k->def, "|"), k->def);
    }
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
        apply_defaults(&st->dev, st->key_line);
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
        const mb_device_key *k = mb_device_key_at(i);
        if (is_text(k)) {
            const char *p = mb_device_str(d, k);
            const char *why = string_problem(p, k->size);
            if (why) return mb_err_set(err, MB_EINPUT, "%s: field '%s' %s", path, k->key, why);
            if (k->need == MB_DKN_REQ && !p[0])
                return mb_err_set(err, MB_EINPUT, "%s: field '%s' is empty", path, k->key);
            if (k->type == MB_DKT_ID && !valid_id(p))
                return mb_err_set(err, MB_EINPUT, "%s: %s '%s' is not a valid id", path, k->key, p);
            if (k->type == MB_DKT_ENUM && p[0] && !enum_choice(k, p)) {
                char choices[128];
                enum_phrase(k, choices, sizeof choices);
                return mb_err_set(err, MB_EINPUT, "%s: %s '%s' is not %s", path, k->key, p, choices);
            }
            continue;
        }
        for (int op = 0; op < (k->type == MB_DKT_OPS ? MB_OP_COUNT : 1); op++) {
            double v = mb_device_num(d, k, op);
            char buf[96];
            const char *why = mb_device_key_problem(k, v, buf, sizeof buf);
            if (!why) continue;
            if (k->type == MB_DKT_OPS)
                return mb_err_set(err, MB_EINPUT, "%s: %s of '%s' = %g %s", path, k->key,
                                  mb_op_name((mb_op)op), v, why);
            return mb_err_set(err, MB_EINPUT, "%s: field '%s' = %g %s", path, k->key, v, why);
        }
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

/* The [device] section of d, one key a line, in the table's order, each as
 * its write rule says (device_keys.def). */
static void write_keys(const mb_device *d, FILE *fp)
{
    fprintf(fp, "[device]\n");
    char num[64], key[64];
    for (int i = 0; i < N_KEYS; i++) {
        const mb_device_key *k = mb_device_key_at(i);
        if (is_text(k)) {
            if (!mb_device_key_written(d, k, 0)) continue;
            const char *p = mb_device_str(d, k);
            if (k->type == MB_DKT_ENUM && !p[0]) { /* written always: its first choice */
                fprintf(fp, "%s = %.*s\n", k->key, (int)strcspn(k->def, "|"), k->def);
                continue;
            }
            fprintf(fp, p[0] ? "%s = %s\n" : "%s =\n", k->key, p);
            continue;
        }
        for (int op = 0; op < (k->type == MB_DKT_OPS ? MB_OP_COUNT : 1); op++) {
            if (!mb_device_key_written(d, k, op)) continue;
            if (k->type == MB_DKT_OPS && !mb_device_op_key(k, op, key, sizeof key)) continue;
            format_number(mb_device_num(d, k, op), num, sizeof num);
            fprintf(fp, "%s = %s\n", k->type == MB_DKT_OPS ? key : k->key, num);
        }
    }
}
