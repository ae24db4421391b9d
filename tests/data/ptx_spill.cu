/* ptx_spill.cu — source of ptx_spill.ptx, the fixture of test ptx_fixture_spill:
 * 48 floats live at once in a kernel held to 32 registers per thread
 * (__launch_bounds__(1024, 2) on sm_90), so ptxas spills (184 bytes of spill
 * stores with CUDA 13.0). Made with: nvcc -ptx -arch=compute_90 ptx_spill.cu
 * Not part of the build. */
__global__ void __launch_bounds__(1024, 2) spill_kernel(const float4 *__restrict__ x, float *__restrict__ y)
{
    float v[48];
#pragma unroll
    for (int j = 0; j < 12; j++) {
        float4 u = x[threadIdx.x + j * 1024];
        v[4 * j] = u.x;
        v[4 * j + 1] = u.y;
        v[4 * j + 2] = u.z;
        v[4 * j + 3] = u.w;
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 48; j++) s = s * v[47 - j] + v[j];
    y[threadIdx.x] = s;
}
