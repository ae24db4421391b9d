/* membound_model.h — the model: variant language, graphs, plans, traffic, device
 * specs and roofline time. Needs only libc (and inih for spec files).
 * It does not run anything: kernels/ and measure/ execute what it describes.
 *
 * Status codes: every function that can fail returns MB_OK (0), MB_EINPUT (2,
 * bad input: the message says what and where) or MB_ERUN (1, a failure at run
 * time), and fills the caller's mb_err. Nothing here exits or aborts. */
#ifndef MEMBOUND_MODEL_H
#define MEMBOUND_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MB_OK = 0, MB_ERUN = 1, MB_EINPUT = 2 };

/* One formatted error line, without the "membound: error: " prefix,
 * e.g. "sin2.mb:3:14: expected ')'". */
typedef struct mb_err {
    char msg[4608]; /* room for a full path (PATH_MAX) and the reason */
} mb_err;

/* Formats msg into err (printf-style) and returns code. err may be NULL. */
int mb_err_set(mb_err *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- element types ---------------------------------------------------- */

typedef enum mb_dtype { MB_F32 = 0, MB_BF16, MB_F16, MB_DTYPE_COUNT } mb_dtype;

size_t mb_dtype_bytes(mb_dtype t);           /* 4, 2, 2 */
const char *mb_dtype_name(mb_dtype t);       /* "f32", "bf16", "f16" */
int mb_dtype_parse(const char *s, mb_dtype *out); /* MB_OK or MB_EINPUT */

/* ---- operations ------------------------------------------------------- */

/* Every elementwise operation the graph can hold: MB_OP_INPUT, then one per
 * row of op_table.h (the one list of ops; what each column means is there). */
#include "op_table.h"

#define MB_OP_ENUM_(E, ...) MB_OP_##E,
typedef enum mb_op {
    MB_OP_INPUT = 0, /* a graph input (forward input or incoming gradient) */
    MB_OP_TABLE(MB_OP_ENUM_)
    MB_OP_COUNT
} mb_op;
#undef MB_OP_ENUM_

/* The columns of op_table.h. */
typedef enum mb_op_kind { MB_OPK_INPUT = 0, MB_OPK_MAP, MB_OPK_LIBRARY, MB_OPK_REDUCTION, MB_OPK_COLUMN } mb_op_kind;
typedef enum mb_op_spell { MB_SPELL_NONE = 0, MB_SPELL_CALL, MB_SPELL_OPERATOR } mb_op_spell;
typedef enum mb_op_cost_class { MB_COST_ARITH = 0, MB_COST_SFU } mb_op_cost_class;
typedef enum mb_op_deriv {
    MB_DER_NONE = 0, MB_DER_CODE, MB_DER_G_OP_X, MB_DER_G_OP_Y, MB_DER_G_Y, MB_DER_G_DIV_X, MB_DER_PASS
} mb_op_deriv;
enum { MB_SAVES_NONE = 0, MB_SAVES_X = 1, MB_SAVES_Y = 2, MB_SAVES_XY = 3 };
enum { MB_OPF_VEC = 1, MB_OPF_JIT = 2, MB_OPF_POSITIVE = 4, MB_OPF_POW = 8, MB_OPF_ROW = 16 };
/* 1 when op is a row operation (op_table.h's MB_OPF_ROW). */
#define MB_OP_IS_ROW(op) ((mb_op_info_of(op)->flags & MB_OPF_ROW) != 0)
/* 1 when op reduces over the rows (op_table.h's MB_OPK_COLUMN: colsum). */
#define MB_OP_IS_COLUMN(op) (mb_op_info_of(op)->kind == MB_OPK_COLUMN)
typedef enum mb_op_mag { MB_MAG_VALUE = 0, MB_MAG_SUM, MB_MAG_PROD, MB_MAG_QUOT, MB_MAG_PASS } mb_op_mag;

/* Cost of one element of an op, for the compute side of the roofline:
 * fp32 arithmetic flops and special-function (SFU/MUFU) ops. For POW the
 * cost depends on the exponent; see mb_node_cost. */
typedef struct mb_op_cost {
    double flops;
    double sfu_ops;
} mb_op_cost;

/* One row of op_table.h (vform as text: the name of its vec_ops.h macro,
 * "MB_V_NONE" for none). */
typedef struct mb_op_info {
    const char *name;
    int arity;
    mb_op_kind kind;
    mb_op_spell spell;
    mb_op_cost cost;
    mb_op_cost_class cls;
    mb_op_deriv der;
    mb_op dop;
    int saves;
    const char *vform;
    unsigned flags;
    int call_weight;
    const char *probe_pre, *probe_post;
    mb_op_mag mag;
    const char *bwd_kernel; /* PyTorch's fused backward kernel, NULL: composite */
} mb_op_info;

/* The row of op (MB_OP_INPUT's for INPUT and for an op out of range). */
const mb_op_info *mb_op_info_of(mb_op op);
const char *mb_op_name(mb_op op);  /* "add", "sin", ...; "?" out of range */
int mb_op_arity(mb_op op);         /* 0 for INPUT, 1 or 2 */

/* The op spelled name(x) in the language (MB_SPELL_CALL), into *out: MB_OK, or
 * MB_EINPUT when no function has that name. */
int mb_op_parse_call(const char *name, mb_op *out);

/* The language's functions, space-separated in table order, into buf (always
 * terminated); returns the length it needed, as snprintf. */
size_t mb_op_call_list(char *buf, size_t size);

/* The function spelled closest to name (at most two edits away, at most half
 * of name changed), or NULL. */
const char *mb_op_closest_call(const char *name);

/* ---- graphs ----------------------------------------------------------- */

#define MB_MAX_IO 16
#define MB_NAME_MAX 64

/* One tensor-valued operation. Operand i is node arg[i], or the scalar
 * scalar[i] when arg[i] < 0. The forward nodes [0, n_forward) and the
 * backward nodes after them are stored in evaluation order; a recompute
 * plan's graph appends clones after them, so execute a plan by its
 * kernels' node lists. */
typedef struct mb_node {
    mb_op op;
    int arg[2];
    double scalar[2];
    mb_dtype dtype;     /* storage type of the tensor this node produces */
    int is_backward;    /* 1 for nodes made by autodiff */
    int origin;         /* backward nodes: the forward node whose derivative
                           they compute (one eager kernel each), or -1 for a
                           gradient accumulation (its own eager kernel);
                           recomputed clones: the node they copy; else -1 */
    int line, col;      /* source position (forward nodes), 0 if none */
    char name[MB_NAME_MAX]; /* user's name, "grad_y", ... or "" */
    unsigned char shape; /* mb_shape_class of the tensor (mb_graph_set_rank) */
    unsigned char decl;  /* inputs: 1 + the mb_shape_class declared, 0 none
                            (the graph's full shape) */
    signed char dim;     /* reductions, softmax: the dimension written (-1, 1, 0) */
    unsigned char keepdim; /* reductions: 1 keeps the reduced dimension */
    unsigned char joins; /* 1: evaluated in the eager kernel of the node before
                            it (layer_norm's bias add, as F.layer_norm's kernel) */
    double eps;          /* layer_norm, rms_norm: added to the variance */
    unsigned char scalar_cols; /* 1: the scalar operand (scalar[1]) is the row
                            length, cols (n at rank 1): mean's backward divides
                            by it (autodiff.c); executors read it at their shape */
    unsigned char gamma_beta; /* backward nodes of a norm's weight and bias
                            gradients (autodiff.c): 1, the eager plan runs them
                            in a kernel of their own after the op's fused
                            backward kernel, as PyTorch's GammaBetaBackward */
} mb_node;

/* The shape of a tensor, relative to the graph's shape: FULL is [n] (1-D)
 * or [rows, cols] (2-D); ROW [rows, 1] (a reduction with keepdim=True; [1]
 * in 1-D); ROWV [rows] (keepdim=False in 2-D); COL [cols] (a weight);
 * SCALAR a 0-d tensor (a 1-D reduction with keepdim=False). */
typedef enum mb_shape_class {
    MB_SHC_FULL = 0, MB_SHC_ROW, MB_SHC_ROWV, MB_SHC_COL, MB_SHC_SCALAR, MB_SHC_COUNT
} mb_shape_class;

/* A size: rank 1, n = cols elements (rows = 1); or rank 2, rows x cols. */
typedef struct mb_shape {
    int rank;
    int64_t rows, cols;
} mb_shape;

/* Parses "16777216", "2^24", "16M" (rank 1) or "ROWSxCOLS" with each side
 * in that syntax ("4096x1024", "2^12x2^12"; rank 2). rows x cols must be in
 * [1, MB_N_MAX]. MB_EINPUT with the reason otherwise. */
int mb_shape_parse(const char *s, mb_shape *out, mb_err *err);
/* "4096x1024" (rank 2) or "16777216" (rank 1) into buf. */
void mb_shape_format(mb_shape s, char *buf, size_t size);
/* Elements of the shape: rows x cols. */
int64_t mb_shape_elems(mb_shape s);
/* The rank-1 shape of n elements. */
mb_shape mb_shape_1d(int64_t n);
/* "[rows, cols]", "[rows, 1]", "[rows]", "[cols]", "[]" or "[n]" for rank. */
const char *mb_shape_class_text(mb_shape_class c, int rank);

typedef struct mb_graph {
    char name[MB_NAME_MAX];
    char path[512];          /* file it came from, or "<expr>" */
    mb_node *nodes;
    int n_nodes, cap_nodes;
    int n_forward;           /* nodes [0, n_forward) are the forward graph */
    int inputs[MB_MAX_IO], n_inputs;     /* forward inputs */
    int outputs[MB_MAX_IO], n_outputs;   /* forward outputs */
    int has_backward;
    int grad_outputs[MB_MAX_IO];  /* incoming gradient of each output (inputs) */
    int grad_inputs[MB_MAX_IO];   /* gradient of each input (graph results) */
    int64_t default_n;       /* "size" directive, 0 if none */
    char warning[400];       /* the parse's first warning, "file:line:col: ...",
                                "" if none (callers print it) */
    int n_warnings;          /* how many there were */
    int name_line, name_col; /* the 'name' directive's position, 0 if none */
    int rank;                /* 1 (every tensor [n]) or 2 ([rows, cols]) */
    int rank_declared;       /* 1: an input's [..] or a 'shape' line fixed it */
    mb_shape default_shape;  /* "shape" directive (rank 2), rank 0 if none */
    int has_row_ops;         /* 1: a reduction or a row library op is in it,
                                or a tensor broadcast over rows or columns at
                                rank 2 (the row executors run it) */
} mb_graph;

/* Re-derives g's tensor shapes for rank 1 or 2 (a 1-D variant measured at
 * ROWSxCOLS: its reductions then run over rows). MB_EINPUT with
 * "file:line:col: ..." when a tensor does not broadcast at that rank, or
 * when g declares 2-D inputs and rank is 1 ("give --shape ROWSxCOLS"). */
int mb_graph_set_rank(mb_graph *g, int rank, mb_err *err);

/* Elements of tensor node i of g at shape s (a row statistic has rows, a
 * weight cols, a scalar 1). */
int64_t mb_tensor_elems_at(const mb_graph *g, int i, mb_shape s);


/* Parses a variant text. filename is used in error messages.
 * default_dtype types inputs written without one. On success *out is a new
 * graph (caller frees with mb_graph_free), with autodiff applied when the
 * text says "backward". On error returns MB_EINPUT with "file:line:col: ...". */
int mb_parse_variant(const char *text, const char *filename,
                     mb_dtype default_dtype, mb_graph **out, mb_err *err);

/* Parses one --expr string ("y = ..." or several ';'-separated assignments):
 * free names become inputs of dtype, the last assignment is the output. */
int mb_parse_expr(const char *expr, mb_dtype dtype, mb_graph **out, mb_err *err);

/* Loads a built-in variant by name, or a variant file by path (anything
 * containing '/' or ending in ".mb"). Unknown names list the known ones. */
int mb_variant_load(const char *name_or_path, mb_dtype dtype, mb_graph **out,
                    mb_err *err);

/* Directory holding the built-in variants: the one set with
 * mb_variant_set_dir, else share/membound/variants beside the running
 * binary's folder, else the installed share directory. */
const char *mb_variant_dir(void);

/* Sets that directory (copied; NULL or "": the default search). The CLI
 * passes $MEMBOUND_VARIANTS; the library reads no environment variable. */
void mb_variant_set_dir(const char *dir);

/* Fills names (sorted) with the built-in variants; returns their count
 * (may exceed max, in which case only max are written). */
int mb_variant_list(char names[][MB_NAME_MAX], int max);

void mb_graph_free(mb_graph *g);
/* A copy of g (caller frees with mb_graph_free), NULL when out of memory. */
mb_graph *mb_graph_clone(const mb_graph *g);

/* Per-element cost of node i (POW depends on its exponent). */
mb_op_cost mb_node_cost(const mb_graph *g, int i);

/* ---- plans ------------------------------------------------------------ */

typedef enum mb_plan_kind {
    MB_PLAN_EAGER = 0, /* one kernel per op, as PyTorch eager (and autograd) */
    MB_PLAN_FUSED,     /* the whole forward graph in one kernel */
    MB_PLAN_STORE,     /* backward: fused forward saving every saved tensor */
    MB_PLAN_RECOMPUTE, /* backward: fused forward saving inputs only */
    MB_PLAN_OPTIMAL,   /* backward: fused forward saving the set of least
                          traffic, found as a minimum cut (needs igraph) */
    MB_PLAN_ONLINE,    /* fused, with softmax's max and sum in one pass
                          (online softmax, Milakov & Gimelshein 2018) */
    MB_PLAN_COUNT
} mb_plan_kind;

const char *mb_plan_name(mb_plan_kind k);
int mb_plan_parse(const char *s, mb_plan_kind *out);
/* 1 if the graph supports plan k: eager and fused without backward;
 * eager, store, recompute and (in a build with igraph) optimal with backward. */
int mb_plan_supported(const mb_graph *g, mb_plan_kind k);

/* One kernel: the nodes it evaluates (in order), the tensors it reads from
 * memory and the tensors it writes, by the traffic rule of the design. */
typedef struct mb_kernel {
    char name[MB_NAME_MAX];
    int *nodes, n_nodes;
    int *reads, n_reads;    /* node ids, each distinct, in first-use order */
    int *writes, n_writes;  /* node ids, each distinct */
    int is_backward;
    double flops_per_elem, sfu_per_elem;
    /* Row operations (model/passes.c): a kernel whose row does not fit on
     * chip makes passes passes over each row (1 without row ops), and reads
     * reads[r] in read_passes[r] of them; one that fits keeps
     * live_bytes_per_col x cols bytes of each row on chip and reads once. */
    int passes;
    int *read_passes;          /* n_reads entries */
    double live_bytes_per_col;
    /* What the row executor runs in each pass (kernels/rows_cpu.c), per
     * node of nodes[]: eval_mask, the passes its per-element value is
     * evaluated in (bit p: pass p); stat_pass, the pass a reduction
     * accumulates in or a library row op's first statistics pass (-1: an
     * elementwise node); online, 1 for a sum folded beside its amax. */
    int *eval_mask, *stat_pass;
    unsigned char *online;
} mb_kernel;

/* The eager kernel of a norm's weight and bias gradients (PyTorch's
 * GammaBetaBackwardCUDAKernel), after the op's fused backward kernel. */
#define MB_KERNEL_GAMMA_BETA "gamma_beta_backward"

/* A plan owns a copy of the graph: recompute appends clones of forward
 * nodes, which its backward kernel evaluates instead of reading them. */
typedef struct mb_plan {
    mb_plan_kind kind;
    mb_graph *g;
    mb_kernel *kernels;
    int n_kernels;
    int *saved, n_saved;  /* tensors kept from forward to backward */
    int *results, n_results; /* tensors the caller gets back: forward outputs,
                                then (backward) input gradients */
} mb_plan;

/* Builds plan k for graph g (g is copied; the caller keeps g). Returns
 * MB_EINPUT, naming the valid plans, when g does not support k. */
int mb_plan_build(const mb_graph *g, mb_plan_kind k, mb_plan **out, mb_err *err);
void mb_plan_free(mb_plan *p);

/* ---- devices ---------------------------------------------------------- */

/* A device spec. Units are in the names; cache_mb is MiB (2^20 B), as drivers
 * report L2 sizes. Optional figures are 0 when unknown. */
typedef struct mb_device {
    char name[MB_NAME_MAX];       /* id used by --device */
    char label[128];
    char kind[8];                 /* "gpu" or "cpu" */
    double mem_bandwidth_gbs;     /* datasheet peak, 1e9 B/s */
    double measured_bandwidth_gbs;/* optional: a measured streaming figure, the
                                     attainable bandwidth the model uses:
                                     bytes read + bytes written (no write-
                                     allocate read) over the kernel's time */
    double cited_bandwidth_gbs;   /* optional: the figure the row's source cites
                                     for it, same counting (a test holds the
                                     measured figure within 5% of it) */
    double read_bandwidth_gbs;    /* optional: measured read-only streaming, one
                                     stream: a kernel's reads take at least
                                     read bytes / this */
    double read_stream_penalty;   /* optional: read bandwidth falls to
                                     read_bandwidth / (1 + this x (k - 1))
                                     for a kernel reading k tensors */
    double read_stream_gain;      /* optional: or rises, x (1 + this x (k - 1)):
                                     more streams keep more loads in flight
                                     (calibrate sets one of the two) */
    double cache_bandwidth_gbs;   /* optional: streaming bandwidth of the
                                     last-level cache; every byte a kernel
                                     moves passes through it, so a kernel takes
                                     at least its bytes / this (0: unknown) */
    double stream_at_cache_size;  /* optional, 0 or 1 (with write_allocate): 1
                                     when the executors stream a written tensor
                                     of the cache's size too, not only larger
                                     ones (calibrate writes it; older specs
                                     lack it, and their CSVs model as before) */
    double write_allocate;        /* optional, 0 or 1: 1 when a store to a line
                                     the cache does not hold reads it first
                                     (a CPU's write-back cache under ordinary
                                     stores): such writes cost a DRAM read,
                                     and dirty lines still cached when the
                                     plan ends are written back after it.
                                     Tensors larger than the cache are taken
                                     as written with non-temporal stores, as
                                     the CPU executors do. 0: GPUs */
    double serial_fraction;       /* optional, 0..1: share of the shorter of
                                     memory and compute time that does not
                                     overlap the longer (0 on GPUs) */
    double serial_fraction_compiled; /* optional, 0..1: the same for a kernel
                                     run as compiled code (mb_kernel_compiled)
                                     that reads one tensor and writes one:
                                     calibrate's compiled probe of that shape;
                                     used only where has_serial_fraction_compiled */
    int has_serial_fraction_compiled; /* 1: the spec gives the key; 0: such
                                     kernels take serial_fraction */
    double serial_fraction_rows;  /* optional, 0..1: the same for a row kernel
                                     run compiled in one pass (kernels/jit_rows.c):
                                     calibrate's y = log_softmax(x, -1) probe
                                     over rows in the core's L1 (with l1_kib:
                                     such rows; without, every row);
                                     used only where has_serial_fraction_rows */
    int has_serial_fraction_rows; /* 1: the spec gives the key; 0: such kernels
                                     add memory and compute (1) */
    double serial_fraction_rows_l2; /* optional, 0..1: the same for rows that
                                     exceed l1_kib (the probe over rows of
                                     twice the L1); used only where
                                     has_serial_fraction_rows_l2 and l1_kib */
    int has_serial_fraction_rows_l2;
    double l1_kib;                /* optional (CPU): a core's L1 data cache,
                                     KiB; 0: unknown */
    double onchip_kib;            /* optional: on-chip storage one SM (GPU:
                                     shared memory plus registers) or one core
                                     (CPU: its private cache level) holds a
                                     row in, KiB; 0: unknown (row kernels then
                                     always make every pass) */
    double sm_count;              /* optional: SMs / CUs (GPU) or cores the
                                     executors use (CPU): rows in flight */
    double max_threads_per_sm;    /* optional: resident threads per SM / CU
                                     (GPU; 0: unknown, and on a CPU): each
                                     holds this / MB_ROW_BLOCK_THREADS row
                                     blocks (mb_device_rows_in_flight) */
    double cache_mb;              /* last-level cache on the memory path: the
                                     nominal size, as drivers report it */
    double cache_resident_mb;     /* optional: what of it stays resident while
                                     streaming (the knee of an L2 sweep, below
                                     nominal on split-L2 parts); the
                                     cache-aware traffic model uses it when > 0,
                                     else cache_mb (mb_device_cache_bytes) */
    double fp32_tflops;
    double bf16_tflops;           /* dense tensor */
    double sfu_tops;              /* optional: special-function ops, 1e12/s */
    double launch_overhead_us;    /* per kernel (per pass on a CPU): on a GPU
                                     the interval of eager back-to-back
                                     launches from one host thread on one
                                     stream, as PyTorch eager issues them */
    double graph_launch_overhead_us; /* optional: the same interval when the
                                     kernels are replayed as one CUDA/HIP
                                     graph; informational, no model uses it */
    double mem_gb;                /* device memory, 1e9 B */
    double op_geps[MB_OP_COUNT];  /* optional: measured elements/s of each op,
                                     1e9/s (written by calibrate) */
    double sincos_geps;           /* optional: measured elements/s of a sin and
                                     a cos of one operand evaluated together
                                     (INI key op_sincos_geps), 1e9/s */
    double op_compiled_geps[MB_OP_COUNT]; /* optional: the same in a kernel
                                     run as compiled code (mb_kernel_compiled:
                                     operands in registers, no tile traffic),
                                     INI "op_<name>_compiled_geps"; 0: cost
                                     such kernels at op_geps */
    double exp_nonpos_gain;       /* optional: softmax's exp(x - max) in a
                                     compiled row kernel (an argument never
                                     positive: kernels/vec_ops.h's
                                     MB_V_EXP_NONPOS) over the compiled exp's
                                     rate, measured by calibrate; 0: 1 */
    double sincos_compiled_geps;  /* optional: the sincos pair in compiled code */
    double host_ref_copy_gbs;     /* optional: the host reference as calibrate
                                     timed it (measure/hostref.c: a copy that
                                     follows a copy of the bandwidth arrays),
                                     1e9 B/s; measure times it again beside its
                                     rows to tell the host's drift (0: none) */
    double host_ref_sin_geps;     /* optional: the same for its op probes, sin */
    double host_ref_sigmoid_geps; /* and sigmoid over L1-resident tiles (op rates
                                     do not drift together), 1e9 elements/s */
    double first_touch_gbs;       /* optional: bytes/s at which a fresh
                                     allocation's pages are faulted in (zeroed
                                     and mapped) by the first write, over what
                                     writing preallocated memory takes, the
                                     free (munmap) included; 1e9 B/s. Used only
                                     with a framework's allocation behaviour
                                     (mb_estimate_plan_fw); 0: unknown */
    double alloc_mmap_threshold_mb; /* optional: allocations of this size
                                     (MiB) or more are fresh mappings every
                                     time; smaller ones reuse freed heap memory. 0:
                                     glibc's ceiling for its dynamic threshold,
                                     32 MiB on 64-bit (MB_ALLOC_MMAP_MAX_MB) */
    char source[768];             /* where the numbers come from */
    char measured_at[256];        /* optional: host and date of calibration */
    char calibration[16];         /* optional: how calibrate measured it: "full",
                                     "quick" (a smoke test's), "fallback" (quick,
                                     after full ones were refused); "" unsaid */
    int measured_derived;         /* 1: measured_bandwidth_gbs was derived
                                     (mb_device_derive_bandwidth), not measured;
                                     never read from or written to a spec */
} mb_device;

int mb_device_count(void);
const mb_device *mb_device_at(int i);   /* the built-in table, i < count */

/* Looks up a table id, or loads an INI file when id_or_path names one
 * (contains '/' or ends in ".ini"). An unknown id suggests close names. */
int mb_device_find(const char *id_or_path, mb_device *out, mb_err *err);

/* Loads / writes an INI spec ([device] section, keys as the struct fields;
 * op_geps as "op_<name>_geps"). Missing required keys or malformed numbers
 * are errors naming the file, line and key. Writing goes through a
 * temporary file and a rename: nothing half-written is left. */
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

/* d at other rates, into out: the memory bandwidths (datasheet, measured,
 * read) times bandwidth_factor; what the cores do (every op rate, the
 * FLOP/SFU peaks, the cache's bandwidth) times op_factor and the launch
 * overheads (a CPU pass's fork and join; eager and graph) over it; cache
 * size and overlap as they are. What measure models a row at when a shared host ran at those
 * shares of the calibrated figures (MB_MEAS_CSV_HOST_MODEL_COLUMN): sixteen
 * runs on the 2-vCPU guest, 614 of 676 rows within 25% with the cache and
 * launch following the copy ratio and as they were, 617 following the op
 * ratio (a host that takes the cores away slows a cache-resident copy too). */
void mb_device_at_rates(const mb_device *d, double bandwidth_factor, double op_factor, mb_device *out);

/* ---- the measurement CSV contract ------------------------------------- */

/* Columns of a measurement CSV (design.md, "Measurement records"), in order,
 * as X(name, required): measure/ writes them, reports/ reads them (required
 * ones must be present), tests use both. Per-kernel files add "kernel". */
#define MB_MEAS_CSV_COLUMNS(X)                                                        \
    X(device, 1) X(backend, 1) X(variant, 1) X(plan, 1) X(dtype, 1) X(n, 1)           \
    X(kernels, 0) X(reps, 0) X(time_s_median, 1) X(time_s_min, 0) X(time_s_p90, 0)   \
    X(time_cv, 0) X(model_time_s, 0) X(read_bytes, 0) X(write_bytes, 0)              \
    X(model_dram_read_bytes, 0) X(model_dram_write_bytes, 0) X(dram_read_bytes, 0)   \
    X(dram_write_bytes, 0) X(counters, 0) X(max_rel_err, 0) X(verified, 1)
#define MB_MEAS_CSV_KERNEL_COLUMN "kernel"
/* After the contract's columns (and "kernel"): timed samples during which the
 * process did not get its cores. A row with more than a fifth of its samples
 * contended is noisy: measure warns, report shows it and does not fit it. */
#define MB_MEAS_CSV_CONTENDED_COLUMN "contended"
/* In long long: 5 x a contended count near INT_MAX overflows int (csv.c clamps
 * the columns to 1e9, and 5e9 does not fit). */
#define MB_MEAS_NOISY(contended, reps) \
    ((contended) > 0 && (reps) > 0 && 5LL * (long long)(contended) > (long long)(reps))
/* Then the host reference timed beside the row's samples (CPU rows measured
 * against a calibrated spec; empty otherwise): its copy bandwidth, that
 * bandwidth's ratio to the calibrated copy bandwidth the model columns
 * assume, and its op rate's (sin, L1-resident) ratio to the calibrated rate.
 * A row with either ratio more than 20% off was measured while the host was
 * not the machine the model describes (a shared host drifts): its model
 * error is off by up to as much. measure warns, report shows it. */
#define MB_MEAS_CSV_HOST_COLUMNS "host_copy_gbs,host_copy_ratio,host_op_ratio"
/* Then the model at the host's rates during the row: the model column's
 * device with its memory bandwidths times host_copy_ratio and what its cores
 * do times host_op_ratio (mb_device_at_rates); empty where a ratio is. A drifted row's model error
 * against this column says what the model got wrong; against model_time_s,
 * what the host and the model did together. */
#define MB_MEAS_CSV_HOST_MODEL_COLUMN "model_host_time_s"
/* Then, when the row's samples fall in two modes (mb_meas_stats), each
 * mode's median and the share of samples in the upper one; empty for one
 * mode. The median is then one mode or the other, and so is its model error:
 * measure warns. */
#define MB_MEAS_CSV_MODES_COLUMNS "time_s_lower_mode,time_s_upper_mode,upper_mode_share"
/* Then, for GPU rows with counted DRAM bytes, the counted bytes against the
 * model's cache-aware ones (measure/count_check.h, mb_meas_count_vs_model):
 * count_err = counted / model - 1, and count_check "ok" (within 3%), "off",
 * or "below 4x L2" (tensors too small to be judged); empty without counts. */
#define MB_MEAS_CSV_COUNT_COLUMNS "count_err,count_check"
/* Then the verdict of the row's checks against the float64 reference: "ok"
 * (within tolerance), "inaccurate" (verified = 1: elements off float64 as
 * far as correct f32 evaluation is, where the input range makes the
 * expression ill-conditioned in f32 or f32 overflows where float64 does
 * not: the math, not the kernel), "failed" (verified = 0), "" unchecked. */
#define MB_MEAS_CSV_ACCURACY_COLUMN "accuracy"
/* The counters column of rows imported from other tools (import/): ncu's
 * counts, each kernel from a flushed cache (ncu --cache-control all, its
 * default: compare them with each kernel's cold count, the traffic rule's),
 * or from the cache as the run left it (--cache-control none); or the
 * PyTorch profiler's kernel times without counts. Their verified = 1 says
 * only that the launches matched the plan: membound checked no output. */
#define MB_MEAS_COUNTERS_NCU "ncu"
#define MB_MEAS_COUNTERS_NCU_WARM "ncu cache-control=none"
#define MB_MEAS_COUNTERS_TORCH "torch-profiler"
#define MB_MEAS_IMPORTED(counters) \
    (!strcmp((counters), MB_MEAS_COUNTERS_NCU) || !strcmp((counters), MB_MEAS_COUNTERS_NCU_WARM) || \
     !strcmp((counters), MB_MEAS_COUNTERS_TORCH))
#define MB_MEAS_HOST_DRIFT_MAX 0.2
#define MB_MEAS_DRIFTED(ratio) ((ratio) > 0 && ((ratio) > 1 + MB_MEAS_HOST_DRIFT_MAX || \
                                                (ratio) < 1 - MB_MEAS_HOST_DRIFT_MAX))
#define MB_MEAS_HOST_DRIFTED(copy_ratio, op_ratio) \
    (MB_MEAS_DRIFTED(copy_ratio) || MB_MEAS_DRIFTED(op_ratio))

/* Last, the texts that make a CSV self-contained (a CSV moved alone still
 * reports): on every row, the text of the row's variant (variant_text: a
 * variant file's; variant_expr: an --expr string; the other one empty), the
 * INI spec of the device the model columns used (device_spec) and the run's
 * provenance (provenance: "key: value" lines: cpu, host, compiler,
 * git_commit, date, settings, backend, model_device, memory; GPU clocks,
 * driver and counters; host_check; one "partial: ..." per row that failed or
 * was not run). Each is one CSV field on the row's line: a newline is
 * written as the two characters \n and a backslash as \\ (carriage
 * returns dropped), then quoted as RFC 4180 says. Before these columns a
 * CSV carried the same texts as '#' lines, "# KEY: line" and
 * "# KEY NAME: line" with the keys below; report reads both forms. */
#define MB_MEAS_PROV_SPEC "device_spec"
#define MB_MEAS_PROV_VARIANT "variant_text"
#define MB_MEAS_PROV_EXPR "variant_expr"
#define MB_MEAS_PROV_LINES "provenance"
#define MB_MEAS_CSV_TEXT_COLUMNS \
    MB_MEAS_PROV_VARIANT "," MB_MEAS_PROV_EXPR "," MB_MEAS_PROV_SPEC "," MB_MEAS_PROV_LINES
/* After the texts: which calibration the row's model columns used (CPU rows
 * against a calibrated spec; empty otherwise): "full" (a calibration that
 * passed every check), "quick" (a smoke test's short one: figures not for
 * the model), "fallback" (not the calibration asked for: a quick one taken
 * after full ones were refused for contention, or the cached one after
 * quick ones were), "stale" (a full one older than MB_MEAS_CALIB_STALE_S). report
 * marks the verdicts of fallback, stale and quick rows. */
#define MB_MEAS_CSV_CALIBRATION_COLUMN "calibration"
#define MB_MEAS_CALIBRATION_MARKS {"full", "quick", "fallback", "stale"}
/* At the very end, after the calibration column: the row's shape, "ROWSxCOLS" for a 2-D row ("" for 1-D);
 * n stays the element count (rows x cols). */
#define MB_MEAS_CSV_SHAPE_COLUMN "shape"

/* ---- traffic and time ------------------------------------------------- */

typedef enum mb_bound { MB_BOUND_MEMORY = 0, MB_BOUND_COMPUTE, MB_BOUND_LAUNCH } mb_bound;
const char *mb_bound_name(mb_bound b);  /* "memory", "compute", "launch" */

typedef struct mb_cost {
    int64_t read_bytes, write_bytes;            /* the lecture's count */
    int64_t dram_read_bytes, dram_write_bytes;  /* cache-aware, cold start */
    double flops, sfu_ops;
    double mem_s, compute_s, launch_s, time_s;  /* time_s = launch + max(mem, compute)
                                                   + serial_fraction x min(mem, compute)
                                                   + alloc_s */
    double alloc_s;          /* first touch of freshly allocated outputs
                                (mb_estimate_plan_fw); 0 without a framework */
    mb_bound bound;
    int passes;      /* passes over each row the kernel makes on this device
                        (1: one pass; row kernels whose row does not fit on
                        chip: mb_kernel.passes); 0 in a plan's total */
    int64_t rows_in_flight; /* passes > 1: rows the device works on at once
                        (mb_device_rows_in_flight); 0 otherwise */
    int rereads_cached; /* passes > 1: 1 when those rows fit the cache, so
                        the passes after the first read it, not DRAM */
} mb_cost;

typedef struct mb_estimate {
    mb_cost total;
    mb_cost *per_kernel;     /* plan->n_kernels entries, owned */
    int n_kernels;
    int64_t saved_bytes;
    double bandwidth_gbs;
    const char *bandwidth_source;  /* "measured" or "datasheet" */
} mb_estimate;

/* Largest n the model accepts: byte counts stay exact in int64. */
#define MB_N_MAX ((int64_t)1 << 44)

/* Traffic and roofline time of plan p at n elements per tensor on device d.
 * out->per_kernel is allocated; free with mb_estimate_free. */
int mb_estimate_plan(const mb_plan *p, int64_t n, const mb_device *d,
                     mb_estimate *out, mb_err *err);
void mb_estimate_free(mb_estimate *e);

/* The same at a shape (rank 2: rows x cols; mb_estimate_plan is rank 1).
 * A kernel with row operations is one pass when a row of what it keeps live
 * fits the device's on-chip storage (mb_device_onchip_bytes), else it reads
 * its row once per pass (the lecture's count counts each); a re-read hits
 * the cache when the rows in flight (mb_device_rows_in_flight) x the row
 * bytes it streams fit. */
int mb_estimate_plan_shape(const mb_plan *p, mb_shape s, const mb_device *d, mb_estimate *out, mb_err *err);

/* Threads of the block that takes one row in the CUDA row kernels a
 * multi-pass row kernel runs as (the row evaluator, kernels/rows_eval.cu,
 * and the per-op row kernels, kernels/rows_op.cu: MB_CUDA_THREADS, which
 * kernels/kernels_cuda_int.cuh holds equal to this). */
#define MB_ROW_BLOCK_THREADS 256

/* Rows a multi-pass row kernel works on at once on d, at most rows (and at
 * least 1): with max_threads_per_sm, sm_count x the row blocks an SM holds
 * by its threads (max_threads_per_sm / MB_ROW_BLOCK_THREADS, at least 1:
 * H100 132 x 8 = 1056), as the CUDA launchers size their grids (their
 * occupancy query also counts registers: docs/limitations.md); without it
 * one row per SM or core (sm_count; a CPU's executor threads each take a
 * row); 1 when d gives neither. */
int64_t mb_device_rows_in_flight(const mb_device *d, int64_t rows);

/* Sets K->passes, read_passes, live_bytes_per_col, eval_mask, stat_pass
 * and online from K's nodes, reads and writes (model/passes.c; online:
 * softmax's max and sum in one pass); plans call it, and the row executor
 * for a node run alone. -1 when out of memory (K's arrays owned by K). */
int mb_kernel_derive_passes(const mb_graph *g, mb_kernel *K, int online);

/* Longest row (columns) kernel K keeps on chip in one pass on d: on-chip
 * bytes / live bytes per column; INT64_MAX when K has one pass anyway, 0
 * when d gives no on-chip size. */
int64_t mb_kernel_onepass_max_cols(const mb_kernel *K, const mb_device *d);

/* What a row kernel's passes use (the one rule kernels/jit_rows.c runs and
 * the model counts). mb_kernel_row_stats_in: 1 when K's node j accumulates
 * statistics in pass p (a reduction in its stat_pass; softmax and
 * log_softmax their max, then their sum, one pass when online; the norms
 * one). mb_kernel_row_stat_operand: the node they read (an online sum of
 * exp(a - amax(a)): a). mb_kernel_row_needs: need[p x n_nodes + j] = 1 when
 * node j's per-element value is used in pass p (written there, read by a
 * statistic or by a value computed there); with keep (one pass: a value
 * computed once, in the first pass of its eval_mask, kept for the later
 * ones, and softmax's exp(x - max) kept from its sum pass), kept[j] = 1 when
 * it is used in a later pass. -1 when a needed value would be neither
 * computed nor kept (keep 0), or out of memory. need: K->passes x
 * K->n_nodes entries, kept: K->n_nodes, the caller's. */
int mb_kernel_row_stats_in(const mb_graph *g, const mb_kernel *K, int j, int p);
int mb_kernel_row_stat_operand(const mb_graph *g, const mb_kernel *K, int j);
int mb_kernel_row_needs(const mb_graph *g, const mb_kernel *K, int keep, char *need, char *kept);

/* Element accesses to the core's cache, per element of a row, that kernel K
 * makes beyond its first pass when run in one pass by the compiled row
 * executor (kernels/jit_rows.c): the reads a later pass loads again, the
 * kept values' stores and loads, [cols] operands' loads in every pass; 0
 * for a kernel of one pass. Passes without the online fold, as that
 * executor runs one pass. -1 when out of memory. */
double mb_kernel_onepass_cache_accesses(const mb_graph *g, const mb_kernel *K);

/* Whose allocation behaviour the time model adds: none (the executors'
 * preallocated buffers, the default) or PyTorch's (every op's output a new
 * tensor from the CPU allocator, malloc; torch.compile's too). */
typedef enum mb_framework { MB_FW_NONE = 0, MB_FW_PYTORCH, MB_FW_COUNT } mb_framework;
const char *mb_framework_name(mb_framework f);          /* "none", "pytorch" */
int mb_framework_parse(const char *s, mb_framework *out); /* MB_OK or MB_EINPUT */

/* glibc's ceiling for its dynamic mmap threshold on 64-bit (malloc.c,
 * DEFAULT_MMAP_THRESHOLD_MAX = 4 x 1 MiB x sizeof(long)). */
#define MB_ALLOC_MMAP_MAX_MB 32.0

/* mb_estimate_plan with framework fw's allocations: with MB_FW_PYTORCH each
 * tensor a kernel writes is a fresh allocation, and one of d's
 * alloc_mmap_threshold_mb or more is a fresh mapping whose first touch costs
 * bytes / first_touch_gbs (alloc_s, added to the kernel's time_s). A device
 * without first_touch_gbs is an error (MB_EINPUT: calibrate measures it);
 * MB_FW_NONE is mb_estimate_plan. */
int mb_estimate_plan_fw(const mb_plan *p, int64_t n, const mb_device *d, mb_framework fw,
                        mb_estimate *out, mb_err *err);

/* Bytes of tensor node i at n elements. */
int64_t mb_tensor_bytes(const mb_graph *g, int i, int64_t n);

/* Reads and writes a compiled CPU kernel may have. */
#define MB_COMPILED_IO_MAX 32

/* 1 when a CPU executor with a C compiler runs kernel K of g as compiled
 * code (kernels/jit_cpu.c), the rule kernels/exec_cpu.c applies: two or more
 * ops evaluated (after common subexpressions and sin/cos pairs), every
 * tensor read and written f32, at most MB_COMPILED_IO_MAX of each, and every
 * op with a compiled form (not relu, abs, step, sign; pow only as x**2 and
 * x**3; finite scalars). A kernel of a graph with row operations
 * (kernels/jit_rows.c, as kernels/rows_cpu.c chooses): a row op or two
 * nodes or more, the same for its tensors and elementwise ops, each row op
 * over a full operand, no column sum. A spec with op_compiled_geps costs
 * such kernels at those rates. */
/* How an executor lowers nodes[0..n) of g (a kernel's nodes, in order), the
 * one rule the model counts and kernels/exec_cpu.c runs: evaluated[j] = 0 for
 * an input, or for a node equal to an earlier one (same op, operands and
 * scalars: evaluated once; common[j] gets that one's index), 2 for the first
 * of a sin and a cos of one operand (one sincos gives both), 3 for its partner
 * (pair[] names each other), else 1. common and pair may be NULL, else -1
 * where none. Returns -1 when out of memory. */
int mb_lower_nodes(const mb_graph *g, const int *nodes, int n, int *common, int *pair,
                   unsigned char *evaluated);
int mb_kernel_compiled(const mb_graph *g, const mb_kernel *K);
/* 1 when elementwise node a has a form in compiled kernels (kernels/jit_cpu.c,
 * jit_rows.c): op_table.h's MB_OPF_JIT, pow by a constant 1, 2 or 3
 * (mb_op_powf's x and products), finite scalars. */
int mb_node_compiles(const mb_node *a);
/* 1 when node v of g is exp(a - amax(a)), softmax written out: its argument
 * is never positive, and compiled row kernels (kernels/jit_rows.c) evaluate
 * it with softmax's exp, which the model costs at the spec's
 * exp_nonpos_gain; library softmax's and online sums' exps are such too. */
int mb_node_exp_nonpos(const mb_graph *g, int v);

/* ---- the optimal recompute plan and the memory-traffic frontier ---------- */

/* 1 when this build has igraph, which the optimal plan and the frontier need;
 * without it they fail with MB_EINPUT saying so. */
int mb_plan_optimal_available(void);

/* What the optimal plan minimises: the lecture's bytes (forward writes plus
 * backward reads), or the roofline time of both kernels on a device. */
typedef enum mb_objective { MB_OBJECTIVE_BYTES = 0, MB_OBJECTIVE_TIME } mb_objective;
const char *mb_objective_name(mb_objective o);          /* "bytes", "time" */
int mb_objective_parse(const char *s, mb_objective *out); /* MB_OK or MB_EINPUT */

/* Builds a plan of the optimal plan's shape (kind MB_PLAN_OPTIMAL): one fused
 * forward kernel that also writes the forward tensors saved[] (node ids
 * < g->n_forward), one fused backward kernel that reads them and recomputes
 * every other forward tensor it needs. A saved tensor the backward does not
 * read is not written. MB_EINPUT when g has no backward, an id is not a
 * forward node, or the backward needs an input that is not saved. */
int mb_plan_build_saving(const mb_graph *g, const int *saved, int n_saved, mb_plan **out,
                         mb_err *err);

/* Builds the optimal plan for g. MB_OBJECTIVE_BYTES: the saved set of least
 * traffic, ties to the least saved bytes, then the least recomputed flops; n
 * and d are not used (may be 0, NULL). MB_OBJECTIVE_TIME: of the minimum
 * cuts that weigh recomputation's compute time against bytes / bandwidth of
 * d (weights 0, 1/16 ... 4096), the plan of least modelled time at n on d.
 * mb_plan_build(g, MB_PLAN_OPTIMAL) is the bytes objective. */
int mb_plan_build_optimal(const mb_graph *g, mb_objective obj, int64_t n, const mb_device *d,
                          mb_plan **out, mb_err *err);
/* The same at a shape (rank 2: a [rows, 1] row statistic costs rows, a full
 * tensor rows x cols; mb_plan_build_optimal plans a 2-D graph at its own
 * 'shape'). */
int mb_plan_build_optimal_shape(const mb_graph *g, mb_objective obj, mb_shape s, const mb_device *d,
                                mb_plan **out, mb_err *err);

/* Flops + SFU ops per element that plan p, built from g, spends evaluating
 * forward tensors again in its backward kernel (0 for store). */
double mb_plan_recompute_ops_pe(const mb_plan *p, const mb_graph *g);

/* One point of the frontier: a saved set, the activation memory it keeps
 * between forward and backward, and the traffic of its plan. */
typedef struct mb_frontier_point {
    int64_t saved_bytes;     /* at n elements: what the plan keeps alive */
    int64_t traffic_bytes;   /* read + write bytes of both kernels at n */
    double recompute_ops_pe; /* flops + SFU ops per element the backward
                                spends recomputing */
    int *saved, n_saved;     /* forward node ids, ascending; owned */
} mb_frontier_point;

typedef struct mb_frontier {
    mb_frontier_point *points; /* by saved_bytes ascending, traffic descending */
    int n_points;
    int64_t n;
} mb_frontier;

/* The memory-traffic frontier of g at n: for a budget B of saved bytes the
 * least traffic is that of the last point with saved_bytes <= B (none below
 * the first point: no smaller set feeds the backward). The points are the
 * vertices of the frontier's lower convex hull, each a minimum cut of
 * traffic + w x saved bytes for some w >= 0 (parametric cuts, found
 * exactly); a budget strictly between two of them may admit a set the hull
 * does not list. out->points is allocated; free with mb_frontier_free. */
int mb_frontier_build(const mb_graph *g, int64_t n, mb_frontier *out, mb_err *err);
/* The same at shape s (points' bytes at s; out->n its elements). */
int mb_frontier_build_shape(const mb_graph *g, mb_shape s, mb_frontier *out, mb_err *err);
void mb_frontier_free(mb_frontier *f);

/* ---- sizes ------------------------------------------------------------ */

/* Parses "16777216", "2^24", "16M", "1G", "64K" (binary K/M/G). n must be in
 * [1, MB_N_MAX]. MB_EINPUT with the reason otherwise. */
int mb_size_parse(const char *s, int64_t *out, mb_err *err);

/* ---- input text files ------------------------------------------------- */

/* Reads the whole of path into *out (malloc'd, NUL-terminated; *len_out gets
 * its length, may be NULL). Only a regular file is read: a directory, FIFO
 * or device is refused before any read, so nothing can block or run
 * forever. MB_EINPUT with "path: ..." when it cannot be opened, is not a
 * regular file or is larger than max_bytes, or (see mb_text_check) holds a
 * NUL byte or invalid UTF-8. */
int mb_text_read(const char *path, size_t max_bytes, char **out, size_t *len_out, mb_err *err);
/* The same from an open descriptor fd (not closed), path naming it in
 * messages. */
int mb_text_read_fd(int fd, const char *path, size_t max_bytes, char **out, size_t *len_out, mb_err *err);

/* MB_OK when text[0..len) is valid UTF-8 without NUL bytes; else MB_EINPUT
 * with "name:line:col: ..." at the first bad byte. */
int mb_text_check(const char *text, size_t len, const char *name, mb_err *err);
/* The same for a piece of a file that starts at line first_line (whole
 * lines: a piece cut after a '\n' splits no UTF-8 sequence). */
int mb_text_check_at(const char *text, size_t len, const char *name, int first_line, mb_err *err);
/* Opens path for reading (*fd_out, to be closed by the caller) with the
 * checks of mb_text_read that need no read: a regular file of at most
 * max_bytes; the same messages. */
int mb_text_open(const char *path, size_t max_bytes, int *fd_out, mb_err *err);

/* ---- CSV reading (model/csvread.c, libcsv: the library mb_csv) --------- */

/* One field of a record: its text (unquoted, NUL-terminated, modifiable
 * until the record callback returns), its length and where it starts. */
typedef struct mb_csv_field {
    char *s;
    size_t len;
    int line, col;  /* 1-based; col counts bytes */
} mb_csv_field;
typedef struct mb_csv_record {
    mb_csv_field *f;
    int n;          /* fields, >= 1 */
    int line;       /* where the record starts */
    int end_col;    /* the column just after its last byte (before the newline) */
} mb_csv_record;
/* raw_line (may be NULL) sees each line that starts a record before the
 * tokenizer does (without its newline, not NUL-terminated) and sets *taken
 * to 1 to keep it out of the CSV ('#' lines, a profiler's own output);
 * record gets each record. Both return MB_OK, or a status (err set) that
 * stops the read. */
typedef struct mb_csv_ops {
    int (*raw_line)(void *ctx, const char *line, size_t len, int line_no, int *taken, mb_err *err);
    int (*record)(void *ctx, mb_csv_record *rec, mb_err *err);
} mb_csv_ops;

/* Reads text[0..len) as CSV (RFC 4180 quoting, strict: a stray quote is an
 * error; spaces around unquoted fields trimmed; blank lines skipped; CR LF
 * or LF line ends; a leading UTF-8 byte order mark skipped), calling ops on
 * ctx. path names the text in messages. Returns MB_OK; MB_EINPUT with
 * "path:line:col: ..." for a malformed or unterminated quoted field; or the
 * first status a callback returned; MB_ERUN when memory runs out. */
int mb_csv_read(const char *text, size_t len, const char *path, const mb_csv_ops *ops, void *ctx,
                mb_err *err);
/* The same for the file at path, read in 1 MiB pieces (memory: a piece, the
 * longest line and one record, whatever the file's size): refused as
 * mb_text_read refuses (not a regular file, more than max_bytes, a NUL byte
 * or invalid UTF-8 at path:line:col: checked piece by piece, so the records
 * before a bad byte have been handed to ops). *lines (may be NULL) gets the
 * file's lines (a last line without its newline counted; 1 when empty). */
int mb_csv_read_file(const char *path, size_t max_bytes, const mb_csv_ops *ops, void *ctx, int *lines,
                     mb_err *err);

/* ---- trusted folders (caches, implicit inputs) -------------------------- */

/* A folder nobody else can change, held open: the rule for every cache and
 * every implicit input (model/trusted_dir.c). */
typedef struct mb_tdir {
    int fd;              /* the folder (O_DIRECTORY), -1 when closed */
    char path[4096];     /* as given, for messages */
} mb_tdir;

/* Opens path (relative: to the working folder), walking it from / one
 * component at a time with O_NOFOLLOW and fstat on each descriptor: every
 * folder on the way must be root's or this user's and not writable by group
 * or others unless sticky (/tmp); the folder itself this user's and writable
 * by nobody else (a folder shared by a group is refused on purpose). A
 * symbolic link on the way is followed only when root or this user owns it.
 * With create, missing folders are made 0700. MB_OK; MB_EINPUT (refused)
 * with one line "PATH not used: why (how to fix it)"; MB_ERUN when it cannot
 * be opened or created. */
int mb_tdir_open(mb_tdir *d, const char *path, int create, mb_err *err);
/* Closes d (and releases its lock); safe on a closed one. */
void mb_tdir_close(mb_tdir *d);
/* Opens the file name (no '/') in d for reading (O_NOFOLLOW) into *fd (the
 * caller closes it): MB_OK when it is this user's regular file writable by
 * nobody else; 1 when there is no such file; MB_EINPUT with "PATH/name not
 * used: why (how to fix it)" for a link, another user's file, one others can
 * write, or one that is not a regular file; MB_ERUN otherwise. */
int mb_tdir_open_file(const mb_tdir *d, const char *name, int *fd, mb_err *err);
/* Writes text[0..len) as d/name, mode 0600, whole or not at all: a temporary
 * in d renamed over name, so a link named name is replaced, never written
 * through. MB_OK or MB_ERUN (nothing replaced). */
int mb_tdir_write_file(const mb_tdir *d, const char *name, const char *text, size_t len, mb_err *err);
/* Takes an exclusive flock on d, waiting up to timeout_s; released by
 * mb_tdir_close (or the process's end: nothing is left behind). MB_OK, or
 * MB_ERUN "PATH is held by another membound run (waited N s)". */
int mb_tdir_lock(mb_tdir *d, double timeout_s, mb_err *err);

/* ---- output files ----------------------------------------------------- */

/* An output file that appears whole or not at all. A regular file (or a new
 * one) is written to a temporary in its folder and renamed over it at commit
 * (unnamed where the file system allows: nothing is left even on SIGKILL;
 * else PATH.tmp.PID, removed on SIGINT/TERM/HUP/PIPE/QUIT); a symbolic link
 * is written through (its target replaced, the link kept); a character
 * device (/dev/null, /dev/stdout) is written directly. */
typedef struct mb_outfile {
    void *fp;            /* FILE *, open for writing */
    char path[4096];     /* the file written: the path given, or a link's target */
    char tmp[4200];      /* named temporary while one exists, else "" */
    int anon;            /* 1: unnamed temporary (O_TMPFILE) until commit */
    int direct;          /* 1: a device, written directly */
    int was_there;       /* path existed at open, as below: a commit replaces only that */
    unsigned long long was_dev, was_ino, was_size;
    long long was_mtime_ns;
} mb_outfile;

/* Opens path for writing as above. Refuses, with MB_EINPUT and before any
 * work is done, a directory, FIFO, socket or block device, a dangling link,
 * and a folder that cannot be written. */
int mb_outfile_open(mb_outfile *o, const char *path, mb_err *err);
/* Flushes, syncs, closes and renames into place; MB_ERUN (nothing replaced,
 * temporary removed) on any write error, a full disk included, and when
 * another run wrote path since it was opened (checked under an flock on its
 * folder, held for the renames only: of two runs writing one output, the
 * second to finish fails with one line instead of losing the first's rows
 * unseen). */
int mb_outfile_commit(mb_outfile *o, mb_err *err);
/* Commits n files together: every file is flushed, synced and closed before
 * the first rename, so a write error anywhere replaces none of them. */
int mb_outfile_commit_all(mb_outfile *const *o, int n, mb_err *err);
void mb_outfile_abort(mb_outfile *o);              /* close and remove temp */
/* MB_OK when none of the n_out outputs is one of the n_in inputs or another
 * of the outputs: the same file (device and inode; through a link or another
 * spelling of its path), or, for an output not there yet, the same folder
 * and name. Else MB_EINPUT, "OUT: is also the input IN: give another
 * output" or "OUT: written twice (also as OUT2)". For checking before any
 * work; an input that is not a file (a built-in name) and a path that
 * cannot be looked up are passed over (mb_outfile_open reports the latter).
 * NULL entries are skipped. */
int mb_outfile_check_distinct(const char *const *outputs, int n_out, const char *const *inputs, int n_in,
                              mb_err *err);
/* Installs SIGINT/TERM/HUP/PIPE/QUIT handlers that remove named temporaries
 * and re-raise the signal; a signal that was ignored at start (nohup) stays
 * ignored. Call once from main. */
void mb_outfile_install_signal_cleanup(void);
/* Those handlers also note the signal (mb_intr_note, mb_child.h), end the
 * child being waited for (mb_child_run) with its group and remove its
 * temporaries, so an interrupted command leaves no child running. And while
 * path is set (not NULL or ""), they remove that folder with what is in it,
 * two levels down (a report's staging folder). NULL stops it. */
void mb_outfile_remove_dir_on_signal(const char *path);

#ifdef __cplusplus
}
#endif
#endif
