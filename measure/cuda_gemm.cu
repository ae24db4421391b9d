/* cuda_gemm.cu — one GEMM on the GPU through cuBLASLt, timed and checked:
 * C[m,n] = A[m,k] @ B[k,n] (+ bias[n], then ReLU or GELU: cuBLASLt's
 * epilogues), batch strided products, row-major, f32 / bf16 / f16 operands
 * with f32 accumulation (CUBLAS_COMPUTE_32F: f32 without TF32, as PyTorch's
 * default for matmul). Timed with the session's events (mb_meas_gpu_time,
 * the L2 cleaned before each sample) and checked on sampled entries against
 * float64 from the same operands.
 *
 * cuBLASLt is loaded with dlopen on first use, never linked: the library is
 * over 500 MB, and mapped into every command it would fail them all under a
 * ulimit -v of a few hundred MB (tests/report_limits.sh) and slow every start.
 *
 * Row-major through a column-major library: row-major C = A B is column-major
 * C^T = B^T A^T, and a row-major buffer is its transpose in column-major, so
 * the product runs as (n x k) @ (k x m) with the buffers as they are; its D
 * has n rows, which is what CUBLASLT_EPILOGUE_BIAS broadcasts a bias of
 * length n over: a linear layer's bias per output feature. */
#include "kernels_cuda.h"
#include "meas_gemm.h"
#include "meas_run.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#ifndef MB_CUBLASLT_SO
#define MB_CUBLASLT_SO "libcublasLt.so"
#endif

namespace {

struct lt_api {
    int tried, ok;
    char why[400];
    decltype(&cublasLtCreate) create;
    decltype(&cublasLtMatmulDescCreate) desc_create;
    decltype(&cublasLtMatmulDescDestroy) desc_destroy;
    decltype(&cublasLtMatmulDescSetAttribute) desc_set;
    decltype(&cublasLtMatrixLayoutCreate) layout_create;
    decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
    decltype(&cublasLtMatrixLayoutSetAttribute) layout_set;
    decltype(&cublasLtMatmulPreferenceCreate) pref_create;
    decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy;
    decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set;
    decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
    decltype(&cublasLtMatmul) matmul;
    decltype(&cublasLtGetVersion) version;
    cublasLtHandle_t handle;
} lt;

template <typename F> int sym(void *h, const char *name, F *out)
{
    *(void **)out = dlsym(h, name);
    return *out != nullptr;
}

int lt_load(mb_err *err)
{
    if (lt.tried) return lt.ok ? MB_OK : mb_err_set(err, MB_ERUN, "%s", lt.why);
    lt.tried = 1;
    void *h = dlopen(MB_CUBLASLT_SO, RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(lt.why, sizeof lt.why, "cannot load cuBLASLt (%s): %s", MB_CUBLASLT_SO, dlerror());
        return mb_err_set(err, MB_ERUN, "%s", lt.why);
    }
    int all = sym(h, "cublasLtCreate", &lt.create) && sym(h, "cublasLtMatmulDescCreate", &lt.desc_create) &&
              sym(h, "cublasLtMatmulDescDestroy", &lt.desc_destroy) &&
              sym(h, "cublasLtMatmulDescSetAttribute", &lt.desc_set) &&
              sym(h, "cublasLtMatrixLayoutCreate", &lt.layout_create) &&
              sym(h, "cublasLtMatrixLayoutDestroy", &lt.layout_destroy) &&
              sym(h, "cublasLtMatrixLayoutSetAttribute", &lt.layout_set) &&
              sym(h, "cublasLtMatmulPreferenceCreate", &lt.pref_create) &&
              sym(h, "cublasLtMatmulPreferenceDestroy", &lt.pref_destroy) &&
              sym(h, "cublasLtMatmulPreferenceSetAttribute", &lt.pref_set) &&
              sym(h, "cublasLtMatmulAlgoGetHeuristic", &lt.heuristic) && sym(h, "cublasLtMatmul", &lt.matmul) &&
              sym(h, "cublasLtGetVersion", &lt.version);
    if (!all) {
        snprintf(lt.why, sizeof lt.why, "%s lacks a cuBLASLt entry point this build calls", MB_CUBLASLT_SO);
        return mb_err_set(err, MB_ERUN, "%s", lt.why);
    }
    if (lt.create(&lt.handle) != CUBLAS_STATUS_SUCCESS) {
        snprintf(lt.why, sizeof lt.why, "cublasLtCreate failed");
        return mb_err_set(err, MB_ERUN, "%s", lt.why);
    }
    lt.ok = 1;
    return MB_OK;
}

#define LT_TRY(call)                                                                                            \
    do {                                                                                                        \
        cublasStatus_t st_ = (call);                                                                            \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                                     \
            rc = mb_err_set(err, MB_ERUN, "cuBLASLt: %s failed (status %d)", #call, (int)st_);                \
            goto done;                                                                                          \
        }                                                                                                       \
    } while (0)

cudaDataType_t cuda_type(mb_dtype t)
{
    return t == MB_BF16 ? CUDA_R_16BF : t == MB_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* x rounded to dtype t and back (the operand the GPU sees) */
float rounded(float x, mb_dtype t)
{
    if (t == MB_BF16) return __bfloat162float(__float2bfloat16(x));
    if (t == MB_F16) return __half2float(__float2half(x));
    return x;
}

/* Host buffer of count values of dtype t from the floats v (already rounded). */
std::vector<unsigned char> pack(const std::vector<float> &v, mb_dtype t)
{
    size_t es = mb_dtype_bytes(t);
    std::vector<unsigned char> out(v.size() * es);
    for (size_t i = 0; i < v.size(); i++) {
        if (t == MB_BF16) {
            __nv_bfloat16 b = __float2bfloat16(v[i]);
            memcpy(&out[i * es], &b, es);
        } else if (t == MB_F16) {
            __half b = __float2half(v[i]);
            memcpy(&out[i * es], &b, es);
        } else {
            memcpy(&out[i * es], &v[i], es);
        }
    }
    return out;
}

float unpack(const unsigned char *p, mb_dtype t)
{
    if (t == MB_BF16) {
        __nv_bfloat16 b;
        memcpy(&b, p, sizeof b);
        return __bfloat162float(b);
    }
    if (t == MB_F16) {
        __half b;
        memcpy(&b, p, sizeof b);
        return __half2float(b);
    }
    float f;
    memcpy(&f, p, sizeof f);
    return f;
}

double gelu_tanh(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double gelu_erf(double x) { return 0.5 * x * (1 + erf(x / 1.4142135623730951)); }

struct launch {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    const void *a, *b;
    void *c, *ws;
    size_t ws_bytes;
    cudaStream_t stream;
};

int run_once(void *arg, mb_err *err)
{
    launch *L = (launch *)arg;
    const float one = 1.0f, zero = 0.0f;
    /* the column-major problem: (n x k) @ (k x m) with B's buffer first */
    cublasStatus_t st = lt.matmul(lt.handle, L->op, &one, L->b, L->la, L->a, L->lb, &zero, L->c, L->lc, L->c,
                                  L->lc, &L->algo, L->ws, L->ws_bytes, L->stream);
    return st == CUBLAS_STATUS_SUCCESS ? MB_OK : mb_err_set(err, MB_ERUN, "cublasLtMatmul failed (status %d)", (int)st);
}

} // namespace

extern "C" int mb_meas_cuda_gemm(const mb_meas_config *c, const mb_gemm *g, mb_meas_gemm_epilogue epi,
                                 int samples, mb_meas_gemm_result *out, mb_err *err)
{
    memset(out, 0, sizeof *out);
    if (g->m < 1 || g->n < 1 || g->k < 1 || g->batch < 1)
        return mb_err_set(err, MB_EINPUT, "GEMM sizes must be >= 1");
    mb_meas_gpu gpu;
    int rc = mb_meas_gpu_open(c, &gpu, err);
    if (rc) return rc;
    if ((rc = lt_load(err))) return rc;
    const mb_dtype t = g->dtype;
    const size_t es = mb_dtype_bytes(t);
    const int64_t m = g->m, n = g->n, k = g->k, batch = g->batch;
    const int64_t sa = m * k, sb = k * n, sc = m * n; /* elements a product */
    const int bias = epi != MB_MEAS_GEMM_NONE;

    /* operands: uniform in [-1, 1), rounded to the dtype (seeded, the same every run) */
    std::vector<float> ha((size_t)(sa * batch)), hb((size_t)(sb * batch)), hbias(bias ? (size_t)n : 0);
    unsigned long long s = 0x9E3779B97F4A7C15ull;
    auto next = [&s]() {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        return (float)((double)(s >> 11) * (2.0 / 9007199254740992.0) - 1.0);
    };
    for (float &x : ha) x = rounded(next(), t);
    for (float &x : hb) x = rounded(next(), t);
    for (float &x : hbias) x = rounded(next(), t);
    std::vector<unsigned char> pa = pack(ha, t), pb = pack(hb, t), pbias = pack(hbias, t);

    void *da = nullptr, *db = nullptr, *dc = nullptr, *dbias = nullptr, *ws = nullptr;
    const size_t ws_bytes = (size_t)32 << 20;
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulHeuristicResult_t heur;
    int found = 0;
    launch L;
    std::vector<unsigned char> hc;
    if ((rc = mb_meas_gpu_alloc((int64_t)pa.size(), &da, err)) || (rc = mb_meas_gpu_alloc((int64_t)pb.size(), &db, err)) ||
        (rc = mb_meas_gpu_alloc(sc * batch * (int64_t)es, &dc, err)) ||
        (bias && (rc = mb_meas_gpu_alloc((int64_t)pbias.size(), &dbias, err))) ||
        (rc = mb_meas_gpu_alloc((int64_t)ws_bytes, &ws, err)))
        goto done;
    if (cudaMemcpy(da, pa.data(), pa.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(db, pb.data(), pb.size(), cudaMemcpyHostToDevice) != cudaSuccess ||
        (bias && cudaMemcpy(dbias, pbias.data(), pbias.size(), cudaMemcpyHostToDevice) != cudaSuccess)) {
        rc = mb_err_set(err, MB_ERUN, "copying the GEMM's operands to the GPU failed");
        goto done;
    }
    {
        const cudaDataType_t ct = cuda_type(t);
        LT_TRY(lt.desc_create(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasLtEpilogue_t lt_epi = epi == MB_MEAS_GEMM_BIAS        ? CUBLASLT_EPILOGUE_BIAS
                                    : epi == MB_MEAS_GEMM_BIAS_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS
                                    : epi == MB_MEAS_GEMM_BIAS_GELU ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                                    : CUBLASLT_EPILOGUE_DEFAULT;
        LT_TRY(lt.desc_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_epi, sizeof lt_epi));
        if (bias) {
            LT_TRY(lt.desc_set(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
            LT_TRY(lt.desc_set(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &ct, sizeof ct));
        }
        /* column-major: B's buffer is (n x k), ld n; A's (k x m), ld k; C's (n x m), ld n */
        LT_TRY(lt.layout_create(&la, ct, (uint64_t)n, (uint64_t)k, n));
        LT_TRY(lt.layout_create(&lb, ct, (uint64_t)k, (uint64_t)m, k));
        LT_TRY(lt.layout_create(&lc, ct, (uint64_t)n, (uint64_t)m, n));
        if (batch > 1) {
            int32_t bc = (int32_t)batch;
            int64_t ss[3] = {sb, sa, sc};
            cublasLtMatrixLayout_t ls[3] = {la, lb, lc};
            for (int i = 0; i < 3; i++) {
                LT_TRY(lt.layout_set(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
                LT_TRY(lt.layout_set(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &ss[i], sizeof ss[i]));
            }
        }
        LT_TRY(lt.pref_create(&pref));
        LT_TRY(lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
        LT_TRY(lt.heuristic(lt.handle, op, la, lb, lc, lc, pref, 1, &heur, &found));
        if (!found) {
            rc = mb_err_set(err, MB_ERUN, "cuBLASLt has no algorithm for %lldx%lldx%lld %s with epilogue %s",
                            (long long)m, (long long)n, (long long)k, mb_dtype_name(t),
                            mb_meas_gemm_epilogue_name(epi));
            goto done;
        }
    }
    L = launch{op, la, lb, lc, heur.algo, da, db, dc, ws, ws_bytes, (cudaStream_t)gpu.stream};
    if ((rc = mb_meas_gpu_time(c, run_once, &L, samples > 0 ? samples : 20, 1, &out->median_s, err)))
        goto done;
    out->samples = samples > 0 ? samples : 20;
    out->gflops_median = 2.0 * (double)m * (double)n * (double)k * (double)batch / out->median_s / 1e9;

    /* the check: sampled entries (the corners first) against float64 */
    hc.resize((size_t)(sc * batch) * es);
    if (cudaMemcpy(hc.data(), dc, hc.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
        rc = mb_err_set(err, MB_ERUN, "copying the GEMM's result back failed");
        goto done;
    }
    {
        /* accumulation in f32 (k roundings, Higham's gamma_k) and the result's
         * rounding to the dtype, relative to the magnitude that went in */
        const double u_out = t == MB_F32 ? ldexp(1.0, -24) : t == MB_BF16 ? ldexp(1.0, -8) : ldexp(1.0, -11);
        out->tol = (double)(k + 2) * ldexp(1.0, -24) + 2 * u_out;
        double worst[2] = {0, 0}; /* GELU: tanh form, erf form */
        for (int smp = 0; smp < 64; smp++) {
            int64_t bi = smp % batch;
            int64_t i = smp == 0 ? 0 : smp == 1 ? m - 1 : (int64_t)((next() + 1) * 0.5 * (double)m);
            int64_t j = smp == 0 ? 0 : smp == 1 ? n - 1 : (int64_t)((next() + 1) * 0.5 * (double)n);
            i = i < 0 ? 0 : i >= m ? m - 1 : i;
            j = j < 0 ? 0 : j >= n ? n - 1 : j;
            double acc = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                double x = ha[(size_t)(bi * sa + i * k + p)], y = hb[(size_t)(bi * sb + p * n + j)];
                acc += x * y;
                mag += fabs(x * y);
            }
            if (bias) acc += hbias[(size_t)j], mag += fabs(hbias[(size_t)j]);
            double got = unpack(&hc[(size_t)(bi * sc + i * n + j) * es], t);
            double ref[2] = {acc, acc};
            if (epi == MB_MEAS_GEMM_BIAS_RELU) ref[0] = ref[1] = acc > 0 ? acc : 0;
            if (epi == MB_MEAS_GEMM_BIAS_GELU) ref[0] = gelu_tanh(acc), ref[1] = gelu_erf(acc);
            for (int f = 0; f < 2; f++) {
                double e = isfinite(got) ? fabs(got - ref[f]) / (mag > 0 ? mag : 1) : INFINITY;
                if (e > worst[f]) worst[f] = e;
            }
        }
        int f = epi == MB_MEAS_GEMM_BIAS_GELU && worst[1] < worst[0];
        out->max_rel_err = worst[f];
        out->verified = out->max_rel_err <= out->tol;
        snprintf(out->blas, sizeof out->blas, "%.64s (%.16s), cuBLASLt %zu, CUBLAS_COMPUTE_32F, epilogue %s%s",
                 gpu.dev->name, gpu.pci, lt.version(), mb_meas_gemm_epilogue_name(epi),
                 epi == MB_MEAS_GEMM_BIAS_GELU ? (f ? " (matches GELU's erf form)" : " (matches GELU's tanh form)")
                                                        : "");
    }
done:
    if (pref) lt.pref_destroy(pref);
    if (la) lt.layout_destroy(la);
    if (lb) lt.layout_destroy(lb);
    if (lc) lt.layout_destroy(lc);
    if (op) lt.desc_destroy(op);
    mb_meas_gpu_free(da);
    mb_meas_gpu_free(db);
    mb_meas_gpu_free(dc);
    mb_meas_gpu_free(dbias);
    mb_meas_gpu_free(ws);
    return rc;
}
