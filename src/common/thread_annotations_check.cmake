# cmake -DCLANGXX=clang++ -DSRC=<repo>/src -P thread_annotations_check.cmake
# thread_annotations_check.cc must compile under -Werror=thread-safety, and must fail to with
# PVGPU_VIOLATE defined, for the thread-safety reason and no other.
set(flags -std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety -I${SRC})
set(source "${SRC}/common/thread_annotations_check.cc")
execute_process(COMMAND "${CLANGXX}" ${flags} "${source}"
                RESULT_VARIABLE good_result ERROR_VARIABLE good_output)
if(NOT good_result EQUAL 0)
  message(FATAL_ERROR "the correct program does not compile:\n${good_output}")
endif()
execute_process(COMMAND "${CLANGXX}" ${flags} -DPVGPU_VIOLATE "${source}"
                RESULT_VARIABLE bad_result ERROR_VARIABLE bad_output)
if(bad_result EQUAL 0)
  message(FATAL_ERROR "reading guarded data without its lock compiled: the analysis is off")
endif()
if(NOT bad_output MATCHES "-Werror,-Wthread-safety")
  message(FATAL_ERROR "the violating program failed, but not for thread safety:\n${bad_output}")
endif()
message(STATUS "thread-safety analysis catches a missing lock")
