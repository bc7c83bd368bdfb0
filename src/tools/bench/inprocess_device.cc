#include "tools/bench/inprocess_device.h"

#include <cstring>
#include <iostream>

#include "adapters/registry.h"
#include "tools/bench/kernels.h"

namespace pvgpu::tools::bench {
namespace {

adapters::Dim3 ToDim3(Shape shape) { return adapters::Dim3{shape.x, shape.y, shape.z}; }

// Device printf from a bench kernel would be a bug in the kernel; show it rather than drop it.
void PrintDeviceOutput(std::string_view text) { std::cerr << text; }

}  // namespace

StatusOr<std::unique_ptr<InprocessDevice>> InprocessDevice::Open(const std::string& spec) {
  if (kBenchKernelsPtx[0] == '\0') {
    return Error(Code::kNotSupported, "pvgpu was built without nvcc: no benchmark kernels");
  }
  std::unique_ptr<InprocessDevice> device(new InprocessDevice());
  PVGPU_ASSIGN_OR_RETURN(device->adapters_, adapters::CreateAdapters(spec, {}));
  if (device->adapters_.empty()) return Error(Code::kNoDevice, "no adapter for '" + spec + "'");
  PVGPU_ASSIGN_OR_RETURN(device->context_, device->adapters_.front()->CreateContext());
  std::string error_log, info_log;
  const auto* ptx = reinterpret_cast<const uint8_t*>(kBenchKernelsPtx);
  auto module = device->context_->LoadModule(
      adapters::ImageKind::kPtx, {ptx, std::strlen(kBenchKernelsPtx) + 1}, &error_log, &info_log);
  if (!module.ok()) return module.status().WithContext("bench kernels: " + error_log);
  device->module_ = std::move(module).value();
  return device;
}

InprocessDevice::~InprocessDevice() {
  // The module's globals live in the context: release in that order.
  module_.reset();
  context_.reset();
}

StatusOr<uint64_t> InprocessDevice::Allocate(size_t bytes) { return context_->Allocate(bytes); }

Status InprocessDevice::Free(uint64_t dptr) { return context_->Free(dptr); }

Status InprocessDevice::Upload(uint64_t dst, const void* src, size_t bytes) {
  return context_->Write(dst, {static_cast<const uint8_t*>(src), bytes});
}

Status InprocessDevice::Download(void* dst, uint64_t src, size_t bytes) {
  return context_->Read(src, {static_cast<uint8_t*>(dst), bytes});
}

StatusOr<uint32_t> InprocessDevice::KernelIndex(std::string_view kernel) const {
  const auto& kernels = module_->kernels();
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (kernels[i].name == kernel) return static_cast<uint32_t>(i);
  }
  return Error(Code::kNotFound, "no kernel " + std::string(kernel) + " in the bench module");
}

Status InprocessDevice::Launch(std::string_view kernel, Shape grid, Shape block,
                               std::initializer_list<KernelArg> args) {
  PVGPU_ASSIGN_OR_RETURN(uint32_t index, KernelIndex(kernel));
  // Lay the arguments out as the kernel's parameter list says, as the host's session does
  // with a guest's kernelParams.
  const adapters::KernelInfo& info = module_->kernels()[index];
  if (args.size() != info.param_offsets.size()) {
    return Error(Code::kInvalidValue, std::string(kernel) + ": wrong number of arguments");
  }
  std::vector<uint8_t> params(info.param_bytes);
  size_t i = 0;
  for (const KernelArg& arg : args) {
    if (arg.size != info.param_sizes[i]) {
      return Error(Code::kInvalidValue,
                   std::string(kernel) + ": argument " + std::to_string(i) + " has the wrong size");
    }
    std::memcpy(params.data() + info.param_offsets[i], arg.data, arg.size);
    ++i;
  }
  return LaunchPrepared(index, grid, block, params);
}

Status InprocessDevice::LaunchPrepared(uint32_t kernel, Shape grid, Shape block,
                                       const std::vector<uint8_t>& params) {
  adapters::LaunchConfig config;
  config.grid = ToDim3(grid);
  config.block = ToDim3(block);
  return context_->Launch(*module_, kernel, config, params, PrintDeviceOutput);
}

}  // namespace pvgpu::tools::bench
