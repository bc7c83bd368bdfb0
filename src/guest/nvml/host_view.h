// What libnvidia-ml.so.1 knows about the hosts: their HostStatus JSON (src/host/status.cc),
// parsed into plain structs. Kept apart from the NVML exports so that the parsing is tested
// without a host, and so that nlohmann-json exceptions stop here (none may cross the C ABI).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace pvgpu::guest {
class Client;
}

namespace pvgpu::guest::nvml {

struct AdapterView {
  int index = 0;  // in the host's numbering for this session
  std::string kind;
  std::string name;
  std::string uuid;  // "GPU-..."
  uint64_t luid = 0;
  bool software = false;
  bool integrated = false;
  // memory_total is already the session's quota when one applies; memory_used is the
  // adapter's, shared by every session on it.
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
  unsigned utilization_percent = 0;
  std::string pci_bus_id;
  unsigned pci_domain = 0, pci_bus = 0, pci_device = 0;
  int cc_major = 0, cc_minor = 0;
};

// What a session's work used on one adapter (HostStatus "usage", docs/sharing.md).
struct UsageView {
  int device = 0;  // adapter index in this session's numbering
  uint64_t kernels = 0;
  uint64_t busy_ns = 0;
  uint64_t queued_ns = 0;
  uint64_t bytes_htod = 0;
  uint64_t bytes_dtoh = 0;
};

struct SessionView {
  uint32_t id = 0;
  uint32_t pid = 0;
  std::string name;
  uint64_t memory_used = 0;
  uint32_t contexts = 0;
  std::vector<int> devices;  // adapter indices in this session's numbering
  uint32_t compute_share = 1;
  std::string priority = "normal";
  uint64_t started_us = 0;  // microseconds since the epoch
  std::vector<UsageView> usage;
  // The usage entry for `device`, or null.
  const UsageView* UsageOn(int device) const {
    for (const UsageView& u : usage) {
      if (u.device == device) return &u;
    }
    return nullptr;
  }
};

struct HostView {
  std::string version;     // "pvgpu 0.1.0"
  int driver_version = 0;  // CUDA driver API version, e.g. 13000
  uint64_t time_us = 0;    // the host's clock when it answered (microseconds since the epoch)
  std::vector<AdapterView> adapters;
  std::vector<SessionView> sessions;
};

// Parses the HostStatus JSON. Missing optional fields keep their defaults; a document that is
// not JSON, or whose fields have the wrong types, is kUnknown with the reason.
StatusOr<HostView> ParseHostStatus(std::string_view text);

// Connects (once per process) and asks the host for its status.
StatusOr<HostView> FetchHostStatus(Client& client);

// Parses "DOMAIN:BUS:DEVICE.FUNCTION" or "BUS:DEVICE.FUNCTION" (hexadecimal, any case, with or
// without leading zeros), the forms NVML accepts for nvmlDeviceGetHandleByPciBusId.
bool ParsePciBusId(std::string_view text, unsigned* domain, unsigned* bus, unsigned* device,
                   unsigned* function);

}  // namespace pvgpu::guest::nvml
