# Device table and spec files (model/device_table.c, model/device_ini.c).
mb_test(test_device SOURCES test_device.c LIBS mb_model)
