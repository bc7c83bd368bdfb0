#include "tools/adapters_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "tools/console.h"
#include "tools/host_status.h"

namespace pvgpu::tools {
namespace {

using nlohmann::json;

// "pvgpu 0.1.0" -> "0.1.0": the version of the component in the driver's role.
std::string DriverVersion(const json& status) {
  const std::string version = status.value("host", json::object()).value("version", "");
  const size_t space = version.rfind(' ');
  return space == std::string::npos ? version : version.substr(space + 1);
}

int PowerRank(const json& a, AdapterOrder order) {
  const bool software = a.value("software", false);
  const bool integrated = a.value("integrated", false);
  if (order == AdapterOrder::kHighPerformance) return (software ? 2 : 0) + (integrated ? 1 : 0);
  return (software || integrated) ? 0 : 1;
}

void PrintTable(const std::string& address, const json& status, const json& adapters) {
  const json host = status.value("host", json::object());
  const int cuda = host.value("driver_version", 0);
  std::printf("Host %s: %s, CUDA %d.%d\n", address.c_str(), host.value("version", "?").c_str(),
              cuda / 1000, cuda % 1000 / 10);
  if (adapters.empty()) {
    std::printf("No adapters.\n");
    return;
  }
  std::printf("%-5s %-6s %-9s %-10s %-7s %10s %-7s %-17s %-18s %s\n", "INDEX", "KIND", "TYPE",
              "FORM", "ENGINE", "MEMORY", "COMPUTE", "PCI BUS ID", "LUID", "UUID");
  for (const json& a : adapters) {
    char luid[24];
    std::snprintf(luid, sizeof(luid), "0x%016llx",
                  static_cast<unsigned long long>(a.value("luid", uint64_t{0})));
    std::printf("%-5d %-6s %-9s %-10s %-7s %10s %-7s %-17s %-18s %s\n", a.value("index", 0),
                a.value("kind", "").c_str(), a.value("software", false) ? "software" : "hardware",
                a.value("integrated", false) ? "integrated" : "discrete",
                a.value("engine", "-").c_str(),
                FormatBytes(a.value("memory_total", uint64_t{0})).c_str(),
                a.value("compute_capability", "").c_str(), a.value("pci_bus_id", "").c_str(), luid,
                a.value("uuid", "").c_str());
  }
  std::printf("Driver version %s (all adapters).\n", DriverVersion(status).c_str());
}

}  // namespace

json OrderAdapters(const json& adapters, AdapterOrder order) {
  std::vector<json> list(adapters.begin(), adapters.end());
  if (order != AdapterOrder::kHost) {
    std::stable_sort(list.begin(), list.end(), [order](const json& a, const json& b) {
      return PowerRank(a, order) < PowerRank(b, order);
    });
  }
  return json(list);
}

int RunAdapters(const AdaptersOptions& options) {
  const ChosenHostStatus chosen = FetchChosenHostStatus(options.host);
  if (chosen.exit_code != 0) return chosen.exit_code;
  const json& status = chosen.status;
  const std::string& address = chosen.address;
  json adapters = OrderAdapters(status.value("adapters", json::array()), options.order);
  const std::string driver_version = DriverVersion(status);
  json out_adapters = json::array();
  for (const json& a : adapters) {
    out_adapters.push_back({
        {"index", a.value("index", 0)},
        {"kind", a.value("kind", "")},
        {"name", a.value("name", "")},
        {"software", a.value("software", false)},
        {"engine", a.value("engine", "")},
        {"integrated", a.value("integrated", false)},
        {"memory_total", a.value("memory_total", uint64_t{0})},
        {"uuid", a.value("uuid", "")},
        {"luid", a.value("luid", uint64_t{0})},
        {"driver_version", driver_version},
        {"pci_bus_id", a.value("pci_bus_id", "")},
        {"compute_capability", a.value("compute_capability", "")},
    });
  }
  if (options.json) {
    const json out = {{"host", HostSummary(address, status)}, {"adapters", out_adapters}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    PrintTable(address, status, out_adapters);
  }
  return 0;
}

Subcommand RegisterAdaptersCommand(CLI::App& app) {
  struct Parsed {
    std::string host;
    bool json = false;
    std::string order = "host";
  };
  auto parsed = std::make_shared<Parsed>();
  CLI::App* command = app.add_subcommand("adapters", "List the host's adapters (GPUs)");
  CLI::Option* host_option = AddStatusOptions(command, &parsed->host, &parsed->json);
  command
      ->add_option("--order", parsed->order,
                   "host (as the host serves them, the guests' device order), "
                   "high-performance or minimum-power")
      ->check(CLI::IsMember({"host", "high-performance", "minimum-power"}));
  Subcommand subcommand;
  subcommand.app = command;
  subcommand.run = [parsed, host_option]() {
    AdaptersOptions options;
    if (host_option->count() > 0) options.host = parsed->host;
    options.json = parsed->json;
    if (parsed->order == "high-performance") options.order = AdapterOrder::kHighPerformance;
    if (parsed->order == "minimum-power") options.order = AdapterOrder::kMinimumPower;
    return RunAdapters(options);
  };
  return subcommand;
}

}  // namespace pvgpu::tools
