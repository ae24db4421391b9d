# kernels/: per-element math, executors against the float64 reference.
if(TARGET mb_kernels)
  mb_test(kernels_ops SOURCES kernels_ops.c LIBS mb_kernels)
  mb_test(kernels_exec SOURCES kernels_exec.c LIBS mb_kernels)
  mb_test(kernels_rows SOURCES kernels_rows.c LIBS mb_kernels)
  # the backward of row operations: rules, plans, executors, finite differences
  mb_test(kernels_rows_bwd SOURCES kernels_rows_bwd.c LIBS mb_kernels)
  # casts, dtypes, nograd inputs, whole-tensor sums, named dimensions on the executors
  mb_test(kernels_lang SOURCES kernels_lang.c LIBS mb_kernels)
  # the check faithful to f32: overflow and ill-conditioning inaccurate, mutants failed
  mb_test(kernels_accuracy SOURCES kernels_accuracy.c LIBS mb_kernels)
  # GEMMs through OpenBLAS and their float64 check (a wrong transpose caught);
  # a build that found OpenBLAS must load it
  mb_test(kernels_gemm SOURCES kernels_gemm.c LIBS mb_kernels)
  get_property(have_openblas GLOBAL PROPERTY MB_HAVE_OPENBLAS)
  if(have_openblas)
    target_compile_definitions(kernels_gemm PRIVATE MB_TEST_HAVE_OPENBLAS=1)
  endif()
  # the transformer MLP (GPT-2, Llama), eager and fused, against float64; a
  # wrong epilogue caught
  mb_test(kernels_mlp SOURCES kernels_mlp.c LIBS mb_kernels)
  # attention on the CPU, both plans, against float64 and finite differences;
  # the checks catch a wrong scale, a wrong mask, a missing online rescale
  mb_test(kernels_attn SOURCES kernels_attn.c LIBS mb_kernels)
  # compiled fused kernels: each distinct kernel is built by the C compiler once
  mb_test(kernels_jit SOURCES kernels_jit.c LIBS mb_kernels)
  set_tests_properties(kernels_jit PROPERTIES TIMEOUT 600)
  mb_test_timing(kernels_jit) # a hung compiler killed at its 0.5 s deadline, within 2.5 s
  # compiled row kernels: one pass, passes re-read, online sums, against float64
  mb_test(kernels_jit_rows SOURCES kernels_jit_rows.c LIBS mb_kernels)
  set_tests_properties(kernels_jit_rows PROPERTIES TIMEOUT 600)
endif()
# every row of model/op_table.h through every form it claims (tests/op_table.c)
if(TARGET mb_measure)
  if(TARGET mb_kernels_cuda)
    mb_test(op_table SOURCES op_table.c LIBS mb_calibrate mb_kernels_cuda)
    target_compile_definitions(op_table PRIVATE MB_TEST_HAVE_CUDA=1)
  else()
    mb_test(op_table SOURCES op_table.c LIBS mb_calibrate)
  endif()
  set_tests_properties(op_table PROPERTIES TIMEOUT 600)
endif()
