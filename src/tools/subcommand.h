// How main.cc finds and runs the subcommand the user chose. Each subcommand's file has a
// Register...Command(app, trailing) that adds its options to CLI11 and returns one of these.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace pvgpu::tools {

// Exit status for bad options or arguments, as most Unix tools use it.
inline constexpr int kExitUsage = 2;

struct Subcommand {
  CLI::App* app = nullptr;
  // Runs after a successful parse; returns the process exit status.
  std::function<int()> run;
  // Whether arguments after `--` belong to this subcommand (a command to run).
  bool takes_trailing_arguments = false;
};

}  // namespace pvgpu::tools
