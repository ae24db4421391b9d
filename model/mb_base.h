/* mb_base.h — what every module of membound shares: status codes, the
 * error line, element types and sizes. Needs only libc. Does not know
 * graphs, plans or devices (mb_graph.h, mb_plan.h, mb_device.h).
 *
 * Status codes: every function that can fail returns MB_OK (0), MB_EINPUT (2,
 * bad input: the message says what and where) or MB_ERUN (1, a failure at run
 * time), and fills the caller's mb_err. Nothing here exits or aborts. */
#ifndef MB_BASE_H
#define MB_BASE_H

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

/* ---- sizes ------------------------------------------------------------ */

/* Largest n the model accepts: byte counts stay exact in int64. */
#define MB_N_MAX ((int64_t)1 << 44)

/* Parses "16777216", "2^24", "16M", "1G", "64K" (binary K/M/G). n must be in
 * [1, MB_N_MAX]. MB_EINPUT with the reason otherwise. */
int mb_size_parse(const char *s, int64_t *out, mb_err *err);

/* The word of list (words separated by ", ") spelled closest to name, at
 * most two edits away and no more than half of name changed ("foo" is not
 * "log"), into buf; 1 when one is, else 0 and buf "". For "did you mean". */
int mb_closest_word(const char *name, const char *list, char *buf, size_t size);

/* s with control characters (C0, DEL, C1) written as \xNN, so that a name
 * from a file cannot drive the terminal it is printed on, into buf (size
 * bytes, always NUL-terminated, cut only between characters). Returns the
 * escaped length: >= size when it was cut. buf may be NULL (size 0) to
 * measure. */
size_t mb_text_escape(const char *s, char *buf, size_t size);
/* The same into a new string (caller frees); NULL when memory runs out. */
char *mb_text_escape_dup(const char *s);

#ifdef __cplusplus
}
#endif
#endif
