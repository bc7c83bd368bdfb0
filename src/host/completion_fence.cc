#include "host/completion_fence.h"

namespace pvgpu::host {

void CompletionFence::Settle(uint64_t seq) {
  if (!deferred_ever_) {
    // No adapter thread has a callback, so this thread alone owns the state.
    executed_ = seq;
    PublishLocked();
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  executed_ = seq;
  PublishLocked();
}

std::function<void()> CompletionFence::Defer(uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    deferred_ever_ = true;
    executed_ = seq;
    in_flight_.insert(seq);
  }
  return [this, seq] { Complete(seq); };
}

uint64_t CompletionFence::published() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return published_;
}

void CompletionFence::Complete(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.erase(seq);
  PublishLocked();
}

void CompletionFence::PublishLocked() {
  const uint64_t done = in_flight_.empty() ? executed_ : *in_flight_.begin() - 1;
  if (done > published_) {
    published_ = done;
    publish_(done);
  }
}

}  // namespace pvgpu::host
