// The kernel watcher: runs a synchronous adapter's kernel (which may never end) while keeping
// an eye on the channel. Once a launch has run for a while, a watcher thread reads the guest's
// next messages ahead and cancels the kernel when the guest hangs up, says Goodbye or destroys
// the kernel's context. The session loop executes what was read ahead, in order, afterwards.
//
// The session thread starts and ends launches without taking `mutex_`: it and the watcher
// publish their flags seq_cst and then read the other's (Dekker), so either the session thread
// sees the watcher idle or busy and takes the lock to notify it, or the watcher sees the
// launch's new state itself. Back-to-back short launches cost no thread wake-up and no lock.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/adapter.h"
#include "common/function_ref.h"
#include "common/status.h"
#include "transport/channel.h"

namespace pvgpu::host {

class KernelWatcher {
 public:
  // Reads ahead from `endpoint` (the session's), which must outlive the watcher.
  KernelWatcher(uint32_t session_id, transport::Endpoint* endpoint)
      : session_id_(session_id), endpoint_(endpoint) {}
  ~KernelWatcher() { Stop(); }
  KernelWatcher(const KernelWatcher&) = delete;
  KernelWatcher& operator=(const KernelWatcher&) = delete;

  // Runs `launch`, a kernel of `context` (the guest's handle `ctx_handle`), returning its
  // status. Session thread only; the watcher thread starts with the first launch. `launch` is
  // called before Run returns, so it is taken by reference: a std::function would allocate
  // for the launch's captures on every launch.
  Status Run(adapters::Context& context, uint64_t ctx_handle, FunctionRef<Status()> launch);

  // The oldest message read ahead, if any (session thread, between launches). The session
  // runs every one of them before it reads the channel again.
  bool TakeReadAhead(std::vector<uint8_t>* message);
  // The channel's end seen while reading ahead (ok: none); the session's next read returns it.
  const Status& channel_end() const { return channel_end_; }

  // Ends the watcher thread (the session is ending). Idempotent.
  void Stop();

 private:
  void Loop();
  // Reads ahead until the launch ends or its purpose does; `lock` holds mutex_.
  void ReadAhead(std::unique_lock<std::mutex>& lock);

  const uint32_t session_id_;
  transport::Endpoint* const endpoint_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::atomic<bool> active_{false};                   // a launch is running
  std::atomic<uint64_t> launches_{0};                 // launches started (session thread writes)
  std::atomic<adapters::Context*> context_{nullptr};  // the running launch's context
  std::atomic<uint64_t> ctx_handle_{0};
  std::atomic<bool> busy_{false};  // the watcher is reading ahead
  std::atomic<bool> idle_{false};  // the watcher sleeps until a launch starts
  // The watcher waits for the watched launch to end (set before busy_ is cleared).
  std::atomic<bool> awaiting_end_{false};
  bool exit_ = false;  // guarded by mutex_
  std::thread thread_;
  // Filled by the watcher only while busy_, drained by the session thread otherwise.
  std::deque<std::vector<uint8_t>> read_ahead_;
  Status channel_end_;
};

}  // namespace pvgpu::host
