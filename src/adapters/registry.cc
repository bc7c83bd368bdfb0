#include "adapters/registry.h"

#include <optional>
#include <sstream>

#include "adapters/cpu/cpu_adapter.h"
#include "adapters/cuda/cuda_adapter.h"
#include "common/log.h"

namespace pvgpu::adapters {

StatusOr<std::vector<std::unique_ptr<Adapter>>> CreateAdapters(const std::string& spec,
                                                                const RegistryOptions& options) {
  std::vector<std::unique_ptr<Adapter>> adapters;
  std::shared_ptr<ptx::Executor> executor;
  uint32_t cpu_index = 0;
  std::string cuda_missing;  // why the cuda kind gave no adapters, for the error below
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    // KIND[:OPTION=VALUE]...
    std::string kind = item;
    uint64_t memory = 0;
    std::optional<ptx::Engine> engine;
    if (auto colon = item.find(':'); colon != std::string::npos) {
      kind = item.substr(0, colon);
      std::stringstream opts(item.substr(colon + 1));
      std::string option;
      while (std::getline(opts, option, ':')) {
        if (option.rfind("memory=", 0) == 0) {
          if (!ParseByteSize(option.substr(7), &memory) || memory == 0) {
            return Error(Code::kInvalidValue, "bad adapter option '" + option +
                                                  "' (expected memory=SIZE, e.g. memory=4G)");
          }
        } else if (option.rfind("engine=", 0) == 0) {
          auto e = ptx::ParseEngine(option.substr(7));
          if (!e.ok()) {
            return Error(Code::kInvalidValue,
                         "bad adapter option '" + option + "': " + e.status().message());
          }
          engine = *e;
        } else {
          return Error(Code::kInvalidValue,
                       "bad adapter option '" + option +
                           "' (expected memory=SIZE or engine=interp|jit|auto)");
        }
      }
    }
    if (kind == "cpu") {
      if (!executor) executor = std::make_shared<ptx::Executor>(options.cpu_threads);
      cpu::CpuAdapterOptions cpu_options;
      cpu_options.index = cpu_index++;
      cpu_options.memory_bytes = memory != 0 ? memory : options.cpu_memory_bytes;
      cpu_options.engine = engine;
      adapters.push_back(std::make_unique<cpu::CpuAdapter>(cpu_options, executor));
    } else if (kind == "cuda") {
      if (memory != 0) {
        return Error(Code::kInvalidValue, "the cuda kind takes no memory= option (a GPU offers "
                                          "its own memory; use --quota to limit sessions)");
      }
      if (engine) {
        return Error(Code::kInvalidValue,
                     "the cuda kind takes no engine= option (its GPUs run kernels in the host "
                     "driver; engine= chooses the cpu adapter's PTX engine)");
      }
      cuda::CudaOptions cuda_options;
      cuda_options.driver_path = options.cuda_driver;
      cuda_options.nvml_path = options.nvml;
      cuda_options.listen_addresses = options.listen_addresses;
      auto gpus = cuda::CreateCudaAdapters(cuda_options);
      if (!gpus.ok()) {
        cuda_missing = gpus.status().message();
        PVGPU_INFO("cuda adapter: no GPUs served: " << cuda_missing);
        continue;
      }
      for (auto& gpu : *gpus) adapters.push_back(std::move(gpu));
    } else {
      return Error(Code::kInvalidValue,
                   "unknown adapter kind '" + kind + "' (this build offers: cpu, cuda)");
    }
  }
  if (adapters.empty() && !cuda_missing.empty()) {
    return Error(Code::kNoDevice, "no adapters: the cuda kind found no GPU (" + cuda_missing + ")");
  }
  if (adapters.empty()) return Error(Code::kInvalidValue, "no adapters given");
  return adapters;
}

}  // namespace pvgpu::adapters
