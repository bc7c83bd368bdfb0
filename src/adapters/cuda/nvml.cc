#include "adapters/cuda/nvml.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>

#include "adapters/cuda/driver_api.h"
#include "common/log.h"

namespace pvgpu::adapters::cuda {
namespace {

using NvmlReturn = int;  // nvmlReturn_t; NVML_SUCCESS is 0
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

}  // namespace

struct Nvml::Api {
  void* handle = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_uuid)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
};

std::string FormatGpuUuid(const std::array<uint8_t, 16>& u) {
  char text[48];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return text;
}

StatusOr<std::shared_ptr<Nvml>> Nvml::Load(const std::string& path) {
  std::string chosen = path;
  if (chosen.empty()) {
    for (const auto& candidate : StandardLibraryPaths("libnvidia-ml.so.1")) {
      if (access(candidate.c_str(), R_OK) == 0 && !IsPvgpuLibrary(candidate)) {
        chosen = candidate;
        break;
      }
    }
    if (chosen.empty()) {
      return Error(Code::kNotFound, "no libnvidia-ml.so.1 in the standard locations");
    }
  }
  auto api = std::make_unique<Api>();
  api->handle = dlopen(chosen.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->handle == nullptr) {
    return Error(Code::kNotFound, std::string("cannot load ") + chosen + ": " + dlerror());
  }
  auto sym = [&](const char* name) { return dlsym(api->handle, name); };
  api->init = reinterpret_cast<decltype(api->init)>(sym("nvmlInit_v2"));
  api->shutdown = reinterpret_cast<decltype(api->shutdown)>(sym("nvmlShutdown"));
  api->by_uuid = reinterpret_cast<decltype(api->by_uuid)>(sym("nvmlDeviceGetHandleByUUID"));
  api->utilization =
      reinterpret_cast<decltype(api->utilization)>(sym("nvmlDeviceGetUtilizationRates"));
  api->memory = reinterpret_cast<decltype(api->memory)>(sym("nvmlDeviceGetMemoryInfo"));
  if (api->init == nullptr || api->by_uuid == nullptr) {
    return Error(Code::kNotSupported, chosen + " lacks nvmlInit_v2 or nvmlDeviceGetHandleByUUID");
  }
  if (const NvmlReturn r = api->init(); r != 0) {
    return Error(Code::kNotInitialized, chosen + ": nvmlInit_v2 returned " + std::to_string(r));
  }
  PVGPU_INFO("cuda adapter: NVML " << chosen);
  std::shared_ptr<Nvml> nvml(new Nvml());
  nvml->api_ = std::move(api);
  return nvml;
}

Nvml::~Nvml() {
  // Balanced with nvmlInit_v2; the library stays loaded, as the driver does.
  if (api_ && api_->shutdown != nullptr) api_->shutdown();
}

void* Nvml::FindDevice(const std::array<uint8_t, 16>& uuid) const {
  NvmlDevice device = nullptr;
  if (api_->by_uuid(FormatGpuUuid(uuid).c_str(), &device) != 0) return nullptr;
  return device;
}

std::optional<uint32_t> Nvml::Utilization(void* device) const {
  NvmlUtilization rates{};
  if (device == nullptr || api_->utilization == nullptr || api_->utilization(device, &rates) != 0) {
    return std::nullopt;
  }
  return rates.gpu;
}

std::optional<uint64_t> Nvml::UsedMemory(void* device) const {
  NvmlMemory memory{};
  if (device == nullptr || api_->memory == nullptr || api_->memory(device, &memory) != 0) {
    return std::nullopt;
  }
  return memory.used;
}

}  // namespace pvgpu::adapters::cuda
