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
  bool watch = false;               // --watch: refresh until interrupted (or --count)
  double interval = 1.0;            // --interval SECONDS between refreshes
  unsigned count = 0;               // --count N refreshes (0: no limit)
};

int RunSmi(const SmiOptions& options);
Subcommand RegisterSmiCommand(CLI::App& app);

}  // namespace pvgpu::tools
