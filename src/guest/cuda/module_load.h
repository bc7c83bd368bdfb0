// Loading a module image into a context, shared by the module calls (api_module.cc), the
// libraries that load theirs into each context that uses them (api_library.cc) and the linker
// (api_link.cc).
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

#include "common/status.h"
#include "guest/cuda/objects.h"
#include "protocol/wire.h"

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

// Where an image came from, to name it in the error of a load that cannot work on the device
// (machine code only, on the cpu adapter): the file it was read from, else the address the
// application gave, which dladdr finds in the data of the library that carries the image
// (cuBLAS's fat binaries, say). Empty: the image's own address.
struct ImageOrigin {
  const void* address = nullptr;
  std::string_view file;
};

// "the fat binary at 0x7f... in /usr/lib/libfoo.so", "the cubin in file k.cubin": how the
// errors name an image of `kind` ("fat binary", "cubin", ...) from `origin`. `named`, when
// given, says whether that names a file or library (else only an address, which tells the
// application nothing it does not know: the JIT log is then left as the device wrote it).
std::string DescribeImage(const char* kind, const ImageOrigin& origin, bool* named = nullptr);

// The words the errors use for an image of `kind`: "fat binary", "cubin", ...
const char* ImageKindName(protocol::ImageKind kind);

// Logs, once for each distinct `message`, that a load failed because the image holds machine
// code only (CUDA_ERROR_NO_BINARY_FOR_GPU), with what to do about it.
void WarnNoBinaryForGpu(const std::string& message, protocol::ImageKind kind);

// Loads `image` (PTX, a fatbin or its wrapper, an ELF cubin, a link image) into `ctx`, fills
// `logs` when given, and stores the module with its functions and globals.
Code LoadModule(CUctx_st* ctx, CUmodule* module, const void* image, JitLogs* logs,
                ImageOrigin origin = {});

// A whole file, for the calls that load from a path: kFileNotFound when it cannot be read.
Code ReadFile(const char* path, std::string* contents);

}  // namespace pvgpu::guest
