// `pvgpu cdi generate`: asks a running host for its adapters and listeners (HostStatus, through
// the guest client) and writes the CDI spec that gives containers its per-device sockets.
#pragma once

#include <string>

#include "tools/cdi_spec.h"
#include "tools/subcommand.h"

namespace pvgpu::tools {

struct CdiGenerateOptions {
  std::string host;    // --host; empty: PVGPU_HOST, else the default socket
  std::string output;  // --output; empty: stdout
  std::string device_root = "/run/pvgpu/devices";
  std::string kind = kCdiKind;
};

// Returns the process exit status; errors are printed for the user.
int GenerateCdiSpec(const CdiGenerateOptions& options);

// Adds `cdi generate` to the tool.
Subcommand RegisterCdiCommand(CLI::App& app);

}  // namespace pvgpu::tools
