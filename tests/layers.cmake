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
# docs/figures/ is what scripts/docs_figures.sh draws from the model today
add_test(NAME test_docs_figures COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs_figures.sh)
set_tests_properties(test_docs_figures PROPERTIES SKIP_RETURN_CODE 77
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR}")
