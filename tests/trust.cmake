# Nobody else's files run as us or change our numbers (tests/trust.c): caches,
# implicit inputs and outputs, one ctest per case. The cases with another
# user become an unused uid as root (CI runs as root) and skip (77) elsewhere.
if(TARGET mb_measure)
  mb_test(trust_folder_rule SOURCES trust.c LIBS mb_measure ARGS folder_rule)
  foreach(case jit_cache calib_cache cache_link local_spec csv_device outputs concurrent_calibration)
    mb_test(trust_${case} TARGET trust_folder_rule ARGS ${case})
  endforeach()
  # a calibration (concurrent_calibration; calib_cache takes a cached one) and two runs side by side
  set_tests_properties(trust_calib_cache trust_concurrent_calibration trust_outputs PROPERTIES TIMEOUT 600)
  mb_test_timing(trust_concurrent_calibration trust_outputs)
  # two full calibrations one after the other, each retried when refused:
  # ~80 s optimised, ~530 s under AddressSanitizer on a busy 2-vCPU host
  set_tests_properties(trust_concurrent_calibration PROPERTIES TIMEOUT 1500)
endif()
