# kernels/: per-element math, executors against the float64 reference.
if(TARGET mb_kernels)
  mb_test(kernels_ops SOURCES kernels_ops.c LIBS mb_kernels)
  mb_test(kernels_exec SOURCES kernels_exec.c LIBS mb_kernels)
  # compiled fused kernels: each distinct kernel is built by the C compiler once
  mb_test(kernels_jit SOURCES kernels_jit.c LIBS mb_kernels)
  set_tests_properties(kernels_jit PROPERTIES TIMEOUT 600)
endif()
