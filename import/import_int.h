/* import_int.h — shared by import/'s files only: one launch as a reader
 * found it, and the readers' entry points. */
#ifndef MB_IMPORT_INT_H
#define MB_IMPORT_INT_H

#include "import.h"

/* The largest grid or block dimension a launch can have (CUDA's grid x,
 * 2^31 - 1); a larger one in a file is read as unknown (0). */
#define MB_IMP_DIM_MAX 2147483647LL

/* The most bytes one kernel's counter may say: 2^53, where a double stops
 * counting bytes exactly. No plan kernel comes near it: at membound's
 * largest n (2^44 elements, MB_N_MAX) a kernel of 16 f64 operands moves
 * 2^51 B. A larger count is a broken file, refused with its line. */
#define MB_IMP_BYTES_MAX 9007199254740992.0

/* The longest kernel duration read: one hour. A memory-bound kernel over
 * 2^44 f32 elements at 100 GB/s takes 176 s; a longer "duration" is a unit
 * mistake or a broken file, refused with its line. */
#define MB_IMP_TIME_MAX_S 3600.0

/* A number from imported data into *out: the whole of s in decimal form
 * ([-]DIGITS[.DIGITS][e[+-]DIGITS], '-' only when lo < 0; with grouped,
 * thousands separators ',' before each group of three integer digits),
 * finite and in [lo, hi]. MB_EINPUT for anything else (hex, "inf", a unit
 * after it, "2,5", out of range); MB_ERUN when memory runs out. The caller
 * names the field in its message. */
int imp_number(const char *s, int grouped, double lo, double hi, double *out);

/* The longest mark (escaped, with its NUL) and GPU name kept: a longer
 * mark is refused (two long marks cut to one would merge their groups); a
 * longer GPU name is cut, as it always was. */
#define IMP_LABEL_MAX 160
#define IMP_GPU_MAX 128

/* One kernel launch in a profiler's file, in file order. Its strings are
 * interned in its imp_launches (imp_intern): 10^6 launches of a trace name
 * a few kernels, 5 * 10^5 marks and one GPU, and two 288-byte arrays in
 * each launch were 275 MiB of a 1302 MiB import (bench/import_scale.sh);
 * the launch is 88 B now. */
typedef struct imp_launch {
    const char *name;      /* the kernel's name as the tool demangled it,
                              control characters escaped */
    const char *label;     /* the enclosing "membound:..." mark, escaped, "" none */
    const char *gpu;       /* the GPU's name as the file gives it, escaped, "" none */
    int line;              /* the CSV line where it is (0 for a trace) */
    int event;             /* a trace: its index in traceEvents, from 1 (0 for a CSV) */
    double ts_us;          /* a trace: its start on the GPU timeline */
    int grid[3], block[3]; /* 0: unknown; at most MB_IMP_DIM_MAX, an int */
    double time_s;         /* the kernel's duration; NAN: none */
    double dram_read_bytes, dram_write_bytes; /* NAN: none */
} imp_launch;

/* Each distinct string once: an open-addressing table over strings kept in
 * 64 KiB blocks. */
typedef struct imp_strings {
    const char **slot;     /* cap entries, NULL empty */
    size_t cap, n;         /* cap: a power of two */
    char *block;           /* the block being filled; its first bytes point to the previous one */
    size_t block_used, block_cap;
} imp_strings;

typedef struct imp_launches {
    imp_launch *v;
    int n, cap;
    imp_strings strings;   /* what the launches' strings point into */
    char note[512];        /* the reader's one remark for the provenance ("" none) */
} imp_launches;

/* s kept once in L's strings: the kept copy (valid until
 * imp_launches_free), or NULL when memory runs out. */
const char *imp_intern(imp_launches *L, const char *s);

/* Appends a zeroed launch (NAN times and bytes, "" label and gpu, NULL
 * name) and returns it, or NULL when memory runs out. */
imp_launch *imp_launch_add(imp_launches *L);
void imp_launches_free(imp_launches *L);

/* The most bytes an imported file may have (1 GiB): past it the file is
 * refused before any read. */
#define IMP_FILE_MAX_BYTES ((size_t)1 << 30)

/* The readers: the file open on fd (checked as text, mb_text_check_fd, and
 * set past a byte order mark), named path, read from its offset in pieces
 * (never whole) into L. MB_OK, or MB_EINPUT with "path:line:col: ..."
 * (MB_ERUN: memory). */
int imp_read_ncu(int fd, size_t max_bytes, const char *path, imp_launches *L, mb_err *err);
int imp_read_torch_trace(int fd, size_t max_bytes, const char *path, imp_launches *L, mb_err *err);

/* 1 when a launch named name can be plan kernel K of g (PyTorch's eager
 * kernel names by op, Inductor's triton_* names for fused kernels when
 * fused_ok). */
int imp_kernel_matches(const mb_graph *g, const mb_kernel *K, int fused_ok, const char *name);

/* A short form of a demangled name for messages: "sin_kernel_cuda",
 * "triton_poi_fused_add_cos_pow_sin_0", "MulFunctor" (into buf). */
const char *imp_short_name(const char *name, char *buf, size_t size);

#endif
