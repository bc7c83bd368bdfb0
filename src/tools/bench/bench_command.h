// `pvgpu bench NAME [--json] [--plot FILE] [--host ADDR] ...`: registers the subcommand.
#pragma once

#include "tools/subcommand.h"

namespace pvgpu::tools {

Subcommand RegisterBenchCommand(CLI::App& app);

}  // namespace pvgpu::tools
