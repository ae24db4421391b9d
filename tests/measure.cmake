# measure/: statistics, records and CSV, the CPU protocol, and the measure and
# calibrate commands end to end.
if(TARGET mb_measure)
  mb_test(measure_stats SOURCES measure_stats.c LIBS mb_measure)
  mb_test(measure_cli SOURCES measure_cli.c LIBS mb_model)
  # the above-peak rule for a GPU row's counted bytes (no GPU needed)
  mb_test(measure_count_check SOURCES measure_count_check.c LIBS mb_measure)
endif()
