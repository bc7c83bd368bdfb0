// What a module is on the wire: the kind of image ModuleLoad carries, and the description the
// host returns of what the loaded module holds. Adapters describe their modules in the same
// types (adapters::KernelInfo, adapters::GlobalInfo), so the session forwards a description
// without converting it. Free of the generated header, so that adapters can include it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace pvgpu::protocol {

// Image kinds for ModuleLoad.
// kLinked: a link image (link_image.h), as cuLinkComplete hands it out.
enum class ImageKind : uint32_t { kPtx = 1, kFatbin = 2, kCubin = 3, kLinked = 4 };

// What the host tells the guest about a loaded module (ModuleLoad's reply payload): enough
// for cuModuleGetFunction, cuModuleGetGlobal and the packing of kernelParams to need no
// further round trip.
struct KernelDescription {
  std::string name;
  std::vector<uint32_t> param_offsets;
  std::vector<uint32_t> param_sizes;
  uint32_t param_bytes = 0;
  uint32_t shared_bytes = 0;
  uint32_t local_bytes = 0;
  uint32_t num_regs = 0;
  uint32_t max_threads_per_block = 0;
  // CU_FUNC_ATTRIBUTE_PTX_VERSION and BINARY_VERSION (major * 10 + minor; 0: unknown). Libraries
  // such as CUB choose their host-side tuning by the PTX version of the code that runs, which
  // must match the tuning the device code was compiled with.
  uint32_t ptx_version = 0;
  uint32_t binary_version = 0;
};

struct GlobalDescription {
  std::string name;
  uint64_t dptr = 0;
  uint64_t size = 0;
};

struct ModuleDescription {
  std::vector<KernelDescription> kernels;
  std::vector<GlobalDescription> globals;
  std::string error_log;
  std::string info_log;

  std::vector<uint8_t> Encode() const;
  bool Decode(std::span<const uint8_t> bytes);
};

}  // namespace pvgpu::protocol
