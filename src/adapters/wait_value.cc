#include "adapters/wait_value.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace pvgpu::adapters {

Status PollValue(FunctionRef<StatusOr<uint64_t>()> read, FunctionRef<bool(uint64_t)> satisfied,
                 const std::atomic<bool>& cancel) {
  // A value another thread is about to write is usually seen within the spins; a wait for the
  // guest's host code or another session sleeps, so it costs the daemon's cores nothing.
  constexpr int kSpins = 200;
  constexpr auto kLongestSleep = std::chrono::microseconds(1000);
  auto sleep = std::chrono::microseconds(10);
  for (int round = 0;; ++round) {
    if (cancel.load(std::memory_order_acquire)) {
      return Error(Code::kLaunchFailed, "stream wait cancelled: the context is going away");
    }
    StatusOr<uint64_t> current = read();
    if (!current.ok()) return current.status();
    if (satisfied(*current)) return Status::Ok();
    if (round < kSpins) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, kLongestSleep);
  }
}

}  // namespace pvgpu::adapters
