/* cuda_host_check.cu — the row and column evaluators' programs checked on the
 * host, no device needed: the bytes each program loads and stores per
 * element (tests/ptx_traffic.c holds them to the model and to the PTX) and
 * the programs run by the host emulation of their device code
 * (tests/cuda_rows_host.c holds the results to float64). Above the lowering
 * (cuda_rows.cu, cuda_cols.cu), the evaluators (rows_eval.cu) and the
 * implementation choice (cuda_plan.cu), which call nothing here. Host code
 * only; it launches nothing. */
#include "kernels_cuda_int.cuh"

#include <stdlib.h>
#include <string.h>

/* The column evaluator's traffic: each read once, each write once. */
static int col_traffic(const mb_plan *p, int k, mb_shape s, mb_kern_cuda_row_bytes *out, mb_err *err)
{
    mb_col_prog *P = (mb_col_prog *)malloc(sizeof *P);
    if (!P) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = mb_cuda_col_lower(p, k, s, 1, NULL, P, err);
    for (int r = 0; rc == MB_OK && r < P->n_reads; r++) {
        const double eb = (double)mb_dtype_bytes((mb_dtype)P->reads[r].dt);
        if (P->reads[r].shape == MB_ROWT_FULL) out->read_pe += eb, out->full_loads++;
        else if (P->reads[r].shape == MB_ROWT_COL) out->col_pe += eb;
        else if (P->reads[r].shape == MB_ROWT_GCOL) out->grp_pe += eb;
    }
    for (int w = 0; rc == MB_OK && w < P->n_writes; w++)
        if (P->writes[w].shape == MB_ROWT_FULL) out->write_pe += (double)mb_dtype_bytes((mb_dtype)P->writes[w].dt);
    out->passes = 1;
    free(P);
    return rc;
}

extern "C" int mb_kern_cuda_row_traffic(const mb_plan *p, int k, mb_shape s, const mb_device *dev,
                                        mb_kern_cuda_row_bytes *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    mb_kern_cuda_choice c;
    int rc = mb_kern_cuda_choose_shape(p, k, s, dev, MB_KERN_CUDA_NO_HAND, &c, err); /* the evaluator's program */
    if (rc != MB_OK) return rc;
    if (c.impl == MB_KERN_CUDA_COL) return col_traffic(p, k, s, out, err);
    if (c.impl != MB_KERN_CUDA_ROW) return mb_err_set(err, MB_EINPUT, "kernel %d is not a row kernel", k);
    mb_row_prog *P = (mb_row_prog *)malloc(sizeof *P);
    if (!P) return mb_err_set(err, MB_ERUN, "out of memory");
    rc = mb_cuda_row_lower(p, k, s, c.onepass, NULL, P, err);
    for (int r = 0; rc == MB_OK && r < P->n_reads; r++) {
        const mb_row_io *io = &P->reads[r];
        const double eb = (double)mb_dtype_bytes((mb_dtype)io->dt);
        const int loads = P->onepass && io->staged ? (io->mask ? 1 : 0) : __builtin_popcount(io->mask);
        if (io->shape == MB_ROWT_FULL) out->read_pe += eb * loads, out->full_loads += loads;
        else if (io->shape == MB_ROWT_COL) out->col_pe += eb * loads;
        else if (io->shape == MB_ROWT_GCOL) out->grp_pe += eb * loads;
    }
    for (int w = 0; rc == MB_OK && w < P->n_writes; w++)
        if (P->writes[w].shape == MB_ROWT_FULL) out->write_pe += (double)mb_dtype_bytes((mb_dtype)P->writes[w].dt);
    out->passes = P->passes;
    out->onepass = P->onepass;
    free(P);
    return rc;
}

/* Column kernel k of t's plan on the host (cols_eval.cu's code), its rows
 * split for dev's SMs. */
static int col_emulate(const mb_plan *p, int k, mb_kern_tensors *t, const mb_device *dev, mb_err *err)
{
    mb_col_prog *C = (mb_col_prog *)malloc(sizeof *C);
    if (!C) return mb_err_set(err, MB_ERUN, "out of memory");
    const int sms = dev && dev->sm_count >= 1 ? (int)dev->sm_count : 1;
    int rc = mb_cuda_col_lower(p, k, t->shape, sms, t->data, C, err);
    if (rc == MB_OK) {
        C->work = (double *)calloc(1, mb_cuda_col_work_bytes(C) + sizeof(double));
        C->arrived = (unsigned *)calloc((size_t)C->tiles + 1, sizeof(unsigned));
        if (!C->work || !C->arrived || mb_cuda_col_emulate(C) != 0) rc = mb_err_set(err, MB_ERUN, "out of memory");
        free(C->work);
        free(C->arrived);
    }
    free(C);
    return rc;
}

extern "C" int mb_kern_cuda_row_emulate(mb_kern_tensors *t, const mb_device *dev, mb_err *err)
{
    const mb_plan *p = t->plan;
    if (!p->g->has_row_ops) return mb_err_set(err, MB_EINPUT, "%s has no row operations", p->g->name);
    mb_row_prog *P = (mb_row_prog *)malloc(sizeof *P);
    if (!P) return mb_err_set(err, MB_ERUN, "out of memory");
    int rc = MB_OK;
    for (int k = 0; k < p->n_kernels && rc == MB_OK; k++) {
        mb_kern_cuda_choice c;
        rc = mb_kern_cuda_choose_shape(p, k, t->shape, dev, MB_KERN_CUDA_NO_HAND, &c, err); /* the evaluator's program */
        if (rc == MB_OK && c.impl == MB_KERN_CUDA_COL) {
            rc = col_emulate(p, k, t, dev, err);
            continue;
        }
        if (rc == MB_OK) rc = mb_cuda_row_lower(p, k, t->shape, c.onepass, t->data, P, err);
        if (rc == MB_OK && mb_cuda_row_emulate(P, c.warp ? 32 : MB_CUDA_THREADS) != 0)
            rc = mb_err_set(err, MB_ERUN, "out of memory");
    }
    free(P);
    return rc;
}
