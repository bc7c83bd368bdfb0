#include "ptx/cooperative_budget.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "ptx/ptx.h"

namespace pvgpu::ptx {
namespace {

struct Budget {
  std::mutex mu;
  std::condition_variable freed;
  uint64_t limit = kMaxCooperativeResidentBytes;
  uint64_t held = 0;
};

Budget& TheBudget() {
  static Budget* budget = new Budget;  // never destroyed: launches may end during exit
  return *budget;
}

}  // namespace

Status ReserveCooperativeResident(uint64_t bytes, const std::atomic<bool>* cancel) {
  Budget& b = TheBudget();
  std::unique_lock<std::mutex> lock(b.mu);
  if (bytes > b.limit) {
    return Error(Code::kLaunchOutOfResources,
                 "a cooperative launch needs " + std::to_string(bytes) +
                     " bytes of resident state, over the limit of " + std::to_string(b.limit));
  }
  while (b.held + bytes > b.limit) {
    if (cancel != nullptr && cancel->load()) {
      return Error(Code::kLaunchFailed,
                   "launch cancelled while waiting for other cooperative launches to end");
    }
    // Polled: a cancellation flag cannot wake a waiter.
    b.freed.wait_for(lock, std::chrono::milliseconds(20));
  }
  b.held += bytes;
  return Status::Ok();
}

void ReleaseCooperativeResident(uint64_t bytes) {
  Budget& b = TheBudget();
  {
    std::lock_guard<std::mutex> lock(b.mu);
    b.held -= std::min(bytes, b.held);
  }
  b.freed.notify_all();
}

uint64_t CooperativeResidentBudget() {
  Budget& b = TheBudget();
  std::lock_guard<std::mutex> lock(b.mu);
  return b.limit;
}

void SetCooperativeResidentBudgetForTesting(uint64_t bytes) {
  Budget& b = TheBudget();
  {
    std::lock_guard<std::mutex> lock(b.mu);
    b.limit = std::min(bytes, kMaxCooperativeResidentBytes);
  }
  b.freed.notify_all();
}

}  // namespace pvgpu::ptx
