// The session's completion fence: the value in shared memory that tells the guest "every
// message up to N is done", so that stream and event queries read memory instead of asking.
//
// A message on a synchronous adapter is done once executed. Work on an asynchronous adapter
// completes later, on an adapter thread, and contexts complete out of order; so the seqs still
// in flight are kept, and the fence published is the highest seq below all of them. It never
// moves backwards, and it is published under a lock so that two threads never store it out of
// order.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>

namespace pvgpu::host {

class CompletionFence {
 public:
  using Publish = std::function<void(uint64_t)>;
  // `publish` stores the fence where the guest reads it (transport::Endpoint::PublishFence).
  explicit CompletionFence(Publish publish) : publish_(std::move(publish)) {}
  CompletionFence(const CompletionFence&) = delete;
  CompletionFence& operator=(const CompletionFence&) = delete;

  // Message `seq`, the newest executed, is done now. Session thread only, seqs increasing.
  void Settle(uint64_t seq);
  // Message `seq` is executed but its work is still in flight: done when the returned callback
  // runs (on any thread, once). Hand it to adapters::Context::NotifyWhenDone, outside any lock
  // the callback could need: an adapter may call it at once, on this thread.
  std::function<void()> Defer(uint64_t seq);

  // The fence value last published.
  uint64_t published() const;

 private:
  void Complete(uint64_t seq);
  void PublishLocked();  // mutex_ held, or no seq ever deferred

  Publish publish_;
  mutable std::mutex mutex_;
  std::set<uint64_t> in_flight_;  // guarded by mutex_, as are the two below
  uint64_t executed_ = 0;
  uint64_t published_ = 0;
  // Set (session thread, under mutex_) when a seq is first deferred; until then only the
  // session thread touches the state above and Settle takes no lock (the common case:
  // synchronous adapters only).
  bool deferred_ever_ = false;
};

}  // namespace pvgpu::host
