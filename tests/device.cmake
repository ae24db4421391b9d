# Device table and spec files (model/device_table.c, model/device_ini.c).
mb_test(test_device SOURCES test_device.c LIBS mb_model)
# every key of model/device_keys.def through INI, `devices --json`, the range
# check and the rates (generated from the table: a new key needs no line here)
mb_test(device_keys SOURCES device_keys.c LIBS mb_model PkgConfig::JANSSON)
# docs/devices.md's key table is `membound devices --keys --markdown`
add_test(NAME device_docs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/device_docs.sh)
set_tests_properties(device_docs PROPERTIES
  ENVIRONMENT "MB_BIN=${CMAKE_BINARY_DIR}/bin/membound;MB_SRC=${CMAKE_SOURCE_DIR}")
