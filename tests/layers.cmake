# the layering rule (style.md: layers look down; cli reaches kernels through
# measure), read from every module's includes and cli's calls
add_test(NAME test_layers COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/layers.sh)
set_tests_properties(test_layers PROPERTIES ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR}")
# every relative link of README.md and docs/*.md resolves, #anchors included
add_test(NAME test_docs_links COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs_links.sh)
# the README's command-line synopsis names exactly the options each command's
# --help defines
add_test(NAME test_readme_synopsis COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/readme_synopsis.sh)
set_tests_properties(test_readme_synopsis PROPERTIES
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR}")
