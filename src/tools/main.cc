// pvgpu: the user-facing tool. Each subcommand lives in its own file and registers itself
// here; main only splits the command line and dispatches.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/log.h"
#include "tools/adapters_command.h"
#include "tools/bench/bench_command.h"
#include "tools/cdi_command.h"
#include "tools/console.h"
#include "tools/run_command.h"
#include "tools/smi_command.h"
#include "tools/subcommand.h"

namespace {

int Main(int argc, char** argv) {
  pvgpu::log::Init("pvgpu", pvgpu::log::Level::kWarn);

  // Arguments after the first `--` are a command line for the program to run and are never
  // parsed as pvgpu options. CLI11 (2.1) mishandles `--` together with prefix commands, so the
  // split is done here.
  std::vector<char*> head;
  std::vector<std::string> trailing;
  bool separator = false;
  for (int i = 0; i < argc; ++i) {
    if (!separator && i > 0 && std::string(argv[i]) == "--") {
      separator = true;
    } else if (separator) {
      trailing.emplace_back(argv[i]);
    } else {
      head.push_back(argv[i]);
    }
  }

  CLI::App app{
      "pvgpu gives programs the host's GPUs through a paravirtualized CUDA driver.\n"
      "Run 'pvgpu SUBCOMMAND --help' for details.",
      "pvgpu"};
  app.set_version_flag("--version", "pvgpu " PVGPU_VERSION);
  app.require_subcommand(1);
  std::vector<pvgpu::tools::Subcommand> subcommands = {
      pvgpu::tools::RegisterRunCommand(app, &trailing),
      pvgpu::tools::RegisterCdiCommand(app),
      pvgpu::tools::RegisterAdaptersCommand(app),
      pvgpu::tools::RegisterSmiCommand(app),
      pvgpu::tools::RegisterBenchCommand(app),
  };

  try {
    app.parse(static_cast<int>(head.size()), head.data());
  } catch (const CLI::ParseError& error) {
    // CLI11's own codes (100+) mean nothing to shells; usage errors are 2 by convention.
    return app.exit(error) == 0 ? 0 : pvgpu::tools::kExitUsage;
  }
  for (const pvgpu::tools::Subcommand& subcommand : subcommands) {
    if (!subcommand.app->parsed()) continue;
    if (separator && !subcommand.takes_trailing_arguments) {
      pvgpu::tools::PrintError("'pvgpu " + subcommand.app->get_name() +
                               "' takes no arguments after '--'");
      return pvgpu::tools::kExitUsage;
    }
    return subcommand.run();
  }
  return pvgpu::tools::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& error) {
    // Only allocation failures and similar can get here; say so rather than abort().
    pvgpu::tools::PrintError(std::string("internal error: ") + error.what());
    return 1;
  }
}
