# kernels/: per-element math, executors against the float64 reference.
if(TARGET mb_kernels)
  mb_test(kernels_ops SOURCES kernels_ops.c LIBS mb_kernels)
  mb_test(kernels_exec SOURCES kernels_exec.c LIBS mb_kernels)
endif()
