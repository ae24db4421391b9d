# Nobody else's files run as us or change our numbers (tests/trust.c): caches,
# implicit inputs and outputs, one ctest per case. The cases with another
# user become an unused uid as root (CI runs as root) and skip (77) elsewhere.
if(TARGET mb_measure)
  mb_test(trust_folder_rule SOURCES trust.c LIBS mb_calibrate ARGS folder_rule)
  foreach(case jit_cache calib_cache cache_link local_spec csv_device outputs concurrent_calibration)
    mb_test(trust_${case} TARGET trust_folder_rule ARGS ${case})
  endforeach()
  # a calibration (concurrent_calibration; calib_cache takes a cached one) and two runs side by side
  set_tests_properties(trust_calib_cache trust_concurrent_calibration trust_outputs PROPERTIES TIMEOUT 600)
  mb_test_timing(trust_concurrent_calibration trust_outputs)
  # two full calibrations one after the other, each retried when refused:
  # ~80 s optimised, ~530 s under AddressSanitizer on a busy 2-vCPU host
  set_tests_properties(trust_concurrent_calibration PROPERTIES TIMEOUT 1500)
  # label 'once': scripts/test.sh runs it in the normal build only (446 s of
  # the sanitizer build's run, 221 s of CPU). On a gcov build (bench/
  # suite_overlap.py) it reached 21 lines the sanitizer build's other tests do
  # not: the cache lock's wait (measure_cache waits on it in-process now), the
  # CLI's calibration progress note and the cache's note relay (measure_cache's
  # --recalibrate prints them; stopped by SIGINT, gcov does not see it), a full
  # calibration's host reference between rounds (two lines calling what
  # measure's host check runs), and branches a busy host takes (a refused
  # calibration, an unmeasured cache knee, a lock waited on past its deadline)
  set_property(TEST trust_concurrent_calibration APPEND PROPERTY LABELS once)
  # outputs: planted links refused, a 255-byte name, SIGHUP, partial runs
  # beside a file that was there, the loser of two runs kept (about 20 s)
  add_test(NAME outputs_catalogue COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/outputs_catalogue.sh)
  set_tests_properties(outputs_catalogue PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  mb_test_timing(outputs_catalogue)
endif()
