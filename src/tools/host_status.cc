#include "tools/host_status.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "common/paths.h"
#include "guest/client/client.h"
#include "tools/console.h"
#include "tools/host_address.h"
#include "tools/subcommand.h"

namespace pvgpu::tools {

using nlohmann::json;

StatusOr<std::string> ChooseStatusHost(const std::optional<std::string>& host_option) {
  std::string text;
  if (host_option) {
    text = *host_option;
  } else {
    // PVGPU_HOST may list several hosts (libcuda uses them all); the tools show one.
    std::stringstream list(GuestHostAddress());
    std::getline(list, text, ',');
    text.erase(0, text.find_first_not_of(" \t"));
    text.erase(text.find_last_not_of(" \t") + 1);
  }
  StatusOr<HostAddress> address = ParseHostAddress(text);
  if (!address.ok()) return address.status();
  if (address->kind == HostAddress::Kind::kUnix) return "unix:" + address->target;
  return address->original;
}

StatusOr<json> FetchHostStatusJson(const std::string& address) {
  guest::Client& client = guest::Client::ForAddress(address);
  if (Status connected = client.Connect(); !connected.ok()) {
    // The client's message names the address and the reason (e.g. "No such file or
    // directory"); add what to do about it.
    return Error(Code::kNoDevice, connected.message() +
                                      "; start pvgpud, or name a running host with --host ADDR "
                                      "or PVGPU_HOST");
  }
  std::vector<uint8_t> payload;
  const Code code = client.Call(protocol::HostStatusRequest{}, {}, nullptr, &payload);
  if (code != Code::kOk) {
    return Error(code, "the host at " + address + " did not answer the status request (code " +
                           std::to_string(static_cast<int>(code)) + ")");
  }
  json status = json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (status.is_discarded() || !status.is_object()) {
    return Error(Code::kUnknown, "the host at " + address + " sent an unreadable status");
  }
  return status;
}

ChosenHostStatus FetchChosenHostStatus(const std::optional<std::string>& host_option) {
  ChosenHostStatus chosen;
  StatusOr<std::string> address = ChooseStatusHost(host_option);
  if (!address.ok()) {
    PrintError(address.status().message());
    chosen.exit_code = kExitUsage;
    return chosen;
  }
  chosen.address = *address;
  StatusOr<json> status = FetchHostStatusJson(chosen.address);
  if (!status.ok()) {
    PrintError(status.status().message());
    chosen.exit_code = 1;
    return chosen;
  }
  chosen.status = std::move(status).value();
  return chosen;
}

CLI::Option* AddStatusOptions(CLI::App* command, std::string* host, bool* json) {
  CLI::Option* host_option =
      command
          ->add_option("--host", *host,
                       "Host to ask (default: PVGPU_HOST, else the local default socket)")
          ->type_name("ADDR");
  command->add_flag("--json", *json, "Print JSON instead of a table");
  return host_option;
}

json HostSummary(const std::string& address, const json& status) {
  const json host = status.value("host", json::object());
  return {{"address", address},
          {"version", host.value("version", "")},
          {"driver_version", host.value("driver_version", 0)}};
}

json GuestProcesses(const json& status, int own_pid) {
  std::map<int, json> by_pid;
  std::vector<int> order;
  for (const json& s : status.value("sessions", json::array())) {
    const int pid = s.value("pid", 0);
    if (pid == own_pid) continue;
    auto [it, inserted] = by_pid.try_emplace(pid, json{{"pid", pid},
                                                       {"name", s.value("name", "")},
                                                       {"memory_used", uint64_t{0}},
                                                       {"contexts", 0},
                                                       {"devices", json::array()},
                                                       {"compute_share", 1},
                                                       {"priority", "normal"},
                                                       {"started_us", uint64_t{0}},
                                                       {"kernels", uint64_t{0}},
                                                       {"busy_ns", uint64_t{0}},
                                                       {"queued_ns", uint64_t{0}},
                                                       {"bytes_htod", uint64_t{0}},
                                                       {"bytes_dtoh", uint64_t{0}}});
    if (inserted) order.push_back(pid);
    json& p = it->second;
    // Its sessions' use summed (docs/sharing.md); the share and priority of its listener.
    p["compute_share"] = std::max(p["compute_share"].get<int>(), s.value("compute_share", 1));
    if (s.value("priority", "normal") == "high") p["priority"] = "high";
    const uint64_t started = s.value("started_us", uint64_t{0});
    const uint64_t known = p["started_us"].get<uint64_t>();
    if (started != 0 && (known == 0 || started < known)) p["started_us"] = started;
    for (const json& u : s.value("usage", json::array())) {
      for (const char* key : {"kernels", "busy_ns", "queued_ns", "bytes_htod", "bytes_dtoh"}) {
        p[key] = p[key].get<uint64_t>() + u.value(key, uint64_t{0});
      }
    }
    p["memory_used"] = p["memory_used"].get<uint64_t>() + s.value("memory_used", uint64_t{0});
    p["contexts"] = p["contexts"].get<int>() + s.value("contexts", 0);
    for (const json& d : s.value("devices", json::array())) {
      json& devices = p["devices"];
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    }
  }
  json out = json::array();
  for (int pid : order) out.push_back(by_pid[pid]);
  return out;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace pvgpu::tools
