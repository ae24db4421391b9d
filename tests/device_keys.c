/* device_keys.c — every row of model/device_keys.def through every reader:
 * INI write and load, `membound devices --json`, the range check, the write
 * rule, mb_device_at_rates. Generated from the table at run time, so a new
 * key is covered without a line here. Does not test the built-in rows
 * (test_device.c) or what the model does with a key. */
#define _POSIX_C_SOURCE 200809L
#include "membound_model.h"
#include "mb_test.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_text(const mb_device_key *k)
{
    return k->type == MB_DKT_STR || k->type == MB_DKT_ID || k->type == MB_DKT_ENUM;
}

/* The smallest spec every loader takes. */
static mb_device base(void)
{
    mb_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "keys-test");
    snprintf(d.label, sizeof d.label, "keys-test");
    snprintf(d.kind, sizeof d.kind, "gpu");
    snprintf(d.source, sizeof d.source, "tests/device_keys.c");
    d.mem_bandwidth_gbs = 1000;
    d.cache_mb = 40;
    d.fp32_tflops = 20;
    d.bf16_tflops = 300;
    d.launch_overhead_us = 3;
    return d;
}

static double *field(mb_device *d, const mb_device_key *k, int op)
{
    return (double *)((char *)d + k->offset) + (k->type == MB_DKT_OPS ? op : 0);
}

/* d written as INI text and read back: MB_OK and back, or the status. */
static int ini_round_trip(const mb_device *d, mb_device *back, mb_err *e)
{
    char *text = mb_device_ini_text(d, e);
    if (!text) return MB_EINPUT;
    int rc = mb_device_load_ini_text(text, "keys.ini", back, e);
    free(text);
    return rc;
}

/* 1 when key k of a and b agree: text, every op's number, a GIVEN key's
 * presence. */
static int same_key(const mb_device *a, const mb_device *b, const mb_device_key *k, int i)
{
    if (is_text(k)) return strcmp(mb_device_str(a, k), mb_device_str(b, k)) == 0;
    for (int op = 0; op < (k->type == MB_DKT_OPS ? MB_OP_COUNT : 1); op++)
        if (mb_device_num(a, k, op) != mb_device_num(b, k, op)) return 0;
    return k->write != MB_DKW_GIVEN || a->given[i] == b->given[i];
}

/* The values a number key is tried at: its bounds, a value between them
 * and 0 where 0 means none (op families: for one op). */
static int trial_values(const mb_device_key *k, double *v)
{
    int n = 0;
    if (k->type == MB_DKT_FLAG) { v[n++] = 0; v[n++] = 1; return n; }
    v[n++] = k->lo;
    v[n++] = k->hi;
    v[n++] = k->lo > 0 ? sqrt(k->lo * k->hi) : (k->lo + k->hi) / 3;
    if (k->type == MB_DKT_COUNT) v[n - 1] = floor(v[n - 1]); /* a count is whole */
    if (k->zero_none) v[n++] = 0;
    return n;
}

/* Values just outside the range, which every reader must refuse. */
static int bad_values(const mb_device_key *k, double *v)
{
    int n = 0;
    if (k->type == MB_DKT_FLAG) { v[n++] = 0.5; v[n++] = 2; v[n++] = -1; return n; }
    v[n++] = k->hi * (1 + 1e-6);
    v[n++] = k->lo > 0 ? (k->zero_none ? k->lo / 2 : k->lo * (1 - 1e-6)) : -1e-3;
    v[n++] = NAN;
    if (k->type == MB_DKT_COUNT) v[n++] = floor(sqrt(k->lo * k->hi)) + 0.5; /* in range, not whole */
    return n;
}

/* Every key, INI: a text key at a value it takes, a number at each trial
 * value; each read back the same, and the bad values refused both by the
 * writer and, as text, by the loader naming the key. */
static void test_ini(void)
{
    for (int i = 0; i < mb_device_key_count(); i++) {
        const mb_device_key *k = mb_device_key_at(i);
        mb_err e;
        if (is_text(k)) {
            mb_device d = base();
            char *p = (char *)&d + k->offset;
            if (k->type == MB_DKT_ENUM) snprintf(p, k->size, "%.*s", (int)strcspn(k->def, "|"), k->def);
            else snprintf(p, k->size, "%s", k->type == MB_DKT_ID ? "a-b_c.d+1" : "some text, 1.5 GB/s");
            mb_device back;
            int rc = ini_round_trip(&d, &back, &e);
            CHECK_EQ_I64(rc, MB_OK);
            CHECK(rc != MB_OK || same_key(&d, &back, k, i));
            if (rc) fprintf(stderr, "  key %s: %s\n", k->key, e.msg);
            continue;
        }
        double v[8], bad[8];
        int nv = trial_values(k, v), nb = bad_values(k, bad);
        int op = k->type == MB_DKT_OPS ? MB_OP_EXP : 0;
        for (int j = 0; j < nv; j++) {
            mb_device d = base();
            *field(&d, k, op) = v[j];
            if (k->write == MB_DKW_GIVEN) d.given[i] = 1;
            mb_device back;
            int rc = ini_round_trip(&d, &back, &e);
            CHECK_EQ_I64(rc, MB_OK);
            if (rc) { fprintf(stderr, "  key %s = %g: %s\n", k->key, v[j], e.msg); continue; }
            CHECK(same_key(&d, &back, k, i));
            /* the write rule: a key not written reads back absent */
            char *text = mb_device_ini_text(&d, &e);
            char key[64];
            if (k->type == MB_DKT_OPS) mb_device_op_key(k, op, key, sizeof key);
            else snprintf(key, sizeof key, "%s", k->key);
            char line[80];
            snprintf(line, sizeof line, "\n%s = ", key);
            CHECK(text && (strstr(text, line) != NULL) == mb_device_key_written(&d, k, op));
            free(text);
        }
        for (int j = 0; j < nb; j++) {
            mb_device d = base();
            *field(&d, k, op) = bad[j];
            CHECK(mb_device_ini_text(&d, &e) == NULL && strstr(e.msg, k->key) != NULL);
            char problem[96];
            CHECK(mb_device_key_problem(k, bad[j], problem, sizeof problem) != NULL);
            if (isnan(bad[j])) continue;
            char key[64], text[512];
            if (k->type == MB_DKT_OPS) mb_device_op_key(k, op, key, sizeof key);
            else snprintf(key, sizeof key, "%s", k->key);
            snprintf(text, sizeof text,
                     "[device]\nname = x\nmem_bandwidth_gbs = 1000\ncache_mb = 40\nfp32_tflops = 20\n"
                     "bf16_tflops = 300\nlaunch_overhead_us = 3\nsource = s\n%s = %.17g\n",
                     key, bad[j]);
            if (!strcmp(key, "mem_bandwidth_gbs") || !strcmp(key, "cache_mb") || !strcmp(key, "fp32_tflops") ||
                !strcmp(key, "bf16_tflops") || !strcmp(key, "launch_overhead_us"))
                continue; /* given twice: another error comes first */
            mb_device back;
            CHECK_EQ_I64(mb_device_load_ini_text(text, "bad.ini", &back, &e), MB_EINPUT);
            CHECK(strstr(e.msg, key) != NULL && strstr(e.msg, "bad.ini:9:") != NULL);
        }
    }
    /* a GIVEN key at 0 reads back given, not absent */
    for (int i = 0; i < mb_device_key_count(); i++) {
        const mb_device_key *k = mb_device_key_at(i);
        if (k->write != MB_DKW_GIVEN) continue;
        mb_device d = base(), back;
        mb_err e;
        mb_device_set(&d, (mb_dk_id)i, 0);
        CHECK(ini_round_trip(&d, &back, &e) == MB_OK && mb_device_given(&back, (mb_dk_id)i));
        d.given[i] = 0;
        CHECK(ini_round_trip(&d, &back, &e) == MB_OK && !mb_device_given(&back, (mb_dk_id)i));
    }
}

/* Every key through `membound devices --device FILE --json`: each key is
 * there, with the spec's value (a GIVEN key not given: null). */
static void test_json(const char *bin)
{
    char dir[] = "/tmp/mb-device-keys-XXXXXX";
    if (!mkdtemp(dir)) { perror("mkdtemp"); CHECK(0); return; }
    mb_device d = base();
    int n = mb_device_key_count();
    for (int i = 0; i < n; i++) { /* every number key at a value of its own */
        const mb_device_key *k = mb_device_key_at(i);
        if (is_text(k)) continue;
        double v[8];
        trial_values(k, v);
        if (k->type == MB_DKT_FLAG) *field(&d, k, 0) = 1;
        else if (k->type == MB_DKT_OPS) *field(&d, k, MB_OP_SIN) = v[2] * 1.25;
        else if (k->need != MB_DKN_OPT) continue; /* the base's */
        else if (k->write != MB_DKW_GIVEN || i % 2) mb_device_set(&d, (mb_dk_id)i, v[2]);
    }
    snprintf(d.measured_at, sizeof d.measured_at, "host 2026-12-06");
    snprintf(d.calibration, sizeof d.calibration, "full");
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s/keys.ini", dir);
    mb_err e;
    CHECK(mb_device_write_ini(&d, path, &e) == MB_OK);
    snprintf(cmd, sizeof cmd, "'%s' devices --device '%s' --json", bin, path);
    FILE *p = popen(cmd, "r");
    json_error_t je;
    json_t *root = p ? json_loadf(p, 0, &je) : NULL;
    CHECK(p && pclose(p) == 0);
    json_t *dev = json_array_get(json_object_get(root, "devices"), 0);
    CHECK(dev != NULL);
    CHECK_EQ_I64(json_object_size(dev), n);
    for (int i = 0; dev && i < n; i++) {
        const mb_device_key *k = mb_device_key_at(i);
        json_t *v = json_object_get(dev, k->key);
        int ok = v != NULL;
        if (ok && is_text(k)) ok = json_is_string(v) && !strcmp(json_string_value(v), mb_device_str(&d, k));
        else if (ok && k->type == MB_DKT_OPS)
            ok = json_is_object(v) && json_object_size(v) == 1 &&
                 fabs(json_number_value(json_object_get(v, "sin")) - mb_device_num(&d, k, MB_OP_SIN)) <=
                     1e-9 * mb_device_num(&d, k, MB_OP_SIN);
        else if (ok && k->write == MB_DKW_GIVEN && !d.given[i]) ok = json_is_null(v);
        else if (ok) ok = json_is_number(v) && fabs(json_number_value(v) - mb_device_num(&d, k, 0)) <=
                                                 1e-9 * fabs(mb_device_num(&d, k, 0));
        CHECK(ok);
        if (!ok) fprintf(stderr, "  JSON key %s: wrong or missing\n", k->key);
    }
    json_decref(root);
    unlink(path);
    rmdir(dir);
}

/* mb_device_at_rates moves each key as its scale says and no other. */
static void test_rates(void)
{
    mb_device d = base(), out;
    for (int i = 0; i < mb_device_key_count(); i++) {
        const mb_device_key *k = mb_device_key_at(i);
        if (k->type == MB_DKT_NUM || k->type == MB_DKT_COUNT) *field(&d, k, 0) = 3;
        if (k->type == MB_DKT_OPS) *field(&d, k, MB_OP_ADD) = 3;
    }
    mb_device_at_rates(&d, 0.5, 4, &out);
    for (int i = 0; i < mb_device_key_count(); i++) {
        const mb_device_key *k = mb_device_key_at(i);
        if (k->type != MB_DKT_NUM && k->type != MB_DKT_COUNT && k->type != MB_DKT_OPS) continue;
        int op = k->type == MB_DKT_OPS ? MB_OP_ADD : 0;
        if (k->type == MB_DKT_COUNT) CHECK(k->scale == MB_DKS_NONE); /* scaling makes no count */
        double want = k->scale == MB_DKS_BW ? 1.5 : k->scale == MB_DKS_CORE ? 12 : k->scale == MB_DKS_PER_CORE ? 0.75 : 3;
        CHECK(mb_device_num(&out, k, op) == want);
    }
}

/* Lookup by key, op families included; the table's columns consistent. */
static void test_table(void)
{
    int op = -1;
    CHECK(mb_device_key_find("op_exp_compiled_geps", &op) == mb_device_key_at(MB_DK_op_compiled_geps) &&
          op == MB_OP_EXP);
    CHECK(mb_device_key_find("kernel_floor_us", NULL) == mb_device_key_at(MB_DK_kernel_floor_us));
    CHECK(mb_device_key_find("no_such_key", NULL) == NULL);
    CHECK(mb_device_key_at(mb_device_key_count()) == NULL && mb_device_key_at(-1) == NULL);
    for (int i = 0; i < mb_device_key_count(); i++) {
        const mb_device_key *k = mb_device_key_at(i);
        CHECK(k->doc[0] != '\0' && k->source[0] != '\0');
        if (is_text(k)) CHECK(k->size > 1);
        else if (k->type != MB_DKT_FLAG) CHECK(k->lo <= k->hi && (k->lo > 0 || !k->zero_none));
        /* a key the loader requires is written always */
        if (k->need != MB_DKN_OPT) CHECK(k->write == MB_DKW_ALWAYS);
    }
}

int main(void)
{
    const char *bin = getenv("MB_BIN");
    test_table();
    test_ini();
    test_rates();
    if (bin) test_json(bin);
    else {
        fprintf(stderr, "MB_BIN unset: the JSON leg not run\n");
        CHECK(0);
    }
    return mb_test_done();
}
