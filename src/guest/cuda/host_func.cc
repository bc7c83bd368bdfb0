#include "guest/cuda/host_func.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

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
               HostCall call, void* data) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_started_) {
      std::thread([this] { Run(); }).detach();
      thread_started_ = true;
    }
    pending_.push_back({ctx, Normalize(stream), flags, after_seq, call, data});
    changed_.notify_all();
  }

  CUresult Wait(CUctx_st* ctx, CUstream stream, bool all) {
    if (std::this_thread::get_id() == runner_id_) return CUDA_ERROR_NOT_PERMITTED;
    stream = Normalize(stream);
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !AnyBlocking(ctx, stream, all); });
    return CUDA_SUCCESS;
  }

  bool Pending(CUctx_st* ctx, CUstream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
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

  static CUstream Normalize(CUstream stream) {
    return IsDefaultStream(stream) ? nullptr : stream;
  }

  // Whether work on `stream` must wait for `item` (see host_func.h).
  static bool MustFollow(const Item& item, CUstream stream) {
    if (item.stream == stream || item.stream == nullptr) return true;
    return stream == nullptr && (item.flags & CU_STREAM_NON_BLOCKING) == 0;
  }

  bool AnyBlocking(CUctx_st* ctx, CUstream stream, bool all) const {
    for (const Item& item : pending_) {
      if (item.ctx == ctx && (all || MustFollow(item, stream))) return true;
    }
    return false;
  }

  void Run() {
    runner_id_ = std::this_thread::get_id();
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return !pending_.empty(); });
      const Item item = pending_.front();
      lock.unlock();
      const Code code = item.ctx->client->WaitDone(item.after_seq);
      item.call(item.data, code == Code::kOk ? CUDA_SUCCESS : ToCu(code));
      lock.lock();
      pending_.pop_front();  // only now may work that follows it be submitted
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Item> pending_;
  bool thread_started_ = false;
  std::atomic<std::thread::id> runner_id_{};
};

}  // namespace

void EnqueueHostFunc(CUctx_st* ctx, CUstream stream, unsigned int stream_flags,
                     uint64_t after_seq, HostCall call, void* data) {
  HostFuncQueue::Get().Enqueue(ctx, stream, stream_flags, after_seq, call, data);
}

CUresult WaitForHostFuncs(CUctx_st* ctx, CUstream stream) {
  return HostFuncQueue::Get().Wait(ctx, stream, false);
}

CUresult WaitForAllHostFuncs(CUctx_st* ctx) { return HostFuncQueue::Get().Wait(ctx, nullptr, true); }

bool HostFuncsPending(CUctx_st* ctx, CUstream stream) {
  return HostFuncQueue::Get().Pending(ctx, stream);
}

}  // namespace pvgpu::guest
