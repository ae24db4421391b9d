/* device_keys.c — the device keys as rows (device_keys.def), and what every
 * reader of a key shares: lookup, value, range check, write rule, rates.
 * Does not parse or write INI text (device_ini.c) or hold devices
 * (device_table.c). */
#include "model_int.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MB_DK(key, type, size, need, write, lo, hi, zero, scale, unit, cal, def, source, doc)            \
    {#key, MB_DKT_##type, offsetof(mb_device, key), sizeof(((mb_device *)0)->key), MB_DKN_##need,           \
     MB_DKW_##write, lo, hi, zero, MB_DKS_##scale, unit, MB_DK_##cal, def, source, doc},
static const mb_device_key keys[] = {
#include "device_keys.def"
};
#undef MB_DK

#define N_KEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(N_KEYS == MB_DK_COUNT, "one row per key id");

int mb_device_key_count(void) { return N_KEYS; }

const mb_device_key *mb_device_key_at(int i) { return i >= 0 && i < N_KEYS ? &keys[i] : NULL; }

int mb_device_op_key(const mb_device_key *k, int op, char *buf, size_t size)
{
    const char *n = mb_op_name((mb_op)op);
    if (k->type != MB_DKT_OPS || op < 0 || op >= MB_OP_COUNT || !n[0] || !strcmp(n, "?")) return 0;
    /* "op_geps" -> op_<name>_geps; "op_compiled_geps" -> op_<name>_compiled_geps */
    int w = snprintf(buf, size, "op_%s%s", n, k->key + 2);
    return w > 0 && (size_t)w < size;
}

const mb_device_key *mb_device_key_find(const char *name, int *op_out)
{
    for (int i = 0; i < N_KEYS; i++) {
        if (keys[i].type != MB_DKT_OPS) {
            if (!strcmp(keys[i].key, name)) return &keys[i];
            continue;
        }
        char k[64];
        for (int op = 0; op < MB_OP_COUNT; op++)
            if (mb_device_op_key(&keys[i], op, k, sizeof k) && !strcmp(k, name)) {
                if (op_out) *op_out = op;
                return &keys[i];
            }
    }
    return NULL;
}

double mb_device_num(const mb_device *d, const mb_device_key *k, int op)
{
    const double *p = (const double *)((const char *)d + k->offset);
    if (k->type == MB_DKT_OPS) return op >= 0 && op < MB_OP_COUNT ? p[op] : 0;
    return k->type == MB_DKT_NUM || k->type == MB_DKT_COUNT || k->type == MB_DKT_FLAG ? *p : 0;
}

const char *mb_device_str(const mb_device *d, const mb_device_key *k)
{
    return (const char *)d + k->offset;
}

void mb_device_set(mb_device *d, mb_dk_id id, double v)
{
    const mb_device_key *k = &keys[id];
    assert(k->type == MB_DKT_NUM || k->type == MB_DKT_COUNT || k->type == MB_DKT_FLAG);
    *(double *)((char *)d + k->offset) = v;
    d->given[id] = 1;
}

const char *mb_device_key_problem(const mb_device_key *k, double v, char *buf, size_t size)
{
    if (!isfinite(v)) return "must be a finite number";
    if (k->type == MB_DKT_FLAG) return v == 0 || v == 1 ? NULL : "must be 0 or 1";
    if (k->type == MB_DKT_COUNT && v != floor(v)) return "must be a whole number (a count)";
    if (v >= k->lo && v <= k->hi) return NULL;
    if (k->zero_none && v == 0) return NULL;
    snprintf(buf, size, "must be %sin [%g, %g]", k->zero_none ? "0 (none) or " : "", k->lo, k->hi);
    return buf;
}

int mb_device_key_written(const mb_device *d, const mb_device_key *k, int op)
{
    if (k->write == MB_DKW_ALWAYS) return 1;
    if (k->write == MB_DKW_GIVEN) return d->given[k - keys] != 0;
    if (k->type == MB_DKT_STR || k->type == MB_DKT_ID || k->type == MB_DKT_ENUM)
        return mb_device_str(d, k)[0] != '\0';
    return mb_device_num(d, k, op) != 0;
}

void mb_device_at_rates(const mb_device *d, double bandwidth_factor, double op_factor, mb_device *out)
{
    *out = *d;
    for (int i = 0; i < N_KEYS; i++) {
        const mb_device_key *k = &keys[i];
        if (k->scale == MB_DKS_NONE || (k->type != MB_DKT_NUM && k->type != MB_DKT_OPS)) continue;
        if (k->scale == MB_DKS_PER_CORE && !(op_factor > 0)) continue;
        double f = k->scale == MB_DKS_BW ? bandwidth_factor : k->scale == MB_DKS_CORE ? op_factor : 1 / op_factor;
        double *p = (double *)((char *)out + k->offset);
        for (int j = 0; j < (k->type == MB_DKT_OPS ? MB_OP_COUNT : 1); j++) p[j] *= f;
    }
}
