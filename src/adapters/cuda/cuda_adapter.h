// The cuda adapter: the host's NVIDIA GPUs through its own CUDA driver (libcuda.so.1, loaded by
// path) and NVML. Each pvgpu context is a real CUDA context with one stream; work is submitted
// with the driver's asynchronous calls and completion comes back through NotifyWhenDone, so a
// guest's pipeline stays asynchronous end to end. Validation stays in the session layer.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/busy_tracker.h"
#include "adapters/cuda/driver_api.h"
#include "adapters/cuda/nvml.h"

namespace pvgpu::adapters::cuda {

struct CudaOptions {
  std::string driver_path;                    // --cuda-driver; empty: the standard locations
  std::string nvml_path;                      // --nvml; empty: the standard locations
  std::vector<std::string> listen_addresses;  // the daemon's own, for the loop guard
};

class CudaAdapter final : public Adapter {
 public:
  CudaAdapter(std::shared_ptr<Driver> driver, std::shared_ptr<Nvml> nvml, CUdevice device,
              AdapterInfo info);

  const AdapterInfo& info() const override { return info_; }
  StatusOr<std::unique_ptr<Context>> CreateContext() override;
  uint64_t used_bytes() const override { return used_.load(); }
  // NVML's figure when NVML knows the device, else the share of time with kernels in flight.
  uint32_t SampleUtilization() override;

  const Driver& driver() const { return *driver_; }
  CUdevice device() const { return device_; }
  BusyTracker& busy() { return busy_; }
  bool tracks_busy() const { return nvml_device_ == nullptr; }
  void AddUsed(int64_t delta) { used_.fetch_add(delta); }

 private:
  std::shared_ptr<Driver> driver_;
  std::shared_ptr<Nvml> nvml_;
  void* nvml_device_ = nullptr;
  const CUdevice device_;
  const AdapterInfo info_;
  std::atomic<uint64_t> used_{0};
  BusyTracker busy_;
};

// One adapter per device the driver reports. An error (no driver, no device, loop guard)
// explains why there are none; the caller decides whether that is fatal.
StatusOr<std::vector<std::unique_ptr<Adapter>>> CreateCudaAdapters(const CudaOptions& options);

// Reads name, UUID, memory, PCI location and every attribute the driver answers.
StatusOr<AdapterInfo> QueryAdapterInfo(const Driver& driver, CUdevice device);

}  // namespace pvgpu::adapters::cuda
