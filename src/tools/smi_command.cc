#include "tools/smi_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>
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
  std::printf("  %-8s %-20s %-6s %-10s %5s %6s %-7s %9s %10s %10s\n", "PID", "NAME", "GPUS",
              "MEMORY", "BUSY", "SHARE", "PRIO", "KERNELS", "QUEUED", "COPIED");
  for (const json& s : out["sessions"]) {
    char queued[32];
    std::snprintf(queued, sizeof(queued), "%.3f s",
                  static_cast<double>(s.value("queued_ns", uint64_t{0})) / 1e9);
    const std::string copied =
        FormatBytes(s.value("bytes_htod", uint64_t{0}) + s.value("bytes_dtoh", uint64_t{0}));
    std::printf("  %-8d %-20.20s %-6s %-10s %4u%% %6d %-7s %9llu %10s %10s\n", s.value("pid", 0),
                s.value("name", "").c_str(), JoinDevices(s["devices"]).c_str(),
                FormatBytes(s.value("memory_used", uint64_t{0})).c_str(),
                s.value("busy_percent", 0u), s.value("compute_share", 1),
                s.value("priority", "normal").c_str(),
                static_cast<unsigned long long>(s.value("kernels", uint64_t{0})), queued,
                copied.c_str());
  }
}

// Busy percent of each process: over the time since the previous refresh (--watch), else
// over its lifetime. `previous` maps a pid to its busy time and the host's clock last time.
void AddBusyPercent(json* sessions, uint64_t now_us,
                    std::map<int, std::pair<uint64_t, uint64_t>>* previous) {
  std::map<int, std::pair<uint64_t, uint64_t>> next;
  for (json& s : *sessions) {
    const int pid = s.value("pid", 0);
    const uint64_t busy = s.value("busy_ns", uint64_t{0});
    uint64_t busy_base = 0;
    uint64_t since = s.value("started_us", uint64_t{0});
    if (auto it = previous->find(pid); it != previous->end() && it->second.first <= busy) {
      busy_base = it->second.first;
      since = it->second.second;
    }
    unsigned percent = 0;
    if (since != 0 && since < now_us) {
      percent = static_cast<unsigned>(
          std::min<uint64_t>(100, (busy - busy_base) / 10 / (now_us - since)));
    }
    s["busy_percent"] = percent;
    next[pid] = {busy, now_us};
  }
  *previous = std::move(next);
}

}  // namespace

int RunSmi(const SmiOptions& options) {
  std::map<int, std::pair<uint64_t, uint64_t>> previous;
  for (unsigned frame = 0;; ++frame) {
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
    json sessions = GuestProcesses(status, static_cast<int>(getpid()));
    const uint64_t now_us = status.value("host", json::object()).value("time_us", uint64_t{0});
    AddBusyPercent(&sessions, now_us, &previous);
    json out = {{"host", HostSummary(chosen.address, status)},
                {"adapters", adapters},
                {"sessions", sessions}};
    if (options.json) {
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      if (options.watch && isatty(STDOUT_FILENO)) std::printf("\033[H\033[2J");  // clear
      PrintTable(out);
    }
    std::fflush(stdout);
    if (!options.watch || (options.count != 0 && frame + 1 >= options.count)) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(options.interval));
  }
}

Subcommand RegisterSmiCommand(CLI::App& app) {
  struct Parsed {
    std::string host;
    bool json = false;
    bool watch = false;
    double interval = 1.0;
    unsigned count = 0;
  };
  auto parsed = std::make_shared<Parsed>();
  CLI::App* command =
      app.add_subcommand("smi", "Show the host's adapters, their use and the guest processes");
  CLI::Option* host_option = AddStatusOptions(command, &parsed->host, &parsed->json);
  command->add_flag("--watch", parsed->watch,
                    "Refresh every --interval seconds until interrupted; BUSY is then the share of "
                    "each refresh's period (without --watch: of the process's lifetime)");
  command->add_option("--interval", parsed->interval, "Seconds between --watch refreshes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--count", parsed->count, "Stop --watch after N refreshes (0: never)")
      ->capture_default_str();
  Subcommand subcommand;
  subcommand.app = command;
  subcommand.run = [parsed, host_option]() {
    SmiOptions options;
    if (host_option->count() > 0) options.host = parsed->host;
    options.json = parsed->json;
    options.watch = parsed->watch;
    options.interval = parsed->interval;
    options.count = parsed->count;
    return RunSmi(options);
  };
  return subcommand;
}

}  // namespace pvgpu::tools
