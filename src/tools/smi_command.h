// `pvgpu smi`: an nvidia-smi-like view of a host: its adapters with memory and utilization,
// and the guest processes using them.
#pragma once

#include <optional>
#include <string>

#include "tools/subcommand.h"

namespace pvgpu::tools {

struct SmiOptions {
  std::optional<std::string> host;  // --host
  bool json = false;                // --json
};

int RunSmi(const SmiOptions& options);
Subcommand RegisterSmiCommand(CLI::App& app);

}  // namespace pvgpu::tools
