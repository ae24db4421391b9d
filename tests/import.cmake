# tests/import.cmake — membound import: the fixtures of tests/data/import/
# (hand-written after ncu's and Kineto's documented formats) matched to plans,
# and the guide's import and report commands end to end.
if(TARGET mb_import)
  mb_test(import_files SOURCES import_files.c LIBS mb_import)
endif()
if(TARGET mb_import AND TARGET mb_reports)
  add_test(NAME import_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/import_cli.sh)
  set_tests_properties(import_cli PROPERTIES TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
