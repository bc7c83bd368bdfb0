#include "guest/nvml/host_view.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "guest/client/client.h"
#include "guest/pci_bus_id.h"

namespace pvgpu::guest::nvml {

using nlohmann::json;

namespace {

// "7.5" -> 7, 5. Anything else leaves both at 0 (unknown).
void ParseComputeCapability(const std::string& text, int* major, int* minor) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos) return;
  *major = std::atoi(text.substr(0, dot).c_str());
  *minor = std::atoi(text.substr(dot + 1).c_str());
}

AdapterView ParseAdapter(const json& a) {
  AdapterView view;
  view.index = a.value("index", 0);
  view.kind = a.value("kind", "");
  view.name = a.value("name", "");
  view.uuid = a.value("uuid", "");
  view.luid = a.value("luid", uint64_t{0});
  view.software = a.value("software", false);
  view.integrated = a.value("integrated", false);
  view.memory_total = a.value("memory_total", uint64_t{0});
  view.memory_used = a.value("memory_used", uint64_t{0});
  view.utilization_percent = a.value("utilization_percent", 0u);
  view.pci_bus_id = a.value("pci_bus_id", "");
  unsigned function = 0;
  if (!ParsePciBusId(view.pci_bus_id, &view.pci_domain, &view.pci_bus, &view.pci_device,
                     &function)) {
    view.pci_domain = view.pci_bus = view.pci_device = 0;
  }
  ParseComputeCapability(a.value("compute_capability", ""), &view.cc_major, &view.cc_minor);
  return view;
}

SessionView ParseSession(const json& s) {
  SessionView view;
  view.id = s.value("id", 0u);
  view.pid = s.value("pid", 0u);
  view.name = s.value("name", "");
  view.memory_used = s.value("memory_used", uint64_t{0});
  view.contexts = s.value("contexts", 0u);
  if (s.contains("devices")) {
    for (const json& d : s.at("devices")) view.devices.push_back(d.get<int>());
  }
  view.compute_share = s.value("compute_share", 1u);
  view.priority = s.value("priority", "normal");
  view.started_us = s.value("started_us", uint64_t{0});
  if (s.contains("usage")) {
    for (const json& u : s.at("usage")) {
      UsageView usage;
      usage.device = u.value("device", 0);
      usage.kernels = u.value("kernels", uint64_t{0});
      usage.busy_ns = u.value("busy_ns", uint64_t{0});
      usage.queued_ns = u.value("queued_ns", uint64_t{0});
      usage.bytes_htod = u.value("bytes_htod", uint64_t{0});
      usage.bytes_dtoh = u.value("bytes_dtoh", uint64_t{0});
      view.usage.push_back(usage);
    }
  }
  return view;
}

}  // namespace

StatusOr<HostView> ParseHostStatus(std::string_view text) {
  try {
    const json status = json::parse(text);
    HostView view;
    if (status.contains("host")) {
      const json& host = status.at("host");
      view.version = host.value("version", "");
      view.driver_version = host.value("driver_version", 0);
      view.time_us = host.value("time_us", uint64_t{0});
    }
    if (status.contains("adapters")) {
      for (const json& a : status.at("adapters")) view.adapters.push_back(ParseAdapter(a));
    }
    if (status.contains("sessions")) {
      for (const json& s : status.at("sessions")) view.sessions.push_back(ParseSession(s));
    }
    return view;
  } catch (const json::exception& error) {
    return Error(Code::kUnknown, std::string("unreadable host status: ") + error.what());
  }
}

StatusOr<HostView> FetchHostStatus(Client& client) {
  PVGPU_TRY(client.Connect());
  std::vector<uint8_t> payload;
  const Code code = client.Call(protocol::HostStatusRequest{}, {}, nullptr, &payload);
  if (code != Code::kOk) {
    return Error(code, "host " + client.address() + " did not answer the status request");
  }
  return ParseHostStatus(
      std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()));
}

bool ParsePciBusId(std::string_view text, unsigned* domain, unsigned* bus, unsigned* device,
                   unsigned* function) {
  PciBusId id;
  if (!guest::ParsePciBusId(text, /*function_optional=*/false, &id)) return false;
  *domain = id.domain;
  *bus = id.bus;
  *device = id.device;
  *function = id.function;
  return true;
}

}  // namespace pvgpu::guest::nvml
