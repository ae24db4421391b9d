# the main job end to end (small sizes)
add_test(NAME test_demo_quick COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/demo_quick.sh)
set_tests_properties(test_demo_quick PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
mb_test_timing(test_demo_quick) # a quick calibration
