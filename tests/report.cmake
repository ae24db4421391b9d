# tests/report.cmake — the reporter: fits against oracles, CSV errors, the
# report files, figures rendered headless, the report/figures commands.
if(TARGET mb_reports)
  mb_test(report_fit SOURCES report_fit.c LIBS mb_reports)
  mb_test(report_csv SOURCES report_csv.c report_gen.c LIBS mb_reports)
  mb_test(report_figures SOURCES report_figures.c LIBS mb_reports)
  mb_test(report_cli SOURCES report_cli.c report_gen.c LIBS mb_reports)
endif()
