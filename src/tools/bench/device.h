// What the throughput benchmarks (nbody, matmul, bandwidth) need from "a GPU", so that each is
// written once and runs both through the guest library over the channel (GuestDevice) and on
// an adapter called directly in this process (InprocessDevice), the native baseline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/status.h"

namespace pvgpu::tools::bench {

struct Shape {
  unsigned x = 1, y = 1, z = 1;
};

// One kernel argument: its bytes, laid out by the kernel's parameter list.
struct KernelArg {
  const void* data;
  size_t size;
};

template <typename T>
KernelArg Arg(const T& value) {
  return KernelArg{&value, sizeof(T)};
}

class Device {
 public:
  virtual ~Device() = default;
  // For tables: "channel" or "in-process".
  virtual std::string label() const = 0;

  virtual StatusOr<uint64_t> Allocate(size_t bytes) = 0;
  virtual Status Free(uint64_t dptr) = 0;
  virtual Status Upload(uint64_t dst, const void* src, size_t bytes) = 0;
  virtual Status Download(void* dst, uint64_t src, size_t bytes) = 0;
  // Queues `kernel` from the embedded bench module. Arguments must outlive only the call.
  virtual Status Launch(std::string_view kernel, Shape grid, Shape block,
                        std::initializer_list<KernelArg> args) = 0;
  // Waits for everything queued so far.
  virtual Status Synchronize() = 0;
};

}  // namespace pvgpu::tools::bench
