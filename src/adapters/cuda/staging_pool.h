// Pinned staging buffers for host-to-device copies.
//
// A session's HtoD data sits in its message buffer, reused as soon as the adapter returns. The
// driver could copy from it directly, but CUDA defines cuMemcpyHtoDAsync from pageable memory
// to wait for the stream before staging the bytes, which would block the session thread behind
// every queued kernel. Copying the bytes into a pinned buffer first keeps the call
// asynchronous; the buffer returns to the pool when the copy has completed.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "adapters/cuda/driver_api.h"

namespace pvgpu::adapters::cuda {

class StagingPool {
 public:
  static constexpr size_t kBufferBytes = size_t{4} << 20;
  // Pinned memory held per context at most; beyond it copies fall back to pageable memory,
  // which throttles a guest that queues copies faster than the GPU takes them.
  static constexpr size_t kMaxBuffers = 16;

  StagingPool(const Driver& driver, CUcontext context) : driver_(driver), context_(context) {}
  // Every buffer must have been returned.
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // A pinned buffer of kBufferBytes, or null when none can be had (the driver lacks
  // cuMemAllocHost or refused it, or the pool is at its limit). Session thread, with the
  // context current.
  void* Take();
  // Gives a buffer back (any thread).
  void Return(void* buffer);

 private:
  const Driver& driver_;
  const CUcontext context_;
  std::mutex mutex_;
  std::vector<void*> free_;
  size_t allocated_ = 0;
  bool unavailable_ = false;  // the driver refused once: do not ask again
};

}  // namespace pvgpu::adapters::cuda
