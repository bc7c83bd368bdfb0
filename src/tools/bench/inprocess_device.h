// The native baseline: a cpu adapter created in this process and called directly, with no
// guest library, channel or daemon in between. Whatever a benchmark measures through
// GuestDevice minus what it measures here is the price of paravirtualization.
#pragma once

#include <memory>
#include <vector>

#include "adapters/adapter.h"
#include "tools/bench/device.h"

namespace pvgpu::tools::bench {

class InprocessDevice final : public Device {
 public:
  // Builds the adapters for `spec` ("cpu", as a private pvgpud would), a context on the first,
  // and loads the embedded bench module.
  static StatusOr<std::unique_ptr<InprocessDevice>> Open(const std::string& spec = "cpu");
  ~InprocessDevice() override;

  std::string label() const override { return "in-process"; }
  StatusOr<uint64_t> Allocate(size_t bytes) override;
  Status Free(uint64_t dptr) override;
  Status Upload(uint64_t dst, const void* src, size_t bytes) override;
  Status Download(void* dst, uint64_t src, size_t bytes) override;
  // Runs to completion before returning: adapters are synchronous (see adapters/adapter.h).
  Status Launch(std::string_view kernel, Shape grid, Shape block,
                std::initializer_list<KernelArg> args) override;
  Status Synchronize() override { return Status::Ok(); }

  // For the latency benchmark: a launch with a kernel index and parameter bytes prepared in
  // advance, so that only the adapter's own work is timed.
  StatusOr<uint32_t> KernelIndex(std::string_view kernel) const;
  Status LaunchPrepared(uint32_t kernel, Shape grid, Shape block,
                        const std::vector<uint8_t>& params);
  const adapters::AdapterInfo& info() const { return adapters_.front()->info(); }

 private:
  InprocessDevice() = default;

  std::vector<std::unique_ptr<adapters::Adapter>> adapters_;
  std::unique_ptr<adapters::Context> context_;
  std::unique_ptr<adapters::Module> module_;
};

}  // namespace pvgpu::tools::bench
