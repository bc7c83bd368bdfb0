// HostStatus: what a session may know about the host, as JSON. Non-admin sessions (containers
// on a restricted socket) see their own adapters, renumbered as they see them, and only the
// sessions of their own listener, so that nothing about other tenants leaks.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/uuid.h"
#include "host/server.h"
#include "host/session.h"
#include "host/version.h"
#include "ptx/jit.h"

namespace pvgpu::host {

using nlohmann::json;

namespace {

std::string PciBusId(const adapters::AdapterInfo& info) {
  char text[32];
  std::snprintf(text, sizeof(text), "%08x:%02x:%02x.0", info.pci_domain, info.pci_bus,
                info.pci_device);
  return text;
}

}  // namespace

uint64_t NowMicros() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000 + static_cast<uint64_t>(now.tv_nsec) / 1000;
}

// What the sessions of `viewer`'s own listener hold, for tenants that must not learn how much
// memory other tenants use on a shared adapter.
uint64_t Server::ListenerUse(const SessionPolicy& viewer, const adapters::Adapter* adapter) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t used = 0;
  for (auto& slot : sessions_) {
    if (slot.session->finished() || slot.session->policy().listener != viewer.listener) continue;
    const SessionSnapshot s = slot.session->Snapshot();
    const auto& adapters = slot.session->policy().adapters;
    for (uint32_t d : s.devices) {
      if (d < adapters.size() && adapters[d] == adapter) {
        used += s.used_bytes;
        break;
      }
    }
  }
  return used;
}

std::string Server::StatusJson(const SessionPolicy& viewer) {
  json status;
  status["host"] = {{"version", kVersionString},
                    {"driver_version", kCudaDriverVersion},
                    {"pid", static_cast<int>(getpid())},
                    {"time_us", NowMicros()}};
  {
    std::lock_guard<std::mutex> lock(utilization_mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (utilization_.size() != adapters_.size()) {
      utilization_.assign(adapters_.size(), 0);
      utilization_time_.assign(adapters_.size(), now - std::chrono::seconds(2));
    }
    for (size_t i = 0; i < adapters_.size(); ++i) {
      if (now - utilization_time_[i] >= std::chrono::seconds(1)) {
        utilization_[i] = adapters_[i]->SampleUtilization();
        utilization_time_[i] = now;
      }
    }
  }
  json adapters = json::array();
  auto host_index = [this](const adapters::Adapter* adapter) {
    for (size_t i = 0; i < adapters_.size(); ++i) {
      if (adapters_[i].get() == adapter) return static_cast<int>(i);
    }
    return -1;
  };
  for (size_t i = 0; i < viewer.adapters.size(); ++i) {
    const adapters::Adapter* adapter = viewer.adapters[i];
    const adapters::AdapterInfo& info = adapter->info();
    uint64_t total = info.total_memory;
    if (viewer.memory_quota != 0) total = std::min(total, viewer.memory_quota);
    const int index = host_index(adapter);
    adapters.push_back({
        {"index", i},
        {"host_index", index},
        {"kind", info.kind},
        {"name", info.name},
        {"uuid", FormatUuid(info.uuid.data())},
        {"luid", info.luid},
        {"software", info.is_software},
        {"engine", info.engine},
        {"integrated", info.is_integrated},
        {"memory_total", total},
        {"memory_used", viewer.admin ? adapter->used_bytes() : ListenerUse(viewer, adapter)},
        {"adapter_memory_total", info.total_memory},
        {"utilization_percent", utilization_[index]},
        {"pci_bus_id", PciBusId(info)},
        {"compute_capability",
         std::to_string(info.attributes[75]) + "." + std::to_string(info.attributes[76])},
    });
  }
  status["adapters"] = adapters;
  // The cpu adapters' compiling engine, for the whole daemon (docs/jit.md).
  const ptx::JitTotals jit = ptx::GetJitTotals();
  status["jit"] = {{"available", ptx::JitAvailable()},
                   {"kernels", jit.kernels},
                   {"compiled", jit.compiled},
                   {"memory_hits", jit.memory_hits},
                   {"disk_hits", jit.disk_hits},
                   {"failed", jit.failed},
                   {"pending", jit.pending},
                   {"compile_ms", jit.compile_ms}};

  json sessions = json::array();
  json listeners = json::array();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& slot : sessions_) {
      if (slot.session->finished()) continue;
      const SessionPolicy& policy = slot.session->policy();
      if (!viewer.admin && policy.listener != viewer.listener) continue;
      SessionSnapshot s = slot.session->Snapshot();
      json devices = json::array();
      for (uint32_t d : s.devices) {
        if (d >= policy.adapters.size()) continue;
        // Reported in the viewer's numbering (host numbering for admins).
        const adapters::Adapter* adapter = policy.adapters[d];
        int shown = -1;
        if (viewer.admin) {
          shown = host_index(adapter);
        } else {
          auto it = std::find(viewer.adapters.begin(), viewer.adapters.end(), adapter);
          if (it != viewer.adapters.end()) shown = static_cast<int>(it - viewer.adapters.begin());
        }
        if (shown >= 0) devices.push_back(shown);
      }
      // What its work used, per adapter the viewer sees (docs/sharing.md).
      json usage = json::array();
      for (size_t d = 0; d < s.usage.size() && d < policy.adapters.size(); ++d) {
        const adapters::Adapter* adapter = policy.adapters[d];
        int shown = -1;
        if (viewer.admin) {
          shown = host_index(adapter);
        } else {
          auto it = std::find(viewer.adapters.begin(), viewer.adapters.end(), adapter);
          if (it != viewer.adapters.end()) shown = static_cast<int>(it - viewer.adapters.begin());
        }
        if (shown < 0) continue;
        const FlowUsage& u = s.usage[d];
        usage.push_back({{"device", shown},
                         {"kernels", u.kernels},
                         {"busy_ns", u.busy_ns},
                         {"queued_ns", u.queued_ns},
                         {"worker_ns", u.worker_ns},
                         {"bytes_htod", u.bytes_htod},
                         {"bytes_dtoh", u.bytes_dtoh}});
      }
      json entry = {{"id", s.id},
                    {"pid", s.guest_pid},
                    {"name", s.guest_name},
                    {"memory_used", s.used_bytes},
                    {"contexts", s.contexts},
                    {"devices", devices},
                    {"compute_share", s.compute_share},
                    {"priority", s.high_priority ? "high" : "normal"},
                    {"faults", s.faults},
                    {"started_us", s.started_us},
                    {"usage", usage}};
      if (viewer.admin) {
        entry["channel"] = s.channel;
        entry["listener"] = policy.listener;
      }
      sessions.push_back(entry);
    }
    if (viewer.admin) {
      for (auto& listener : listeners_) {
        json indices = json::array();
        for (auto* adapter : listener->policy.adapters) indices.push_back(host_index(adapter));
        listeners.push_back({{"address", listener->config.address},
                             {"adapters", indices},
                             {"memory_quota", listener->config.memory_quota},
                             {"admin", listener->config.admin},
                             {"compute_share", listener->policy.compute_share},
                             {"priority", listener->policy.high_priority ? "high" : "normal"}});
      }
    }
  }
  status["sessions"] = sessions;
  if (viewer.admin) status["listeners"] = listeners;
  return status.dump();
}

Outcome Session::Execute(const protocol::HostStatusRequest&, Span) {
  if (policy_.server == nullptr) return Code::kNotSupported;
  const std::string text = policy_.server->StatusJson(policy_);
  protocol::HostStatusReply reply;
  reply.result = 0;
  SendReply(reply, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  return Code::kOk;
}

}  // namespace pvgpu::host
