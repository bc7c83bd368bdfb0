# `pvgpu adapters` and `pvgpu smi`: they ask a running host over a real session (the guest
# client), so they are kept apart from pvgpu_tools, which must not depend on the guest side.
find_package(nlohmann_json 3 REQUIRED)
add_library(pvgpu_tools_status STATIC adapters_command.cc host_status.cc smi_command.cc)
target_link_libraries(pvgpu_tools_status PUBLIC pvgpu_tools pvgpu_guest_client
  nlohmann_json::nlohmann_json)
target_link_libraries(pvgpu PRIVATE pvgpu_tools_status)

if(PVGPU_BUILD_TESTS)
  # A guest that holds a context and memory until its stdin closes (see its header comment).
  add_executable(pvgpu_hold_context testdata/hold_context.c)
  target_include_directories(pvgpu_hold_context PRIVATE "${PVGPU_CUDA_INCLUDE}")
  target_link_directories(pvgpu_hold_context PRIVATE "${PROJECT_BINARY_DIR}/lib/pvgpu")
  target_link_libraries(pvgpu_hold_context PRIVATE cuda)
  add_dependencies(pvgpu_hold_context pvgpu_cuda)

  pvgpu_add_test(status_commands_test
    SOURCES status_commands_test.cc
    LIBS pvgpu_tools_status
    LABELS tools)
  add_dependencies(status_commands_test pvgpu pvgpud pvgpu_hold_context)
  target_compile_definitions(status_commands_test PRIVATE
    PVGPU_BINARY="$<TARGET_FILE:pvgpu>"
    PVGPUD_BINARY="$<TARGET_FILE:pvgpud>"
    HOLD_CONTEXT_BINARY="$<TARGET_FILE:pvgpu_hold_context>"
    GUEST_LIB_DIR="${PROJECT_BINARY_DIR}/lib/pvgpu")
endif()
