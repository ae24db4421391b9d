/* ptx_flash_store_s.cu — source of ptx_flash_store_s.ptx, the fixture of test
 * ptx_fixture_flash_store: a flash_fwd_kernel of kernels/attn_cuda.cu's
 * parameters that writes each key tile's scores S to o inside its loop over
 * key tiles (what FlashAttention never does), so `ptx_traffic --flash` must
 * report the store. Made with: nvcc -ptx -arch=compute_90 --fmad=false
 * ptx_flash_store_s.cu. Not part of the build. */
__global__ void flash_fwd_kernel(const float *__restrict__ q, const float *__restrict__ k,
                                 const float *__restrict__ v, float *__restrict__ o, float *__restrict__ lse,
                                 long N, int d, int T, float scale, int causal, int shift, int rescale)
{
    const long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= N) return;
    float m = -1e30f, l = 0, acc = 0;
    for (long j = 0; j < N; j++) {
        float s = 0;
        for (int c = 0; c < d; c++) s += q[i * d + c] * k[j * d + c];
        s *= scale;
        o[i * N + j] = s; /* S written out: the mutant */
        const float mn = fmaxf(m, s), a = expf(m - mn), p = expf(s - mn);
        l = l * a + p;
        acc = acc * a + p * v[j * d];
        m = mn;
    }
    o[i * d] = acc / l;
    lse[i] = m + logf(l);
}
