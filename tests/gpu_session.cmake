# scripts/gpu-session.sh: the archive, log and summary survive a missing GPU,
# a failed calibration and a kill (no GPU needed).
add_test(NAME gpu_session_archive COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_session.sh)
set_tests_properties(gpu_session_archive PROPERTIES TIMEOUT 300
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
# scripts/gpu-pack.sh (a growing file, two packs at once, a file too large,
# SIGTERM), gpu-validate.sh's sweep order and budget against a stand-in
# membound, and its summary's count_check criterion (no GPU needed).
add_test(NAME gpu_session_scripts COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/gpu_scripts.sh)
set_tests_properties(gpu_session_scripts PROPERTIES TIMEOUT 300 ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR}")
