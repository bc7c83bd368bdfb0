// `pvgpu adapters`: the host's adapters with DXCore-like properties (software or hardware,
// integrated or discrete, memory, UUID, LUID, driver version, PCI bus id, compute capability).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tools/subcommand.h"

namespace pvgpu::tools {

// DXCore's adapter preferences. kHost keeps the order the host serves them in (the order
// guests number their devices in).
enum class AdapterOrder { kHost, kHighPerformance, kMinimumPower };

struct AdaptersOptions {
  std::optional<std::string> host;  // --host
  bool json = false;                // --json
  AdapterOrder order = AdapterOrder::kHost;
};

// Stable sort of the status's adapters: high performance puts hardware before software and
// discrete before integrated; minimum power puts software and integrated adapters first.
nlohmann::json OrderAdapters(const nlohmann::json& adapters, AdapterOrder order);

int RunAdapters(const AdaptersOptions& options);
Subcommand RegisterAdaptersCommand(CLI::App& app);

}  // namespace pvgpu::tools
