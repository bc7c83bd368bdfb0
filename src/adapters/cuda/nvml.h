// The host's NVML (libnvidia-ml.so.1), loaded by path like the driver, for the answers only
// NVML has: utilization and the device's memory use as the whole machine sees it.
//
// The toolkit ships no nvml.h on every machine, so the few types used are declared here with
// NVML's ABI (nvmlReturn_t is an int, handles are opaque pointers).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"

namespace pvgpu::adapters::cuda {

class Nvml {
 public:
  // Loads and initializes NVML from `path` (empty: the standard locations). pvgpu's own guest
  // NVML is refused unless given explicitly, for the same loop reason as the driver.
  static StatusOr<std::shared_ptr<Nvml>> Load(const std::string& path);
  ~Nvml();

  // The NVML device with this CUDA UUID, or null when NVML does not know it.
  void* FindDevice(const std::array<uint8_t, 16>& uuid) const;
  // Percent of the last sample period during which a kernel ran.
  std::optional<uint32_t> Utilization(void* device) const;
  // Bytes in use on the device by every process.
  std::optional<uint64_t> UsedMemory(void* device) const;

 private:
  Nvml() = default;
  struct Api;
  std::unique_ptr<Api> api_;
};

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", the form NVML and nvidia-smi print.
std::string FormatGpuUuid(const std::array<uint8_t, 16>& uuid);

}  // namespace pvgpu::adapters::cuda
