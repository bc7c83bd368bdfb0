#include "host/session.h"

#include <chrono>
#include <cstring>
#include <sstream>

#include "common/log.h"

namespace pvgpu::host {

using protocol::MessageHeader;

namespace {
// How often a waiting session re-checks its stop flag.
constexpr int kReceivePollMs = 250;
// A launch shorter than this is never read ahead of (the watcher notices a long one between
// one and two of these after it started); the watcher re-checks the launch's end this often,
// and reads ahead at most this much.
constexpr auto kWatchAfter = std::chrono::milliseconds(100);
constexpr int kWatchPollMs = 20;
constexpr size_t kMaxReadAheadBytes = 64u << 20;

// Whether `message` ends the running kernel's purpose: Goodbye, or CtxDestroy of `ctx`. It is
// only peeked at here; the session loop validates it in order later.
bool EndsLaunch(const std::vector<uint8_t>& message, uint64_t ctx) {
  MessageHeader header;
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

Status Session::WatchedLaunch(ContextState& ctx, uint64_t ctx_handle,
                              FunctionRef<Status()> launch) {
  if (!watch_.thread.joinable()) watch_.thread = std::thread([this] { WatchLoop(); });
  watch_.ctx.store(ctx.impl.get(), std::memory_order_relaxed);
  watch_.ctx_handle.store(ctx_handle, std::memory_order_relaxed);
  watch_.launches.store(watch_.launches.load(std::memory_order_relaxed) + 1);
  watch_.active.store(true);
  // Only a sleeping watcher is woken: one that is timing a period notices this launch when the
  // period ends, so back-to-back short launches cost no thread wake-up and no lock each.
  if (watch_.idle.load()) {
    std::lock_guard<std::mutex> lock(watch_.mutex);
    watch_.changed.notify_all();
  }
  Status status = launch();
  watch_.active.store(false);
  if (watch_.busy.load() || watch_.awaiting_end.load()) {
    std::unique_lock<std::mutex> lock(watch_.mutex);
    watch_.changed.notify_all();
    // The watcher must be out of Receive before the loop reads the channel again (order).
    watch_.changed.wait(lock, [&] { return !watch_.busy.load(); });
  }
  return status;
}

void Session::WatchLoop() {
  std::unique_lock<std::mutex> lock(watch_.mutex);
  uint64_t seen = watch_.launches.load();
  while (!watch_.exit) {
    if (!watch_.active.load() && watch_.launches.load() == seen) {
      // No launch during a whole period: sleep until one starts. While launches keep coming
      // (a launch + synchronize loop, say) the watcher stays on its timer instead, so that it
      // costs one wake-up per period rather than one per launch.
      watch_.idle.store(true);
      watch_.changed.wait(lock, [&] { return watch_.active.load() || watch_.exit; });
      watch_.idle.store(false);
    }
    // A launch that is still the same one after a whole period has run for at least
    // kWatchAfter. Launches do not wake this wait (see WatchedLaunch), so a long kernel is
    // noticed between one and two periods after it started.
    seen = watch_.launches.load();
    const uint64_t launch = seen;
    watch_.changed.wait_for(lock, kWatchAfter, [&] { return watch_.exit; });
    if (watch_.exit) break;
    if (!watch_.active.load() || watch_.launches.load() != launch) continue;
    watch_.busy.store(true);
    // Re-checked after raising busy: a launch that ended before it does not wait for us.
    if (!watch_.active.load() || watch_.launches.load() != launch) {
      watch_.busy.store(false);
      watch_.changed.notify_all();
      continue;
    }
    adapters::Context* ctx = watch_.ctx.load();
    const uint64_t ctx_handle = watch_.ctx_handle.load();
    size_t bytes = 0;
    while (watch_.active.load() && !watch_.exit) {
      lock.unlock();
      std::vector<uint8_t> message;
      Status received = bytes < kMaxReadAheadBytes ? endpoint_->Receive(&message, kWatchPollMs)
                                                   : Error(Code::kNotReady, "read-ahead full");
      lock.lock();
      if (received.code() == Code::kNotReady) {
        if (bytes >= kMaxReadAheadBytes) {
          watch_.changed.wait_for(lock, std::chrono::milliseconds(kWatchPollMs));
        }
        continue;
      }
      if (!received.ok()) {
        PVGPU_INFO("session " << id_ << ": channel ended during a kernel, cancelling it");
        read_ahead_end_ = received;
        ctx->Cancel();
        break;
      }
      bytes += message.size();
      const bool ends = EndsLaunch(message, ctx_handle);
      read_ahead_.push_back(std::move(message));
      if (ends) {
        PVGPU_INFO("session " << id_
                              << ": context destroyed or goodbye during a kernel, "
                                 "cancelling it");
        ctx->Cancel();
        break;
      }
    }
    // Wait for this launch to end before watching the next.
    watch_.awaiting_end.store(true);
    watch_.busy.store(false);
    watch_.changed.notify_all();
    watch_.changed.wait(lock, [&] {
      return !watch_.active.load() || watch_.launches.load() != launch || watch_.exit;
    });
    watch_.awaiting_end.store(false);
  }
}

Session::Session(uint32_t id, std::unique_ptr<transport::Endpoint> endpoint, SessionPolicy policy)
    : id_(id), endpoint_(std::move(endpoint)), policy_(std::move(policy)) {}

Session::~Session() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [handle, ctx] : contexts_) DestroyContext(*ctx);
  contexts_.clear();
  regions_.clear();  // after the contexts that may map them
}

void Session::Run() {
  PVGPU_INFO("session " << id_ << ": started on " << endpoint_->Describe());
  std::vector<uint8_t> message;
  uint64_t last_seq = 0;
  bool in_place = false;  // the message just received was run where it arrived
  std::string end_reason = "guest disconnected";
  while (!stop_.load() && !fatal_ && !said_goodbye_) {
    Status received;
    if (!read_ahead_.empty()) {
      message = std::move(read_ahead_.front());
      read_ahead_.pop_front();
    } else if (!read_ahead_end_.ok()) {
      received = read_ahead_end_;
    } else {
      // Bulk HtoD data goes from the ring to the device where it lies; everything else is
      // copied out first, so that what is validated cannot change underneath.
      received = endpoint_->ReceiveView(
          &message,
          [&](const transport::MessageView& view) {
            in_place = RunInPlace(view, &last_seq);
            if (!in_place && view.first.data() != message.data()) {
              message.resize(view.size());
              view.CopyPrefix(message.data(), view.size());
            }
          },
          kReceivePollMs);
    }
    if (received.code() == Code::kNotReady) continue;
    if (!received.ok()) {
      if (received.code() != Code::kDeviceUnavailable) {
        Fatal("channel error: " + received.message());
      } else {
        end_reason = received.message();
      }
      break;
    }
    if (in_place) {
      in_place = false;
      if (fatal_) break;
      SettleCurrent();
      continue;
    }
    if (message.size() < sizeof(MessageHeader)) {
      Fatal("message shorter than its header (" + std::to_string(message.size()) + " bytes)");
      break;
    }
    MessageHeader header;
    std::memcpy(&header, message.data(), sizeof(MessageHeader));
    std::span<const uint8_t> body(message.data() + sizeof(MessageHeader),
                                  message.size() - sizeof(MessageHeader));
    if (!BeginMessage(header, &last_seq)) break;
    if (log::Enabled(log::Level::kTrace)) {
      std::ostringstream os;
      os << "session " << id_ << " #" << current_.seq << " ";
      if (!protocol::TraceRequest(os, current_.op, body)) os << "op " << current_.op;
      log::Write(log::Level::kTrace, os.str());
    }
    Code result = Code::kOk;
    touched_ctx_ = 0;
    settled_ = false;
    switch (protocol::Dispatch(*this, current_.op, body, &result)) {
      case protocol::DecodeError::kNone:
        break;
      case protocol::DecodeError::kUnknownOp:
        Fatal("unknown op " + std::to_string(current_.op));
        break;
      case protocol::DecodeError::kBadSize:
        Fatal(std::string("bad size for ") +
              protocol::OpName(static_cast<protocol::Op>(current_.op)) + " (" +
              std::to_string(body.size()) + " bytes)");
        break;
      case protocol::DecodeError::kWrongDirection:
        Fatal("host-to-guest op sent by the guest");
        break;
    }
    if (fatal_) break;
    SettleCurrent();
  }
  if (said_goodbye_) end_reason = "guest said goodbye";
  if (stop_.load()) end_reason = "host shutting down";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [handle, ctx] : contexts_) DestroyContext(*ctx);
    contexts_.clear();
    regions_.clear();
  }
  {
    std::lock_guard<std::mutex> lock(watch_.mutex);
    watch_.exit = true;
  }
  watch_.changed.notify_all();
  if (watch_.thread.joinable()) watch_.thread.join();
  endpoint_->Close();
  if (!fatal_) PVGPU_INFO("session " << id_ << ": ended (" << end_reason << ")");
  finished_.store(true);
}

bool Session::BeginMessage(const MessageHeader& header, uint64_t* last_seq) {
  current_ = header;
  if (current_.seq != *last_seq + 1) {
    Fatal("out-of-order message: seq " + std::to_string(current_.seq) + " after " +
          std::to_string(*last_seq));
    return false;
  }
  *last_seq = current_.seq;
  if ((current_.flags & ~uint32_t{protocol::kFlagWantReply}) != 0) {
    Fatal("unknown message flags " + std::to_string(current_.flags));
    return false;
  }
  if (!hello_done_ && current_.op != static_cast<uint32_t>(protocol::Op::kHello)) {
    Fatal("first message must be Hello");
    return false;
  }
  return true;
}

bool Session::RunInPlace(const transport::MessageView& message, uint64_t* last_seq) {
  using protocol::MemcpyHtoDRequest;
  if (message.size() < sizeof(MessageHeader) + sizeof(MemcpyHtoDRequest)) return false;
  MessageHeader header;
  message.CopyPrefix(&header, sizeof(header));
  // Traced messages take the usual path, which prints them.
  if (header.op != static_cast<uint32_t>(protocol::Op::kMemcpyHtoD) ||
      log::Enabled(log::Level::kTrace)) {
    return false;
  }
  if (!BeginMessage(header, last_seq)) return true;  // the session ends (fatal_)
  const transport::MessageView body = message.Tail(sizeof(header));
  MemcpyHtoDRequest request;
  body.CopyPrefix(&request, sizeof(request));
  touched_ctx_ = 0;
  settled_ = false;
  (void)Handle(request, body.Tail(sizeof(request)));
  return true;
}

void Session::Stop() {
  stop_.store(true);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [handle, ctx] : contexts_) {
    if (ctx->impl) ctx->impl->Cancel();
  }
}

Code Session::Fatal(const std::string& reason) {
  if (!fatal_) {
    PVGPU_WARN("session " << id_ << " (pid " << guest_pid_
                          << "): ended: protocol violation: " << reason);
  }
  fatal_ = true;
  return Code::kInvalidValue;
}

Session::ContextState* Session::FindContext(uint64_t handle) {
  auto it = contexts_.find(handle);
  if (it == contexts_.end()) {
    Fatal("unknown context handle " + std::to_string(handle));
    return nullptr;
  }
  touched_ctx_ = handle;
  return it->second.get();
}

void Session::SettleCurrent() {
  if (settled_) return;
  settled_ = true;
  const uint64_t seq = current_.seq;
  adapters::Context* async = nullptr;
  if (auto it = contexts_.find(touched_ctx_);
      it != contexts_.end() && it->second->impl && it->second->impl->asynchronous()) {
    async = it->second->impl.get();
  }
  if (async == nullptr && !deferred_ever_) {
    // No seq was ever deferred, so no adapter thread publishes: this thread alone owns the
    // fence state and needs no lock (the common case: synchronous adapters only).
    executed_ = seq;
    PublishFenceLocked();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(fence_mutex_);
    executed_ = seq;
    if (async != nullptr) {
      deferred_ever_ = true;
      in_flight_.insert(seq);
    } else {
      PublishFenceLocked();
    }
  }
  // Outside the lock: the adapter may call back at once, on this thread.
  if (async != nullptr) async->NotifyWhenDone([this, seq] { CompleteSeq(seq); });
}

void Session::CompleteSeq(uint64_t seq) {
  std::lock_guard<std::mutex> lock(fence_mutex_);
  in_flight_.erase(seq);
  PublishFenceLocked();
}

void Session::PublishFenceLocked() {
  // Published under the lock so that two threads never store the fence out of order.
  const uint64_t done = in_flight_.empty() ? executed_ : *in_flight_.begin() - 1;
  if (done > published_) {
    published_ = done;
    endpoint_->PublishFence(done);
  }
}

void Session::SynchronizeAdapter(ContextState& ctx) {
  if (!ctx.impl || !ctx.impl->asynchronous() || ctx.sticky != Code::kOk) return;
  Status synced = ctx.impl->Synchronize();
  if (!synced.ok()) RecordFault(ctx, synced, "asynchronous work");
}

bool Session::InAllocation(const ContextState& ctx, uint64_t address, uint64_t size) const {
  return ctx.allocations.Contains(address, size);
}

bool Session::ValidStream(ContextState& ctx, uint64_t stream) {
  if (stream == 0 || ctx.streams.count(stream) != 0) return true;
  Fatal("unknown stream handle " + std::to_string(stream));
  return false;
}

void Session::PublishErrorCount() {
  bool asynchronous = false;
  for (const auto& [handle, ctx] : contexts_) {
    if (ctx->impl && ctx->impl->asynchronous()) asynchronous = true;
  }
  endpoint_->PublishErrorCount(asynchronous ? transport::Endpoint::kErrorCountUnknown
                                            : faults_recorded_);
}

void Session::RecordFault(ContextState& ctx, const Status& status, const char* what) {
  // Counted before the fence covering this message is published (SettleCurrent), so a guest
  // that sees the fence also sees that something went wrong.
  ++faults_recorded_;
  PublishErrorCount();
  if (IsStickyError(status.code())) {
    if (ctx.sticky == Code::kOk) ctx.sticky = status.code();
    PVGPU_INFO("session " << id_ << ": " << what
                          << " faulted, context is now unusable: " << status.ToString());
  } else if (ctx.pending == Code::kOk) {
    ctx.pending = status.code();
    PVGPU_DEBUG("session " << id_ << ": " << what << " failed: " << status.ToString());
  }
}

void Session::DestroyContext(ContextState& ctx) {
  if (!ctx.impl) return;
  ctx.impl->Cancel();
  ctx.modules.clear();
  ctx.impl.reset();  // frees every allocation of the context
  ctx.allocations.clear();
}

uint64_t Session::UsedBytes() const {
  uint64_t used = 0;
  for (const auto& [handle, region] : regions_) used += region->size;
  for (const auto& [handle, ctx] : contexts_) {
    if (ctx->impl) used += ctx->impl->used_bytes();
  }
  return used;
}

SessionSnapshot Session::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SessionSnapshot s;
  s.id = id_;
  s.guest_pid = guest_pid_;
  s.guest_name = guest_name_;
  s.channel = endpoint_->Describe();
  s.used_bytes = UsedBytes();
  s.contexts = static_cast<uint32_t>(contexts_.size());
  for (const auto& [handle, ctx] : contexts_) s.devices.push_back(ctx->device);
  return s;
}

void Session::SendRaw(const MessageHeader& header, std::span<const uint8_t> fixed,
                      std::span<const uint8_t> payload) {
  std::span<const uint8_t> parts[] = {
      {reinterpret_cast<const uint8_t*>(&header), sizeof(header)}, fixed, payload};
  HandleSendStatus(endpoint_->Send(parts));
}

void Session::HandleSendStatus(const Status& sent) {
  if (sent.code() == Code::kDeviceUnavailable) {
    PVGPU_DEBUG("session " << id_ << ": reply not delivered: " << sent.ToString());
    stop_.store(true);
  } else if (!sent.ok()) {
    // The guest corrupted its reply ring: a protocol violation like any other, with its reason.
    Fatal("channel error: " + sent.message());
  }
}

void Session::SendPrint(uint64_t ctx, std::string_view text) {
  const size_t chunk_limit =
      endpoint_->max_message_size() - sizeof(MessageHeader) - sizeof(protocol::PrintRequest);
  while (!text.empty()) {
    const std::string_view chunk = text.substr(0, chunk_limit);
    text.remove_prefix(chunk.size());
    MessageHeader header;
    header.op = static_cast<uint32_t>(protocol::Op::kPrint);
    protocol::PrintRequest print;
    print.ctx = ctx;
    SendRaw(header, {reinterpret_cast<const uint8_t*>(&print), sizeof(print)},
            {reinterpret_cast<const uint8_t*>(chunk.data()), chunk.size()});
  }
}

}  // namespace pvgpu::host
