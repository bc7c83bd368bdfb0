// PCI bus ids as CUDA and NVML write them ("0000:c0:00.0") and read them back
// (cuDeviceGetByPCIBusId, nvmlDeviceGetHandleByPciBusId): one parser for both libraries.
#pragma once

#include <cctype>
#include <string_view>

namespace pvgpu::guest {

struct PciBusId {
  unsigned domain = 0;
  unsigned bus = 0;
  unsigned device = 0;
  unsigned function = 0;
};

namespace pci_internal {

// One field: 1 to 8 hexadecimal digits, any case.
inline bool ParseHexField(std::string_view text, unsigned* value) {
  if (text.empty() || text.size() > 8) return false;
  unsigned out = 0;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (!std::isxdigit(u)) return false;
    out = out * 16 + static_cast<unsigned>(std::isdigit(u) ? c - '0' : std::tolower(u) - 'a' + 10);
  }
  *value = out;
  return true;
}

}  // namespace pci_internal

// Parses "DOMAIN:BUS:DEVICE.FUNCTION" and "BUS:DEVICE.FUNCTION" (the domain is then 0), and,
// when `function_optional`, "DOMAIN:BUS:DEVICE" (the function is then 0): every field
// hexadecimal, with or without leading zeros. NVML accepts the first two forms, CUDA all three.
inline bool ParsePciBusId(std::string_view text, bool function_optional, PciBusId* out) {
  using pci_internal::ParseHexField;
  PciBusId id;
  const size_t dot = text.rfind('.');
  std::string_view head = text;
  if (dot != std::string_view::npos) {
    if (!ParseHexField(text.substr(dot + 1), &id.function)) return false;
    head = text.substr(0, dot);
  } else if (!function_optional) {
    return false;
  }
  const size_t last = head.rfind(':');
  if (last == std::string_view::npos || !ParseHexField(head.substr(last + 1), &id.device)) {
    return false;
  }
  head = head.substr(0, last);
  const size_t first = head.rfind(':');
  if (first == std::string_view::npos) {
    // BUS:DEVICE only with a function: without one, "c0:00" could be either half of a domain.
    if (dot == std::string_view::npos || !ParseHexField(head, &id.bus)) return false;
  } else if (!ParseHexField(head.substr(0, first), &id.domain) ||
             !ParseHexField(head.substr(first + 1), &id.bus)) {
    return false;
  }
  *out = id;
  return true;
}

}  // namespace pvgpu::guest
