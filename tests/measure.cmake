# measure/: statistics, records and CSV, the protocol, and the measure and
# calibrate commands end to end.
if(TARGET mb_measure)
  mb_test(measure_stats SOURCES measure_stats.c LIBS mb_calibrate)
  # the protocol over a fake backend (measure/protocol_int.h): warm-up, stop
  # rule, poison and checks, dropped samples, stop flag, notes
  mb_test(measure_protocol SOURCES measure_protocol.c LIBS mb_measure)
  if(TARGET mb_csv) # its CSVs read with the one CSV reader (mb_test_csv.h)
    mb_test(measure_cli SOURCES measure_cli.c LIBS mb_csv mb_kernels)
    mb_test_timing(measure_cli) # quick calibrations, the first-touch probe
  endif()
  # the above-peak rule for a GPU row's counted bytes (no GPU needed)
  mb_test(measure_count_check SOURCES measure_count_check.c LIBS mb_measure)
  # a GEMM and the MLPs timed and verified on the CPU (measure/gemm_run.c)
  mb_test(measure_gemm SOURCES measure_gemm.c LIBS mb_measure)
  # a CPU hog beside a measurement, and the same without it: alone on the
  # machine's cores, so ctest -j does not add contention of its own
  if(TARGET mb_csv)
    mb_test(measure_contention SOURCES measure_contention.c LIBS mb_measure mb_csv)
    mb_test_timing(measure_contention)
  endif()
  # the rules that refuse a calibration whose figures cannot be true
  mb_test(measure_calib_check SOURCES measure_calib_check.c LIBS mb_calibrate)
  # the per-host calibration cache, in its own MEMBOUND_CACHE_DIR
  mb_test(measure_cache SOURCES measure_cache.c LIBS mb_calibrate)
  mb_test_timing(measure_cache) # a measure within 20 s, a calibration started
  # the one entry point for the model device (mb_cal_spec_get): each source
  # in its order, which one was used, the cache from the request's lookup
  mb_test(measure_spec SOURCES measure_spec.c LIBS mb_calibrate)
  # quick calibrations in-process (never refused for contention): not a timing test
  # admission, the row warnings and their formats, without running a row
  mb_test(measure_policy SOURCES measure_policy.c LIBS mb_calibrate)
endif()
# SIGTERM / SIGINT at random moments of a run at 2^25-2^26: acted on within
# a second, nothing half-written (about 15 s; alone, so the latency is ours)
if(TARGET mb_measure)
  add_test(NAME measure_interrupt COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/measure_interrupt.sh)
  set_tests_properties(measure_interrupt PROPERTIES TIMEOUT 180
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  mb_test_timing(measure_interrupt)
endif()
# what a run says: the calibration line, copy measured once, the warning
# summary, the calibration fallback (the CLI's test hook), the err% sign
add_test(NAME measure_runs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/measure_runs.sh)
set_tests_properties(measure_runs PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
# a quick calibration, the fallback (never refused for contention): not a timing test
# 2-D rows of one n at different shapes: measured each, the note and the table name the shapes
add_test(NAME measure_shapes COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/measure_shapes.sh)
set_tests_properties(measure_shapes PROPERTIES TIMEOUT 300
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
# membound attention --measure: both plans run on this CPU, checked, beside the model
add_test(NAME cli_attention_measure COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_attention_measure.sh)
set_tests_properties(cli_attention_measure PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
# membound mlp --measure: eager and fused run on this CPU, checked, beside the model
add_test(NAME cli_mlp_measure COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli_mlp_measure.sh)
set_tests_properties(cli_mlp_measure PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
