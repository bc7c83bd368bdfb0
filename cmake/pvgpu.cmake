# pvgpu_add_test(NAME SOURCES ... LIBS ...): a GoogleTest binary registered with CTest.
function(pvgpu_add_test name)
  if(NOT PVGPU_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_LIST ${name}_TESTS)
  # gtest_discover_tests cannot pass a list-valued property; label the discovered tests after.
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake"
    "if(${name}_TESTS)\n  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"unit;${ARG_LABELS}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
endfunction()
include(GoogleTest OPTIONAL)
