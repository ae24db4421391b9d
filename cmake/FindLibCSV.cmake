# FindLibCSV.cmake — libcsv (Debian: libcsv-dev), which ships no pkg-config
# file or CMake config: finds csv.h and the library, checks that csv.h
# declares CSV_APPEND_NULL (libcsv >= 3.0.0), and defines LibCSV::csv.
# Sets LibCSV_FOUND, LibCSV_INCLUDE_DIR, LibCSV_LIBRARY.
find_path(LibCSV_INCLUDE_DIR NAMES csv.h)
find_library(LibCSV_LIBRARY NAMES csv)
if(LibCSV_INCLUDE_DIR AND EXISTS "${LibCSV_INCLUDE_DIR}/csv.h")
  file(STRINGS "${LibCSV_INCLUDE_DIR}/csv.h" _mb_csv_append REGEX "define[ \t]+CSV_APPEND_NULL")
  if(NOT _mb_csv_append)
    set(LibCSV_INCLUDE_DIR LibCSV_INCLUDE_DIR-NOTFOUND)  # another csv.h, or libcsv < 3
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibCSV REQUIRED_VARS LibCSV_LIBRARY LibCSV_INCLUDE_DIR)
if(LibCSV_FOUND AND NOT TARGET LibCSV::csv)
  add_library(LibCSV::csv UNKNOWN IMPORTED)
  set_target_properties(LibCSV::csv PROPERTIES IMPORTED_LOCATION "${LibCSV_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LibCSV_INCLUDE_DIR}")
endif()
mark_as_advanced(LibCSV_INCLUDE_DIR LibCSV_LIBRARY)
