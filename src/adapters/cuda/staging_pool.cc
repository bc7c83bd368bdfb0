#include "adapters/cuda/staging_pool.h"

#include "adapters/cuda/completion_queue.h"
#include "common/log.h"

namespace pvgpu::adapters::cuda {

StagingPool::~StagingPool() {
  if (free_.empty()) return;
  ScopedContext current(driver_.api(), context_);
  for (void* buffer : free_) driver_.api().cuMemFreeHost(buffer);
}

void* StagingPool::Take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_.empty()) {
    void* buffer = free_.back();
    free_.pop_back();
    return buffer;
  }
  if (unavailable_ || allocated_ >= kMaxBuffers || driver_.api().cuMemAllocHost == nullptr ||
      driver_.api().cuMemFreeHost == nullptr) {
    return nullptr;
  }
  void* buffer = nullptr;
  Status allocated =
      driver_.Check(driver_.api().cuMemAllocHost(&buffer, kBufferBytes), "cuMemAllocHost");
  if (!allocated.ok()) {
    PVGPU_DEBUG("cuda adapter: no pinned staging (" << allocated.message()
                                                    << "); copies stage through the driver");
    unavailable_ = true;
    return nullptr;
  }
  ++allocated_;
  return buffer;
}

void StagingPool::Return(void* buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(buffer);
}

}  // namespace pvgpu::adapters::cuda
