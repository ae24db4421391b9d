# the main job end to end (small sizes)
add_test(NAME test_demo_quick COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/demo_quick.sh)
set_tests_properties(test_demo_quick PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
# a quick calibration (never refused for contention): not a timing test
