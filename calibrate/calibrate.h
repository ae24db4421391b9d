/* calibrate.h — the calibrate module: this machine measured into a device
 * spec. The CPU's bandwidths, op rates, overlap, cache knee and first touch
 * (calibrate_cpu), the GPU's through the CUDA backend's probe timing
 * (mb_cal_cuda), the rules that refuse figures that cannot be true, the
 * per-host calibration cache and the choice of the spec a run's model
 * columns use (mb_cal_spec_get: measure, calibrate and demo). Each figure is
 * a key of model/device_keys.def. It does not time plans (measure/) or
 * write the spec's file (the CLI does). */
#ifndef MB_CALIBRATE_H
#define MB_CALIBRATE_H

#include "measure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- calibration ------------------------------------------------------------ */

/* This machine's roofs, measured by mb_cal_cpu. Bandwidths count
 * requested bytes (STREAM's convention: copy = read n + write n), all threads,
 * arrays >= 4x the last-level cache, median of the timed repetitions. */
typedef struct mb_cal_result {
    double copy_gbs;        /* copy with non-temporal stores (what the executors do) */
    double copy_plain_gbs;  /* copy with ordinary stores (pays read-for-ownership) */
    double read_gbs;        /* read-only sum */
    double write_gbs;       /* fill with non-temporal stores */
    double write_plain_gbs; /* fill with ordinary stores */
    double fp32_tflops;     /* FMA peak, register resident */
    double op_geps[MB_OP_COUNT]; /* elements/s of each op through the executor's
                                    tile primitive, L1-resident, all threads, 1e9/s */
    double sincos_geps;     /* the same for a sin and a cos of one operand together */
    double op_compiled_geps[MB_OP_COUNT]; /* the same inside compiled kernels
                                    (chains of one op, L2-resident, less what a
                                    two-op chain costs); 0 where not measured */
    double sincos_compiled_geps; /* the sincos pair inside compiled kernels */
    double exp_nonpos_gain;      /* softmax's exp (compiled row kernels) over the
                                    exp's rate, both through their tile loops */
    double ref_copy_gbs;    /* the host reference (mb_meas_hostref_copy_gbs on the
                               copy arrays) and its op probe, one of each per
                               round: what measure times again beside its rows */
    double ref_op_geps[MB_MEAS_HOSTREF_N_OPS]; /* its op probes: sin, sigmoid */
    int compiled_ops;       /* ops with a compiled rate (0: no compiler, or
                               none came out positive) */
    int compiled_chains;    /* probe chains built compiled, the shallow add
                               chain and sincos included (0: no compiler) */
    double pass_overhead_us;/* one executor pass over a tiny array (fork/join) */
    double cache_gbs;       /* copy, both arrays in the last-level cache (plain stores) */
    double serial_fraction; /* share of the shorter of memory and compute time
                               not hidden by the longer (probe: y = sin(x)),
                               the median of its rounds */
    double serial_fraction_q1, serial_fraction_q3; /* its rounds' quartiles */
    double serial_fraction_compiled; /* the same for a compiled kernel of one read
                               and one write (probe: y = x * sin(x), fused) */
    double serial_fraction_compiled_q1, serial_fraction_compiled_q3;
    int has_serial_fraction_compiled; /* 0: that probe did not run compiled
                               (no compiler): the figures above mean nothing */
    double serial_fraction_rows; /* the same for a compiled row kernel in one
                               pass (probe: y = log_softmax(x, -1), rows of 4096
                               f32, or of half the L1 where that is smaller) */
    double serial_fraction_rows_q1, serial_fraction_rows_q3;
    int has_serial_fraction_rows; /* 0: that probe did not run compiled in one pass */
    double serial_fraction_rows_l2; /* the same over rows of twice the L1 */
    double serial_fraction_rows_l2_q1, serial_fraction_rows_l2_q3;
    int has_serial_fraction_rows_l2;
    int64_t l1_bytes;       /* a core's L1 data cache (sysfs), 0: unknown */
    double read_stream_penalty; /* read bandwidth loss per extra read stream
                                   (probe: y = a + b + c + d, fused) */
    double read_stream_gain;    /* or gain, when the four streams read faster
                                   than one (2-vCPU EPYC guest: ~2x) */
    int64_t llc_bytes;      /* effective: the measured knee, else as reported */
    int64_t llc_reported_bytes; /* what sysfs (else CPUID through sysconf) says */
    int llc_from_knee;      /* 1 when llc_bytes is the measured knee */
    int64_t llc_retained_bytes; /* of a working set W above the knee, the cache
                                   still serves min(1, this / W) (mb_cal_retained_bytes);
                                   0: none measured */
    char llc_desc[256];     /* how llc_bytes was found, with the figures */
    double bw_spread;       /* largest CV over rounds of the bandwidth figures */
    double op_spread;       /* largest CV of the FMA, op, pass and GEMM figures */
    int samples, retaken;   /* probe samples kept; taken again for contention */
    int64_t stream_n;       /* f32 elements per array */
    int threads;
    double mem_gb;          /* physical memory, 1e9 B */
    /* the first-touch probe (touch.c): writing a fresh allocation over
     * writing preallocated memory, per size */
#define MB_CAL_TOUCH_SIZES 6
    double touch_mib[MB_CAL_TOUCH_SIZES];      /* the sizes, MiB */
    double touch_s_per_gb[MB_CAL_TOUCH_SIZES]; /* extra seconds per 1e9 bytes */
    double first_touch_gbs;         /* 1e9 B/s of the sizes above the threshold */
    double alloc_mmap_threshold_mb; /* served from the heap below this */
    double touch_us_per_page;       /* the same cost per page faulted in, microseconds */
    int touch_page_kib;             /* that page: the base page, 2048 with THP 'always' */
    char touch_thp[16];             /* transparent_hugepage/enabled's choice, "" unread */
    int touch_samples, touch_contended; /* fresh-allocation samples; kept though contended */
    /* A probe that measures a device key writes it here (mb_device_set: the
     * key is given) and says how it came out in detail[key] (the summary's
     * line; "" for none): mb_cal_to_device starts from dev, so a new key's
     * probe needs no line anywhere else. */
    mb_device dev;
    char detail[MB_DK_COUNT][160];
} mb_cal_result;

/* Measures the CPU with threads threads (<= 0: all cores). quick != 0 uses
 * fewer repetitions and cache-sized arrays (for tests: numbers not for the
 * model). progress (may be NULL) is called with a short label per step.
 * MB_ERUN when memory runs out. */
int mb_cal_cpu(int threads, int quick, void (*progress)(const char *label),
                          mb_cal_result *out, mb_err *err);

/* The first-touch probe alone (calibrate --first-touch): out's touch_*,
 * first_touch_gbs and alloc_mmap_threshold_mb (the rest zero), threads
 * threads (<= 0: all cores), as mb_cal_cpu measures them.
 * MB_ERUN when memory runs out. */
int mb_cal_first_touch_probe(int threads, int quick, mb_cal_result *out, mb_err *err);

/* Why c's figures cannot be true, into why (one line); 0 when they can:
 * bandwidths that disagree by more than 10x, every op rate within 1.5x of
 * the others, a cheap op in L1 slower than a copy from memory (not when
 * quick), compiled probe chains built without one op rate from them, a
 * non-positive FMA rate. mb_cal_cpu measures again once, then
 * refuses (quick: says so and goes on). */
int mb_cal_implausible(const mb_cal_result *c, int quick, char *why, size_t whysz);

/* Fits serial_fraction, serial_fraction_compiled and read_stream_penalty (or
 * _gain) of c from three probe kernels run through the executor at n
 * elements, cold (outputs streamed): y = sin(x) interpreted (balanced memory
 * and compute: the overlap), y = x * sin(x) fused (the same, compiled), then
 * y = a + b + c + d fused (four read streams, no compute to speak of). Needs
 * the rest of c. */
int mb_cal_overlap(mb_cal_result *c, int64_t n, int reps, mb_err *err);

/* One round of that fit: the share of the shorter of mem_s and compute_s
 * not hidden by the longer in a kernel that took t_s (launch_s of it the
 * pass), clamped to [0, 1]. compute_s is at the op rates calibrate measured;
 * when the host's sin probe ran at ref_geps then and at now_geps beside the
 * kernel (both > 0), it is scaled to the rate of now: a shared host's op
 * rates drift apart from its bandwidth (2-vCPU EPYC guest: two calibrations
 * a minute apart gave 1.00 and 0.00, every round alike, from one op rate for
 * all rounds; 18 calibrations taken both ways: 0.26-0.80 with the probe,
 * 0.24-0.94 without). */
double mb_cal_overlap_beta(double t_s, double launch_s, double mem_s, double compute_s,
                            double ref_geps, double now_geps);

/* The effective last-level cache: warm copy bandwidth over working sets from
 * 1 MiB doubling to 4x reported_bytes (64..512 MiB, the largest taken as
 * DRAM), each size the median of 3 interleaved sweeps, and the largest size
 * still 5/3 as fast as DRAM. *knee_bytes gets that working set, or
 * reported_bytes when no smaller size is 1.5x faster than DRAM; *from_knee
 * says which (1: measured), desc too, with the figures. quick != 0: one
 * sweep. MB_ERUN when memory runs out. */
/* The knee of such a curve: gbs[i] (GB/s) at working sets doubling from
 * i = 0, the last taken as DRAM. The index of the largest size still 5/3 as
 * fast as DRAM, or -1 when no size is 1.5x as fast (no knee). */
int mb_cal_knee_pick(const double *gbs, int np);

/* What the cache still serves of working sets above the knee, in bytes R:
 * at each size W_i = 2^i MiB between the knee (index knee) and the DRAM
 * point (the last), the share h_i of the copy's bytes served at the cache
 * plateau's rate (the fastest) rather than DRAM's (the last):
 * 1/gbs_i = (1 - h_i)/dram + h_i/plateau; R is the least-squares fit of
 * h_i = R / W_i. 0 when no size lies between the two, or no knee. */
double mb_cal_retained_bytes(const double *gbs, int np, int knee);

/* ... and *retained_bytes (mb_cal_retained_bytes over the same sweep; 0
 * without a knee). */
int mb_cal_cache_knee(int64_t reported_bytes, int quick, int64_t *knee_bytes, int *from_knee,
                       int64_t *retained_bytes, char *desc, size_t descsz, mb_err *err);

/* A device spec for the calibrated CPU: name "local-cpu", kind "cpu",
 * mem_bandwidth_gbs = the best of copy/read/write, measured_bandwidth_gbs =
 * copy (non-temporal, what the executors achieve), cache_mb = LLC, fp32 and
 * bf16 rates = the FMA peak (no bf16 units used), per-op rates, per-pass
 * overhead; label, measured_at (host and date) and source filled. */
void mb_cal_to_device(const mb_cal_result *c, const char *command_line, mb_device *d);

/* The figures of a calibration for the user (summary.c). mb_cal_print_keys:
 * one line per number key that backend (MB_DK_CAL_CPU or MB_DK_CAL_CUDA)
 * measures (device_keys.def's cal column), in the table's order: its value
 * and unit, and how its probe got it (detail[key] when detail is not NULL
 * and it has one, else the key's doc); a key only given when measured
 * (device_keys.def's GIVEN) that d lacks says "not measured" and what its
 * absence means. mb_cal_print_cpu: the CPU calibration's summary, the
 * cache's knee, the rounds' spread, those lines, the first touch per size,
 * the op rates and the compiled chains. mb_cal_print_touch: the first-touch
 * probe alone (calibrate --first-touch). */
void mb_cal_print_keys(FILE *fp, const mb_device *d, unsigned backend, const char (*detail)[160]);
void mb_cal_print_cpu(FILE *fp, const mb_device *d, const mb_cal_result *cal, const char *jit_why_not);
void mb_cal_print_touch(FILE *fp, const mb_cal_result *cal);
/* The GPU calibration's: its label, the key lines, the op rates. */
void mb_cal_print_gpu(FILE *fp, const mb_device *d, const char (*detail)[160]);
/* How each of the CPU calibration's figures came out, into c->detail (the
 * probes that set their keys in c->dev say their own); spec.c. */
void mb_cal_details(mb_cal_result *c);

/* calibrate's compiled chain of op (op_table.h's probe_pre and probe_post):
 * "y = " and depth links around x, into buf. Returns 0 when op has no chain
 * (or buf is too small). */
int mb_cal_chain_expr(mb_op op, int depth, char *buf, size_t size);

/* Calibrates the GPU c->cuda_device for `membound calibrate --backend cuda`:
 * fills out as a spec ("local-gpu"): name, SM count and L2 from the driver,
 * peak bandwidth = 2 x memory clock x bus width, measured copy / read / write
 * bandwidth (f32 arrays >= 8x L2, cold, median of 10), GPU-side launch
 * overhead, fp32 FMA peak, per-op rates (register-resident). summary (may be
 * NULL) gets a few lines for the user. MB_ERUN when there is no GPU or a
 * CUDA call fails. */
int mb_cal_cuda(const mb_meas_config *c, mb_device *out, char *summary,
                           size_t summarysz, mb_err *err);

/* ---- calibration cache ------------------------------------------------------ */

/* The version of what calibrate's probes measure, in the cache key: raised
 * when a probe changes its figure, so that a calibration cached by an older
 * binary is not taken for this one's (2: the bandwidth and FMA probes
 * vectorised, row ops no longer timed through the tile primitive; 3:
 * softmax's exp, exp_nonpos_gain; 4: the f32 GEMM, gemm_gflops, a key an
 * older binary would refuse). */
#define MB_CAL_PROBES_VERSION 4

/* This host's cache key: CPU model, thread count, physical memory (MiB) and
 * MB_CAL_PROBES_VERSION. */
void mb_cal_cache_key(int threads, char *key, size_t keysz);

/* Path of the cached calibration for this host with threads threads: in the
 * first writable directory of dir_env ($MEMBOUND_CACHE_DIR), xdg_env/membound
 * ($XDG_CACHE_HOME), home_env/.cache/membound ($HOME), /tmp/membound-cache-UID
 * (NULL or empty ones skipped; missing ones created 0700), file
 * local-cpu-<hash of the key>.ini. A folder another user owns or can write
 * (model/'s trusted-folder rule, mb_tdir_open) is passed over, as is one that
 * cannot be created or written; note (may be NULL) then gets one line for the
 * user (a warning): "calibration cache DIR not used: why (how to fix it)
 * ($XDG_CACHE_HOME); using DIR2". When none is usable: MB_EINPUT with that
 * line when a folder was refused, else MB_ERUN. Never writes the file. */
int mb_cal_cache_locate(const char *dir_env, const char *xdg_env, const char *home_env,
                         int threads, char *path, size_t pathsz, char *note, size_t notesz,
                         mb_err *err);

/* Loads the cached spec at path into d and its age in seconds (file time).
 * The folder and the file are opened by the trusted-folder rule (no link,
 * this user's, writable by nobody else). Returns MB_OK, 1 when there is no
 * such file, MB_EINPUT with "calibration cache PATH not used: why (how to
 * fix it)" for a file or folder refused and for a file that is not a CPU
 * spec, or MB_ERUN. */
int mb_cal_cache_load(const char *path, mb_device *d, double *age_s, mb_err *err);

/* How far this host moved between two calibrations of it: the largest
 * relative change of the copy and read bandwidths and the sin and sigmoid
 * rates (those both give), e.g. 0.3 for 30%; desc (may be NULL) lists those
 * that moved more than MB_MEAS_DRIFT_MAX, "copy bandwidth 49.4 GB/s (was
 * 71.9, -31%), ...", or is empty. */
double mb_cal_moved(const mb_device *before, const mb_device *now, char *desc, size_t descsz);

/* Writes d to path atomically (a temporary in the trusted folder renamed
 * over the file: a link there is replaced, never written through; mode
 * 0600). moved (may be NULL)
 * gets one line when the calibration it replaces is of a host that has
 * moved since (mb_cal_moved over MB_MEAS_DRIFT_MAX): "this host moved
 * since its calibration of 12 min before: copy bandwidth ...", else "". */
int mb_cal_cache_save(const char *path, const mb_device *d, char *moved, size_t movedsz, mb_err *err);

/* How long a run waits for another calibrating this host, s: a full
 * calibration takes ~8-16 s on the idle 2-vCPU guest here, longer when
 * loaded. */
#define MB_CAL_CACHE_WAIT_S 300.0

/* Takes the lock of path's cache folder (an flock on the folder: nothing is
 * left behind) into *held, so that one run at a time calibrates this host
 * and the next one reads what it cached. When another run holds it, calls
 * note (may be NULL; level "note", ctx passed back) once with one line, then
 * waits up to timeout_s. MB_OK (release with mb_tdir_close(held)); MB_EINPUT
 * for a refused folder; MB_ERUN when it waited too long or cannot lock. */
int mb_cal_cache_lock(const char *path, double timeout_s,
                       void (*note)(void *ctx, const char *level, const char *msg), void *ctx,
                       mb_tdir *held, mb_err *err);

/* The cache a calibrating run uses: mb_cal_cache_locate, then
 * mb_cal_cache_lock for up to MB_CAL_CACHE_WAIT_S. MB_OK with path and
 * *held (release with mb_tdir_close); else no cache (*held closed). note
 * (may be NULL) gets one "warning" for a folder passed over or refused, none
 * usable, or a lock waited on too long, and the lock's "note". */
int mb_cal_cache_claim(const char *dir_env, const char *xdg_env, const char *home_env, int threads,
                        char *path, size_t pathsz,
                        void (*note)(void *ctx, const char *level, const char *msg), void *ctx,
                        mb_tdir *held);

/* ---- the model device: which spec a run uses --------------------------------- */

/* Where mb_cal_spec_get found the spec the model columns use. */
typedef enum mb_cal_spec_src {
    MB_CAL_SPEC_NONE = 0,
    MB_CAL_SPEC_GIVEN,      /* req->device: a device table id or an INI file */
    MB_CAL_SPEC_GPU_DEFAULT,/* no device, CUDA backend: MB_CAL_SPEC_GPU_DEFAULT_ID */
    MB_CAL_SPEC_WORKDIR,    /* ./local-cpu.ini, passed the trusted-folder rule */
    MB_CAL_SPEC_CACHED,     /* this host's cached calibration */
    MB_CAL_SPEC_CALIBRATED, /* calibrated in this process */
    MB_CAL_SPEC_SRC_COUNT
} mb_cal_spec_src;

#define MB_CAL_SPEC_GPU_DEFAULT_ID "h100-sxm"
#define MB_CAL_SPEC_WORKDIR_FILE "local-cpu.ini"

/* What a run asks for. Each step is tried in this order until one gives a
 * spec: device; the CUDA backend's default; ./local-cpu.ini (workdir); the
 * cached calibration (cache_read); a calibration of this CPU now, saved in
 * the cache when cache_write. */
typedef struct mb_cal_spec_req {
    const char *device;      /* a table id or an INI path; NULL: the steps below */
    mb_meas_backend backend; /* MB_MEAS_CPU or MB_MEAS_CUDA (resolved, not AUTO) */
    int workdir;             /* 1: ./local-cpu.ini when it is there and trusted */
    int cache_read;          /* 1: this host's cached calibration when there is one */
    int cache_write;         /* 1: a calibration made here is cached */
    int threads;             /* CPU threads (<= 0: all cores): the calibration's
                                and the cache key's */
    int quick;               /* 1: a quick calibration (mb_cal_cpu) */
    const char *command_line;/* the calibrated spec's source line */
    /* the cache folders' variables ($MEMBOUND_CACHE_DIR, $XDG_CACHE_HOME,
     * $HOME): lookup(name) gives a value or NULL (the CLI passes getenv;
     * NULL: none set) */
    char *(*lookup)(const char *name);
    void (*progress)(const char *label); /* per calibration step; may be NULL */
    /* one line per call, as mb_meas_config's note: "note" (dropped when
     * quiet) or "warning"; may be NULL */
    void (*note)(void *ctx, const char *level, const char *msg);
    void *note_ctx;
    int quiet;
    /* A calibration refused for contention (its figures cannot be true, or
     * one is out of a spec file's range) is taken again after backoff_s,
     * then twice that, MB_CAL_TRIES in all; then a full one falls
     * back to a quick one (said; not cached), and a quick one to this host's
     * cached calibration when there is one. backoff_s <= 0:
     * MB_CAL_BACKOFF_S. refuse_first: a test hook, the first that
     * many calibrations are taken as refused (0 in use). */
    double backoff_s;
    int refuse_first;
} mb_cal_spec_req;

#define MB_CAL_TRIES 3
/* 2 s, then 4 s: a contending build step on the 2-vCPU guest here lasts
 * seconds; a longer wait only delays a run the fallback can serve */
#define MB_CAL_BACKOFF_S 2.0
/* A full calibration older than this is marked stale in the rows measured
 * against it (MB_MEAS_CSV_CALIBRATION_COLUMN): the guest here moved by up to
 * 60-90% between calibrations taken minutes apart, and by more over days. */
#define MB_CAL_STALE_S (24 * 3600.0)

/* Which spec was used, for the run's notes and provenance (and a later
 * "calibration used" line). */
typedef struct mb_cal_spec_used {
    mb_cal_spec_src source;
    char path[1024];   /* GIVEN: req->device; WORKDIR: "./local-cpu.ini";
                          CACHED: the cache file; CALIBRATED: the cache file
                          when cached, else "" */
    double age_s;      /* CACHED: the file's age in seconds; else 0 */
    int cached;        /* CALIBRATED: 1 when saved at path */
    double calib_s;    /* CALIBRATED: seconds the calibration took */
    char moved[768];   /* CALIBRATED and cached: how far the host moved since
                          the calibration it replaced (mb_cal_cache_save), or "" */
    mb_cal_result cal; /* CALIBRATED: the figures */
    int refused;       /* CALIBRATED: calibrations refused before this one */
    int fallback;      /* 1: a quick calibration after full ones were refused,
                          or the cached one after quick ones were */
    char refused_why[256]; /* the last refusal's reason (a probe contended,
                          a figure that cannot be true), or "" */
} mb_cal_spec_used;

/* The calibration mark of rows measured against dev as used found it
 * (MB_MEAS_CSV_CALIBRATION_COLUMN): "" for a spec no calibration wrote (a
 * table id, a hand-written file); else the spec's calibration ("full" when
 * unsaid), "stale" for a full one older than MB_CAL_STALE_S at
 * now_epoch_s (its measured_at date, else the cached file's age), and
 * "fallback" when used->fallback. *age_s (may be NULL) gets its age, -1
 * when unknown. */
const char *mb_cal_mark(const mb_cal_spec_used *used, const mb_device *dev,
                                     double now_epoch_s, double *age_s);

/* One line saying which calibration a run uses, whose file and how old:
 * "calibration: full, this host's cached calibration /x/local-cpu-1a.ini (owner alice,
 * measured on vm 2026-12-01T09:47:10Z, 2.3 h old)", "calibration: none (the
 * built-in h100-sxm: datasheet figures)", ... */
void mb_cal_spec_line(const mb_cal_spec_used *used, const mb_device *dev, char *buf, size_t bufsz);

/* The one entry point for the model device of measure, calibrate and demo
 * (through calibrate): the first step of req that gives a spec, into *dev,
 * and which into *used. One run at a time calibrates this host (the cache
 * folder's lock, held while the cache is read and written: another run
 * waits, then reads what that one cached). Notes and warnings go to
 * req->note: a folder or file refused (the trusted-folder rule), the lock
 * waited on, a cache that could not be read or written, "calibrating this
 * CPU first" when cache_read found none. Returns MB_OK; MB_EINPUT for a
 * device that is not found or a spec with an error (./local-cpu.ini's
 * included: "./local-cpu.ini:3:1: ..."); MB_ERUN when the calibration
 * fails. */
int mb_cal_spec_get(const mb_cal_spec_req *req, mb_device *dev, mb_cal_spec_used *used,
                     mb_err *err);

/* One line naming the spec of used for provenance ("local-cpu (cached
 * calibration PATH)", "h100-sxm (default for cuda)", ...). */
void mb_cal_spec_describe(const mb_cal_spec_used *used, const mb_device *dev, char *buf,
                           size_t bufsz);

#ifdef __cplusplus
}
#endif
#endif
