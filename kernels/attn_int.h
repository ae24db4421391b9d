/* attn_int.h — what attn_cpu.c, attn_ref.c and attn_cuda.cu share and tests may set: the
 * mutant switch that breaks the executors on purpose, so that tests show the
 * float64 check and the finite differences catch each kind of bug. Not for
 * use outside kernels/ and tests/. */
#ifndef MB_ATTN_INT_H
#define MB_ATTN_INT_H

#include "kernels.h"

#ifdef __cplusplus
extern "C" { /* attn_cuda.cu reads the mutant too */
#endif

/* A bug the executors carry while this is set (0 in use). */
typedef enum mb_kern_attn_mutant {
    MB_KERN_ATTN_MUT_NONE = 0,
    MB_KERN_ATTN_MUT_SCALE,     /* scale 1/head_dim instead of 1/sqrt(head_dim), both plans */
    MB_KERN_ATTN_MUT_MASK,      /* the causal mask lets key i + 1 through to row i, both plans */
    MB_KERN_ATTN_MUT_NO_RESCALE /* flash forward: O not rescaled when a row's running max grows */
} mb_kern_attn_mutant;
extern mb_kern_attn_mutant mb_kern_attn_mutant_on;

/* Key j is masked from query row i (causal): j > i (the mutant: j > i + 1). */
static inline int mb_kern_attn_masked(int64_t i, int64_t j)
{
    return j > i + (mb_kern_attn_mutant_on == MB_KERN_ATTN_MUT_MASK ? 1 : 0);
}

/* The scale the executors use (the reference always 1/sqrt(head_dim)). */
double mb_kern_attn_exec_scale(int64_t head_dim);

#ifdef __cplusplus
}
#endif

#endif
