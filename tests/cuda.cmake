# tests/cuda.cmake — the CUDA backend: host-side CUPTI and run-time linking,
# the no-driver fallback, and the kernels on a real GPU (exits 77 without one).
if(TARGET mb_meas_cuda)
  if(MB_HAVE_CUPTI)
    mb_test(cuda_cupti_host SOURCES cuda_cupti_host.c LIBS mb_meas_cuda)
  endif()
  mb_test(cuda_fallback SOURCES cuda_fallback.c LIBS mb_meas_cuda)
  if(MB_HAVE_CUPTI)
    target_compile_definitions(cuda_fallback PRIVATE MB_TEST_HAVE_CUPTI=1)
  endif()
  mb_test(cuda_gpu SOURCES cuda_gpu.c LIBS mb_meas_cuda)
endif()
