# bench/: the peer scripts' own checks (no GPU, no PyTorch needed).
# bench/torch_gpu.py without PyTorch: its CSV writer (--selftest FILE) and its run
# path against tests/torch_fake, a pure-Python torch stand-in (python3 only).
add_test(NAME test_torch_gpu_selftest COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_gpu_selftest.sh)
set_tests_properties(test_torch_gpu_selftest PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR};MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
# bench/model_error.py (the model-vs-measured table of cpu_validate.sh) on a CSV of its own.
add_test(NAME test_model_error_table COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/model_error_selftest.sh)
set_tests_properties(test_model_error_table PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR};MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
# bench/lecture_demos.py's profile mode (the range names another tool reads),
# bench/torch_env.py's wheel choice and cpu_peers.py's arguments, against
# tests/torch_fake: no PyTorch, nothing downloaded.
add_test(NAME test_lecture_demos_selftest COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/lecture_demos_selftest.sh)
set_tests_properties(test_lecture_demos_selftest PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR};MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
# every script of bench/ and scripts/ runs as the docs write it (executable)
add_test(NAME test_scripts_exec COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts_exec.sh)
set_tests_properties(test_scripts_exec PROPERTIES TIMEOUT 30 ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR}")
# bench/gpu_validate.py against the published GPU validation set
# (bench/validation/): fails when the share of points within 25% falls below
# the level reached (docs/results.md, "The published GPU set").
add_test(NAME test_gpu_validation COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_validation.sh)
set_tests_properties(test_gpu_validation PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR};MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;GPU_VALIDATION_MIN=71")
# bench/torch_host.py: the host term's per-op, per-node and per-Function
# figures from PyTorch on this machine (skips without a torch)
add_test(NAME test_torch_host COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/torch_host_selftest.sh)
set_tests_properties(test_torch_host PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR}")
# bench/cpu_mlp.c at a tiny shape: both MLPs, both plans, forward and backward,
# checked against float64 (the driver bench/cpu_mlp.py runs)
add_test(NAME test_bench_mlp COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bench_mlp.sh)
set_tests_properties(test_bench_mlp PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
  ENVIRONMENT "MB_MLP_BENCH=${CMAKE_BINARY_DIR}/bin/cpu_mlp_bench")
# bench/calib_stability.py against a stand-in membound of known calibrations
add_test(NAME test_calib_stability COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/calib_stability_selftest.sh)
set_tests_properties(test_calib_stability PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR}")
# vec_ops.h's GELU coefficients against bench/gelu_fit.py, which fits them
add_test(NAME test_gelu_fit COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gelu_fit.sh)
set_tests_properties(test_gelu_fit PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR}")
