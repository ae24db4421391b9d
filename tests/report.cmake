# tests/report.cmake — the reporter: fits against oracles, CSV errors, the
# report files, figures rendered headless, the report/figures commands.
if(TARGET mb_reports)
  mb_test(report_fit SOURCES report_fit.c LIBS mb_reports)
  # the writers' number forms, byte for byte snprintf's
  mb_test(report_numfmt SOURCES report_numfmt.c LIBS mb_reports)
  mb_test(report_row_claims SOURCES report_row_claims.c LIBS mb_reports)
  mb_test(report_csv SOURCES report_csv.c report_gen.c LIBS mb_reports)
  # the verdicts: the statistic that decides, the claim judged, the committed quiet and busy runs
  mb_test(report_verdict SOURCES report_verdict.c LIBS mb_reports)
  mb_test(report_figures SOURCES report_figures.c LIBS mb_reports)
  mb_test(report_cli SOURCES report_cli.c report_gen.c LIBS mb_reports)
  # gnuplot, the plots folder and PATH from the caller, never from the environment
  mb_test(report_settings SOURCES report_settings.c LIBS mb_reports)
  # a figure drawn from its caller's data file (plan --frontier --figure): the table's rows of that kind
  mb_test(report_draw_figure SOURCES report_draw_figure.c LIBS mb_reports)
endif()
# report.html rendered by headless Chromium (installed by scripts/test.sh)
if(TARGET mb_reports)
  add_test(NAME report_html COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_html.sh)
  set_tests_properties(report_html PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# every CSV the tool writes opens with default arguments (Python's csv, pandas)
if(TARGET mb_reports)
  add_test(NAME test_csv_open COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/csv_open.sh)
  set_tests_properties(test_csv_open PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# report's folder put in place whole: SIGTERM at random moments, a hanging
# gnuplot, a refused input (about 15 s)
if(TARGET mb_reports)
  add_test(NAME report_stage COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_stage.sh)
  set_tests_properties(report_stage PROPERTIES TIMEOUT 120
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# a large report's progress notes, and a signal at random moments ending it
# within a second, the old report kept (3x10^5 generated rows, about 20 s)
if(TARGET mb_reports)
  add_test(NAME report_interrupt COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_interrupt.sh)
  set_tests_properties(report_interrupt PROPERTIES TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  mb_test_timing(report_interrupt) # a signal acted on within a second
endif()
# memory by rows, the input limit in rows and bytes: generated CSVs under
# ulimit -v (about 20 s)
if(TARGET mb_reports)
  add_test(NAME report_limits COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_limits.sh)
  set_tests_properties(report_limits PROPERTIES TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# 2-D rows (the 'shape' column) modelled at their own shape, as measure did
if(TARGET mb_reports)
  add_test(NAME report_rows COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_rows.sh)
  set_tests_properties(report_rows PROPERTIES TIMEOUT 120
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# the one-pass -> multi-pass knee figure: figures of a row variant, report of 2-D CPU rows
if(TARGET mb_reports)
  add_test(NAME figures_knee COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/figures_knee.sh)
  set_tests_properties(figures_knee PROPERTIES TIMEOUT 120
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# no label on data, no two labels on each other: every figure rendered as
# text and data layers, their alpha masks compared (tests/fig_mask.c, libpng)
if(TARGET mb_reports)
  find_package(PNG QUIET)
  set(MB_FIG_MASK "")
  if(PNG_FOUND)
    add_executable(fig_mask fig_mask.c)
    target_link_libraries(fig_mask PRIVATE PNG::PNG)
    set(MB_FIG_MASK $<TARGET_FILE:fig_mask>)
  endif()
  add_test(NAME fig_overlap COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fig_overlap.sh)
  set_tests_properties(fig_overlap PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MB_FIG_MASK=${MB_FIG_MASK};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
endif()
# a CPU spec's bandwidth is a calibration: rows above it while the host drifted are
# said to be, not called impossible (tests/data/report-drift, a real demo's rows)
add_test(NAME report_drift COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/report_drift.sh)
set_tests_properties(report_drift PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60
  ENVIRONMENT "MB_SRC=${CMAKE_SOURCE_DIR};MB_BIN=${CMAKE_BINARY_DIR}/bin/membound")
