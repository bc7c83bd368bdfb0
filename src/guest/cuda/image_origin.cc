// Naming a module image in the errors of loads that cannot work: a library such as cuBLAS
// loads fat binaries from its own data, and "no PTX" helps only when it says whose image it
// was. dladdr finds the shared object whose mapping holds the address the application gave.
#include <dlfcn.h>

#include <mutex>
#include <set>
#include <sstream>

#include "common/log.h"
#include "guest/cuda/module_load.h"

namespace pvgpu::guest {

const char* ImageKindName(protocol::ImageKind kind) {
  switch (kind) {
    case protocol::ImageKind::kPtx:
      return "PTX image";
    case protocol::ImageKind::kFatbin:
      return "fat binary";
    case protocol::ImageKind::kCubin:
      return "cubin";
    case protocol::ImageKind::kLinked:
      return "linked image";
  }
  return "module image";
}

std::string DescribeImage(const char* kind, const ImageOrigin& origin, bool* named) {
  std::ostringstream out;
  out << "the " << kind;
  if (named != nullptr) *named = true;
  if (!origin.file.empty()) {
    out << " in file " << origin.file;
    return out.str();
  }
  out << " at " << origin.address;
  Dl_info info;
  if (origin.address != nullptr && dladdr(origin.address, &info) != 0 &&
      info.dli_fname != nullptr && info.dli_fname[0] != '\0') {
    out << " in " << info.dli_fname;
  } else if (named != nullptr) {
    *named = false;  // heap memory, say: a copy the application made
  }
  return out.str();
}

void WarnNoBinaryForGpu(const std::string& message, protocol::ImageKind kind) {
  // Once per image: a library loads the same image in every context, and a process that uses
  // several libraries should hear about each.
  static std::mutex mutex;
  static auto* seen = new std::set<std::string>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen->insert(message).second) return;
  }
  if (kind == protocol::ImageKind::kFatbin) {
    PVGPU_WARN("module load failed: " << message << " -- the device runs PTX only");
  } else {
    PVGPU_WARN("module load failed: "
               << message
               << " -- the device runs PTX only; note that numba-cuda and cuda.core link with "
                  "nvJitLink whenever they can load it, and nvJitLink emits machine code: "
                  "see pvgpu's docs/python-clients.md");
  }
}

}  // namespace pvgpu::guest
