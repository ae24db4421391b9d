/* kernels_int.h — shared by the files of kernels/ only: vectorised tile
 * primitives (vecmath.c). Not a public header. */
#ifndef MB_KERNELS_INT_H
#define MB_KERNELS_INT_H

#include "kernels.h"

/* out[i] = op(a[i], b[i]) for i < len; a == NULL means the scalar as, b == NULL
 * the scalar bs (unary ops ignore b). out may alias a or b. f32 arithmetic,
 * transcendental functions from the vector math library (SLEEF) when built with it. */
void mb_kern_vec_apply(mb_op op, const float *a, float as, const float *b, float bs,
                       float *out, int64_t len);

/* dst[i] = src[i] widened to f32 (src already offset to the first element). */
void mb_kern_vec_load(const void *src, mb_dtype t, float *dst, int64_t len);

/* dst[i] = src[i] rounded to t (nearest even); nt: non-temporal stores when the
 * destination is 64-byte aligned. */
void mb_kern_vec_store(const float *src, void *dst, mb_dtype t, int64_t len, int nt);

/* dst[i] = src[i] (same dtype t), with non-temporal stores when nt. */
void mb_kern_vec_copy(const void *src, void *dst, mb_dtype t, int64_t len, int nt);

/* Fence after non-temporal stores (no-op without them). */
void mb_kern_vec_sfence(void);

#endif
