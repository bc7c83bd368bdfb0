#include "adapters/registry.h"

#include <cctype>
#include <sstream>

#include "adapters/cpu/cpu_adapter.h"
#include "adapters/cuda/cuda_adapter.h"
#include "common/log.h"

namespace pvgpu::adapters {

bool ParseByteSize(const std::string& text, uint64_t* bytes) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  size_t end = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (...) {
    return false;
  }
  std::string suffix = text.substr(end);
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.pop_back();
  if (suffix == "i") return false;
  if (!suffix.empty() && suffix.back() == 'i') suffix.pop_back();
  int shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else if (suffix == "T" || suffix == "t") shift = 40;
  else return false;
  if (shift != 0 && value > (~0ull >> shift)) return false;
  *bytes = value << shift;
  return true;
}

StatusOr<std::vector<std::unique_ptr<Adapter>>> CreateAdapters(const std::string& spec,
                                                                const RegistryOptions& options) {
  std::vector<std::unique_ptr<Adapter>> adapters;
  std::shared_ptr<ptx::Executor> executor;
  uint32_t cpu_index = 0;
  std::string cuda_missing;  // why the cuda kind gave no adapters, for the error below
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::string kind = item;
    uint64_t memory = 0;
    if (auto colon = item.find(':'); colon != std::string::npos) {
      kind = item.substr(0, colon);
      const std::string option = item.substr(colon + 1);
      if (option.rfind("memory=", 0) != 0 || !ParseByteSize(option.substr(7), &memory) ||
          memory == 0) {
        return Error(Code::kInvalidValue,
                     "bad adapter option '" + option + "' (expected memory=SIZE, e.g. memory=4G)");
      }
    }
    if (kind == "cpu") {
      if (!executor) executor = std::make_shared<ptx::Executor>(options.cpu_threads);
      cpu::CpuAdapterOptions cpu_options;
      cpu_options.index = cpu_index++;
      cpu_options.memory_bytes = memory != 0 ? memory : options.cpu_memory_bytes;
      adapters.push_back(std::make_unique<cpu::CpuAdapter>(cpu_options, executor));
    } else if (kind == "cuda") {
      if (memory != 0) {
        return Error(Code::kInvalidValue, "the cuda kind takes no memory= option (a GPU offers "
                                          "its own memory; use --quota to limit sessions)");
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
