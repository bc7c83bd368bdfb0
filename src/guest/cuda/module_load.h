// Loading a module image into a context, shared by the module calls (api_module.cc), the
// libraries that load theirs into each context that uses them (api_library.cc) and the linker
// (api_link.cc).
#pragma once

#include <cuda.h>

#include <string>

#include "common/status.h"
#include "guest/cuda/objects.h"

namespace pvgpu::guest {

// Where the JIT logs of a load or a link go: the CU_JIT_*_LOG_BUFFER options.
struct JitLogs {
  // The options of cuModuleLoadDataEx or cuLinkCreate that say where logs go. The others
  // (optimization levels, targets, register limits, caching) shape machine code, which the
  // device's own compiler decides; they are ignored. `call` names the caller in the debug log.
  static JitLogs FromOptions(unsigned int count, CUjit_option* options, void** values,
                             const char* call);
  // Copies the logs into the buffers, and the sizes used into their option slots.
  void Write(const std::string& error_log, const std::string& info_log) const;

  char* error_buffer = nullptr;
  size_t error_size = 0;
  char* info_buffer = nullptr;
  size_t info_size = 0;
  void** error_size_slot = nullptr;  // the *_SIZE_BYTES option value, updated on return
  void** info_size_slot = nullptr;
  void** wall_time_slot = nullptr;  // CU_JIT_WALL_TIME (the linker reports its time there)
};

// Loads `image` (PTX, a fatbin or its wrapper, an ELF cubin, a link image) into `ctx`, fills
// `logs` when given, and stores the module with its functions and globals.
Code LoadModule(CUctx_st* ctx, CUmodule* module, const void* image, JitLogs* logs);

// A whole file, for the calls that load from a path: kFileNotFound when it cannot be read.
Code ReadFile(const char* path, std::string* contents);

}  // namespace pvgpu::guest
