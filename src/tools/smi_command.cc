#include "tools/smi_command.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "tools/console.h"
#include "tools/host_status.h"

namespace pvgpu::tools {
namespace {

using nlohmann::json;

std::string JoinDevices(const json& devices) {
  std::string out;
  for (const json& d : devices) {
    if (!out.empty()) out += ",";
    out += std::to_string(d.get<int>());
  }
  return out.empty() ? "-" : out;
}

void PrintTable(const json& out) {
  const json& host = out["host"];
  const int cuda = host.value("driver_version", 0);
  std::printf("pvgpu smi    host %s    %s    CUDA %d.%d\n", host.value("address", "").c_str(),
              host.value("version", "").c_str(), cuda / 1000, cuda % 1000 / 10);
  const std::string rule(92, '-');
  std::printf("%s\n%-4s %-44s %-6s %27s %6s\n%s\n", rule.c_str(), "GPU", "NAME", "KIND",
              "MEMORY USED / TOTAL", "UTIL", rule.c_str());
  for (const json& a : out["adapters"]) {
    const std::string memory = FormatBytes(a.value("memory_used", uint64_t{0})) + " / " +
                               FormatBytes(a.value("memory_total", uint64_t{0}));
    std::printf("%-4d %-44.44s %-6s %27s %5u%%\n", a.value("index", 0), a.value("name", "").c_str(),
                a.value("kind", "").c_str(), memory.c_str(), a.value("utilization_percent", 0u));
  }
  std::printf("%s\nProcesses:\n", rule.c_str());
  if (out["sessions"].empty()) {
    std::printf("  No running processes found\n");
    return;
  }
  std::printf("  %-8s %-24s %-8s %-9s %s\n", "PID", "NAME", "GPUS", "CONTEXTS", "MEMORY");
  for (const json& s : out["sessions"]) {
    std::printf("  %-8d %-24.24s %-8s %-9d %s\n", s.value("pid", 0), s.value("name", "").c_str(),
                JoinDevices(s["devices"]).c_str(), s.value("contexts", 0),
                FormatBytes(s.value("memory_used", uint64_t{0})).c_str());
  }
}

}  // namespace

int RunSmi(const SmiOptions& options) {
  const ChosenHostStatus chosen = FetchChosenHostStatus(options.host);
  if (chosen.exit_code != 0) return chosen.exit_code;
  const json& status = chosen.status;
  json adapters = json::array();
  for (const json& a : status.value("adapters", json::array())) {
    adapters.push_back({{"index", a.value("index", 0)},
                        {"name", a.value("name", "")},
                        {"kind", a.value("kind", "")},
                        {"software", a.value("software", false)},
                        {"uuid", a.value("uuid", "")},
                        {"memory_used", a.value("memory_used", uint64_t{0})},
                        {"memory_total", a.value("memory_total", uint64_t{0})},
                        {"utilization_percent", a.value("utilization_percent", 0u)}});
  }
  json out = {{"host", HostSummary(chosen.address, status)},
              {"adapters", adapters},
              {"sessions", GuestProcesses(status, static_cast<int>(getpid()))}};
  if (options.json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    PrintTable(out);
  }
  return 0;
}

Subcommand RegisterSmiCommand(CLI::App& app) {
  struct Parsed {
    std::string host;
    bool json = false;
  };
  auto parsed = std::make_shared<Parsed>();
  CLI::App* command =
      app.add_subcommand("smi", "Show the host's adapters, their use and the guest processes");
  CLI::Option* host_option = AddStatusOptions(command, &parsed->host, &parsed->json);
  Subcommand subcommand;
  subcommand.app = command;
  subcommand.run = [parsed, host_option]() {
    SmiOptions options;
    if (host_option->count() > 0) options.host = parsed->host;
    options.json = parsed->json;
    return RunSmi(options);
  };
  return subcommand;
}

}  // namespace pvgpu::tools
