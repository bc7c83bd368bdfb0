#include "guest/cuda/host_func.h"

#include <condition_variable>
#include <deque>
#include <thread>

#include "common/mutex.h"
#include "guest/cuda/state.h"

namespace pvgpu::guest {

namespace {

// Pending host functions, run in enqueue order by one guest thread (started on first use; it
// lives as long as the process, like the driver's own callback thread).
class HostFuncQueue {
 public:
  static HostFuncQueue& Get() {
    static auto* queue = new HostFuncQueue();  // never destroyed: the thread may outlive main
    return *queue;
  }

  void Enqueue(CUctx_st* ctx, CUstream stream, unsigned int flags, uint64_t after_seq,
               HostCall call, void* data) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    if (!thread_started_) {
      std::thread([this] { Run(); }).detach();
      thread_started_ = true;
    }
    pending_.push_back({ctx, Normalize(stream), flags, after_seq, call, data});
    changed_.notify_all();
  }

  Code Wait(CUctx_st* ctx, CUstream stream, bool all) EXCLUDES(mutex_) {
    if (std::this_thread::get_id() == runner_id_) return Code::kNotPermitted;
    stream = Normalize(stream);
    MutexLock lock(&mutex_);
    while (AnyBlocking(ctx, stream, all)) changed_.wait(mutex_);
    return Code::kOk;
  }

  bool Pending(CUctx_st* ctx, CUstream stream) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    return AnyBlocking(ctx, Normalize(stream), false);
  }

 private:
  struct Item {
    CUctx_st* ctx;
    CUstream stream;  // nullptr: the default stream
    unsigned int flags;
    uint64_t after_seq;
    HostCall call;
    void* data;
  };

  static CUstream Normalize(CUstream stream) { return IsDefaultStream(stream) ? nullptr : stream; }

  // Whether work on `stream` must wait for `item` (see host_func.h).
  static bool MustFollow(const Item& item, CUstream stream) {
    if (item.stream == stream || item.stream == nullptr) return true;
    return stream == nullptr && (item.flags & CU_STREAM_NON_BLOCKING) == 0;
  }

  bool AnyBlocking(CUctx_st* ctx, CUstream stream, bool all) const REQUIRES(mutex_) {
    for (const Item& item : pending_) {
      if (item.ctx == ctx && (all || MustFollow(item, stream))) return true;
    }
    return false;
  }

  void Run() EXCLUDES(mutex_) {
    runner_id_ = std::this_thread::get_id();
    for (;;) {
      Item item;
      {
        MutexLock lock(&mutex_);
        while (pending_.empty()) changed_.wait(mutex_);
        item = pending_.front();
      }
      const Code code = item.ctx->client->WaitDone(item.after_seq);
      item.call(item.data, ToCu(code));
      MutexLock lock(&mutex_);
      pending_.pop_front();  // only now may work that follows it be submitted
      changed_.notify_all();
    }
  }

  Mutex mutex_;
  std::condition_variable_any changed_;
  std::deque<Item> pending_ GUARDED_BY(mutex_);
  bool thread_started_ GUARDED_BY(mutex_) = false;
  std::atomic<std::thread::id> runner_id_{};
};

}  // namespace

void EnqueueHostFunc(CUctx_st* ctx, CUstream stream, unsigned int stream_flags, uint64_t after_seq,
                     HostCall call, void* data) {
  HostFuncQueue::Get().Enqueue(ctx, stream, stream_flags, after_seq, call, data);
}

Code WaitForHostFuncs(CUctx_st* ctx, CUstream stream) {
  return HostFuncQueue::Get().Wait(ctx, stream, false);
}

Code WaitForAllHostFuncs(CUctx_st* ctx) { return HostFuncQueue::Get().Wait(ctx, nullptr, true); }

bool HostFuncsPending(CUctx_st* ctx, CUstream stream) {
  return HostFuncQueue::Get().Pending(ctx, stream);
}

}  // namespace pvgpu::guest
