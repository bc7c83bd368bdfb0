#include "host/kernel_watcher.h"

#include <chrono>
#include <cstring>

#include "common/log.h"
#include "protocol/wire.h"

namespace pvgpu::host {
namespace {

// A launch shorter than this is never read ahead of (the watcher notices a long one between
// one and two of these after it started); the watcher re-checks the launch's end this often,
// and reads ahead at most this much.
constexpr auto kWatchAfter = std::chrono::milliseconds(100);
constexpr int kWatchPollMs = 20;
constexpr size_t kMaxReadAheadBytes = 64u << 20;

// Whether `message` ends the running kernel's purpose: Goodbye, or CtxDestroy of `ctx`. It is
// only peeked at here; the session loop validates it in order later.
bool EndsLaunch(const std::vector<uint8_t>& message, uint64_t ctx) {
  protocol::MessageHeader header;
  if (message.size() < sizeof(header)) return false;
  std::memcpy(&header, message.data(), sizeof(header));
  if (header.op == static_cast<uint32_t>(protocol::Op::kGoodbye)) return true;
  protocol::CtxDestroyRequest destroy;
  if (header.op != static_cast<uint32_t>(protocol::Op::kCtxDestroy) ||
      message.size() != sizeof(header) + sizeof(destroy)) {
    return false;
  }
  std::memcpy(&destroy, message.data() + sizeof(header), sizeof(destroy));
  return destroy.ctx == ctx;
}

}  // namespace

Status KernelWatcher::Run(adapters::Context& context, uint64_t ctx_handle,
                          FunctionRef<Status()> launch) {
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  context_.store(&context, std::memory_order_relaxed);
  ctx_handle_.store(ctx_handle, std::memory_order_relaxed);
  launches_.store(launches_.load(std::memory_order_relaxed) + 1);
  active_.store(true);
  // Only a sleeping watcher is woken: one that is timing a period notices this launch when the
  // period ends.
  if (idle_.load()) {
    std::lock_guard<std::mutex> lock(mutex_);
    changed_.notify_all();
  }
  Status status = launch();
  active_.store(false);
  if (busy_.load() || awaiting_end_.load()) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.notify_all();
    // The watcher must be out of Receive before the loop reads the channel again (order).
    changed_.wait(lock, [&] { return !busy_.load(); });
  }
  return status;
}

bool KernelWatcher::TakeReadAhead(std::vector<uint8_t>* message) {
  if (read_ahead_.empty()) return false;
  *message = std::move(read_ahead_.front());
  read_ahead_.pop_front();
  return true;
}

void KernelWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exit_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void KernelWatcher::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t seen = launches_.load();
  while (!exit_) {
    if (!active_.load() && launches_.load() == seen) {
      // No launch during a whole period: sleep until one starts. While launches keep coming
      // (a launch + synchronize loop, say) the watcher stays on its timer instead, so that it
      // costs one wake-up per period rather than one per launch.
      idle_.store(true);
      changed_.wait(lock, [&] { return active_.load() || exit_; });
      idle_.store(false);
    }
    // A launch that is still the same one after a whole period has run for at least
    // kWatchAfter. Launches do not wake this wait (see Run), so a long kernel is noticed
    // between one and two periods after it started.
    seen = launches_.load();
    const uint64_t launch = seen;
    changed_.wait_for(lock, kWatchAfter, [&] { return exit_; });
    if (exit_) break;
    if (!active_.load() || launches_.load() != launch) continue;
    busy_.store(true);
    // Re-checked after raising busy_: a launch that ended before it does not wait for us.
    if (!active_.load() || launches_.load() != launch) {
      busy_.store(false);
      changed_.notify_all();
      continue;
    }
    ReadAhead(lock);
    // Wait for this launch to end before watching the next.
    awaiting_end_.store(true);
    busy_.store(false);
    changed_.notify_all();
    changed_.wait(lock, [&] { return !active_.load() || launches_.load() != launch || exit_; });
    awaiting_end_.store(false);
  }
}

void KernelWatcher::ReadAhead(std::unique_lock<std::mutex>& lock) {
  adapters::Context* context = context_.load();
  const uint64_t ctx_handle = ctx_handle_.load();
  size_t bytes = 0;
  while (active_.load() && !exit_) {
    lock.unlock();
    std::vector<uint8_t> message;
    Status received = bytes < kMaxReadAheadBytes ? endpoint_->Receive(&message, kWatchPollMs)
                                                 : Error(Code::kNotReady, "read-ahead full");
    lock.lock();
    if (received.code() == Code::kNotReady) {
      if (bytes >= kMaxReadAheadBytes) {
        changed_.wait_for(lock, std::chrono::milliseconds(kWatchPollMs));
      }
      continue;
    }
    if (!received.ok()) {
      PVGPU_INFO("session " << session_id_ << ": channel ended during a kernel, cancelling it");
      channel_end_ = received;
      context->Cancel();
      return;
    }
    bytes += message.size();
    const bool ends = EndsLaunch(message, ctx_handle);
    read_ahead_.push_back(std::move(message));
    if (ends) {
      PVGPU_INFO("session " << session_id_
                            << ": context destroyed or goodbye during a kernel, cancelling it");
      context->Cancel();
      return;
    }
  }
}

}  // namespace pvgpu::host
