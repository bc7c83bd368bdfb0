// Where pvgpu's pieces live. The install tree and the build tree share one layout:
//
//   PREFIX/bin/pvgpu            this tool
//   PREFIX/bin/pvgpud           the host daemon
//   PREFIX/lib/pvgpu/           the guest libraries (libcuda.so.1, libnvidia-ml.so.1)
//   PREFIX/libexec/pvgpu/       programs the tool runs itself (the CUDA runtime nbody of
//                               `pvgpu bench nbody`)
//
// PREFIX is the parent of the directory holding the running pvgpu executable, so a relocated
// install (a tarball unpacked anywhere, a container mount) works without configuration.
// PVGPU_PREFIX overrides it, for tests and for unusual layouts.
#pragma once

#include <string>

#include "common/status.h"

namespace pvgpu::tools {

struct InstallLayout {
  std::string prefix;
  std::string daemon;         // PREFIX/bin/pvgpud
  std::string guest_lib_dir;  // PREFIX/lib/pvgpu
  std::string libexec_dir;    // PREFIX/libexec/pvgpu
};

// Resolves PREFIX from PVGPU_PREFIX or /proc/self/exe. Fails only when neither gives an
// existing directory; missing components are reported by the code that needs them.
StatusOr<InstallLayout> FindInstallLayout();

// The layout rooted at an explicit prefix (made absolute).
StatusOr<InstallLayout> LayoutForPrefix(const std::string& prefix);

// "DIR" or "DIR:OLD": the guest libraries first, the caller's own search path kept after them.
// An empty OLD adds no trailing colon, which the dynamic loader would read as the current
// directory.
std::string PrependToSearchPath(const std::string& dir, const char* old_value);

}  // namespace pvgpu::tools
