// The benchmarks' view of pvgpu as an application sees it: the guest libcuda.so.1, loaded into
// this process and talking to the host named by PVGPU_HOST over the channel.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "tools/bench/device.h"
#include "tools/bench/driver_api.h"

namespace pvgpu::tools::bench {

class GuestDevice final : public Device {
 public:
  // Loads `library` (PREFIX/lib/pvgpu/libcuda.so.1), initializes it against the host that
  // PVGPU_HOST names (the caller sets it first), creates a context on device 0 and loads the
  // embedded bench module. Only one per process: the guest library keeps one client per host.
  static StatusOr<std::unique_ptr<GuestDevice>> Open(const std::string& library);
  ~GuestDevice() override;

  std::string label() const override { return "channel"; }
  StatusOr<uint64_t> Allocate(size_t bytes) override;
  Status Free(uint64_t dptr) override;
  Status Upload(uint64_t dst, const void* src, size_t bytes) override;
  Status Download(void* dst, uint64_t src, size_t bytes) override;
  Status Launch(std::string_view kernel, Shape grid, Shape block,
                std::initializer_list<KernelArg> args) override;
  Status Synchronize() override;

  // For the latency benchmark, which times individual driver calls.
  const DriverApi& api() const { return api_; }
  StatusOr<CUfunction> Function(std::string_view kernel);
  // cuDeviceGetName of device 0, e.g. "pvgpu cpu adapter".
  const std::string& device_name() const { return device_name_; }

 private:
  explicit GuestDevice(DriverApi api) : api_(api) {}

  DriverApi api_;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  std::string device_name_;
  std::map<std::string, CUfunction, std::less<>> functions_;
};

}  // namespace pvgpu::tools::bench
