# git_commit.cmake — run at build time (cmake -P): writes OUT with the
# commit the sources are at, "-dirty" when they differ from it, rewriting
# the file only when that changes (so nothing rebuilds needlessly). A copy of
# the tree without .git (the GPU machine's) takes MB_GIT_COMMIT from the
# environment.
set(commit "unknown")
if(DEFINED ENV{MB_GIT_COMMIT} AND NOT "$ENV{MB_GIT_COMMIT}" STREQUAL "")
  set(commit "$ENV{MB_GIT_COMMIT}")
endif()
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty --abbrev=12
                  WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE out RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND out)
    set(commit ${out})
  endif()
endif()
file(WRITE ${OUT}.new "#define MB_GIT_COMMIT \"${commit}\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUT}.new ${OUT})
file(REMOVE ${OUT}.new)
