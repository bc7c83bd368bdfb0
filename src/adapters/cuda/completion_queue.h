// Completion callbacks for one context's stream: the mechanism behind Context::NotifyWhenDone.
//
// An event is recorded on the stream for each batch of callbacks and a helper thread waits for
// the events in order, then runs the callbacks. Events rather than cuLaunchHostFunc: host
// functions stall the stream while they run, and pvgpu's own guest driver (the chained test)
// does not offer them; events are in every driver. Events are created with BLOCKING_SYNC so
// the helper sleeps instead of spinning a core per context.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/cuda/driver_api.h"

namespace pvgpu::adapters::cuda {

class CompletionQueue {
 public:
  CompletionQueue(const Driver& driver, CUcontext context, CUstream stream);
  // Waits for every queued event and runs every callback before returning.
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Work was submitted to the stream since the last Add: the next Add must record an event.
  void MarkSubmitted() { submitted_ = true; }
  // The stream was just synchronized: everything submitted has completed.
  void MarkIdle() { submitted_ = false; }
  // Runs `done` once everything submitted so far has completed: at once when nothing is
  // outstanding, else after the covering event. Must be called with the context current.
  void Add(std::function<void()> done);
  // Waits until every callback added so far has run. Returns the first error the helper saw
  // while waiting for events since the previous call (an asynchronous fault), else Ok.
  Status Drain();

 private:
  struct Batch {
    CUevent event = nullptr;
    std::vector<std::function<void()>> callbacks;
  };
  void Loop();
  StatusOr<CUevent> TakeEvent();

  const Driver& driver_;
  const CUcontext context_;
  const CUstream stream_;
  bool submitted_ = false;  // session thread only

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Batch> batches_;   // waiting for their event, oldest first
  bool helper_busy_ = false;    // the helper is running the front batch's callbacks
  std::vector<CUevent> spare_;  // completed events, for reuse
  Status error_;
  bool stop_ = false;
  std::thread helper_;
};

// Makes a context current on this thread for a scope (sessions run on their own threads, and
// one thread may serve several contexts).
class ScopedContext {
 public:
  ScopedContext(const DriverApi& api, CUcontext context) : api_(api) {
    pushed_ = api_.cuCtxPushCurrent(context) == CUDA_SUCCESS;
  }
  ~ScopedContext() {
    CUcontext popped = nullptr;
    if (pushed_) api_.cuCtxPopCurrent(&popped);
  }
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;

 private:
  const DriverApi& api_;
  bool pushed_ = false;
};

}  // namespace pvgpu::adapters::cuda
