// Builds the host's adapters from a list such as "cpu", "cpu,cpu" or "cpu:memory=4G".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "common/byte_size.h"
#include "common/status.h"

namespace pvgpu::adapters {

struct RegistryOptions {
  unsigned cpu_threads = 0;       // workers shared by all cpu adapters; 0 = UsableCpus()
  uint64_t cpu_memory_bytes = 0;  // default budget of each cpu adapter; 0 = half of RAM
  std::string cuda_driver;        // --cuda-driver: libcuda.so.1 to load; empty: standard paths
  std::string nvml;               // --nvml: libnvidia-ml.so.1 to load; empty: standard paths
  std::vector<std::string> listen_addresses;  // the daemon's own, for the cuda loop guard
};

// Parses "KIND[:OPTION=VALUE]...[,KIND...]", options memory=SIZE (cpu; SIZE takes K, M, G
// suffixes, powers of 1024) and engine=interp|jit|auto (cpu: its PTX engine, see ptx::Engine).
// "cuda" stands for every GPU the host's CUDA driver reports, in the driver's order; when the
// driver is absent or has none it contributes no adapters (logged), and only an empty result
// is an error.
StatusOr<std::vector<std::unique_ptr<Adapter>>> CreateAdapters(const std::string& spec,
                                                                const RegistryOptions& options);

using pvgpu::ParseByteSize;  // common/byte_size.h

}  // namespace pvgpu::adapters
