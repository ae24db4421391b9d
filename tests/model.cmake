# tests of model/ and of the model commands
mb_test(test_model_lang SOURCES test_model_lang.c LIBS mb_model)
# casts, each tensor's dtype, nograd inputs, sums over every element
mb_test(test_model_dtypes SOURCES test_model_dtypes.c LIBS mb_model)
mb_test(test_model_plans SOURCES test_model_plans.c LIBS mb_model)
mb_test(test_model_rows SOURCES test_model_rows.c LIBS mb_model)
# a framework's allocations (--framework pytorch): first touch above the mmap threshold
mb_test(test_model_framework SOURCES test_model_framework.c LIBS mb_model)
# the time terms around a kernel's work: the event-timed kernel floor
mb_test(test_model_time SOURCES test_model_time.c LIBS mb_model)
# the model of a GEMM: FLOPs, quantization, tiled traffic, the bound, the ridge
mb_test(test_model_gemm SOURCES test_model_gemm.c LIBS mb_model)
# the model of attention, standard against FlashAttention
mb_test(test_model_attention SOURCES test_model_attention.c LIBS mb_model)
# the recompute plan and the planner of its backward
mb_test(test_model_attn_plan SOURCES test_model_attn_plan.c LIBS mb_model)
# the model of a transformer MLP: eager against fused epilogues, backward, checkpointing
mb_test(test_model_mlp SOURCES test_model_mlp.c LIBS mb_model)
mb_test(test_outfile SOURCES test_outfile.c LIBS mb_model)
# the child-process runner: deadlines, process groups, interrupts, temporaries
mb_test(child_run SOURCES child_run.c LIBS mb_model)
# the variants' folder from the caller, never from the environment
mb_test(model_settings SOURCES model_settings.c LIBS mb_model)
add_test(NAME test_cli_model COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_model.sh)
set_tests_properties(test_cli_model PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR}")
# the bad-input catalogue: every command and input kind, one error line, exit
# code, nothing left behind
add_test(NAME test_bad_input COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bad_input.sh)
set_tests_properties(test_bad_input PROPERTIES TIMEOUT 600
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
# the optimal plan and the frontier against brute force; also runs the plan
# on the CPU executors, so it needs kernels/
if(TARGET mb_kernels)
  mb_test(test_model_optimal SOURCES test_model_optimal.c LIBS mb_kernels)
endif()
add_test(NAME test_cli_gemm COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_gemm.sh)
set_tests_properties(test_cli_gemm PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
add_test(NAME test_cli_attention COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_attention.sh)
set_tests_properties(test_cli_attention PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
add_test(NAME test_cli_mlp COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_mlp.sh)
set_tests_properties(test_cli_mlp PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
add_test(NAME test_cli_plan COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_plan.sh)
set_tests_properties(test_cli_plan PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR}")
# goldens: the outputs scripts read held byte for byte (tests/golden/)
add_test(NAME test_golden COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/golden.sh)
set_tests_properties(test_golden PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
# no child hangs a command: a stand-in gnuplot and C compiler that never
# return, at their deadline and under SIGTERM (about 5 s)
if(TARGET mb_reports AND TARGET mb_measure)
  add_test(NAME test_child_deadline COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/child_deadline.sh)
  set_tests_properties(test_child_deadline PROPERTIES TIMEOUT 120
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  mb_test_timing(test_child_deadline) # exits within 2 s of a signal, 8 s of a deadline
endif()
# the one CSV reader (libcsv): quoting, positions, errors
if(TARGET mb_csv)
  mb_test(csv_read SOURCES csv_read.c LIBS mb_csv)
endif()
add_test(NAME test_cli_attention_plan COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_attention_plan.sh)
set_tests_properties(test_cli_attention_plan PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
mb_test(test_model_mmvar SOURCES test_model_mmvar.c LIBS mb_model)
