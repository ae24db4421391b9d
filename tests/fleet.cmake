# tests/fleet.cmake — measuring a cluster (scripts/slurm/) and reporting
# over many machines (reports/machines.c, fleet.c, fig_error.c,
# write_machines.c).
if(TARGET mb_reports)
  # the merge's per-device fits against CSVs of three fictitious machines,
  # two of them sharing a device name; a fleet's task table read
  mb_test(report_fleet SOURCES report_fleet.c LIBS mb_reports)
  # the array's task scripts without a scheduler: a task that fails (its rows
  # missing, the report naming it), two tasks writing into one run folder at
  # once, folders and files another user could write refused (33 to 54 s
  # on the 2-core host here under load from other builds)
  add_test(NAME fleet_tasks COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fleet_tasks.sh)
  set_tests_properties(fleet_tasks PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  # a two-task array under a real SLURM started by the test (munged,
  # slurmctld, slurmd; scripts/test.sh installs slurm-wlm and munge); skips
  # (77) with the daemon's error where they cannot start. Labelled timing (one
  # at a time: its tasks calibrate) and once (the normal build only: it runs
  # the scripts, which are the same in both builds)
  add_test(NAME slurm_fleet COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/slurm_fleet.sh)
  set_tests_properties(slurm_fleet PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR};MEMBOUND_VARIANTS=${CMAKE_BINARY_DIR}/share/membound/variants")
  mb_test_timing(slurm_fleet)
  set_property(TEST slurm_fleet APPEND PROPERTY LABELS once)
endif()
