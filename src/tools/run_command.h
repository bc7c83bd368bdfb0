// `pvgpu run`: runs a program with the pvgpu guest libraries in front of the system's and
// PVGPU_HOST pointing at a host, starting a private one when none is given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/subcommand.h"

namespace pvgpu::tools {

struct RunOptions {
  std::optional<std::string> host;      // --host
  std::optional<std::string> adapters;  // --adapters, for a private host
  bool keep_logs = false;               // --keep-logs
  std::vector<std::string> command;     // CMD ARGS...
};

// Exit statuses of `pvgpu run` itself; otherwise it exits with the program's status.
inline constexpr int kExitHostFailed = 125;  // the private host could not be started
inline constexpr int kExitNotExecutable = 126;
inline constexpr int kExitNotFound = 127;

// Runs options.command to completion and returns the exit status to use.
int RunCommand(const RunOptions& options);

// Adds `run` to the tool. `trailing` holds what followed `--` on the command line.
Subcommand RegisterRunCommand(CLI::App& app, const std::vector<std::string>* trailing);

}  // namespace pvgpu::tools
