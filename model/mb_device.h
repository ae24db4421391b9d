/* mb_device.h — device specs: the one table of keys (device_keys.def), the
 * struct made from it, the built-in table, INI spec files, the bandwidth and
 * cache the model takes. Does not model time (mb_traffic.h) or measure a
 * device (calibrate/). */
#ifndef MB_DEVICE_H
#define MB_DEVICE_H

#include "mb_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the device keys (device_keys.def) ---------------------------------- */

/* The types, needs, write rules, scales and measurers of device_keys.def's
 * columns (that file says what each means). */
typedef enum mb_dk_type { MB_DKT_STR = 0, MB_DKT_ID, MB_DKT_ENUM, MB_DKT_NUM, MB_DKT_FLAG, MB_DKT_OPS, MB_DKT_COUNT } mb_dk_type;
typedef enum mb_dk_need { MB_DKN_OPT = 0, MB_DKN_REQ, MB_DKN_REQ_GPU } mb_dk_need;
typedef enum mb_dk_write { MB_DKW_ALWAYS = 0, MB_DKW_NONZERO, MB_DKW_GIVEN } mb_dk_write;
typedef enum mb_dk_scale { MB_DKS_NONE = 0, MB_DKS_BW, MB_DKS_CORE, MB_DKS_PER_CORE } mb_dk_scale;
enum { MB_DK_CAL_NONE = 0, MB_DK_CAL_CPU = 1, MB_DK_CAL_CUDA = 2, MB_DK_CAL_BOTH = 3 };

/* One index per key: MB_DK_<key>, in the table's order. */
#define MB_DK(key, ...) MB_DK_##key,
typedef enum mb_dk_id {
#include "device_keys.def"
    MB_DK_COUNT
} mb_dk_id;
#undef MB_DK

/* One row of device_keys.def, with where its field lies in mb_device. */
typedef struct mb_device_key {
    const char *key;
    mb_dk_type type;
    size_t offset, size;  /* the field: bytes from the struct's start, its bytes */
    mb_dk_need need;
    mb_dk_write write;
    double lo, hi;        /* NUM and OPS: the plausible range, inclusive */
    int zero_none;        /* 1: 0 is accepted below lo and means none */
    mb_dk_scale scale;
    const char *unit;
    unsigned cal;         /* MB_DK_CAL_* bits */
    const char *def, *source, *doc;
} mb_device_key;

/* ---- devices ---------------------------------------------------------- */

/* A device spec: one field per row of device_keys.def (a STR, ID or ENUM
 * key a char array of its size, NUM and FLAG a double, OPS a double per
 * op). Units are in the names; cache_mb is MiB (2^20 B), as drivers report
 * L2 sizes. Optional figures are 0 when unknown. */
#define MB_DK_FIELD_STR(key, size) char key[size];
#define MB_DK_FIELD_ID(key, size) char key[size];
#define MB_DK_FIELD_ENUM(key, size) char key[size];
#define MB_DK_FIELD_NUM(key, size) double key;
#define MB_DK_FIELD_COUNT(key, size) double key;
#define MB_DK_FIELD_FLAG(key, size) double key;
#define MB_DK_FIELD_OPS(key, size) double key[MB_OP_COUNT];
#define MB_DK(key, type, size, ...) MB_DK_FIELD_##type(key, size)
typedef struct mb_device {
#include "device_keys.def"
    unsigned char given[MB_DK_COUNT]; /* 1: the spec gave the key (a file read,
                                     or calibrate measured it): what tells a
                                     GIVEN key's 0 from its absence */
    int measured_derived;         /* 1: measured_bandwidth_gbs was derived
                                     (mb_device_derive_bandwidth), not measured;
                                     never read from or written to a spec */
} mb_device;
#undef MB_DK

/* The keys: count, row i (NULL out of range), the row of a key's name or
 * an op family's key ("op_exp_geps": the op_geps row, *op_out = MB_OP_EXP
 * when op_out is not NULL), NULL when there is none. */
int mb_device_key_count(void);
const mb_device_key *mb_device_key_at(int i);
const mb_device_key *mb_device_key_find(const char *name, int *op_out);

/* The key of op's rate in family k (an OPS row): "op_<name>_geps" or
 * "op_<name>_compiled_geps", into buf; 0 when op has no name. */
int mb_device_op_key(const mb_device_key *k, int op, char *buf, size_t size);

/* NUM and FLAG: the value of k in d; OPS: op's. */
double mb_device_num(const mb_device *d, const mb_device_key *k, int op);
/* The text of a STR, ID or ENUM key. */
const char *mb_device_str(const mb_device *d, const mb_device_key *k);
/* Sets NUM or FLAG key id to v and marks it given. */
void mb_device_set(mb_device *d, mb_dk_id id, double v);

/* 1 when d gave key id (read from a spec or set by calibrate). */
static inline int mb_device_given(const mb_device *d, mb_dk_id id) { return d->given[id] != 0; }

/* Why v cannot be key k's value, into buf (one phrase: "must be in [0, 1]",
 * "must be 0 or 1", "must be a finite number"); NULL when it can. */
const char *mb_device_key_problem(const mb_device_key *k, double v, char *buf, size_t size);

/* 1 when key k is written for d (its write rule: ALWAYS; NONZERO when it is
 * not 0 / ""; GIVEN when d gave it); OPS rows: op's rate. */
int mb_device_key_written(const mb_device *d, const mb_device_key *k, int op);

int mb_device_count(void);
const mb_device *mb_device_at(int i);   /* the built-in table, i < count */

/* Looks up a table id, or loads an INI file when id_or_path names one
 * (contains '/' or ends in ".ini"). An unknown id suggests close names. */
int mb_device_find(const char *id_or_path, mb_device *out, mb_err *err);

/* Loads / writes an INI spec ([device] section, one key a row of
 * device_keys.def; op rates as "op_<name>_geps"). Missing required keys or
 * malformed numbers are errors naming the file, line and key. Writing goes
 * through a temporary file and a rename: nothing half-written is left. */
int mb_device_load_ini(const char *path, mb_device *out, mb_err *err);
int mb_device_write_ini(const mb_device *d, const char *path, mb_err *err);

/* The same spec as text: mb_device_ini_text returns the [device] section
 * mb_device_write_ini would write (malloc'd, caller frees; NULL with err
 * set for a device the loader would refuse); mb_device_load_ini_text
 * parses such text, naming errors "name:line: ...". */
char *mb_device_ini_text(const mb_device *d, mb_err *err);
int mb_device_load_ini_text(const char *text, const char *name, mb_device *out, mb_err *err);

/* Bandwidth the model uses: measured when known, else datasheet. *source is
 * set to "measured", "derived" (measured_derived) or "datasheet" when non-NULL. */
double mb_device_bandwidth_gbs(const mb_device *d, const char **source);

/* The table's rule for a measured bandwidth, applied to a spec that has
 * none: the table's measured_bandwidth_gbs is a streaming benchmark's
 * fraction of the datasheet peak times that peak (device_table.c), so a
 * device of d's kind without a benchmark gets the median of those fractions
 * over the table's rows of that kind that have one, times its datasheet
 * peak. Returns that bandwidth (GB/s), 0 when the table has no such row or d
 * no datasheet figure; *fraction, *lo, *hi (the fractions' range) and *rows
 * (how many) when non-NULL. */
double mb_device_derive_bandwidth(const mb_device *d, double *fraction, double *lo, double *hi, int *rows);

/* Bytes of last-level cache the cache-aware traffic model uses:
 * cache_resident_mb when > 0, else cache_mb, in MiB x 2^20. */
double mb_device_cache_bytes(const mb_device *d);

/* d at other rates, into out, each key as its row's scale says: the memory
 * bandwidths (datasheet, measured, read) times bandwidth_factor; what the
 * cores do (every op rate, the FLOP/SFU peaks, the cache's bandwidth) times
 * op_factor and the launch overheads and kernel floor (a CPU pass's fork
 * and join; eager and graph) over it; cache size and overlap as they are.
 * What measure models a row at when a shared host ran at those
 * shares of the calibrated figures (MB_MEAS_CSV_HOST_MODEL_COLUMN): sixteen
 * runs on the 2-vCPU guest, 614 of 676 rows within 25% with the cache and
 * launch following the copy ratio and as they were, 617 following the op
 * ratio (a host that takes the cores away slows a cache-resident copy too). */
void mb_device_at_rates(const mb_device *d, double bandwidth_factor, double op_factor, mb_device *out);

#ifdef __cplusplus
}
#endif
#endif
