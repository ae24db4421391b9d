# measure/cuda.cmake — the CUDA backend of the harness (cuda_session.cu,
# cuda_counters.cu, cuda_ops.cu) and the CUPTI
# range-profiler wrapper (cupti_ranges.cpp), included by
# measure/CMakeLists.txt when a CUDA compiler is found.

# CUPTI: CMake's CUDA::cupti target, else the library beside the toolkit's.
# Without it (or with -DMB_ENABLE_CUPTI=OFF) the backend still builds: it times
# with events and reports counters as "unavailable: built without CUPTI".
option(MB_ENABLE_CUPTI "Count DRAM bytes with CUPTI when it is found" ON)
set(MB_HAVE_CUPTI OFF)
if(MB_ENABLE_CUPTI)
  if(TARGET CUDA::cupti)
    set(MB_CUPTI_LIB CUDA::cupti)
  else()
    find_library(MB_CUPTI_LIB cupti
      HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/lib64
            ${CUDAToolkit_TARGET_DIR}/extras/CUPTI/lib64)
  endif()
  find_path(MB_CUPTI_INCLUDE cupti_range_profiler.h
    HINTS ${CUDAToolkit_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS}
          ${CUDAToolkit_TARGET_DIR}/extras/CUPTI/include)
  if(MB_CUPTI_LIB AND MB_CUPTI_INCLUDE)
    set(MB_HAVE_CUPTI ON)
  endif()
endif()
if(MB_HAVE_CUPTI)
  set(MB_CUPTI_SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/cupti_ranges.cpp)
else()
  message(WARNING "membound: CUPTI not found (or MB_ENABLE_CUPTI=OFF): the CUDA backend times "
                  "kernels but counts no DRAM bytes")
  set(MB_CUPTI_SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/cupti_absent.c)
endif()
set(MB_HAVE_CUPTI ${MB_HAVE_CUPTI} CACHE INTERNAL "CUPTI counters in the CUDA backend")

set(MB_MEAS_CUDA_SOURCES cuda_session.cu cuda_counters.cu cuda_ops.cu cuda_gemm.cu)
list(TRANSFORM MB_MEAS_CUDA_SOURCES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
add_library(mb_meas_cuda STATIC ${MB_MEAS_CUDA_SOURCES} ${MB_CUPTI_SOURCE}
  ${CMAKE_CURRENT_SOURCE_DIR}/cupti_reason.c)
target_include_directories(mb_meas_cuda PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/cupti_reason.c ${CMAKE_CURRENT_SOURCE_DIR}/cupti_absent.c
  PROPERTIES COMPILE_OPTIONS "${MB_C_WARNINGS}")
set_target_properties(mb_meas_cuda PROPERTIES
  CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
  CUDA_RUNTIME_LIBRARY Static)
target_compile_options(mb_meas_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
if(MB_WERROR)
  target_compile_options(mb_meas_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror> $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>)
endif()

if(MB_HAVE_CUPTI)
  target_include_directories(mb_meas_cuda PRIVATE ${MB_CUPTI_INCLUDE})

  # libcupti dlopen()s libnvperf_host at run time. A RUNPATH does not reach that
  # dlopen (CUDA 13.0: CUPTI_ERROR_NOT_INITIALIZED), a DT_RPATH on the
  # executable does: so executables linking this library get an RPATH (not
  # RUNPATH) to nvperf_host's folder, and no LD_LIBRARY_PATH is needed.
  if(TARGET CUDA::nvperf_host)
    get_target_property(MB_NVPERF_HOST CUDA::nvperf_host IMPORTED_LOCATION)
  endif()
  if(NOT MB_NVPERF_HOST)
    find_library(MB_NVPERF_HOST nvperf_host
      HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/lib64
            ${CUDAToolkit_TARGET_DIR}/extras/CUPTI/lib64 ${CUDAToolkit_TARGET_DIR}/lib)
  endif()
  if(MB_NVPERF_HOST)
    get_filename_component(MB_NVPERF_DIR ${MB_NVPERF_HOST} DIRECTORY)
    set(MB_CUPTI_RPATH_DIRS ${MB_NVPERF_DIR})
  else()
    message(WARNING "membound: libnvperf_host not found: CUPTI counters will need LD_LIBRARY_PATH")
    set(MB_CUPTI_RPATH_DIRS ${CUDAToolkit_LIBRARY_DIR})
  endif()
  if(TARGET CUDA::cupti)
    get_target_property(MB_CUPTI_LOC CUDA::cupti IMPORTED_LOCATION)
  else()
    set(MB_CUPTI_LOC ${MB_CUPTI_LIB})
  endif()
  if(MB_CUPTI_LOC)
    get_filename_component(MB_CUPTI_DIR ${MB_CUPTI_LOC} DIRECTORY)
    list(APPEND MB_CUPTI_RPATH_DIRS ${MB_CUPTI_DIR})
  endif()
  list(REMOVE_DUPLICATES MB_CUPTI_RPATH_DIRS)
  set(MB_CUPTI_RPATH_DIRS ${MB_CUPTI_RPATH_DIRS} CACHE INTERNAL "RPATH folders for CUPTI and nvperf_host")
  foreach(d ${MB_CUPTI_RPATH_DIRS})
    target_link_options(mb_meas_cuda INTERFACE "LINKER:-rpath,${d}")
  endforeach()
  target_link_options(mb_meas_cuda INTERFACE "LINKER:--disable-new-dtags")
endif()

target_link_libraries(mb_meas_cuda PUBLIC mb_kernels_cuda mb_measure mb_kernels mb_model
  CUDA::cudart_static ${CMAKE_DL_LIBS})
if(MB_HAVE_CUPTI)
  target_link_libraries(mb_meas_cuda PUBLIC ${MB_CUPTI_LIB})
endif()
# cuBLASLt for the GPU's GEMMs (cuda_gemm.cu): its header here, the library
# loaded with dlopen at run time (from where the toolkit has it, else the
# loader's search), never linked: over 500 MB mapped into every command.
if(TARGET CUDA::cublasLt)
  get_target_property(MB_CUBLASLT_SO CUDA::cublasLt IMPORTED_LOCATION)
endif()
if(MB_CUBLASLT_SO)
  set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/cuda_gemm.cu APPEND PROPERTY COMPILE_DEFINITIONS
    MB_CUBLASLT_SO="${MB_CUBLASLT_SO}")
endif()
# mb_measure's protocol (protocol.c) runs this library's ops table
# (mb_meas_cuda_ops): a cycle of static libraries, which CMake repeats on the
# link line.
target_link_libraries(mb_measure PUBLIC mb_meas_cuda)
