# tests/import.cmake — membound import: the fixtures of tests/data/import/
# (hand-written after ncu's and Kineto's documented formats) matched to plans,
# and the guide's import and report commands end to end.
if(TARGET mb_import)
  mb_test(import_files SOURCES import_files.c LIBS mb_import)
endif()
