# tests/ptx.cmake — the CUDA kernels' global traffic and spills from their PTX
# (build/ptx, made by kernels/cuda.cmake's mb_ptx target), against the model:
# no GPU needed, so these run wherever nvcc does (CI included). `ctest -R ptx`.
if(TARGET mb_kernels_cuda)
  get_property(MB_PTX_FILES GLOBAL PROPERTY MB_PTX_FILES)
  get_property(MB_PTXAS_LOGS GLOBAL PROPERTY MB_PTXAS_LOGS)
  # every kernel the built-in variants' plans launch: main-loop bytes per
  # element against the model's; the evaluator's 16-byte loads and stores
  mb_test(ptx_traffic SOURCES ptx_traffic.c LIBS mb_kernels_cuda ARGS ${MB_PTX_FILES})
  add_dependencies(ptx_traffic mb_ptx)
  # the checker must catch a kernel that loads once more than the model says:
  # copy_kernel<0>'s PTX with one extra 16-byte load in its main loop
  add_test(NAME ptx_fixture_extra_load
    COMMAND ptx_traffic --variant copy --dtype f32 ${CMAKE_CURRENT_SOURCE_DIR}/data/ptx_copy_extra_load.ptx)
  set_tests_properties(ptx_fixture_extra_load PROPERTIES
    PASS_REGULAR_EXPRESSION "MISMATCH copy_kernel<0> [^\n]*model 4\\+4 B/elem, PTX 8\\.00\\+4\\.00 B/elem"
    FAIL_REGULAR_EXPRESSION "error:"
    ENVIRONMENT "MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  # and a row kernel whose column loop loads once more than the model's passes:
  # softmax f32 multi-pass (a row a block) with a second load of x in its
  # sum-of-exp loop
  add_test(NAME ptx_fixture_rowop_extra_load
    COMMAND ptx_traffic --variant softmax_op --dtype f32 --plan fused --shape 64x1048576
            ${CMAKE_CURRENT_SOURCE_DIR}/data/ptx_rowop_extra_load.ptx)
  set_tests_properties(ptx_fixture_rowop_extra_load PROPERTIES
    PASS_REGULAR_EXPRESSION "MISMATCH row_op_kernel<0, [0-9]+, 0, 0, 0> [^\n]*model 12\\.00\\+4\\.00 B/elem, PTX \\(column loops\\) 16\\.00\\+4\\.00"
    FAIL_REGULAR_EXPRESSION "error:"
    ENVIRONMENT "MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  # FlashAttention's forward: its global stores through o and lse only, none
  # in the loop over key tiles (the attention matrix never reaches memory)
  add_test(NAME ptx_flash COMMAND ptx_traffic --flash ${MB_PTX_FILES})
  set_tests_properties(ptx_flash PROPERTIES PASS_REGULAR_EXPRESSION "flash_fwd_kernel: [0-9]+ global stores, all through o or lse"
    FAIL_REGULAR_EXPRESSION "MISMATCH|error:")
  # and the check must catch a forward that writes its scores out in that loop
  add_test(NAME ptx_fixture_flash_store
    COMMAND ptx_traffic --flash ${CMAKE_CURRENT_SOURCE_DIR}/data/ptx_flash_store_s.ptx)
  set_tests_properties(ptx_fixture_flash_store PROPERTIES
    PASS_REGULAR_EXPRESSION "MISMATCH flash_fwd_kernel: line [0-9]+: a global store in the loop over key tiles"
    FAIL_REGULAR_EXPRESSION "error:")
  if(MB_PTXAS_LOGS)
    # no kernel spills (ptxas -v of each PTX file, made with the PTX)
    add_test(NAME ptx_spills COMMAND ptx_traffic --spills ${MB_PTXAS_LOGS})
    # the spill check must catch a kernel that spills: 48 live floats held
    # to 32 registers (tests/data/ptx_spill.cu, compiled to ptx_spill.ptx)
    set(spill_log ${CMAKE_BINARY_DIR}/ptx/fixture_spill.ptxas.txt)
    mb_ptxas_log(${CMAKE_CURRENT_SOURCE_DIR}/data/ptx_spill.ptx ${spill_log})
    add_custom_target(ptx_fixtures ALL DEPENDS ${spill_log})
    add_test(NAME ptx_fixture_spill COMMAND ptx_traffic --spills ${spill_log})
    set_tests_properties(ptx_fixture_spill PROPERTIES
      PASS_REGULAR_EXPRESSION "SPILL spill_kernel[^\n]*[1-9][0-9]* bytes spill stores"
      FAIL_REGULAR_EXPRESSION "error:")
  else()
    message(STATUS "membound: no ptxas: ptx_spills not built")
  endif()
endif()
