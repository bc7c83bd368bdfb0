// Utilization in NVML's sense: the share of wall time, over the period since the previous
// sample, during which at least one kernel was running on the adapter.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace pvgpu::adapters {

class BusyTracker {
 public:
  void KernelStarted() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (active_++ == 0) busy_since_ = Now();
  }
  void KernelFinished() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--active_ == 0) busy_ns_ += Now() - busy_since_;
  }
  // Busy time since the tracker was made.
  uint64_t TotalNs() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<uint64_t>(busy_ns_ + (active_ > 0 ? Now() - busy_since_ : 0));
  }
  // Percent busy since the previous call.
  uint32_t SamplePercent() {
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t now = Now();
    const int64_t total = busy_ns_ + (active_ > 0 ? now - busy_since_ : 0);
    const int64_t busy = total - last_total_;
    const int64_t period = now - last_sample_;
    last_total_ = total;
    last_sample_ = now;
    if (period <= 0) return 0;
    const int64_t percent = busy * 100 / period;
    return static_cast<uint32_t>(percent < 0 ? 0 : (percent > 100 ? 100 : percent));
  }

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  std::mutex mutex_;
  int active_ = 0;
  int64_t busy_since_ = 0;
  int64_t busy_ns_ = 0;
  int64_t last_sample_ = Now();
  int64_t last_total_ = 0;
};

}  // namespace pvgpu::adapters
