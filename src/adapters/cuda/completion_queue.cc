#include "adapters/cuda/completion_queue.h"

#include "common/log.h"

namespace pvgpu::adapters::cuda {

CompletionQueue::CompletionQueue(const Driver& driver, CUcontext context, CUstream stream)
    : driver_(driver), context_(context), stream_(stream) {
  helper_ = std::thread([this] { Loop(); });
}

CompletionQueue::~CompletionQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  helper_.join();  // the helper finishes every batch before it exits
  ScopedContext current(driver_.api(), context_);
  for (CUevent event : spare_) driver_.api().cuEventDestroy(event);
}

StatusOr<CUevent> CompletionQueue::TakeEvent() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!spare_.empty()) {
      CUevent event = spare_.back();
      spare_.pop_back();
      return event;
    }
  }
  CUevent event = nullptr;
  PVGPU_TRY(driver_.Check(
      driver_.api().cuEventCreate(&event, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING),
      "cuEventCreate"));
  return event;
}

void CompletionQueue::Add(std::function<void()> done) {
  if (!submitted_) {
    // Nothing new since the newest batch: join it, or run now when nothing is outstanding.
    std::unique_lock<std::mutex> lock(mutex_);
    if (!batches_.empty()) {
      batches_.back().callbacks.push_back(std::move(done));
      return;
    }
    // Callbacks of a batch still running on the helper must run first (in order).
    changed_.wait(lock, [this] { return !helper_busy_; });
    lock.unlock();
    done();
    return;
  }
  auto event = TakeEvent();
  Status recorded =
      event.ok() ? driver_.Check(driver_.api().cuEventRecord(*event, stream_), "cuEventRecord")
                 : event.status();
  if (!recorded.ok()) {
    // Without an event the only safe completion point is a full stream synchronization.
    PVGPU_WARN("cuda adapter: " << recorded.ToString() << "; waiting for the stream instead");
    if (event.ok()) driver_.api().cuEventDestroy(*event);
    Status waited =
        driver_.Check(driver_.api().cuStreamSynchronize(stream_), "cuStreamSynchronize");
    Status drained = Drain();  // takes the helper's error; put it back for Synchronize
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_.ok()) error_ = !drained.ok() ? drained : waited;
    }
    submitted_ = false;
    done();
    return;
  }
  submitted_ = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Batch batch;
    batch.event = *event;
    batch.callbacks.push_back(std::move(done));
    batches_.push_back(std::move(batch));
  }
  changed_.notify_all();
}

Status CompletionQueue::Drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return batches_.empty() && !helper_busy_; });
  Status error = error_;
  error_ = Status::Ok();
  return error;
}

void CompletionQueue::Loop() {
  // Some drivers want a current context for event waits; pvgpu's own does not care.
  ScopedContext current(driver_.api(), context_);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stop_ || !batches_.empty(); });
    if (batches_.empty()) return;  // stop_ and nothing left
    CUevent event = batches_.front().event;
    lock.unlock();
    Status waited =
        driver_.Check(driver_.api().cuEventSynchronize(event), "waiting for submitted work");
    lock.lock();
    if (!waited.ok() && error_.ok()) error_ = waited;
    // Callbacks added to the front batch while we waited are covered by the same event.
    Batch batch = std::move(batches_.front());
    batches_.pop_front();
    spare_.push_back(batch.event);
    helper_busy_ = true;
    lock.unlock();
    for (auto& callback : batch.callbacks) callback();
    lock.lock();
    helper_busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace pvgpu::adapters::cuda
