# PyTorch as the oracle of the eager plan (tests/torch_oracle.py): the kernels
# PyTorch launches forward and backward, the bytes it saves for backward and
# its results against membound's, for the lecture's variants and seeded random
# expressions. Skips (77) only where python3 cannot import torch; scripts/
# test.sh installs Debian's python3-torch so CI runs it.
if(TARGET mb_kernels)
  add_executable(oracle_eval oracle_eval.c)
  target_compile_options(oracle_eval PRIVATE ${MB_C_WARNINGS})
  target_link_libraries(oracle_eval PRIVATE mb_kernels)
  set_target_properties(oracle_eval PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME torch_oracle COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_oracle.sh)
  set_tests_properties(torch_oracle PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_ORACLE_EVAL=${CMAKE_BINARY_DIR}/tests/oracle_eval;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  # the eager backward of row operations at a 2-D shape: kernels and saved bytes
  add_test(NAME torch_oracle_rows COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_oracle.sh)
  set_tests_properties(torch_oracle_rows PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_ORACLE_SCRIPT=torch_oracle_rows.py;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  # the language's PyTorch forms: casts, dtypes, nograd inputs, whole-tensor sums
  add_test(NAME torch_oracle_lang COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_oracle.sh)
  set_tests_properties(torch_oracle_lang PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_ORACLE_SCRIPT=torch_oracle_lang.py;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# membound mlp's eager plan: PyTorch's kernels forward and backward and its saved bytes
if(TARGET mb_kernels)
  add_test(NAME torch_oracle_mlp COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_oracle.sh)
  set_tests_properties(torch_oracle_mlp PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_ORACLE_SCRIPT=torch_oracle_mlp.py")
endif()
# layers written with '@' (membound mlp --variant): PyTorch's kernels forward and backward and its saved bytes
if(TARGET mb_kernels)
  add_test(NAME torch_oracle_mmvar COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_oracle.sh)
  set_tests_properties(torch_oracle_mmvar PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_ORACLE_SCRIPT=torch_oracle_mmvar.py")
endif()
# membound attention's standard plan: PyTorch's kernels forward and backward and its saved bytes
if(TARGET mb_kernels)
  add_test(NAME torch_oracle_attn COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_oracle.sh)
  set_tests_properties(torch_oracle_attn PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_ORACLE_SCRIPT=torch_oracle_attn.py")
endif()
# membound trace: functions of tests/trace_fns.py traced, against PyTorch's
# kernels and saved bytes and against the built-in variants
if(TARGET mb_kernels)
  add_test(NAME torch_oracle_trace COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_oracle.sh)
  set_tests_properties(torch_oracle_trace PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_ORACLE_SCRIPT=torch_oracle_trace.py;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# python/'s package (membound.model, whatif, plan, trace) against the CLI's
# JSON and errors, and docs/examples/trace_notebook.py run whole; skips (77)
# where no python3 imports pandas (Debian's python3-pandas, as csv_open)
add_test(NAME python_pkg COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/python_pkg.sh)
set_tests_properties(python_pkg PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
# membound trace runs no tracer others could change (tests/trace_trust.sh)
add_test(NAME trace_trust COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/trace_trust.sh)
set_tests_properties(trace_trust PROPERTIES TIMEOUT 60
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR}")
